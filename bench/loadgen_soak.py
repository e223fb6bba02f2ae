"""Memory over a long run: ``otelbench run --workers 2``, open loop, with a collector outage in
the middle; the RSS of every process of the load generator, and its slope.

**Method.** The real parts, as a user runs them: the scripted SSE server
(tests/fixtures/scripted_server.py) as the target; ``python -m otelbench.collector`` writing a
DuckDB store on a fixed port (tests/fixtures/collector_process.py); ``otelbench run`` in a child
process with ``--workers 2``, Poisson arrivals at ``--rate`` for ``--minutes`` (``rate × minutes
× 60`` requests), ``--otlp-endpoint`` at that collector, its spool in the run directory. At
``--outage-at`` minutes the collector is SIGKILLed (a crash) and started again ``--outage-minutes``
later on the same port and store: meanwhile the workers' exporters spool their batches to disk,
and replay them once it answers.

Every ``--interval`` seconds the resident set size (``/proc/<pid>/statm``) of every process of
the run is read: the ``otelbench run`` process (*parent*: the run span, the records the workers
send back), the multiprocessing forkserver, the two *worker* processes (children of the
forkserver), the resource tracker, the *collector* (each incarnation apart), the target (not
otelbench's: shown, not judged), and the size of the spool directory. The collector's DuckDB
caches the blocks of the table it writes, up to the writer's memory limit (512 MiB,
``otelbench.store.duckdb.WRITER_MEMORY_LIMIT``): its RSS grows with the store by design until
then. So the collector's ``store_memory_bytes`` (``GET /otelbench/stats``: DuckDB's
``duckdb_memory()``) is sampled too, and what is judged is its RSS less those blocks; the whole
RSS and the blocks are shown.

**Slope.** Per process, an ordinary least-squares line through its RSS (MiB) against time (h)
from the end of ``--warmup-minutes`` to the end of the load (the last sample with both workers
alive); for the collector, per incarnation, from a minute after its start. Successive samples are
autocorrelated (the allocator keeps what it freed; a batch lives a second), so the slope's 95 %
interval uses the Newey-West (HAC) standard error, Bartlett kernel, ``floor(4 (n/100)^(2/9))``
lags. A process is **flat** when the upper end of that interval is below ``--bound`` MiB/h
(default 5): a growth that 30 minutes cannot tell from nothing is below 2.5 MiB over the run.

After the run: the client spans stored (the requests sent, every one delivered, none lost), the
exporters' counts (``client_telemetry.json``: sent, spooled, replayed, dropped), the spool's peak
size, and the machine's load average (this machine is shared: the soak is about memory, not
speed, so contention is acceptable, and stated).

Usage::

    .venv/bin/python bench/loadgen_soak.py                  # 30 min, outage 12:00-17:00
    .venv/bin/python bench/loadgen_soak.py --minutes 6 --outage-at 2 --outage-minutes 1 \\
        --warmup-minutes 1 --out /tmp/soak.json             # a short check that it works
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import machine, write_result  # noqa: E402
from otelbench import semconv  # noqa: E402
from otelbench.collector.receiver import STATS_PATH  # noqa: E402
from otelbench.store.duckdb import WRITER_MEMORY_LIMIT  # noqa: E402
from tests.fixtures.collector_process import free_port, start_collector, stop_collector  # noqa: E402
from tests.fixtures.procfs import cmdline, descendants, rss_bytes  # noqa: E402
from tests.fixtures.scripted_server import ScriptedServer  # noqa: E402

SCRIPT: dict[str, Any] = {"n": 32, "ttft_ms": 20.0, "itl_ms": 5.0, "tag": "soak"}
MIB = 1 << 20
COLLECTOR_WARMUP_S = 60.0


@dataclass
class Series:
    """One process's RSS samples: (seconds since the launch, MiB)."""

    role: str
    pid: int
    t_s: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)


def hac_slope(t_h: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """OLS slope of ``y`` on ``t_h`` and its Newey-West (Bartlett) standard error."""
    n = len(y)
    x = t_h - t_h.mean()
    sxx = float(x @ x)
    slope = float(x @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * x
    u = x * resid
    lags = math.floor(4 * (n / 100) ** (2 / 9))
    s = float(u @ u)
    for lag in range(1, min(lags, n - 1) + 1):
        s += 2 * (1 - lag / (lags + 1)) * float(u[lag:] @ u[:-lag])
    return slope, math.sqrt(max(s, 0.0)) / sxx


def fit(series: Series, start_s: float, end_s: float, bound: float) -> dict[str, Any] | None:
    t = np.asarray(series.t_s)
    y = np.asarray(series.rss_mib)
    keep = (t >= start_s) & (t <= end_s)
    if keep.sum() < 10:
        return None
    t, y = t[keep], y[keep]
    slope, se = hac_slope(t / 3600.0, y)
    high = slope + 1.96 * se
    return {
        "window_s": [round(float(t[0]), 1), round(float(t[-1]), 1)],
        "samples": int(keep.sum()),
        "rss_start_mib": round(float(y[0]), 1),
        "rss_end_mib": round(float(y[-1]), 1),
        "rss_max_mib": round(float(y.max()), 1),
        "slope_mib_per_h": round(slope, 2),
        "slope_ci95_mib_per_h": [round(slope - 1.96 * se, 2), round(high, 2)],
        "flat": bool(high < bound),
    }


class Sampler:
    """The run's processes, found from the ``otelbench run`` process down, named by role."""

    def __init__(self, parent: int, server_pids: list[int]) -> None:
        self.parent = parent
        self.server_pids = server_pids
        self.series: dict[tuple[int, str], Series] = {}
        """By (pid, what): ``rss``, and for a collector ``duckdb`` (its store's cached blocks)
        and ``own`` (its RSS less those)."""
        self.workers: list[int] = []
        self.collectors: list[int] = []
        self.spool_peak_bytes = 0

    def role(self, pid: int, forkserver: int | None) -> str:
        if pid == self.parent:
            return "parent (otelbench run)"
        if pid in self.server_pids:
            return "target (scripted server; not judged)"
        if pid in self.collectors:
            return f"collector #{self.collectors.index(pid) + 1}"
        if pid == forkserver:
            return "forkserver"
        if forkserver is not None and pid in descendants(forkserver):
            self.workers.append(pid)
            return f"worker {len(self.workers) - 1}"
        command = cmdline(pid)
        if "resource_tracker" in command:
            return "resource tracker"
        return f"other: {command[:60]}"

    def add(self, pid: int, what: str, role: str, t_s: float, mib: float) -> Series:
        s = self.series.get((pid, what))
        if s is None:
            s = self.series[pid, what] = Series(role, pid)
        s.t_s.append(round(t_s, 2))
        s.rss_mib.append(round(mib, 2))
        return s

    def sample(self, t_s: float, collector: int | None, port: int, spool: Path) -> int:
        """One sample of every process; returns how many workers are alive."""
        kids = descendants(self.parent)
        forkserver = next((p for p in kids if "forkserver" in cmdline(p)), None)
        pids = [self.parent, *kids, *self.server_pids]
        if collector is not None:
            if collector not in self.collectors:
                self.collectors.append(collector)
            pids.append(collector)
        alive = 0
        for pid in pids:
            rss = rss_bytes(pid)
            if rss is None:
                continue
            known = self.series.get((pid, "rss"))
            role = known.role if known is not None else self.role(pid, forkserver)
            self.add(pid, "rss", role, t_s, rss / MIB)
            alive += role.startswith("worker")
            if pid == collector:
                cached = store_memory(port)
                if cached is not None:
                    self.add(pid, "duckdb", f"{role}: DuckDB's cached blocks", t_s, cached / MIB)
                    self.add(pid, "own", f"{role}: RSS less those", t_s, (rss - cached) / MIB)
        size = (
            sum(p.stat().st_size for p in spool.rglob("*") if p.is_file()) if spool.exists() else 0
        )
        self.spool_peak_bytes = max(self.spool_peak_bytes, size)
        return alive


def store_memory(port: int) -> int | None:
    """The collector's ``store_memory_bytes`` (``GET /otelbench/stats``), None if it answers
    nothing."""
    try:
        stats = httpx.get(f"http://127.0.0.1:{port}{STATS_PATH}", timeout=2.0).json()
    except (httpx.HTTPError, ValueError):
        return None
    value = stats.get("store_memory_bytes")
    return value if isinstance(value, int) else None


def stored_client_spans(store: Path, run_id: str | None) -> int:
    with duckdb.connect(str(store), read_only=True) as con:
        row = con.execute(
            f'SELECT count(*) FROM {semconv.TABLE_TRACES} WHERE "ServiceName" = ? '
            f"""AND "SpanAttributes"['{semconv.REQUEST_PHASE}'] = ? """
            f"""AND "SpanAttributes"['{semconv.RUN_ID}'] = ?""",
            [semconv.SERVICE_CLIENT, semconv.PHASE_MEASURE, run_id or ""],
        ).fetchone()
    return int(row[0]) if row else 0


def table(rows: list[dict[str, Any]], bound: float) -> str:
    out = [
        "| process | pid | RSS start / end / max (MiB) | slope (MiB/h) | 95 % CI "
        f"| < {bound:g} MiB/h |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r["fit"]
        if f is None:
            out.append(f"| {r['role']} | {r['pid']} | (too few samples) | | | |")
            continue
        lo, hi = f["slope_ci95_mib_per_h"]
        verdict = "yes" if f["flat"] else "**no**"
        if not r["judged"]:
            verdict = f"({verdict}; not judged)"
        out.append(
            f"| {r['role']} | {r['pid']} | {f['rss_start_mib']} / {f['rss_end_mib']} / "
            f"{f['rss_max_mib']} | {f['slope_mib_per_h']} | [{lo}, {hi}] | {verdict} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="length of the load")
    ap.add_argument("--rate", type=float, default=20.0, help="requests/s, Poisson")
    ap.add_argument("--outage-at", type=float, default=None, help="minutes (default 0.4 x)")
    ap.add_argument("--outage-minutes", type=float, default=None, help="default minutes / 6")
    ap.add_argument("--warmup-minutes", type=float, default=3.0)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--bound", type=float, default=5.0, help="MiB/h: the flatness bound")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "loadgen_soak.json")
    args = ap.parse_args()
    outage_at_s = 60 * (args.outage_at if args.outage_at is not None else 0.4 * args.minutes)
    outage_s = 60 * (args.outage_minutes if args.outage_minutes is not None else args.minutes / 6)
    requests = max(1, round(args.rate * args.minutes * 60))
    load_avg: list[tuple[float, float]] = []

    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        port, store, run_dir = free_port(), Path(tmp) / "spans.duckdb", Path(tmp) / "run"
        collector = start_collector(store, port)
        cmd = [
            sys.executable, "-m", "otelbench.cli", "run", "--target", server.url, "--model", "m",
            "--requests", str(requests), "--rate", str(args.rate), "--workers", "2",
            "--seed", "1", "--vocab-size", "1024", "--cold-start", "--span-wait", "0",
            "--otlp-endpoint", f"http://127.0.0.1:{port}", "--out", str(run_dir),
            "--extra-body", json.dumps({"script": SCRIPT}),
        ]  # fmt: skip
        launched = time.monotonic()
        log = (Path(tmp) / "run.log").open("w")
        run = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        sampler = Sampler(run.pid, [p.pid for p in server.procs])
        outage: dict[str, float | None] = {"killed_s": None, "restarted_s": None}
        load_end_s = 0.0
        down = False
        next_sample = 0.0
        try:
            while run.poll() is None:
                now = time.monotonic() - launched
                if not down and outage["killed_s"] is None and now >= outage_at_s:
                    os.killpg(collector.pid, signal.SIGKILL)
                    collector.communicate(timeout=30)
                    outage["killed_s"] = round(time.monotonic() - launched, 1)
                    down = True
                    print(f"{now / 60:6.1f} min  collector killed", flush=True)
                elif down and now >= outage_at_s + outage_s:
                    collector = start_collector(store, port)
                    outage["restarted_s"] = round(time.monotonic() - launched, 1)
                    down = False
                    print(f"{now / 60:6.1f} min  collector started again", flush=True)
                if now >= next_sample:
                    alive = sampler.sample(
                        now, None if down else collector.pid, port, run_dir / "spool"
                    )
                    if alive == 2:
                        load_end_s = now
                    load_avg.append((round(now, 1), os.getloadavg()[0]))
                    if int(now) % 60 < args.interval:
                        rss = {
                            s.role.split(" (")[0]: s.rss_mib[-1]
                            for (_, what), s in sampler.series.items()
                            if what == "rss" and s.t_s and s.t_s[-1] == round(now, 2)
                        }
                        print(f"{now / 60:6.1f} min  RSS MiB {rss}", flush=True)
                    next_sample += args.interval
                time.sleep(0.2)
        finally:
            if run.poll() is None:
                run.kill()
            run.wait()
            log.close()
            stop_collector(collector)
        end_s = time.monotonic() - launched
        output = (Path(tmp) / "run.log").read_text()
        if run.returncode != 0:
            raise SystemExit(f"otelbench run failed ({run.returncode}):\n{output[-3000:]}")
        manifest = json.loads((run_dir / "run.json").read_text())
        telemetry = json.loads((run_dir / "client_telemetry.json").read_text())
        stored = stored_client_spans(store, manifest.get("run_id"))

    start_s = 60 * args.warmup_minutes
    rows = []
    for (_, what), s in sorted(sampler.series.items(), key=lambda kv: kv[1].role):
        collector_role = s.role.startswith("collector")
        if collector_role:
            window = (s.t_s[0] + COLLECTOR_WARMUP_S, load_end_s) if s.t_s else (0.0, 0.0)
        else:
            window = (start_s, load_end_s)
        # a collector's whole RSS grows with its store's cached blocks by design (up to DuckDB's
        # limit): its own memory, the RSS less those blocks, is what is judged
        judged = not s.role.startswith(("target", "other")) and (
            not collector_role or what == "own"
        )
        rows.append(
            {
                "role": s.role,
                "pid": s.pid,
                "measure": what,
                "judged": judged,
                "fit": fit(s, *window, args.bound),
                "series": {"t_s": s.t_s, "mib": s.rss_mib},
            }
        )
    judged = [r for r in rows if r["judged"] and r["fit"] is not None]
    flat = all(r["fit"]["flat"] for r in judged)
    loads = [x for _, x in load_avg]
    result = {
        "benchmark": "loadgen_soak",
        "command": " ".join(cmd[2:]).replace(tmp, "$TMP"),
        "minutes": args.minutes,
        "rate_per_s": args.rate,
        "script": SCRIPT,
        "requests_planned": requests,
        "requests_sent": stored,
        "sample_interval_s": args.interval,
        "fit_window_s": [start_s, round(load_end_s, 1)],
        "bound_mib_per_h": args.bound,
        "all_flat": flat,
        "collector_store_memory_limit": WRITER_MEMORY_LIMIT,
        "outage": {
            **outage,
            "minutes": round(outage_s / 60, 2),
            "spool_peak_bytes": sampler.spool_peak_bytes,
        },
        "client_telemetry": {k: v for k, v in telemetry.items() if k != "run_id"},
        "spans_lost": requests - stored,
        "load_average_1min": {
            "min": round(min(loads), 2),
            "median": round(float(np.median(loads)), 2),
            "max": round(max(loads), 2),
        },
        "wall_s": round(end_s, 1),
        "processes": rows,
        "machine": machine(),
    }
    print(table(rows, args.bound))
    counts = result["client_telemetry"]
    print(
        f"requests sent {stored} of {requests}; spans spooled {counts.get('spans_spooled')}, "
        f"replayed {counts.get('spans_replayed')}, dropped {counts.get('spans_dropped')}; "
        f"spool peak {sampler.spool_peak_bytes / MIB:.1f} MiB; load average "
        f"{result['load_average_1min']}; every judged process flat: {flat}"
    )
    write_result(args.out, result)


if __name__ == "__main__":
    main()
