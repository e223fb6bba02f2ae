"""A lean HTTP/1.1 transport for httpx on plain asyncio: the inner transport of ``AsyncLLMClient``.

Why not ``httpx.AsyncHTTPTransport`` (httpcore + h11 + anyio)? Timing every chunk of many
concurrent streams made the stock stack the client's main cost, and the main source of timing
error: httpcore's pool does O(connections²) work each time a request starts or ends
(``AsyncConnectionPool._assign_requests_to_connections``, httpcore 1.0.9: with 64 busy connections
it took ~80 % of a core and delayed every timestamp by ~100 ms); anyio pauses and resumes the
socket around every read (two ``epoll_ctl`` calls) inside a cancel scope with its own timer; h11
yields one event per HTTP chunk. Here one network read is one ``data_received`` callback, one
wake-up of the reading task and one decoded block of body bytes handed on at once, so the
instrumented stream proxy stamps each read exactly once.

Scope, on purpose small: HTTP/1.1 over plain TCP (``http://``); ``https://`` requests go to a
stock ``httpx.AsyncHTTPTransport``. Response bodies framed by ``Transfer-Encoding: chunked``,
``Content-Length`` or connection close; keep-alive with an idle-connection stack per origin;
httpx's ``connect``/``read``/``write``/``pool`` timeouts from ``request.extensions["timeout"]``;
failures raised as the httpx exceptions ``httpx.AsyncHTTPTransport`` would raise (``ConnectError``,
``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``, ``PoolTimeout``, ``ReadError``,
``RemoteProtocolError``). No HTTP/2, no proxies, no request trailers, no ``Expect: 100-continue``
(interim 1xx responses are skipped).

Example::

    transport = InstrumentedTransport(AsyncHTTP11Transport(max_connections=256))
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["AsyncHTTP11Transport"]

_HIGH_WATER = 1 << 20
"""Stop reading the socket while this many received bytes wait to be consumed."""
_MAX_HEAD = 64 * 1024
_MAX_CHUNK_LINE = 4096


class _Protocol(asyncio.Protocol):
    """Buffers what the socket delivers; wakes at most one waiting reader."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.eof = False
        self.exc: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.drain: asyncio.Future[None] | None = None
        self.paused = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def _wake(self) -> None:
        w = self.waiter
        if w is not None:
            self.waiter = None
            if not w.done():
                w.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None and self.exc is None:
            self.exc = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self.drain is None:
            self.drain = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        d, self.drain = self.drain, None
        if d is not None and not d.done():
            d.set_result(None)


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class _Connection:
    __slots__ = ("key", "last_used", "proto", "transport")

    def __init__(self, key: tuple[str, int], transport: asyncio.Transport, proto: _Protocol):
        self.key = key
        self.transport = transport
        self.proto = proto
        self.last_used = 0.0

    async def wait_readable(self, limit_s: float | None, request: httpx.Request) -> None:
        """Wait until bytes or EOF are buffered (``httpx.ReadTimeout`` after ``timeout``)."""
        p = self.proto
        if p.buf or p.eof:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        p.waiter = fut
        timer = loop.call_later(limit_s, _expire, fut) if limit_s is not None else None
        try:
            await fut
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading from the target", request=request) from None
        finally:
            p.waiter = None
            if timer is not None:
                timer.cancel()

    def take(self) -> bytes:
        """Everything buffered, as bytes."""
        p = self.proto
        data = bytes(p.buf)
        p.buf.clear()
        if p.paused and self.transport is not None:
            p.paused = False
            self.transport.resume_reading()
        return data

    async def write(self, data: bytes, limit_s: float | None, request: httpx.Request) -> None:
        if self.transport.is_closing() or self.proto.eof:
            raise httpx.WriteError("connection closed by the target", request=request)
        self.transport.write(data)
        drain = self.proto.drain
        if drain is not None:
            try:
                await asyncio.wait_for(asyncio.shield(drain), limit_s)
            except TimeoutError:
                raise httpx.WriteTimeout(
                    "timed out writing to the target", request=request
                ) from None
        if self.proto.exc is not None:
            raise httpx.WriteError(str(self.proto.exc), request=request)

    def reusable(self, now: float, expiry: float) -> bool:
        return (
            not self.proto.eof
            and not self.proto.buf
            and not self.transport.is_closing()
            and now - self.last_used < expiry
        )

    def close(self) -> None:
        self.transport.close()


class _StaleConnection(Exception):
    """The connection was closed by the target before any byte of a response arrived."""


class _ChunkedDecoder:
    """Incremental ``Transfer-Encoding: chunked`` decoder: ``feed(bytes) -> body bytes``."""

    __slots__ = ("_buf", "_remaining", "_state", "done")

    _SIZE, _DATA, _DATA_END, _TRAILER = range(4)

    def __init__(self) -> None:
        self._buf = bytearray()
        self._state = self._SIZE
        self._remaining = 0
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = 0
        n = len(buf)
        while pos < n and not self.done:
            state = self._state
            if state == self._DATA:
                take = min(self._remaining, n - pos)
                out.append(bytes(buf[pos : pos + take]))
                pos += take
                self._remaining -= take
                if not self._remaining:
                    self._state = self._DATA_END
            elif state == self._SIZE:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    if n - pos > _MAX_CHUNK_LINE:
                        raise ValueError("chunk size line too long")
                    break
                line = bytes(buf[pos:end]).split(b";", 1)[0].strip()
                try:
                    size = int(line, 16)
                except ValueError:
                    raise ValueError(f"bad chunk size line {line[:40]!r}") from None
                if size < 0:
                    raise ValueError("negative chunk size")
                pos = end + 2
                if size:
                    self._remaining = size
                    self._state = self._DATA
                else:
                    self._state = self._TRAILER
            elif state == self._DATA_END:
                if n - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise ValueError("chunk data not followed by CRLF")
                pos += 2
                self._state = self._SIZE
            else:  # trailer lines until an empty one
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    break
                if end == pos:
                    self.done = True
                pos = end + 2
        del buf[:pos]
        if self.done and buf:
            raise ValueError("bytes after the end of a chunked body")
        return out[0] if len(out) == 1 else b"".join(out)


class _Body(httpx.AsyncByteStream):
    """The response body, one yielded block per network read; returns the connection to the pool
    when the body ended cleanly, closes it otherwise."""

    def __init__(
        self,
        owner: AsyncHTTP11Transport,
        conn: _Connection,
        request: httpx.Request,
        framing: str,
        length: int,
        leftover: bytes,
        keep_alive: bool,
        read_timeout: float | None,
    ) -> None:
        self._owner = owner
        self._conn: _Connection | None = conn
        self._request = request
        self._framing = framing
        self._length = length
        self._leftover = leftover
        self._keep_alive = keep_alive
        self._read_timeout = read_timeout
        self._complete = framing == "none"

    def _decode_error(self, message: str) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(message, request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for block in self._blocks():
                yield block
        except BaseException:
            self._complete = False
            self._release()
            raise

    async def _blocks(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None or self._complete:
            if self._complete:
                self._release()
            return
        framing = self._framing
        decoder = _ChunkedDecoder() if framing == "chunked" else None
        remaining = self._length
        data, self._leftover = self._leftover, b""
        while True:
            if not data:
                await conn.wait_readable(self._read_timeout, self._request)
                data = conn.take()
                if not data:
                    if framing == "close":
                        self._complete = True
                        self._keep_alive = False
                        self._release()
                        return
                    if conn.proto.exc is not None:
                        raise httpx.ReadError(str(conn.proto.exc), request=self._request)
                    raise self._decode_error(
                        "peer closed connection without sending complete message body"
                        + (" (incomplete chunked read)" if decoder is not None else "")
                    )
            if decoder is not None:
                try:
                    out = decoder.feed(data)
                except ValueError as exc:
                    raise self._decode_error(f"malformed chunked body: {exc}") from None
                done = decoder.done
            elif framing == "length":
                if len(data) > remaining:
                    raise self._decode_error("more body bytes than Content-Length")
                out = data
                remaining -= len(data)
                done = remaining == 0
            else:
                out, done = data, False
            data = b""
            if done:
                self._complete = True
                self._release()
            if out:
                yield out
            if done:
                return

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._complete and self._keep_alive:
            self._owner._put_idle(conn)
        else:
            conn.close()
            self._owner._slot_free()

    async def aclose(self) -> None:
        self._release()


def _timeouts(request: httpx.Request) -> dict[str, float | None]:
    t = request.extensions.get("timeout")
    return t if isinstance(t, dict) else {}


class AsyncHTTP11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio for ``http://`` (see the module doc); ``https://`` is delegated.

    ``max_connections`` caps open connections (a request waits for a free one up to the ``pool``
    timeout); idle connections are kept ``keepalive_expiry`` seconds.
    """

    def __init__(
        self,
        *,
        max_connections: int = 1024,
        keepalive_expiry: float = 4.0,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self._max = max_connections
        self._expiry = keepalive_expiry
        self._verify = verify
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._open = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._tls: httpx.AsyncHTTPTransport | None = None
        self._closed = False

    # -- connection slots --------------------------------------------------------------------

    async def _slot(self, request: httpx.Request, limit_s: float | None) -> None:
        """Wait for the right to open (or reuse) one connection."""
        if self._open < self._max:
            self._open += 1
            return
        # All in use: close an idle connection of another origin, or wait.
        for key, stack in self._idle.items():
            if stack:
                stack.pop().close()
                if not stack:
                    del self._idle[key]
                return  # its slot passes straight to us
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(fut, limit_s)
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection in time", request=request) from None
        except BaseException:
            if fut.done() and not fut.cancelled():
                self._slot_free()  # the slot was handed to us after all
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(fut)

    def _slot_free(self) -> None:
        while self._waiters:
            fut = self._waiters.pop(0)
            if not fut.done():
                fut.set_result(None)  # the slot passes to this waiter
                return
        self._open -= 1

    def _put_idle(self, conn: _Connection) -> None:
        if self._closed:
            conn.close()
            self._slot_free()
            return
        if self._waiters:
            conn.close()  # a waiter may want another origin: hand over the slot, not the socket
            self._slot_free()
            return
        conn.last_used = time.monotonic()
        self._idle.setdefault(conn.key, []).append(conn)

    def _get_idle(self, key: tuple[str, int]) -> _Connection | None:
        stack = self._idle.get(key)
        now = time.monotonic()
        while stack:
            conn = stack.pop()
            if conn.reusable(now, self._expiry):
                return conn
            conn.close()
            self._slot_free()
        return None

    async def _connect(
        self, host: str, port: int, limit_s: float | None, request: httpx.Request
    ) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            transport, proto = await asyncio.wait_for(
                loop.create_connection(_Protocol, host, port), limit_s
            )
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"timed out connecting to {host}:{port}", request=request
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from None
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert isinstance(transport, asyncio.Transport)
        return _Connection((host, port), transport, proto)

    # -- requests ---------------------------------------------------------------------------

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            if self._tls is None:
                limits = httpx.Limits(max_connections=self._max)
                self._tls = httpx.AsyncHTTPTransport(limits=limits, verify=self._verify)
            return await self._tls.handle_async_request(request)
        timeouts = _timeouts(request)
        host = url.host
        port = url.port or 80
        key = (host, port)
        conn = self._get_idle(key)
        if conn is not None:
            try:
                return await self._exchange(conn, request, timeouts)
            except _StaleConnection:
                # The target closed this idle connection before our request reached it (e.g.
                # its keep-alive timeout): nothing was received, so try once more on a new one.
                conn.close()
                self._slot_free()
            except BaseException:
                conn.close()
                self._slot_free()
                raise
        await self._slot(request, timeouts.get("pool"))
        try:
            conn = await self._connect(host, port, timeouts.get("connect"), request)
        except BaseException:
            self._slot_free()
            raise
        try:
            return await self._exchange(conn, request, timeouts)
        except _StaleConnection as exc:
            conn.close()
            self._slot_free()
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from exc
        except BaseException:
            conn.close()
            self._slot_free()
            raise

    async def _exchange(
        self, conn: _Connection, request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        if conn.proto.eof:
            raise _StaleConnection
        body = await request.aread()
        head = [f"{request.method} ".encode() + request.url.raw_path + b" HTTP/1.1\r\n"]
        has_length = False
        for name, value in request.headers.raw:
            lname = name.lower()
            if lname in (b"content-length", b"transfer-encoding"):
                has_length = True
            head.append(name + b": " + value + b"\r\n")
        if body and not has_length:
            head.append(b"content-length: %d\r\n" % len(body))
        head.append(b"\r\n")
        await conn.write(b"".join(head) + body, timeouts.get("write"), request)

        read_timeout = timeouts.get("read")
        buf = b""
        while True:  # read the head; skip interim 1xx responses
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                if len(buf) > _MAX_HEAD:
                    raise httpx.RemoteProtocolError("response head too large", request=request)
                await conn.wait_readable(read_timeout, request)
                more = conn.take()
                if not more:
                    if not buf:
                        raise _StaleConnection
                    if conn.proto.exc is not None:
                        raise httpx.ReadError(str(conn.proto.exc), request=request)
                    raise httpx.RemoteProtocolError(
                        "Server disconnected while sending the response head.", request=request
                    )
                buf += more
                end = buf.find(b"\r\n\r\n")
            head_bytes, buf = buf[:end], buf[end + 4 :]
            status, reason, headers, keep_alive = self._parse_head(head_bytes, request)
            if not 100 <= status < 200:
                break
        framing, length = self._framing(request, status, headers)
        if framing == "length" and len(buf) > length:
            raise httpx.RemoteProtocolError("more body bytes than Content-Length", request=request)
        if framing == "none" and buf:
            keep_alive = False
        if framing == "close":
            keep_alive = False
        stream = _Body(self, conn, request, framing, length, buf, keep_alive, read_timeout)
        return httpx.Response(
            status_code=status,
            headers=headers,
            stream=stream,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )

    @staticmethod
    def _parse_head(
        head: bytes, request: httpx.Request
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool]:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise httpx.RemoteProtocolError(
                f"malformed status line {lines[0][:60]!r}", request=request
            )
        try:
            status = int(parts[1])
        except ValueError:
            raise httpx.RemoteProtocolError(
                f"malformed status line {lines[0][:60]!r}", request=request
            ) from None
        keep_alive = parts[0] == b"HTTP/1.1"
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name != name.strip():
                raise httpx.RemoteProtocolError(
                    f"malformed header line {line[:60]!r}", request=request
                )
            value = value.strip()
            headers.append((name, value))
            if name.lower() == b"connection":
                tokens = {t.strip().lower() for t in value.split(b",")}
                if b"close" in tokens:
                    keep_alive = False
                elif b"keep-alive" in tokens:
                    keep_alive = True
        reason = parts[2] if len(parts) > 2 else b""
        return status, reason, headers, keep_alive

    @staticmethod
    def _framing(
        request: httpx.Request, status: int, headers: list[tuple[bytes, bytes]]
    ) -> tuple[str, int]:
        if request.method == "HEAD" or status in (204, 304):
            return "none", 0
        te = b""
        length: int | None = None
        for name, value in headers:
            lname = name.lower()
            if lname == b"transfer-encoding":
                te = value.lower()
            elif lname == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise httpx.RemoteProtocolError(
                        f"bad Content-Length {value[:40]!r}", request=request
                    ) from None
        if te:
            if te.split(b",")[-1].strip() != b"chunked":
                return "close", 0
            return "chunked", 0
        if length is not None:
            return ("length", length) if length else ("none", 0)
        return "close", 0

    async def aclose(self) -> None:
        self._closed = True
        for stack in self._idle.values():
            for conn in stack:
                conn.close()
        self._idle.clear()
        if self._tls is not None:
            await self._tls.aclose()

    def _stats(self) -> dict[str, Any]:
        """For tests: open connections, idle ones, waiting requests."""
        return {
            "open": self._open,
            "idle": sum(len(s) for s in self._idle.values()),
            "waiting": len(self._waiters),
        }
