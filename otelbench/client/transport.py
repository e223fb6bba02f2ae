"""httpx transports that time LLM requests chunk by chunk and record one CLIENT span per request.

Wrap, don't patch: :class:`InstrumentedTransport` (async) and :class:`InstrumentedSyncTransport`
wrap any httpx transport. For a ``POST`` to ``.../completions`` or ``.../chat/completions`` they

1. take T_submit (``time.perf_counter_ns()`` with ``time.time_ns()`` beside it) and start a CLIENT
   span named ``"{gen_ai.operation.name} {gen_ai.request.model}"`` at that instant (its start time
   is the wall-clock reading; every other time is measured on the monotonic clock and stored as an
   offset from T_submit);
2. inject W3C ``traceparent`` into the request headers (the global OTel propagator, with this span's
   context), then hand the request to the inner transport at once. Between T_submit and the
   hand-off there is only the span's creation (with the sampling-relevant attributes; the others
   are set when it ends) and that injection: ~30 µs with the OpenTelemetry SDK, ~3 µs without.
   Draft B.1.1 puts T_submit at the request's last byte; that gap and the inner transport's own
   send time (~20 µs for the lean transport) are inside the measured TTFT, as for any client;
3. replace the response stream with a proxy that stamps each raw network read with
   ``time.perf_counter_ns()`` as the inner transport yields it (before httpx decodes anything), or
   with the times the inner stream reports its pieces came off the socket (``RECEIVED_MARKS``,
   ``RECEIVED_MONO_NS``: the lean transport under ``AsyncLLMClient`` reports the kernel's receive
   timestamps), and feeds the SSE parser and
   :class:`~otelbench.client.openai.StreamAccumulator` (skipped when the span is not recording
   and nobody asked for the :class:`Measurement`);
4. finish the span exactly once: when ``[DONE]`` arrives, at end of stream, when the caller closes
   the response, or on an error (the caller's exception is re-raised unchanged).
5. when the request has ended, record the GenAI client metrics (:mod:`otelbench.client.metrics`)
   from the same numbers, if a meter provider records.

**With opentelemetry-instrumentation-httpx.** This transport's span is the request's HTTP client
span (it carries ``http.response.status_code``, ``server.address``, ``server.port``), and its
``traceparent`` is the one sent. While the inner transport runs, HTTP instrumentation is
suppressed in the context (the key ``HTTPXClientInstrumentor`` and the other HTTP client
instrumentations honour), so ``HTTPXClientInstrumentor().instrument()``, which wraps
``httpx.HTTPTransport``, adds no second span and no second ``traceparent``: the server span is
this span's child. ``instrument_client(client)`` wraps the client's transport, this one: its HTTP
span is then this span's parent, and the server span is still this span's child. When this span
does not record (no tracer provider of its own, or not sampled) nothing is suppressed: the
instrumentation's span, if any, and its ``traceparent`` go out as without otelbench.

A call that the ``openai`` SDK retries is one span per attempt (each a separate HTTP request, as
the HTTP conventions have it): the failed attempts carry ``error.type``, and every resend carries
``http.request.resend_count`` (from the SDK's ``x-stainless-retry-count`` header).

Everything else passes through untouched. Telemetry never changes behaviour: a failure inside this
module is logged and swallowed, and the request carries on uninstrumented.

Example::

    import httpx
    from otelbench.client import InstrumentedTransport

    async with httpx.AsyncClient(transport=InstrumentedTransport()) as client:
        async with client.stream("POST", url, json=body) as response:
            async for raw in response.aiter_raw():
                ...

``error.type`` values: the HTTP status (``"429"``), ``unreachable`` (connection refused, DNS,
connect timeout, or the connection dropped before the response headers), ``timeout`` (a read, write
or pool timeout), ``stream_error`` (malformed SSE or JSON, an error event, the stream cut before
``[DONE]`` or a ``finish_reason``, or the connection dropped mid-body) and ``cancelled`` (the caller
cancelled the request or closed the response before the stream ended). Another exception's type
name is used as it is.

Request extensions the transports read (``httpx.Request.extensions``):

* ``"otelbench.attributes"``: a mapping of extra span attributes (run id, request index, class …);
* ``"otelbench.measurement"``: a :class:`Measurement` the transport fills in (the span's
  measurements, available even when the span is not recording); this is how the high-level client
  builds its results from the same numbers the span carries;
* ``"otelbench.body"``: the request's JSON body as a dict, to spare re-parsing the encoded body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from contextvars import Token
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import httpx
import httpx2
from opentelemetry import context, propagate, trace
from opentelemetry.context import _SUPPRESS_HTTP_INSTRUMENTATION_KEY, Context
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from otelbench import __version__, semconv
from otelbench.client.encoding import DecodeFailed, Decoder, UnsupportedEncoding, decoder_for
from otelbench.client.metrics import GenAIClientMetrics
from otelbench.client.openai import (
    Api,
    Chunk,
    StreamAccumulator,
    api_for_path,
    finish_reasons,
    operation_name,
    parse_response_body,
)
from otelbench.client.others import Signals, resolve_signals, warn_once_if_doubled
from otelbench.client.sse import SSEParser
from otelbench.errors import StreamError, TargetUnreachable
from otelbench.model.jsonvalue import JsonValue

__all__ = [
    "ERROR_CANCELLED",
    "ERROR_TIMEOUT",
    "EXT_ATTRIBUTES",
    "EXT_BODY",
    "EXT_MEASUREMENT",
    "RECEIVED_MARKS",
    "RECEIVED_MONO_NS",
    "InstrumentedHttpx2SyncTransport",
    "InstrumentedHttpx2Transport",
    "InstrumentedSyncTransport",
    "InstrumentedTransport",
    "Measurement",
]

_logger = logging.getLogger(__name__)

EXT_ATTRIBUTES = "otelbench.attributes"
EXT_MEASUREMENT = "otelbench.measurement"
EXT_BODY = "otelbench.body"
RECEIVED_MONO_NS = "otelbench_received_mono_ns"
"""Optional attribute of an inner response stream: ``time.perf_counter_ns()`` at which the block
it last yielded was received from the socket (the lean HTTP/1.1 transport sets it); without it the
proxy stamps each block when the inner stream yields it."""
RECEIVED_MARKS = "otelbench_received_marks"
"""Optional attribute of an inner response stream: for the block it last yielded, a list of
``(end offset, perf_counter ns)``, one per piece that arrived at its own time; the proxy then feeds
the parser piece by piece, so that an event is stamped with the arrival of its own last byte."""

ERROR_UNREACHABLE: str = TargetUnreachable.error_type
ERROR_STREAM: str = StreamError.error_type
ERROR_TIMEOUT = semconv.ERROR_TYPE_TIMEOUT
ERROR_CANCELLED = semconv.ERROR_TYPE_CANCELLED

_MAX_ERROR_BODY = 2048
_RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""The ``openai`` SDK's header: how many times it has already sent this call (its retries)."""
_MAX_JSON_BODY = 64 * 1024 * 1024


@dataclass
class Measurement:
    """What the transport measured for one request: the values its span carries, as plain data.

    Offsets are integer µs since T_submit on the monotonic clock; ``None`` means "did not happen".
    """

    api: Api | None = None
    streaming: bool = False
    """The response was ``text/event-stream``."""
    submit_unix_ns: int = 0
    submit_mono_ns: int = 0
    status_code: int | None = None
    headers_offset_us: int | None = None
    first_event_offset_us: int | None = None
    ttft_us: int | None = None
    end_offset_us: int | None = None
    chunk_offsets_us: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    chunk_token_source: str | None = None
    chunks_total: int = 0
    think_phase: str | None = None
    """``ended`` / ``unterminated`` when a reasoning model's think phase was seen, else None."""
    output_phase_chunk: int | None = None
    """Index in ``chunk_offsets_us`` of the first output-phase chunk after an ended think phase."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    finish_reason: str | None = None
    """Choice 0's finish reason."""
    finish_reasons: list[str] = field(default_factory=list)
    """Every choice's, in index order, ``"error"`` for one expected but not received."""
    event_offsets_us: list[int] = field(default_factory=list)
    """Arrival of every chunk of a stream (each SSE ``data:`` event but ``[DONE]``), content or
    not: the GenAI conventions' chunks (``chunk_offsets_us`` holds the text chunks only)."""
    system_fingerprint: str | None = None
    service_tier: str | None = None
    """``service_tier`` of the response (OpenAI's)."""
    response_id: str | None = None
    response_model: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    trace_id: str | None = None
    """32 hex digits, or None when no tracer provider is configured (no valid span context)."""
    span_id: str | None = None
    finished: bool = False


_CONNECT_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
)
_TIMEOUTS = (httpx.TimeoutException, httpx2.TimeoutException)
_TRANSPORT_ERRORS = (httpx.TransportError, httpx2.TransportError)
_NOT_READ = (httpx.RequestNotRead, httpx2.RequestNotRead)
Request = httpx.Request | httpx2.Request
"""A request of either library; each transport takes its own library's only."""
Response = httpx.Response | httpx2.Response


def _error_type(exc: BaseException, after_headers: bool) -> tuple[str, str]:
    """Map an exception (of httpx or httpx2) to (``error.type``, one-line message)."""
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | GeneratorExit):
        return ERROR_CANCELLED, "request cancelled by the caller"
    if isinstance(exc, _CONNECT_ERRORS):
        return ERROR_UNREACHABLE, f"cannot connect to the target: {msg}"
    if isinstance(exc, _TIMEOUTS):
        return ERROR_TIMEOUT, f"timed out ({type(exc).__name__}): {msg}"
    if isinstance(exc, _TRANSPORT_ERRORS):
        if after_headers:
            return ERROR_STREAM, f"connection failed mid-response ({type(exc).__name__}): {msg}"
        return ERROR_UNREACHABLE, f"no response from the target ({type(exc).__name__}): {msg}"
    return type(exc).__qualname__, msg


def _request_body(request: Request) -> Mapping[str, JsonValue] | None:
    body = request.extensions.get(EXT_BODY)
    if isinstance(body, Mapping):
        return body
    try:
        content = request.content
    except _NOT_READ:
        return None
    if not content:
        return None
    try:
        obj = json.loads(content)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _request_attributes(
    request: Request, api: Api, body: Mapping[str, JsonValue] | None, provider: str
) -> tuple[str, dict[str, AttributeValue], dict[str, AttributeValue]]:
    """Span name, start attributes and the other request attributes (never the prompt text).

    Only the attributes the GenAI conventions name as relevant for sampling go into
    ``start_span``; the rest are set when the span ends (when it records). With the SDK each
    attribute at start costs ~2 µs between T_submit and the hand-off to the inner transport,
    which would count into the measured TTFT.
    """
    op = operation_name(api)
    start: dict[str, AttributeValue] = {
        semconv.GEN_AI_OPERATION_NAME: op,
        semconv.GEN_AI_PROVIDER_NAME: provider,
        semconv.SERVER_ADDRESS: request.url.host,
        semconv.SERVER_PORT: request.url.port or (443 if request.url.scheme == "https" else 80),
    }
    attrs: dict[str, AttributeValue] = {}
    model = ""
    if body is not None:
        m = body.get("model")
        if isinstance(m, str):
            model = m
            start[semconv.GEN_AI_REQUEST_MODEL] = m
        for key, name in (
            ("max_tokens", semconv.GEN_AI_REQUEST_MAX_TOKENS),
            ("seed", semconv.GEN_AI_REQUEST_SEED),
        ):
            v = body.get(key)
            if type(v) is int:
                attrs[name] = v
        limit = body.get("max_completion_tokens")
        if body.get("max_tokens") is None and type(limit) is int:
            attrs[semconv.GEN_AI_REQUEST_MAX_TOKENS] = limit
        for key, name in (
            ("temperature", semconv.GEN_AI_REQUEST_TEMPERATURE),
            ("top_p", semconv.GEN_AI_REQUEST_TOP_P),
            ("frequency_penalty", semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY),
            ("presence_penalty", semconv.GEN_AI_REQUEST_PRESENCE_PENALTY),
        ):
            v = body.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool):
                attrs[name] = float(v)
        if body.get("stream") is True:
            attrs[semconv.GEN_AI_REQUEST_STREAM] = True
        n = body.get("n")
        if type(n) is int and n != 1:
            attrs[semconv.GEN_AI_REQUEST_CHOICE_COUNT] = n
        stop = body.get("stop")
        if isinstance(stop, str):
            stop = [stop]
        if isinstance(stop, list):
            sequences = [x for x in stop if isinstance(x, str)]
            if sequences and len(sequences) == len(stop):
                attrs[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] = sequences
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, Mapping) else None
        if kind in ("json_object", "json_schema"):
            attrs[semconv.GEN_AI_OUTPUT_TYPE] = semconv.OUTPUT_TYPE_JSON
        elif kind == "text":
            attrs[semconv.GEN_AI_OUTPUT_TYPE] = semconv.OUTPUT_TYPE_TEXT
        tier = body.get("service_tier")
        if isinstance(tier, str) and provider == semconv.PROVIDER_OPENAI:
            attrs[semconv.OPENAI_REQUEST_SERVICE_TIER] = tier
    resends = request.headers.get(_RETRY_COUNT_HEADER)
    if resends is not None and resends.isdigit() and int(resends) > 0:
        attrs[semconv.HTTP_REQUEST_RESEND_COUNT] = int(resends)
    extra = request.extensions.get(EXT_ATTRIBUTES)
    if isinstance(extra, Mapping):
        attrs.update(extra)
    return semconv.client_span_name(op, model) if model else op, start, attrs


class _Recorder:
    """Per-request state: the span, the parser, the fold; finishes exactly once."""

    __slots__ = (
        "_acc",
        "_body",
        "_body_len",
        "_decoder",
        "_parser",
        "_undecodable",
        "late_attrs",
        "m",
        "measure",
        "metrics",
        "request_attrs",
        "span",
        "suppressed",
    )

    def __init__(
        self,
        span: Span,
        m: Measurement,
        measure: bool,
        late_attrs: dict[str, AttributeValue],
        request_attrs: dict[str, AttributeValue],
        metrics: GenAIClientMetrics | None,
    ) -> None:
        self.span = span
        self.m = m
        self.measure = measure
        """Parse the body: the span records, the caller asked for the measurement, or metrics
        are recorded."""
        self.late_attrs = late_attrs
        """Request attributes set when the span ends (see ``_request_attributes``)."""
        self.request_attrs = request_attrs
        """The span's start attributes, which are also the metrics' request attributes."""
        self.metrics = metrics
        """Where the request's GenAI client metrics go; None when no meter provider records."""
        self.suppressed: Token[Context] | None = None
        """The context token that keeps HTTP instrumentations below out of this request."""
        self._parser: SSEParser | None = None
        self._acc: StreamAccumulator | None = None
        self._body: list[bytes] | None = None
        self._body_len = 0
        self._decoder: Decoder | None = None
        """Undoes the response's Content-Encoding (None: identity)."""
        self._undecodable: str | None = None
        """Why the body could not be decoded, once it could not."""

    def hand_off(self) -> None:
        """The inner transport has returned (or raised): restore the caller's context."""
        token = self.suppressed
        if token is not None:
            self.suppressed = None
            context.detach(token)

    def _offset(self, mono_ns: int) -> int:
        return (mono_ns - self.m.submit_mono_ns) // 1000

    def on_response(self, response: Response, mono_ns: int) -> None:
        m = self.m
        m.status_code = response.status_code
        m.headers_offset_us = self._offset(mono_ns)
        if not self.measure:
            return  # an unsampled span with nobody asking: pass the bytes through untouched
        encoding = response.headers.get("content-encoding")
        if encoding is not None:
            try:
                self._decoder = decoder_for(encoding)
            except UnsupportedEncoding:
                _logger.warning(
                    "otelbench: cannot decode the response's Content-Encoding %r: its body is "
                    "not parsed (no usage, no chunk times); install the package that decodes it",
                    encoding,
                )
                return
        ok = 200 <= response.status_code < 300
        ctype = response.headers.get("content-type", "")
        if ok and ctype.startswith("text/event-stream"):
            m.streaming = True
            self._parser = SSEParser()
            assert m.api is not None
            self._acc = StreamAccumulator(m.api, m.submit_mono_ns)
        else:
            self._body = []

    def on_data(self, chunk: bytes, mono_ns: int) -> None:
        """Hot path: one raw network read."""
        if self.m.finished:
            return
        try:
            parser = self._parser
            if parser is not None:
                if self._decoder is not None:
                    chunk = self._decoder.decode(chunk)
                events = parser.feed(chunk, mono_ns)
                if events:
                    acc = self._acc
                    assert acc is not None
                    for ev in events:
                        acc.on_event(ev.data, ev.mono_ns)
                    if acc.done:
                        self.finish(events[-1].mono_ns)
            elif self._body is not None:
                limit = _MAX_JSON_BODY if self.m.status_code in range(200, 300) else _MAX_ERROR_BODY
                if self._body_len < limit:
                    self._body.append(chunk)
                    self._body_len += len(chunk)
        except DecodeFailed as exc:
            self._undecodable = str(exc)
            self._parser = None
        except Exception:
            _logger.warning("otelbench: instrumentation failed on a response chunk", exc_info=True)
            self._parser = None
            self._body = None

    def finish(
        self,
        mono_ns: int,
        exc: BaseException | None = None,
        *,
        after_headers: bool = True,
        closed_early: bool = False,
    ) -> None:
        """End the span (once). ``exc``: the exception that ended the request; ``closed_early``:
        the caller closed the response before its end."""
        m = self.m
        if m.finished:
            return
        m.finished = True
        try:
            self._finish(mono_ns, exc, after_headers, closed_early)
        except Exception:
            _logger.warning("otelbench: instrumentation failed finishing a span", exc_info=True)
            try:
                self.span.end()
            except Exception:
                _logger.debug("otelbench: span.end() failed", exc_info=True)
        if self.metrics is not None:
            try:
                # with the call's span as the context: the SDK's exemplars point at it
                self.metrics.record(m, self.request_attrs, trace.set_span_in_context(self.span))
            except Exception:
                _logger.warning("otelbench: instrumentation failed on metrics", exc_info=True)

    def _finish(
        self, mono_ns: int, exc: BaseException | None, after_headers: bool, closed_early: bool
    ) -> None:
        m = self.m
        m.end_offset_us = self._offset(mono_ns)
        ctx = self.span.get_span_context()
        if ctx.is_valid:
            m.trace_id = format(ctx.trace_id, "032x")
            m.span_id = format(ctx.span_id, "016x")
        status = m.status_code
        http_ok = status is not None and 200 <= status < 300
        acc = self._acc
        finishes: dict[int, str] = {}
        last_choice = -1
        if acc is not None:
            discarded = 0
            parser = self._parser
            if parser is not None:
                if self._decoder is not None and exc is None and not closed_early:
                    self._decode_tail(parser, mono_ns)
                discarded = parser.close()
            m.first_event_offset_us = acc.first_event_offset_us
            m.ttft_us = acc.ttft_us
            m.chunk_offsets_us = acc.offsets_us
            m.chunk_tokens, m.chunk_token_source = acc.chunk_tokens()
            m.chunks_total = acc.chunks_total
            m.think_phase = acc.think_phase
            m.output_phase_chunk = acc.output_phase_index
            m.input_tokens = acc.prompt_tokens
            m.output_tokens = acc.completion_tokens
            m.cached_tokens = acc.cached_tokens
            m.reasoning_tokens = acc.reasoning_tokens
            m.finish_reason = acc.finish_reason
            m.response_id = acc.response_id
            m.response_model = acc.response_model
            m.event_offsets_us = acc.event_offsets_us
            m.system_fingerprint = acc.system_fingerprint
            m.service_tier = acc.service_tier
            finishes, last_choice = acc.finishes, acc.last_choice
            if acc.error is not None:
                m.error_type, m.error_message = ERROR_STREAM, acc.error
            elif self._undecodable is not None:
                m.error_type, m.error_message = ERROR_STREAM, self._undecodable
            elif exc is None and not acc.done:
                if closed_early:
                    m.error_type, m.error_message = (
                        ERROR_CANCELLED,
                        "response closed by the caller before the stream ended",
                    )
                else:
                    problem = acc.stream_error(discarded)
                    if problem is not None:
                        m.error_type, m.error_message = ERROR_STREAM, problem
        elif self._body is not None and status is not None:
            body = self._whole_body()
            if http_ok:
                if exc is None and not closed_early:
                    m.ttft_us = m.end_offset_us
                    facts = (
                        parse_response_body(body, m.api or "completions")
                        if self._undecodable is None
                        else Chunk(malformed=True, error=self._undecodable)
                    )
                    m.input_tokens = facts.prompt_tokens
                    m.output_tokens = facts.completion_tokens
                    m.cached_tokens = facts.cached_tokens
                    m.reasoning_tokens = facts.reasoning_tokens
                    m.finish_reason = facts.finish_reason
                    m.response_id = facts.response_id
                    m.response_model = facts.model
                    m.system_fingerprint = facts.system_fingerprint
                    m.service_tier = facts.service_tier
                    finishes, last_choice = dict(facts.finishes), facts.last_choice
                    if facts.malformed:
                        m.error_type, m.error_message = ERROR_STREAM, facts.error
                elif exc is None:
                    m.error_type, m.error_message = (
                        ERROR_CANCELLED,
                        "response closed by the caller before the body ended",
                    )
            else:
                text = body[:_MAX_ERROR_BODY].decode("utf-8", "replace").strip()
                m.error_message = f"target answered HTTP {status}" + (
                    f": {text[:200]}" if text else ""
                )
        if status is not None and not http_ok:
            m.error_type = str(status)
            if m.error_message is None:
                m.error_message = f"target answered HTTP {status}"
        elif exc is not None and m.error_type is None:
            m.error_type, m.error_message = _error_type(exc, after_headers)
        choices = self.late_attrs.get(semconv.GEN_AI_REQUEST_CHOICE_COUNT)  # n, when not 1
        m.finish_reasons = finish_reasons(
            finishes,
            last_choice,
            choices if isinstance(choices, int) else 1,
            failed=m.error_type is not None,
        )
        self._end_span(mono_ns)

    def _decode_tail(self, parser: SSEParser, mono_ns: int) -> None:
        """What the decoder still held at the end of a compressed stream."""
        assert self._decoder is not None
        assert self._acc is not None
        try:
            tail = self._decoder.flush()
        except DecodeFailed as exc:
            self._undecodable = str(exc)
            return
        for ev in parser.feed(tail, mono_ns) if tail else ():
            self._acc.on_event(ev.data, ev.mono_ns)

    def _whole_body(self) -> bytes:
        """The body read, its Content-Encoding undone (at most ``_MAX_JSON_BODY`` bytes)."""
        assert self._body is not None
        raw = b"".join(self._body)
        decoder = self._decoder
        if decoder is None:
            return raw
        try:
            body = decoder.decode(raw) + decoder.flush()
        except DecodeFailed as exc:
            self._undecodable = f"response body: {exc}"
            return b""
        return body[:_MAX_JSON_BODY]

    def _end_span(self, mono_ns: int) -> None:
        span = self.span
        m = self.m
        end_unix = m.submit_unix_ns + (mono_ns - m.submit_mono_ns)
        if not span.is_recording():
            span.end(end_time=end_unix)
            return
        attrs: dict[str, AttributeValue] = self.late_attrs
        attrs[semconv.CLIENT_SUBMIT_MONO_NS] = m.submit_mono_ns
        if m.status_code is not None:
            attrs[semconv.HTTP_RESPONSE_STATUS_CODE] = m.status_code
            attrs[semconv.CLIENT_HEADERS_OFFSET_US] = m.headers_offset_us
        attrs[semconv.CLIENT_END_OFFSET_US] = m.end_offset_us
        openai = self.request_attrs[semconv.GEN_AI_PROVIDER_NAME] == semconv.PROVIDER_OPENAI
        first_event_us = m.first_event_offset_us
        known: tuple[tuple[str, AttributeValue | None], ...] = (
            (semconv.GEN_AI_RESPONSE_ID, m.response_id),
            (semconv.GEN_AI_RESPONSE_MODEL, m.response_model),
            (semconv.GEN_AI_RESPONSE_FINISH_REASONS, m.finish_reasons or None),
            (semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, m.reasoning_tokens),
            (semconv.OPENAI_RESPONSE_SERVICE_TIER, m.service_tier if openai else None),
            (semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT, m.system_fingerprint if openai else None),
            (semconv.GEN_AI_USAGE_INPUT_TOKENS, m.input_tokens),
            (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, m.output_tokens),
            (semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, m.cached_tokens),
            (semconv.CLIENT_FIRST_EVENT_OFFSET_US, first_event_us),
            (
                semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
                None if first_event_us is None else first_event_us / 1e6,
            ),
            (semconv.CLIENT_TTFT_US, m.ttft_us),
        )
        # Each of these is set only when known (the ``openai.*`` ones for the OpenAI provider).
        attrs.update((key, value) for key, value in known if value is not None)
        if m.streaming:
            attrs[semconv.CLIENT_CHUNK_OFFSETS_US] = m.chunk_offsets_us
            attrs[semconv.CLIENT_CHUNK_TOKENS] = m.chunk_tokens
            attrs[semconv.CLIENT_CHUNK_TOKEN_SOURCE] = m.chunk_token_source
            attrs[semconv.CLIENT_CHUNKS_TOTAL] = m.chunks_total
        if m.think_phase is not None:
            attrs[semconv.CLIENT_THINK_PHASE] = m.think_phase
        if m.output_phase_chunk is not None:
            attrs[semconv.CLIENT_OUTPUT_PHASE_CHUNK] = m.output_phase_chunk
        if m.error_type is not None:
            attrs[semconv.ERROR_TYPE] = m.error_type
            span.set_status(Status(StatusCode.ERROR, m.error_message))
        span.set_attributes(attrs)
        span.end(end_time=end_unix)


class _Instrumentation:
    """What the sync and async transports share: the tracer, the metrics and the request start."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: MeterProvider | None,
        provider_name: str,
        signals: str | None,
    ) -> None:
        self._signals = resolve_signals(signals)
        if self._signals == "metrics":
            tracer_provider = trace.NoOpTracerProvider()
        elif self._signals == "spans":
            meter_provider = NoOpMeterProvider()
        self._tracer = trace.get_tracer(
            semconv.INSTRUMENTATION_SCOPE, __version__, tracer_provider=tracer_provider
        )
        self._metrics = GenAIClientMetrics(meter_provider)
        self._provider_name = provider_name
        self._checked_others = False

    def begin(self, request: Request) -> _Recorder | None:
        """Start the span at T_submit and inject ``traceparent``; None if not an LLM call or on an
        instrumentation failure (then the request goes out uninstrumented)."""
        if request.method != "POST":
            return None
        api = api_for_path(request.url.path)
        if api is None:
            return None
        if not self._checked_others:
            self._checked_others = True
            try:
                warn_once_if_doubled(self._signals)
            except Exception:
                _logger.debug("otelbench: looking for other instrumentations failed", exc_info=True)
        try:
            holder = request.extensions.get(EXT_MEASUREMENT)
            m = holder if isinstance(holder, Measurement) else Measurement()
            m.api = api
            name, start, late = _request_attributes(
                request, api, _request_body(request), self._provider_name
            )
            metrics = self._metrics if self._metrics.live else None
            # T_submit. From here to the hand-off: span creation, traceparent injection and, for
            # a recording span, the suppression of HTTP instrumentation below (~30 µs with the
            # SDK, ~3 µs without); the ids are formatted after the hand-off.
            unix_ns = time.time_ns()
            mono_ns = time.perf_counter_ns()
            span = self._tracer.start_span(
                name, kind=SpanKind.CLIENT, attributes=start, start_time=unix_ns
            )
            ctx = span.get_span_context()
            propagated = ctx.is_valid
            if propagated:
                propagate.inject(request.headers, context=trace.set_span_in_context(span))
            m.submit_unix_ns, m.submit_mono_ns = unix_ns, mono_ns
            measure = span.is_recording() or holder is m or metrics is not None
            rec = _Recorder(span, m, measure, late, start, metrics)
            if propagated and span.is_recording():
                # This span is the request's HTTP client span: an HTTP instrumentation below
                # (opentelemetry-instrumentation-httpx on the inner transport) stays out of it,
                # so that the traceparent sent is this span's (until hand_off()).
                rec.suppressed = context.attach(
                    context.set_value(_SUPPRESS_HTTP_INSTRUMENTATION_KEY, True)
                )
            return rec
        except Exception:
            _logger.warning("otelbench: instrumentation failed starting a request", exc_info=True)
            return None


@dataclass(frozen=True)
class _Library:
    """One HTTP client library's classes, as a transport of that library meets them."""

    name: str
    request: type[Any]
    sync_transport: type[Any]
    async_transport: type[Any]
    sync_stream: type[Any]
    async_stream: type[Any]
    sync_class: str
    """The otelbench sync transport for this library (named in the mismatch error)."""
    async_class: str
    sync_default: type[Any]
    """The inner transport when none is given."""
    async_default: type[Any]


_HTTPX: Final = _Library(
    "httpx",
    httpx.Request,
    httpx.BaseTransport,
    httpx.AsyncBaseTransport,
    httpx.SyncByteStream,
    httpx.AsyncByteStream,
    "InstrumentedSyncTransport",
    "InstrumentedTransport",
    httpx.HTTPTransport,
    httpx.AsyncHTTPTransport,
)
_HTTPX2: Final = _Library(
    "httpx2",
    httpx2.Request,
    httpx2.BaseTransport,
    httpx2.AsyncBaseTransport,
    httpx2.SyncByteStream,
    httpx2.AsyncByteStream,
    "InstrumentedHttpx2SyncTransport",
    "InstrumentedHttpx2Transport",
    httpx2.HTTPTransport,
    httpx2.AsyncHTTPTransport,
)


def _other(lib: _Library) -> _Library:
    return _HTTPX2 if lib is _HTTPX else _HTTPX


def _check_request(request: object, lib: _Library, sync: bool) -> None:
    """A request of the other library is a programming error: one line that names the fix,
    before anything is sent (httpx and httpx2 assert on each other's streams)."""
    if isinstance(request, lib.request):
        return
    mine = lib.sync_class if sync else lib.async_class
    other = _other(lib)
    if isinstance(request, other.request):
        fix = other.sync_class if sync else other.async_class
        raise TypeError(
            f"otelbench: {mine} is a transport for {lib.name} clients, but got an {other.name} "
            f"request: give the {other.name} client otelbench.client.{fix} (or build it with "
            "otelbench.client.openai_http_client())"
        )
    raise TypeError(f"otelbench: {mine} takes {lib.name}.Request, got {type(request).__name__}")


def _check_inner(inner: object, lib: _Library, sync: bool) -> None:
    base = lib.sync_transport if sync else lib.async_transport
    if not isinstance(inner, base):
        mine = lib.sync_class if sync else lib.async_class
        raise TypeError(
            f"otelbench: {mine} wraps a {lib.name} transport ({lib.name}."
            f"{'' if sync else 'Async'}BaseTransport), got {type(inner).__module__}."
            f"{type(inner).__qualname__}"
        )


def _timed(rec: _Recorder, response: Any, stream_type: type[Any], proxy: type[Any]) -> Any:
    """The response's headers recorded, its body handed to ``proxy`` to time (or the request
    finished, when it has no stream of ``stream_type``)."""
    now = time.perf_counter_ns()
    try:
        rec.on_response(response, now)
        if isinstance(response.stream, stream_type):
            response.stream = proxy(response.stream, rec)
        else:
            rec.finish(now)
    except Exception:
        _logger.warning("otelbench: instrumentation failed on response headers", exc_info=True)
        rec.finish(now)
    return response


@contextmanager
def _sending(rec: _Recorder) -> Iterator[None]:
    """Around the inner transport's send: a failure before the response headers finishes the
    request (and is re-raised unchanged); either way the recorder is handed off."""
    try:
        yield
    except BaseException as exc:
        rec.finish(time.perf_counter_ns(), exc, after_headers=False)
        raise
    finally:
        rec.hand_off()


async def _send_async(instr: _Instrumentation, inner: Any, request: Any, lib: _Library) -> Any:
    _check_request(request, lib, sync=False)
    rec = instr.begin(request)
    if rec is None:
        return await inner.handle_async_request(request)
    with _sending(rec):
        response = await inner.handle_async_request(request)
    return _timed(rec, response, lib.async_stream, _AsyncStreamProxy)


def _send_sync(instr: _Instrumentation, inner: Any, request: Any, lib: _Library) -> Any:
    _check_request(request, lib, sync=True)
    rec = instr.begin(request)
    if rec is None:
        return inner.handle_request(request)
    with _sending(rec):
        response = inner.handle_request(request)
    return _timed(rec, response, lib.sync_stream, _SyncStreamProxy)


class _Transport:
    """What the four transports share: the inner transport (checked to be of the transport's own
    library) and the instrumentation."""

    _lib: ClassVar[_Library]
    _sync: ClassVar[bool]

    def __init__(
        self,
        transport: Any = None,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        provider_name: str = semconv.PROVIDER_OPENAI,
        signals: Signals | None = None,
    ) -> None:
        lib = self._lib
        if transport is None:
            transport = lib.sync_default() if self._sync else lib.async_default()
        _check_inner(transport, lib, sync=self._sync)
        self._inner = transport
        self._instr = _Instrumentation(tracer_provider, meter_provider, provider_name, signals)


class _AsyncTransport(_Transport):
    """An async transport of either library: its requests sent through :func:`_send_async`."""

    _sync = False

    async def handle_async_request(self, request: Any) -> Any:
        return await _send_async(self._instr, self._inner, request, self._lib)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SyncTransport(_Transport):
    """A sync transport of either library: its requests sent through :func:`_send_sync`."""

    _sync = True

    def handle_request(self, request: Any) -> Any:
        return _send_sync(self._instr, self._inner, request, self._lib)

    def close(self) -> None:
        self._inner.close()


class InstrumentedTransport(_AsyncTransport, httpx.AsyncBaseTransport):
    """Async httpx transport: one CLIENT span per LLM request, with per-chunk arrival times.

    Example::

        transport = InstrumentedTransport(tracer_provider=provider)
        client = httpx.AsyncClient(transport=transport)

    ``transport``: the inner transport (default ``httpx.AsyncHTTPTransport()``);
    ``tracer_provider``, ``meter_provider``: default the global ones (the GenAI client metrics,
    :mod:`otelbench.client.metrics`, are recorded only while a meter provider records);
    ``provider_name``: ``gen_ai.provider.name``
    (default ``openai``, the API the target speaks, as the GenAI conventions advise for
    OpenAI-compatible servers); ``signals``: ``all``, ``spans`` or ``metrics``
    (:mod:`otelbench.client.others`: beside another instrumentation of the ``openai`` SDK). An
    ``httpx2`` client takes :class:`InstrumentedHttpx2Transport`; an ``httpx2`` request here is a
    ``TypeError`` that says so.
    """

    _lib = _HTTPX


class InstrumentedHttpx2Transport(_AsyncTransport, httpx2.AsyncBaseTransport):
    """:class:`InstrumentedTransport` for ``httpx2`` clients (the ``openai`` SDK 3.x's own):
    the same spans, timing and metrics; the inner transport defaults to
    ``httpx2.AsyncHTTPTransport()``.

    Example::

        client = httpx2.AsyncClient(transport=InstrumentedHttpx2Transport())
    """

    _lib = _HTTPX2


class _StreamProxy:
    """Times each raw read of the inner stream; finishes the recorder at EOF, error or close.
    A stream of both libraries (each client checks its own library's stream type)."""

    __slots__ = ("_inner", "_rec")

    def __init__(self, inner: Any, rec: _Recorder) -> None:
        self._inner = inner
        self._rec = rec


@contextmanager
def _reading(rec: _Recorder) -> Iterator[None]:
    """Around a stream proxy's iteration: its end (EOF) or an error finishes the recorder; a
    consumer that stops iterating (``GeneratorExit``) leaves that to the proxy's close."""
    perf = time.perf_counter_ns
    try:
        yield
    except GeneratorExit:
        raise
    except BaseException as exc:
        rec.finish(perf(), exc)
        raise
    rec.finish(perf())


class _AsyncStreamProxy(_StreamProxy, httpx.AsyncByteStream, httpx2.AsyncByteStream):
    __slots__ = ()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        rec = self._rec
        perf = time.perf_counter_ns
        inner = self._inner
        with _reading(rec):
            async for chunk in inner:
                # An inner stream that knows when (each piece of) the block came off the socket
                # says so.
                marks = getattr(inner, RECEIVED_MARKS, None)
                if marks and len(marks) > 1:
                    start = 0
                    for end, received in marks:
                        rec.on_data(chunk[start:end], received)
                        start = end
                else:
                    rec.on_data(chunk, getattr(inner, RECEIVED_MONO_NS, None) or perf())
                yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._rec.finish(time.perf_counter_ns(), closed_early=True)


class InstrumentedSyncTransport(_SyncTransport, httpx.BaseTransport):
    """Sync httpx transport, the twin of :class:`InstrumentedTransport` (the inner transport
    defaults to ``httpx.HTTPTransport()``); an ``httpx2`` client takes
    :class:`InstrumentedHttpx2SyncTransport`.

    Example::

        client = httpx.Client(transport=InstrumentedSyncTransport(tracer_provider=provider))
    """

    _lib = _HTTPX


class InstrumentedHttpx2SyncTransport(_SyncTransport, httpx2.BaseTransport):
    """:class:`InstrumentedSyncTransport` for ``httpx2`` clients (``openai.DefaultHttpxClient``
    is one); the inner transport defaults to ``httpx2.HTTPTransport()``.

    Example::

        client = httpx2.Client(transport=InstrumentedHttpx2SyncTransport())
    """

    _lib = _HTTPX2


class _SyncStreamProxy(_StreamProxy, httpx.SyncByteStream, httpx2.SyncByteStream):
    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        rec = self._rec
        perf = time.perf_counter_ns
        with _reading(rec):
            for chunk in self._inner:
                rec.on_data(chunk, perf())
                yield chunk

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._rec.finish(time.perf_counter_ns(), closed_early=True)
