"""One row of each store table as plain Python values (the collector builds, the store writes).

Field order is the table's column order (``sql/duckdb/schema.sql``); field names are the column
names in snake case. Times are integer nanoseconds since the Unix epoch (``*_ns``), maps are
``dict[str, str]`` (every attribute value already rendered as a string, see
:func:`otelbench.collector.otlp.any_value_as_string`), and the exporter's ``Nested`` columns are
parallel lists (``events_name[i]`` belongs with ``events_timestamp_ns[i]``).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["GaugeRow", "HistogramRow", "SpanRow", "SumRow"]

StrMap = dict[str, str]


class SpanRow(NamedTuple):
    """One row of ``otel_traces``."""

    timestamp_ns: int
    trace_id: str
    span_id: str
    parent_span_id: str
    trace_state: str
    span_name: str
    span_kind: str
    service_name: str
    resource_attributes: StrMap
    scope_name: str
    scope_version: str
    span_attributes: StrMap
    duration_ns: int
    status_code: str
    status_message: str
    events_timestamp_ns: list[int]
    events_name: list[str]
    events_attributes: list[StrMap]
    links_trace_id: list[str]
    links_span_id: list[str]
    links_trace_state: list[str]
    links_attributes: list[StrMap]


class GaugeRow(NamedTuple):
    """One data point of a gauge: a row of ``otel_metrics_gauge``."""

    resource_attributes: StrMap
    resource_schema_url: str
    scope_name: str
    scope_version: str
    scope_attributes: StrMap
    scope_dropped_attr_count: int
    scope_schema_url: str
    service_name: str
    metric_name: str
    metric_description: str
    metric_unit: str
    attributes: StrMap
    start_time_unix_ns: int
    time_unix_ns: int
    value: float
    flags: int
    exemplars_filtered_attributes: list[StrMap]
    exemplars_time_unix_ns: list[int]
    exemplars_value: list[float]
    exemplars_span_id: list[str]
    exemplars_trace_id: list[str]


class SumRow(NamedTuple):
    """One data point of a sum: a row of ``otel_metrics_sum``."""

    resource_attributes: StrMap
    resource_schema_url: str
    scope_name: str
    scope_version: str
    scope_attributes: StrMap
    scope_dropped_attr_count: int
    scope_schema_url: str
    service_name: str
    metric_name: str
    metric_description: str
    metric_unit: str
    attributes: StrMap
    start_time_unix_ns: int
    time_unix_ns: int
    value: float
    flags: int
    exemplars_filtered_attributes: list[StrMap]
    exemplars_time_unix_ns: list[int]
    exemplars_value: list[float]
    exemplars_span_id: list[str]
    exemplars_trace_id: list[str]
    aggregation_temporality: int
    """The proto enum value: 0 unspecified, 1 delta, 2 cumulative."""
    is_monotonic: bool


class HistogramRow(NamedTuple):
    """One data point of an explicit-bucket histogram: a row of ``otel_metrics_histogram``.

    ``sum``, ``min`` and ``max`` are ``None`` when the data point leaves them unset.
    """

    resource_attributes: StrMap
    resource_schema_url: str
    scope_name: str
    scope_version: str
    scope_attributes: StrMap
    scope_dropped_attr_count: int
    scope_schema_url: str
    service_name: str
    metric_name: str
    metric_description: str
    metric_unit: str
    attributes: StrMap
    start_time_unix_ns: int
    time_unix_ns: int
    point_count: int
    """The ``Count`` column (``count`` would shadow ``tuple.count``)."""
    sum: float | None
    bucket_counts: list[int]
    explicit_bounds: list[float]
    exemplars_filtered_attributes: list[StrMap]
    exemplars_time_unix_ns: list[int]
    exemplars_value: list[float]
    exemplars_span_id: list[str]
    exemplars_trace_id: list[str]
    flags: int
    min: float | None
    max: float | None
    aggregation_temporality: int
