"""The high-level client the load generator uses: one request in, one timed result out.

Example::

    from otelbench.client import AsyncLLMClient, CompletionRequest

    async with AsyncLLMClient("http://127.0.0.1:8000", tracer_provider=provider) as client:
        result = await client.complete(
            CompletionRequest(api="completions", model="tiny", prompt="Hello", max_tokens=64)
        )
    if result.ok:
        print(result.ttft_us, result.chunk_offsets_us, result.chunk_tokens)
    else:
        print(result.error_type, result.error_message)

``complete()`` never raises for what the target does (HTTP errors, refused connections, timeouts,
malformed or cut streams): the result carries ``ok=False``, ``error_type`` (the span's
``error.type``) and a one-line ``error_message``. A bad base URL or request raises
:class:`~otelbench.errors.ConfigError`; cancelling the calling task cancels the request.

The result is built from the :class:`~otelbench.client.transport.Measurement` the instrumented
transport fills in for the span, so the result and the span always hold the same numbers.

**Continuous usage stats.** A streamed request asks for
``stream_options: {"include_usage": true, "continuous_usage_stats": true}`` so that vLLM puts
``usage`` on every chunk and chunk token counts are exact. A server that rejects this with HTTP 400
gets the same request once more without ``continuous_usage_stats``; if that retry is not rejected,
the client remembers it and leaves the option out from then on (chunk tokens then fall back to one
per chunk). The rejected first attempt is a real request and keeps its own span
(``error.type=400``).
A ``stream_options`` given in ``extra_body`` is sent as it is, with no retry.

Requests go out with ``Accept-Encoding: identity`` (the transport times raw bytes), straight to
the instrumented transport: proxy environment variables are not read.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar, cast

import httpx
from opentelemetry import trace

from otelbench import __version__, semconv
from otelbench.client._http11 import AsyncHTTP11Transport
from otelbench.client.transport import (
    EXT_ATTRIBUTES,
    EXT_BODY,
    EXT_MEASUREMENT,
    InstrumentedSyncTransport,
    InstrumentedTransport,
    Measurement,
    _error_type,
)
from otelbench.errors import ConfigError
from otelbench.model.jsonvalue import JsonObject, JsonValue

__all__ = [
    "DEFAULT_TIMEOUT",
    "AsyncLLMClient",
    "CompletionRequest",
    "CompletionResult",
    "LLMClient",
]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""10 s to connect; 600 s for any single read, write or wait for a pooled connection."""


@dataclass(frozen=True)
class CompletionRequest:
    """One request to ``/v1/completions`` (``api="completions"``, needs ``prompt``) or
    ``/v1/chat/completions`` (``api="chat"``, needs ``messages``).

    ``extra_body`` is merged into the JSON body last (``ignore_eos``, ``seed``,
    ``stream_options`` …);
    ``attributes`` are set on the request's span (run id, request index, class, schedule lag).

    Example::

        CompletionRequest(api="chat", model="tiny", messages=[{"role": "user", "content": "Hi"}],
                          max_tokens=32, extra_body={"ignore_eos": True},
                          attributes={semconv.REQUEST_INDEX: 7})
    """

    api: Literal["completions", "chat"]
    model: str
    prompt: str | list[int] | None = None
    messages: list[dict[str, str]] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stream: bool = True
    extra_body: Mapping[str, JsonValue] = field(default_factory=dict)
    attributes: Mapping[str, str | int | float | bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api == "completions":
            if self.prompt is None:
                raise ConfigError("a completions request needs a prompt")
        elif self.api == "chat":
            if not self.messages:
                raise ConfigError("a chat request needs messages")
        else:
            raise ConfigError(f"unknown api {self.api!r}: use 'completions' or 'chat'")
        if not self.model:
            raise ConfigError("a request needs a model name")

    def body(self, *, continuous_usage: bool = True) -> JsonObject:
        """The JSON body to send."""
        body: JsonObject = {"model": self.model}
        # Token ids and messages are JSON as they are: cast, not copied on every request (mypy
        # holds a list[int] apart from a list[JsonValue] only because either could be appended to).
        if self.api == "completions":
            body["prompt"] = cast(JsonValue, self.prompt)
        else:
            body["messages"] = cast(JsonValue, self.messages)
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body["stream"] = self.stream
        if self.stream:
            options: JsonObject = {"include_usage": True}
            if continuous_usage:
                options["continuous_usage_stats"] = True
            body["stream_options"] = options
        body.update(self.extra_body)
        return body


@dataclass
class CompletionResult:
    """The outcome and timing of one request. Offsets are integer µs since T_submit (monotonic).

    ``ttft_us`` is the first *content* chunk (draft 5.1.3.1; the whole body for a non-streamed
    response); ``first_event_offset_us`` the first SSE ``data:`` event of any kind;
    ``chunk_offsets_us``/``chunk_tokens`` one entry per recorded chunk (see
    :mod:`otelbench.client.openai` for which chunks and how tokens are counted).
    """

    ok: bool
    error_type: str | None
    error_message: str | None
    status_code: int | None
    submit_unix_ns: int
    submit_mono_ns: int
    first_event_offset_us: int | None
    ttft_us: int | None
    chunk_offsets_us: list[int]
    chunk_tokens: list[int]
    end_offset_us: int | None
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    finish_reason: str | None
    response_id: str | None
    trace_id: str | None
    """32 hex digits of the request's span, or None without a tracer provider."""
    span_id: str | None
    chunks_total: int = 0
    chunk_token_source: str | None = None
    think_phase: str | None = None
    """``ended`` / ``unterminated`` for a reasoning model's think phase; None: there was none."""
    output_phase_chunk: int | None = None
    """Index in ``chunk_offsets_us`` of the first output-phase chunk (ADR-0005's TTOT)."""

    @classmethod
    def from_measurement(cls, m: Measurement, exc: BaseException | None = None) -> CompletionResult:
        """Build the result from the transport's measurement (and the exception, if any)."""
        error_type, message = m.error_type, m.error_message
        if exc is not None and error_type is None:
            error_type, message = _error_type(exc, m.status_code is not None)
        if error_type is None and not m.finished:
            error_type, message = "instrumentation", "the request was not measured"
        return cls(
            ok=error_type is None,
            error_type=error_type,
            error_message=message,
            status_code=m.status_code,
            submit_unix_ns=m.submit_unix_ns,
            submit_mono_ns=m.submit_mono_ns,
            first_event_offset_us=m.first_event_offset_us,
            ttft_us=m.ttft_us,
            chunk_offsets_us=m.chunk_offsets_us,
            chunk_tokens=m.chunk_tokens,
            end_offset_us=m.end_offset_us,
            input_tokens=m.input_tokens,
            output_tokens=m.output_tokens,
            cached_tokens=m.cached_tokens,
            finish_reason=m.finish_reason,
            response_id=m.response_id,
            trace_id=m.trace_id,
            span_id=m.span_id,
            chunks_total=m.chunks_total,
            chunk_token_source=m.chunk_token_source,
            think_phase=m.think_phase,
            output_phase_chunk=m.output_phase_chunk,
        )


def _api_base(base_url: str) -> str:
    """``http(s)://host[:port][/prefix]/v1`` from a base URL given with or without ``/v1``."""
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ConfigError(f"bad base URL {base_url!r}: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"bad base URL {base_url!r}: expected http(s)://host[:port], e.g. http://127.0.0.1:8000"
        )
    if url.query or url.fragment:
        raise ConfigError(f"bad base URL {base_url!r}: no query or fragment, please")
    path = url.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return str(url.copy_with(path=path))


TransportT = TypeVar("TransportT")


class _Common(Generic[TransportT]):
    """What both clients share: the constructor, the URLs, headers and timeouts, and how a
    request is built and continuous usage learned; each client adds its instrumented
    transport (:meth:`_instrumented`) and how it sends a request."""

    def __init__(
        self,
        base_url: str,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        max_connections: int = 1024,
        headers: Mapping[str, str] | None = None,
        provider_name: str = semconv.PROVIDER_OPENAI,
    ) -> None:
        base = _api_base(base_url)
        if max_connections < 1:
            raise ConfigError(f"max_connections must be at least 1, not {max_connections}")
        self._limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        # Plain-HTTP targets never use TLS: skip loading the CA bundle (~100 ms at start-up).
        self._verify: ssl.SSLContext | bool = (
            httpx.create_ssl_context() if base.startswith("https:") else False
        )
        self._max_connections = max_connections
        self._urls = {
            "completions": httpx.URL(base + "/completions"),
            "chat": httpx.URL(base + "/chat/completions"),
        }
        self._headers = httpx.Headers(
            {
                "accept": "application/json, text/event-stream",
                "accept-encoding": "identity",
                "user-agent": f"otelbench/{__version__}",
                **(headers or {}),
            }
        )
        t = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._timeout = t.as_dict()
        self._continuous_usage: bool | None = None
        """None: not known yet; True: accepted; False: rejected with HTTP 400 (see module doc)."""
        self._transport = self._instrumented(tracer_provider, provider_name)

    def _instrumented(
        self, tracer_provider: trace.TracerProvider | None, provider_name: str
    ) -> TransportT:
        """The client's instrumented transport (over its connection pool)."""
        raise NotImplementedError

    def _asks_continuous(self, req: CompletionRequest) -> bool:
        return (
            req.stream
            and self._continuous_usage is not False
            and "stream_options" not in req.extra_body
        )

    def _request(
        self, req: CompletionRequest, continuous: bool
    ) -> tuple[httpx.Request, Measurement]:
        body = req.body(continuous_usage=continuous)
        m = Measurement()
        ext = {
            EXT_MEASUREMENT: m,
            EXT_BODY: body,
            EXT_ATTRIBUTES: req.attributes,
            "timeout": self._timeout,
        }
        request = httpx.Request(
            "POST", self._urls[req.api], headers=self._headers, json=body, extensions=ext
        )
        return request, m

    def _learn(self, asked: bool, first: CompletionResult) -> bool:
        """After a request that asked for continuous usage: True if it must be retried without."""
        if not asked:
            return False
        if first.status_code == 400 and self._continuous_usage is None:
            return True
        if first.ok:
            self._continuous_usage = True
        return False

    def _learn_retry(self, retry: CompletionResult) -> None:
        if retry.status_code != 400 and retry.status_code is not None:
            self._continuous_usage = False


class AsyncLLMClient(_Common[InstrumentedTransport]):
    """Async OpenAI-compatible client with one instrumented span per request.

    Requests go straight to an :class:`InstrumentedTransport` (no ``httpx.AsyncClient`` layer: no
    cookies, redirects or auth hooks) over the lean HTTP/1.1 transport of
    :mod:`otelbench.client._http11` (why: see there; ``https://`` targets use
    ``httpx.AsyncHTTPTransport``). ``headers`` are added to every request (e.g.
    ``{"authorization": "Bearer ..."}``).

    Example::

        async with AsyncLLMClient("http://127.0.0.1:8000/v1") as client:
            result = await client.complete(CompletionRequest(api="chat", model="m",
                                                             messages=[{"role": "user",
                                                                        "content": "Hi"}]))
    """

    def _instrumented(
        self, tracer_provider: trace.TracerProvider | None, provider_name: str
    ) -> InstrumentedTransport:
        return InstrumentedTransport(
            AsyncHTTP11Transport(max_connections=self._max_connections, verify=self._verify),
            tracer_provider=tracer_provider,
            provider_name=provider_name,
        )

    async def complete(self, req: CompletionRequest) -> CompletionResult:
        """Send one request, read its whole response, return its timing and outcome."""
        asked = self._asks_continuous(req)
        result = await self._once(req, asked)
        if self._learn(asked, result):
            retry = await self._once(req, False)
            self._learn_retry(retry)
            return retry
        return result

    async def _once(self, req: CompletionRequest, continuous: bool) -> CompletionResult:
        request, m = self._request(req, continuous)
        try:
            response = await self._transport.handle_async_request(request)
            stream = response.stream
            assert isinstance(stream, httpx.AsyncByteStream)
            try:
                async for _ in stream:
                    pass
            finally:
                await stream.aclose()
        except httpx.HTTPError as exc:
            return CompletionResult.from_measurement(m, exc)
        return CompletionResult.from_measurement(m)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncLLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class LLMClient(_Common[InstrumentedSyncTransport]):
    """The blocking twin of :class:`AsyncLLMClient` (thread-safe; one request per call).

    Example::

        with LLMClient("http://127.0.0.1:8000") as client:
            result = client.complete(CompletionRequest(api="completions", model="m", prompt="Hi"))
    """

    def _instrumented(
        self, tracer_provider: trace.TracerProvider | None, provider_name: str
    ) -> InstrumentedSyncTransport:
        # httpx's own pool: fine for a few threads (for many, see otelbench.client._http11).
        return InstrumentedSyncTransport(
            httpx.HTTPTransport(limits=self._limits, verify=self._verify),
            tracer_provider=tracer_provider,
            provider_name=provider_name,
        )

    def complete(self, req: CompletionRequest) -> CompletionResult:
        """Send one request, read its whole response, return its timing and outcome."""
        asked = self._asks_continuous(req)
        result = self._once(req, asked)
        if self._learn(asked, result):
            retry = self._once(req, False)
            self._learn_retry(retry)
            return retry
        return result

    def _once(self, req: CompletionRequest, continuous: bool) -> CompletionResult:
        request, m = self._request(req, continuous)
        try:
            response = self._transport.handle_request(request)
            stream = response.stream
            assert isinstance(stream, httpx.SyncByteStream)
            try:
                for _ in stream:
                    pass
            finally:
                stream.close()
        except httpx.HTTPError as exc:
            return CompletionResult.from_measurement(m, exc)
        return CompletionResult.from_measurement(m)

    def close(self) -> None:
        """Close the connection pool."""
        self._transport.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
