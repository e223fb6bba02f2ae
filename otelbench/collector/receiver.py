"""The embedded collector: an OTLP/HTTP receiver committing every accepted batch to the span store.

::

    with Receiver("run.duckdb", port=0) as receiver:       # binds 127.0.0.1 on a free port
        endpoint = f"http://127.0.0.1:{receiver.port}/v1/traces"
        ...                                                # exporters send OTLP/HTTP here
    print(receiver.stats().spans_accepted)

**Protocol** (OTLP/HTTP 1.x): ``POST /v1/traces`` and ``POST /v1/metrics`` with ``Content-Type:
application/x-protobuf`` or ``application/json``, optionally ``Content-Encoding: gzip`` (or
``deflate``), ``Content-Length`` or chunked. Answers:

====  =========================================================================================
200   the batch is committed (durably: :class:`~otelbench.store.SpanStore` returns after the
      WAL ``fdatasync``); body: an empty ``Export*ServiceResponse`` in the request's encoding,
      with ``partial_success`` when some spans or points could not be stored
400   malformed payload (bad protobuf or JSON, bad ids, corrupt or truncated gzip), or a bad
      ``Content-Length``; body: ``google.rpc.Status`` in the request's encoding
411   neither ``Content-Length`` nor chunked transfer encoding
413   the body is over ``max_body_bytes``, or inflates to more than ``max_decompressed_bytes``
415   another Content-Type or Content-Encoding
404   any other path; 405 any other method on the two paths
401   a bearer token is required (``auth_token``) and the request has none or a wrong one;
      ``WWW-Authenticate: Bearer``. Checked on every route before anything else but the rate
429   the client's rate limit (``rate_limit``) is exhausted; ``Retry-After`` says when to retry
====  =========================================================================================

**Access** (``docs/security.md``): the receiver binds ``127.0.0.1`` unless given a host; a
bearer token, TLS (``tls``, TLS 1.2 or later) and a per-client-IP rate limit are opt-in. Both
checks run in ``parse_request``, the path every request takes whatever its method and route.

``GET /otelbench/stats`` answers the receiver's counters as JSON (:meth:`ReceiverStats.as_dict`),
including spans stored per ``service.name`` — how the load generator learns that a target's
spans have arrived without opening the store, which only the receiver's process may do.

``POST /otelbench/snapshot`` (a DuckDB store only; clients on this host only, 403 otherwise)
copies the committed store beside it (:meth:`~otelbench.store.SpanStore.snapshot`) and answers
``{"path": ..., "taken_unix_ns": ...}``: how ``otelbench report`` and ``otelbench watch`` read a
store while this process writes it. The receiver announces the endpoint beside the store while it
runs (:meth:`~otelbench.store.SpanStore.announce_writer`); readers find it there. It takes the
same request path as every route, so the bearer token and the rate limit apply to it too.

====  =========================================================================================
503   the store could not commit the batch (``Retry-After: 1``; OTLP exporters retry)
====  =========================================================================================

Nothing a client sends can stop the receiver: every request is answered or its connection closed,
and counted in :meth:`Receiver.stats` by outcome.

**Threads.** One thread per connection (``ThreadingHTTPServer``) decodes; the inserts are serialised
by the store's lock on its one DuckDB connection (DuckDB allows one writer process). ``stop()``
stops accepting, closes idle keep-alive connections, lets in-flight requests finish (their batches
are committed and answered), then closes the store.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import signal
import socket
import ssl
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Final, TypedDict, cast

from google.rpc import code_pb2  # type: ignore[import-untyped]

from otelbench import __version__
from otelbench.collector.access import RateLimit, TokenBuckets, bearer_matches, retry_after_s
from otelbench.collector.otlp import (
    Encoding,
    MetricBatch,
    OTLPDecodeError,
    PayloadTooLarge,
    Signal,
    TraceBatch,
    decode_metrics,
    decode_traces,
    decompress,
    encode_export_response,
    encode_status,
    encoding_for,
)
from otelbench.errors import CollectorError, StoreError
from otelbench.lifecycle import Stops
from otelbench.store import SpanStore
from otelbench.store.clickhouse import METRICS_NOT_STORED
from otelbench.store.writers import SpanWriter, open_span_writer

STATS_PATH: Final = "/otelbench/stats"
SNAPSHOT_PATH: Final = "/otelbench/snapshot"

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_PORT",
    "STORE_ENV",
    "Receiver",
    "ReceiverCounts",
    "ReceiverStats",
    "serve",
]

_log = logging.getLogger("otelbench.collector")

DEFAULT_PORT: Final = 4318
"""The OTLP/HTTP port."""
STORE_ENV: Final = "OTELBENCH_COLLECTOR_STORE"
"""``python -m otelbench.collector``'s store when ``--store`` is not given (how a parent process
passes a URL with a password: it stays out of ``ps``)."""
DEFAULT_MAX_BODY_BYTES: Final = 16 << 20
"""Largest request body accepted as sent (compressed or not): 16 MiB."""
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 << 20
"""Largest body accepted after decompression (a gzip bomb stops here): 64 MiB."""
STORE_MEMORY_EVERY_S: Final = 1.0
""":attr:`ReceiverStats.store_memory_bytes` is read at most this often (a query: ~1 ms)."""


# --------------------------------------------------------------------------------------------
# Routes: one registered per signal
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Route:
    signal: Signal
    decode: Callable[[bytes, Encoding], TraceBatch | MetricBatch]
    write: Callable[[SpanWriter, Any], int]


def _write_traces(store: SpanWriter, batch: TraceBatch) -> int:
    return store.insert_spans(batch.spans)


def _write_metrics(store: SpanWriter, batch: MetricBatch) -> int:
    return store.insert_metrics(batch.gauge, batch.sum, batch.histogram)


_ROUTES: Final[dict[str, _Route]] = {
    Signal.TRACES.value: _Route(Signal.TRACES, decode_traces, _write_traces),
    Signal.METRICS.value: _Route(Signal.METRICS, decode_metrics, _write_metrics),
}


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------
class ReceiverCounts(TypedDict):
    """:class:`ReceiverStats` as JSON: the body of ``GET /otelbench/stats``."""

    requests_accepted: int
    spans_accepted: int
    spans_rejected: int
    metric_points_accepted: int
    metric_points_rejected: int
    rejected: dict[str, int]
    spans_by_service: dict[str, int]
    store_memory_bytes: int | None


@dataclass(frozen=True, slots=True)
class ReceiverStats:
    """What the receiver has done since it started.

    ``rejected`` counts refused requests by reason: ``malformed`` (400), ``too_large`` (413),
    ``unsupported_media_type`` (415), ``length_required`` (411), ``not_found`` (404),
    ``method_not_allowed`` (405), ``bad_http`` (unparseable HTTP), ``client_error`` (the client
    hung up or timed out mid-body), ``store_error`` (503), ``internal_error`` (500, a bug),
    ``unauthorized`` (401, no or a wrong bearer token), ``rate_limited`` (429, the client's
    token bucket was empty), ``tls_error`` (a failed TLS handshake) and ``forbidden`` (403, a
    snapshot asked for from another host).
    ``spans_rejected`` / ``metric_points_rejected`` count items left out of accepted requests
    (``partial_success``).
    """

    requests_accepted: int = 0
    spans_accepted: int = 0
    spans_rejected: int = 0
    metric_points_accepted: int = 0
    metric_points_rejected: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    spans_by_service: dict[str, int] = field(default_factory=dict)
    """Stored spans per ``service.name``: lets a load generator see whether, and how many,
    server spans have arrived for its run without opening the store (one writer process)."""
    store_memory_bytes: int | None = None
    """The memory the DuckDB store's buffer manager holds (its cached blocks, up to the writer's
    memory limit: :meth:`~otelbench.store.SpanStore.memory_bytes`), read at most once a second;
    None for a ClickHouse store or a closed one. The part of the collector's RSS that grows with
    the store, by design, until that limit."""

    def as_dict(self) -> ReceiverCounts:
        """A JSON-ready dict: the fields by name, in order (:class:`ReceiverCounts` declares the
        same ones), the dicts copied."""
        return cast(ReceiverCounts, asdict(self))


class _Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._accepted: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._services: Counter[str] = Counter()

    def accepted(
        self, signal: Signal, stored: int, left_out: int, services: Counter[str] | None = None
    ) -> None:
        with self._lock:
            if services:
                self._services.update(services)
            self._accepted["requests"] += 1
            self._accepted[f"{signal.name}_stored"] += stored
            self._accepted[f"{signal.name}_left_out"] += left_out

    def rejected(self, reason: str) -> None:
        with self._lock:
            self._rejected[reason] += 1

    def snapshot(self) -> ReceiverStats:
        with self._lock:
            a = self._accepted
            return ReceiverStats(
                requests_accepted=a["requests"],
                spans_accepted=a["TRACES_stored"],
                spans_rejected=a["TRACES_left_out"],
                metric_points_accepted=a["METRICS_stored"],
                metric_points_rejected=a["METRICS_left_out"],
                rejected=dict(sorted(self._rejected.items())),
                spans_by_service=dict(sorted(self._services.items())),
            )


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------
class _BodyError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"otelbench-collector/{__version__}"
    sys_version = ""
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s: %(explain)s\n"
    server: _Server

    # ---------------------------------------------------------------- connection life cycle
    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.receiver.socket_timeout)
        self.server.receiver._track(self, busy=False)  # stop() ends a stalled handshake too
        if isinstance(self.connection, ssl.SSLSocket):
            # here, in the connection's thread, not in the accept loop (a client that stalls its
            # handshake would hold up every other); a failure is counted as tls_error
            try:
                self.connection.do_handshake()
            except BaseException:
                self.server.receiver._untrack(self)  # finish() does not run when setup() fails
                raise

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.receiver._untrack(self)

    def parse_request(self) -> bool:
        # the request line has arrived: from here the request is in flight
        if not self.server.receiver._track(self, busy=True):
            self.close_connection = True
            return False
        return super().parse_request() and self._admitted()

    def _admitted(self) -> bool:
        """The checks every request passes before its route: the client's rate, then its token.

        A refusal is answered here (429 with ``Retry-After``, or 401 with ``WWW-Authenticate``)
        and counted as ``rate_limited`` or ``unauthorized``; the route never runs.
        """
        receiver = self.server.receiver
        if receiver._buckets is not None:
            wait_s = receiver._buckets.take(str(self.client_address[0]))
            if wait_s > 0.0:
                self._discard_body_or_close()
                limit = receiver._buckets.limit
                self._refuse(
                    429,
                    "rate_limited",
                    code_pb2.RESOURCE_EXHAUSTED,
                    f"over {limit.per_s:g} requests/s (burst {limit.burst}) from this client",
                    self._request_encoding(),
                    retry_after=retry_after_s(wait_s),
                )
                return False
        token = receiver._auth_token
        if token is not None and not bearer_matches(self.headers.get("Authorization"), token):
            self._discard_body_or_close()
            self._refuse(
                401,
                "unauthorized",
                code_pb2.UNAUTHENTICATED,
                "missing or wrong bearer token (send Authorization: Bearer <token>)",
                self._request_encoding(),
                challenge='Bearer realm="otelbench"',
            )
            return False
        return True

    def _request_encoding(self) -> Encoding | None:
        """The encoding the request declares (for an error body in kind), if it is OTLP's."""
        try:
            return encoding_for(self.headers.get("Content-Type"))
        except OTLPDecodeError:
            return None

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:
            self.server.receiver._track(self, busy=False)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # only http.server's own protocol errors come here (bad request line, 501, 414 …)
        self.server.receiver._counters.rejected("bad_http")
        self.close_connection = True
        super().send_error(code, message, explain)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s - %s", self.address_string(), format % args)

    # ---------------------------------------------------------------- methods
    def do_POST(self) -> None:
        try:
            self._post()
        except OSError:
            raise  # the connection failed: _Server.handle_error counts it
        except Exception:  # noqa: BLE001 - the collector answers every request, whatever happens
            # a bug: answer 500 rather than drop the connection (the exporter would retry)
            _log.exception("internal error while handling %s %s", self.command, self.path)
            self.close_connection = True
            self._refuse(
                500, "internal_error", code_pb2.INTERNAL, "internal error in the collector", None
            )

    def _post(self) -> None:
        receiver = self.server.receiver
        if self.path.split("?", 1)[0] == SNAPSHOT_PATH:
            self._discard_body_or_close()
            self._snapshot()
            return
        route = _ROUTES.get(self.path.split("?", 1)[0])
        if route is None:
            self._discard_body_or_close()
            self._refuse(
                404, "not_found", code_pb2.NOT_FOUND, f"no OTLP endpoint at {self.path}", None
            )
            return
        encoding: Encoding | None = None
        try:
            encoding = encoding_for(self.headers.get("Content-Type"))
            raw = self._read_body(receiver.max_body_bytes)
            body = decompress(
                raw, self.headers.get("Content-Encoding"), receiver.max_decompressed_bytes
            )
            batch = route.decode(body, encoding)
        except OTLPDecodeError as err:
            if err.http_status != 400:
                self.close_connection = True  # the body may be unread
            code = (
                code_pb2.RESOURCE_EXHAUSTED
                if isinstance(err, PayloadTooLarge)
                else code_pb2.INVALID_ARGUMENT
            )
            self._refuse(err.http_status, err.reason, code, str(err), encoding)
            return
        except _BodyError as err:
            self.close_connection = True
            self._refuse(err.status, err.reason, code_pb2.INVALID_ARGUMENT, str(err), encoding)
            return
        except OSError as err:  # the client went away or timed out mid-body
            receiver._counters.rejected("client_error")
            self.close_connection = True
            _log.debug("dropped a request from %s: %s", self.address_string(), err)
            return
        try:
            stored = route.write(receiver.writer, batch)
        except StoreError as err:
            _log.warning("could not store a %s batch: %s", route.signal.name.lower(), err)
            self._refuse(
                503, "store_error", code_pb2.UNAVAILABLE, str(err), encoding, retry_after=1
            )
            return
        services = (
            Counter(row.service_name for row in batch.spans)
            if isinstance(batch, TraceBatch)
            else None
        )
        # a store may keep no items of a kind (a ClickHouse store: no metric points): rejected
        left_out = batch.rejected + batch.accepted - stored
        message = batch.error_message or (METRICS_NOT_STORED if stored < batch.accepted else "")
        receiver._counters.accepted(route.signal, stored, left_out, services)
        reply = encode_export_response(route.signal, encoding, left_out, message)
        self._send(200, reply, encoding.value)

    def _snapshot(self) -> None:
        """Copy the committed store for a reader on this host and answer where it is."""
        writer = self.server.receiver.writer
        if not _is_loopback(str(self.client_address[0])):
            message = "snapshots are served to clients on the collector's host only"
            self._refuse(403, "forbidden", code_pb2.PERMISSION_DENIED, message, None)
            return
        if not isinstance(writer, SpanStore):
            message = f"no snapshots of {writer.path}: only a DuckDB store has them"
            self._refuse(404, "not_found", code_pb2.NOT_FOUND, message, None)
            return
        try:
            snapshot = writer.snapshot()
        except StoreError as err:
            _log.warning("could not snapshot the store: %s", err)
            self._refuse(503, "store_error", code_pb2.UNAVAILABLE, str(err), None, retry_after=1)
            return
        answer = {"path": str(snapshot.path), "taken_unix_ns": snapshot.taken_unix_ns}
        self._send(200, json.dumps(answer).encode(), "application/json")

    def _not_allowed(self) -> None:
        self._discard_body_or_close()
        path = self.path.split("?", 1)[0]
        if path in _ROUTES or path == SNAPSHOT_PATH:
            self._refuse(
                405,
                "method_not_allowed",
                code_pb2.UNIMPLEMENTED,
                f"{self.command} {path}: use POST",
                None,
            )
        else:
            self._refuse(404, "not_found", code_pb2.NOT_FOUND, f"no OTLP endpoint at {path}", None)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == STATS_PATH:
            body = json.dumps(self.server.receiver.stats().as_dict()).encode()
            self._send(200, body, "application/json")
        else:
            self._not_allowed()

    do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    # ---------------------------------------------------------------- bodies
    def _read_body(self, limit: int) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(limit)
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            raise _BodyError(411, "length_required", "send Content-Length or chunked encoding")
        if not length_header.strip().isdigit():
            raise _BodyError(400, "malformed", f"bad Content-Length {length_header!r}")
        length = int(length_header)
        if length > limit:
            raise PayloadTooLarge(f"request body of {length} bytes is over the {limit}-byte limit")
        data = self.rfile.read(length)
        if len(data) != length:
            raise ConnectionError(f"body ended after {len(data)} of {length} bytes")
        return data

    def _read_chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            if not line.endswith(b"\n"):
                raise _BodyError(400, "malformed", "bad chunked encoding")
            digits = line.split(b";", 1)[0].strip()
            if not digits or digits.strip(b"0123456789abcdefABCDEF"):
                raise _BodyError(400, "malformed", "bad chunk size in chunked encoding")
            size = int(digits, 16)
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return b"".join(parts)
            total += size
            if total > limit:
                raise PayloadTooLarge(f"chunked request body is over the {limit}-byte limit")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(3).strip():
                raise _BodyError(400, "malformed", "truncated or malformed chunk")
            parts.append(chunk)

    def _discard_body_or_close(self) -> None:
        length = self.headers.get("Content-Length", "0")
        if length.isdigit() and int(length) <= 1 << 20 and "Transfer-Encoding" not in self.headers:
            self.rfile.read(int(length))
        else:
            self.close_connection = True

    # ---------------------------------------------------------------- answers
    def _refuse(
        self,
        status: int,
        reason: str,
        grpc_code: int,
        message: str,
        encoding: Encoding | None,
        *,
        retry_after: int | None = None,
        challenge: str | None = None,
    ) -> None:
        self.server.receiver._counters.rejected(reason)
        enc = encoding or Encoding.JSON
        extra = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        if challenge is not None:
            extra["WWW-Authenticate"] = challenge
        self._send(status, encode_status(grpc_code, message, enc), enc.value, extra)

    def _send(
        self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        if self.server.receiver._stopping:
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # stop() joins the handler threads: in-flight batches finish
    block_on_close = True

    def __init__(
        self, address: tuple[str, int], receiver: Receiver, listening: socket.socket | None = None
    ) -> None:
        self.receiver = receiver
        if listening is not None:
            self.address_family = listening.family
        elif ":" in address[0]:  # an IPv6 literal such as ::1
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler, bind_and_activate=listening is None)
        if listening is not None:  # a socket bound and listening already (a parent's)
            self.socket.close()
            self.socket = listening
            self.server_address = listening.getsockname()
        if receiver.tls is not None:  # the handshake happens in _Handler.setup
            self.socket = receiver.tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def handle_error(self, request: Any, client_address: Any) -> None:
        # an exception escaped a handler: the client hung up while we answered, or a bug
        err = sys.exc_info()[1]
        if isinstance(err, ssl.SSLError):  # a failed handshake: not TLS, or a certificate refused
            self.receiver._counters.rejected("tls_error")
            _log.debug("TLS with %s failed: %s", client_address, err)
        elif isinstance(err, OSError):
            self.receiver._counters.rejected("client_error")
            _log.debug("connection from %s failed: %s", client_address, err)
        else:
            self.receiver._counters.rejected("internal_error")
            _log.exception("error while handling a request from %s", client_address)


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


# --------------------------------------------------------------------------------------------
# The receiver
# --------------------------------------------------------------------------------------------
class Receiver(Stops):
    """An OTLP/HTTP receiver writing into a span store; start it, send to it, stop it.

    ``store`` is a DuckDB path or a ClickHouse store URL (``chdb:///dir``, ``clickhouse://…``:
    :func:`~otelbench.store.writers.open_span_writer`; the receiver opens the store on
    :meth:`start` and closes it on :meth:`stop`) or an open, writable
    :class:`~otelbench.store.SpanStore` or
    :class:`~otelbench.store.clickhouse.ClickHouseSpanWriter` (left open). ``port=0``
    picks a free port; read :attr:`port` after :meth:`start`. It binds ``127.0.0.1`` unless told
    otherwise. ``listening``: a TCP socket already bound and listening (e.g. inherited from the
    parent that started this process, which then knew the endpoint before the store was open
    and its exporters' connections waited in the socket's backlog); ``host`` and ``port`` are
    then that socket's. :meth:`stop` closes it.

    Access control (:mod:`otelbench.collector.access`, ``docs/security.md``), all off by default:
    ``auth_token`` makes every route, ``GET /otelbench/stats`` included, answer 401 unless the
    request carries ``Authorization: Bearer <auth_token>``; ``tls`` serves HTTPS with that server
    context; ``rate_limit`` gives each client IP a token bucket and answers 429 with
    ``Retry-After`` when it is empty. Refusals are counted as ``unauthorized``, ``rate_limited``
    and ``tls_error`` in :meth:`stats`.

    Example::

        with Receiver(tmp_path / "spans.duckdb", port=0) as receiver:
            exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.port}/v1/traces")
            ...
        assert receiver.stats().rejected == {}
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | SpanWriter,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        socket_timeout: float = 30.0,
        auth_token: str | bytes | None = None,
        tls: ssl.SSLContext | None = None,
        rate_limit: RateLimit | None = None,
        listening: socket.socket | None = None,
    ) -> None:
        if max_body_bytes <= 0 or max_decompressed_bytes <= 0:
            raise CollectorError("the receiver's size limits must be positive")
        if not 0 <= port <= 65535:
            raise CollectorError(f"port {port} is not a TCP port (0-65535; 0 picks a free one)")
        self._store_arg = store
        self._listening = listening
        self._host = listening.getsockname()[0] if listening is not None else host
        self._requested_port = listening.getsockname()[1] if listening is not None else port
        self.max_body_bytes = max_body_bytes
        self.max_decompressed_bytes = max(max_decompressed_bytes, max_body_bytes)
        self.socket_timeout = socket_timeout
        self.tls = tls
        self._auth_token = auth_token.encode() if isinstance(auth_token, str) else auth_token
        if self._auth_token is not None and not self._auth_token:
            raise CollectorError("the receiver's bearer token must not be empty")
        self._buckets = TokenBuckets(rate_limit) if rate_limit is not None else None
        self._counters = _Counters()
        self._store: SpanWriter | None = None
        self._owns_store = False
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conn_lock = threading.Lock()
        self._connections: dict[_Handler, bool] = {}  # handler -> busy
        self._stopping = False
        self._memory_lock = threading.Lock()
        self._memory: int | None = None
        self._memory_read_at = -STORE_MEMORY_EVERY_S

    # ---------------------------------------------------------------- life cycle
    def start(self) -> Receiver:
        """Open the store, bind, and serve on a background thread; returns once bound.

        Raises :class:`~otelbench.errors.NotAnOtelbenchStore` or
        :class:`~otelbench.errors.StoreError` for the store, and
        :class:`~otelbench.errors.CollectorError` when the address cannot be bound.
        """
        if self._server is not None:
            raise CollectorError("the receiver is already running")
        if isinstance(self._store_arg, SpanWriter):
            if self._store_arg.read_only:
                raise CollectorError(f"{self._store_arg!r} is read-only; the receiver must write")
            self._store, self._owns_store = self._store_arg, False
        else:
            self._store, self._owns_store = open_span_writer(self._store_arg), True
        try:
            self._server = _Server((self._host, self._requested_port), self, self._listening)
            self._listening = None  # closed with the server: a restart binds host:port anew
        except OSError as err:
            self._close_store()
            hint = " (is another collector running? use port 0 for a free port)"
            why = err.strerror or str(err)
            raise CollectorError(
                f"cannot listen on {self._host}:{self._requested_port}: {why}"
                + (hint if err.errno == 98 else "")
            ) from err
        self._stopping = False
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"otelbench-collector:{self.port}",
            daemon=True,
        )
        self._thread.start()
        _log.info("OTLP/HTTP receiver on %s:%d writing %s", self.host, self.port, self.writer.path)
        self._announce(self._snapshot_url())
        return self

    def _snapshot_url(self) -> str:
        """Where a reader on this host asks for snapshots (``POST``)."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self._host, self._host)
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host}:{self.port}{SNAPSHOT_PATH}"

    def _announce(self, snapshot_url: str | None) -> None:
        """Tell readers of a DuckDB store where to ask for snapshots (``None``: nowhere)."""
        if isinstance(self._store, SpanStore):
            try:
                self._store.announce_writer(snapshot_url, token=self._auth_token)
            except StoreError as err:  # readers then fail as before; the ingest goes on
                _log.warning("cannot announce the snapshot endpoint: %s", err)

    def stop(self) -> None:
        """Stop gracefully: refuse new connections, finish in-flight batches, close the store."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._announce(None)
        server.shutdown()  # the accept loop ends
        with self._conn_lock:
            self._stopping = True
            idle = [h for h, busy in self._connections.items() if not busy]
        for handler in idle:  # wake the threads waiting for a next keep-alive request
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
        server.server_close()  # joins the handler threads
        if thread is not None:
            thread.join()
        self._server = self._thread = None
        self._close_store()

    def _close_store(self) -> None:
        store, owned = self._store, self._owns_store
        self._store = None
        if store is not None and owned:
            store.close()

    def _track(self, handler: _Handler, *, busy: bool) -> bool:
        """Record whether a connection has a request in flight; False when stopping."""
        with self._conn_lock:
            if self._stopping:
                if not busy:  # between requests while stopping: end the connection now
                    with contextlib.suppress(OSError):
                        handler.connection.shutdown(socket.SHUT_RDWR)
                return False
            self._connections[handler] = busy
            return True

    def _untrack(self, handler: _Handler) -> None:
        with self._conn_lock:
            self._connections.pop(handler, None)

    def __enter__(self) -> Receiver:
        return self.start()

    # ---------------------------------------------------------------- state
    @property
    def running(self) -> bool:
        """Whether the receiver is serving."""
        return self._server is not None

    @property
    def host(self) -> str:
        """The address it listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The bound port (the real one when started with ``port=0``)."""
        if self._server is None:
            raise CollectorError("the receiver is not running")
        return int(self._server.server_address[1])

    @property
    def writer(self) -> SpanWriter:
        """The store it writes: a DuckDB :class:`~otelbench.store.SpanStore` or a ClickHouse
        store's writer."""
        if self._store is None:
            raise CollectorError("the receiver is not running")
        return self._store

    @property
    def store(self) -> SpanStore:
        """The DuckDB span store it writes (use ``store.execute`` to read while it runs)."""
        writer = self.writer
        if not isinstance(writer, SpanStore):
            raise CollectorError(f"the receiver writes {writer.path}, not a DuckDB span store")
        return writer

    def stats(self) -> ReceiverStats:
        """Counters since :meth:`start` (still readable after :meth:`stop`), and the store's
        memory while it is open."""
        return replace(self._counters.snapshot(), store_memory_bytes=self._store_memory())

    def _store_memory(self) -> int | None:
        store = self._store
        if not isinstance(store, SpanStore):
            return None
        now = time.monotonic()
        with self._memory_lock:
            if now - self._memory_read_at >= STORE_MEMORY_EVERY_S:
                with contextlib.suppress(StoreError):  # closed: the last reading stands
                    self._memory = store.memory_bytes()
                self._memory_read_at = now
            return self._memory


def serve(
    store: str | os.PathLike[str],
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    on_ready: Callable[[Receiver], None] | None = None,
    front: Callable[[Receiver], contextlib.AbstractContextManager[Any]] | None = None,
    auth_token: str | bytes | None = None,
    tls: ssl.SSLContext | None = None,
    rate_limit: RateLimit | None = None,
    listening: socket.socket | None = None,
) -> ReceiverStats:
    """Run a receiver in the foreground until SIGINT or SIGTERM, then stop it gracefully.

    Must be called from the main thread (it installs the signal handlers, and restores the old
    ones on return). ``on_ready`` is called once the port is bound. ``front`` builds a context
    (e.g. a collector forwarding to this receiver: ``otelbench collector --rotel``) that is
    entered once the receiver listens and exited before it stops, so that what the front holds
    is flushed into the store. ``auth_token``, ``tls``, ``rate_limit`` and ``listening`` are the
    :class:`Receiver`'s. Returns the final counters.

    Example::

        stats = serve("run.duckdb", port=0, on_ready=lambda r: print("listening on", r.port))
    """
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        receiver = Receiver(
            store,
            host,
            port,
            max_body_bytes=max_body_bytes,
            max_decompressed_bytes=max_decompressed_bytes,
            auth_token=auth_token,
            tls=tls,
            rate_limit=rate_limit,
            listening=listening,
        )
        with receiver:
            with front(receiver) if front is not None else contextlib.nullcontext():
                if on_ready is not None:
                    on_ready(receiver)
                while not stop.wait(timeout=1.0):
                    pass
            started = time.monotonic()
        _log.info("receiver stopped in %.2f s", time.monotonic() - started)
        return receiver.stats()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
