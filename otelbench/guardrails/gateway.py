"""``otelbench gateway``: an OpenAI-compatible streaming proxy with guardrails (draft 4.1.2).

The draft's Application Gateway SUT: the load generator talks to this proxy, which checks the API
key, runs the guardrail middleware (:mod:`~otelbench.guardrails.middleware`) and forwards to any
OpenAI-compatible ``--upstream``. Streaming passes through chunk by chunk: every body read from
the upstream is written to the client as it arrives (no parsing unless output filters apply).

* One SERVER span per request, ``otelbench.gateway.request``, child of the incoming
  ``traceparent``; the filter spans are its children. The upstream gets the client's
  ``traceparent`` unchanged, so the engine's server span stays a child of the client span (the
  query layer pairs them so); without one, it gets the gateway span's. The span times the
  upstream's headers, first body bytes and end (``otelbench.gateway.upstream.*``).
* Upstream errors: connection refused or failed → HTTP 502, no headers within the timeout → 504,
  both with an OpenAI-style error body; an upstream non-2xx answer passes through as it is. An
  upstream that dies mid-stream: the client gets an SSE error event and ``[DONE]`` (a clean end,
  not a cut connection), and the span ``error.type = upstream_stream_error``.
* Access (``docs/security.md``; :mod:`otelbench.collector.access`, shared with the receiver). It
  binds ``127.0.0.1`` unless given ``--host``. ``--api-key-file`` (or
  ``$OTELBENCH_GATEWAY_API_KEY``, or ``--api-key``): every request but ``GET /health`` needs
  ``Authorization: Bearer <key>`` (else 401 with ``WWW-Authenticate: Bearer`` and
  ``code: invalid_api_key``); the key is compared in constant time and not forwarded.
  ``--tls-cert``/``--tls-key`` serve HTTPS (uvicorn's TLS, 1.2 or later). A request body over
  ``--max-body-bytes`` (default 16 MiB) is refused with 413 before it reaches the filters or the
  upstream: at once when its ``Content-Length`` says so, else when the bytes read pass the limit.
* ``GET /health`` is answered by the gateway itself.

Example::

    # shell
    otelbench gateway --upstream http://127.0.0.1:8000 --config guardrails.yaml --port 9000

    # Python (tests, procedure 5.10): a gateway in a subprocess
    with GatewayServer("http://127.0.0.1:8000", config="guardrails.yaml") as gw:
        httpx.post(f"{gw.base_url}/v1/completions", json={...})

``python -m otelbench.guardrails.gateway --upstream URL [--config F] [--port N]`` runs it without
the CLI (what :class:`GatewayServer` starts); it prints ``LISTENING <host> <port>`` once bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import ssl
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Self

import httpx
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from otelbench import __version__, semconv
from otelbench.collector.access import bearer_matches, read_token, server_tls_context
from otelbench.errors import ConfigError, TargetUnreachable
from otelbench.guardrails.config import GuardrailConfig, load_config
from otelbench.guardrails.engine import Guardrails
from otelbench.guardrails.middleware import (
    SCOPE_CONTEXT,
    SCOPE_REPORT,
    GuardrailMiddleware,
    Message,
    Receive,
    RequestReport,
    Scope,
    Send,
)
from otelbench.guardrails.telemetry import Providers
from otelbench.sut.process import ManagedServer, check_port_free, free_port, with_overrides

__all__ = ["GatewayApp", "GatewayServer", "main", "serve_gateway"]

_log = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
SCOPE_GATEWAY = "otelbench.gateway.request"
DEFAULT_MAX_BODY_BYTES = 16 << 20
"""Largest request body the gateway accepts: 16 MiB (a long chat with images still fits)."""
_CHALLENGE = (b"www-authenticate", b'Bearer realm="otelbench"')


def _error(status: int, message: str, kind: str, code: str | int) -> tuple[int, bytes]:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return status, json.dumps(body).encode()


class _Record:
    """What one request through the gateway did (the gateway span's attributes)."""

    __slots__ = ("end_ns", "error_message", "error_type", "first_ns", "headers_ns", "reads",
                 "status", "t0_ns", "upstream_status")  # fmt: skip

    def __init__(self, t0_ns: int) -> None:
        self.t0_ns = t0_ns
        self.status: int | None = None
        self.upstream_status: int | None = None
        self.headers_ns: int | None = None
        self.first_ns: int | None = None
        self.end_ns: int | None = None
        self.reads = 0
        self.error_type: str | None = None
        self.error_message: str | None = None


class _Proxy:
    """The innermost ASGI app: forwards one request to the upstream and streams the answer."""

    def __init__(self, upstream: str, connect_timeout: float, read_timeout: float) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"bad upstream URL {upstream!r}: want http://host:port")
        self.upstream = upstream.rstrip("/")
        self._timeout = httpx.Timeout(
            connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout
        )
        self.client: httpx.AsyncClient | None = None

    def open(self) -> None:
        if self.client is None:
            self.client = httpx.AsyncClient(
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=1024),
                trust_env=False,
            )

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rec: _Record = scope[SCOPE_GATEWAY]
        chunks: list[bytes] = []
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body", False):
                break
        headers = [(k, v) for k, v in scope.get("headers", ()) if k not in _HOP_BY_HOP]
        if scope.get(_STRIP_AUTH):
            headers = [(k, v) for k, v in headers if k != b"authorization"]
        if not any(k == b"traceparent" for k, _ in headers):
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier, context=scope.get(SCOPE_CONTEXT))
            headers += [(k.encode(), v.encode()) for k, v in carrier.items()]
        url = self.upstream + scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        if self.client is None:
            self.open()
        assert self.client is not None
        request = self.client.build_request(
            scope["method"], url, headers=headers, content=b"".join(chunks)
        )
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            rec.error_type, rec.error_message = semconv.GATEWAY_ERROR_TIMEOUT, repr(exc)
            await _answer(send, *_error(504, f"upstream timed out: {exc!r}", "upstream_error", 504))
            return
        except httpx.HTTPError as exc:
            rec.error_type, rec.error_message = semconv.GATEWAY_ERROR_UNREACHABLE, repr(exc)
            await _answer(
                send, *_error(502, f"upstream unreachable: {exc!r}", "upstream_error", 502)
            )
            return
        rec.headers_ns = time.perf_counter_ns()
        rec.upstream_status = response.status_code
        out_headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP]
        if "content-length" in response.headers and not response.headers.get("content-encoding"):
            out_headers.append((b"content-length", response.headers["content-length"].encode()))
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": out_headers}
        )
        watcher = asyncio.ensure_future(_disconnected(receive)) if sse else None
        try:
            await self._pump(response, send, rec, sse, watcher)
        finally:
            if watcher is not None:
                watcher.cancel()
            await response.aclose()

    async def _pump(
        self,
        response: httpx.Response,
        send: Send,
        rec: _Record,
        sse: bool,
        watcher: asyncio.Future[None] | None,
    ) -> None:
        done = False  # an SSE stream ends with "data: [DONE]"; one that does not was cut
        last = b""
        try:
            async for block in response.aiter_raw():
                if rec.first_ns is None:
                    rec.first_ns = time.perf_counter_ns()
                rec.reads += 1
                if sse:
                    done = b"[DONE]" in last[-8:] + block
                    last = block
                await send({"type": "http.response.body", "body": block, "more_body": True})
                if watcher is not None and watcher.done():
                    rec.error_type = semconv.ERROR_TYPE_CANCELLED
                    rec.error_message = "the client went away mid-stream"
                    return
        except httpx.HTTPError as exc:
            await self._broken(send, rec, sse, f"upstream response broke off: {exc!r}")
            return
        if sse and not done and response.status_code == 200:
            await self._broken(send, rec, sse, "upstream response broke off before [DONE]")
            return
        rec.end_ns = time.perf_counter_ns()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _broken(send: Send, rec: _Record, sse: bool, message: str) -> None:
        """End a response whose upstream broke off: an SSE error event and ``[DONE]``."""
        rec.end_ns = time.perf_counter_ns()
        rec.error_type = semconv.GATEWAY_ERROR_STREAM
        rec.error_message = message
        tail = b""
        if sse:
            _, err = _error(502, message, "upstream_error", 502)
            tail = b"data: " + err + b"\n\ndata: [DONE]\n\n"
        await send({"type": "http.response.body", "body": tail, "more_body": False})


_STRIP_AUTH = "otelbench.gateway.strip_auth"


async def _disconnected(receive: Receive) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return


class _BodyTooLarge(Exception):
    """The request body passed ``max_body_bytes`` while it was read."""


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises :class:`_BodyTooLarge` once the body read passes ``limit``."""
    read = 0

    async def receive_limited() -> Message:
        nonlocal read
        message = await receive()
        if message["type"] == "http.request":
            read += len(message.get("body", b""))
            if read > limit:
                raise _BodyTooLarge
        return message

    return receive_limited


def _declared_length(scope: Scope) -> int | None:
    for k, v in scope.get("headers", ()):
        if k == b"content-length":
            return int(v) if v.isdigit() else None
    return None


async def _answer(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += extra or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class GatewayApp:
    """The gateway as an ASGI app: API key → gateway span → guardrails → proxy.

    Example::

        app = GatewayApp("http://127.0.0.1:8000", config=load_config("g.yaml"))
        # serve with any ASGI server; serve_gateway() uses uvicorn
    """

    def __init__(
        self,
        upstream: str,
        *,
        config: GuardrailConfig | None = None,
        api_key: str | bytes | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
        on_shutdown: Callable[[], None] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        if max_body_bytes <= 0:
            raise ConfigError(f"--max-body-bytes must be positive, got {max_body_bytes}")
        self.on_shutdown = on_shutdown
        """Called (in a worker thread) at lifespan shutdown, e.g. to flush the providers."""
        self.config = config if config is not None else GuardrailConfig()
        self.api_key = api_key.encode() if isinstance(api_key, str) else api_key
        self.api_key = self.api_key or None
        self.max_body_bytes = max_body_bytes
        self.proxy = _Proxy(upstream, connect_timeout, read_timeout)
        self.guardrails = Guardrails(
            self.config, tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        self.inner = GuardrailMiddleware(self.proxy, guardrails=self.guardrails)
        self._tracer = trace.get_tracer(
            semconv.INSTRUMENTATION_SCOPE_GUARDRAILS,
            __version__,
            tracer_provider=tracer_provider or trace.NoOpTracerProvider(),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path: str = scope["path"]
        if path == "/health":
            await _answer(send, 200, b"{}")
            return
        t0 = time.perf_counter_ns()
        carrier = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", ())
            if k in (b"traceparent", b"tracestate")
        }
        parent = _PROPAGATOR.extract(carrier) if carrier else None
        span = self._tracer.start_span(
            semconv.SPAN_GATEWAY_REQUEST,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": scope.get("method", ""), "url.path": path},
        )
        rec = _Record(t0)
        report = RequestReport()
        inner_scope = dict(scope)
        inner_scope[SCOPE_GATEWAY] = rec
        inner_scope[SCOPE_REPORT] = report
        inner_scope[SCOPE_CONTEXT] = trace.set_span_in_context(
            span, parent or otel_context.Context()
        )

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                rec.status = message.get("status")
            await send(message)

        try:
            if self.api_key is not None:
                if not self._authorized(scope):
                    rec.error_type = semconv.GATEWAY_ERROR_UNAUTHORIZED
                    await _answer(
                        send_wrapper,
                        *_error(401, "Incorrect API key provided.", "invalid_request_error",
                                "invalid_api_key"),
                        [_CHALLENGE],
                    )  # fmt: skip
                    return
                inner_scope[_STRIP_AUTH] = True
            declared = _declared_length(scope)
            if declared is not None and declared > self.max_body_bytes:
                raise _BodyTooLarge
            await self.inner(inner_scope, _limited(receive, self.max_body_bytes), send_wrapper)
        except _BodyTooLarge:
            if rec.status is None:
                message = f"the request body is over the {self.max_body_bytes}-byte limit"
                await _answer(
                    send_wrapper, *_error(413, message, "invalid_request_error", "body_too_large")
                )
        except Exception as exc:
            rec.error_type = type(exc).__name__
            rec.error_message = str(exc)
            _log.exception("gateway request failed")
            if rec.status is None:
                await _answer(send, *_error(500, "gateway error", "server_error", 500))
            raise
        finally:
            self._end_span(span, rec, report)

    def _authorized(self, scope: Scope) -> bool:
        assert self.api_key is not None
        for k, v in scope.get("headers", ()):
            if k == b"authorization":
                return bearer_matches(v, self.api_key)
        return False

    def _end_span(self, span: trace.Span, rec: _Record, report: RequestReport) -> None:
        try:
            if not span.is_recording():
                span.end()
                return
            t0 = rec.t0_ns

            def us(ns: int | None) -> int | None:
                return None if ns is None else (ns - t0) // 1000

            attrs: dict[str, AttributeValue] = {
                semconv.GATEWAY_UPSTREAM_URL: self.proxy.upstream,
                semconv.GATEWAY_UPSTREAM_BODY_READS: rec.reads,
                semconv.GUARDRAIL_REFUSED: report.blocked is not None,
            }
            for key, value in (
                (semconv.HTTP_RESPONSE_STATUS_CODE, rec.status),
                (semconv.GATEWAY_UPSTREAM_STATUS_CODE, rec.upstream_status),
                (semconv.GATEWAY_UPSTREAM_HEADERS_OFFSET_US, us(rec.headers_ns)),
                (semconv.GATEWAY_UPSTREAM_FIRST_BODY_OFFSET_US, us(rec.first_ns)),
                (semconv.GATEWAY_UPSTREAM_END_OFFSET_US, us(rec.end_ns)),
            ):
                if value is not None:
                    attrs[key] = value
            if report.blocked is not None:
                attrs[semconv.GUARDRAIL_REFUSED_STAGE] = report.blocked.stage.value
                attrs[semconv.GUARDRAIL_REFUSED_FILTER] = report.blocked.filter
            if report.output_added_us:
                attrs[semconv.GUARDRAIL_OUTPUT_ADDED_US] = report.output_added_us
            error_type = rec.error_type
            if error_type is None and rec.status is not None and rec.status >= 500:
                error_type = str(rec.status)
            if error_type is not None:
                attrs[semconv.ERROR_TYPE] = error_type
                span.set_status(Status(StatusCode.ERROR, rec.error_message or error_type))
            span.set_attributes(attrs)
            span.end()
        except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
            _log.debug("gateway span failed", exc_info=True)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.proxy.open()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.proxy.close()
                await self.guardrails.aclose()
                if self.on_shutdown is not None:
                    await asyncio.get_running_loop().run_in_executor(None, self.on_shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return


# ---------------------------------------------------------------------------------- serving
def serve_gateway(
    upstream: str,
    *,
    config_path: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    api_key: str | bytes | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 600.0,
    announce: bool = False,
    tls_cert: str | os.PathLike[str] | None = None,
    tls_key: str | os.PathLike[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> None:
    """Run the gateway with uvicorn until interrupted. ``announce`` prints ``LISTENING host
    port`` on stdout once the socket is bound (what :class:`GatewayServer` waits for).
    ``tls_cert``/``tls_key`` (PEM files) serve HTTPS.

    Raises :class:`ConfigError` for a bad configuration file, upstream URL, port or TLS files.
    """
    import uvicorn

    server_tls_context(tls_cert, tls_key)  # a bad certificate is a one-line error, before binding
    config = load_config(config_path) if config_path else GuardrailConfig()
    providers = Providers.from_env(config, service_name=semconv.SERVICE_GATEWAY)
    app = GatewayApp(
        upstream,
        config=config,
        api_key=api_key,
        tracer_provider=providers.tracer_provider,
        meter_provider=providers.meter_provider,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        on_shutdown=providers.shutdown,
        max_body_bytes=max_body_bytes,
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot serve the gateway on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    if announce:
        print(f"LISTENING {host} {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_keep_alive=60,
            backlog=2048,
            ssl_certfile=os.fspath(tls_cert) if tls_cert is not None else None,
            ssl_keyfile=os.fspath(tls_key) if tls_key is not None else None,
        )
    )
    try:
        # uvicorn re-raises SIGTERM/SIGINT once it has shut down: the providers are flushed at
        # lifespan shutdown (on_shutdown), before that
        server.run(sockets=[sock])
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m otelbench.guardrails.gateway``: the gateway without the typer CLI."""
    ap = argparse.ArgumentParser(description="otelbench gateway (guardrails + streaming proxy)")
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--config", default=None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--connect-timeout", type=float, default=10.0)
    ap.add_argument("--read-timeout", type=float, default=600.0)
    ap.add_argument("--api-key-file", default=None)
    ap.add_argument("--tls-cert", default=None)
    ap.add_argument("--tls-key", default=None)
    ap.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    args = ap.parse_args(argv)
    try:
        serve_gateway(
            args.upstream,
            config_path=args.config,
            host=args.host,
            port=args.port,
            api_key=read_token(args.api_key_file, env_var=semconv.ENV_GATEWAY_API_KEY),
            connect_timeout=args.connect_timeout,
            read_timeout=args.read_timeout,
            announce=True,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            max_body_bytes=args.max_body_bytes,
        )
    except ConfigError as exc:
        print(f"otelbench gateway: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


class GatewayServer(ManagedServer):
    """``otelbench gateway`` in a subprocess, for tests and benchmarks.

    Example::

        with GatewayServer("http://127.0.0.1:8000", config="guardrails.yaml",
                           otlp_traces_endpoint="http://127.0.0.1:4318/v1/traces") as gw:
            print(gw.base_url)        # http://127.0.0.1:<port>, add /v1/...

    ``port=0`` picks a free port. ``env`` adds to (``None`` removes from) the inherited
    environment (``OTEL_*`` variables are dropped first). It runs at the caller's priority by
    default (``niceness=0``): a benchmark of the gateway itself should not handicap it. ``start()``
    raises :class:`ConfigError` when the gateway refuses its arguments (the message is its one
    line) and :class:`TargetUnreachable` when it does not come up (with its log's last lines).
    With ``tls_cert``/``tls_key`` it serves HTTPS and :attr:`base_url` is ``https://``; the
    readiness check takes ``tls_cert`` as its trust root, so give it a self-signed certificate.
    """

    kind = "otelbench gateway"
    log_prefix = "otelbench-gateway-"

    def __init__(
        self,
        upstream: str,
        *,
        config: str | os.PathLike[str] | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        otlp_traces_endpoint: str | None = None,
        env: Mapping[str, str | None] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        read_timeout: float = 600.0,
        niceness: int = 0,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        super().__init__(log_path=log_path, niceness=niceness)
        self.tls_cert = tls_cert
        self.tls_key = tls_key
        self.max_body_bytes = max_body_bytes
        self.upstream = upstream
        self.config = config
        self.api_key = api_key
        self.host = host
        self.requested_port = port
        self.port = port
        self.otlp_traces_endpoint = otlp_traces_endpoint
        self.env_overrides = dict(env or {})
        self.read_timeout = read_timeout

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls_cert is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def prepare(self) -> None:
        if self.requested_port:
            check_port_free(self.host, self.requested_port, "the gateway")
        self.port = self.requested_port or free_port(self.host)

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "otelbench.guardrails.gateway", "--upstream", self.upstream]
        cmd += ["--host", self.host, "--port", str(self.port)]
        cmd += ["--read-timeout", str(self.read_timeout)]
        cmd += ["--max-body-bytes", str(self.max_body_bytes)]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        if self.tls_cert is not None:
            cmd += ["--tls-cert", os.fspath(self.tls_cert)]
        if self.tls_key is not None:
            cmd += ["--tls-key", os.fspath(self.tls_key)]
        return cmd

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["PYTHONUNBUFFERED"] = "1"
        if self.otlp_traces_endpoint:
            env[semconv.ENV_OTLP_TRACES_ENDPOINT] = self.otlp_traces_endpoint
        if self.api_key:
            env[semconv.ENV_GATEWAY_API_KEY] = self.api_key
        else:
            env.pop(semconv.ENV_GATEWAY_API_KEY, None)
        return with_overrides(env, self.env_overrides)

    def is_ready(self, client: httpx.Client) -> bool:
        if self.tls_cert is None:
            return client.get("/health").status_code == 200
        verify = ssl.create_default_context(cafile=os.fspath(self.tls_cert))
        with httpx.Client(base_url=self.base_url, verify=verify, trust_env=False) as tls:
            return tls.get("/health").status_code == 200

    def start(self, timeout: float = 30.0) -> Self:
        """Spawn the gateway and wait for ``/health``; its one-line refusal is a ConfigError."""
        try:
            return super().start(timeout)
        except TargetUnreachable:
            refusal = next(
                (
                    line.removeprefix(_ERROR_PREFIX)
                    for line in reversed(self.log_tail())
                    if line.startswith(_ERROR_PREFIX)
                ),
                None,
            )
            if refusal is not None:
                raise ConfigError(refusal) from None
            raise


_ERROR_PREFIX = "otelbench gateway: error: "


if __name__ == "__main__":
    main()
