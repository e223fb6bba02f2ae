"""The one module that wires the OpenTelemetry SDK: tracer provider, resource and OTLP exporter.

Everything else in otelbench depends on ``opentelemetry-api`` only and takes an optional
``tracer_provider=``; this module builds the provider the load generator passes around.

With ``spool_dir`` the exporter is :class:`otelbench.spool.SpoolingSpanExporter`: a batch the
collector cannot take (it is down, slow or overloaded) is kept on disk and sent when it answers
again, so an outage of the collector loses no client span; ``spool_stats`` counts what was sent,
spooled, replayed and dropped (the spool's bound). :func:`shutdown` waits, within its timeout, for
the spool to drain.

Example::

    stats = SpoolStats()
    provider = make_tracer_provider(
        "http://127.0.0.1:4318", run_id="r1", spool_dir=Path("out/spool"), spool_stats=stats
    )
    try:
        ...  # instrumented work
    finally:
        shutdown(provider)   # flushes every span still queued, and the spool
"""

from __future__ import annotations

import logging
import time
import weakref
from pathlib import Path
from typing import Final

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otelbench import __version__, semconv
from otelbench.errors import ConfigError
from otelbench.spool import DEFAULT_MAX_BYTES, SpoolBusyError, SpoolingSpanExporter, SpoolStats

__all__ = ["LAUNCHED_EXPORT_ENV", "make_tracer_provider", "shutdown", "traces_url"]

_log = logging.getLogger(__name__)

_SPOOLS: weakref.WeakKeyDictionary[TracerProvider, SpoolingSpanExporter] = (
    weakref.WeakKeyDictionary()
)
"""The spooling exporter of each provider that has one, for :func:`shutdown` to drain."""
LAUNCHED_EXPORT_ENV: Final = {"OTEL_BSP_SCHEDULE_DELAY": "200"}
"""The environment of a server otelbench launches and whose spans it waits for (vLLM, the
gateways of draft 5.10's configurations): the SDK's batch span processor exports every 200 ms,
not every 5 s, so the wait for a level's spans ends soon after its last request."""


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a base endpoint (``http://host:4318`` → ``.../v1/traces``).

    An endpoint that already ends in ``/v1/traces`` is returned unchanged, as the
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` convention has it.
    """
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def make_tracer_provider(
    endpoint: str,
    *,
    run_id: str | None = None,
    service_name: str = semconv.SERVICE_CLIENT,
    spool_dir: Path | None = None,
    spool_max_bytes: int = DEFAULT_MAX_BYTES,
    spool_stats: SpoolStats | None = None,
) -> TracerProvider:
    """A tracer provider exporting OTLP/HTTP protobuf to ``endpoint`` through a batch processor.

    The batch processor exports from its own thread; the request path only appends the finished
    span to a bounded queue (``max_queue_size``), so a slow or absent collector never delays a
    request. Spans dropped on a full queue are counted by the SDK and logged. With ``spool_dir``,
    batches the collector cannot take are spooled there (at most ``spool_max_bytes``) and
    replayed; raises ``ConfigError`` when the directory cannot be used.
    """
    attributes: dict[str, str] = {
        "service.name": service_name,
        "service.version": __version__,
    }
    if run_id is not None:
        attributes[semconv.RUN_ID] = run_id
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter: SpanExporter
    if spool_dir is None:
        exporter = OTLPSpanExporter(endpoint=traces_url(endpoint), timeout=10)
    else:
        exporter = _spooling_exporter(endpoint, spool_dir, spool_max_bytes, spool_stats)
        _SPOOLS[provider] = exporter
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=65536,
            max_export_batch_size=512,
            schedule_delay_millis=500,
        )
    )
    return provider


def _spooling_exporter(
    endpoint: str, spool_dir: Path, max_bytes: int, stats: SpoolStats | None
) -> SpoolingSpanExporter:
    try:
        return SpoolingSpanExporter.from_env(
            traces_url(endpoint), spool_dir, max_bytes=max_bytes, stats=stats
        )
    except (OSError, SpoolBusyError, ValueError) as exc:
        raise ConfigError(f"cannot spool spans in {spool_dir}: {exc}") from None


def shutdown(provider: TracerProvider, timeout_ms: int = 30_000) -> bool:
    """Flush and shut down ``provider``; returns False (and logs) when the flush timed out.

    A spooling exporter's spool is drained within the same timeout; what is left in it then stays
    on disk, and the next exporter on that directory sends it."""
    started = time.monotonic()
    flushed = provider.force_flush(timeout_millis=timeout_ms)
    spool = _SPOOLS.pop(provider, None)
    if spool is not None:
        left_ms = max(0, int(timeout_ms - (time.monotonic() - started) * 1000))
        if not spool.force_flush(left_ms):
            flushed = False
            _log.warning(
                "the collector did not take the spooled spans in %d ms; they stay in %s",
                timeout_ms,
                spool.spool.directory,
            )
    if not flushed and spool is None:
        _log.warning("span export did not finish in %d ms; some spans may be missing", timeout_ms)
    provider.shutdown()
    return flushed
