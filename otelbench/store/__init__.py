"""The span store: the collector writes spans and metric data points, the query layer reads them.

The embedded store is one DuckDB file (:class:`SpanStore`) with the OpenTelemetry Collector
ClickHouse exporter's ``otel_traces`` and ``otel_metrics_*`` tables (``schema.sql``), so the same
query layer runs against ClickHouse at scale.

Example::

    from otelbench.store import SpanStore

    with SpanStore.open("run.duckdb", read_only=True) as store:
        print(store.span_count())
"""

from __future__ import annotations

from otelbench.store.duckdb_store import SCHEMA_VERSION, SpanStore
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = ["SCHEMA_VERSION", "GaugeRow", "HistogramRow", "SpanRow", "SpanStore", "SumRow"]
