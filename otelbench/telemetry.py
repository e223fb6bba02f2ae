"""The one module that wires the OpenTelemetry SDK: tracer provider, resource and OTLP exporter.

Everything else in otelbench depends on ``opentelemetry-api`` only and takes an optional
``tracer_provider=``; this module builds the provider the load generator passes around.

Example::

    provider = make_tracer_provider("http://127.0.0.1:4318", run_id="r1")
    try:
        ...  # instrumented work
    finally:
        shutdown(provider)   # flushes every span still queued
"""

from __future__ import annotations

import logging

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otelbench import __version__, semconv

__all__ = ["make_tracer_provider", "shutdown", "traces_url"]

_log = logging.getLogger(__name__)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a base endpoint (``http://host:4318`` → ``.../v1/traces``).

    An endpoint that already ends in ``/v1/traces`` is returned unchanged, as the
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` convention has it.
    """
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def make_tracer_provider(
    endpoint: str, *, run_id: str | None = None, service_name: str = semconv.SERVICE_CLIENT
) -> TracerProvider:
    """A tracer provider exporting OTLP/HTTP protobuf to ``endpoint`` through a batch processor.

    The batch processor exports from its own thread; the request path only appends the finished
    span to a bounded queue (``max_queue_size``), so a slow or absent collector never delays a
    request. Spans dropped on a full queue are counted by the SDK and logged.
    """
    attributes: dict[str, str] = {
        "service.name": service_name,
        "service.version": __version__,
    }
    if run_id is not None:
        attributes[semconv.RUN_ID] = run_id
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint), timeout=10)
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=65536,
            max_export_batch_size=512,
            schedule_delay_millis=500,
        )
    )
    return provider


def shutdown(provider: TracerProvider, timeout_ms: int = 30_000) -> bool:
    """Flush and shut down ``provider``; returns False (and logs) when the flush timed out."""
    flushed = provider.force_flush(timeout_millis=timeout_ms)
    if not flushed:
        _log.warning("span export did not finish in %d ms; some spans may be missing", timeout_ms)
    provider.shutdown()
    return flushed
