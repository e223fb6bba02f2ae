"""The real ``openai`` SDK on otelbench's transport (``openai_http_client``), against the scripted
SSE server: one CLIENT span per call, sync and async, chat and completions, streamed or not, on
``httpx2`` (the SDK's own library) and ``httpx``; the chunk offsets land on the server's own send
log; the stream closed early, and the SDK's retries; the GenAI client metrics from the same
calls, checked against the same log; the SDK's own clients (``DefaultHttpxClient`` wrapped,
``instrument_openai``); compressed responses; a client of the wrong library.

The scripts keep the events the offsets are judged by at least 20 ms apart, and a measured time
must land between the server's write of that event and ``SLACK_US`` after it (as in
test_client_behaviour.py); timing precision itself is tests/timing/test_client_fidelity.py's.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Histogram,
    HistogramDataPoint,
    InMemoryMetricReader,
    Sum,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from otelbench import semconv
from otelbench.client import (
    InstrumentedHttpx2SyncTransport,
    InstrumentedSyncTransport,
    instrument_http_client,
    instrument_openai,
    openai_async_http_client,
    openai_http_client,
    uninstrument_openai,
)
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors

pytestmark = pytest.mark.integration

SLACK_US = 10_000
BODY_SLACK_US = 50_000
"""A body sent whole is the call's only event: a late stamp cannot land on another one, so its
bound is looser (the sync client read it 13.4 ms late once, beside the vLLM tier's load)."""
N = 5
SCRIPT = {"n": N, "role_first_ms": 5.0, "ttft_ms": 30.0, "itl_ms": 25.0, "prompt_tokens": 7}
"""Chat: a role-only delta at 5 ms (the first chunk), then 5 content chunks 25 ms apart."""
MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]


@pytest.fixture(autouse=True)
def frozen_heap() -> Iterator[None]:
    """The heap of the imports (the SDK, pydantic, OpenTelemetry) out of the collector's reach,
    as otelbench.client advises for timing: a full collection of it pauses the process for
    longer than a chunk's bound here (a stream read late by 10-20 ms on this 2-core VM)."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@dataclass
class Sdk:
    """The ``openai`` SDK on otelbench's transport, against the scripted server: the sync client,
    and the arguments of an async one (made in the event loop that uses it)."""

    sync: openai.OpenAI
    base: dict[str, Any]
    providers: dict[str, Any]

    def aio(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            **self.base, http_client=openai_async_http_client(**self.providers)
        )


@pytest.fixture(params=["httpx2", "httpx"])
def sdk(
    request: pytest.FixtureRequest,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
) -> Iterator[Sdk]:
    """The SDK on ``openai_http_client()`` of each library (httpx2: what the SDK 3.x prefers)."""
    kw: dict[str, Any] = {
        "tracer_provider": tracer_provider,
        "meter_provider": meter_provider,
        "http_library": request.param,
    }
    base = {"base_url": scripted_server.url + "/v1", "api_key": "unused", "max_retries": 0}
    http_client = openai_http_client(**kw)
    assert type(http_client).__module__.split(".")[0] == request.param
    sync = openai.OpenAI(**base, http_client=http_client)
    yield Sdk(sync, base, kw)
    sync.close()


def call(sdk: Sdk, mode: str, api: str, stream: bool, **kw: Any) -> tuple[str, str]:
    """One SDK call, read to its end as the SDK's user would; returns (response id, text)."""
    args: dict[str, Any] = {"model": "tiny", "max_tokens": N, "extra_body": {"script": SCRIPT}}
    if stream:
        args |= {"stream": True, "stream_options": {"include_usage": True}}
    args |= kw
    if api == "chat":
        args["messages"] = MESSAGES
    else:
        args["prompt"] = "Hi"

    def text_of(item: Any) -> str:
        if not item.choices:
            return ""
        c = item.choices[0]
        if api == "chat":
            return (c.delta.content if stream else c.message.content) or ""
        return str(c.text or "")

    if mode == "sync":
        c = sdk.sync
        result = (c.chat.completions.create if api == "chat" else c.completions.create)(**args)
        items = list(result) if stream else [result]
    else:

        async def run() -> list[Any]:
            async with sdk.aio() as aio:
                acreate = aio.chat.completions.create if api == "chat" else aio.completions.create
                result = await acreate(**args)
                return [i async for i in result] if stream else [result]

        items = asyncio.run(run())
    return items[0].id, "".join(text_of(i) for i in items)


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def histograms(reader: InMemoryMetricReader) -> dict[str, list[HistogramDataPoint]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        m.name: [p for p in m.data.data_points if isinstance(p, HistogramDataPoint)]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if isinstance(m.data, Histogram)
    }


def counters(reader: InMemoryMetricReader) -> dict[str, float]:
    """Each counter's total over its points."""
    data = reader.get_metrics_data()
    assert data is not None
    return {
        m.name: sum(p.value for p in m.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if isinstance(m.data, Sum)
    }


def expected_text(api: str) -> str:
    return "".join(f" w{i}_0" for i in range(N))


def traceparent(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


@pytest.mark.parametrize("api", ["chat", "completions"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streamed_call_is_one_client_span_with_the_servers_chunk_times(
    mode: str,
    api: str,
    sdk: Sdk,
    scripted_server: ScriptedServer,
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
) -> None:
    rid, text = call(sdk, mode, api, stream=True)
    assert text == expected_text(api)  # the SDK reads what it would read without otelbench
    span = only_span(span_exporter)
    entry = scripted_server.entry(rid)
    assert span.kind == SpanKind.CLIENT
    operation = semconv.OPERATION_CHAT if api == "chat" else semconv.OPERATION_TEXT_COMPLETION
    assert span.name == f"{operation} tiny"
    assert entry["traceparent"] == traceparent(span)
    a = dict(span.attributes or {})
    assert span.status.status_code == StatusCode.UNSET
    assert semconv.ERROR_TYPE not in a
    assert a[semconv.GEN_AI_RESPONSE_ID] == rid
    assert (a[semconv.GEN_AI_USAGE_INPUT_TOKENS], a[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (7, N)
    assert a[semconv.GEN_AI_REQUEST_STREAM] is True
    assert semconv.HTTP_REQUEST_RESEND_COUNT not in a

    # every content chunk's offset lands on the server's write of it; TTFT is the first
    submit = int(a[semconv.CLIENT_SUBMIT_MONO_NS])  # type: ignore[arg-type]
    offsets = list(a[semconv.CLIENT_CHUNK_OFFSETS_US])  # type: ignore[arg-type]
    errors = chunk_errors(submit, offsets, entry).errors_ns
    assert all(-1000 <= e <= SLACK_US * 1000 for e in errors), errors
    assert a[semconv.CLIENT_TTFT_US] == offsets[0]
    assert list(a[semconv.CLIENT_CHUNK_TOKENS]) == [1] * N  # type: ignore[arg-type]
    # the first chunk of any kind: chat's role-only delta, completions' first content chunk
    first_kind = "role" if api == "chat" else "content"
    first_sent = next(e[4] for e in entry["events"] if e[0] == first_kind)
    first_us = int(a[semconv.CLIENT_FIRST_EVENT_OFFSET_US])  # type: ignore[arg-type]
    assert 0 <= submit + first_us * 1000 - first_sent + 1000 <= (SLACK_US + 1) * 1000

    # the GenAI client metrics: the same numbers, once per call (the gaps once per chunk)
    got = histograms(reader)
    [ttfc] = got[semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK]
    assert (ttfc.count, ttfc.sum) == (1, first_us / 1e6)
    # every chunk after the first (chat's role delta, the content, the usage chunk; not [DONE])
    [tpoc] = got[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK]
    chunks = [e for e in entry["events"] if e[0] in ("role", "content", "usage")]
    assert tpoc.count == len(chunks) - 1 == sum(tpoc.bucket_counts)
    # the chunks carrying text: otelbench's own metric, gap for gap the server's
    [text] = got[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK]
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert text.count == N - 1 == sum(text.bucket_counts)
    assert (text.min, text.max) == (min(gaps) / 1e6, max(gaps) / 1e6)
    sent = [e[4] for e in entry["events"] if e[0] == "content"]
    server_gaps_us = [(b - a) / 1000 for a, b in itertools.pairwise(sent)]
    for measured, truth in zip(gaps, server_gaps_us, strict=True):
        assert abs(measured - truth) <= SLACK_US + 1
    [duration] = got[semconv.METRIC_CLIENT_INFERENCE_DURATION]
    assert duration.sum == a[semconv.CLIENT_END_OFFSET_US] / 1e6  # type: ignore[operator]
    attrs = {
        semconv.GEN_AI_OPERATION_NAME: operation,
        semconv.GEN_AI_PROVIDER_NAME: semconv.PROVIDER_OPENAI,
        semconv.GEN_AI_REQUEST_MODEL: "tiny",
        semconv.GEN_AI_RESPONSE_MODEL: "tiny",
        semconv.SERVER_ADDRESS: "127.0.0.1",
        semconv.SERVER_PORT: scripted_server.port,
    }
    assert dict(duration.attributes or {}) == attrs
    assert [e.span_id for e in duration.exemplars] == [span.context.span_id]
    usage = {
        name: counters(reader)[name]
        for name in (
            semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS,
            semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS,
        )
    }
    assert list(usage.values()) == [7, N]


@pytest.mark.parametrize("api", ["chat", "completions"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_not_streamed_is_one_span_timed_whole(
    mode: str,
    api: str,
    sdk: Sdk,
    scripted_server: ScriptedServer,
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
) -> None:
    rid, text = call(sdk, mode, api, stream=False)
    assert text == expected_text(api)
    span = only_span(span_exporter)
    entry = scripted_server.entry(rid)
    assert entry["traceparent"] == traceparent(span)
    a = dict(span.attributes or {})
    assert semconv.GEN_AI_REQUEST_STREAM not in a  # set only on streamed calls
    assert a[semconv.CLIENT_TTFT_US] == a[semconv.CLIENT_END_OFFSET_US]
    assert (a[semconv.GEN_AI_USAGE_OUTPUT_TOKENS], a[semconv.GEN_AI_RESPONSE_FINISH_REASONS]) == (
        N,
        ("length",),
    )
    assert semconv.CLIENT_CHUNK_OFFSETS_US not in a
    assert semconv.ERROR_TYPE not in a
    # the body is sent whole once the script's last chunk is due
    [body] = [e for e in entry["events"] if e[0] == "body"]
    end = int(a[semconv.CLIENT_SUBMIT_MONO_NS]) + int(a[semconv.CLIENT_END_OFFSET_US]) * 1000  # type: ignore[arg-type]
    assert body[4] - 1_000_000 <= end <= body[4] + BODY_SLACK_US * 1000
    assert set(histograms(reader)) == {
        semconv.METRIC_CLIENT_INFERENCE_DURATION,
        semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
        semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
    }


def test_a_stream_closed_early_ends_its_span_once_as_cancelled(
    sdk: Sdk, span_exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    args: dict[str, Any] = {"model": "tiny", "messages": MESSAGES, "stream": True}
    with sdk.sync.chat.completions.create(**args, extra_body={"script": SCRIPT}) as stream:
        first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"
    span = only_span(span_exporter)
    a = dict(span.attributes or {})
    assert a[semconv.ERROR_TYPE] == semconv.ERROR_TYPE_CANCELLED
    assert span.status.status_code == StatusCode.ERROR
    assert list(a[semconv.CLIENT_CHUNK_OFFSETS_US]) == []  # type: ignore[arg-type]
    # the one choice's finish reason never came: "error", as the conventions say
    assert a[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == (semconv.FINISH_REASON_ERROR,)
    [duration] = histograms(reader)[semconv.METRIC_CLIENT_INFERENCE_DURATION]
    assert dict(duration.attributes or {})[semconv.ERROR_TYPE] == semconv.ERROR_TYPE_CANCELLED


def test_an_async_stream_closed_early_ends_its_span_once_as_cancelled(
    sdk: Sdk, span_exporter: InMemorySpanExporter
) -> None:
    async def run() -> None:
        async with sdk.aio() as aio:
            stream = await aio.completions.create(
                model="tiny", prompt="Hi", stream=True, extra_body={"script": SCRIPT}
            )
            n = 0
            async for _ in stream:
                n += 1
                if n == 2:
                    break
            await stream.close()

    asyncio.run(run())
    a = dict(only_span(span_exporter).attributes or {})
    assert a[semconv.ERROR_TYPE] == semconv.ERROR_TYPE_CANCELLED
    assert len(a[semconv.CLIENT_CHUNK_OFFSETS_US]) == 2  # type: ignore[arg-type]


def test_each_retry_of_the_sdk_is_a_span_of_its_own(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    tracer = tracer_provider.get_tracer("app")
    client = openai.OpenAI(
        base_url=scripted_server.url + "/v1",
        api_key="unused",
        max_retries=1,
        http_client=openai_http_client(tracer_provider=tracer_provider),
    )
    tag = "sdk-retry"
    with tracer.start_as_current_span("handle") as app, pytest.raises(openai.RateLimitError):
        client.completions.create(
            model="tiny", prompt="Hi", extra_body={"script": {"status": 429, "tag": tag}}
        )
    client.close()
    attempts = [s for s in span_exporter.get_finished_spans() if s.name != "handle"]
    assert len(attempts) == 2
    app_ctx = app.get_span_context()
    for i, span in enumerate(attempts):
        assert span.parent is not None
        assert span.parent.span_id == app_ctx.span_id  # both under the application's span
        a = dict(span.attributes or {})
        assert a[semconv.ERROR_TYPE] == "429"
        assert a.get(semconv.HTTP_REQUEST_RESEND_COUNT) == (i or None)
    received = [e["traceparent"] for e in scripted_server.log(tag=tag)]
    assert received == [traceparent(s) for s in attempts]


def test_spans_carry_no_prompt_or_completion_text(
    sdk: Sdk, span_exporter: InMemorySpanExporter
) -> None:
    call(sdk, "sync", "chat", stream=True, messages=[{"role": "user", "content": "secret-42"}])
    dumped = json.dumps(dict(only_span(span_exporter).attributes or {}), default=str)
    assert "secret-42" not in dumped
    assert "w0_0" not in dumped


# -- the SDK's own clients -----------------------------------------------------------------------


def check_timed(span: ReadableSpan, entry: dict[str, Any]) -> None:
    """A streamed call's span: its traceparent went out, it has an offset for every chunk the
    server wrote, none before the server wrote it, and their median within ``SLACK_US`` of the
    writes (the per-chunk bound is the first test's; these check the path, not the precision, and
    a single read delayed by a busy machine does not fail them)."""
    assert entry["traceparent"] == traceparent(span)
    a = dict(span.attributes or {})
    assert semconv.ERROR_TYPE not in a
    submit = int(a[semconv.CLIENT_SUBMIT_MONO_NS])  # type: ignore[arg-type]
    offsets = list(a[semconv.CLIENT_CHUNK_OFFSETS_US])  # type: ignore[arg-type]
    errors = chunk_errors(submit, offsets, entry).errors_ns  # (one offset per chunk written)
    assert min(errors) >= -1000, errors
    assert statistics.median(errors) <= SLACK_US * 1000, errors


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_default_httpx_client_of_the_sdk_is_timed_once_wrapped(
    mode: str,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    base = {"base_url": scripted_server.url + "/v1", "api_key": "unused", "max_retries": 0}
    kw = {"tracer_provider": tracer_provider}
    if mode == "sync":
        http_client = instrument_http_client(openai.DefaultHttpxClient(), **kw)
        assert isinstance(http_client, httpx2.Client)
        assert instrument_http_client(http_client, **kw) is http_client  # twice: no change
        client = openai.OpenAI(**base, http_client=http_client)
        stream = client.chat.completions.create(
            model="tiny", messages=MESSAGES, stream=True, extra_body={"script": SCRIPT}
        )
        rid = {c.id for c in stream}.pop()  # read to the end
        client.close()
    else:

        async def run() -> str:
            http_client = instrument_http_client(openai.DefaultAsyncHttpxClient(), **kw)
            async with openai.AsyncOpenAI(**base, http_client=http_client) as aio:
                stream = await aio.chat.completions.create(
                    model="tiny", messages=MESSAGES, stream=True, extra_body={"script": SCRIPT}
                )
                return {c.id async for c in stream}.pop()  # read to the end

        rid = asyncio.run(run())
    check_timed(only_span(span_exporter), scripted_server.entry(rid))


def test_instrument_openai_times_the_clients_the_sdk_builds_itself(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    base = {"base_url": scripted_server.url + "/v1", "api_key": "unused", "max_retries": 0}
    instrument_openai(tracer_provider=tracer_provider)
    try:
        client = openai.OpenAI(**base)  # no http_client: the SDK builds its own

        async def run() -> str:
            async with openai.AsyncOpenAI(**base) as aio:
                stream = await aio.completions.create(
                    model="tiny", prompt="Hi", stream=True, extra_body={"script": SCRIPT}
                )
                return {c.id async for c in stream}.pop()  # read to the end

        rids = [asyncio.run(run())]
        stream = client.chat.completions.create(
            model="tiny", messages=MESSAGES, stream=True, extra_body={"script": SCRIPT}
        )
        rids.append({c.id for c in stream}.pop())
        client.close()
    finally:
        uninstrument_openai()
    spans = span_exporter.get_finished_spans()
    assert [s.name for s in spans] == ["text_completion tiny", "chat tiny"]
    for span, rid in zip(spans, rids, strict=True):
        check_timed(span, scripted_server.entry(rid))
    # undone: a client built now is the SDK's own, untimed
    after = openai.OpenAI(**base)
    after.completions.create(model="tiny", prompt="Hi", extra_body={"script": SCRIPT})
    after.close()
    assert len(span_exporter.get_finished_spans()) == 2


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_compressed_success_is_a_success_with_its_usage(
    coding: str,
    stream: bool,
    sdk: Sdk,
    scripted_server: ScriptedServer,
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
) -> None:
    script = {**SCRIPT, "compress": coding}
    rid, text = call(sdk, "sync", "chat", stream=stream, extra_body={"script": script})
    assert text == expected_text("chat")
    entry = scripted_server.entry(rid)
    assert entry["content_encoding"] == coding  # the server did compress it
    span = only_span(span_exporter)
    a = dict(span.attributes or {})
    assert span.status.status_code == StatusCode.UNSET
    assert semconv.ERROR_TYPE not in a
    assert (a[semconv.GEN_AI_USAGE_INPUT_TOKENS], a[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (7, N)
    assert a[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("length",)
    if stream:
        check_timed(span, entry)
    [duration] = histograms(reader)[semconv.METRIC_CLIENT_INFERENCE_DURATION]
    assert semconv.ERROR_TYPE not in dict(duration.attributes or {})


@pytest.mark.parametrize(
    ("client_lib", "transport_cls", "fix"),
    [
        ("httpx2", InstrumentedSyncTransport, "InstrumentedHttpx2SyncTransport"),
        ("httpx", InstrumentedHttpx2SyncTransport, "InstrumentedSyncTransport"),
    ],
)
def test_a_client_of_the_other_library_is_a_one_line_type_error_and_nothing_is_sent(
    client_lib: str,
    transport_cls: Any,
    fix: str,
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    lib: Any = httpx2 if client_lib == "httpx2" else httpx
    tag = f"mismatch-{client_lib}"
    transport = transport_cls(tracer_provider=tracer_provider)
    with lib.Client(transport=transport) as client, pytest.raises(TypeError) as info:
        client.post(
            scripted_server.url + "/v1/completions",
            json={"model": "tiny", "prompt": "Hi", "script": {"tag": tag}},
        )
    message = str(info.value)
    assert "\n" not in message
    assert f"otelbench.client.{fix}" in message
    assert f"an {client_lib} request" in message
    assert scripted_server.log(tag=tag) == []
    assert span_exporter.get_finished_spans() == ()
