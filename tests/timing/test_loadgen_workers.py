"""Load-generator workers and the report's check of its own timing, end to end.

Real parts only: ``run_benchmark`` in this process (and, with ``workers`` > 1, its worker
processes), the embedded collector in its own process writing a DuckDB file, and the scripted SSE
server (tests/fixtures/scripted_server.py) in a third.

The overload is made deterministic: a result callback that burns 15 ms of this thread's CPU time
(``time.thread_time_ns``, so it burns as much whatever the machine's speed or load) on the event
loop that times the chunks. With one worker, that loop is this process's: every callback blocks
it for at least 15 ms, about seven 2 ms timer ticks late by more than 1 ms each, for 24 requests
over about a second, so the loop lateness P99 is far over 1 ms and the timing-resolution check
(draft 4.2.1) must not be met. With two workers the callback runs in this process while the
workers' loops time the chunks, unburdened.

An unburdened loop can still run late on this shared 2-core machine when other processes hold
both cores (its wake-ups wait on a run queue). So the unburdened runs are tried up to three
times; one must meet the check, or else every attempt must show what made it late: no worker
busy with its own load (under half a core) and the loop thread waiting for a core, or the host
(a VM's) stealing the CPUs, at least 0.5 % of the time (a lateness P99 over 1 ms at a 2 ms tick
needs 1 % of the ticks stalled by more than 1 ms, i.e. stalls of at least about 1 % of the time).
The report's own evidence, checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from otelbench import semconv
from otelbench.benchmark import run_benchmark, write_reports
from otelbench.client import CompletionResult
from otelbench.errors import WorkerError
from otelbench.loadgen.runner import ExportSpec, LoadSpec, RunConfig, execute_run
from otelbench.loadgen.warmup import WarmupSpec
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors

pytestmark = pytest.mark.timing  # load health and Ctrl-C timing

BURN_NS = 15_000_000
REQUESTS = 24
ATTEMPTS = 3
SCRIPT = {"n": 16, "ttft_ms": 5.0, "itl_ms": 5.0}


def burn(_result: CompletionResult) -> None:
    """15 ms of this thread's CPU time, on whichever loop calls it."""
    end = time.thread_time_ns() + BURN_NS
    while time.thread_time_ns() < end:
        pass


def config(url: str, workers: int, load: LoadSpec, tag: str) -> RunConfig:
    return RunConfig(
        target=url,
        model="m",
        load=load,
        seed=5,
        workload_params={"vocab_size": 1024},
        extra_body={"script": {**SCRIPT, "tag": tag}},
        warmup=WarmupSpec(cold_start=True),
        workers=workers,
    )


def closed_loop() -> LoadSpec:
    return LoadSpec(mode="closed_loop", requests=REQUESTS, concurrency=4)


def run(
    server: ScriptedServer, out: Path, workers: int, load: LoadSpec, on_result: Any = None
) -> dict[str, Any]:
    result = run_benchmark(
        config(server.url, workers, load, out.name),
        out,
        on_result=on_result,
        span_wait_s=0,
    )
    assert result.report is not None
    assert result.report["run"]["requests"]["succeeded"] == load.requests
    return result.report


def timing(report: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in report["compliance"]["checks"] if c["id"] == "timing-resolution")


def explained_by_other_processes(report: dict[str, Any]) -> bool:
    cpus = [w["cpu"] for w in report["run"]["client_health"]["workers"]]
    not_busy = all(c["utilization"] < 0.5 for c in cpus)
    held = max(c["runqueue_wait_share"] + (c["host_steal_share"] or 0.0) for c in cpus)
    return not_busy and held >= 0.005


def met_or_explained(server: ScriptedServer, tmp: Path, workers: int, **kw: Any) -> list[str]:
    """Up to three runs; returns their evidence. One is met, or each is explained."""
    seen = []
    for attempt in range(ATTEMPTS):
        report = run(server, tmp / f"w{workers}-{attempt}", workers, closed_loop(), **kw)
        check = timing(report)
        seen.append(check["evidence"])
        if check["met"]:
            return seen
        assert explained_by_other_processes(report), seen
    return seen


def client_spans(store: Path) -> list[dict[str, Any]]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            """SELECT "SpanAttributes" FROM otel_traces WHERE "SpanKind" = ?""",
            [semconv.SPAN_KIND_CLIENT],
        ).fetchall()
    return [dict(r[0]) for r in rows]


def test_an_overloaded_worker_fails_timing_resolution(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    report = run(scripted_server, tmp_path / "burnt", 1, closed_loop(), on_result=burn)
    health = report["run"]["client_health"]
    assert report["run"]["load"]["workers"] == {"count": 1, "chosen": "--workers"}
    [worker] = health["workers"]
    cpu = worker["cpu"]
    assert cpu["user_s"] + cpu["system_s"] >= REQUESTS * BURN_NS / 1e9
    assert health["loop_lateness_ms"]["p99"] > 5.0
    assert health["loop_lateness_ms"]["max"] >= BURN_NS / 1e6 - 2.0
    check = timing(report)
    assert check["met"] is False
    assert "P99 over 1 ms" in check["evidence"]
    assert "--workers 2" in check["evidence"]
    assert report["compliance"]["verdict"] == "not compliant"
    md = (tmp_path / "burnt" / "report.md").read_text()
    assert "## Load generator health (draft 4.2.1)" in md


def test_the_same_load_unburdened_meets_it(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    print(met_or_explained(scripted_server, tmp_path, 1))


def test_the_same_load_over_two_workers_meets_it(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """The burning callback runs in this process; the two workers' loops time the chunks."""
    print(met_or_explained(scripted_server, tmp_path, 2, on_result=burn))


def test_one_and_two_workers_send_on_the_same_schedule(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    load = LoadSpec(mode="poisson", requests=REQUESTS, rate=30.0)
    sent: dict[int, dict[int, int]] = {}
    for workers in (1, 2):
        out = tmp_path / f"open-{workers}"
        report = run(scripted_server, out, workers, load)
        assert report["run"]["load"]["workers"]["count"] == workers
        health = report["run"]["client_health"]
        assert len(health["workers"]) == workers
        # every worker's reads were stamped by the kernel, and their waits counted
        assert all(w["read_delay_ms"]["count"] > 0 for w in health["workers"])
        assert health["read_delay_ms"]["count"] == sum(
            w["read_delay_ms"]["count"] for w in health["workers"]
        )
        spans = [
            s
            for s in client_spans(out / "spans.duckdb")
            if s[semconv.REQUEST_PHASE] == semconv.PHASE_MEASURE
        ]
        assert len(spans) == REQUESTS
        index = [int(s[semconv.REQUEST_INDEX]) for s in spans]
        # request i is sent by worker i mod N
        assert {int(s[semconv.LOADGEN_WORKER]) for s in spans} == set(range(workers))
        assert all(
            int(s[semconv.LOADGEN_WORKER]) == i % workers for s, i in zip(spans, index, strict=True)
        )
        sent[workers] = {
            i: int(s[semconv.REQUEST_SCHEDULED_OFFSET_US])
            for s, i in zip(spans, index, strict=True)
        }
        # the report is recomputed from the stored spans alone: the same health and workers
        again = tmp_path / f"again-{workers}"
        again.mkdir()
        recomputed, _ = write_reports(again, out / "spans.duckdb")
        assert recomputed["run"]["client_health"] == report["run"]["client_health"]
        assert recomputed["run"]["load"] == report["run"]["load"]
        assert (
            json.loads((out / "report.json").read_text())["run"]["load"]["workers"]["count"]
            == workers
        )
    assert sent[1] == sent[2]
    assert sorted(sent[1]) == list(range(REQUESTS))
    # one schedule, in index order (the spans' start order may differ: two sends a few
    # microseconds apart start their spans in the order their connections are ready)
    offsets = [sent[1][i] for i in range(REQUESTS)]
    assert offsets == sorted(offsets)


def test_closed_loop_streams_are_split_across_workers(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """With a warm-up: it runs in the calling process while the workers start."""
    load = LoadSpec(mode="closed_loop", requests=REQUESTS, concurrency=3)
    cfg = replace(
        config(scripted_server.url, 2, load, "closed"),
        warmup=WarmupSpec(min_requests=6, min_output_tokens=0, probes=2),
    )
    result = run_benchmark(cfg, tmp_path / "closed", span_wait_s=0)
    assert result.report is not None
    assert result.report["run"]["warmup"]["requests"] >= 6
    spans = client_spans(tmp_path / "closed" / "spans.duckdb")
    measured = [s for s in spans if s[semconv.REQUEST_PHASE] == semconv.PHASE_MEASURE]
    by_worker = [sum(int(s[semconv.LOADGEN_WORKER]) == w for s in measured) for w in (0, 1)]
    assert by_worker == [16, 8]  # streams 0 and 2 on worker 0, stream 1 on worker 1
    # warm-up and probe requests: sent by the calling process (worker 0's index)
    others = [s for s in spans if s[semconv.REQUEST_PHASE] != semconv.PHASE_MEASURE]
    assert {s[semconv.REQUEST_PHASE] for s in others} == {semconv.PHASE_WARMUP, semconv.PHASE_PROBE}
    assert result.report["run"]["requests"]["total"] == REQUESTS


def test_more_workers_than_closed_loop_streams_use_one_per_stream(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """A procedure's closed-loop levels start at one or two streams whatever --workers says."""
    load = LoadSpec(mode="closed_loop", requests=4, concurrency=1)
    report = run(scripted_server, tmp_path / "one-stream", 2, load)
    assert report["run"]["load"]["workers"] == {
        "count": 1,
        "chosen": "--workers 2, at most one per closed-loop stream",
    }


def test_workers_against_a_two_process_ground_truth_server(tmp_path: Path) -> None:
    """The scripted server as two SO_REUSEPORT processes: every request the two workers sent is
    in one of their logs, with its chunks, and no chunk was timed before the server wrote it."""
    load = LoadSpec(mode="closed_loop", requests=48, concurrency=16)
    with ScriptedServer(processes=2) as server:
        result = run_benchmark(
            config(server.url, 2, load, "reuseport"), tmp_path / "rp", span_wait_s=0
        )
        assert result.outcome is not None
        measured = [r for r in result.outcome.records if r.phase == semconv.PHASE_MEASURE]
        log = {e["id"]: e for e in server.log(tag="reuseport")}
        stats = server.stats()
    assert len(measured) == 48
    assert {r.worker for r in measured} == {0, 1}
    assert len(stats["pids"]) == 2
    assert stats["requests"] == 48
    served_by = {rid.split("-")[1] for rid in log}
    assert served_by == {str(pid) for pid in stats["pids"]}  # 16 connections, both processes
    for record in measured:
        res = record.result
        assert res.ok
        assert res.response_id is not None
        errors = chunk_errors(res.submit_mono_ns, res.chunk_offsets_us, log[res.response_id])
        assert len(errors.errors_ns) == SCRIPT["n"]
        assert min(errors.errors_ns) >= -1000  # µs truncation aside, never before the write


def test_workers_that_cannot_export_fail_the_run_with_one_line(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """Every worker finds its spool unusable (the spool directory is a file): nothing can be
    measured, and the run says why in one line instead of a traceback."""
    blocker = tmp_path / "spool"
    blocker.write_text("not a directory")
    load = LoadSpec(mode="poisson", requests=4, rate=10.0)
    cfg = config(scripted_server.url, 2, load, "nospool")
    export = ExportSpec("http://127.0.0.1:9", blocker)
    with pytest.raises(WorkerError) as err:
        asyncio.run(execute_run(cfg, export=export))
    message = str(err.value)
    assert "\n" not in message
    assert message.count("cannot spool spans in") == 2
    assert "load-generator worker 0 failed" in message
    assert "load-generator worker 1 failed" in message
    assert scripted_server.log(tag="nospool") == []


def _sigint_as_in_a_terminal() -> None:
    """SIGINT back to its default in the child, as a terminal starts a command: a pytest-xdist
    worker ignores SIGINT, and an ignored SIGINT is inherited (Python then never raises
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_what_the_workers_measured(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """``otelbench run --workers 2`` interrupted as a terminal's Ctrl-C does (SIGINT to the
    whole process group) once requests have been served: it exits 130 and reports every request
    the workers finished (those still streaming are cancelled), with their health."""
    out = tmp_path / "interrupted"
    cmd = [
        sys.executable, "-m", "otelbench.cli", "run", "--target", scripted_server.url,
        "--model", "m", "--requests", "400", "--rate", "20", "--vocab-size", "1024",
        "--out", str(out), "--span-wait", "0", "--cold-start", "--workers", "2",
        "--extra-body", json.dumps({"script": {**SCRIPT, "tag": "interrupted"}}),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_sigint_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while len(scripted_server.log(tag="interrupted")) < 10:
            assert time.monotonic() < deadline, "no request reached the server"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        served = len(scripted_server.log(tag="interrupted"))
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    report = json.loads((out / "report.json").read_text())
    total = report["run"]["requests"]["total"]
    # every request served before the interrupt but the few still streaming (about 2 in flight)
    assert served - 5 <= total < 400
    assert [w["worker"] for w in report["run"]["client_health"]["workers"]] == [0, 1]
    assert report["run"]["load"]["workers"]["count"] == 2
    measured = [
        s
        for s in client_spans(out / "spans.duckdb")
        if s[semconv.REQUEST_PHASE] == semconv.PHASE_MEASURE
    ]
    assert len(measured) == total


def test_a_procedure_level_over_two_workers_exports_and_counts_every_span(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """``otelbench test ttft --workers 2``: the level's measured requests come from both
    workers, its warm-up from the calling process, and the level's span export counts
    (``client_telemetry.json``) add the workers' to the caller's: every client span stored."""
    from otelbench.procedures import (
        ProcedureSpec,
        TtftParams,
        TtftProcedure,
        get_profile,
        placeholder_load,
        run_procedure,
    )

    base = replace(
        config(scripted_server.url, 2, placeholder_load(), "proc-workers"),
        warmup=WarmupSpec(min_requests=4, min_output_tokens=0, probes=2),
    )
    spec = ProcedureSpec(base=base, profile=get_profile("quick"), out_dir=tmp_path, span_wait_s=0.0)
    result = run_procedure(
        TtftProcedure(TtftParams(rate=20.0, requests=20)), spec, write=lambda _line: None
    )
    [level] = result.result["levels"]
    stored = json.loads((tmp_path / level["report"]).read_text())
    assert stored["run"]["load"]["workers"]["count"] == 2
    assert len(stored["run"]["client_health"]["workers"]) == 2
    assert stored["run"]["requests"]["total"] == 20
    spans = client_spans(tmp_path / "spans.duckdb")
    measured = [s for s in spans if s[semconv.REQUEST_PHASE] == semconv.PHASE_MEASURE]
    assert {int(s[semconv.LOADGEN_WORKER]) for s in measured} == {0, 1}
    telemetry = json.loads((tmp_path / "levels/01/client_telemetry.json").read_text())
    with duckdb.connect(str(tmp_path / "spans.duckdb"), read_only=True) as con:
        [(stored_spans,)] = con.execute(
            """SELECT count(*) FROM otel_traces WHERE "ServiceName" = ?""",
            [semconv.SERVICE_CLIENT],
        ).fetchall()
    assert stored_spans == len(spans) + 1  # the client spans and the run span
    assert telemetry["spans_sent"] + telemetry["spans_replayed"] == stored_spans
    assert telemetry["spans_dropped"] == 0
