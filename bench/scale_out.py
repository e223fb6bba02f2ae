"""How many load-generator hosts a fleet needs: the measured chunk rate of one worker, scaled out.

An extrapolation, not a measurement: it reads ``bench/results/loadgen_workers.json`` (written by
``bench/loadgen_workers.py``: one worker process, the real collector, the scripted server's
write times as the truth) and takes the highest chunk rate at which one worker still held the
TTFT error P99 within 1 ms (draft 4.2.1) as one core's capacity. For each fleet (replicas ×
streams per replica × tokens/s per stream, one token per chunk: the worst case, as a server that
packs tokens into chunks sends fewer) it gives the chunks/s the load generators must time and the
hosts of each size that ``otelbench run --shard I/N`` needs, at ``--headroom`` of that capacity.

Assumptions, each stated in the JSON: one worker per core, and the cores of a host scale
linearly (``--workers`` up to the cores less ``--reserved``, kept for the span exporters' threads
and the operating system; unmeasured past this machine's 2 cores: run ``bench/loadgen_workers.py
--streams 64,128,256,512,1024 --workers 1,2,4,8`` on a larger host to replace the figure); the
network and the collector gateway keep up (they scale apart: deploy/README.md); the target's
token rate is known.

Usage::

    .venv/bin/python bench/scale_out.py
    .venv/bin/python bench/scale_out.py --headroom 0.5 --host-cores 8,16,32
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import REPO, write_result

FLEETS: list[tuple[str, int, int, float]] = [
    ("4 replicas, 64 streams, 30 tok/s", 4, 64, 30.0),
    ("16 replicas, 256 streams, 30 tok/s", 16, 256, 30.0),
    ("16 replicas, 256 streams, 60 tok/s", 16, 256, 60.0),
    ("64 replicas, 256 streams, 30 tok/s", 64, 256, 30.0),
]
"""(name, replicas, concurrent streams per replica, decode tokens/s per stream)."""


def core_capacity(result: dict[str, Any]) -> tuple[float, float | None]:
    """One worker's highest chunk rate with the TTFT error P99 within 1 ms, and the first rate
    at which it was not (None: never measured past it)."""
    single = [lvl for lvl in result["levels"] if lvl["workers"] == 1]
    held = [lvl["chunks_per_s"] for lvl in single if lvl["ttft_p99_within_1ms"]]
    lost = [lvl["chunks_per_s"] for lvl in single if not lvl["ttft_p99_within_1ms"]]
    if not held:
        raise SystemExit("loadgen_workers.json has no one-worker level within 1 ms")
    return max(held), min(lost) if lost else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--measured", type=Path, default=REPO / "bench/results/loadgen_workers.json")
    ap.add_argument("--headroom", type=float, default=0.5, help="share of a core's capacity used")
    ap.add_argument("--host-cores", default="8,16,32", help="host sizes (cores), comma-separated")
    ap.add_argument("--reserved", type=int, default=2, help="cores kept off the workers per host")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/scale_out.json")
    args = ap.parse_args(argv)
    measured = json.loads(args.measured.read_text())
    held, lost = core_capacity(measured)
    per_core = held * args.headroom
    sizes = [int(c) for c in args.host_cores.split(",")]
    rows = []
    for name, replicas, streams, tokens_per_s in FLEETS:
        chunks = replicas * streams * tokens_per_s
        hosts = {
            str(cores): math.ceil(chunks / (per_core * max(cores - args.reserved, 1)))
            for cores in sizes
        }
        rows.append(
            {
                "fleet": name,
                "streams": replicas * streams,
                "chunks_per_s": chunks,
                "cores": math.ceil(chunks / per_core),
                "hosts_by_cores": hosts,
            }
        )
    head = f"{'fleet':<38} {'streams':>8} {'chunks/s':>10} {'cores':>6} " + " ".join(
        f"{f'{c}-core hosts':>14}" for c in sizes
    )
    print(head)
    for r in rows:
        print(
            f"{r['fleet']:<38} {r['streams']:>8} {r['chunks_per_s']:>10,.0f} {r['cores']:>6} "
            + " ".join(f"{r['hosts_by_cores'][str(c)]:>14}" for c in sizes)
        )
    write_result(
        args.out,
        {
            "benchmark": "scale_out",
            "kind": "extrapolation from a measurement",
            "measured_from": str(args.measured.relative_to(REPO)),
            "measured_machine": measured.get("machine"),
            "core_chunks_per_s_within_1ms": held,
            "core_chunks_per_s_first_over_1ms": lost,
            "headroom": args.headroom,
            "reserved_cores_per_host": args.reserved,
            "assumptions": [
                "one load-generator worker per core; a host's cores scale linearly (unmeasured "
                "past the measuring machine's cores)",
                "one token per chunk (a server that packs tokens into chunks sends fewer)",
                "the network and the collector gateway keep up",
            ],
            "fleets": rows,
        },
    )


if __name__ == "__main__":
    main()
