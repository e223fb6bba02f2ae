"""``python -m otelbench.collector`` as a process: ready line, SIGKILL durability, SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.collector.receiver import STATS_PATH, STORE_MEMORY_EVERY_S
from otelbench.store import SpanStore
from otelbench.store.duckdb import WRITER_MEMORY_LIMIT

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def start_collector(store: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(store), *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ready_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"collector exited early: {proc.communicate(timeout=30)}"
    event: dict[str, Any] = json.loads(line)
    return event


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any], Path]]:
    store = tmp_path / "spans.duckdb"
    proc = start_collector(store, "--port", "0")
    try:
        yield proc, ready_line(proc), store
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def some_spans(n: int, prefix: str) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otelbench-client"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("otelbench")
    for i in range(n):
        with tracer.start_as_current_span(f"{prefix}-{i}") as span:
            span.set_attribute("otelbench.client.chunk_offsets_us", list(range(i, i + 120)))
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_ready_line(collector: tuple[subprocess.Popen[str], dict[str, Any], Path]) -> None:
    proc, ready, _ = collector
    assert set(ready) == {"event", "host", "port", "pid"}
    assert ready["event"] == "ready"
    assert ready["host"] == "127.0.0.1"
    assert isinstance(ready["port"], int)
    assert ready["port"] > 0
    assert ready["pid"] == proc.pid


def test_acknowledged_spans_survive_sigkill(
    collector: tuple[subprocess.Popen[str], dict[str, Any], Path],
) -> None:
    proc, ready, store = collector
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{ready['port']}/v1/traces", timeout=30)
    acknowledged: set[str] = set()
    for batch in range(20):
        spans = some_spans(25, f"b{batch}")
        assert exporter.export(spans) is SpanExportResult.SUCCESS  # HTTP 200: committed
        acknowledged |= {f"{s.context.span_id:016x}" for s in spans}
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    exporter.shutdown()
    with SpanStore.open(store, read_only=True) as reopened:
        stored = {sid for (sid,) in reopened.execute('SELECT "SpanId" FROM otel_traces')}
        assert stored == acknowledged
        assert reopened.span_count() == 500
        [(offsets,)] = reopened.execute(
            """SELECT "SpanAttributes"['otelbench.client.chunk_offsets_us']::BIGINT[]
               FROM otel_traces WHERE "SpanName" = 'b7-3'"""
        )
        assert offsets == list(range(3, 123))


def test_sigterm_stops_gracefully(
    collector: tuple[subprocess.Popen[str], dict[str, Any], Path],
) -> None:
    proc, ready, store = collector
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{ready['port']}/v1/traces", timeout=30)
    assert exporter.export(some_spans(7, "t")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    stopped = json.loads(out.strip())
    assert stopped == {
        "event": "stopped",
        "spans": 7,
        "metric_points": 0,
        "spans_rejected": 0,
        "rejected": {},
    }
    assert not Path(f"{store}.wal").exists()  # closed cleanly: the WAL was checkpointed
    with SpanStore.open(store, read_only=True) as reopened:
        assert reopened.span_count() == 7


def test_stats_say_how_much_memory_the_store_holds(
    collector: tuple[subprocess.Popen[str], dict[str, Any], Path],
) -> None:
    """The part of the collector's RSS that grows with the store by design (DuckDB's cached
    blocks, up to the writer's memory limit), so a soak can tell it from a leak."""
    _, ready, _ = collector
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{ready['port']}/v1/traces", timeout=30)
    assert exporter.export(some_spans(2000, "m")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    time.sleep(STORE_MEMORY_EVERY_S)  # a reading taken before the batch is not reused
    stats = httpx.get(f"http://127.0.0.1:{ready['port']}{STATS_PATH}", timeout=10).json()
    assert stats["spans_accepted"] == 2000
    limit = int(WRITER_MEMORY_LIMIT.removesuffix("MiB")) << 20
    assert 0 < stats["store_memory_bytes"] <= limit


def test_sigint_stops_too(collector: tuple[subprocess.Popen[str], dict[str, Any], Path]) -> None:
    proc, _, _ = collector
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert json.loads(out)["event"] == "stopped"


def test_not_an_otelbench_store_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    proc = start_collector(path, "--port", "0")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("otelbench collector: ")
    assert "not a DuckDB database" in err
    assert path.read_text() == "a,b\n1,2\n"


def test_port_in_use_exits_2(
    tmp_path: Path, collector: tuple[subprocess.Popen[str], dict[str, Any], Path]
) -> None:
    _, ready, _ = collector
    proc = start_collector(tmp_path / "second.duckdb", "--port", str(ready["port"]))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert out == ""
    assert err.count("\n") == 1
    assert f"cannot listen on 127.0.0.1:{ready['port']}" in err


def test_store_locked_by_a_running_collector_exits_2(
    collector: tuple[subprocess.Popen[str], dict[str, Any], Path],
) -> None:
    _, _, store = collector
    proc = start_collector(store, "--port", "0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.count("\n") == 1
    assert "in use by another process" in err
    assert store.exists()


def test_it_serves_on_a_listening_socket_handed_down_by_its_parent(tmp_path: Path) -> None:
    """``--listen-fd``: the parent knows the endpoint before the child has started, and a
    connection made before the child serves waits in the backlog and is then answered."""
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        early = socket.create_connection(("127.0.0.1", port))  # before the child exists
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbench.collector", "--store", str(tmp_path / "s.duckdb"),
             "--listen-fd", str(listening.fileno())],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            pass_fds=(listening.fileno(),),
        )  # fmt: skip
    try:
        assert ready_line(proc)["port"] == port
        with early:
            early.sendall(b"GET /otelbench/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status_line = early.recv(64).split(b"\r\n", 1)[0]
        assert status_line.split()[1] == b"200", status_line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


@pytest.mark.parametrize("what", ["closed", "not listening"])
def test_a_listen_fd_that_is_no_listening_socket_exits_2(tmp_path: Path, what: str) -> None:
    with socket.socket() as unbound:
        fd = unbound.fileno() if what == "not listening" else 1000
        proc = subprocess.Popen(
            [sys.executable, "-m", "otelbench.collector", "--store", str(tmp_path / "s.duckdb"),
             "--listen-fd", str(fd)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            pass_fds=(unbound.fileno(),),
        )  # fmt: skip
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"otelbench collector: --listen-fd {fd}")
