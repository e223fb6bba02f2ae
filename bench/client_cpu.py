"""The load generator's CPU per chunk against the raw-socket reference client's, side by side.

Both clients run closed loop against the same scripted SSE server
(tests/fixtures/scripted_server.py, ``--server-processes`` processes on one port) playing the
load-generation issue's script: TTFT 60 ms, one token per 12 ms, 64 tokens (83 chunks/s a
stream). Per level (64 and 256 streams) the two clients alternate, ``--repeats`` times each, each
run in a fresh child process:

* ``raw``: bench/peers/raw_client.py (stdlib asyncio streams, ``json.loads`` per event, no spans);
* ``otelbench``: ``otelbench run``'s load path (``execute_run``, one worker, this process), spans
  on, exported over OTLP/HTTP to a real embedded collector process writing a DuckDB store.

Per run: content chunks received, the load process's CPU-s (``getrusage(RUSAGE_SELF)``: every
thread, the span exporter's included; from just before the load to after the last span is
exported, imports and interpreter start-up excluded; for otelbench that includes the run's set-up,
~0.05–0.1 s with its full garbage collection, which ``--rounds`` amortizes, and
``measurement_cpu_s`` is the run's own account of the measurement alone), CPU-s per 1,000 chunks,
the wall time; for
otelbench, the embedded collector's CPU-s over the same run (``/proc/<pid>/stat``, read once it
has ingested every span) and the TTFT error against the server's write log (P50/P99, ms, per
request: the client's first-content time − the server's write of that chunk) for both clients.
Per level: the medians over the repeats and the ratio otelbench / raw of CPU-s per 1k chunks
(goal ≤ 1.3 at 256 streams).

CPU time per chunk is much less sensitive to a busy machine than wall time, but not immune (cache
and frequency effects, and a saturated client batches more chunks per wake-up): the JSON records
the load average before and after (``machine``). Compare ratios measured in one run.

Usage::

    .venv/bin/python bench/client_cpu.py                          # 64 and 256 streams, 5 repeats
    .venv/bin/python bench/client_cpu.py --streams 256 --repeats 5 --rounds 4
    .venv/bin/python bench/client_cpu.py --profile out/prof       # + a cProfile of one
                                                                 # otelbench run per level
    .venv/bin/python bench/client_cpu.py --before /tmp/base       # + another checkout's otelbench
                                                                 # (git archive HEAD~1 otelbench)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import machine, process_cpu_s, write_result  # noqa: E402
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors  # noqa: E402

SCRIPT: dict[str, Any] = {"n": 64, "ttft_ms": 60.0, "itl_ms": 12.0}
CLIENTS = ("raw", "otelbench")
GOAL_RATIO = 1.3


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _settled_cpu_s(pid: int, quiet_s: float = 0.5, limit_s: float = 30.0) -> float:
    """The process's CPU-s once it has stopped using CPU for ``quiet_s`` (its ingest is done)."""
    deadline = time.monotonic() + limit_s
    last = process_cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = process_cpu_s(pid)
        if now == last:
            break
        last = now
    return last


# -- the children: one client run each -----------------------------------------------------------


def child_raw(url: str, streams: int, requests: int, tag: str) -> dict[str, Any]:
    import importlib.util

    # bench/peers.py shadows the bench/peers/ folder as a package: load the file itself
    spec = importlib.util.spec_from_file_location("raw_client", ROOT / "bench/peers/raw_client.py")
    assert spec is not None
    assert spec.loader is not None
    raw_client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(raw_client)
    args = argparse.Namespace(
        url=url,
        model="m",
        n=requests,
        concurrency=streams,
        rate=0.0,
        max_tokens=SCRIPT["n"],
        script=json.dumps({**SCRIPT, "tag": tag}),
    )
    cpu0, wall0 = _cpu_s(), time.perf_counter()
    recs = asyncio.run(raw_client.main_async(args))
    cpu, wall = _cpu_s() - cpu0, time.perf_counter() - wall0
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "failed": sum(not r["ok"] for r in recs),
        "requests": [[r["id"], r["submit_ns"], r["chunk_us"]] for r in recs if r["ok"]],
    }


def child_otelbench(
    url: str, streams: int, requests: int, tag: str, profile: Path | None
) -> dict[str, Any]:
    from otelbench import telemetry
    from otelbench.benchmark import EmbeddedCollector
    from otelbench.loadgen.runner import ExportSpec, LoadSpec, RunConfig, execute_run
    from otelbench.loadgen.warmup import WarmupSpec
    from otelbench.spool import SpoolStats

    config = RunConfig(
        target=url,
        model="m",
        load=LoadSpec(mode="closed_loop", requests=requests, concurrency=streams),
        seed=1,
        # short prompts, as the raw client's: the per-chunk path is measured, not prompt generation
        workload_params={
            "vocab_size": 1024,
            "input_min": 8,
            "input_max": 8,
            "output_min": 64,
            "output_max": 64,
        },
        extra_body={"script": {**SCRIPT, "tag": tag}},
        warmup=WarmupSpec(cold_start=True),
        workers=1,
    )
    with tempfile.TemporaryDirectory() as t:
        out = Path(t)
        stats = SpoolStats()
        collector = EmbeddedCollector(out / "spans.duckdb")
        with collector as endpoint:
            assert collector._proc is not None
            pid = collector._proc.pid  # the collector's Python process (``nice`` execs it)
            provider = telemetry.make_tracer_provider(
                endpoint, run_id=config.run_id, spool_dir=out / "spool", spool_stats=stats
            )
            run = execute_run(
                config,
                tracer_provider=provider,
                export=ExportSpec(endpoint, out / "spool"),
                spool_stats=stats,
            )
            coll0 = process_cpu_s(pid)
            cpu0, wall0 = _cpu_s(), time.perf_counter()
            if profile is not None:
                import cProfile

                prof = cProfile.Profile()
                outcome = prof.runcall(asyncio.run, run)
                prof.dump_stats(profile)
            else:
                outcome = asyncio.run(run)
            telemetry.shutdown(provider)
            cpu, wall = _cpu_s() - cpu0, time.perf_counter() - wall0
            coll = _settled_cpu_s(pid) - coll0
    results = [r.result for r in outcome.records if r.phase == "measure"]
    workers = outcome.manifest["client_health"]["workers"]
    return {
        "cpu_s": cpu,
        # the run's own account (run.client_health): the measurement only, without the set-up
        # (a full garbage collection among it) and the last spans' export at shutdown
        "measurement_cpu_s": sum(w["cpu"]["user_s"] + w["cpu"]["system_s"] for w in workers),
        "wall_s": wall,
        "collector_cpu_s": coll,
        "failed": sum(not r.ok for r in results),
        "spans_exported": stats.as_dict(),
        "requests": [
            [r.response_id, r.submit_mono_ns, r.chunk_offsets_us] for r in results if r.ok
        ],
    }


# -- the parent: levels, repeats, the table ------------------------------------------------------


def run_client(
    client: str,
    server: ScriptedServer,
    streams: int,
    requests: int,
    code: Path | None,
    profile: Path | None,
) -> dict[str, Any]:
    """One client run in a child process; ``code``: the tree otelbench is imported from (the
    ``--before`` client's), else this one."""
    tag = f"{client}-{streams}-{time.time_ns()}"
    kind = "raw" if client == "raw" else "otelbench"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, __file__, "--child", kind, "--url", server.url]
        cmd += ["--child-streams", str(streams), "--child-requests", str(requests)]
        cmd += ["--child-tag", tag, "--child-out", f.name]
        if code is not None:
            cmd += ["--child-code", str(code)]
        if profile is not None:
            cmd += ["--child-profile", str(profile)]
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(code or ROOT)})
        res: dict[str, Any] = json.loads(Path(f.name).read_text())
    log = {e["id"]: e for e in server.log(tag=tag)}
    ttft_ms: list[float] = []
    chunks = 0
    for rid, submit_ns, offsets in res.pop("requests"):
        chunks += len(offsets)
        if rid in log:
            ttft_ms.append(chunk_errors(submit_ns, offsets, log[rid]).ttft_ns / 1e6)
    res["client"] = client
    res["chunks"] = chunks
    res["cpu_s_per_1k_chunks"] = 1000 * res["cpu_s"] / chunks if chunks else None
    if "collector_cpu_s" in res:
        res["collector_cpu_s_per_1k_chunks"] = 1000 * res["collector_cpu_s"] / chunks
        res["measurement_cpu_s_per_1k_chunks"] = 1000 * res["measurement_cpu_s"] / chunks
    res["chunks_per_s"] = chunks / res["wall_s"]
    res["ttft_error_ms"] = {
        "p50": round(float(np.percentile(ttft_ms, 50)), 3) if ttft_ms else None,
        "p99": round(float(np.percentile(ttft_ms, 99)), 3) if ttft_ms else None,
    }
    return res


def _median(runs: list[dict[str, Any]], client: str, key: str, sub: str | None = None) -> float:
    values = [r[key] if sub is None else r[key][sub] for r in runs if r["client"] == client]
    return float(statistics.median(v for v in values if v is not None))


def summarize(streams: int, clients: list[str], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One level: medians over the repeats, and each otelbench's CPU per chunk over the raw
    client's: the ratio of the medians, and the ratio within each repeat (the runs side by side)."""
    cpu = {c: _median(runs, c, "cpu_s_per_1k_chunks") for c in clients}
    by_rep: dict[int, dict[str, float]] = {}
    for r in runs:
        by_rep.setdefault(r["repeat"], {})[r["client"]] = r["cpu_s_per_1k_chunks"]
    ours = [c for c in clients if c != "raw"]
    before: dict[str, Any] = {}
    if "before" in clients:  # this checkout against the other, paired within each repeat
        before = {
            "otelbench_over_before": round(cpu["otelbench"] / cpu["before"], 3),
            "otelbench_over_before_per_repeat": [
                round(rep["otelbench"] / rep["before"], 3) for rep in by_rep.values()
            ],
        }
    return {
        "streams": streams,
        "chunks_per_run": {c: _median(runs, c, "chunks") for c in clients},
        "chunks_per_s": {c: round(_median(runs, c, "chunks_per_s")) for c in clients},
        "cpu_s_per_1k_chunks": {c: round(v, 4) for c, v in cpu.items()},
        "ratio_to_raw": {c: round(cpu[c] / cpu["raw"], 3) for c in ours},
        "ratio_to_raw_per_repeat": {
            c: [round(rep[c] / rep["raw"], 3) for rep in by_rep.values()] for c in ours
        },
        "collector_cpu_s_per_1k_chunks": {
            c: round(_median(runs, c, "collector_cpu_s_per_1k_chunks"), 4) for c in ours
        },
        "measurement_only_cpu_s_per_1k_chunks": {
            c: round(_median(runs, c, "measurement_cpu_s_per_1k_chunks"), 4) for c in ours
        },
        "ttft_error_ms_p99": {c: _median(runs, c, "ttft_error_ms", "p99") for c in clients},
        **before,
        "meets_goal": cpu["otelbench"] / cpu["raw"] <= GOAL_RATIO,
        "runs": runs,
    }


def table(levels: list[dict[str, Any]]) -> str:
    rows = [
        "| streams | client | chunks/s | CPU-s per 1k chunks | ratio to raw (per repeat) "
        "| collector CPU-s per 1k chunks | TTFT err P99 (ms) |",
        "|" + "---|" * 7,
    ]
    for lv in levels:
        for c, cpu in lv["cpu_s_per_1k_chunks"].items():
            ratio = (
                f"**{lv['ratio_to_raw'][c]}** "
                f"({', '.join(map(str, lv['ratio_to_raw_per_repeat'][c]))})"
                if c != "raw"
                else "1"
            )
            coll = lv["collector_cpu_s_per_1k_chunks"].get(c, "—")
            rows.append(
                f"| {lv['streams']} | {c} | {lv['chunks_per_s'][c]:,} | {cpu} | {ratio} "
                f"| {coll} | {lv['ttft_error_ms_p99'][c]} |"
            )
    return "\n".join(rows)


def child(args: argparse.Namespace) -> None:
    """One client run in this process; its result JSON goes to ``--child-out``."""
    if args.child_code is not None:
        sys.path.insert(0, str(args.child_code))  # otelbench from that tree (imported lazily)
    if args.child == "raw":
        res = child_raw(args.url, args.child_streams, args.child_requests, args.child_tag)
    else:
        res = child_otelbench(
            args.url, args.child_streams, args.child_requests, args.child_tag, args.child_profile
        )
    Path(args.child_out).write_text(json.dumps(res))


def level(
    server: ScriptedServer, streams: int, args: argparse.Namespace, clients: list[str]
) -> dict[str, Any]:
    """``--repeats`` runs of every client, in rotating order; a profiled run apart."""
    code = {"before": args.before}
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        order = clients[rep % len(clients) :] + clients[: rep % len(clients)]
        for client in order:
            run = run_client(client, server, streams, streams * args.rounds, code.get(client), None)
            run["repeat"] = rep
            runs.append(run)
            print(
                f"{streams} streams, {client}: {run['chunks']} chunks, "
                f"{run['cpu_s_per_1k_chunks']:.4f} CPU-s per 1k chunks",
                flush=True,
            )
    summary = summarize(streams, clients, runs)
    if args.profile is not None:  # cProfile slows the run: not one of the measured repeats
        args.profile.mkdir(parents=True, exist_ok=True)
        summary["profiles"] = {}
        for client in clients[1:]:
            prof = args.profile / f"{client}-{streams}.prof"
            run_client(client, server, streams, streams * args.rounds, code.get(client), prof)
            summary["profiles"][client] = str(prof)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="64,256")
    ap.add_argument("--rounds", type=int, default=8, help="requests per stream in a run")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each client per level")
    ap.add_argument("--server-processes", type=int, default=2)
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another checkout of otelbench, measured as a third client ('before')",
    )
    ap.add_argument("--profile", type=Path, default=None, help="folder for cProfile dumps")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "client_cpu.json")
    ap.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--child-streams", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-requests", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-tag", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--child-code", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-profile", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    clients = [*CLIENTS, *(["before"] if args.before is not None else [])]
    load_before = [round(x, 2) for x in os.getloadavg()]
    with ScriptedServer(processes=args.server_processes) as server:
        levels = [level(server, int(n), args, clients) for n in args.streams.split(",")]
    result = {
        "benchmark": "client_cpu",
        "script": SCRIPT,
        "rounds_per_stream": args.rounds,
        "repeats": args.repeats,
        "server_processes": args.server_processes,
        "before": None if args.before is None else str(args.before),
        "goal": f"otelbench CPU-s per chunk <= {GOAL_RATIO} x the raw client's at 256 streams",
        "levels": levels,
        "machine": {**machine(), "load_avg_at_start": load_before},
    }
    print(table(levels))
    write_result(args.out, result)


if __name__ == "__main__":
    main()
