"""The ASGI middleware driven directly: a small real ASGI app behind it plays an OpenAI-style
server (SSE or JSON), and the test is the ASGI server (it sends the request, collects what the
middleware sends)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv
from otelbench.guardrails.config import parse_config
from otelbench.guardrails.middleware import GuardrailMiddleware, request_slots

Message = dict[str, Any]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def sse_chunk(text: str, finish: str | None = None, chat: bool = False) -> bytes:
    if chat:
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish}
    obj = {"id": "cmpl-1", "object": "text_completion", "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class Upstream:
    """A real ASGI app: records the request it got, answers with the given body messages."""

    def __init__(self, messages: list[bytes], ctype: bytes = b"text/event-stream") -> None:
        self.messages = messages
        self.ctype = ctype
        self.calls: list[dict[str, Any]] = []
        self.after_body: list[Message] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        msg = await receive()
        self.calls.append({"body": json.loads(msg["body"]), "headers": dict(scope["headers"])})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", self.ctype)],
            }
        )
        for i, body in enumerate(self.messages):
            more = i < len(self.messages) - 1
            await send({"type": "http.response.body", "body": body, "more_body": more})
        if self.ctype.startswith(b"text/event-stream"):
            # like Starlette's StreamingResponse: listen for the client going away
            # (the test's client never goes away: only the middleware can say so)
            with contextlib.suppress(TimeoutError):
                self.after_body.append(await asyncio.wait_for(receive(), 0.3))


async def call(
    app: Callable[..., Awaitable[None]], body: dict[str, Any], path: str = "/v1/completions",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, dict[bytes, bytes], bytes]:  # fmt: skip
    raw = json.dumps(body).encode()
    sent: list[Message] = []
    queue = [{"type": "http.request", "body": raw[:5], "more_body": True},
             {"type": "http.request", "body": raw[5:], "more_body": False}]  # fmt: skip

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()  # never: the client stays
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-length", str(len(raw)).encode()), *(headers or [])],
    }
    task = asyncio.ensure_future(app(scope, receive, send))
    while not any(m["type"] == "http.response.body" and not m.get("more_body") for m in sent):
        await asyncio.sleep(0.001)
        if task.done():
            break
    await asyncio.wait_for(task, 5)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body_out = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body_out


def texts_of(sse: bytes, chat: bool = False) -> list[str]:
    out = []
    for event in sse.split(b"\n\n"):
        if not event.startswith(b"data: {"):
            continue
        obj = json.loads(event[6:])
        for c in obj.get("choices", []):
            out.append(c["delta"].get("content", "") if chat else c["text"])
    return out


def mw(app: Any, cfg: dict[str, Any], tracer_provider: TracerProvider) -> GuardrailMiddleware:
    return GuardrailMiddleware(app, config=parse_config(cfg), tracer_provider=tracer_provider)


BLOCK_INPUT = {"input": [{"type": "blocklist", "name": "words", "keywords": ["forbidden"]}]}


async def test_blocked_prompt_never_reaches_the_app(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    up = Upstream([sse_chunk("x", "stop")])
    tp = f"00-{TRACE_ID}-{PARENT_ID}-01".encode()
    status, headers, body = await call(
        mw(up, BLOCK_INPUT, tracer_provider),
        {"model": "m", "prompt": "say forbidden", "stream": True},
        headers=[(b"traceparent", tp)],
    )
    assert up.calls == []
    assert status == 400
    assert headers[b"x-otelbench-guardrail"] == b"blocked"
    err = json.loads(body)["error"]
    assert (err["code"], err["type"]) == ("content_filter", "invalid_request_error")
    assert "'words'" in err["message"]
    assert "forbidden" not in err["message"]
    (span,) = span_exporter.get_finished_spans()
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert dict(span.attributes or {})[semconv.GUARDRAIL_DECISION] == "block"


@pytest.mark.parametrize("chat", [False, True])
@pytest.mark.parametrize("stream", [False, True])
async def test_refusal_completion_mode(
    chat: bool, stream: bool, tracer_provider: TracerProvider
) -> None:
    cfg = {**BLOCK_INPUT, "block_response": "completion", "refusal_message": "No."}
    up = Upstream([])
    body: dict[str, Any] = {"model": "m", "stream": stream}
    if chat:
        body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "forbidden"}]}]
    else:
        body["prompt"] = ["ok", "forbidden"]
    path = "/v1/chat/completions" if chat else "/v1/completions"
    status, headers, out = await call(mw(up, cfg, tracer_provider), body, path)
    assert up.calls == []
    assert status == 200
    if stream:
        assert headers[b"content-type"].startswith(b"text/event-stream")
        assert texts_of(out, chat) == ["No."]
        assert b'"finish_reason":"content_filter"' in out
        assert out.endswith(b"data: [DONE]\n\n")
    else:
        choice = json.loads(out)["choices"][0]
        assert choice["finish_reason"] == "content_filter"
        assert (choice["message"]["content"] if chat else choice["text"]) == "No."


async def test_input_redaction_rewrites_the_body(tracer_provider: TracerProvider) -> None:
    up = Upstream([sse_chunk("ok", "stop")])
    cfg = {"input": [{"type": "pii"}]}
    body = {"model": "m", "messages": [{"role": "user", "content": "me: a@b.io"}], "stream": True}
    status, _, _ = await call(mw(up, cfg, tracer_provider), body, "/v1/chat/completions")
    assert status == 200
    (got,) = up.calls
    assert got["body"]["messages"][0]["content"] == "me: [EMAIL]"
    assert got["headers"][b"content-length"] == str(len(json.dumps(got["body"]))).encode()


async def test_output_window_redacts_across_events_and_body_messages(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    stream = sse_chunk("mail jo@exa") + sse_chunk("mple.org now") + sse_chunk(" bye", "stop")
    stream += b"data: [DONE]\n\n"
    # body messages cut through the middle of events
    messages = [stream[i : i + 37] for i in range(0, len(stream), 37)]
    up = Upstream(messages)
    cfg = {"output_window": 20, "output": [{"type": "pii"}]}
    status, _, out = await call(
        mw(up, cfg, tracer_provider), {"model": "m", "prompt": "p", "stream": True}
    )
    assert status == 200
    assert "".join(texts_of(out)) == "mail [EMAIL] now bye"
    assert out.endswith(b"data: [DONE]\n\n")
    assert up.after_body == []  # not aborted: the app finished on its own
    (span,) = span_exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs[semconv.GUARDRAIL_STAGE] == "output"
    assert attrs[semconv.GUARDRAIL_DECISION] == "redact"
    assert len(attrs[semconv.GUARDRAIL_CHUNK_BUSY_US]) == 3  # type: ignore[arg-type]
    # one entry per body message the app sent
    assert len(attrs[semconv.GUARDRAIL_OUTPUT_ADDED_US]) == len(messages)  # type: ignore[arg-type]


async def test_output_block_ends_the_stream_and_disconnects_the_app(
    tracer_provider: TracerProvider,
) -> None:
    chunks = [sse_chunk("fine "), sse_chunk("then stop"), sse_chunk(" more", "length")]
    up = Upstream([*chunks, b"data: [DONE]\n\n"])
    cfg = {"output": [{"type": "blocklist", "keywords": ["stop"]}]}
    status, _, out = await call(
        mw(up, cfg, tracer_provider), {"model": "m", "prompt": "p", "stream": True}
    )
    assert status == 200
    assert texts_of(out) == ["fine "]
    events = [e for e in out.split(b"\n\n") if e]
    err = json.loads(events[-2][6:])["error"]
    assert err["param"] == "content_filter"
    assert "blocklist" in err["message"]
    assert events[-1] == b"data: [DONE]"
    assert up.after_body == [{"type": "http.disconnect"}]


async def test_json_response_is_filtered_whole(tracer_provider: TracerProvider) -> None:
    obj = {"id": "c", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "card 4111111111111111"},
         "finish_reason": "stop"}]}  # fmt: skip
    up = Upstream(
        [json.dumps(obj).encode()[:10], json.dumps(obj).encode()[10:]], b"application/json"
    )
    cfg = {"output": [{"type": "pii"}]}
    status, headers, out = await call(
        mw(up, cfg, tracer_provider), {"model": "m", "messages": []}, "/v1/chat/completions"
    )
    assert status == 200
    assert json.loads(out)["choices"][0]["message"]["content"] == "card [CARD]"
    assert headers[b"content-length"] == str(len(out)).encode()


async def test_other_paths_and_unscoped_models_pass_untouched(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    up = Upstream([sse_chunk("a@b.io", "stop")])
    cfg = {"output": [{"type": "pii", "models": ["guarded"]}]}
    _, _, out = await call(
        mw(up, cfg, tracer_provider), {"model": "raw", "prompt": "p", "stream": True}
    )
    assert texts_of(out) == ["a@b.io"]
    assert span_exporter.get_finished_spans() == ()
    _, _, out = await call(
        mw(up, cfg, tracer_provider), {"model": "guarded", "prompt": "p", "stream": True}
    )
    assert texts_of(out) == ["[EMAIL]"]


def test_request_slots() -> None:
    body = {"prompt": ["a", [1, 2], "b"]}
    assert [c[k] for c, k in request_slots(body, chat=False)] == ["a", "b"]
    assert request_slots({"prompt": [1, 2, 3]}, chat=False) == []
    parts = [{"type": "text", "text": "y"}, {"type": "image_url"}]
    chat = {"messages": [{"content": "x"}, {"content": parts}, "junk"]}
    assert [c[k] for c, k in request_slots(chat, chat=True)] == ["x", "y"]


async def test_lifespan_passes_through_and_shutdown_closes() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            msg = await receive()
            seen.append(msg["type"])
            if msg["type"] == "lifespan.shutdown":
                return

    middleware = GuardrailMiddleware(app, config=parse_config({"input": [{"type": "pii"}]}))
    msgs = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> Message:
        return msgs.pop(0)

    async def send(message: Message) -> None:
        pass

    await middleware({"type": "lifespan"}, receive, send)
    assert seen == ["lifespan.startup", "lifespan.shutdown"]
