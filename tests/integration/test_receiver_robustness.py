"""Bad requests get their OTLP/HTTP answer; the receiver keeps serving and keeps its spans."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1 import trace_pb2 as t

from otelbench.collector import Receiver
from otelbench.errors import CollectorError, NotAnOtelbenchStore
from otelbench.store import SpanStore

pytestmark = pytest.mark.integration

PB = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
T0 = 1_700_000_000_000_000_000


def batch(first: int, n: int = 3) -> bytes:
    spans = [
        t.Span(
            trace_id=(first + i + 1).to_bytes(16, "big"),
            span_id=(first + i + 1).to_bytes(8, "big"),
            name=f"s{first + i}",
            start_time_unix_nano=T0 + i,
            end_time_unix_nano=T0 + i + 1000,
        )
        for i in range(n)
    ]
    request = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(scope_spans=[t.ScopeSpans(spans=spans)])]
    )
    return request.SerializeToString()


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    with Receiver(
        tmp_path / "spans.duckdb", port=0, max_body_bytes=64 << 10, max_decompressed_bytes=1 << 20
    ) as r:
        yield r


def request(
    port: int, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), response
    finally:
        conn.close()


def send_good(port: int, first: int) -> None:
    status, body, _ = request(port, "POST", "/v1/traces", batch(first), PB)
    assert status == 200
    assert ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse()


BOMB = gzip.compress(bytes(8 << 20), compresslevel=9, mtime=0)  # 8 MiB of zeros in 8 KiB


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status", "reason", "message"),
    [
        ("POST", "/v1/traces", b"\x0a\x05\x01", PB, 400, "malformed", "not a valid protobuf"),
        ("POST", "/v1/traces", b"\xde\xad\xbe\xef" * 10, PB, 400, "malformed", "protobuf"),
        ("POST", "/v1/traces", b'{"resourceSpans": [', JSON, 400, "malformed", "not valid JSON"),
        ("POST", "/v1/metrics", b"\x00\xff" * 50, JSON, 400, "malformed", "not valid JSON"),
        ("POST", "/v1/traces", b"x", {"Content-Type": "text/plain"}, 415,
         "unsupported_media_type", "Content-Type 'text/plain'"),
        ("POST", "/v1/traces", b"x", {**PB, "Content-Encoding": "br"}, 415,
         "unsupported_media_type", "Content-Encoding 'br'"),
        ("POST", "/v1/traces", bytes(100 << 10), PB, 413, "too_large", "over the 65536-byte limit"),
        ("POST", "/v1/traces", BOMB, {**PB, "Content-Encoding": "gzip"}, 413, "too_large",
         "inflates to more than"),
        ("POST", "/v1/traces", gzip.compress(batch(0), mtime=0)[:-12],
         {**PB, "Content-Encoding": "gzip"}, 400, "malformed", "truncated gzip"),
        ("POST", "/v1/logs", b"{}", JSON, 404, "not_found", "no OTLP endpoint at /v1/logs"),
        ("GET", "/v1/traces", None, {}, 405, "method_not_allowed", "GET /v1/traces: use POST"),
        ("PUT", "/v1/metrics", b"{}", JSON, 405, "method_not_allowed", "use POST"),
    ],
)  # fmt: skip
def test_bad_requests(
    receiver: Receiver,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    status: int,
    reason: str,
    message: str,
) -> None:
    send_good(receiver.port, 0)
    got_status, reply, response = request(receiver.port, method, path, body, headers)
    assert got_status == status
    if response.getheader("Content-Type") == "application/x-protobuf":
        parsed = status_pb2.Status.FromString(reply)
        text = parsed.message
    else:
        assert response.getheader("Content-Type") == "application/json"
        text = json.loads(reply)["message"]
    assert message in text
    assert receiver.stats().rejected == {reason: 1}
    send_good(receiver.port, 100)  # still serving
    assert receiver.store.span_count() == 6  # and nothing stored before was lost


def test_error_bodies_use_the_request_encoding(receiver: Receiver) -> None:
    status, reply, response = request(receiver.port, "POST", "/v1/traces", b"\x0a\x05\x01", PB)
    assert status == 400
    assert response.getheader("Content-Type") == "application/x-protobuf"
    assert status_pb2.Status.FromString(reply).code == 3  # INVALID_ARGUMENT


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_chunked_bodies_are_accepted(receiver: Receiver) -> None:
    body = batch(0)
    chunked = b"".join(
        f"{len(body[i : i + 100]):x}\r\n".encode() + body[i : i + 100] + b"\r\n"
        for i in range(0, len(body), 100)
    )
    head = (
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    answer = raw_exchange(receiver.port, head.encode() + chunked + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert receiver.store.span_count() == 3


@pytest.mark.parametrize(
    ("head", "status", "reason"),
    [
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n\r\n", 411,
         "length_required"),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
         "Content-Length: -4\r\n\r\n", 400, "malformed"),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
         "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "malformed"),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
         "Transfer-Encoding: chunked\r\n\r\n-5\r\nabc\r\n", 400, "malformed"),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
         "Content-Length: 1_0\r\n\r\n0123456789", 400, "malformed"),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
         "Transfer-Encoding: chunked\r\n\r\nfffffff\r\nabc\r\n", 413, "too_large"),
        ("BREW /pot HTCPCP/1.0\r\n\r\n", 400, "bad_http"),
        ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello\r\n\r\n", 400, "bad_http"),
    ],
)  # fmt: skip
def test_broken_http(receiver: Receiver, head: str, status: int, reason: str) -> None:
    answer = raw_exchange(receiver.port, head.encode("latin-1"))
    # http.server answers a request line without a valid HTTP version HTTP/0.9-style: no status line
    assert answer.startswith((f"HTTP/1.1 {status} ".encode(), f"{status} ".encode()))
    assert receiver.stats().rejected == {reason: 1}
    send_good(receiver.port, 0)


def test_client_hanging_up_mid_body(receiver: Receiver) -> None:
    head = (
        "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
        "Content-Length: 5000\r\n\r\n"
    )
    assert raw_exchange(receiver.port, head.encode() + b"\x0a" * 10) == b""
    deadline = time.monotonic() + 10
    while receiver.stats().rejected != {"client_error": 1} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert receiver.stats().rejected == {"client_error": 1}
    send_good(receiver.port, 0)
    assert receiver.store.span_count() == 3


def test_partial_success_for_spans_the_store_cannot_hold(receiver: Receiver) -> None:
    good = t.Span(span_id=b"\x01" * 8, start_time_unix_nano=T0, end_time_unix_nano=T0 + 5)
    backwards = t.Span(span_id=b"\x02" * 8, start_time_unix_nano=T0, end_time_unix_nano=T0 - 5)
    body = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(scope_spans=[t.ScopeSpans(spans=[good, backwards])])]
    ).SerializeToString()
    status, reply, _ = request(receiver.port, "POST", "/v1/traces", body, PB)
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(reply).partial_success
    assert partial.rejected_spans == 1
    assert "span 0202020202020202 ends before it starts" in partial.error_message
    assert (receiver.stats().spans_accepted, receiver.stats().spans_rejected) == (1, 1)


def test_keep_alive_connection_serves_many_batches(receiver: Receiver) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=30)
    try:
        for i in range(20):
            conn.request("POST", "/v1/traces", body=batch(10 * i), headers=PB)
            response = conn.getresponse()
            assert response.status == 200
            response.read()
        conn.request("POST", "/v1/traces", body=b"\x0a\x05\x01", headers=PB)  # a 400 keeps it open
        response = conn.getresponse()
        assert response.status == 400
        response.read()
        conn.request("POST", "/v1/traces", body=batch(1000), headers=PB)
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert receiver.store.span_count() == 63


def test_concurrent_clients(receiver: Receiver) -> None:
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            for i in range(10):
                send_good(receiver.port, 1000 * k + 10 * i)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert receiver.store.span_count() == 180
    assert receiver.stats().requests_accepted == 60


def test_stop_finishes_the_batch_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "spans.duckdb"
    receiver = Receiver(path, port=0).start()
    port = receiver.port
    body = batch(0)
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    idle = socket.create_connection(("127.0.0.1", port), timeout=30)  # keep-alive, idle
    head = (
        "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body[:10])  # the request is in flight …
    time.sleep(0.2)
    stopper = threading.Thread(target=receiver.stop)
    stopper.start()  # … when the receiver is told to stop
    time.sleep(0.2)
    assert stopper.is_alive()  # it waits for the request
    sock.sendall(body[10:])
    answer = sock.recv(65536)
    stopper.join(timeout=30)
    assert not stopper.is_alive()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"Connection: close" in answer
    assert idle.recv(1) == b""  # the idle connection was closed
    sock.close()
    idle.close()
    with SpanStore.open(path, read_only=True) as store:
        assert store.span_count() == 3
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


def test_port_in_use(tmp_path: Path, receiver: Receiver) -> None:
    other = Receiver(tmp_path / "other.duckdb", port=receiver.port)
    with pytest.raises(CollectorError, match=f"cannot listen on 127.0.0.1:{receiver.port}"):
        other.start()
    with SpanStore.open(tmp_path / "other.duckdb") as store:  # the store was closed again
        assert store.span_count() == 0


def test_not_our_store(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n")
    with pytest.raises(NotAnOtelbenchStore, match="not a DuckDB database"):
        Receiver(path, port=0).start()
    assert path.read_text() == "shopping list\n"
