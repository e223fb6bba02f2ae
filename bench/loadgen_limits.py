"""How fast the open-loop load generator keeps its schedule: send lag vs request and chunk rate.

The runner (``otelbench.loadgen.runner.execute_run``) precomputes every send time and records,
per request, its **schedule lag**: actual send − scheduled send (``perf_counter_ns``, taken when
the request's task starts, before the request is built and written). Here it drives the scripted
SSE server (tests/fixtures/scripted_server.py, its own process, a fast token schedule) with
Poisson arrivals and ramps

A. the request rate at 4 content chunks per request (1 ms to the first, 2 ms between chunks);
B. the chunk rate: 100 requests/s with 4 … 256 chunks per request, 1 ms apart;
C. bursty arrivals (gamma gaps, CV 3) at a few request rates,

and reports, per level, the schedule lag's P50 / P90 / P99 / max, the achieved send rate, the
client's CPU share, failures and involuntary context switches (the kernel ran another process:
on this shared machine the main source of the lag's tail at low rates), and for each series the
first level whose P99 lag exceeds 1 ms (draft 4.2.1's timing resolution) and 10 ms (the runner's
generator-bottleneck flag). Everything runs in this process as ``otelbench run`` would: the real
instrumented client, spans recorded by the OpenTelemetry SDK with a batch processor and an
exporter that counts and drops them.

Usage: ``.venv/bin/python bench/loadgen_limits.py [--quick] [--out FILE.json]`` (default
``bench/results/loadgen_limits.json``). Each level lasts about ``--seconds`` (default 3) of
schedule. The machine is a shared 2-core VM: the server and client share its cores with whatever
else runs (see ``loadavg``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
)

from bench.common import CountingExporter  # noqa: E402
from otelbench.loadgen.runner import (  # noqa: E402
    GENERATOR_BOTTLENECK_P99_LAG_MS,
    LoadSpec,
    RunConfig,
    execute_run,
)
from tests.fixtures.scripted_server import ScriptedServer  # noqa: E402

RESOLUTION_MS = 1.0


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def preempted() -> int:
    """Involuntary context switches of this process so far (the kernel ran something else)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


async def level(
    server: ScriptedServer,
    provider: TracerProvider,
    *,
    series: str,
    mode: str,
    rate: float,
    chunks: int,
    itl_ms: float,
    seconds: float,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    requests = max(20, int(rate * seconds))
    load = LoadSpec(mode=mode, requests=requests, rate=rate, arrival_params=params or {})  # type: ignore[arg-type]
    config = RunConfig(
        target=server.url,
        model="m",
        load=load,
        seed=1,
        workload_params={"vocab_size": 1024},
        extra_body={"script": {"n": chunks, "ttft_ms": 1.0, "itl_ms": itl_ms}},
    )
    load1 = os.getloadavg()[0]
    c0, w0, p0 = cpu_s(), time.perf_counter(), preempted()
    out = await execute_run(config, tracer_provider=provider)
    wall = time.perf_counter() - w0
    cpu = cpu_s() - c0
    nivcsw = preempted() - p0
    lags = np.array([r.schedule_lag_us for r in out.records if r.schedule_lag_us is not None])
    lag_ms = lags / 1000.0
    submits = sorted(r.submit_mono_ns for r in out.results)
    span_s = (submits[-1] - submits[0]) / 1e9 if len(submits) > 1 else 0.0
    failed = sum(1 for r in out.results if not r.ok)
    row = {
        "series": series,
        "mode": mode,
        "arrival_params": params or {},
        "rate_rps": rate,
        "chunks_per_request": chunks,
        "itl_ms": itl_ms,
        "offered_chunks_per_s": rate * chunks,
        "requests": requests,
        "failed": failed,
        "lag_p50_ms": round(float(np.percentile(lag_ms, 50)), 3),
        "lag_p90_ms": round(float(np.percentile(lag_ms, 90)), 3),
        "lag_p99_ms": round(float(np.percentile(lag_ms, 99)), 3),
        "lag_max_ms": round(float(lag_ms.max()), 3),
        "lag_over_1ms_share": round(float(np.mean(lag_ms > RESOLUTION_MS)), 4),
        "achieved_send_rps": round((len(submits) - 1) / span_s, 1) if span_s else None,
        "wall_s": round(wall, 2),
        "client_cpu_share": round(cpu / wall, 3),
        "involuntary_ctx_switches": nivcsw,
        "flagged_by_runner": any("fell behind" in d for d in out.manifest["deviations"]),
        "loadavg_1m": load1,
    }
    print(
        f"{series:2} {mode:8} {rate:7.0f} {chunks:5d} {rate * chunks:9.0f} {requests:6d} "
        f"{row['lag_p50_ms']:8.3f} {row['lag_p99_ms']:8.3f} {row['lag_max_ms']:8.2f} "
        f"{row['achieved_send_rps'] or 0:9.1f} {row['client_cpu_share']:5.2f} {failed:5d} "
        f"{nivcsw:6d}",
        flush=True,
    )
    return row


def first_over(rows: list[dict[str, Any]], key: str, limit_ms: float) -> dict[str, Any] | None:
    for row in rows:
        if row["lag_p99_ms"] > limit_ms:
            return {key: row[key], "lag_p99_ms": row["lag_p99_ms"]}
    return None


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    exporter = CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    rates = [25, 50, 100, 200, 400, 800] if not args.quick else [50, 200, 800]
    chunk_levels = [4, 16, 64, 256] if not args.quick else [4, 64]
    bursty_rates = [50, 200] if not args.quick else [100]
    s = args.seconds
    print(
        "series mode      rate/s chunks  chunks/s   reqs  lag p50  lag p99  lag max  "
        "sent/s    cpu  fail  preempt"
    )
    out: dict[str, Any] = {}
    with ScriptedServer() as server:
        a = [
            await level(
                server, provider, series="A", mode="poisson", rate=r, chunks=4, itl_ms=2.0,
                seconds=s,
            )
            for r in rates
        ]  # fmt: skip
        b = [
            await level(
                server, provider, series="B", mode="poisson", rate=100, chunks=c, itl_ms=1.0,
                seconds=s,
            )
            for c in chunk_levels
        ]  # fmt: skip
        c = [
            await level(
                server, provider, series="C", mode="bursty", rate=r, chunks=4, itl_ms=2.0,
                seconds=s, params={"cv": 3.0},
            )
            for r in bursty_rates
        ]  # fmt: skip
    provider.shutdown()
    out["request_rate_ramp"] = a
    out["chunk_rate_ramp"] = b
    out["bursty_cv3"] = c
    out["limits"] = {
        "request_rate_p99_over_1ms": first_over(a, "rate_rps", RESOLUTION_MS),
        "request_rate_p99_over_10ms": first_over(a, "rate_rps", GENERATOR_BOTTLENECK_P99_LAG_MS),
        "chunk_rate_p99_over_1ms": first_over(b, "offered_chunks_per_s", RESOLUTION_MS),
        "chunk_rate_p99_over_10ms": first_over(
            b, "offered_chunks_per_s", GENERATOR_BOTTLENECK_P99_LAG_MS
        ),
        "bursty_p99_over_1ms": first_over(c, "rate_rps", RESOLUTION_MS),
    }
    out["spans_exported"] = exporter.spans
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer levels")
    ap.add_argument("--seconds", type=float, default=3.0, help="schedule length of each level")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "loadgen_limits.json"))
    args = ap.parse_args()
    meta = {
        "when_unix": int(time.time()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "seconds_per_level": args.seconds,
        "lag_definition": "actual send - scheduled send (perf_counter_ns), taken when the "
        "request's task starts, before the request is built and written",
        "note": "shared 2-core VM; the scripted server, the client and other jobs share the cores",
    }
    started = time.perf_counter()
    results = asyncio.run(main_async(args))
    meta["loadavg_end"] = os.getloadavg()
    meta["total_s"] = round(time.perf_counter() - started, 1)
    print(f"limits: {json.dumps(results['limits'])}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, **results}, indent=2) + "\n")
    print(f"wrote {out} ({meta['total_s']} s)")


if __name__ == "__main__":
    main()
