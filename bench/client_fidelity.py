"""How exactly, and how cheaply, the instrumented client times streamed chunks.

Measured against the scripted SSE server (tests/fixtures/scripted_server.py), which logs when it
really wrote every chunk (CLOCK_MONOTONIC, shared across processes). The client runs in this
process (one thread, so at most one core); the server runs in its own process. Neither is pinned:
on a shared machine a pinned process cannot move off a core that another job is holding.

1. fidelity: TTFT and ITL error vs the actual send times at 1 and 64 concurrent streams;
2. capacity: the highest concurrency (request rate, chunks/s) the client sustains on one core while
   its p99 chunk-timing error stays within 1 ms (draft 4.2.1);
3. cost: client CPU seconds per 1,000 output tokens at saturation (``getrusage(RUSAGE_SELF)``);
4. start-up: ``python -c "import otelbench.client"`` and the first request of a fresh process.

Error of a chunk = client arrival time − the moment the server started writing the chunk's last
byte (the strict choice: the write itself counts against the client). ITL error = measured minus
actual interval between consecutive content chunks.

Usage: ``.venv/bin/python bench/client_fidelity.py [--quick] [--out FILE.json]`` (default
``bench/results/client_fidelity.json``). As a load generator should, the process freezes its heap
after start-up (``gc.freeze()``) so that garbage collection only walks what the client allocates.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult  # noqa: E402
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors  # noqa: E402


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def loadavg() -> float:
    return os.getloadavg()[0]


def cpu_pressure_us() -> int:
    """Cumulative µs in which some runnable task waited for a CPU (/proc/pressure/cpu), or -1."""
    try:
        return int(Path("/proc/pressure/cpu").read_text().split("total=", 1)[1].split()[0])
    except (OSError, IndexError, ValueError):
        return -1


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class Run:
    """One load level: what the client measured and what it cost."""

    concurrency: int
    script: dict[str, Any]
    wall_s: float = 0.0
    client_cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    results: list[CompletionResult] = field(default_factory=list)
    ttft_err_us: list[float] = field(default_factory=list)
    itl_err_us: list[float] = field(default_factory=list)
    chunk_err_us: list[float] = field(default_factory=list)
    failed: int = 0
    load_before: float = 0.0
    load_after: float = 0.0
    cpu_pressure: float | None = None

    def summary(self) -> dict[str, Any]:
        chunks = sum(len(r.chunk_offsets_us) for r in self.results)
        tokens = sum(r.output_tokens or 0 for r in self.results)
        abs_ttft = [abs(x) for x in self.ttft_err_us]
        abs_itl = [abs(x) for x in self.itl_err_us]
        return {
            "concurrency": self.concurrency,
            "script": self.script,
            "requests": len(self.results),
            "failed": self.failed,
            "wall_s": round(self.wall_s, 3),
            "requests_per_s": round(len(self.results) / self.wall_s, 1),
            "chunks_per_s": round(chunks / self.wall_s, 1),
            "tokens_per_s": round(tokens / self.wall_s, 1),
            "client_cpu_util": round(self.client_cpu_s / self.wall_s, 3),
            "server_cpu_util": round(self.server_cpu_s / self.wall_s, 3),
            "client_cpu_s_per_1k_tokens": round(self.client_cpu_s / max(tokens, 1) * 1000, 4),
            "ttft_err_us": {
                "p50": round(pct(abs_ttft, 0.5), 1),
                "p99": round(pct(abs_ttft, 0.99), 1),
                "max": round(max(abs_ttft, default=float("nan")), 1),
            },
            "itl_err_us": {
                "p50": round(pct(abs_itl, 0.5), 1),
                "p99": round(pct(abs_itl, 0.99), 1),
                "max": round(max(abs_itl, default=float("nan")), 1),
            },
            "chunk_err_us": {
                "p50": round(pct(self.chunk_err_us, 0.5), 1),
                "p99": round(pct(self.chunk_err_us, 0.99), 1),
                "max": round(max(self.chunk_err_us, default=float("nan")), 1),
                "min": round(min(self.chunk_err_us, default=float("nan")), 1),
            },
            "loadavg_1m": [round(self.load_before, 2), round(self.load_after, 2)],
            "cpu_pressure": None if self.cpu_pressure is None else round(self.cpu_pressure, 3),
        }


def request(script: dict[str, Any]) -> CompletionRequest:
    return CompletionRequest(
        api="completions",
        model="tiny",
        prompt="x",
        max_tokens=script.get("n"),
        extra_body={"script": script},
    )


async def run_level(
    client: AsyncLLMClient,
    server: ScriptedServer,
    concurrency: int,
    script: dict[str, Any],
    *,
    duration_s: float | None = None,
    requests_per_stream: int = 1,
) -> Run:
    """``concurrency`` closed-loop streams; each sends ``requests_per_stream`` requests or, with
    ``duration_s``, keeps sending until the time is up. Starts are staggered over one interval."""
    tag = f"bench-{concurrency}-{time.time_ns()}"
    run = Run(concurrency, dict(script))
    rng = random.Random(concurrency)
    itl_s = float(script.get("itl_ms", 5.0)) / 1000
    t_end = time.perf_counter() + duration_s if duration_s else None

    async def stream(w: int) -> None:
        await asyncio.sleep(rng.uniform(0, itl_s))
        i = 0
        while True:
            if t_end is not None:
                if time.perf_counter() >= t_end:
                    return
            elif i >= requests_per_stream:
                return
            r = await client.complete(request({**script, "seed": w * 100_003 + i, "tag": tag}))
            run.results.append(r)
            i += 1

    run.load_before = loadavg()
    p0 = cpu_pressure_us()
    s0, c0, t0 = server.stats(), cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(stream(w) for w in range(concurrency)))
    run.wall_s = time.perf_counter() - t0
    run.client_cpu_s = cpu_seconds() - c0
    s1 = server.stats()
    run.server_cpu_s = s1["utime"] + s1["stime"] - s0["utime"] - s0["stime"]
    run.load_after = loadavg()
    p1 = cpu_pressure_us()
    if p0 >= 0 and p1 >= 0:
        run.cpu_pressure = (p1 - p0) / 1e6 / run.wall_s
    log = {e["id"]: e for e in server.log(tag=tag)}
    for r in run.results:
        if not r.ok or r.response_id not in log:
            run.failed += 1
            continue
        errs = chunk_errors(r.submit_mono_ns, r.chunk_offsets_us, log[r.response_id])
        run.ttft_err_us.append(errs.ttft_ns / 1000)
        run.itl_err_us += [x / 1000 for x in errs.itl_ns]
        run.chunk_err_us += [x / 1000 for x in errs.errors_ns]
    return run


def row(name: str, s: dict[str, Any]) -> str:
    t, i = s["ttft_err_us"], s["itl_err_us"]
    return (
        f"{name:<28} C={s['concurrency']:<4} req/s={s['requests_per_s']:<8} "
        f"chunks/s={s['chunks_per_s']:<9} cpu={s['client_cpu_util']:<6} "
        f"TTFT err p50/max {t['p50']:>7.1f}/{t['max']:>8.1f} us  "
        f"ITL err p50/p99/max {i['p50']:>6.1f}/{i['p99']:>7.1f}/{i['max']:>8.1f} us  "
        f"cpu pressure {s['cpu_pressure']}"
    )


async def fidelity(server: ScriptedServer, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    script = {"n": 64, "ttft_ms": 20.0, "itl_ms": 10.0, "jitter_ms": 3.0}
    async with AsyncLLMClient(server.url) as client:
        await run_level(client, server, 64, {"n": 4, "itl_ms": 2.0})  # warm up 64 connections
        for conc, reps in ((1, 3 if quick else 10), (64, 1 if quick else 3)):
            run = await run_level(client, server, conc, script, requests_per_stream=reps)
            s = run.summary()
            out[f"c{conc}"] = s
            print(row("fidelity 10 ms ITL", s), flush=True)
    return out


async def capacity(server: ScriptedServer, quick: bool) -> dict[str, Any]:
    """Concurrency sweep at a 5 ms ITL, 40 chunks per request, closed loop for a few seconds."""
    script = {"n": 40, "ttft_ms": 5.0, "itl_ms": 5.0, "jitter_ms": 1.0}
    levels = [1, 4, 16, 32, 48, 64, 96, 128, 192, 256]
    duration = 2.0 if quick else 4.0
    runs = []
    best: dict[str, Any] | None = None
    async with AsyncLLMClient(server.url) as client:
        await run_level(client, server, 64, {"n": 4, "itl_ms": 2.0})
        for conc in levels:
            run = await run_level(client, server, conc, script, duration_s=duration)
            s = run.summary()
            s["holds_1ms_p99"] = s["chunk_err_us"]["p99"] <= 1000 and s["failed"] == 0
            runs.append(s)
            print(row(f"capacity {'ok ' if s['holds_1ms_p99'] else 'BAD'}", s), flush=True)
            if s["holds_1ms_p99"]:
                best = s
            elif s["chunk_err_us"]["p50"] > 5000:
                break  # far past saturation
    return {"levels": runs, "highest_within_1ms_p99": best}


async def saturation_cost(server: ScriptedServer, quick: bool) -> dict[str, Any]:
    """The server sends as fast as it can (no sleeps): the client is the bottleneck."""
    script = {"n": 256, "ttft_ms": 0.0, "itl_ms": 0.0}
    async with AsyncLLMClient(server.url) as client:
        await run_level(client, server, 16, {"n": 16, "itl_ms": 0.0})
        run = await run_level(client, server, 32, script, duration_s=2.0 if quick else 4.0)
    s = run.summary()
    print(
        f"saturation: {s['tokens_per_s']} tokens/s, client cpu {s['client_cpu_util']} core, "
        f"{s['client_cpu_s_per_1k_tokens']} CPU-s per 1k tokens, server cpu "
        f"{s['server_cpu_util']}",
        flush=True,
    )
    return s


FIRST_REQUEST = """
import time, sys
t0 = time.perf_counter()
import asyncio
from otelbench.client import AsyncLLMClient, CompletionRequest
t1 = time.perf_counter()
async def main():
    async with AsyncLLMClient(sys.argv[1]) as c:
        req = CompletionRequest(api="completions", model="tiny", prompt="x",
                                extra_body={"script": {"n": 1, "ttft_ms": 0}})
        a = time.perf_counter(); r1 = await c.complete(req); b = time.perf_counter()
        r2 = await c.complete(req); d = time.perf_counter()
        assert r1.ok and r2.ok
        print(t1 - t0, b - a, d - b, r1.ttft_us, r2.ttft_us)
asyncio.run(main())
"""


def startup(server: ScriptedServer, quick: bool) -> dict[str, Any]:
    n = 3 if quick else 7
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    walls, firsts = [], []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([py, "-c", "import otelbench.client"], check=True, env=env, cwd=ROOT)
        walls.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run([py, "-c", "pass"], check=True, env=env, cwd=ROOT)
        firsts.append(time.perf_counter() - t)
    runs = []
    for _ in range(n):
        out = subprocess.run(
            [py, "-c", FIRST_REQUEST, server.url],
            check=True,
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.split()
        runs.append([float(x) for x in out])
    med = [statistics.median(col) for col in zip(*runs, strict=True)]
    result = {
        "python_c_import_otelbench_client_s": round(statistics.median(walls), 3),
        "python_c_pass_s": round(statistics.median(firsts), 3),
        "import_in_process_s": round(med[0], 3),
        "first_request_s": round(med[1], 4),
        "second_request_s": round(med[2], 4),
        "first_request_ttft_us": round(med[3]),
        "second_request_ttft_us": round(med[4]),
    }
    print(f"start-up: {result}", flush=True)
    return result


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with ScriptedServer() as server:
        results["fidelity"] = await fidelity(server, args.quick)
        results["capacity_one_core"] = await capacity(server, args.quick)
        results["saturation"] = await saturation_cost(server, args.quick)
        results["startup"] = startup(server, args.quick)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, shorter levels")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "client_fidelity.json"))
    args = ap.parse_args()
    import httpcore
    import httpx

    meta = {
        "when_unix": int(time.time()),
        "python": platform.python_version(),
        "httpx": httpx.__version__,
        "httpcore": httpcore.__version__,
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "note": "shared 2-core VM; other processes may run on the same cores (see loadavg)",
    }
    gc.collect()
    gc.freeze()
    results = asyncio.run(main_async(args))
    meta["loadavg_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, **results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
