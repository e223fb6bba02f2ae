"""The one module of the hooks that wires the OpenTelemetry SDK: providers, resource, exporters.

Configured by the standard variables only: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``), ``OTEL_EXPORTER_OTLP_*_HEADERS``/``TIMEOUT``
and ``OTEL_BSP_*`` are read by the SDK itself; ``service.name`` is ``OTEL_SERVICE_NAME`` or
``vllm``. Export is OTLP/HTTP protobuf through a ``BatchSpanProcessor`` (its own thread). The
provider is the hooks' own, never the global one (vLLM sets the global provider for its
``llm_request`` span). By default (``OTELBENCH_VLLM_EXPORT=process``) the tracer provider lives
in the hooks' exporter process (:mod:`otelbench_vllm.exporter`), which passes the API server's
pid for ``process.pid``; with ``inprocess`` it lives in the API server. The meter provider is
always the API server's: its metrics are served on vLLM's ``/metrics``.

**Encoding.** Where otelbench is installed in vLLM's venv (``scripts/vllm/setup.sh`` installs
it ``--no-deps``), spans are encoded by its ``otelbench.spool.encode_batch`` (the SDK encoder's
bytes, ~4x less CPU) and sent by ``otelbench.spool.FastSpanExporter`` (three tries while the
collector's answer is worth retrying); without it, by the SDK's ``OTLPSpanExporter``.

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
own ``/metrics`` with one API server. With several (``--api-server-count``), vLLM serves
prometheus_client's multiprocess files instead, which no OpenTelemetry reader reaches: the reader is
then left out and the metrics go to OTLP only. They go over OTLP/HTTP through a
``PeriodicExportingMetricReader`` whenever ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (``OTEL_METRIC_EXPORT_INTERVAL`` etc. are read by the SDK).
:func:`publish_hook_info` puts ``otelbench_hook_info`` on ``/metrics`` in either mode (a
prometheus_client gauge, which multiprocess mode serves): that the hooks are active in each API
server process, with which vLLM, and where their metrics go.

Each API server process spools to its own slot under ``OTELBENCH_SPOOL_DIR``
(:data:`SPOOL_SLOT_PREFIX`): its exporter process takes the slot (one exporter process per API
server; a restarted one takes a free slot and replays what its predecessor left).

Example::

    stats = HookStats()
    provider = make_tracer_provider(stats)   # spans exported and failed are counted in stats
    meters = make_meter_provider()           # its metrics appear on vLLM's /metrics
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otelbench_vllm import names
from otelbench_vllm.hook import HookStats

__all__ = [
    "MAX_SPOOL_SLOTS",
    "SPOOL_SLOT_PREFIX",
    "CountingExporter",
    "make_meter_provider",
    "make_metric_readers",
    "make_resource",
    "make_span_processor",
    "make_tracer_provider",
    "metrics_destinations",
    "otlp_metrics_configured",
    "prometheus_multiprocess",
    "prometheus_reader_available",
    "publish_hook_info",
]

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


def _resource(attributes: Mapping[str, str] | None = None, pid: int | None = None) -> Resource:
    """``service.name`` (``OTEL_SERVICE_NAME`` or ``vllm``), ``process.pid`` (several API servers
    export side by side: ``pid``, the API server's, which the exporter process passes; default
    this process's) and ``attributes`` (the vLLM version, the hooks' distribution and support
    level), over ``OTEL_RESOURCE_ATTRIBUTES``."""
    return Resource.create(
        {
            **(attributes or {}),
            "process.pid": pid if pid is not None else os.getpid(),
            "service.name": os.environ.get("OTEL_SERVICE_NAME") or names.SERVICE_VLLM,
        }
    )


def publish_hook_info(attributes: Mapping[str, str]) -> None:
    """``otelbench_hook_info`` on vLLM's ``/metrics``, value 1, one sample per API server process:
    the vLLM version, the hooks' version and support level, and where the hooks' metrics go
    (label ``metrics``: :func:`metrics_destinations`). A prometheus_client gauge, so that it is
    served in vLLM's multiprocess mode too (mode ``liveall``: a ``pid`` label per process)."""
    try:
        from prometheus_client import Gauge

        gauge = Gauge(
            names.PROMETHEUS_HOOK_INFO,
            "otelbench engine hooks: active in this process (labels: versions, support level, "
            "where the hooks' metrics go)",
            labelnames=("vllm_version", "hooks_version", "support", "metrics"),
            multiprocess_mode="liveall",
        )
        gauge.labels(
            vllm_version=attributes.get(names.RESOURCE_VLLM_VERSION, ""),
            hooks_version=attributes.get(names.RESOURCE_TELEMETRY_DISTRO_VERSION, ""),
            support=attributes.get(names.RESOURCE_HOOK_SUPPORT, ""),
            metrics=metrics_destinations(),
        ).set(1)
    except Exception as exc:  # noqa: BLE001 - an info metric never stops the hooks
        _log.warning("otelbench hooks: no otelbench_hook_info metric (%s)", exc)


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


SPOOL_SLOT_PREFIX = "api-server-"
"""Each API server process spools to ``OTELBENCH_SPOOL_DIR/api-server-N``, the first N it can
lock (the spool's own ``flock``): with ``--api-server-count 2`` the two processes take slots 0 and
1, and a restarted server takes a free slot and replays what an earlier process left there."""
MAX_SPOOL_SLOTS = 64


def _spooling_exporter(spool_dir: str, stats: HookStats) -> SpanExporter | None:
    """The spooling exporter on this process's slot of ``spool_dir``, or None (logged) when it
    cannot be set up."""
    try:
        # otelbench may be absent here (the hooks' own mypy run does not see it)
        from otelbench.spool import (  # type: ignore[import-not-found,unused-ignore]
            DEFAULT_MAX_BYTES,
            SpoolBusyError,
            SpoolingSpanExporter,
        )

        max_bytes = int(os.environ.get(names.ENV_SPOOL_MAX_BYTES) or DEFAULT_MAX_BYTES)
        for slot in range(MAX_SPOOL_SLOTS):
            directory = Path(spool_dir) / f"{SPOOL_SLOT_PREFIX}{slot}"
            try:
                exporter: SpanExporter = SpoolingSpanExporter.from_env(
                    _traces_endpoint(), directory, max_bytes=max_bytes, stats=stats
                )
            except SpoolBusyError:
                continue
            _log.info("otelbench hooks: span spool in %s", directory)
            return exporter
        raise RuntimeError(f"all {MAX_SPOOL_SLOTS} slots are in use by other processes")
    except Exception as exc:  # noqa: BLE001 - without a spool the hooks still export
        _log.warning("otelbench hooks: no span spool in %s (%s); exporting without", spool_dir, exc)
        return None


def _fast_exporter() -> SpanExporter | None:
    """otelbench's OTLP/HTTP exporter (its encoder: ~4x less CPU than the SDK's) when otelbench
    is installed here, else None (logged only where it fails for another reason)."""
    try:
        from otelbench.spool import (  # type: ignore[import-not-found,unused-ignore]
            FastSpanExporter,
        )
    except ImportError:
        return None
    try:
        exporter: SpanExporter = FastSpanExporter.from_env(_traces_endpoint())
    except Exception as exc:  # noqa: BLE001 - the SDK's exporter still works
        _log.warning("otelbench hooks: exporting with the SDK's encoder (%s)", exc)
        return None
    return exporter


def make_span_processor(stats: HookStats) -> BatchSpanProcessor:
    """The hooks' batch span processor: OTLP/HTTP from the standard ``OTEL_*`` variables (the
    ``OTEL_BSP_*`` ones included), through a span spool when ``OTELBENCH_SPOOL_DIR`` is set,
    else with otelbench's encoder where otelbench is installed, else the SDK's exporter; the
    spans it exports and fails are counted in ``stats``."""
    spool_dir = os.environ.get(names.ENV_SPOOL_DIR)
    exporter = _spooling_exporter(spool_dir, stats) if spool_dir else _fast_exporter()
    inner = exporter if exporter is not None else OTLPSpanExporter()
    return BatchSpanProcessor(CountingExporter(inner, stats))


def make_resource(attributes: Mapping[str, str] | None = None, pid: int | None = None) -> Resource:
    """The hooks' resource: ``attributes``, ``process.pid`` (``pid``, default this process's),
    ``service.name``, over ``OTEL_RESOURCE_ATTRIBUTES``."""
    return _resource(attributes, pid)


def make_tracer_provider(
    stats: HookStats, attributes: Mapping[str, str] | None = None, pid: int | None = None
) -> TracerProvider:
    """The hooks' tracer provider on :func:`make_span_processor`; ``attributes`` go on its
    resource, and ``pid`` as its ``process.pid`` (default: this process's)."""
    provider = TracerProvider(resource=make_resource(attributes, pid))
    provider.add_span_processor(make_span_processor(stats))
    return provider


def prometheus_multiprocess() -> bool:
    """True in vLLM's multiprocess Prometheus mode (``--api-server-count`` > 1: vLLM sets
    ``PROMETHEUS_MULTIPROC_DIR`` and serves ``/metrics`` from prometheus_client's per-process
    files, which an OpenTelemetry reader on the default registry never reaches)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def otlp_metrics_configured() -> bool:
    """True when an OTLP metrics endpoint is set (the OTLP metric reader is then added)."""
    return bool(_env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"))


def prometheus_reader_available() -> bool:
    """True when ``opentelemetry-exporter-prometheus`` is installed (``setup.sh`` installs it
    ``--no-deps``; it is not a vLLM dependency)."""
    return importlib.util.find_spec("opentelemetry.exporter.prometheus") is not None


def metrics_destinations() -> str:
    """Where the hooks' metrics go in this process: ``prometheus``, ``prometheus+otlp``, ``otlp``
    or ``none``. Prometheus needs one API server (not vLLM's multiprocess mode) and the
    Prometheus reader's package; OTLP needs an OTLP metrics endpoint."""
    places = []
    if not prometheus_multiprocess() and prometheus_reader_available():
        places.append("prometheus")
    if otlp_metrics_configured():
        places.append("otlp")
    return "+".join(places) or "none"


def make_metric_readers(*, prometheus: bool = True) -> list[MetricReader]:
    """Prometheus on the default registry (``prometheus=True``: once per process; not in vLLM's
    multiprocess mode, where that registry is not served), plus OTLP/HTTP when an OTLP metrics
    endpoint is configured. A Prometheus reader that cannot be set up (the exporter package is
    missing) is logged once and left out."""
    readers: list[MetricReader] = []
    if prometheus and prometheus_multiprocess():
        _log.warning(
            "otelbench hooks: several API servers (prometheus multiprocess mode): the hooks' "
            "metrics are not on /metrics; they go to OTLP only (%s); otelbench_hook_info says so",
            "configured"
            if otlp_metrics_configured()
            else "not configured: set OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        )
        prometheus = False
    if prometheus:
        try:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader

            readers.append(PrometheusMetricReader())
        except Exception as exc:  # noqa: BLE001 - metrics are optional; spans still work
            _log.warning("otelbench hooks: no Prometheus metrics (%s)", exc)
    if otlp_metrics_configured():
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return readers


def make_meter_provider(
    *, prometheus: bool = True, attributes: Mapping[str, str] | None = None
) -> MeterProvider:
    """The hooks' meter provider (its own, not the global one) with :func:`make_metric_readers`.

    Exemplars are off: the hooks record after the request's span has ended, outside any span
    context, so a trace-based filter never samples one and only costs its check per record."""
    return MeterProvider(
        metric_readers=make_metric_readers(prometheus=prometheus),
        resource=_resource(attributes),
        exemplar_filter=AlwaysOffExemplarFilter(),
    )
