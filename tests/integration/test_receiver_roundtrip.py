"""The real OpenTelemetry SDK exporters → the embedded receiver → the store, value for value."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

from otelbench import semconv
from otelbench.collector import Receiver

pytestmark = pytest.mark.integration

OFFSETS = [812 + 997 * i for i in range(150)]  # a client span's chunk offsets, µs
KINDS = {
    trace.SpanKind.CLIENT: semconv.SPAN_KIND_CLIENT,
    trace.SpanKind.SERVER: semconv.SPAN_KIND_SERVER,
    trace.SpanKind.INTERNAL: semconv.SPAN_KIND_INTERNAL,
}
STATUS = {
    StatusCode.UNSET: semconv.STATUS_UNSET,
    StatusCode.OK: semconv.STATUS_OK,
    StatusCode.ERROR: semconv.STATUS_ERROR,
}

SELECT_ROWS = """
SELECT "SpanId", epoch_ns("Timestamp"), "TraceId", "ParentSpanId", "TraceState", "SpanName",
       "SpanKind", "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion",
       "SpanAttributes", "Duration", "StatusCode", "StatusMessage",
       list_transform("Events.Timestamp", lambda t: epoch_ns(t)), "Events.Name",
       "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes"
FROM otel_traces ORDER BY "SpanId"
"""


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    with Receiver(tmp_path / "spans.duckdb", port=0) as r:
        yield r
    assert r.stats().rejected == {}


def make_spans(tracer_provider: TracerProvider) -> None:
    """A client span with 150-element int arrays, a server child with events, an error span."""
    tracer = tracer_provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, "0.1.0")
    linked = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(1),
    )
    with tracer.start_as_current_span(
        "chat tiny", kind=trace.SpanKind.CLIENT, links=[Link(linked, {"link.reason": "retry"})]
    ) as client:
        client.set_attribute(semconv.GEN_AI_REQUEST_MODEL, "tiny")
        client.set_attribute(semconv.REQUEST_INDEX, 42)
        client.set_attribute(semconv.GEN_AI_REQUEST_TEMPERATURE, 0.7)
        client.set_attribute(semconv.GEN_AI_REQUEST_STREAM, True)
        client.set_attribute(semconv.CLIENT_CHUNK_OFFSETS_US, OFFSETS)
        client.set_attribute(semconv.CLIENT_CHUNK_TOKENS, [1] * 150)
        client.set_attribute(semconv.GEN_AI_RESPONSE_FINISH_REASONS, ["stop"])
        with tracer.start_as_current_span(
            semconv.SPAN_VLLM_REQUEST, kind=trace.SpanKind.SERVER
        ) as s:
            s.set_attribute(semconv.VLLM_LATENCY_TTFT, 0.0125)
            s.add_event("preempted", {"otelbench.preemption.count": 1})
            s.add_event("resumed")
    with tracer.start_as_current_span("failing") as failing:
        failing.set_status(Status(StatusCode.ERROR, "upstream answered 503"))


def attr_text(value: Any) -> str:
    """How the ClickHouse exporter writes an SDK attribute value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return json.dumps(list(value), separators=(",", ":"))
    return str(value)


def expected_row(span: ReadableSpan) -> tuple[Any, ...]:
    assert span.context is not None
    assert span.start_time is not None
    assert span.end_time is not None
    return (
        f"{span.context.span_id:016x}",
        span.start_time,
        f"{span.context.trace_id:032x}",
        f"{span.parent.span_id:016x}" if span.parent else "",
        "",
        span.name,
        KINDS[span.kind],
        span.resource.attributes["service.name"],
        {k: attr_text(v) for k, v in span.resource.attributes.items()},
        span.instrumentation_scope.name if span.instrumentation_scope else "",
        span.instrumentation_scope.version if span.instrumentation_scope else "",
        {k: attr_text(v) for k, v in (span.attributes or {}).items()},
        span.end_time - span.start_time,
        STATUS[span.status.status_code],
        span.status.description or "",
        [e.timestamp for e in span.events],
        [e.name for e in span.events],
        [{k: attr_text(v) for k, v in (e.attributes or {}).items()} for e in span.events],
        [f"{link.context.trace_id:032x}" for link in span.links],
        [f"{link.context.span_id:016x}" for link in span.links],
        ["" for _ in span.links],
        [{k: attr_text(v) for k, v in (link.attributes or {}).items()} for link in span.links],
    )


def record(exporter: Any) -> list[ReadableSpan]:
    """Send the spans through ``exporter`` and keep a copy of what was sent."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": semconv.SERVICE_CLIENT}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    make_spans(provider)
    provider.shutdown()
    return sorted(memory.get_finished_spans(), key=lambda s: f"{s.context.span_id:016x}")


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_sdk_protobuf_spans_arrive_exactly(receiver: Receiver, compression: Compression) -> None:
    exporter = OTLPSpanExporter(
        endpoint=f"http://127.0.0.1:{receiver.port}/v1/traces", compression=compression
    )
    sent = record(exporter)
    rows = receiver.store.execute(SELECT_ROWS)
    assert rows == [expected_row(s) for s in sent]
    assert receiver.stats().spans_accepted == 3
    [(offsets, tokens)] = receiver.store.execute(
        f"""SELECT "SpanAttributes"['{semconv.CLIENT_CHUNK_OFFSETS_US}']::BIGINT[],
                   "SpanAttributes"['{semconv.CLIENT_CHUNK_TOKENS}']::BIGINT[]
            FROM otel_traces WHERE "SpanKind" = ?""",
        [semconv.SPAN_KIND_CLIENT],
    )
    assert offsets == OFFSETS
    assert tokens == [1] * 150


def otlp_json(spans: list[ReadableSpan]) -> bytes:
    """OTLP/JSON per the spec: proto3 JSON, hex ids, integer enums, 64-bit ints as strings."""
    doc = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        link[key] = base64.b64decode(link[key]).hex()
    return json.dumps(doc).encode()


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("Content-Type", "")
    finally:
        conn.close()


@pytest.mark.parametrize("gzipped", [False, True])
def test_otlp_json_spans_arrive_exactly(receiver: Receiver, gzipped: bool) -> None:
    sent = record(None)
    body = otlp_json(sent)
    headers = {"Content-Type": "application/json"}
    if gzipped:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    status, reply, content_type = post(receiver.port, "/v1/traces", body, headers)
    assert (status, reply, content_type) == (200, b"{}", "application/json")
    assert receiver.store.execute(SELECT_ROWS) == [expected_row(s) for s in sent]


def test_sdk_metrics_arrive(receiver: Receiver) -> None:
    exporter = OTLPMetricExporter(endpoint=f"http://127.0.0.1:{receiver.port}/v1/metrics")
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "vllm"})
    )
    meter = provider.get_meter("otelbench.test", "1.0")
    requests = meter.create_counter("requests", unit="{request}", description="finished requests")
    running = meter.create_up_down_counter("running", unit="{request}")
    ttft = meter.create_histogram("ttft", unit="s", description="time to first token")
    kv_usage = meter.create_gauge("kv_cache_usage", unit="1")
    requests.add(3, {"model": "tiny"})
    requests.add(2, {"model": "tiny"})
    running.add(4)
    running.add(-1)
    for value in (0.2, 3.0, 7.5, 30.0):
        ttft.record(value, {"model": "tiny"})
    kv_usage.set(0.25)
    provider.shutdown()  # collects and exports once

    store = receiver.store
    sums = store.execute(
        'SELECT "MetricName", "MetricUnit", "MetricDescription", "Value", "IsMonotonic", '
        '"AggregationTemporality", "Attributes", "ServiceName", "ScopeName", "ScopeVersion" '
        'FROM otel_metrics_sum ORDER BY "MetricName"'
    )
    assert sums == [
        ("requests", "{request}", "finished requests", 5.0, True, 2, {"model": "tiny"}, "vllm",
         "otelbench.test", "1.0"),
        ("running", "{request}", "", 3.0, False, 2, {}, "vllm", "otelbench.test", "1.0"),
    ]  # fmt: skip
    [hist] = store.execute(
        'SELECT "MetricName", "Count", "Sum", "Min", "Max", "ExplicitBounds", "BucketCounts", '
        '"Attributes" FROM otel_metrics_histogram'
    )
    bounds = [0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0,
              7500.0, 10000.0]  # fmt: skip
    counts = [0, 2, 1, 0, 1] + [0] * 11
    assert hist == ("ttft", 4, 40.7, 0.2, 30.0, bounds, counts, {"model": "tiny"})
    [gauge] = store.execute('SELECT "MetricName", "Value" FROM otel_metrics_gauge')
    assert gauge == ("kv_cache_usage", 0.25)
    [(start_ns, time_ns)] = store.execute(
        'SELECT epoch_ns("StartTimeUnix"), epoch_ns("TimeUnix") FROM otel_metrics_histogram'
    )
    assert 0 < start_ns <= time_ns
    assert receiver.stats().metric_points_accepted == 4
