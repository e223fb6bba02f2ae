"""Reading a DuckDB span store while a collector process writes it, through snapshots (issue 8).

The collector runs as its own process (``python -m otelbench.collector``) and keeps ingesting;
``otelbench run --otlp-endpoint``, ``otelbench report`` and :meth:`SpanStore.open` read the store
beside it. DuckDB locks the file, so every read goes through a snapshot the collector takes on
request (``POST /otelbench/snapshot``), announced in ``<store>.writer.json``.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2 as c
from opentelemetry.proto.resource.v1 import resource_pb2 as r
from opentelemetry.proto.trace.v1 import trace_pb2 as t

from otelbench import semconv
from otelbench.collector.receiver import _is_loopback
from otelbench.errors import StoreError
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.store import SpanStore
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PB = {"Content-Type": "application/x-protobuf"}
T0 = 1_700_000_000_000_000_000
SPANS_PER_BATCH = 40


def batch_body(batch_id: int) -> bytes:
    """One request: :data:`SPANS_PER_BATCH` spans of trace ``batch_id`` (its identity)."""
    offsets = c.AnyValue(
        array_value=c.ArrayValue(values=[c.AnyValue(int_value=k) for k in range(100)])
    )
    spans = [
        t.Span(
            trace_id=batch_id.to_bytes(16, "big"),
            span_id=(i + 1).to_bytes(8, "big"),
            name="background",
            start_time_unix_nano=T0 + i,
            end_time_unix_nano=T0 + i + 1000,
            attributes=[c.KeyValue(key="otelbench.server.token_offsets_us", value=offsets)],
        )
        for i in range(SPANS_PER_BATCH)
    ]
    resource = r.Resource(
        attributes=[c.KeyValue(key="service.name", value=c.AnyValue(string_value="background"))]
    )
    request = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(resource=resource, scope_spans=[t.ScopeSpans(spans=spans)])]
    )
    return request.SerializeToString()


@dataclass
class Background:
    """A sender posting batches back to back; ``acked`` lists the ids answered 200, in order."""

    port: int
    acked: list[int] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=60)

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        batch_id = 1
        while not self.stop.is_set():
            conn.request("POST", "/v1/traces", batch_body(batch_id), PB)
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            self.acked.append(batch_id)
            batch_id += 1
        conn.close()


@dataclass
class Collector:
    proc: subprocess.Popen[str]
    port: int
    store: Path


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    yield from start_collector(tmp_path / "spans.duckdb")


def start_collector(store: Path, *extra: str) -> Iterator[Collector]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(store), "--port", "0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"collector did not start: {proc.communicate(timeout=30)}"
        ready: dict[str, Any] = json.loads(line)
        yield Collector(proc, int(ready["port"]), store)
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=60)


@pytest.fixture
def background(collector: Collector) -> Iterator[Background]:
    sender = Background(collector.port)
    sender.start()
    try:
        yield sender
    finally:
        sender.close()


def wait_for(condition: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.parent.iterdir() if ".snapshot-" in p.name)


def test_reads_see_every_acknowledged_batch_whole(
    collector: Collector, background: Background
) -> None:
    seen_before = 0
    for _ in range(3):
        more = len(background.acked) + 2
        wait_for(lambda: len(background.acked) > more)  # noqa: B023 - called at once
        acked_before = list(background.acked)  # answered 200 before the snapshot was asked for
        started = time.time_ns()
        with SpanStore.open(collector.store, read_only=True) as store:
            taken = store.snapshot_taken_unix_ns
            counts = dict(
                store.execute('SELECT "TraceId", count(*) FROM otel_traces GROUP BY "TraceId"')
            )
        assert taken is not None
        assert started <= taken <= time.time_ns()
        ids = {int(trace_id, 16) for trace_id in counts}
        assert set(acked_before) <= ids  # nothing acknowledged before the snapshot is missing
        assert set(counts.values()) == {SPANS_PER_BATCH}  # and no batch is there in part
        assert len(ids) >= seen_before
        seen_before = len(ids)
    assert leftovers(collector.store) == []
    assert collector.proc.poll() is None  # the collector kept ingesting throughout
    with pytest.raises(duckdb.IOException, match="Could not set lock"):
        duckdb.connect(str(collector.store))  # snapshots left the collector's lock in place


def test_watch_refreshes_from_a_store_the_collector_writes(
    collector: Collector, background: Background
) -> None:
    watcher = Watcher(collector.store, WatchConfig())
    for _ in range(2):
        watcher.refresh()
    assert watcher.last_error is None
    assert f"{semconv.METRIC_LIVE_REFRESH_ERRORS} 0" in watcher.metrics_text()
    assert leftovers(collector.store) == []


def test_run_and_report_while_the_collector_ingests(
    collector: Collector, background: Background, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "6",
        "--rate", "30", "--seed", "1", "--out", str(out), "--span-wait", "0",
        "--cold-start",
        "--otlp-endpoint", f"http://127.0.0.1:{collector.port}", "--store", str(collector.store),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "report.json").read_text())["run"]["requests"]["total"] == 6

    acked = len(background.acked)
    proc = otelbench("report", str(out), "--store", str(collector.store))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["requests"] == {
        "total": 6,
        "succeeded": 6,
        "failed": 0,
        "failed_by_type": {},
    }
    note = re.search(
        r"is being written by its collector: read from a snapshot taken at (\S+); "
        r"spans stored after it are not included",
        proc.stderr,
    )
    assert note is not None, proc.stderr
    assert len(background.acked) > acked  # ingest went on while the report was computed
    assert leftovers(collector.store) == []

    background.close()
    collector.proc.terminate()
    _, err = collector.proc.communicate(timeout=60)
    assert collector.proc.returncode == 0, err
    assert not Path(f"{collector.store}.writer.json").exists()  # withdrawn on a clean stop


def test_snapshots_need_the_collectors_bearer_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    token_file.chmod(0o600)
    store = tmp_path / "spans.duckdb"
    for running in start_collector(store, "--auth-token-file", str(token_file)):
        conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=30)
        conn.request("POST", "/otelbench/snapshot", b"")
        response = conn.getresponse()
        response.read()
        assert response.status == 401
        conn.request(
            "POST", "/v1/traces", batch_body(7), {**PB, "Authorization": "Bearer s3cret-token"}
        )
        assert conn.getresponse().status == 200
        conn.close()
        announcement = Path(f"{store}.writer.json")
        assert announcement.stat().st_mode & 0o777 == 0o600
        with SpanStore.open(store, read_only=True) as reader:  # the announcement has the token
            assert reader.span_count() == SPANS_PER_BATCH
        assert leftovers(store) == []


@pytest.mark.parametrize(
    ("address", "served"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("192.0.2.2", False),
        ("fd00::2", False),
        ("fe80::1%eth0", False),
        ("::ffff:10.0.0.1", False),
    ],
)
def test_snapshots_are_served_to_clients_on_this_host_only(address: str, served: bool) -> None:
    assert _is_loopback(address) is served


def test_a_writer_that_serves_no_snapshots_is_a_clear_error(tmp_path: Path) -> None:
    store = tmp_path / "spans.duckdb"
    SpanStore.open(store).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb,sys; c=duckdb.connect({str(store)!r}); "
         "print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(StoreError, match="in use by another process"):
            SpanStore.open(store, read_only=True)
        # an announcement left by a collector that died is ignored: the pids differ
        stale = {"pid": holder.pid + 1, "snapshot_url": "http://127.0.0.1:9/x", "token": None}
        Path(f"{store}.writer.json").write_text(json.dumps(stale))
        with pytest.raises(StoreError, match="in use by another process"):
            SpanStore.open(store, read_only=True)
    finally:
        holder.communicate("", timeout=30)


class _Liar(http.server.BaseHTTPRequestHandler):
    """A snapshot endpoint that names a file outside the store's directory."""

    victim = ""

    def do_POST(self) -> None:
        body = json.dumps({"path": self.victim, "taken_unix_ns": 1}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_snapshot_answer_naming_another_file_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store" / "spans.duckdb"
    store.parent.mkdir()
    SpanStore.open(store).close()
    victim = tmp_path / "precious.duckdb"
    duckdb.connect(str(victim)).close()
    _Liar.victim = str(victim)
    liar = http.server.HTTPServer(("127.0.0.1", 0), _Liar)
    threading.Thread(target=liar.serve_forever, daemon=True).start()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb,sys; c=duckdb.connect({str(store)!r}); "
         "print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        url = f"http://127.0.0.1:{liar.server_address[1]}/otelbench/snapshot"
        announcement = {"pid": holder.pid, "snapshot_url": url, "token": None}
        Path(f"{store}.writer.json").write_text(json.dumps(announcement))
        with pytest.raises(StoreError, match="unexpected snapshot path"):
            SpanStore.open(store, read_only=True)
        assert victim.exists()  # never opened, never unlinked
    finally:
        holder.communicate("", timeout=30)
        liar.shutdown()
        liar.server_close()
