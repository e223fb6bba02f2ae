"""The timing-resolution check (draft 4.2.1) reads the load generator's own health.

A report whose ``run.client_health`` says the event loops ran more than 1 ms late at the 99th
percentile fails the MUST, with the lateness and CPU as evidence and the advice to add workers
(and, when the loop waited for a core, to quiet the host); within 1 ms it is met, with the
clock's measured resolution and read delay beside the lateness. A run that did not measure its
load generator (no ``client_health``, or no clock in it) has no evidence of its timing and does
not meet it. The reports are ``test_compliance.full_report()`` with the health changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from otelbench.report.compliance import CONTENDED_WAIT_SHARE, VERDICT_NOT_COMPLIANT, compliance
from tests.unit.report.test_compliance import CLIENT_HEALTH, checks_by_id, full_report


def health(
    p99: float, *, utilization: float = 0.3, wait_share: float = 0.0, steal: float = 0.0
) -> dict[str, Any]:
    worker = {
        "worker": 0,
        "pid": 1,
        "loop_lateness_ms": {"count": 500, "p50": 0.06, "p99": p99, "max": p99 * 2},
        "read_delay_ms": {"count": 450, "p50": 0.01, "p99": p99 / 2, "max": p99},
        "cpu": {
            "user_s": 1.0,
            "system_s": 0.2,
            "wall_s": 4.0,
            "utilization": utilization,
            "involuntary_context_switches": 3,
            "runqueue_wait_s": wait_share * 4.0,
            "runqueue_wait_share": wait_share,
            "host_steal_share": steal,
        },
    }
    return {
        "clock": dict(CLIENT_HEALTH["clock"]),
        "read_delay_ms": {"count": 900, "p50": 0.01, "p99": p99 / 2, "max": p99},
        "method": "timerfd",
        "period_ms": 2.0,
        "limit_ms": 1.0,
        "loop_lateness_ms": dict(worker["loop_lateness_ms"]),  # type: ignore[call-overload]
        "workers": [worker, {**worker, "worker": 1}],
    }


def timing(report: dict[str, Any]) -> dict[str, Any]:
    return checks_by_id(report)["timing-resolution"]


def test_a_late_loop_fails_timing_resolution_and_says_to_add_workers() -> None:
    report = full_report()
    report["run"]["client_health"] = health(14.4, utilization=0.97)
    check = timing(report)
    assert check["met"] is False
    assert "P99 14.400 ms" in check["evidence"]
    assert "waited in the kernel before being read P99 7.200 ms, max 14.400 ms" in check["evidence"]
    assert "busiest worker's CPU 97% of a core" in check["evidence"]
    assert "P99 over 1 ms" in check["evidence"]
    assert "--workers 4" in check["evidence"]
    assert "quiet the host" not in check["evidence"]
    assert compliance(report)["verdict"] == VERDICT_NOT_COMPLIANT


def test_a_loop_kept_waiting_for_a_core_names_the_other_processes() -> None:
    report = full_report()
    report["run"]["client_health"] = health(3.0, wait_share=CONTENDED_WAIT_SHARE * 2)
    check = timing(report)
    assert check["met"] is False
    assert "longest wait for a core 10% of the time" in check["evidence"]
    assert "quiet the host" in check["evidence"]


def test_the_advice_names_loadgen_cpus_or_the_cpus_it_had() -> None:
    report = full_report()
    report["run"]["client_health"] = health(3.0, wait_share=CONTENDED_WAIT_SHARE)
    assert "give the load generator cores of its own (--loadgen-cpus)" in timing(report)["evidence"]
    report["run"]["load"]["workers"] = {
        "count": 2,
        "chosen": "--workers",
        "cpus": {"loadgen": [0, 2], "others": [1], "processes": {"collector": [1]}},
    }
    evidence = timing(report)["evidence"]
    assert "waiting on its own CPUs (--loadgen-cpus 0,2)" in evidence
    assert "give it CPUs nothing else runs on" in evidence


def test_a_host_that_steals_the_cpus_is_named() -> None:
    report = full_report()
    report["run"]["client_health"] = health(3.0, steal=0.08)
    check = timing(report)
    assert check["met"] is False
    assert "8% of the CPU time taken by the host (steal)" in check["evidence"]
    assert "quiet the host" in check["evidence"]


@pytest.mark.parametrize("p99", [0.2, 1.0])
def test_a_loop_within_1_ms_meets_it_with_the_evidence(p99: float) -> None:
    report = full_report()
    report["run"]["client_health"] = health(p99)
    check = timing(report)
    assert check["met"] is True
    assert f"P99 {p99:.3f} ms" in check["evidence"]
    assert "(P99 within 1 ms)" in check["evidence"]


def test_a_run_without_client_health_does_not_meet_4_2_1() -> None:
    report = full_report()
    report["run"]["client_health"] = None
    check = timing(report)
    assert check == {
        **check,
        "met": False,
        "evidence": "no evidence: the run recorded no load-generator clock or event-loop timing "
        "(run.client_health is absent)",
    }
    result = compliance(report)
    assert result["verdict"] == VERDICT_NOT_COMPLIANT
    assert result["unmet_must"] == ["load-generator-requirements", "timing-resolution"]
    # lateness measured but not the clock (a run before the clock was recorded): no evidence
    report["run"]["client_health"] = health(0.2)
    del report["run"]["client_health"]["clock"]
    assert timing(report)["met"] is False


def test_a_clock_coarser_than_1_ms_fails_whatever_the_loop() -> None:
    report = full_report()
    report["run"]["client_health"] = health(0.2)
    report["run"]["client_health"]["clock"]["resolution_ns"] = 4_000_000.0  # a 4 ms tick
    check = timing(report)
    assert check["met"] is False
    assert check["evidence"].endswith("(P99 within 1 ms): the clock itself is coarser than 1 ms")
    assert checks_by_id(report)["timing-resolution-us"]["met"] is False


def test_the_load_generators_own_gc_pauses_are_named_where_it_counted_them() -> None:
    report = full_report()
    late = health(3.2)
    late["gc_pauses"] = {
        "collections": 900, "full": 7, "over_limit": 41, "total_ms": 812.5, "max_ms": 277.4
    }  # fmt: skip
    report["run"]["client_health"] = late
    check = timing(report)
    assert check["met"] is False
    assert (
        "its garbage collector paused it 41 time(s) for over 1 ms, longest 277.4 ms "
        "(7 full collection(s) in all)"
    ) in check["evidence"]
    quiet = health(0.4)
    quiet["gc_pauses"] = {**late["gc_pauses"], "over_limit": 0, "max_ms": 0.8}
    report["run"]["client_health"] = quiet
    assert "garbage collector" not in timing(report)["evidence"]
    report["run"]["client_health"] = health(3.2)  # an older report: not counted, not named
    assert "garbage collector" not in timing(report)["evidence"]
