"""One run sent from four hosts: ``otelbench run --shard I/4`` in four network namespaces.

Real parts only, all on this machine: each shard is the CLI in a child process inside its own
network namespace with its own address (made here with ``ip netns`` and a veth pair each; the
traffic never leaves the machine), against the scripted server (tests/fixtures/scripted_server.py)
and one collector (``python -m otelbench.collector``) writing a chdb store, both listening on the
host's side of every pair, and an SNTP server (tests/fixtures/sntp_server.py) each shard measures
its clock from. ``otelbench report --run-id`` then builds the run's one report from the store.

What it shows: the shards together sent the one seeded schedule, every request exactly once
(indices, send offsets); each request's client timing lands on the server's own send times as a
single host's does (CLOCK_MONOTONIC is one clock across network namespaces, so the server's log
is the truth for every shard); the store joins the four run spans into one run with each shard's
host, start lateness and clock evidence; the warm-up ran once, on shard 0; and a shard killed
mid-run is named in the report, never a silently smaller run.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelbench import draft, semconv
from otelbench.loadgen.arrivals import arrival_schedule
from otelbench.model.conform import conforms
from otelbench.model.report import Report
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors
from tests.fixtures.sntp_server import SntpServer

pytestmark = pytest.mark.integration

REQUESTS = 48
RATE = 40.0
SEED = 5
SLACK_NS = 50_000_000
"""Each chunk's measured arrival lands within this of the server's write of it (four shards, a
collector and the server share this machine's two cores with the rest of the quick tier); the
median must be within :data:`MEDIAN_SLACK_NS`, and nothing may arrive before it was written."""
MEDIAN_SLACK_NS = 5_000_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


_FIXTURES = itertools.count()


@dataclass(frozen=True)
class Host:
    """A network namespace with its own address; ``gateway`` is the host side of its pair."""

    netns: str
    address: str
    gateway: str


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    """Four network namespaces, each joined to this one by a veth pair of its own subnet."""
    tag = f"{os.getpid() % 100_000}{next(_FIXTURES) % 10}"  # unique on this machine now
    subnet = 20 + os.getpid() % 200
    made: list[Host] = []
    links: list[str] = []
    try:
        for i in range(4):
            name, outside, inside = f"ob{tag}s{i}", f"obh{tag}{i}", f"obn{tag}{i}"
            third = int(tag[-1]) * 4 + i
            ip("netns", "add", name)
            made.append(Host(name, f"10.{subnet}.{third}.2", f"10.{subnet}.{third}.1"))
            ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            links.append(outside)
            ip("link", "set", inside, "netns", name)
            ip("addr", "add", f"10.{subnet}.{third}.1/24", "dev", outside)
            ip("link", "set", outside, "up")
            ip("-n", name, "addr", "add", f"10.{subnet}.{third}.2/24", "dev", inside)
            ip("-n", name, "link", "set", inside, "up")
            ip("-n", name, "link", "set", "lo", "up")
        yield made
    finally:
        for link in links:  # the pair goes with either end
            subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
        for host in made:
            subprocess.run(["ip", "netns", "del", host.netns], check=False, capture_output=True)


@dataclass
class Bench:
    server: ScriptedServer
    sntp: SntpServer
    collector: subprocess.Popen[str]
    collector_port: int
    store: str


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    """The scripted server, the SNTP reference and the collector (chdb), on every address."""
    store = f"chdb://{tmp_path / 'ch'}"
    port = free_port()
    collector = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", store, "--host", "0.0.0.0",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert collector.stdout is not None
    line = collector.stdout.readline()
    assert json.loads(line)["event"] == "ready", line + (
        collector.stderr.read() if collector.stderr else ""
    )
    try:
        with ScriptedServer(bind="0.0.0.0") as server, SntpServer(host="0.0.0.0") as sntp:
            yield Bench(server, sntp, collector, port, store)
    finally:
        if collector.poll() is None:
            collector.send_signal(signal.SIGTERM)
        collector.communicate(timeout=60)  # and closes its pipes


def start_shard(
    host: Host, bench: Bench, out: Path, index: int, count: int, run_id: str, start_at: float
) -> subprocess.Popen[str]:
    sntp_port = bench.sntp.address.rsplit(":", 1)[1]
    return subprocess.Popen(
        ["ip", "netns", "exec", host.netns, sys.executable, "-m", "otelbench.cli", "run",
         "--target", f"http://{host.gateway}:{bench.server.port}", "--model", "m",
         "--requests", str(REQUESTS), "--rate", str(RATE), "--seed", str(SEED),
         "--vocab-size", "1024", "--out", str(out / f"shard-{index}"),
         "--extra-body", json.dumps({"script": {"name": "irregular", "tag": run_id}}),
         "--warmup-requests", "4", "--warmup-tokens", "0", "--span-wait", "0",
         "--otlp-endpoint", f"http://{host.gateway}:{bench.collector_port}",
         "--store", bench.store, "--shard", f"{index}/{count}", "--run-id", run_id,
         "--start-at", f"{start_at:.3f}", "--clock-reference", f"{host.gateway}:{sntp_port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def stop_collector(bench: Bench) -> None:
    bench.collector.send_signal(signal.SIGTERM)
    _, stderr = bench.collector.communicate(timeout=60)
    assert bench.collector.returncode == 0, stderr


_DUMP = """
import json, sys
from otelbench.store.clickhouse import ChdbUrl, open_chdb_connection
url = ChdbUrl.parse(sys.argv[1])
with open_chdb_connection(url.path, url.database) as conn:
    table = conn.query_arrow(
        "SELECT SpanAttributes FROM otel_traces WHERE SpanKind = 'Client' "
        "AND SpanAttributes['otelbench.run.id'] = {run:String}", {"run": sys.argv[2]}, "test")
print(json.dumps([dict(a) for a in table.column(0).to_pylist()]))
"""


def client_attributes(store: str, run_id: str) -> list[dict[str, str]]:
    """Every client span's attributes of run ``run_id`` in the chdb ``store``, read in a child
    process (chdb serves one data directory per process: this one's is the tests')."""
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP, store, run_id], capture_output=True, text=True, check=True
    )
    rows: list[dict[str, str]] = json.loads(proc.stdout)
    return rows


_RUNS = """
import json, sys
from otelbench.query import open_store
from otelbench.query.extract import list_runs
with open_store(sys.argv[1]) as runner:
    print(json.dumps([r.manifest for r in list_runs(runner) if r.run_id == sys.argv[2]]))
"""


def joined_manifest(store: str, run_id: str) -> dict[str, Any]:
    """Run ``run_id``'s manifest as the store lists it (in a child process, as above)."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUNS, store, run_id], capture_output=True, text=True, check=True
    )
    (manifest,) = json.loads(proc.stdout)
    assert isinstance(manifest, dict)
    return manifest


def measured_spans(attributes: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The measured requests' facts from their client spans' attributes."""
    return [
        {
            "index": int(a[semconv.REQUEST_INDEX]),
            "shard": int(a[semconv.LOADGEN_SHARD]),
            "scheduled_offset_us": int(a[semconv.REQUEST_SCHEDULED_OFFSET_US]),
            "response_id": a[semconv.GEN_AI_RESPONSE_ID],
            "submit_mono_ns": int(a[semconv.CLIENT_SUBMIT_MONO_NS]),
            "chunk_offsets_us": json.loads(a[semconv.CLIENT_CHUNK_OFFSETS_US]),
        }
        for a in attributes
        if a[semconv.REQUEST_PHASE] == semconv.PHASE_MEASURE
    ]


def test_four_shards_send_the_one_schedule_once_and_report_as_one_run(
    hosts: list[Host], bench: Bench, tmp_path: Path
) -> None:
    run_id = "sharded-4"
    start_at = time.time() + 12.0  # every shard's process is up by then, even on a busy host
    procs = [start_shard(h, bench, tmp_path, i, 4, run_id, start_at) for i, h in enumerate(hosts)]
    for i, proc in enumerate(procs):
        _, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, f"shard {i}: {stderr}"
        assert f"shard {i}/4 of run {run_id} done" in stderr
        assert not (tmp_path / f"shard-{i}" / "report.json").exists()  # a shard is part of a run
    stop_collector(bench)

    # The store: the four run spans are one run, with each shard's facts.
    manifest = joined_manifest(bench.store, run_id)
    assert manifest["shard_count"] == 4
    assert manifest["requests_sent"] == REQUESTS
    shards = manifest["shards"]
    assert [s["index"] for s in shards] == [0, 1, 2, 3]
    assert all(s["requests_sent"] == REQUESTS // 4 for s in shards)
    assert all(isinstance(s["start_late_ms"], float) for s in shards)
    for s in shards:
        clock = s["clock"]
        assert clock["measured"]["samples"] > 0, clock
        assert clock["method"].startswith("SNTP offset from 10.")
        # one kernel clock: the true offset is 0, so the measured one lies within its bound
        measured = clock["measured"]
        assert abs(measured["offset_ms"]) <= measured["error_bound_ms"] + 0.001, measured
        assert clock["within_limit"] is (clock["accuracy_ms"] <= draft.CLOCK_SYNC_MAX_ERROR_MS)
    assert manifest["warmup"]["mode"] == "warm"  # shard 0's
    assert "shards 1, 2, 3: the warm-up (draft 4.5) ran on shard 0" in manifest["notes"]

    # The report: one run, every request once.
    out = tmp_path / "report"
    proc = otelbench("report", str(out), "--store", bench.store, "--run-id", run_id, "--wait", "60")
    assert proc.returncode == 0, proc.stderr
    assert f"otelbench: run {run_id}: 4 of 4 shard(s) ended\n" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["id"] == run_id
    assert report["run"]["requests"]["total"] == REQUESTS
    assert report["run"]["requests"]["succeeded"] == REQUESTS
    assert report["metrics"]["client"]["ttft_ms"]["count"] == REQUESTS
    assert conforms(report, Report) == []
    shards = report["run"]["shards"]
    assert (shards["count"], shards["missing"]) == (4, [])
    assert [r["index"] for r in shards["rows"]] == [0, 1, 2, 3]
    for row in shards["rows"]:
        assert row["requests_sent"] == REQUESTS // 4
        assert row["host"]
        assert row["loop_lateness_p99_ms"] is not None
        assert row["cpu_utilization_max"] is not None
        assert row["cpu_utilization_max"] > 0
        assert row["clock"]["within_limit"] is not None  # measured evidence on every shard
    checks = {c["id"]: c for c in report["compliance"]["checks"]}
    assert (
        "per shard (run.shards), loop lateness P99: 0 " in checks["timing-resolution"]["evidence"]
    )
    assert (
        "per shard (run.shards), schedule lag P99: 0 " in checks["open-loop-isolation"]["evidence"]
    )
    clock = checks["clock-sync-accuracy"]  # the run is distributed: sent from several hosts
    assert clock["met"] is all(r["clock"]["within_limit"] for r in shards["rows"]), clock
    assert clock["evidence"].startswith("measured per shard (run.shards): 0 SNTP offset from 10.")
    markdown = (out / "report.md").read_text()
    assert "## Shards (draft 4.2.1, 4.2.5, 4.7.2)" in markdown
    assert "4 of 4 shard(s) reported." in markdown

    # Every request once, by the shard its index names, at its offset of the one schedule.
    attributes = client_attributes(bench.store, run_id)
    spans = measured_spans(attributes)
    assert sorted(s["index"] for s in spans) == list(range(REQUESTS))
    assert all(s["shard"] == s["index"] % 4 for s in spans)
    offsets = arrival_schedule("poisson", rate=RATE, n=REQUESTS, seed=SEED)
    for s in spans:
        assert s["scheduled_offset_us"] == pytest.approx(offsets[s["index"]] * 1e6, abs=1.0)
    warmup = [a for a in attributes if a[semconv.REQUEST_PHASE] != semconv.PHASE_MEASURE]
    assert warmup  # the warm-up and its probes, once, on shard 0
    assert {a[semconv.LOADGEN_SHARD] for a in warmup} == {"0"}

    # Each request's chunks land on the server's writes of them.
    errors: list[int] = []
    for s in spans:
        entry = bench.server.entry(s["response_id"])
        errors += chunk_errors(s["submit_mono_ns"], s["chunk_offsets_us"], entry).errors_ns
    assert min(errors) >= -1_000_000
    assert max(errors) <= SLACK_NS
    assert statistics.median(errors) <= MEDIAN_SLACK_NS


def test_a_shard_killed_mid_run_is_named_in_the_report(
    hosts: list[Host], bench: Bench, tmp_path: Path
) -> None:
    run_id = "sharded-killed"
    start_at = time.time() + 10.0
    procs = [
        start_shard(h, bench, tmp_path, i, 2, run_id, start_at) for i, h in enumerate(hosts[:2])
    ]
    time.sleep(max(0.0, start_at - time.time()) + 0.4)  # shard 1 has sent some of its part
    procs[1].kill()
    procs[1].communicate(timeout=30)
    _, stderr = procs[0].communicate(timeout=240)
    assert procs[0].returncode == 0, stderr
    stop_collector(bench)
    out = tmp_path / "report"
    proc = otelbench("report", str(out), "--store", bench.store, "--run-id", run_id, "--wait", "1")
    assert proc.returncode == 0, proc.stderr
    assert f"run {run_id}: 1 of 2 shard(s) ended after 1 s; reporting what is stored" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    deviations = report["methodology"]["deviations"]
    named = [d for d in deviations if d.startswith("shard 1 of 2: no run span in the store")]
    assert len(named) == 1, deviations
    shards = report["run"]["shards"]
    assert (shards["count"], shards["missing"]) == (2, [1])
    assert [r["index"] for r in shards["rows"]] == [0]
    assert "no run span from shard(s) 1: see the deviations." in (out / "report.md").read_text()
    checks = {c["id"]: c for c in report["compliance"]["checks"]}
    for check in ("timing-resolution", "open-loop-isolation", "clock-sync-accuracy"):
        assert checks[check]["met"] is False, checks[check]
        assert "shard(s) 1 of 2: no evidence (no run span)" in checks[check]["evidence"]
    assert report["compliance"]["verdict"] == "not compliant"
    sent = report["run"]["requests"]["total"]
    assert REQUESTS // 2 <= sent < REQUESTS  # shard 0's half, and what of shard 1's was stored
