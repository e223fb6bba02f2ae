"""Warm-up: the stabilization check, probe summaries, the spec's validation, and what a round
sends (against a send function that plays the target)."""

from __future__ import annotations

import asyncio

import pytest

from otelbench.client import CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.warmup import WarmupSpec, probe_summary, probe_variation, run_warmup
from otelbench.loadgen.workloads import WorkloadRequest, make_workload
from otelbench.semconv import PHASE_PROBE, PHASE_WARMUP


def result(end_us: int | None, ttft_us: int | None, ok: bool = True) -> CompletionResult:
    return CompletionResult(
        ok=ok,
        error_type=None if ok else "500",
        error_message=None,
        status_code=200 if ok else 500,
        submit_unix_ns=0,
        submit_mono_ns=0,
        first_event_offset_us=ttft_us,
        ttft_us=ttft_us,
        chunk_offsets_us=[],
        chunk_tokens=[],
        end_offset_us=end_us,
        input_tokens=None,
        output_tokens=None,
        cached_tokens=None,
        finish_reason=None,
        response_id=None,
        trace_id=None,
        span_id=None,
    )


def test_probe_variation_is_the_largest_distance_from_the_median() -> None:
    assert probe_variation([100.0, 104.0, 97.0]) == pytest.approx(0.04)
    assert probe_variation([100.0, 100.0]) == 0.0
    assert probe_variation([90.0, 100.0, 120.0]) == pytest.approx(0.20)
    assert probe_variation([100.0]) is None
    assert probe_variation([]) is None
    assert probe_variation([0.0, 0.0]) is None


def test_probe_summary() -> None:
    s = probe_summary(
        [result(100_000, 30_000), result(105_000, 31_000), result(None, None, ok=False)], 0.10
    )
    assert s == {
        "probes": 3,
        "ok": 2,
        "latency_ms": [100.0, 105.0],
        "ttft_ms": [30.0, 31.0],
        "median_latency_ms": 102.5,
        "median_ttft_ms": 30.5,
        "variation": pytest.approx(2.5 / 102.5),
        "stabilized": True,
    }
    assert probe_summary([result(100_000, 1), result(130_000, 1)], 0.10)["stabilized"] is False
    failed = probe_summary([result(None, None, ok=False)] * 2, 0.10)
    assert failed["median_latency_ms"] is None
    assert failed["stabilized"] is False


def test_spec_defaults_are_the_drafts() -> None:
    spec = WarmupSpec()
    assert (spec.min_requests, spec.min_output_tokens, spec.threshold) == (100, 10_000, 0.10)
    assert spec.deviations() == []
    assert WarmupSpec(cold_start=True, min_requests=1).deviations() == []


def test_scaled_down_or_loosened_spec_lists_deviations() -> None:
    assert WarmupSpec(min_requests=10, min_output_tokens=500, threshold=0.2).deviations() == [
        "warm-up scaled down to at least 10 requests and 500 output tokens (draft 4.5.1: at "
        "least 100 requests or 10,000 output tokens, whichever is greater)",
        "warm-up stabilization threshold 20% is looser than draft 4.5.2's 10%",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_requests": -1}, "floors"),
        ({"min_requests": 0, "min_output_tokens": 0}, "needs min_requests or min_output_tokens"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"probes": 1}, "at least 2 probes"),
        ({"threshold": -0.1}, "threshold must be >= 0"),
        ({"max_rounds": 0}, "max_rounds must be >= 1"),
        ({"max_requests": 50}, "max_requests must be >= min_requests"),
    ],
)
def test_bad_spec_is_a_config_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        WarmupSpec(**kwargs)  # type: ignore[arg-type]


def test_the_client_clock_is_measured_not_declared() -> None:
    """4.2.1's evidence: the clock's own reported resolution and back-to-back reads."""
    from otelbench.loadgen.health import CLOCK_READS, measure_clock

    clock = measure_clock()
    assert clock["clock"] == "time.perf_counter_ns (CLOCK_MONOTONIC)"
    assert 0 < clock["resolution_ns"] <= 1_000_000
    assert clock["clock_getres_ns"] is None or clock["clock_getres_ns"] > 0
    reads = clock["read_delay_ns"]
    assert reads["count"] == CLOCK_READS - 1
    assert 0 <= reads["p50"] <= reads["p99"] <= reads["max"]


async def test_failed_warm_up_requests_do_not_count_toward_the_floor() -> None:
    """4.5.1 item 2 counts what was processed: a failed request processed nothing, so a warm-up
    whose every third request fails sends 14 for a floor of 10; it records it
    drained."""
    from otelbench.loadgen.warmup import run_warmup
    from otelbench.loadgen.workloads import make_workload

    sent: list[str] = []

    async def send(_item: object, phase: str) -> CompletionResult:
        sent.append(phase)
        ok = phase == "probe" or sent.count("warmup") % 3 != 0
        done = result(1000, 500, ok=ok)
        return CompletionResult(**{**done.__dict__, "output_tokens": 4 if ok else None})

    spec = WarmupSpec(min_requests=10, min_output_tokens=40, probes=2, concurrency=1)
    workload = make_workload("synthetic-uniform", seed=1, vocab_size=64)
    out = await run_warmup(spec, workload, send)
    manifest = out.to_manifest()
    # one at a time: 14 sent, the 3rd, 6th, 9th and 12th failed, the 10 others reach the floor
    assert (manifest["requests"], manifest["failed"]) == (14, 4)
    assert manifest["output_tokens"] == 40
    assert manifest["drained"] is True


@pytest.mark.parametrize("failures", [0, 3])
def test_a_warm_up_round_issues_only_what_its_floor_asks_and_replaces_each_failure(
    failures: int,
) -> None:
    """Closed loop at 8 streams, floor 8 requests (no token floor): 8 sent, plus one for each
    failed request; the probes (2 before, 2 after) apart."""
    sent: list[str] = []

    async def send(item: WorkloadRequest, phase: str) -> CompletionResult:
        await asyncio.sleep(0.001 * (1 + len(sent) % 3))  # requests end out of order
        sent.append(phase)
        warm = [p for p in sent if p == PHASE_WARMUP]
        ok = phase != PHASE_WARMUP or len(warm) > failures  # the first ones fail
        return result(10_000, 1_000, ok=ok)

    spec = WarmupSpec(min_requests=8, min_output_tokens=0, probes=2, max_rounds=1)
    workload = make_workload("synthetic-uniform", seed=1, vocab_size=1024)
    out = asyncio.run(run_warmup(spec, workload, send, concurrency=8))
    assert sent.count(PHASE_WARMUP) == 8 + failures
    assert sent.count(PHASE_PROBE) == 4
    manifest = out.to_manifest()
    assert manifest["rounds"][0]["requests"] == 8 + failures
    assert manifest["rounds"][0]["failed"] == failures
    assert manifest["drained"] is True
