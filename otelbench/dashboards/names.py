"""Datasource UIDs, dashboard UIDs, and the vLLM and GenAI client metric names the dashboards read.

``otelbench_live_*`` names come from :mod:`otelbench.semconv` (``METRIC_LIVE_*``). vLLM's own
``/metrics`` names are not ours: :data:`VLLM_METRICS` lists each with the source that declares it,
and ``tests/unit/test_dashboards.py`` checks every one against that source in the installed vLLM.
The GenAI client histograms (:mod:`otelbench.client.metrics`, names from :mod:`otelbench.semconv`)
reach Prometheus from the application under OpenTelemetry's Prometheus naming:
:data:`GENAI_CLIENT_METRICS` derives each exposed name, and :func:`prometheus_label` each label.
"""

from __future__ import annotations

from typing import Final

from otelbench import semconv

__all__ = [
    "DATASOURCE_CLICKHOUSE",
    "DATASOURCE_PROMETHEUS",
    "DATASOURCE_TEMPO",
    "FOLDER_TITLE",
    "FOLDER_UID",
    "GENAI_CLIENT_METRICS",
    "GENAI_INFERENCE_DURATION",
    "GENAI_TIME_PER_OUTPUT_CHUNK",
    "GENAI_TIME_TO_FIRST_CHUNK",
    "GENAI_USAGE_INPUT_TOKENS",
    "GENAI_USAGE_OUTPUT_TOKENS",
    "PLUGIN_CLICKHOUSE",
    "PLUGIN_PROMETHEUS",
    "PLUGIN_TEMPO",
    "VLLM_METRICS",
    "VLLM_METRICS_SOURCE",
    "GenAIClientMetric",
    "VllmMetric",
    "prometheus_label",
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


_UNIT_SUFFIXES: Final = {"s": "_seconds", "{token}": ""}
"""OpenTelemetry's Prometheus naming of the units the GenAI client histograms use: seconds get
``_seconds``; an annotation in braces (``{token}``) adds no suffix."""


def prometheus_label(attribute: str) -> str:
    """The Prometheus label of an OpenTelemetry attribute: ``gen_ai.request.model`` ->
    ``gen_ai_request_model``."""
    return attribute.replace(".", "_")


class GenAIClientMetric:
    """A GenAI client metric as Prometheus holds it when the application exports it with
    OpenTelemetry's Prometheus exporter (``PrometheusMetricReader``) or through a collector's
    Prometheus exporter: the name's dots as underscores, then the unit's suffix. A histogram's
    series are ``exposed`` + ``_bucket`` (label ``le``), ``_sum`` and ``_count``; a counter's,
    ``exposed`` + ``_total``."""

    __slots__ = ("exposed", "kind", "name", "unit")

    def __init__(self, name: str, unit: str, kind: str = "histogram") -> None:
        self.name = name
        self.unit = unit
        self.kind = kind
        self.exposed = prometheus_label(name) + _UNIT_SUFFIXES[unit]


GENAI_INFERENCE_DURATION: Final = GenAIClientMetric(semconv.METRIC_CLIENT_INFERENCE_DURATION, "s")
GENAI_TIME_TO_FIRST_CHUNK: Final = GenAIClientMetric(
    semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK, "s"
)
GENAI_TIME_PER_OUTPUT_CHUNK: Final = GenAIClientMetric(
    semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK, "s"
)
GENAI_USAGE_INPUT_TOKENS: Final = GenAIClientMetric(
    semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS, "{token}", "counter"
)
GENAI_USAGE_OUTPUT_TOKENS: Final = GenAIClientMetric(
    semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS, "{token}", "counter"
)
GENAI_CLIENT_METRICS: Final = {
    m.exposed: m
    for m in (
        GENAI_INFERENCE_DURATION,
        GENAI_TIME_TO_FIRST_CHUNK,
        GENAI_TIME_PER_OUTPUT_CHUNK,
        GENAI_USAGE_INPUT_TOKENS,
        GENAI_USAGE_OUTPUT_TOKENS,
    )
}
"""Every GenAI client metric the dashboards query (today's names, semantic-conventions-genai),
keyed by its exposed name (units as :mod:`otelbench.client.metrics` creates the instruments;
``tests/unit/test_dashboards.py`` checks the names against the real exporter)."""
