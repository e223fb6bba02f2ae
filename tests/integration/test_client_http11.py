"""The lean HTTP/1.1 transport against raw loopback servers that send exactly the bytes a test
needs: framing, keep-alive, the connection limit, and every way a response can go wrong."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from otelbench.client._http11 import AsyncHTTP11Transport

pytestmark = pytest.mark.integration

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server calling ``handler(reader, writer, connection_number)``; yields its base
    URL and a list that records each accepted connection's number."""
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(len(accepted))
        try:
            await handler(reader, writer, accepted[-1])
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", accepted
    finally:
        server.close()
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def test_keep_alive_reuses_one_connection() -> None:
    requests: list[bytes] = []

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        while True:
            requests.append(await read_request(r))
            w.write(ok(b"hello"))

    async with raw_server(handler) as (url, accepted):
        transport = AsyncHTTP11Transport()
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(3):
                r = await client.post(url + "/v1/completions", json={"a": 1})
                assert (r.status_code, r.content) == (200, b"hello")
            assert transport._stats() == {"open": 1, "idle": 1, "waiting": 0}
    assert accepted == [0]
    head = requests[0].split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"post /v1/completions http/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:" in head
    body = requests[0].split(b"\r\n\r\n", 1)[1]
    assert json.loads(body) == {"a": 1}  # (httpx 0.28 sends it compact, 0.27 with spaces)
    assert b"\r\ncontent-length: %d\r\n" % len(body) in head


async def test_close_delimited_and_chunked_bodies() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)
        if n == 0:
            w.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end")
            return
        w.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # an interim response is skipped
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for part in (b"4\r\nabcd\r\n", b"3\r\nef", b"g\r\n0\r\n\r\n"):
            w.write(part)
            await w.drain()
            await asyncio.sleep(0.01)
        await r.read()

    async with (
        raw_server(handler) as (url, accepted),
        httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client,
    ):
        first = await client.get(url)
        second = await client.get(url)
    assert (first.content, second.content) == (b"until the end", b"abcdefg")
    assert accepted == [0, 1]  # the close-delimited response could not leave a reusable connection


async def test_bodies_larger_than_one_read_arrive_whole() -> None:
    """Bodies many times one ``recvmsg`` (64 KiB) and past the 1 MiB high-water mark, sent at
    once: Content-Length and chunked framing, byte for byte, and the connection is reused."""
    body = bytes(range(256)) * (5 * 1024 * 1024 // 256 + 7)  # 5 MiB and a bit

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)
        w.write(ok(body))
        await read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(0, len(body), 300_000):
            part = body[i : i + 300_000]
            w.write(b"%x\r\n%s\r\n" % (len(part), part))
        w.write(b"0\r\n\r\n")
        await w.drain()
        await r.read()

    async with (
        raw_server(handler) as (url, accepted),
        httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client,
    ):
        framed = await client.get(url)
        chunked = await client.get(url)
    assert framed.content == body
    assert chunked.content == body
    assert accepted == [0]


async def test_stale_idle_connection_is_retried_on_a_new_one() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)
        if n == 0:
            w.write(ok(b"one"))
            await read_request(r)  # a keep-alive timeout racing our next request: close, no answer
            return
        w.write(ok(b"two"))
        await r.read()

    async with (
        raw_server(handler) as (url, accepted),
        httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client,
    ):
        assert (await client.get(url)).content == b"one"
        assert (await client.get(url)).content == b"two"
    assert accepted == [0, 1]


async def test_connection_limit_queues_and_pool_timeout() -> None:
    live = 0
    peak = 0

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        nonlocal live, peak
        while True:
            await read_request(r)
            live += 1
            peak = max(peak, live)
            await asyncio.sleep(0.05)
            live -= 1
            w.write(ok(b"x"))

    async with raw_server(handler) as (url, _):
        transport = AsyncHTTP11Transport(max_connections=2)
        async with httpx.AsyncClient(transport=transport) as client:
            results = await asyncio.gather(*(client.get(url) for _ in range(6)))
            assert [r.content for r in results] == [b"x"] * 6
            assert peak == 2
            slow = httpx.Timeout(5.0, pool=0.01)
            outcomes = await asyncio.gather(
                *(client.get(url, timeout=slow) for _ in range(3)), return_exceptions=True
            )
            assert sorted(type(o).__name__ for o in outcomes) == [
                "PoolTimeout",
                "Response",
                "Response",
            ]
        assert transport._stats()["waiting"] == 0


async def test_cancelled_body_frees_its_connection() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")
        await r.read()

    async with raw_server(handler) as (url, accepted):
        transport = AsyncHTTP11Transport(max_connections=1)
        async with httpx.AsyncClient(transport=transport) as client:

            async def read_forever() -> None:
                async with client.stream("GET", url) as response:
                    async for _ in response.aiter_raw():
                        pass

            task = asyncio.create_task(read_forever())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert transport._stats()["open"] == 0
            # the only slot is free again
            with pytest.raises(httpx.ReadTimeout):
                await client.get(url, timeout=httpx.Timeout(0.1))
    assert accepted == [0, 1]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (b"SPDY/3 200 OK\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 abc OK\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\ncontent-le", httpx.RemoteProtocolError),  # closed mid-head
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", httpx.RemoteProtocolError),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
            httpx.RemoteProtocolError,
        ),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nx: " + b"y" * 70_000, httpx.RemoteProtocolError),
    ],
    ids=[
        "bad-protocol",
        "bad-status",
        "bad-header",
        "bad-length",
        "closed-in-head",
        "short-body",
        "cut-chunked",
        "bad-chunk-size",
        "huge-head",
    ],
)
async def test_malformed_responses_raise_httpx_errors(reply: bytes, error: type[Exception]) -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)
        w.write(reply)
        await w.drain()

    async with (
        raw_server(handler) as (url, _),
        httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client,
    ):
        with pytest.raises(error):
            await client.get(url)


async def test_no_response_at_all_and_refused() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, n: int) -> None:
        await read_request(r)  # and close without a word

    async with (
        raw_server(handler) as (url, _),
        httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client,
    ):
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.get(url)
    async with httpx.AsyncClient(transport=AsyncHTTP11Transport()) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url)  # the server is gone
