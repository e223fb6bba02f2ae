"""Datasource UIDs, dashboard UIDs and the vLLM metric names the dashboards read.

``otelbench_live_*`` names come from :mod:`otelbench.semconv` (``METRIC_LIVE_*``). vLLM's own
``/metrics`` names are not ours: :data:`VLLM_METRICS` lists each with the source that declares it,
and ``tests/unit/test_dashboards.py`` checks every one against that source in the installed vLLM.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DATASOURCE_CLICKHOUSE",
    "DATASOURCE_PROMETHEUS",
    "DATASOURCE_TEMPO",
    "FOLDER_TITLE",
    "FOLDER_UID",
    "PLUGIN_CLICKHOUSE",
    "PLUGIN_PROMETHEUS",
    "PLUGIN_TEMPO",
    "VLLM_METRICS",
    "VLLM_METRICS_SOURCE",
    "VllmMetric",
]

DATASOURCE_PROMETHEUS: Final = "otelbench-prometheus"
"""UID of the Prometheus datasource (scrapes ``otelbench watch`` and vLLM's ``/metrics``)."""
DATASOURCE_CLICKHOUSE: Final = "otelbench-clickhouse"
"""UID of the ClickHouse datasource (the collector's ``otel_traces``)."""
DATASOURCE_TEMPO: Final = "otelbench-tempo"
"""UID of the trace datasource the slowest-requests table links to."""
PLUGIN_PROMETHEUS: Final = "prometheus"
PLUGIN_CLICKHOUSE: Final = "grafana-clickhouse-datasource"
"""The official ClickHouse plugin (Grafana Labs), v4."""
PLUGIN_TEMPO: Final = "tempo"

FOLDER_UID: Final = "otelbench"
FOLDER_TITLE: Final = "otelbench"

VLLM_METRICS_SOURCE: Final = "vllm/v1/metrics/loggers.py"
"""Where vLLM declares its Prometheus metrics (vLLM 0.32.0, the version scripts/vllm/setup.sh
installs), relative to the ``vllm`` package's parent directory."""


class VllmMetric:
    """A vLLM ``/metrics`` series: the name as declared and the suffix prometheus_client adds."""

    __slots__ = ("declared", "exposed", "kind")

    def __init__(self, declared: str, kind: str) -> None:
        self.declared = declared
        self.kind = kind
        self.exposed = declared + ("_total" if kind == "counter" else "")


VLLM_METRICS: Final = {
    m.exposed: m
    for m in (
        # Gauge: requests waiting in the scheduler's queue (queue depth).
        VllmMetric("vllm:num_requests_waiting", "gauge"),
        # Gauge: requests in the running batch.
        VllmMetric("vllm:num_requests_running", "gauge"),
        # Gauge: KV-cache usage, 0..1 (1 = full).
        VllmMetric("vllm:kv_cache_usage_perc", "gauge"),
        # Counter: scheduler preemptions (prometheus_client adds ``_total``).
        VllmMetric("vllm:num_preemptions", "counter"),
    )
}
"""Every ``vllm:*`` series the dashboards query, keyed by its exposed name."""
