"""Nobody let in: the receiver's bearer token, TLS and per-client rate limit (docs/security.md).

Real sockets, the real OTel OTLP/HTTP exporter configured through its standard environment
variables, a self-signed certificate made by the ``openssl`` command for each session.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2 as t
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.collector import Receiver
from otelbench.collector.access import RateLimit, server_tls_context
from otelbench.errors import ConfigError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token_0123456789"
PB = {"Content-Type": "application/x-protobuf"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
T0 = 1_700_000_000_000_000_000


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed EC certificate for 127.0.0.1 and localhost, and its key (openssl CLI)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert),
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


def batch(name: str, n: int = 2) -> bytes:
    spans = [
        t.Span(
            trace_id=os.urandom(16),
            span_id=os.urandom(8),
            name=f"{name}-{i}",
            start_time_unix_nano=T0,
            end_time_unix_nano=T0 + 1000,
        )
        for i in range(n)
    ]
    request = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(scope_spans=[t.ScopeSpans(spans=spans)])]
    )
    return request.SerializeToString()


def post(
    conn: http.client.HTTPConnection, path: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn.request("POST" if body is not None else "GET", path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read(), response


def names(receiver: Receiver) -> set[str]:
    return {name for (name,) in receiver.store.execute('SELECT "SpanName" FROM otel_traces')}


def export(endpoint: str, name: str, timeout: float = 10) -> SpanExportResult:
    """Export one span through the real OTLP/HTTP exporter (headers and CA from the env)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otelbench-client"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.get_tracer("test").start_span(name).end()
    provider.shutdown()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        return exporter.export(memory.get_finished_spans())
    finally:
        exporter.shutdown()


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Receiver]:
    with Receiver(
        tmp_path / "spans.duckdb", port=0, auth_token=TOKEN, max_body_bytes=64 << 10
    ) as r:
        yield r


# --------------------------------------------------------------------------------------------
# bearer token
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}",
     "Bearer", TOKEN],
)  # fmt: skip
def test_without_the_token_nothing_is_stored(guarded: Receiver, authorization: str | None) -> None:
    headers = dict(PB) if authorization is None else {**PB, "Authorization": authorization}
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    status, body, response = post(conn, "/v1/traces", batch("refused"), headers)
    assert status == 401
    assert response.getheader("WWW-Authenticate") == 'Bearer realm="otelbench"'
    assert response.getheader("Content-Type") == "application/x-protobuf"
    reply = status_pb2.Status.FromString(body)
    assert reply.code == 16  # UNAUTHENTICATED
    assert "bearer token" in reply.message
    assert guarded.store.span_count() == 0
    assert guarded.stats().rejected == {"unauthorized": 1}
    assert guarded.stats().requests_accepted == 0
    # the refused body was read: the same keep-alive connection carries the next request
    status, _, _ = post(conn, "/v1/traces", batch("accepted"), {**PB, **AUTH})
    conn.close()
    assert status == 200
    assert names(guarded) == {"accepted-0", "accepted-1"}


def test_the_token_guards_every_route(guarded: Receiver) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    routes = [("GET", "/otelbench/stats"), ("GET", "/v1/traces"), ("POST", "/v1/metrics"),
              ("DELETE", "/nowhere"), ("HEAD", "/")]  # fmt: skip
    for method, path in routes:
        conn.request(method, path, body=b"{}" if method == "POST" else None)
        response = conn.getresponse()
        response.read()
        assert (method, path, response.status) == (method, path, 401)  # not 404/405: no probing
    status, body, _ = post(conn, "/otelbench/stats", None, AUTH)
    conn.close()
    assert status == 200
    assert json.loads(body)["rejected"] == {"unauthorized": 5}


def test_oversized_bodies_get_413_once_authenticated(guarded: Receiver) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    status, _, _ = post(conn, "/v1/traces", bytes(100 << 10), {**PB, **AUTH})
    conn.close()
    assert status == 413
    assert guarded.stats().rejected == {"too_large": 1}
    assert guarded.store.span_count() == 0


def test_the_sdk_exporter_sends_the_token_from_its_standard_env(
    guarded: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = f"http://127.0.0.1:{guarded.port}/v1/traces"
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS", raising=False)
    assert export(endpoint, "no-token") is SpanExportResult.FAILURE  # 401 is not retried
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{TOKEN}")
    assert export(endpoint, "with-token") is SpanExportResult.SUCCESS
    assert names(guarded) == {"with-token"}
    assert guarded.stats().rejected == {"unauthorized": 1}


# --------------------------------------------------------------------------------------------
# rate limit
# --------------------------------------------------------------------------------------------
def test_a_flooding_client_is_slowed_and_others_are_served(tmp_path: Path) -> None:
    limit = RateLimit(per_s=5, burst=5)
    with Receiver(tmp_path / "spans.duckdb", port=0, rate_limit=limit) as receiver:
        flood = http.client.HTTPConnection(
            "127.0.0.1", receiver.port, timeout=30, source_address=("127.0.0.2", 0)
        )
        other = http.client.HTTPConnection(
            "127.0.0.1", receiver.port, timeout=30, source_address=("127.0.0.3", 0)
        )
        accepted: list[str] = []
        retry_after: list[str | None] = []
        served_other: list[int] = []
        for i in range(60):
            status, body, response = post(flood, "/v1/traces", batch(f"flood{i}", 1), PB)
            if status == 200:
                accepted.append(f"flood{i}-0")
            else:
                assert status == 429
                assert status_pb2.Status.FromString(body).code == 8  # RESOURCE_EXHAUSTED
                retry_after.append(response.getheader("Retry-After"))
            if i % 20 == 0:
                served_other.append(post(other, "/v1/traces", batch(f"other{i}", 1), PB)[0])
        flood.close()
        other.close()
        stats = receiver.stats()
        assert served_other == [200, 200, 200]
        assert 5 <= len(accepted) < 60
        assert set(retry_after) == {"1"}  # whole seconds, at least 1
        assert stats.rejected == {"rate_limited": 60 - len(accepted)}
        assert names(receiver) == set(accepted) | {"other0-0", "other20-0", "other40-0"}


def test_the_sdk_exporter_honours_retry_after(tmp_path: Path) -> None:
    limit = RateLimit(per_s=1, burst=1)
    with Receiver(tmp_path / "spans.duckdb", port=0, rate_limit=limit) as receiver:
        endpoint = f"http://127.0.0.1:{receiver.port}/v1/traces"
        assert export(endpoint, "first") is SpanExportResult.SUCCESS
        assert export(endpoint, "second") is SpanExportResult.SUCCESS  # 429, waits, retries
        assert names(receiver) == {"first", "second"}
        assert receiver.stats().rejected["rate_limited"] >= 1


# --------------------------------------------------------------------------------------------
# TLS
# --------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_round_trip_with_the_sdk_exporter(
    tmp_path: Path, tls_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = tls_files
    tls = server_tls_context(cert, key)
    with Receiver(tmp_path / "spans.duckdb", port=0, tls=tls, auth_token=TOKEN) as receiver:
        endpoint = f"https://127.0.0.1:{receiver.port}/v1/traces"
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{TOKEN}")
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_CERTIFICATE", raising=False)
        # requests (under the exporter) lets these override OTEL_EXPORTER_OTLP_CERTIFICATE
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
        monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
        assert export(endpoint, "untrusted", timeout=1) is SpanExportResult.FAILURE  # unknown CA
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", str(cert))
        assert export(endpoint, "over-tls") is SpanExportResult.SUCCESS
        assert names(receiver) == {"over-tls"}
        assert receiver.stats().rejected.get("tls_error", 0) >= 1
        # a plain-HTTP client gets no answer, and the receiver keeps serving
        plain = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            post(plain, "/v1/traces", batch("plain"), {**PB, **AUTH})
        plain.close()
        client = ssl.create_default_context(cafile=str(cert))
        raw = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
        with client.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            assert conn.version() in ("TLSv1.2", "TLSv1.3")
        old = ssl.create_default_context(cafile=str(cert))
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
        raw = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
        with raw, pytest.raises(ssl.SSLError):
            old.wrap_socket(raw, server_hostname="127.0.0.1")
        assert names(receiver) == {"over-tls"}


def test_a_stalled_handshake_holds_up_neither_clients_nor_stop(
    tmp_path: Path, tls_files: tuple[Path, Path]
) -> None:
    tls = server_tls_context(*tls_files)
    with Receiver(tmp_path / "spans.duckdb", port=0, tls=tls, socket_timeout=120) as receiver:
        stalled = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
        with stalled:  # connected, and never says a word
            context = ssl.create_default_context(cafile=str(tls_files[0]))
            conn = http.client.HTTPSConnection(
                "127.0.0.1", receiver.port, timeout=10, context=context
            )
            assert post(conn, "/v1/traces", batch("served"), PB)[0] == 200
            conn.close()
            assert names(receiver) == {"served-0", "served-1"}
            started = time.monotonic()
            receiver.stop()  # ends the stalled handshake instead of waiting out its timeout
            assert time.monotonic() - started < 60
    assert receiver.stats().rejected == {"tls_error": 1}


@pytest.mark.parametrize(
    ("files", "message"),
    [(("cert", None), "needs both --tls-cert and --tls-key"),
     (("missing", "key"), "no such file"),
     (("key", "key"), "cannot load the TLS certificate")],
)  # fmt: skip
def test_bad_tls_files_are_one_line_errors(
    tls_files: tuple[Path, Path], files: tuple[str | None, str | None], message: str
) -> None:
    paths = {"cert": tls_files[0], "key": tls_files[1], "missing": Path("/nonexistent.pem")}
    with pytest.raises(ConfigError, match=message):
        server_tls_context(*(paths[f] if f else None for f in files))


# --------------------------------------------------------------------------------------------
# the standalone process
# --------------------------------------------------------------------------------------------
def test_the_process_reads_its_token_from_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, "OTELBENCH_RECEIVER_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(tmp_path / "s.duckdb"),
         "--port", "0", "--rate-limit", "100"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        conn = http.client.HTTPConnection("127.0.0.1", ready["port"], timeout=30)
        assert post(conn, "/v1/traces", batch("anon"), PB)[0] == 401
        assert post(conn, "/v1/traces", batch("ok"), {**PB, **AUTH})[0] == 200
        conn.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    stopped = json.loads(out)
    assert (stopped["spans"], stopped["rejected"]) == (2, {"unauthorized": 1})
    assert proc.returncode == 0, err


def test_the_process_refuses_an_empty_token_file(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    done = subprocess.run(
        [sys.executable, "-m", "otelbench.collector", "--store", str(tmp_path / "s.duckdb"),
         "--port", "0", "--auth-token-file", str(empty)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"otelbench collector: the token file {empty} is empty\n"
    assert done.stdout == ""


def test_the_runs_own_collector_ignores_an_operators_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``otelbench run``'s loopback collector is the run's: a receiver token exported for the
    operator's collector does not lock the run's own exporters out of it."""
    from otelbench.benchmark import EmbeddedCollector

    monkeypatch.setenv("OTELBENCH_RECEIVER_TOKEN", TOKEN)
    collector = EmbeddedCollector(tmp_path / "spans.duckdb")
    endpoint = collector.start()
    try:
        assert export(endpoint + "/v1/traces", "run-span") is SpanExportResult.SUCCESS
        answer = httpx.get(endpoint + "/otelbench/stats", timeout=5.0)
        assert answer.status_code == 200, answer.text  # no token asked for here either
        assert answer.json()["spans_accepted"] == 1
    finally:
        stopped = collector.stop()
    assert stopped["spans"] == 1
    assert stopped["rejected"] == {}
