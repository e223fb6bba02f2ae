"""5.8 Memory Pressure and Etalon's fluidity capacity evaluation for real, on the tiny vLLM on CPU.

Both run the quick profile against the session's shared vLLM (``vllm_server``: engine hooks on,
a KV cache of 18 blocks of 32 tokens, ``SHARED_KV_ARGS``, a 512-token window): the session's
receiver lends its port (``otlp_receiver.lent()``) to the procedure's own embedded collector
(``ProcedureSpec.collector_port``), so the engine's spans join the procedure's levels.

* 5.8: the KV cache of 576 tokens, and a 256-token context window given to the procedure
  (``max_context_len``). The default Long Context workload fills that window: 128 input + 128
  output tokens = 8 blocks a request, so 2 requests fit side by side and a third does not. vLLM
  admits a request when its prompt's blocks are free (4 here), so 3 requests run together and
  grow until one is preempted. With the capacity given as 2, the levels are 2 (100 %) and 3
  (110 %, 125 % and 150 % merged: integer concurrency). Checked: every request completes at the
  base level, preemptions really happen at 3 (preemption rate > 0), each preemption discards the
  prompt plus the output so far (128 … 255 tokens), and the report says so.
* Fluidity: the Synthetic-Uniform workload shortened (32–64 tokens in, 16–32 out: 3 blocks at
  most, so 6 requests fit the cache side by side); Etalon's prefill profile (10 isolated requests
  at each of 3 prompt lengths, quadratic fit, plus a scheduling slack of 50 ms: the tiny model's
  prefill takes milliseconds, and Etalon's 500 ms example would bank so much slack that every
  later token meets its deadline), a closed-loop probe, then the rate search at Etalon's 25 ms /
  0.9 / 99 %. Checked: the fit, the search, each level's fluid token rate from the client
  timeline and, the hooks being on, the engine's (Option C) figures too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from otelbench.loadgen.runner import RunConfig
from otelbench.procedures import (
    FluidityParams,
    FluidityProcedure,
    MemoryPressureParams,
    MemoryPressureProcedure,
    OpenLoopLevels,
    Procedure,
    ProcedureResult,
    ProcedureSpec,
    get_profile,
    placeholder_load,
    run_procedure,
)
from otelbench.sut import VllmCpuServer
from tests.vllm.conftest import SHARED_KV_ARGS

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

pytestmark = pytest.mark.vllm

QUICK = get_profile("quick")


def run_quick(
    procedure: Procedure, server: VllmCpuServer, sink: SpanSink, out: Path, **base: Any
) -> ProcedureResult:
    """Run ``procedure``'s quick profile against ``server``, its collector on ``sink``'s port."""
    config = RunConfig(
        target=server.base_url,
        model="tiny",
        load=placeholder_load(),
        seed=11,
        ignore_eos=True,
        warmup=QUICK.warmup,
        **base,
    )
    with sink.lent() as port:
        spec = ProcedureSpec(base=config, profile=QUICK, out_dir=out, collector_port=port)
        return run_procedure(procedure, spec, write=lambda _line: None)


def test_memory_pressure_preempts_above_the_capacity_of_a_tiny_kv_cache(
    vllm_server: VllmCpuServer,
    otlp_receiver: SpanSink,
    tmp_path: Path,
    vllm_measurements: dict[str, Any],
) -> None:
    assert SHARED_KV_ARGS == ("--block-size", "32", "--num-gpu-blocks-override", "18")
    params = MemoryPressureParams(capacity=2, output_tokens=128, max_context_len=256)
    started = time.monotonic()
    result = run_quick(
        MemoryPressureProcedure(params),
        vllm_server,
        otlp_receiver,
        tmp_path / "5.8",
        workload_params={"vocab_size": 1024},
    )
    elapsed = time.monotonic() - started
    r = result.result
    assert r["workload"]["max_context_len"] == 256
    assert r["workload"]["max_context_len_source"] == "given"
    assert r["workload"]["input_tokens"] == [128]
    base, over = r["levels"]
    assert (base["concurrency"], over["concurrency"]) == (2, 3)
    assert over["oversubscription"] == [1.1, 1.25, 1.5]
    assert base["completion_rate"] == 1.0
    assert base["failure_rate"] == 0.0
    for lv in (base, over):
        pre = lv["preemption"]
        assert pre is not None  # the hooks' spans joined every level
        assert pre["requests_observed"] == lv["requests"]
        assert pre["requests_preempted"] <= pre["events"]
    pre = over["preemption"]
    assert pre["rate"] > 0, "the tiny KV cache forced no preemption at 150 %"
    assert pre["events"] >= pre["requests_preempted"] > 0
    # a preemption frees the prompt (128) and the output so far (< 128)
    assert 128 <= pre["loss_per_preemption"] < 256
    assert sum(pre["timeline"]["preemptions"]) == pre["events"]
    assert r["summary"]["preemptions_observed"] is True
    assert r["summary"]["first_preempted_index"] is not None
    assert not any("engine-hook server span" in d for d in r["deviations"])
    assert any("120 s of 5.8.3" in d for d in r["deviations"])
    md = result.markdown
    assert "## Memory pressure degradation (5.8.5)" in md
    assert "| 100% (base) | 2 | 100.0% |" in md
    vllm_measurements["procedure 5.8 quick"] = {
        "capacity": r["capacity"]["concurrency"],
        "levels": [
            {
                "label": lv["label"],
                "concurrency": lv["concurrency"],
                "requests": lv["requests"],
                "completion": lv["completion_rate"],
                "preemption_rate": lv["preemption"]["rate"],
                "preemption_events": lv["preemption"]["events"],
                "recovery_rate": lv["preemption"]["recovery_rate"],
                "loss_per_preemption": lv["preemption"]["loss_per_preemption"],
                "ttft_p99_ms": round(lv["ttft_p99_ms"], 1),
            }
            for lv in r["levels"]
        ],
        "test_seconds": round(elapsed, 1),
    }


def test_fluidity_capacity_search_on_the_tiny_model(
    vllm_server: VllmCpuServer,
    otlp_receiver: SpanSink,
    tmp_path: Path,
    vllm_measurements: dict[str, Any],
) -> None:
    params = {"vocab_size": 1024, "input_min": 32, "input_max": 64,
              "output_min": 16, "output_max": 32}  # fmt: skip
    started = time.monotonic()
    result = run_quick(
        FluidityProcedure(
            FluidityParams(open_loop=OpenLoopLevels(min_level_requests=8), scheduling_slack_s=0.05)
        ),
        vllm_server,
        otlp_receiver,
        tmp_path / "fluidity",
        workload_params=params,
    )
    elapsed = time.monotonic() - started
    r = result.result
    fit = r["slo"]["prefill_fit"]
    assert r["slo"]["prefill_deadline_kind"] == "profiled"
    # 10 isolated requests per length; a stall (> 3 × the length's median) is left out
    assert 25 <= fit["requests"] <= 30
    dropped = sum(
        n.split("(>")[0].count(" ms") for n in r["notes"] if n.startswith("prefill profile at")
    )
    assert fit["requests"] + dropped == 30
    assert len(fit["lengths"]) == 3
    assert 32 <= fit["lengths"][0] < fit["lengths"][-1] <= 64
    for length in fit["lengths"]:
        # isolated prefill of at most 64 tokens on the tiny model: tens of ms at most, plus S
        assert 50.0 < fit["deadline_ms_at"][str(length)] < 150.0
    assert [lv["success_rate"] for lv in r["profile_levels"]] == [1.0, 1.0, 1.0]
    assert r["capacity"]["rps"] > 0
    assert r["capacity"]["probe"]["role"] == "capacity-probe"
    levels = r["levels"]
    assert 1 <= len(levels) <= QUICK.search_max_levels
    steps = r["search"]["steps"]
    assert [s["rps"] for s in steps] == [lv["offered_rps"] for lv in levels]
    for lv in levels:
        v = lv["verdict"]
        assert v["passed"] == (v["fraction_fluid"] >= 0.99)
        assert v["evaluated"] + v["failed"] == lv["requests"]
        if v["evaluated"]:
            assert v["fluid_rate"] is None or v["fluid_rate"]["tokens_per_s"] > 0
        # the hooks' per-token times were joined: the engine's view is reported too
        assert v["server"] is not None
        assert v["server"]["evaluated"] == v["evaluated"]
    best = r["summary"]["fluidity_capacity_rps"]
    if best is not None:
        assert any(s["passed"] and s["rps"] == best for s in steps)
        assert r["summary"]["fraction_fluid"] >= 0.99
    else:
        assert not any(s["passed"] for s in steps)
    vllm_measurements["procedure fluidity quick"] = {
        "prefill_deadline_ms_at": {k: round(v, 1) for k, v in fit["deadline_ms_at"].items()},
        "capacity_estimate_rps": round(r["capacity"]["rps"], 3),
        "fluidity_capacity_rps": None if best is None else round(best, 3),
        "levels": [
            {
                "offered_rps": round(lv["offered_rps"], 3),
                "passed": lv["verdict"]["passed"],
                "fraction_fluid": lv["verdict"]["fraction_fluid"],
                "fluid_tokens_per_s": (lv["verdict"]["fluid_rate"] or {}).get("tokens_per_s"),
                "server_fluid_tokens_per_s": (
                    (lv["verdict"]["server"] or {}).get("fluid_rate") or {}
                ).get("tokens_per_s"),
            }
            for lv in levels
        ],
        "test_seconds": round(elapsed, 1),
    }
