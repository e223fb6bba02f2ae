"""The span store: the collector writes spans and metric data points, the query layer reads them.

Storage owns its engines, one module each: :mod:`otelbench.store.duckdb` (the embedded store, one
DuckDB file: :class:`SpanStore`) and :mod:`otelbench.store.clickhouse` (chdb and ClickHouse
servers: URLs, connections, opening, the writer). Both hold the OpenTelemetry Collector
ClickHouse exporter's tables (``sql/<dialect>/schema.sql``), so the same query layer reads
either; :func:`open_span_writer` (:mod:`otelbench.store.writers`) opens the one the collector
writes. Nothing here imports the query layer (:mod:`otelbench.query` depends on the store, never
the reverse).

Example::

    from otelbench.store import SpanStore

    with SpanStore.open("run.duckdb", read_only=True) as store:
        print(store.span_count())
"""

from __future__ import annotations

from otelbench.store.clickhouse import METRICS_NOT_STORED, ClickHouseSpanWriter
from otelbench.store.duckdb import SCHEMA_VERSION, SpanStore
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow
from otelbench.store.writers import SpanWriter, open_span_writer

__all__ = [
    "METRICS_NOT_STORED",
    "SCHEMA_VERSION",
    "ClickHouseSpanWriter",
    "GaugeRow",
    "HistogramRow",
    "SpanRow",
    "SpanStore",
    "SpanWriter",
    "SumRow",
    "open_span_writer",
]
