"""The one module of the hooks that wires the OpenTelemetry SDK: providers, resource, exporters.

Configured by the standard variables only: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``), ``OTEL_EXPORTER_OTLP_*_HEADERS``/``TIMEOUT``
and ``OTEL_BSP_*`` are read by the SDK itself; ``service.name`` is ``OTEL_SERVICE_NAME`` or
``vllm``. Export is OTLP/HTTP protobuf through a ``BatchSpanProcessor`` (its own thread; the
engine's loop only appends the finished spans to a bounded queue). The provider is the hooks'
own, never the global one (vLLM sets the global provider for its ``llm_request`` span).

**Span spool** (``OTELBENCH_SPOOL_DIR``, bound ``OTELBENCH_SPOOL_MAX_BYTES``, default 256 MiB):
the exporter is then ``otelbench.spool.SpoolingSpanExporter``, which keeps on disk what the
collector cannot take and replays it when the collector answers again (the module docstring there
has the format, fsync policy and bound). The hooks import it from otelbench — installed into the
vLLM venv ``--no-deps`` by ``scripts/vllm/setup.sh`` — rather than carry a copy: the spool is one
implementation shared with the load generator, and that module needs only the standard library and
the OpenTelemetry SDK and OTLP encoder, which vLLM has. Without otelbench installed the hooks log
one warning and export without a spool. The spool reads the endpoint, ``*_HEADERS`` and
``*_TIMEOUT`` of the standard variables itself (it sends uncompressed protobuf, and one attempt
per batch: the spool is the retry). Its counts (spooled, replayed, dropped …) go to
:class:`~otelbench_vllm.hook.HookStats`; ``spans_dropped`` is on vLLM's ``/metrics`` as
``otelbench_hook_spans_dropped_total``. With a spool, ``spans_exported`` counts spans delivered or
spooled.

Metrics (:func:`make_meter_provider`) go to Prometheus always: a ``PrometheusMetricReader``
registered on prometheus_client's default ``REGISTRY``, which is the registry vLLM serves on its
own ``/metrics`` (one API server; with several, vLLM switches to multiprocess mode and these
metrics are not served). They also go over OTLP/HTTP through a ``PeriodicExportingMetricReader``
when ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(``OTEL_METRIC_EXPORT_INTERVAL`` etc. are read by the SDK).

Example::

    stats = HookStats()
    provider = make_tracer_provider(stats)   # spans exported and failed are counted in stats
    meters = make_meter_provider()           # its metrics appear on vLLM's /metrics
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otelbench_vllm import names
from otelbench_vllm.hook import HookStats

__all__ = ["CountingExporter", "make_meter_provider", "make_metric_readers", "make_tracer_provider"]

_log = logging.getLogger("vllm.plugins.otelbench")


class CountingExporter(SpanExporter):
    """Wraps an exporter: counts spans exported and failed in ``stats``; never raises.

    The SDK already logs each failure; this adds the numbers (``HookStats.spans_export_failed``,
    ``export_errors`` for exporter exceptions) so that the hook's health can be reported.
    """

    def __init__(self, inner: SpanExporter, stats: HookStats) -> None:
        self._inner = inner
        self._stats = stats
        self._warned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception:  # noqa: BLE001 - an export error is counted, never raised
            self._stats.add("export_errors")
            self._stats.add("spans_export_failed", len(spans))
            if not self._warned:
                self._warned = True
                _log.exception("otelbench hooks: span export raised (logged once; counted)")
            return SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self._stats.add("spans_exported", len(spans))
        else:
            self._stats.add("spans_export_failed", len(spans))
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _resource() -> Resource:
    return Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME") or names.SERVICE_VLLM}
    )


def _env(*keys: str) -> str | None:
    for key in keys:
        value = os.environ.get(key)
        if value:
            return value
    return None


def _traces_endpoint() -> str:
    endpoint = _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if endpoint:
        return endpoint
    base = _env("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"


def _spooling_exporter(spool_dir: str, stats: HookStats) -> SpanExporter | None:
    """The spooling exporter, or None (logged) when it cannot be set up."""
    try:
        # otelbench may be absent here (the hooks' own mypy run does not see it)
        from otelbench.spool import (  # type: ignore[import-not-found,unused-ignore]
            DEFAULT_MAX_BYTES,
            SpoolingSpanExporter,
        )

        max_bytes = int(os.environ.get(names.ENV_SPOOL_MAX_BYTES) or DEFAULT_MAX_BYTES)
        exporter: SpanExporter = SpoolingSpanExporter.from_env(
            _traces_endpoint(), Path(spool_dir), max_bytes=max_bytes, stats=stats
        )
    except Exception as exc:  # noqa: BLE001 - without a spool the hooks still export
        _log.warning("otelbench hooks: no span spool in %s (%s); exporting without", spool_dir, exc)
        return None
    return exporter


def make_tracer_provider(stats: HookStats) -> TracerProvider:
    """The hooks' tracer provider: OTLP/HTTP from the standard ``OTEL_*`` variables, through a
    span spool when ``OTELBENCH_SPOOL_DIR`` is set."""
    provider = TracerProvider(resource=_resource())
    spool_dir = os.environ.get(names.ENV_SPOOL_DIR)
    exporter = _spooling_exporter(spool_dir, stats) if spool_dir else None
    inner = exporter if exporter is not None else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(CountingExporter(inner, stats)))
    return provider


def make_metric_readers(*, prometheus: bool = True) -> list[MetricReader]:
    """Prometheus on the default registry (``prometheus=True``: once per process), plus OTLP/HTTP
    when an OTLP metrics endpoint is configured. A Prometheus reader that cannot be set up (the
    exporter package is missing) is logged once and left out."""
    readers: list[MetricReader] = []
    if prometheus:
        try:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader

            readers.append(PrometheusMetricReader())
        except Exception as exc:  # noqa: BLE001 - metrics are optional; spans still work
            _log.warning("otelbench hooks: no Prometheus metrics (%s)", exc)
    if os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    ):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return readers


def make_meter_provider(*, prometheus: bool = True) -> MeterProvider:
    """The hooks' meter provider (its own, not the global one) with :func:`make_metric_readers`.

    Exemplars are off: the hooks record after the request's span has ended, outside any span
    context, so a trace-based filter never samples one and only costs its check per record."""
    return MeterProvider(
        metric_readers=make_metric_readers(prometheus=prometheus),
        resource=_resource(),
        exemplar_filter=AlwaysOffExemplarFilter(),
    )
