"""A lean HTTP/1.1 transport for httpx on plain asyncio: the inner transport of ``AsyncLLMClient``.

Why not ``httpx.AsyncHTTPTransport`` (httpcore + h11 + anyio)? Timing every chunk of many
concurrent streams made the stock stack the client's main cost, and the main source of timing
error: httpcore's pool does O(connections²) work each time a request starts or ends
(``AsyncConnectionPool._assign_requests_to_connections``, httpcore 1.0.9: with 64 busy connections
it took ~80 % of a core and delayed every timestamp by ~100 ms); anyio pauses and resumes the
socket around every read (two ``epoll_ctl`` calls) inside a cancel scope with its own timer; h11
yields one event per HTTP chunk, each stamped only when the reading task gets to it.

Here each connection is a non-blocking socket read by an event-loop reader callback with
``recvmsg``, and every read carries the **kernel's receive timestamp** (``SO_TIMESTAMPNS``,
converted to ``time.perf_counter_ns()``): the arrival time of a chunk no longer includes the time
the client took to wake up and read it (the VM's wake-up latency, other streams' processing, a
garbage collection). What remains: when the client falls more than one inter-chunk interval
behind on a connection, several packets are read at once (or were merged by the kernel while
waiting), and all of them carry the time of the last one. The decoded body of the reads waiting
at a wake-up is handed on as one block, with each read's end offset and time
(``_Body.otelbench_received_marks``). How long each read's data waited in the kernel (the read's
time minus the kernel's) is counted while :data:`otelbench.client.readdelay.READ_DELAYS` records.

Opening a connection does not leave the calling task when it need not: a new connection to an
IP address is connected with a non-blocking ``connect`` and, when the kernel completed the
handshake inside that call (loopback), the request is written in the same event-loop step. So in
a burst of requests on new connections each request's bytes leave right after its own set-up,
not after the set-up of every other request of the burst (``_start_connect``).

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
import errno
import os
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx

from otelbench.client.readdelay import READ_DELAYS

__all__ = ["AsyncHTTP11Transport"]

_HIGH_WATER = 1 << 20
"""Stop reading the socket while this many received bytes wait to be consumed."""
_MAX_HEAD = 64 * 1024
_MAX_CHUNK_LINE = 4096


_READ_SIZE = 64 * 1024
"""Bytes asked of one ``recvmsg``. Python allocates that many for every read, then shrinks the
result: 256 KiB (asyncio's read size) is over glibc's 128 KiB ``mmap`` threshold, so every read
mapped and unmapped its buffer: a 200-byte send and its read on a socketpair took 22 µs of CPU
at 256 KiB, 4 µs at 64 KiB (from the heap; measured here). More than this waiting on one
connection is read by the next callback."""
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
"""Linux: kernel receive time of the data each ``recvmsg`` returns (``SO_TIMESTAMPNS_OLD``, 35,
on x86-64 and arm64; Python's ``socket`` module does not name it)."""
_TIMESPEC = struct.Struct("@qq")
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)


def _ip_literal(host: str, port: int) -> list[tuple[Any, ...]] | None:
    """``getaddrinfo``'s answer for an IP address, without its thread pool."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        addr = (host, port) if family == socket.AF_INET else (host, port, 0, 0)
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", addr)]
    return None


def _start_connect(family: int, kind: int, proto: int, addr: Any) -> tuple[socket.socket, bool]:
    """A non-blocking socket (``TCP_NODELAY``, ``SO_TIMESTAMPNS``) with its connect started;
    True when it is connected already.

    On loopback the kernel completes the TCP handshake inside the first ``connect`` call (which
    still reports ``EINPROGRESS``): a second ``connect`` says so at once, and the request can be
    written in the same event-loop step, without the round trip through ``epoll`` that
    ``loop.sock_connect`` costs (in a burst of new connections, that round trip made every
    request wait for the set-up of all the others before its first byte left). Raises
    ``OSError`` when the connect failed outright.
    """
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        err = sock.connect_ex(addr)
        if err == errno.EINPROGRESS:
            err = sock.connect_ex(addr)
        if err in (0, errno.EISCONN):
            return sock, True
        if err in (errno.EINPROGRESS, errno.EALREADY, errno.EAGAIN):
            return sock, False
        raise OSError(err, os.strerror(err))
    except BaseException:
        sock.close()
        raise


class _ClockOffset:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC in ns, to turn kernel receive timestamps (wall clock)
    into ``time.perf_counter_ns()`` values. Measured as a wall-clock reading bracketed by two
    monotonic ones, keeping the tightest of five brackets (error: half of it, ~0.1 µs; a bracket
    taken on every read would be off by half of any preemption inside it), and measured again
    every second, so that a step of the wall clock is followed within a second (a read whose
    converted time is not within the last second falls back to the read's own time)."""

    __slots__ = ("_at", "_value")

    def __init__(self) -> None:
        self._value = 0
        self._at = -(1 << 62)

    def get(self, now_mono: int) -> int:
        if now_mono - self._at > 1_000_000_000:
            perf, real = time.perf_counter_ns, time.time_ns
            best = (1 << 62, 0)
            for _ in range(5):
                a = perf()
                r = real()
                b = perf()
                if b - a < best[0]:
                    best = (b - a, r - (a + b) // 2)
            self._value = best[1]
            self._at = now_mono
        return self._value


_REAL_MINUS_MONO = _ClockOffset()


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class _Connection:
    """One non-blocking TCP socket, read from an event-loop reader callback.

    Every ``recvmsg`` becomes a segment ``(bytes, monotonic ns)``. The time is the kernel's receive
    timestamp of that data (``SO_TIMESTAMPNS``: for TCP, the last packet the read consumed),
    converted from CLOCK_REALTIME to ``time.perf_counter_ns()`` with a clock pair read in the same
    callback. So an arrival time does not include how long the client took to wake up and read:
    not the virtual machine's wake-up latency, not other streams' processing. Without kernel
    timestamps (another OS, or a value that does not convert sensibly) the callback's own
    ``perf_counter_ns()`` is used: the moment ``epoll`` reported the socket, before any task ran.
    """

    __slots__ = (
        "deadline",
        "eof",
        "exc",
        "kernel_stamps",
        "key",
        "last_used",
        "loop",
        "reading",
        "segments",
        "size",
        "sock",
        "timer",
        "waiter",
    )

    def __init__(
        self, key: tuple[str, int], sock: socket.socket, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.key = key
        self.sock = sock
        self.loop = loop
        self.segments: deque[tuple[bytes, int]] = deque()
        self.size = 0
        self.eof = False
        self.exc: OSError | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.deadline: float | None = None
        """``loop.time()`` by which the pending wait times out (None: no wait pending)."""
        self.timer: asyncio.TimerHandle | None = None
        self.last_used = 0.0
        self.kernel_stamps = 0
        """Segments stamped by the kernel (the rest by the reader callback)."""
        self.reading = True
        loop.add_reader(sock.fileno(), self._on_readable)

    # -- reading ------------------------------------------------------------------------------

    def _wake(self) -> None:
        w = self.waiter
        if w is not None:
            self.waiter = None
            if not w.done():
                w.set_result(None)

    def _stop_reading(self) -> None:
        if self.reading:
            self.reading = False
            self.loop.remove_reader(self.sock.fileno())

    def _on_readable(self) -> None:
        """One ``recvmsg`` per call (the event loop calls again while data remains).

        A read returns the kernel timestamp of the last packet it consumed; when the client falls
        more than one inter-chunk interval behind on a connection, the kernel has usually merged
        the waiting packets already (``tcp_try_coalesce`` keeps the newest timestamp), so reading
        in small pieces would not recover the earlier times and costs ~1.6x the CPU at saturation
        (measured); one large read it is.
        """
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(_READ_SIZE, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.exc = exc
            self.eof = True
            self._stop_reading()
            self._wake()
            return
        if not data:
            self.eof = True
            self._stop_reading()
            self._wake()
            return
        now = time.perf_counter_ns()
        stamp = now
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                sec, nsec = _TIMESPEC.unpack_from(payload)
                kernel = sec * 1_000_000_000 + nsec - _REAL_MINUS_MONO.get(now)
                if now - 1_000_000_000 < kernel <= now:
                    stamp = kernel
                    self.kernel_stamps += 1
                    delays = READ_DELAYS.pending
                    if delays is not None:
                        delays.append(now - kernel)
        self.segments.append((data, stamp))
        self.size += len(data)
        if self.size > _HIGH_WATER:
            self._stop_reading()
        self._wake()

    async def wait_readable(self, limit_s: float | None, request: httpx.Request) -> None:
        """Wait until a segment or EOF is buffered (``httpx.ReadTimeout`` after ``limit_s``).

        The read timeout is one lazily re-armed timer per connection, not a timer per wait: a
        wait only moves the connection's deadline later (a new timer only when it comes sooner
        than the armed one's), and the timer, when it fires before the current deadline, re-arms
        itself there (a stream waits once per chunk; creating and cancelling a timer each time
        was a measurable share of the per-chunk cost)."""
        if self.segments or self.eof:
            return
        loop = self.loop
        fut: asyncio.Future[None] = loop.create_future()
        self.waiter = fut
        if limit_s is not None:
            self.deadline = deadline = loop.time() + limit_s
            timer = self.timer
            if timer is None or timer.when() > deadline:  # a shorter timeout than the last one
                if timer is not None:
                    timer.cancel()
                self.timer = loop.call_at(deadline, self._on_timer)
        try:
            await fut
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading from the target", request=request) from None
        finally:
            self.waiter = None
            self.deadline = None

    def _on_timer(self) -> None:
        self.timer = None
        deadline = self.deadline
        w = self.waiter
        if deadline is None or w is None or w.done():
            return  # no wait is pending: the next one arms a new timer
        if self.loop.time() >= deadline:
            w.set_exception(TimeoutError())
        else:
            self.timer = self.loop.call_at(deadline, self._on_timer)

    def take(self) -> tuple[bytes, int]:
        """The oldest buffered segment and when it arrived; ``(b"", 0)`` when none is."""
        if not self.segments:
            return b"", 0
        data, t = self.segments.popleft()
        self.size -= len(data)
        if not self.reading and not self.eof and self.size < _HIGH_WATER // 2:
            self.reading = True
            self.loop.add_reader(self.sock.fileno(), self._on_readable)
        return data, t

    # -- writing ------------------------------------------------------------------------------

    async def write(self, data: bytes, limit_s: float | None, request: httpx.Request) -> None:
        if self.eof or self.sock.fileno() < 0:
            raise httpx.WriteError("connection closed by the target", request=request)
        view = memoryview(data)
        deadline = None if limit_s is None else self.loop.time() + limit_s
        while view:
            try:
                sent = self.sock.send(view)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from None
            view = view[sent:]
            if view:
                await self._writable(deadline, request)

    async def _writable(self, deadline: float | None, request: httpx.Request) -> None:
        fut: asyncio.Future[None] = self.loop.create_future()
        fd = self.sock.fileno()
        self.loop.add_writer(fd, _resolve, fut)
        timer = None
        if deadline is not None:
            timer = self.loop.call_at(deadline, _expire, fut)
        try:
            await fut
        except TimeoutError:
            raise httpx.WriteTimeout("timed out writing to the target", request=request) from None
        finally:
            self.loop.remove_writer(fd)
            if timer is not None:
                timer.cancel()

    # -- life ---------------------------------------------------------------------------------

    def reusable(self, now: float, expiry: float) -> bool:
        return (
            not self.eof
            and not self.segments
            and self.sock.fileno() >= 0
            and now - self.last_used < expiry
        )

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.sock.fileno() >= 0:
            self._stop_reading()
            self.sock.close()
        self.eof = True
        self._wake()


class _StaleConnection(Exception):
    """The connection was closed by the target before any byte of a response arrived."""


class _ChunkedDecoder:
    """Incremental ``Transfer-Encoding: chunked`` decoder: ``feed(bytes) -> body bytes``.

    Works on the new bytes with indices; only an unfinished size line or CRLF is carried over.
    """

    __slots__ = ("_crlf", "_remaining", "_rest", "_trailer", "done")

    def __init__(self) -> None:
        self._rest = b""
        self._remaining = 0
        """Payload bytes still due in the current chunk."""
        self._crlf = False
        """The CRLF after a chunk's payload is due."""
        self._trailer = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        if self._rest:
            data = self._rest + data
            self._rest = b""
        out: list[bytes] = []
        pos = 0
        n = len(data)
        while pos < n and not self.done:
            if self._remaining:
                end = pos + self._remaining
                if end > n:
                    end = n
                out.append(data[pos:end])
                self._remaining -= end - pos
                pos = end
                if not self._remaining:
                    self._crlf = True
            elif self._crlf:
                if n - pos < 2:
                    break
                if data[pos] != 13 or data[pos + 1] != 10:
                    raise ValueError("chunk data not followed by CRLF")
                pos += 2
                self._crlf = False
            else:
                end = data.find(b"\r\n", pos)
                if end < 0:
                    if n - pos > _MAX_CHUNK_LINE:
                        raise ValueError("chunk size line too long")
                    break
                line = data[pos:end]
                pos = end + 2
                if self._trailer:  # trailer lines until an empty one
                    if not line:
                        self.done = True
                    continue
                try:
                    size = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    raise ValueError(f"bad chunk size line {line[:40]!r}") from None
                if size < 0:
                    raise ValueError("negative chunk size")
                if not size:
                    self._trailer = True
                elif data[pos + size : pos + size + 2] == b"\r\n":
                    out.append(data[pos : pos + size])  # the whole chunk is here: one step
                    pos += size + 2
                else:
                    self._remaining = size
        if pos < n:
            if self.done:
                raise ValueError("bytes after the end of a chunked body")
            self._rest = data[pos:]
        return out[0] if len(out) == 1 else b"".join(out)


class _Body(httpx.AsyncByteStream):
    """The response body, one yielded block per network read; returns the connection to the pool
    when the body ended cleanly, closes it otherwise.

    A yielded block holds everything that had arrived; ``otelbench_received_marks`` lists, for
    the block last yielded, ``(end offset, arrival ns)`` of each piece of it that arrived at its
    own time (``otelbench_received_mono_ns`` is the last of them). The instrumented transport's
    stream proxy feeds the SSE parser piece by piece with these times.
    """

    otelbench_received_mono_ns: int
    otelbench_received_marks: list[tuple[int, int]]

    def __init__(
        self,
        owner: AsyncHTTP11Transport,
        conn: _Connection,
        request: httpx.Request,
        framing: str,
        length: int,
        leftover: bytes,
        leftover_ns: int,
        keep_alive: bool,
        read_timeout: float | None,
    ) -> None:
        self._owner = owner
        self._conn: _Connection | None = conn
        self._request = request
        self._framing = framing
        self._length = length
        self._leftover = leftover
        self.otelbench_received_mono_ns = leftover_ns
        self.otelbench_received_marks = []
        self._keep_alive = keep_alive
        self._read_timeout = read_timeout
        self._complete = framing == "none"

    def _decode_error(self, message: str) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(message, request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Per wake-up, decode every buffered segment and yield them as one block, with each
        segment's end offset and arrival time in ``otelbench_received_marks`` (one generator,
        not a guard around an inner one: it runs once per chunk)."""
        try:
            conn = self._conn
            if conn is None or self._complete:
                if self._complete:
                    self._release()
                return
            framing = self._framing
            decoder = _ChunkedDecoder() if framing == "chunked" else None
            remaining = self._length
            pending: list[tuple[bytes, int]] = []
            if self._leftover:
                pending.append((self._leftover, self.otelbench_received_mono_ns))
                self._leftover = b""
            done = False
            while not done:
                if not pending:
                    await conn.wait_readable(self._read_timeout, self._request)
                    while True:
                        seg = conn.take()
                        if not seg[0]:
                            break
                        pending.append(seg)
                    if not pending:
                        if framing == "close":
                            self._complete = True
                            self._keep_alive = False
                            self._release()
                            return
                        if conn.exc is not None:
                            raise httpx.ReadError(str(conn.exc), request=self._request)
                        raise self._decode_error(
                            "peer closed connection without sending complete message body"
                            + (" (incomplete chunked read)" if decoder is not None else "")
                        )
                parts: list[bytes] = []
                marks: list[tuple[int, int]] = []
                size = 0
                for data, received in pending:
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
                        out = data
                    if out:
                        parts.append(out)
                        size += len(out)
                        marks.append((size, received))
                    if done:
                        break
                pending = []
                if done:
                    self._complete = True
                    self._release()
                if parts:
                    self.otelbench_received_marks = marks
                    self.otelbench_received_mono_ns = marks[-1][1]
                    yield parts[0] if len(parts) == 1 else b"".join(parts)
        except BaseException:
            self._complete = False
            self._release()
            raise

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
            infos = _ip_literal(host, port)
            if infos is not None:
                # Fast path: no task, no timer, no event-loop round trip (see _start_connect).
                family, kind, proto, _name, addr = infos[0]
                sock, connected = _start_connect(family, kind, proto, addr)
                if connected:
                    return _Connection((host, port), sock, loop)
                try:
                    await asyncio.wait_for(loop.sock_connect(sock, addr), limit_s)
                except BaseException:
                    sock.close()
                    raise
                return _Connection((host, port), sock, loop)
            return await asyncio.wait_for(self._open_socket(loop, host, port), limit_s)
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"timed out connecting to {host}:{port}", request=request
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None

    @staticmethod
    async def _open_socket(loop: asyncio.AbstractEventLoop, host: str, port: int) -> _Connection:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        error: OSError = OSError(f"cannot resolve {host}")
        for family, kind, proto, _name, addr in infos:
            try:
                sock, connected = _start_connect(family, kind, proto, addr)
            except OSError as exc:
                error = exc
                continue
            try:
                if not connected:
                    await loop.sock_connect(sock, addr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            except BaseException:
                sock.close()
                raise
            return _Connection((host, port), sock, loop)
        raise error

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
        if conn.eof:
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
        received = 0
        while True:  # read the head; skip interim 1xx responses
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                if len(buf) > _MAX_HEAD:
                    raise httpx.RemoteProtocolError("response head too large", request=request)
                await conn.wait_readable(read_timeout, request)
                more, received = conn.take()
                if not more:
                    if not buf:
                        raise _StaleConnection
                    if conn.exc is not None:
                        raise httpx.ReadError(str(conn.exc), request=request)
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
        stream = _Body(
            self, conn, request, framing, length, buf, received, keep_alive, read_timeout
        )
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

    def _stats(self) -> dict[str, int]:
        """For tests: open connections, idle ones, waiting requests."""
        return {
            "open": self._open,
            "idle": sum(len(s) for s in self._idle.values()),
            "waiting": len(self._waiters),
        }
