"""An application on the real ``openai`` SDK, instrumented as the README says
(``http_client=openai_http_client(...)``), against the real vLLM with otelbench's engine hooks
(the session's shared ``vllm_server``, hooks enabled: conftest.py): each call's client span is
the parent of the hooks' server span, whose per-token engine offsets agree with the client's
timing; the GenAI client metrics of the same calls agree with the stored client spans; and with
``opentelemetry-instrumentation-httpx`` on as well, the server span still joins otelbench's span.

Spans go to the session's embedded receiver (``otlp_receiver``) under the service name
``my-app``; the metrics to an in-memory reader.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import openai
import pytest
from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from otelbench import semconv
from otelbench.client import openai_async_http_client, openai_http_client
from otelbench.sut import VllmCpuServer
from otelbench.telemetry import make_tracer_provider, shutdown

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink, StoredSpan

pytestmark = pytest.mark.vllm

MODEL = "tiny"
MAX_TOKENS = 12
PROMPT_IDS = list(range(10, 26))
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me a story about the sea."}]
SERVICE = "my-app"
SPANS_PER_CALL = 6
"""The client span, the hooks' four (request, queue, prefill, decode) and vLLM's own."""
COMMON: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": MAX_TOKENS,
    "temperature": 0.0,
    "extra_body": {"ignore_eos": True},
}
STREAMED: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}


@pytest.fixture
def tracer_provider(otlp_receiver: SpanSink) -> Iterator[TracerProvider]:
    provider = make_tracer_provider(otlp_receiver.endpoint, service_name=SERVICE)
    yield provider
    shutdown(provider)


def client_span(sink: SpanSink, response_id: str) -> StoredSpan:
    [span] = sink.spans(
        '"ServiceName" = ? AND "SpanAttributes"[?] = ?',
        [SERVICE, semconv.GEN_AI_RESPONSE_ID, response_id],
    )
    return span


def one(spans: list[StoredSpan], name: str) -> StoredSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def check_joined(sink: SpanSink, response_id: str, streamed: bool) -> tuple[StoredSpan, int]:
    """The call's client span and its hook server span, checked against each other; returns
    the client span and the server's prompt tokens."""
    client = client_span(sink, response_id)
    spans = sink.wait_for_trace(client.trace_id, count=SPANS_PER_CALL)
    server = one(spans, semconv.SPAN_HOOK_REQUEST)
    assert server.kind == semconv.SPAN_KIND_SERVER
    assert server.parent_span_id == client.span_id
    assert client.kind == semconv.SPAN_KIND_CLIENT
    assert client.parent_span_id == ""
    assert "POST" not in {s.name for s in spans}
    c, s = client.attributes, server.attributes
    assert "error.type" not in c
    offsets = json.loads(s[semconv.SERVER_TOKEN_OFFSETS_US])
    assert len(offsets) == MAX_TOKENS == int(c[semconv.GEN_AI_USAGE_OUTPUT_TOKENS])
    ttft_us = int(c[semconv.CLIENT_TTFT_US])
    # the engine made the first token before the client saw it; the client sent first
    assert offsets[0] <= ttft_us
    assert server.start_unix_ns >= client.start_unix_ns
    assert int(s[semconv.VLLM_USAGE_PROMPT_TOKENS]) == int(c[semconv.GEN_AI_USAGE_INPUT_TOKENS])
    if streamed:
        chunks = json.loads(c[semconv.CLIENT_CHUNK_OFFSETS_US])
        assert 1 <= len(chunks) <= MAX_TOKENS
        assert chunks[0] == ttft_us
        assert chunks == sorted(chunks)
    else:
        assert semconv.CLIENT_CHUNK_OFFSETS_US not in c
        assert ttft_us == int(c[semconv.CLIENT_END_OFFSET_US])
    return client, int(s[semconv.VLLM_USAGE_PROMPT_TOKENS])


def test_openai_sdk_calls_are_client_spans_over_the_hooks_server_spans(
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink, tracer_provider: TracerProvider
) -> None:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    providers = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
    base: dict[str, Any] = {"base_url": vllm_server.base_url + "/v1", "api_key": "EMPTY"}
    with openai.OpenAI(**base, http_client=openai_http_client(**providers)) as client:
        stream = client.chat.completions.create(messages=MESSAGES, **COMMON, **STREAMED)
        chunks = list(stream)
        assert chunks[-1].usage is not None
        assert chunks[-1].usage.completion_tokens == MAX_TOKENS
        whole = client.chat.completions.create(messages=MESSAGES, **COMMON)
        assert whole.usage is not None
        assert whole.usage.completion_tokens == MAX_TOKENS

    async def streamed_completion() -> str:
        http_client = openai_async_http_client(**providers)
        async with openai.AsyncOpenAI(**base, http_client=http_client) as aclient:
            astream = await aclient.completions.create(prompt=PROMPT_IDS, **COMMON, **STREAMED)
            ids = [c.id async for c in astream]  # read to the end
            return ids[0]

    completion_id = asyncio.run(streamed_completion())
    assert tracer_provider.force_flush()
    calls = [(chunks[0].id, True), (whole.id, False), (completion_id, True)]
    joined = [check_joined(otlp_receiver, rid, streamed) for rid, streamed in calls]

    # the GenAI client metrics: one duration and token usage per call, chunk metrics per stream
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[HistogramDataPoint]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                points.setdefault(m.name, []).extend(
                    p for p in m.data.data_points if isinstance(p, HistogramDataPoint)
                )
    meter_provider.shutdown()
    durations = [int(c.attributes[semconv.CLIENT_END_OFFSET_US]) / 1e6 for c, _ in joined]
    got = points[semconv.METRIC_CLIENT_INFERENCE_DURATION]
    assert sum(p.count for p in got) == len(calls)
    assert sum(p.sum for p in got) == pytest.approx(sum(durations), abs=1e-9)
    streamed_clients = [c for (c, _), (_, streamed) in zip(joined, calls, strict=True) if streamed]
    gaps = sum(
        len(json.loads(c.attributes[semconv.CLIENT_CHUNK_OFFSETS_US])) - 1 for c in streamed_clients
    )
    text_gaps = points[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK]
    assert sum(p.count for p in text_gaps) == gaps
    # every chunk after the first: the text chunks' gaps and more (role, usage chunks)
    chunk_gaps = points[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK]
    assert sum(p.count for p in chunk_gaps) > gaps
    assert sum(p.count for p in points[semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK]) == 2
    usage = [
        sum(p.sum for p in points[name])
        for name in (
            semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
            semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
        )
    ]
    assert usage == [sum(prompt for _, prompt in joined), MAX_TOKENS * len(calls)]


def test_with_the_httpx_instrumentation_on_the_server_span_still_joins_otelbenchs(
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink, tracer_provider: TracerProvider
) -> None:
    instrumentor = HTTPX2ClientInstrumentor()  # the SDK 3.x's library, as openai_http_client's
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=NoOpMeterProvider())
    try:
        with openai.OpenAI(
            base_url=vllm_server.base_url + "/v1",
            api_key="EMPTY",
            http_client=openai_http_client(tracer_provider=tracer_provider),
        ) as client:
            stream = client.chat.completions.create(messages=MESSAGES, **COMMON, **STREAMED)
            ids = [c.id for c in stream]  # read to the end
            response_id = ids[0]
    finally:
        instrumentor.uninstrument()
    assert tracer_provider.force_flush()
    check_joined(otlp_receiver, response_id, streamed=True)
