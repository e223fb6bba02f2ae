"""The instrumented transports: span names, attributes (exact names, types, values), context
propagation, exactly-once span end, and that telemetry never changes what the caller sees.

The target is an httpx transport that answers from a script (httpx's own extension interface, as
httpx's tests use ``MockTransport``); otelbench's code is never mocked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode

from otelbench import semconv
from otelbench.client import (
    EXT_ATTRIBUTES,
    EXT_MEASUREMENT,
    InstrumentedSyncTransport,
    InstrumentedTransport,
    Measurement,
)

URL = "http://llm.test:8000/v1/completions"
CHAT_URL = "http://llm.test:8000/v1/chat/completions"
BODY = {
    "model": "tiny",
    "prompt": "secret prompt text",
    "max_tokens": 3,
    "temperature": 0,
    "seed": 42,
    "stream": True,
}
SSE = {"content-type": "text/event-stream"}


def chunk(text: str | None, ct: int, finish: str | None = None) -> bytes:
    obj: dict[str, Any] = {"id": "cmpl-7", "model": "tiny-resp", "choices": []}
    if text is not None:
        obj["choices"] = [{"index": 0, "text": text, "finish_reason": finish}]
    obj["usage"] = {
        "prompt_tokens": 5,
        "completion_tokens": ct,
        "total_tokens": 5 + ct,
        "prompt_tokens_details": {"cached_tokens": 2},
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


STREAM = [
    b": keep-alive\n\n",
    chunk(" ", 1),
    chunk("Hello", 2)[:20],  # an event split across reads
    chunk("Hello", 2)[20:],
    chunk(" big world", 4) + chunk(None, 4)[:-1],  # two tokens in one chunk; usage split
    b"\n",
    chunk("!", 5, finish="length") + b"data: [DONE]\n\n",
]


class Pieces(httpx.AsyncByteStream, httpx.SyncByteStream):
    """A response body delivered as given pieces, optionally ending with an exception."""

    def __init__(
        self,
        pieces: list[bytes],
        error: BaseException | None = None,
        gap: float = 0.001,
        hang: asyncio.Event | None = None,
    ) -> None:
        self.pieces = pieces
        self.error = error
        self.gap = gap
        self.hang = hang
        self.closed = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for p in self.pieces:
            await asyncio.sleep(self.gap)
            yield p
        if self.hang is not None:
            await self.hang.wait()
        if self.error is not None:
            raise self.error

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces
        if self.error is not None:
            raise self.error

    async def aclose(self) -> None:
        self.closed += 1

    def close(self) -> None:
        self.closed += 1


class Target(httpx.AsyncBaseTransport, httpx.BaseTransport):
    """Answers every request with one scripted response (or raises before headers)."""

    def __init__(
        self,
        status: int = 200,
        headers: dict[str, str] | None = None,
        body: Pieces | None = None,
        raise_before: BaseException | None = None,
    ) -> None:
        self.status = status
        self.headers = SSE if headers is None else headers
        self.body = body if body is not None else Pieces(list(STREAM))
        self.raise_before = raise_before
        self.requests: list[httpx.Request] = []

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.raise_before is not None:
            raise self.raise_before
        return httpx.Response(self.status, headers=self.headers, stream=self.body)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.002)
        return self._answer(request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)


@pytest.fixture
def no_double_end(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails the test if any span is ended twice (the SDK logs a warning and ignores it)."""
    with caplog.at_level(logging.WARNING, logger="opentelemetry.sdk.trace"):
        yield
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, spans
    return spans[0]


async def read_all(
    target: Target,
    provider: TracerProvider,
    *,
    url: str = URL,
    body: dict[str, Any] | None = None,
    extensions: dict[str, Any] | None = None,
) -> tuple[bytes, httpx.Response]:
    transport = InstrumentedTransport(target, tracer_provider=provider)
    async with httpx.AsyncClient(transport=transport) as client:
        request = client.build_request("POST", url, json=body or BODY, extensions=extensions)
        response = await client.send(request, stream=True)
        raw = b"".join([p async for p in response.aiter_raw()])
        await response.aclose()
        return raw, response


# -- the span of a streamed completion ----------------------------------------------------------


@pytest.mark.usefixtures("no_double_end")
async def test_streamed_completion_span(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target()
    m = Measurement()
    extra = {semconv.RUN_ID: "run-1", semconv.REQUEST_INDEX: 17, semconv.REQUEST_CLASS: "short"}
    raw, response = await read_all(
        target,
        tracer_provider,
        extensions={EXT_ATTRIBUTES: extra, EXT_MEASUREMENT: m},
    )
    assert raw == b"".join(STREAM)  # the caller sees exactly the bytes the target sent
    assert response.status_code == 200

    span = only_span(span_exporter)
    assert span.name == "text_completion tiny"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
    assert span.events == ()
    attrs = dict(span.attributes or {})

    timing = {
        semconv.CLIENT_SUBMIT_MONO_NS,
        semconv.CLIENT_HEADERS_OFFSET_US,
        semconv.CLIENT_FIRST_EVENT_OFFSET_US,
        semconv.CLIENT_TTFT_US,
        semconv.CLIENT_END_OFFSET_US,
        semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
        semconv.CLIENT_CHUNK_OFFSETS_US,
    }
    assert {k: v for k, v in attrs.items() if k not in timing} == {
        semconv.GEN_AI_OPERATION_NAME: "text_completion",
        semconv.GEN_AI_PROVIDER_NAME: "openai",
        semconv.SERVER_ADDRESS: "llm.test",
        semconv.SERVER_PORT: 8000,
        semconv.GEN_AI_REQUEST_MODEL: "tiny",
        semconv.GEN_AI_REQUEST_MAX_TOKENS: 3,
        semconv.GEN_AI_REQUEST_TEMPERATURE: 0.0,
        semconv.GEN_AI_REQUEST_SEED: 42,
        semconv.GEN_AI_REQUEST_STREAM: True,
        semconv.RUN_ID: "run-1",
        semconv.REQUEST_INDEX: 17,
        semconv.REQUEST_CLASS: "short",
        semconv.HTTP_RESPONSE_STATUS_CODE: 200,
        semconv.GEN_AI_RESPONSE_ID: "cmpl-7",
        semconv.GEN_AI_RESPONSE_MODEL: "tiny-resp",
        semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("length",),
        semconv.GEN_AI_USAGE_INPUT_TOKENS: 5,
        semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
        semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 2,
        # " " (1 token) folds into "Hello"; " big world" carries 2; "!" 1
        semconv.CLIENT_CHUNK_TOKENS: (2, 2, 1),
        semconv.CLIENT_CHUNK_TOKEN_SOURCE: "usage",
        semconv.CLIENT_CHUNKS_TOTAL: 6,  # ws, Hello, big world, usage-only, !, [DONE]
    }
    assert timing <= attrs.keys()
    assert type(attrs[semconv.GEN_AI_REQUEST_TEMPERATURE]) is float
    for key in timing - {semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK}:
        value = attrs[key]
        ints = value if isinstance(value, tuple) else (value,)
        assert all(type(v) is int for v in ints), key
    assert type(attrs[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]) is float

    offsets = attrs[semconv.CLIENT_CHUNK_OFFSETS_US]
    assert isinstance(offsets, tuple)
    assert len(offsets) == 3
    first = attrs[semconv.CLIENT_FIRST_EVENT_OFFSET_US]
    ttft = attrs[semconv.CLIENT_TTFT_US]
    end = attrs[semconv.CLIENT_END_OFFSET_US]
    headers = attrs[semconv.CLIENT_HEADERS_OFFSET_US]
    assert isinstance(first, int)
    assert isinstance(ttft, int)
    assert isinstance(end, int)
    assert isinstance(headers, int)
    assert 0 < headers < first < ttft == offsets[0] < offsets[1] < offsets[2] <= end
    assert attrs[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] == first / 1e6

    # one source of truth: the measurement holds what the span holds
    assert (m.ttft_us, m.chunk_offsets_us, m.chunk_tokens) == (ttft, list(offsets), [2, 2, 1])
    assert m.submit_mono_ns == attrs[semconv.CLIENT_SUBMIT_MONO_NS]
    assert span.start_time == m.submit_unix_ns
    assert span.end_time is not None
    assert abs(span.end_time - span.start_time - end * 1000) < 1000
    assert m.trace_id == format(span.context.trace_id, "032x")
    assert m.span_id == format(span.context.span_id, "016x")
    assert m.finished
    assert m.error_type is None
    # prompt text is never recorded
    assert "secret" not in json.dumps({k: str(v) for k, v in attrs.items()})


async def test_traceparent_is_injected_with_the_span_context(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target()
    tracer = tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("parent") as parent:
        await read_all(target, tracer_provider)
    client_span = next(s for s in span_exporter.get_finished_spans() if s.name != "parent")
    ctx = client_span.context
    assert target.requests[0].headers["traceparent"] == (
        f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    )
    assert ctx.trace_flags.sampled
    assert client_span.parent is not None
    assert client_span.parent.span_id == parent.get_span_context().span_id


async def test_chat_span_name_and_role_only_delta(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    def delta(d: dict[str, str], finish: str | None = None) -> bytes:
        obj = {
            "id": "c1",
            "model": "tiny",
            "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    pieces = [delta({"role": "assistant", "content": ""}), delta({"content": "Hi"}, "stop")]
    target = Target(body=Pieces([*pieces, b"data: [DONE]\n\n"]))
    body = {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "stream": True}
    await read_all(target, tracer_provider, url=CHAT_URL, body=body)
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert span.name == "chat tiny"
    assert attrs[semconv.GEN_AI_OPERATION_NAME] == "chat"
    first = attrs[semconv.CLIENT_FIRST_EVENT_OFFSET_US]
    ttft = attrs[semconv.CLIENT_TTFT_US]
    assert isinstance(first, int)
    assert isinstance(ttft, int)
    assert first < ttft
    assert attrs[semconv.CLIENT_CHUNK_TOKENS] == (1,)
    assert attrs[semconv.CLIENT_CHUNK_TOKEN_SOURCE] == "one_per_chunk"
    assert semconv.GEN_AI_USAGE_OUTPUT_TOKENS not in attrs  # the server sent no usage


async def test_other_requests_pass_through_untouched(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target(headers={"content-type": "application/json"}, body=Pieces([b"{}"]))
    transport = InstrumentedTransport(target, tracer_provider=tracer_provider)
    async with httpx.AsyncClient(transport=transport) as client:
        for method, url in (("GET", URL), ("POST", "http://llm.test/v1/embeddings")):
            r = await client.request(method, url)
            assert r.content == b"{}"
            assert r.stream is target.body or isinstance(r.stream, httpx.AsyncByteStream)
    assert span_exporter.get_finished_spans() == ()
    assert all("traceparent" not in r.headers for r in target.requests)


# -- exactly-once end ----------------------------------------------------------------------------


@pytest.mark.usefixtures("no_double_end")
async def test_end_at_done_then_eof_then_close(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target()
    transport = InstrumentedTransport(target, tracer_provider=tracer_provider)
    async with httpx.AsyncClient(transport=transport) as client:
        async with client.stream("POST", URL, json=BODY) as response:
            async for _ in response.aiter_raw():
                pass
            assert len(span_exporter.get_finished_spans()) == 1  # ended at [DONE]
        await response.aclose()
    assert only_span(span_exporter).status.status_code is StatusCode.UNSET
    assert target.body.closed >= 1


@pytest.mark.usefixtures("no_double_end")
async def test_close_before_the_end_ends_once_as_cancelled(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target()
    transport = InstrumentedTransport(target, tracer_provider=tracer_provider)
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", URL, json=BODY) as response,
    ):
        async for _ in response.aiter_raw():
            break
        assert span_exporter.get_finished_spans() == ()
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR
    assert attrs[semconv.CLIENT_CHUNKS_TOTAL] == 0  # the first read held only a comment


@pytest.mark.usefixtures("no_double_end")
async def test_error_mid_stream_is_reraised_unchanged(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    boom = httpx.RemoteProtocolError("peer closed connection")
    target = Target(body=Pieces(list(STREAM[:3]), error=boom))
    with pytest.raises(httpx.RemoteProtocolError) as info:
        await read_all(target, tracer_provider)
    assert info.value is boom
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "stream_error"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is not None
    assert "peer closed" in span.status.description
    assert attrs[semconv.CLIENT_FIRST_EVENT_OFFSET_US] > 0
    assert semconv.CLIENT_TTFT_US not in attrs  # only the whitespace chunk arrived


@pytest.mark.usefixtures("no_double_end")
async def test_cancellation_ends_once_and_propagates(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    hang = asyncio.Event()
    target = Target(body=Pieces(list(STREAM[:4]), hang=hang))
    started = asyncio.Event()
    transport = InstrumentedTransport(target, tracer_provider=tracer_provider)

    async def consume() -> None:
        async with (
            httpx.AsyncClient(transport=transport) as client,
            client.stream("POST", URL, json=BODY) as response,
        ):
            async for _ in response.aiter_raw():
                started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "cancelled"
    assert attrs[semconv.CLIENT_CHUNK_OFFSETS_US]
    assert len(attrs[semconv.CLIENT_CHUNK_OFFSETS_US]) == 1


@pytest.mark.usefixtures("no_double_end")
@pytest.mark.parametrize(
    ("error", "error_type"),
    [
        (httpx.ConnectError("refused"), "unreachable"),
        (httpx.ConnectTimeout("slow"), "unreachable"),
        (httpx.ReadTimeout("no headers"), "timeout"),
        (httpx.RemoteProtocolError("server disconnected"), "unreachable"),
        (ValueError("odd"), "ValueError"),
    ],
)
async def test_errors_before_headers(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    error: Exception,
    error_type: str,
) -> None:
    m = Measurement()
    with pytest.raises(type(error)) as info:
        await read_all(Target(raise_before=error), tracer_provider, extensions={EXT_MEASUREMENT: m})
    assert info.value is error
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert attrs[semconv.ERROR_TYPE] == error_type == m.error_type
    assert span.status.status_code is StatusCode.ERROR
    assert semconv.HTTP_RESPONSE_STATUS_CODE not in attrs
    assert isinstance(attrs[semconv.CLIENT_END_OFFSET_US], int)


# -- other outcomes -----------------------------------------------------------------------------


async def test_http_error_status(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    body = b'{"object": "error", "message": "rate limited"}'
    target = Target(429, {"content-type": "application/json"}, Pieces([body]))
    m = Measurement()
    raw, response = await read_all(target, tracer_provider, extensions={EXT_MEASUREMENT: m})
    assert (raw, response.status_code) == (body, 429)
    span = only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "429"
    assert attrs[semconv.HTTP_RESPONSE_STATUS_CODE] == 429
    assert span.status.status_code is StatusCode.ERROR
    assert m.error_message == f"target answered HTTP 429: {body.decode()}"
    assert semconv.CLIENT_TTFT_US not in attrs


async def test_stream_cut_before_done_and_malformed_json(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    await read_all(Target(body=Pieces(list(STREAM[:4]))), tracer_provider)  # clean EOF, no end
    bad = [STREAM[1], b"data: {not json\n\n", STREAM[4], STREAM[5], STREAM[6]]
    await read_all(Target(body=Pieces(bad)), tracer_provider)
    cut, malformed = span_exporter.get_finished_spans()
    for span in (cut, malformed):
        assert (span.attributes or {})[semconv.ERROR_TYPE] == "stream_error"
        assert span.status.status_code is StatusCode.ERROR
    assert cut.status.description == "stream ended before [DONE] or a finish_reason"
    assert malformed.status.description == "data event is not valid JSON"
    # the malformed stream went on being measured
    # (" " and the lost "Hello" chunk fold into " big world": usage says 4 tokens by then)
    assert (malformed.attributes or {})[semconv.CLIENT_CHUNK_TOKENS] == (4, 1)


async def test_non_streamed_response_is_timed_whole(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    body = json.dumps(
        {
            "id": "cmpl-9",
            "model": "tiny",
            "choices": [{"index": 0, "text": "Hi", "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
        }
    ).encode()
    target = Target(headers={"content-type": "application/json"}, body=Pieces([body[:9], body[9:]]))
    await read_all(target, tracer_provider, body={**BODY, "stream": False})
    attrs = dict(only_span(span_exporter).attributes or {})
    assert semconv.GEN_AI_REQUEST_STREAM not in attrs  # set only on streamed requests
    assert attrs[semconv.CLIENT_TTFT_US] == attrs[semconv.CLIENT_END_OFFSET_US]
    assert (attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS], attrs[semconv.GEN_AI_RESPONSE_ID]) == (
        1,
        "cmpl-9",
    )
    for absent in (
        semconv.CLIENT_CHUNK_OFFSETS_US,
        semconv.CLIENT_FIRST_EVENT_OFFSET_US,
        semconv.CLIENT_CHUNKS_TOTAL,
        semconv.ERROR_TYPE,
    ):
        assert absent not in attrs


async def test_not_recording_still_measures_and_propagates(
    span_exporter: InMemorySpanExporter,
) -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    m = Measurement()
    target = Target()
    await read_all(target, provider, extensions={EXT_MEASUREMENT: m})
    assert span_exporter.get_finished_spans() == ()
    assert m.finished
    assert m.ttft_us is not None
    assert m.chunk_tokens == [2, 2, 1]
    assert m.trace_id is not None
    flags = int(target.requests[0].headers["traceparent"].rsplit("-", 1)[1], 16)
    assert flags & 1 == 0  # propagated, not sampled


async def test_without_a_tracer_provider_nothing_is_injected() -> None:
    m = Measurement()
    target = Target()
    await read_all(target, trace.NoOpTracerProvider(), extensions={EXT_MEASUREMENT: m})
    assert "traceparent" not in target.requests[0].headers
    assert (m.trace_id, m.span_id) == (None, None)
    assert m.ttft_us is not None


class _BrokenTracer(trace.NoOpTracer):
    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        raise RuntimeError("exporter misconfigured")


class _BrokenProvider(trace.NoOpTracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _BrokenTracer()


async def test_instrumentation_failure_never_changes_behaviour(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = Target()
    with caplog.at_level(logging.WARNING, logger="otelbench.client.transport"):
        raw, response = await read_all(target, _BrokenProvider())
    assert raw == b"".join(STREAM)
    assert response.status_code == 200
    assert any("instrumentation failed" in r.getMessage() for r in caplog.records)


def gzip_per_event(events: list[bytes]) -> list[bytes]:
    """Each piece gzipped and flushed on its own (Z_SYNC_FLUSH), as a server compressing a stream
    sends it; the gzip trailer comes with the last."""
    c = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
    out = [c.compress(e) + c.flush(zlib.Z_SYNC_FLUSH) for e in events]
    out[-1] += c.flush()
    return out


async def test_a_gzipped_event_stream_is_decoded_and_timed_read_by_read(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    pieces = gzip_per_event(list(STREAM))
    target = Target(headers={**SSE, "content-encoding": "gzip"}, body=Pieces(pieces))
    raw, _ = await read_all(target, tracer_provider)
    assert raw == b"".join(pieces)  # the application's bytes are untouched
    attrs = dict(only_span(span_exporter).attributes or {})
    assert semconv.ERROR_TYPE not in attrs
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert attrs[semconv.CLIENT_CHUNK_TOKENS] == (2, 2, 1)  # as the plain stream's
    assert len(attrs[semconv.CLIENT_CHUNK_OFFSETS_US]) == 3  # type: ignore[arg-type]


async def test_a_broken_gzip_stream_is_a_stream_error(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    target = Target(headers={**SSE, "content-encoding": "gzip"}, body=Pieces([b"\x1f\x8b..."]))
    await read_all(target, tracer_provider)
    attrs = dict(only_span(span_exporter).attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "stream_error"


async def test_an_encoding_not_understood_is_passed_through_untimed(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = Target(headers={**SSE, "content-encoding": "compress"}, body=Pieces([b"\x1f\x9d"]))
    with caplog.at_level(logging.WARNING, logger="otelbench.client.transport"):
        raw, _ = await read_all(target, tracer_provider)
    assert raw == b"\x1f\x9d"
    attrs = dict(only_span(span_exporter).attributes or {})
    assert semconv.CLIENT_TTFT_US not in attrs
    assert any("'compress'" in r.getMessage() for r in caplog.records)


# -- the sync transport --------------------------------------------------------------------------


class TestSyncTransport:
    """Kept apart from the async tests, as opentelemetry-python-contrib advises."""

    @pytest.mark.usefixtures("no_double_end")
    def test_streamed_completion(
        self, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
    ) -> None:
        m = Measurement()
        transport = InstrumentedSyncTransport(Target(), tracer_provider=tracer_provider)
        with httpx.Client(transport=transport) as client:
            request = client.build_request(
                "POST",
                URL,
                json=BODY,
                extensions={EXT_MEASUREMENT: m, EXT_ATTRIBUTES: {semconv.RUN_ID: "r"}},
            )
            response = client.send(request, stream=True)
            raw = b"".join(response.iter_raw())
            response.close()
        assert raw == b"".join(STREAM)
        span = only_span(span_exporter)
        attrs = dict(span.attributes or {})
        assert span.name == "text_completion tiny"
        assert attrs[semconv.CLIENT_CHUNK_TOKENS] == (2, 2, 1)
        assert attrs[semconv.RUN_ID] == "r"
        assert attrs[semconv.CLIENT_TTFT_US] == m.ttft_us
        assert semconv.ERROR_TYPE not in attrs

    @pytest.mark.usefixtures("no_double_end")
    def test_close_early_and_errors(
        self, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
    ) -> None:
        boom = httpx.ReadTimeout("stalled")
        transports = [
            InstrumentedSyncTransport(Target(), tracer_provider=tracer_provider),
            InstrumentedSyncTransport(
                Target(body=Pieces(list(STREAM[:2]), error=boom)), tracer_provider=tracer_provider
            ),
            InstrumentedSyncTransport(
                Target(raise_before=httpx.ConnectError("refused")), tracer_provider=tracer_provider
            ),
        ]
        with (
            httpx.Client(transport=transports[0]) as client,
            client.stream("POST", URL, json=BODY) as r,
        ):
            next(r.iter_raw())
        with (
            httpx.Client(transport=transports[1]) as client,
            pytest.raises(httpx.ReadTimeout) as info,
            client.stream("POST", URL, json=BODY) as r,
        ):
            r.read()
        assert info.value is boom
        with httpx.Client(transport=transports[2]) as client, pytest.raises(httpx.ConnectError):
            client.post(URL, json=BODY)
        types = [
            (s.attributes or {})[semconv.ERROR_TYPE] for s in span_exporter.get_finished_spans()
        ]
        assert types == ["cancelled", "timeout", "unreachable"]


# -- the conventions' other attributes; finish reasons per choice ----------------------------------


def choices_chunk(*choices: tuple[int, str, str | None], extra: str = "") -> bytes:
    """One chunk with several choices: (index, text, finish_reason)."""
    items = [{"index": i, "text": t, "finish_reason": f} for i, t, f in choices]
    obj: dict[str, Any] = {"id": "cmpl-8", "model": "tiny", "choices": items}
    if extra:
        obj |= json.loads(extra)
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


async def test_the_request_parameters_the_conventions_name_are_on_the_span(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    body = {
        **BODY,
        "top_p": 0.5,
        "frequency_penalty": 1,
        "presence_penalty": -0.5,
        "stop": ["\n\n", "END"],
        "n": 2,
        "response_format": {"type": "json_object"},
        "service_tier": "flex",
    }
    stream = [
        choices_chunk(
            (0, "a", None),
            (1, "b", None),
            extra='{"system_fingerprint": "fp_9", "service_tier": "flex"}',
        ),
        choices_chunk((1, "c", "stop"), (0, "d", "length")),
        b"data: [DONE]\n\n",
    ]
    await read_all(Target(body=Pieces(stream)), tracer_provider, body=body)
    attrs = dict(only_span(span_exporter).attributes or {})
    assert {k: attrs[k] for k in attrs if k.startswith(("gen_ai.request.", "gen_ai.output"))} == {
        semconv.GEN_AI_REQUEST_MODEL: "tiny",
        semconv.GEN_AI_REQUEST_MAX_TOKENS: 3,
        semconv.GEN_AI_REQUEST_TEMPERATURE: 0.0,
        semconv.GEN_AI_REQUEST_TOP_P: 0.5,
        semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY: 1.0,
        semconv.GEN_AI_REQUEST_PRESENCE_PENALTY: -0.5,
        semconv.GEN_AI_REQUEST_STOP_SEQUENCES: ("\n\n", "END"),
        semconv.GEN_AI_REQUEST_CHOICE_COUNT: 2,
        semconv.GEN_AI_REQUEST_SEED: 42,
        semconv.GEN_AI_REQUEST_STREAM: True,
        semconv.GEN_AI_OUTPUT_TYPE: semconv.OUTPUT_TYPE_JSON,
    }
    # one finish reason per choice, in index order
    assert attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("length", "stop")
    assert attrs[semconv.OPENAI_REQUEST_SERVICE_TIER] == "flex"
    assert attrs[semconv.OPENAI_RESPONSE_SERVICE_TIER] == "flex"
    assert attrs[semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT] == "fp_9"


async def test_a_choice_whose_finish_never_came_is_an_error_finish(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """Cut before [DONE]: choice 1 finished, choice 0 and the third asked for did not."""
    stream = [choices_chunk((0, "a", None), (1, "b", "stop"))]
    await read_all(Target(body=Pieces(stream)), tracer_provider, body={**BODY, "n": 3})
    attrs = dict(only_span(span_exporter).attributes or {})
    assert attrs[semconv.ERROR_TYPE] == "stream_error"
    assert attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("error", "stop", "error")


async def test_a_failed_call_without_a_choice_has_one_error_finish(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    body = b'{"object": "error", "message": "slow down"}'
    target = Target(429, {"content-type": "application/json"}, Pieces([body]))
    await read_all(target, tracer_provider)
    attrs = dict(only_span(span_exporter).attributes or {})
    assert attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
