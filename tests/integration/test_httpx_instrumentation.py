"""otelbench's transport together with the real ``opentelemetry-instrumentation-httpx`` (its
``HTTPXClientInstrumentor`` on ``httpx`` clients and ``HTTPX2ClientInstrumentor`` on ``httpx2``
ones, each test run with both), under the real ``openai`` SDK, against the scripted server
(which logs every ``traceparent`` header line a request carried): one ``traceparent`` per
request, every span's parent in the trace, and the server's parent (the span whose id the
``traceparent`` carries) is otelbench's client span.

* ``HTTPXClientInstrumentor().instrument()`` wraps ``httpx.HTTPTransport`` (otelbench's inner
  transport): otelbench's span is the request's HTTP client span and the instrumentation stays out
  of that request; other requests of the same client still get its spans.
* ``instrument_client(client)`` wraps the client's own transport (otelbench's): its HTTP span is
  otelbench's span's parent.
* otelbench's transport without a tracer provider of its own: the instrumentation's span and
  ``traceparent`` go out as without otelbench.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor, HTTPXClientInstrumentor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, SpanKind

from otelbench import semconv
from otelbench.client import openai_async_http_client, openai_http_client
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

SCRIPT = {"n": 4, "ttft_ms": 5.0, "itl_ms": 5.0}
CHAT_SPAN = semconv.client_span_name(semconv.OPERATION_CHAT, "tiny")


Instrumentor = type[HTTPXClientInstrumentor] | type[HTTPX2ClientInstrumentor]
INSTRUMENTORS: dict[str, Instrumentor] = {
    "httpx": HTTPXClientInstrumentor,
    "httpx2": HTTPX2ClientInstrumentor,
}


@pytest.fixture(params=sorted(INSTRUMENTORS))
def lib(request: pytest.FixtureRequest) -> str:
    """The HTTP library of the client otelbench builds, and of the instrumentation."""
    name: str = request.param
    return name


@pytest.fixture
def http_metrics() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    """Where the instrumentation records its HTTP metrics, and their reader."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield provider, reader
    provider.shutdown()


@pytest.fixture
def instrumented(
    tracer_provider: TracerProvider,
    lib: str,
    http_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> Iterator[Any]:
    """The instrumentation on every transport of ``lib``, tracing to ``tracer_provider``."""
    instrumentor = INSTRUMENTORS[lib]()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=http_metrics[0])
    yield instrumentor
    instrumentor.uninstrument()


def http_durations(reader: InMemoryMetricReader) -> int:
    """Requests the instrumentation's ``http.client.duration`` counted."""
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return sum(
        p.count
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "http.client.duration"
        for p in m.data.data_points
        if isinstance(p, HistogramDataPoint)
    )


def span_id(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"{ctx.span_id:016x}"


def traceparent_span_id(value: str) -> str:
    return value.split("-")[2]


def check_whole_trace(spans: tuple[ReadableSpan, ...]) -> None:
    """One trace; every span's parent is a span of it, but the root's."""
    ctxs = [s.get_span_context() for s in spans]
    assert len({c.trace_id for c in ctxs if c is not None}) == 1
    ids = {c.span_id for c in ctxs if c is not None}
    roots = [s for s in spans if s.parent is None]
    assert [s.name for s in roots] == ["handle"]
    for s in spans:
        assert s.parent is None or s.parent.span_id in ids, s.name


def stream_chat(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        extra_body={"script": SCRIPT},
    )
    ids = [c.id for c in stream]  # read to the end
    return ids[0]


def base(server: ScriptedServer) -> dict[str, Any]:
    return {"base_url": server.url + "/v1", "api_key": "unused", "max_retries": 0}


@pytest.mark.usefixtures("instrumented")
def test_instrument_adds_no_second_span_or_traceparent_to_an_llm_call(
    lib: Any,
    http_metrics: tuple[MeterProvider, InMemoryMetricReader],
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    http_client = openai_http_client(tracer_provider=tracer_provider, http_library=lib)
    client = openai.OpenAI(**base(scripted_server), http_client=http_client)
    with tracer_provider.get_tracer("app").start_as_current_span("handle"):
        rid = stream_chat(client)
        http_client.get(scripted_server.url + "/_health").raise_for_status()
    client.close()
    spans = span_exporter.get_finished_spans()
    check_whole_trace(spans)
    by_name = {s.name: s for s in spans}
    assert sorted(by_name) == sorted([CHAT_SPAN, "GET", "handle"])
    assert len(spans) == 3
    ours, health, app = by_name[CHAT_SPAN], by_name["GET"], by_name["handle"]
    assert ours.kind == health.kind == SpanKind.CLIENT
    assert ours.parent is not None
    assert health.parent is not None
    assert ours.parent.span_id == health.parent.span_id == app.context.span_id
    [sent] = scripted_server.entry(rid)["traceparents"]
    assert traceparent_span_id(sent) == span_id(ours)  # the server's parent: otelbench's span
    attrs = dict(ours.attributes or {})
    assert attrs[semconv.HTTP_RESPONSE_STATUS_CODE] == 200
    assert len(attrs[semconv.CLIENT_CHUNK_OFFSETS_US]) == SCRIPT["n"]  # type: ignore[arg-type]
    # the side effect (docs/instrument.md): the suppression that keeps its span out of the LLM
    # call keeps it out of its http.client.duration too; the GET is counted, the call is not
    assert http_durations(http_metrics[1]) == 1


@pytest.mark.usefixtures("instrumented")
def test_instrument_with_the_async_client(
    lib: Any,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    async def run() -> str:
        http_client = openai_async_http_client(tracer_provider=tracer_provider, http_library=lib)
        async with openai.AsyncOpenAI(**base(scripted_server), http_client=http_client) as client:
            stream = await client.completions.create(
                model="tiny", prompt="Hi", stream=True, extra_body={"script": SCRIPT}
            )
            ids = [c.id async for c in stream]  # read to the end
            return ids[0]

    with tracer_provider.get_tracer("app").start_as_current_span("handle"):
        rid = asyncio.run(run())
    spans = span_exporter.get_finished_spans()
    check_whole_trace(spans)
    assert sorted(s.name for s in spans) == sorted(
        ["handle", semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, "tiny")]
    )
    [ours] = [s for s in spans if s.name != "handle"]
    [sent] = scripted_server.entry(rid)["traceparents"]
    assert traceparent_span_id(sent) == span_id(ours)


def test_instrument_client_puts_its_http_span_above_otelbenchs(
    lib: Any,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    http_client = openai_http_client(tracer_provider=tracer_provider, http_library=lib)
    instrumentor = INSTRUMENTORS[lib]
    instrumentor.instrument_client(
        http_client, tracer_provider=tracer_provider, meter_provider=NoOpMeterProvider()
    )
    client = openai.OpenAI(**base(scripted_server), http_client=http_client)
    try:
        with tracer_provider.get_tracer("app").start_as_current_span("handle"):
            rid = stream_chat(client)
    finally:
        instrumentor.uninstrument_client(http_client)
        client.close()
    spans = span_exporter.get_finished_spans()
    check_whole_trace(spans)
    by_name = {s.name: s for s in spans}
    assert sorted(by_name) == sorted([CHAT_SPAN, "POST", "handle"])
    ours, http = by_name[CHAT_SPAN], by_name["POST"]
    assert ours.parent is not None
    assert http.parent is not None
    assert ours.parent.span_id == http.context.span_id
    assert http.parent.span_id == by_name["handle"].context.span_id
    [sent] = scripted_server.entry(rid)["traceparents"]
    assert traceparent_span_id(sent) == span_id(ours)


@pytest.mark.usefixtures("instrumented")
def test_without_a_tracer_of_its_own_otelbench_leaves_the_instrumentation_alone(
    lib: Any,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    http_client = openai_http_client(tracer_provider=NoOpTracerProvider(), http_library=lib)
    client = openai.OpenAI(**base(scripted_server), http_client=http_client)
    with tracer_provider.get_tracer("app").start_as_current_span("handle"):
        rid = stream_chat(client)
    client.close()
    spans = span_exporter.get_finished_spans()
    check_whole_trace(spans)
    [http] = [s for s in spans if s.name == "POST"]
    [sent] = scripted_server.entry(rid)["traceparents"]
    assert traceparent_span_id(sent) == span_id(http)
