"""The high-level client against the scripted SSE server: what counts as the first token, token
counts, every failure mode as a result (never an exception), and trace context on the wire.

Timing *precision* is tested in tests/timing/test_client_fidelity.py; here times are only checked
to land on the right server event (the scripts keep the candidate events ≥ 20 ms apart).
"""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otelbench import semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult, LLMClient
from otelbench.errors import ConfigError
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

SLACK_US = 10_000
"""How far after the server's send a measured time may land in these semantic tests."""


def req(script: dict[str, Any], *, api: str = "completions", **kw: Any) -> CompletionRequest:
    extra = {"script": script, **kw.pop("extra_body", {})}
    if api == "chat":
        return CompletionRequest(
            api="chat",
            model="tiny",
            messages=[{"role": "user", "content": "Hi"}],
            extra_body=extra,
            **kw,
        )
    return CompletionRequest(api="completions", model="tiny", prompt="Hi", extra_body=extra, **kw)


async def run(
    server: ScriptedServer, request: CompletionRequest, **client_kw: Any
) -> CompletionResult:
    async with AsyncLLMClient(server.url, **client_kw) as client:
        result = await client.complete(request)
    return result


def sent(server: ScriptedServer, result: CompletionResult, kind: str) -> list[int]:
    """Offsets (µs since the client's T_submit) at which the server began writing the last byte of
    each event of a kind (the server's ``t_before_ns``: nothing can arrive before it)."""
    assert result.response_id is not None
    entry = server.entry(result.response_id)
    return [(e[4] - result.submit_mono_ns) // 1000 for e in entry["events"] if e[0] == kind]


def lands_on(measured: int | None, truth: int) -> bool:
    ok = measured is not None and truth <= measured <= truth + SLACK_US
    if not ok:
        print(f"measured {measured} µs, server sent at {truth} µs")  # shown when a test fails
    return ok


async def test_plain_stream(scripted_server: ScriptedServer) -> None:
    r = await run(scripted_server, req({"n": 6, "ttft_ms": 5, "itl_ms": 3}, max_tokens=6))
    assert r.ok, r
    assert (r.error_type, r.status_code, r.finish_reason) == (None, 200, "length")
    content = sent(scripted_server, r, "content")
    assert len(r.chunk_offsets_us) == len(content) == 6
    assert all(lands_on(m, t) for m, t in zip(r.chunk_offsets_us, content, strict=True))
    assert r.ttft_us == r.chunk_offsets_us[0] == r.first_event_offset_us
    assert (r.chunk_tokens, r.chunk_token_source) == ([1] * 6, "usage")
    assert (r.input_tokens, r.output_tokens, r.cached_tokens) == (7, 6, None)
    assert r.chunks_total == 8  # 6 content + usage-only + [DONE]
    assert r.end_offset_us is not None
    assert r.end_offset_us >= r.chunk_offsets_us[-1]
    assert r.submit_unix_ns > 0
    assert r.trace_id is None  # no tracer provider configured in this test


async def test_whitespace_first_chunk_sets_first_event_not_ttft(
    scripted_server: ScriptedServer,
) -> None:
    r = await run(scripted_server, req({"name": "ws_first", "n": 4}))
    assert r.ok, r
    (ws,) = sent(scripted_server, r, "ws")
    content = sent(scripted_server, r, "content")
    assert lands_on(r.first_event_offset_us, ws)
    assert lands_on(r.ttft_us, content[0])
    assert r.ttft_us is not None
    assert r.first_event_offset_us is not None
    assert r.ttft_us - r.first_event_offset_us > 10_000  # ws at 2 ms, content at 25 ms
    assert r.chunk_tokens == [2, 1, 1, 1]  # the whitespace token counts, with the first content
    assert sum(r.chunk_tokens) == r.output_tokens == 5


async def test_role_only_first_delta_sets_first_event_not_ttft(
    scripted_server: ScriptedServer,
) -> None:
    r = await run(scripted_server, req({"name": "role_first", "n": 3}, api="chat"))
    assert r.ok, r
    (role,) = sent(scripted_server, r, "role")
    content = sent(scripted_server, r, "content")
    assert lands_on(r.first_event_offset_us, role)
    assert lands_on(r.ttft_us, content[0])
    assert r.chunk_tokens == [1, 1, 1]


@pytest.mark.parametrize(
    "script",
    [
        {"name": "keepalive", "keepalive_ms": [1.0, 7.0]},
        {"name": "multiline"},
        {"name": "split"},
        {"line_ending": "\r\n", "keepalive_every": 2},
        {"line_ending": "\r", "keepalive_every": 3},
    ],
    ids=["comments", "multiline", "split-writes", "crlf", "cr"],
)
async def test_framing_variants_lose_no_event(
    scripted_server: ScriptedServer, script: dict[str, Any]
) -> None:
    r = await run(scripted_server, req({"n": 8, "itl_ms": 4, **script}))
    assert r.ok, r
    content = sent(scripted_server, r, "content")
    assert len(r.chunk_offsets_us) == len(content) == 8
    # an event split over two writes arrives when its second half does
    assert all(lands_on(m, t) for m, t in zip(r.chunk_offsets_us, content, strict=True))
    assert r.chunks_total == 10
    assert r.output_tokens == 8


async def test_multi_token_chunks_exact_counts(scripted_server: ScriptedServer) -> None:
    tokens = [1, 3, 2, 5, 1, 4]
    r = await run(scripted_server, req({"n": 6, "tokens": tokens, "itl_ms": 2}))
    assert (r.ok, r.chunk_tokens, r.chunk_token_source) == (True, tokens, "usage")
    assert r.output_tokens == sum(tokens)


async def test_without_continuous_usage_one_token_per_chunk(
    scripted_server: ScriptedServer,
) -> None:
    tokens = [1, 3, 2]
    r = await run(scripted_server, req({"n": 3, "tokens": tokens, "usage": "final"}))
    assert (r.ok, r.chunk_tokens, r.chunk_token_source) == (True, [1, 1, 1], "one_per_chunk")
    assert r.output_tokens == 6  # the final usage total is still recorded


async def test_finish_chunk_eos_token_and_cached_tokens(scripted_server: ScriptedServer) -> None:
    script = {"n": 3, "finish_separate": True, "eos_tokens": 1, "cached_tokens": 4}
    r = await run(scripted_server, req(script))
    assert r.ok, r
    assert (r.chunk_tokens, r.output_tokens, r.cached_tokens) == ([1, 1, 2], 4, 4)


async def test_server_rejecting_continuous_usage_is_retried_once_and_remembered(
    scripted_server: ScriptedServer,
) -> None:
    script = {"name": "reject_continuous", "n": 3, "tag": "reject-continuous"}
    async with AsyncLLMClient(scripted_server.url) as client:
        first = await client.complete(req(script))
        second = await client.complete(req(script))
    for r in (first, second):
        assert (r.ok, r.chunk_token_source, r.output_tokens) == (True, "one_per_chunk", 3)
    entries = scripted_server.log(tag="reject-continuous")
    assert [e["status"] for e in entries] == [400, 200, 200]
    assert [e["stream_options"].get("continuous_usage_stats") for e in entries] == [
        True,
        None,
        None,
    ]


@pytest.mark.parametrize("status", [429, 500])
async def test_http_errors_are_results(scripted_server: ScriptedServer, status: int) -> None:
    r = await run(scripted_server, req({"status": status}))
    assert (r.ok, r.error_type, r.status_code) == (False, str(status), status)
    assert r.error_message is not None
    assert f"scripted HTTP {status}" in r.error_message
    assert r.ttft_us is None
    assert r.chunk_offsets_us == []


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_cut_stream_is_a_stream_error(scripted_server: ScriptedServer, framing: str) -> None:
    r = await run(scripted_server, req({"n": 8, "cut_after": 3, "framing": framing}))
    assert (r.ok, r.error_type) == (False, "stream_error")
    assert len(r.chunk_offsets_us) == 3  # what did arrive is kept
    assert r.output_tokens == 3


async def test_malformed_json_and_error_events(scripted_server: ScriptedServer) -> None:
    for script in ({"name": "malformed"}, {"n": 4, "error_event_at": 2}):
        r = await run(scripted_server, req(script))
        assert (r.ok, r.error_type) == (False, "stream_error")
        assert r.error_message is not None
        assert len(r.chunk_offsets_us) == script.get("n", 6)


async def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with AsyncLLMClient(f"http://127.0.0.1:{port}") as client:
        r = await client.complete(req({}))
    assert (r.ok, r.error_type, r.status_code) == (False, "unreachable", None)
    assert r.error_message is not None
    assert r.error_message.startswith("cannot connect to the target")


async def test_timeouts_before_headers_and_mid_stream(scripted_server: ScriptedServer) -> None:
    slow_headers = req({"headers_delay_ms": 400})
    stall = req({"n": 6, "stall_at": 3, "stall_ms": 400})
    for request in (slow_headers, stall):
        r = await run(scripted_server, request, timeout=httpx.Timeout(0.15))
        assert (r.ok, r.error_type) == (False, "timeout"), r
    assert len(r.chunk_offsets_us) == 3  # the stalled stream kept what came before the stall


async def test_non_streaming_request(scripted_server: ScriptedServer) -> None:
    r = await run(scripted_server, req({"n": 5, "ttft_ms": 10, "itl_ms": 2}, stream=False))
    assert r.ok, r
    (body,) = sent(scripted_server, r, "body")
    assert r.ttft_us == r.end_offset_us
    assert lands_on(r.ttft_us, body)
    assert (r.output_tokens, r.chunk_offsets_us, r.first_event_offset_us) == (5, [], None)
    entry = scripted_server.entry(r.response_id or "")
    assert (entry["stream"], entry["stream_options"]) == (False, {})


async def test_span_and_traceparent_on_the_wire(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    attributes = {semconv.RUN_ID: "run-9", semconv.REQUEST_INDEX: 3}
    r = await run(
        scripted_server,
        req({"n": 3}, max_tokens=3, temperature=0.5, attributes=attributes),
        tracer_provider=tracer_provider,
    )
    (span,) = span_exporter.get_finished_spans()
    ctx = span.context
    assert (r.trace_id, r.span_id) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")
    entry = scripted_server.entry(r.response_id or "")
    assert entry["traceparent"] == f"00-{r.trace_id}-{r.span_id}-{int(ctx.trace_flags):02x}"
    attrs = dict(span.attributes or {})
    assert span.name == "text_completion tiny"
    assert attrs[semconv.RUN_ID] == "run-9"
    assert attrs[semconv.REQUEST_INDEX] == 3
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.5
    assert attrs[semconv.SERVER_PORT] == scripted_server.port
    assert attrs[semconv.CLIENT_CHUNK_OFFSETS_US] == tuple(r.chunk_offsets_us)
    assert attrs[semconv.CLIENT_TTFT_US] == r.ttft_us
    assert attrs[semconv.CLIENT_SUBMIT_MONO_NS] == r.submit_mono_ns
    assert span.status.status_code is StatusCode.UNSET


async def test_failed_request_span(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    r = await run(scripted_server, req({"status": 429}), tracer_provider=tracer_provider)
    (span,) = span_exporter.get_finished_spans()
    assert (span.attributes or {})[semconv.ERROR_TYPE] == r.error_type == "429"
    assert span.status.status_code is StatusCode.ERROR


class TestSyncClient:
    def test_stream_and_errors(self, scripted_server: ScriptedServer) -> None:
        with LLMClient(scripted_server.url + "/v1/") as client:
            ok = client.complete(req({"name": "ws_first", "n": 3}))
            bad = client.complete(req({"n": 5, "cut_after": 2}))
            http = client.complete(req({"status": 500}))
        assert ok.ok, ok
        assert ok.chunk_tokens == [2, 1, 1]
        (content, *_) = sent(scripted_server, ok, "content")
        assert lands_on(ok.ttft_us, content)
        assert (bad.ok, bad.error_type, len(bad.chunk_offsets_us)) == (False, "stream_error", 2)
        assert (http.ok, http.error_type) == (False, "500")


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8000", "ftp://host/v1", "http://", "http://h/v1?x=1", "not a url"]
)
def test_bad_base_urls(url: str) -> None:
    with pytest.raises(ConfigError):
        AsyncLLMClient(url)


def test_bad_requests() -> None:
    with pytest.raises(ConfigError):
        CompletionRequest(api="completions", model="m")
    with pytest.raises(ConfigError):
        CompletionRequest(api="chat", model="m", prompt="x")
    with pytest.raises(ConfigError):
        CompletionRequest(api="completions", model="", prompt="x")
