"""Guardrails as pure ASGI middleware, for vLLM's API server and for ``otelbench gateway``.

vLLM 0.32 loads it with ``vllm serve ... --middleware
otelbench.guardrails.middleware.GuardrailMiddleware``
(``vllm/entrypoints/serve/middleware/register.py``: a class is added with
``app.add_middleware(cls)``, so it is built as ``GuardrailMiddleware(app)``); the configuration
comes from the file named by ``$OTELBENCH_GUARDRAILS_CONFIG`` and spans go by OTLP/HTTP to
``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (:mod:`~otelbench.guardrails.telemetry`). Only the
standard library, opentelemetry-api/sdk, httpx and pyyaml are imported: all are in vLLM's venv.

What it does to ``POST /v1/completions`` and ``POST /v1/chat/completions`` (other requests pass
untouched):

1. reads the request body, runs the input filters on the prompt or message texts; a block is
   answered here (the engine never sees the request): ``block_response: error`` gives HTTP
   ``block_status`` (400) with an OpenAI-style body ``{"error": {"message", "type":
   "invalid_request_error", "param": null, "code": "content_filter"}}``; ``completion`` gives a
   normal (streamed, if asked) completion whose text is ``refusal_message`` and whose
   ``finish_reason`` is ``content_filter``. A redaction rewrites the body the app receives;
2. with output filters, parses the response's SSE events as they are sent and passes each
   choice's text delta through the :class:`~otelbench.guardrails.engine.OutputSession`; an event
   is re-encoded only when its text changed; nothing is buffered beyond the incomplete SSE event
   and the output window. A block ends the stream with an error event (or a ``content_filter``
   finish chunk) and ``[DONE]``, and tells the app the client went away (``http.disconnect``) so
   that the engine stops generating. A JSON (non-streamed) response is filtered as a whole.

Spans are children of the context in ``scope[SCOPE_CONTEXT]`` (the gateway puts its span there)
or else of the incoming W3C ``traceparent`` (the client's span). Example (any ASGI app)::

    from otelbench.guardrails.config import load_config
    from otelbench.guardrails.middleware import GuardrailMiddleware

    app = GuardrailMiddleware(app, config=load_config("guardrails.yaml"))
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otelbench import semconv
from otelbench.guardrails.config import GuardrailConfig, config_from_env
from otelbench.guardrails.engine import BLOCKED, Blocked, Guardrails, OutputSession
from otelbench.guardrails.telemetry import Providers
from otelbench.model.jsonvalue import JsonObject, JsonValue

__all__ = ["SCOPE_CONTEXT", "SCOPE_REPORT", "GuardrailMiddleware", "RequestReport"]

_log = logging.getLogger(__name__)

# ASGI's own open mappings (as ``starlette.types`` spells them): their values are any Python
# object the server or app puts there (bytes, header lists, state), not JSON.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SCOPE_CONTEXT = "otelbench.guardrails.context"
"""ASGI scope key: the OpenTelemetry context the filter spans are children of."""
SCOPE_REPORT = "otelbench.guardrails.report"
"""ASGI scope key: a :class:`RequestReport` the middleware fills in (the gateway reads it)."""

_PATHS = ("/v1/completions", "/v1/chat/completions")
_PROPAGATOR = TraceContextTextMapPropagator()
_TRACE_HEADERS = (b"traceparent", b"tracestate")


@dataclass
class RequestReport:
    """What the guardrails did to one request, for the enclosing gateway span."""

    blocked: Blocked | None = None
    output_added_us: list[int] = field(default_factory=list)


def _parent_context(scope: Scope) -> Context | None:
    ctx = scope.get(SCOPE_CONTEXT)
    if ctx is not None:
        return ctx  # type: ignore[no-any-return]
    carrier = {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in scope.get("headers", ())
        if k in _TRACE_HEADERS
    }
    return _PROPAGATOR.extract(carrier) if carrier else None


class _ChatMessage(TypedDict):
    """A chat choice's ``message`` or ``delta`` (an empty delta ends a stream)."""

    role: NotRequired[Literal["assistant"]]
    content: NotRequired[str]


class _RefusalChoice(TypedDict):
    """The one choice of a refusal the middleware answers, or ends a stream with, in the
    OpenAI shapes: a chat ``message`` (a ``delta`` when streamed) or a completion's ``text``."""

    index: int
    message: NotRequired[_ChatMessage]
    delta: NotRequired[_ChatMessage]
    text: NotRequired[str]
    logprobs: NotRequired[None]
    finish_reason: str


def _error_body(message: str, code: str = semconv.ERROR_CODE_CONTENT_FILTER) -> bytes:
    err = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return json.dumps({"error": err}).encode()


def _sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


_DONE = b"data: [DONE]\n\n"


# ---------------------------------------------------------------------------------- request texts
Slot = tuple[JsonObject, str] | tuple[list[JsonValue], int]
"""(container, key): where one text of the request lives (an object's member or a list's item),
so a redaction can write it back."""


def request_slots(body: JsonObject, chat: bool) -> list[Slot]:
    """Every text of a completions or chat request, in order (token-id prompts have none)."""
    slots: list[Slot] = []
    if chat:
        messages = body.get("messages")
        for msg in messages if isinstance(messages, list) else ():
            if not isinstance(msg, dict):
                continue
            content = msg.get("content")
            if isinstance(content, str):
                slots.append((msg, "content"))
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        slots.append((part, "text"))
        return slots
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        slots.append((body, "prompt"))
    elif isinstance(prompt, list):
        slots.extend((prompt, i) for i, p in enumerate(prompt) if isinstance(p, str))
    return slots


def _slot_text(slot: Slot) -> str:
    """The text at ``slot`` (:func:`request_slots` only finds strings)."""
    # Both branches index alike; telling the container's kind pairs it with its key's type.
    if isinstance(slot[0], dict):
        obj, name = slot
        text = obj[name]
    else:
        items, i = slot
        text = items[i]
    assert isinstance(text, str)
    return text


def _set_slot_text(slot: Slot, text: str) -> None:
    """Write a redacted ``text`` back where :func:`request_slots` found it."""
    if isinstance(slot[0], dict):
        obj, name = slot
        obj[name] = text
    else:
        items, i = slot
        items[i] = text


def _choice_text(choice: JsonObject, chat: bool) -> tuple[str | None, bool]:
    """(text of the choice's delta or message, or None; finished)."""
    finished = choice.get("finish_reason") is not None
    if chat:
        holder = choice.get("delta")
        if not isinstance(holder, dict):
            holder = choice.get("message")
        text = holder.get("content") if isinstance(holder, dict) else None
    else:
        text = choice.get("text")
    return (text if isinstance(text, str) else None), finished


def _set_choice_text(choice: JsonObject, chat: bool, text: str) -> None:
    if chat:
        holder = choice.get("delta")
        if not isinstance(holder, dict):
            holder = choice.get("message")
        if isinstance(holder, dict):
            holder["content"] = text
    else:
        choice["text"] = text


# ---------------------------------------------------------------------------------- middleware
class GuardrailMiddleware:
    """Pure ASGI middleware running the configured guardrails (module docstring).

    ``config`` (else ``$OTELBENCH_GUARDRAILS_CONFIG``) and the providers (else built from the
    ``OTEL_EXPORTER_OTLP_*`` environment) may be given; ``guardrails`` shares one runtime.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: GuardrailConfig | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        guardrails: Guardrails | None = None,
    ) -> None:
        self.app = app
        self._providers: Providers | None = None
        if guardrails is None:
            if config is None:
                config = config_from_env()
            if tracer_provider is None and meter_provider is None:
                self._providers = Providers.from_env(
                    config, service_name=semconv.SERVICE_GUARDRAILS
                )
                tracer_provider = self._providers.tracer_provider
                meter_provider = self._providers.meter_provider
            guardrails = Guardrails(
                config, tracer_provider=tracer_provider, meter_provider=meter_provider
            )
        self.guardrails = guardrails
        self.config = guardrails.config
        self._active = bool(self.config.filters)
        self._need_body = bool(self.config.input) or self.guardrails.model_scoped

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, self._lifespan_receive(receive), send)
            return
        if (
            not self._active
            or kind != "http"
            or scope.get("method") != "POST"
            or scope["path"].removeprefix(scope.get("root_path", "")) not in _PATHS
        ):
            await self.app(scope, receive, send)
            return
        await _Request(self, scope, receive, send).run()

    def _lifespan_receive(self, receive: Receive) -> Receive:
        async def wrapped() -> Message:
            message = await receive()
            if message.get("type") == "lifespan.shutdown":
                await self.aclose()
            return message

        return wrapped

    async def aclose(self) -> None:
        """Close the filters' connections and flush the spans (the server is shutting down)."""
        await self.guardrails.aclose()
        if self._providers is not None:
            providers, self._providers = self._providers, None
            await asyncio.get_running_loop().run_in_executor(None, providers.shutdown)


class _Request:
    """One guarded request: input stage, then the app with the output stage around ``send``."""

    def __init__(self, mw: GuardrailMiddleware, scope: Scope, receive: Receive, send: Send):
        self.mw = mw
        self.g = mw.guardrails
        self.scope = scope
        self.receive = receive
        self.send = send
        self.chat = scope["path"].endswith("/chat/completions")
        self.report: RequestReport | None = scope.get(SCOPE_REPORT)
        self.parent = _parent_context(scope)
        self.body: JsonObject | None = None
        self.model: str | None = None
        self.session: OutputSession | None = None
        self.aborted: asyncio.Event | None = None

    async def _read_body(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            message = await self.receive()
            if message["type"] != "http.request":
                raise _Disconnected
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def run(self) -> None:
        try:
            raw = await self._read_body()
        except _Disconnected:
            return
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            self.body = parsed
            model = parsed.get("model")
            self.model = model if isinstance(model, str) else None
        scope = self.scope
        if self.body is not None and self.g.input_filters(self.model):
            slots = request_slots(self.body, self.chat)
            texts = [_slot_text(slot) for slot in slots]
            outcome = await self.g.run_input(texts, self.model, self.parent)
            if outcome.blocked is not None:
                if self.report is not None:
                    self.report.blocked = outcome.blocked
                await self._refuse(outcome.blocked)
                return
            if outcome.redacted:
                for slot, text in zip(slots, outcome.texts, strict=True):
                    _set_slot_text(slot, text)
                raw = json.dumps(self.body).encode()
                scope = dict(scope)
                scope["headers"] = [
                    (k, v) for k, v in scope.get("headers", ()) if k != b"content-length"
                ] + [(b"content-length", str(len(raw)).encode())]
        if self.body is not None:
            self.session = self.g.output_session(self.model, self.parent)
        receive = self._replay(raw)
        if self.session is None:
            await self.mw.app(scope, receive, self.send)
            return
        output = _OutputSend(self)
        try:
            await self.mw.app(scope, receive, output.send)
        finally:
            self.session.finish(output.added_us)

    def _replay(self, raw: bytes) -> Receive:
        sent = False
        original = self.receive

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            if self.aborted is None:
                return await original()
            if self.aborted.is_set():
                return {"type": "http.disconnect"}
            waiter = asyncio.ensure_future(original())
            stop = asyncio.ensure_future(self.aborted.wait())
            try:
                done, _ = await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when the caller is cancelled while it waits
                for task in (waiter, stop):
                    if not task.done():
                        task.cancel()
            if waiter in done:
                return waiter.result()
            return {"type": "http.disconnect"}

        if self.session is not None:
            self.aborted = asyncio.Event()
        return receive

    # ------------------------------------------------------------------ refusals
    def _refusal_message(self, blocked: Blocked) -> str:
        return (
            f"The request was blocked by guardrail {blocked.filter!r} "
            f"({blocked.stage.value} {blocked.rule})."
        )

    async def _refuse(self, blocked: Blocked) -> None:
        """Answer a request the input stage blocked, without calling the app."""
        cfg = self.mw.config
        headers = [(b"x-otelbench-guardrail", b"blocked")]
        if cfg.block_response == "error":
            body = _error_body(self._refusal_message(blocked))
            await self._respond(cfg.block_status, b"application/json", body, headers)
            return
        stream = bool(self.body and self.body.get("stream"))
        rid = ("chatcmpl-" if self.chat else "cmpl-") + "guardrail-" + uuid.uuid4().hex[:16]
        base = {"id": rid, "created": int(time.time()), "model": self.model or ""}
        text = cfg.refusal_message
        finish = semconv.FINISH_REASON_CONTENT_FILTER
        choice: _RefusalChoice
        if self.chat:
            message: _ChatMessage = {"role": "assistant", "content": text}
            if stream:
                choice = {"index": 0, "delta": message, "finish_reason": finish}
            else:
                choice = {"index": 0, "message": message, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        if not stream:
            obj = {
                **base,
                "object": "chat.completion" if self.chat else "text_completion",
                "choices": [choice],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
            await self._respond(200, b"application/json", json.dumps(obj).encode(), headers)
            return
        obj = {
            **base,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "choices": [choice],
        }
        await self._respond(200, b"text/event-stream; charset=utf-8", _sse(obj) + _DONE, headers)

    async def _respond(
        self, status: int, ctype: bytes, body: bytes, extra: list[tuple[bytes, bytes]]
    ) -> None:
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await self.send(
            {"type": "http.response.start", "status": status, "headers": headers + extra}
        )
        await self.send({"type": "http.response.body", "body": body, "more_body": False})


class _Disconnected(Exception):
    pass


class _OutputSend:
    """The ``send`` the app gets when output filters apply: filters the body as it is sent."""

    def __init__(self, req: _Request) -> None:
        self.req = req
        assert req.session is not None
        self.session: OutputSession = req.session
        self.g = req.g
        self.downstream = req.send
        self.mode: str | None = None  # "sse", "json", "pass"
        self.start: Message | None = None
        self.buf = b""
        self.json_parts: list[bytes] = []
        self.closed = False
        self.templates: dict[int, JsonObject] = {}
        self.added_us: list[int] = []
        """µs the output stage held each body message (filters, SSE parsing, re-encoding)."""

    async def send(self, message: Message) -> None:
        if self.closed:
            return  # the stream was ended by a block: the rest is dropped
        kind = message["type"]
        if kind == "http.response.start":
            self._start(message)
            if self.mode != "json":
                await self.downstream(message)
            return
        if kind != "http.response.body" or self.mode == "pass":
            await self.downstream(message)
            return
        t0 = time.perf_counter_ns()
        body: bytes = message.get("body", b"")
        more = bool(message.get("more_body", False))
        if self.mode == "json":
            self.json_parts.append(body)
            if not more:
                await self._finish_json(t0)
            return
        try:
            out, blocked = await self._sse(body, final=not more)
        except Exception:  # noqa: BLE001 - a guardrail bug never breaks the response
            _log.exception("guardrail output stage failed; passing the rest through unfiltered")
            out, blocked = self.buf + body, False
            self.buf = b""
            self.mode = "pass"
        added = time.perf_counter_ns() - t0
        self._note_added(added)
        if blocked:
            await self._end_blocked(out)
            return
        if out or not more:
            await self.downstream({"type": "http.response.body", "body": out, "more_body": more})

    def _note_added(self, ns: int) -> None:
        self.added_us.append(ns // 1000)
        report = self.req.report
        if report is not None:
            report.output_added_us.append(ns // 1000)
        self.g.record_added(ns / 1e9)

    def _start(self, message: Message) -> None:
        status = message.get("status", 200)
        ctype = b""
        for k, v in message.get("headers", ()):
            if k.lower() == b"content-type":
                ctype = v.lower()
        if not 200 <= status < 300:
            self.mode = "pass"
        elif ctype.startswith(b"text/event-stream"):
            self.mode = "sse"
        elif ctype.startswith(b"application/json"):
            self.mode = "json"
            self.start = message
        else:
            self.mode = "pass"

    # ------------------------------------------------------------------ SSE
    async def _sse(self, data: bytes, final: bool) -> tuple[bytes, bool]:
        buf = self.buf + data if self.buf else data
        out: list[bytes] = []
        pos = 0
        while True:
            end = buf.find(b"\n\n", pos)
            sep = 2
            crlf = buf.find(b"\r\n\r\n", pos)
            if crlf != -1 and (end == -1 or crlf < end):
                end, sep = crlf, 4
            if end == -1:
                break
            raw = buf[pos : end + sep]
            pos = end + sep
            piece, blocked = await self._event(raw)
            if blocked:
                return b"".join(out), True
            out.append(piece)
        self.buf = buf[pos:]
        if final:
            out.append(await self._flush_pending())
            out.append(self.buf)
            self.buf = b""
        return b"".join(out), False

    async def _event(self, raw: bytes) -> tuple[bytes, bool]:
        lines = raw.splitlines()
        data = [ln[5:].removeprefix(b" ") for ln in lines if ln.startswith(b"data:")]
        if not data:
            return raw, False
        payload = b"\n".join(data)
        if payload.strip() == b"[DONE]":
            return await self._flush_pending() + raw, False
        try:
            obj = json.loads(payload)
        except ValueError:
            return raw, False
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list) or not choices:
            # usage or error event: held-back text goes out before it
            return (await self._flush_pending() if self.session.pending() else b"") + raw, False
        changed = False
        chat = self.req.chat
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            text, finished = _choice_text(choice, chat)
            index = choice.get("index", 0)
            index = index if isinstance(index, int) else 0
            if text is None and not finished:
                continue
            self.templates[index] = obj
            released = await self.session.feed(index, text or "", final=finished)
            if released is BLOCKED:
                return b"", True
            assert isinstance(released, str)
            if released != (text or ""):
                if text is None and not released:
                    continue
                _set_choice_text(choice, chat, released)
                changed = True
        return (_sse(obj) if changed else raw), False

    async def _flush_pending(self) -> bytes:
        """Release held-back text (the stream ended without a finish for it)."""
        out: list[bytes] = []
        for index in list(self.session.pending()):
            released = await self.session.feed(index, "", final=True)
            if released is BLOCKED or not isinstance(released, str) or not released:
                continue
            template = self.templates.get(index)
            if template is None:
                continue
            obj = json.loads(json.dumps(template))
            choice = next((c for c in obj.get("choices", ()) if c.get("index", 0) == index), None)
            if choice is None:
                continue
            choice["finish_reason"] = None
            _set_choice_text(choice, self.req.chat, released)
            obj["choices"] = [choice]
            out.append(_sse(obj))
        return b"".join(out)

    async def _end_blocked(self, before: bytes) -> None:
        """End the stream after ``before`` with the refusal, and stop the app."""
        self.closed = True
        blocked = self.session.blocked
        assert blocked is not None
        report = self.req.report
        if report is not None:
            report.blocked = blocked
        cfg = self.req.mw.config
        if cfg.block_response == "error":
            err = json.loads(_error_body(self.req._refusal_message(blocked)))
            err["error"]["code"] = cfg.block_status
            err["error"]["param"] = semconv.ERROR_CODE_CONTENT_FILTER
            tail = _sse(err)
        else:
            index = next(iter(self.templates), 0)
            template = self.templates.get(index, {})
            choice: _RefusalChoice = {"index": index, "finish_reason": "content_filter"}
            if self.req.chat:
                choice["delta"] = {}
            else:
                choice["text"] = ""
            obj: dict[str, object] = {
                k: v for k, v in template.items() if k not in ("choices", "usage")
            }
            obj["choices"] = [choice]
            tail = _sse(obj)
        await self.downstream(
            {"type": "http.response.body", "body": before + tail + _DONE, "more_body": False}
        )
        if self.req.aborted is not None:
            self.req.aborted.set()

    # ------------------------------------------------------------------ JSON
    async def _finish_json(self, t0: int) -> None:
        start = self.start
        assert start is not None
        body = b"".join(self.json_parts)
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        choices = obj.get("choices") if isinstance(obj, dict) else None
        status = start.get("status", 200)
        blocked = False
        if isinstance(choices, list):
            for choice in choices:
                if not isinstance(choice, dict):
                    continue
                text, _ = _choice_text(choice, self.req.chat)
                if text is None:
                    continue
                index = choice.get("index", 0)
                released = await self.session.feed(
                    index if isinstance(index, int) else 0, text, final=True
                )
                if released is BLOCKED:
                    blocked = True
                    break
                assert isinstance(released, str)
                if released != text:
                    _set_choice_text(choice, self.req.chat, released)
            if blocked:
                cfg = self.req.mw.config
                assert self.session.blocked is not None
                if self.req.report is not None:
                    self.req.report.blocked = self.session.blocked
                if cfg.block_response == "error":
                    status = cfg.block_status
                    body = _error_body(self.req._refusal_message(self.session.blocked))
                else:
                    for choice in choices:
                        if isinstance(choice, dict):
                            _set_choice_text(choice, self.req.chat, cfg.refusal_message)
                            choice["finish_reason"] = semconv.FINISH_REASON_CONTENT_FILTER
                    body = json.dumps(obj).encode()
            else:
                body = json.dumps(obj).encode()
        headers = [
            (k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"
        ] + [(b"content-length", str(len(body)).encode())]
        self._note_added(time.perf_counter_ns() - t0)
        await self.downstream({**start, "status": status, "headers": headers})
        await self.downstream({"type": "http.response.body", "body": body, "more_body": False})
