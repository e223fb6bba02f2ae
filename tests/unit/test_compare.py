"""Multi-system comparison (draft section 6): statistics, loading, checklist, normalization."""

from __future__ import annotations

import copy
import functools
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench.cli.compare import compare_command
from otelbench.compare import (
    DEFAULT_GROUP_BY,
    METRICS,
    GpuCount,
    RunReport,
    compare_runs,
    gpu_count_from_hardware,
    load_run,
    parse_run_arguments,
)
from otelbench.errors import ConfigError
from otelbench.loadgen.warmup import WarmupOutcome, WarmupSpec
from otelbench.metrics import bootstrap_ci
from otelbench.metrics.stats import (
    permutation_test,
    regularized_incomplete_beta,
    student_t_cdf,
    student_t_two_sided_p,
    welch_t_test,
)
from otelbench.model.compare import ChecklistItem, CompareResult, MetricResult
from otelbench.model.conform import conforms
from otelbench.model.report import Report, Summary
from otelbench.query import extract_run_data, open_store
from otelbench.render.compare import render_compare_markdown
from otelbench.report import render_json, report_from_data
from otelbench.report.compliance import compliance
from otelbench.report.configuration import configuration_summary
from tests.unit.query.spanstore import write_scenario

# ---------------------------------------------------------------------------------------------
# Regularized incomplete beta and Student's t
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, 1e-12, 0.1, 0.37, 0.5, 0.9, 1 - 1e-12, 1.0])
def test_incomplete_beta_closed_forms(x: float) -> None:
    assert regularized_incomplete_beta(x, 1.0, 1.0) == pytest.approx(x, abs=1e-14)
    # I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b
    assert regularized_incomplete_beta(x, 3.5, 1.0) == pytest.approx(x**3.5, rel=1e-12, abs=1e-15)
    assert regularized_incomplete_beta(x, 1.0, 4.0) == pytest.approx(
        1 - (1 - x) ** 4, rel=1e-12, abs=1e-15
    )
    # symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
    assert regularized_incomplete_beta(x, 2.5, 7.0) == pytest.approx(
        1 - regularized_incomplete_beta(1 - x, 7.0, 2.5), abs=1e-13
    )


@pytest.mark.parametrize(
    ("a", "tol"), [(0.5, 1e-14), (1.0, 1e-14), (3.0, 1e-14), (40.0, 1e-13), (5000.0, 1e-10)]
)
def test_incomplete_beta_is_one_half_at_the_centre_of_a_symmetric_beta(
    a: float, tol: float
) -> None:
    # For large a + b the log-gamma prefactor limits the accuracy (see the docstring).
    assert regularized_incomplete_beta(0.5, a, a) == pytest.approx(0.5, abs=tol)


def test_incomplete_beta_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="x must be within"):
        regularized_incomplete_beta(1.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="a and b must be finite and > 0"):
        regularized_incomplete_beta(0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="a and b must be finite and > 0"):
        regularized_incomplete_beta(0.5, 1.0, math.inf)


@pytest.mark.parametrize("t", [-50.0, -3.0, -1.0, -0.2, 0.0, 0.7, 2.0, 12.0, 1e4])
def test_student_t_cdf_closed_forms_for_one_and_two_degrees_of_freedom(t: float) -> None:
    # df = 1 is the Cauchy distribution; df = 2 has F(t) = 1/2 + t / (2 sqrt(2 + t²)).
    assert student_t_cdf(t, 1.0) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-14)
    assert student_t_cdf(t, 2.0) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-14)


@pytest.mark.parametrize("t", [0.0, 0.5, 1.3, 3.6742346, 9.0])
def test_two_sided_p_closed_form_for_four_degrees_of_freedom(t: float) -> None:
    # P(|T| >= t) = I_{4/(4+t²)}(2, 1/2) = 1 - 3s/2 + s³/2 with s = |t| / sqrt(4 + t²).
    s = abs(t) / math.sqrt(4 + t * t)
    assert student_t_two_sided_p(t, 4.0) == pytest.approx(1 - 1.5 * s + 0.5 * s**3, abs=1e-14)
    assert student_t_two_sided_p(-t, 4.0) == student_t_two_sided_p(t, 4.0)


@pytest.mark.parametrize(
    ("quantile", "df", "p"),
    [
        # two-sided critical values from a textbook t table
        (12.706204736, 1.0, 0.05),
        (4.302652730, 2.0, 0.05),
        (2.228138852, 10.0, 0.05),
        (2.042272456, 30.0, 0.05),
        (4.032142984, 5.0, 0.01),
        (1.959963985, 1e7, 0.05),  # the normal limit
    ],
)
def test_two_sided_p_at_textbook_critical_values(quantile: float, df: float, p: float) -> None:
    assert student_t_two_sided_p(quantile, df) == pytest.approx(p, rel=1e-6)


@pytest.mark.parametrize(("t", "df"), [(1.7, 4.5), (-0.4, 2.3), (2.9, 7.77), (0.05, 1.4)])
def test_cdf_for_fractional_df_matches_numerical_integration_of_the_density(
    t: float, df: float
) -> None:
    # Welch's degrees of freedom are fractional: integrate the t density from 0 to |t|.
    grid = np.linspace(0.0, abs(t), 200_001)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    pdf = np.exp(log_c - (df + 1) / 2 * np.log1p(grid**2 / df))
    area = float(np.sum((pdf[1:] + pdf[:-1]) / 2 * np.diff(grid)))
    expected = 0.5 + math.copysign(area, t)
    assert student_t_cdf(t, df) == pytest.approx(expected, abs=1e-9)


def test_t_distribution_extremes() -> None:
    assert student_t_two_sided_p(0.0, 3.0) == 1.0
    assert student_t_two_sided_p(math.inf, 3.0) == 0.0
    assert student_t_cdf(-math.inf, 3.0) == 0.0
    tail = student_t_two_sided_p(1e3, 3.0)  # far tail: ~ 2 * 6 sqrt(3) / (π t³ ... ) > 0
    assert 0.0 < tail < 1e-8
    with pytest.raises(ValueError, match="degrees of freedom"):
        student_t_two_sided_p(1.0, 0.0)
    with pytest.raises(ValueError, match="NaN"):
        student_t_two_sided_p(math.nan, 3.0)


# ---------------------------------------------------------------------------------------------
# Welch's t-test and the permutation test
# ---------------------------------------------------------------------------------------------


def test_welch_by_hand_equal_variances() -> None:
    # means 2 and 5, sample variances 1 and 1: SE² = 1/3 + 1/3, t = -3 / sqrt(2/3);
    # ν = (2/3)² / ((1/3)²/2 + (1/3)²/2) = 4.
    w = welch_t_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert w.t == pytest.approx(-3 / math.sqrt(2 / 3), rel=1e-14)
    assert w.df == pytest.approx(4.0, rel=1e-14)
    s = math.sqrt(13.5 / (4 + 13.5))  # the df = 4 closed form with t² = 9 / (2/3) = 13.5
    assert w.p == pytest.approx(1 - 1.5 * s + 0.5 * s**3, rel=1e-12)
    assert round(w.p, 4) == 0.0213
    assert w.mean_difference == -3.0
    assert w.standard_error == pytest.approx(math.sqrt(2 / 3))


def test_welch_by_hand_unequal_variances_and_sizes() -> None:
    # x: mean 2.5, s² = 5/3, n = 4; y: mean 4, s² = 4, n = 3.
    w = welch_t_test([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0])
    vx, vy = (5 / 3) / 4, 4 / 3
    assert w.t == pytest.approx(-1.5 / math.sqrt(vx + vy), rel=1e-14)
    assert w.df == pytest.approx((vx + vy) ** 2 / (vx**2 / 3 + vy**2 / 2), rel=1e-14)
    assert w.df == pytest.approx(3.2347, abs=1e-4)
    assert w.p == pytest.approx(student_t_two_sided_p(w.t or 0.0, w.df or 1.0), rel=1e-14)


def test_welch_textbook_example() -> None:
    # Wikipedia, "Welch's t-test", example 1: t = -2.46, ν ≈ 25.0, p = 0.021.
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    w = welch_t_test(a1, a2)
    assert round(w.t or 0.0, 2) == -2.46
    assert round(w.df or 0.0, 0) == 25.0
    assert round(w.p, 3) == 0.021


def test_welch_degenerate_samples() -> None:
    same = welch_t_test([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])
    assert (same.t, same.df, same.p) == (0.0, None, 1.0)
    apart = welch_t_test([2.0, 2.0, 2.0], [3.0, 3.0, 3.0])
    assert (apart.t, apart.df, apart.p, apart.mean_difference) == (None, None, 0.0, -1.0)
    one_constant = welch_t_test([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
    assert one_constant.df == pytest.approx(2.0)  # ν = n_x - 1 when s_y = 0
    with pytest.raises(ValueError, match="at least 2 values"):
        welch_t_test([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        welch_t_test([1.0, math.nan], [1.0, 2.0])


def test_permutation_exact_by_hand() -> None:
    # 20 splits of {1..6} into 3 + 3; only the observed one and its mirror reach |diff| = 3.
    p = permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert (p.p, p.exact, p.permutations, p.min_p) == (0.1, True, 20, 0.1)
    # {1,2}|{3}: 1.5, {1,3}|{2}: 0, {2,3}|{1}: 1.5 -> 2 of 3 splits reach the observed 1.5.
    q = permutation_test([1.0, 2.0], [3.0])
    assert (q.p, q.permutations) == (pytest.approx(2 / 3), 3)
    assert q.min_p == pytest.approx(1 / 3)
    assert permutation_test([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]).p == 1.0


def test_permutation_monte_carlo_is_seeded() -> None:
    x, y = [1.0, 2.0, 3.0, 4.0], [10.0, 11.0, 12.0, 13.0]
    a = permutation_test(x, y, max_exact=1, resamples=2_000, seed=3)
    b = permutation_test(x, y, max_exact=1, resamples=2_000, seed=3)
    assert a == b
    assert not a.exact
    assert a.permutations == 2_000
    # Exact p is 2/70; the Monte Carlo estimate (1 + hits) / (1 + R) is close to it.
    assert a.p == pytest.approx(2 / 70, abs=0.015)
    assert permutation_test(x, y).p == pytest.approx(2 / 70)


# ---------------------------------------------------------------------------------------------
# Reports: a whole built report.json with each test's values
# ---------------------------------------------------------------------------------------------


@functools.cache
def _base_json() -> str:
    """The report.json of the span-store scenario (``write_scenario``), as a reader sees it."""
    with tempfile.TemporaryDirectory() as tmp:
        store = write_scenario(Path(tmp) / "scenario.duckdb")
        with open_store(store) as runner:
            return render_json(report_from_data(extract_run_data(runner)))


def summary(p50: float, p99: float) -> Summary:
    return {
        **dict.fromkeys(
            ("count", "mean", "std", "min", "max", "p50", "p90", "p95", "p99", "p99_9")
        ),
        "count": 100,
        "mean": p50,
        "p50": p50,
        "p99": p99,
    }


def _warmup(run_id: str) -> Any:
    """A warm-up declaration as the load generator writes it; the requests it sent are an
    outcome that varies by run (not compared)."""
    spec = WarmupSpec(min_requests=100, min_output_tokens=10000)
    warm = WarmupOutcome(spec=spec, concurrency=4, seed=None, requests=120 + len(run_id))
    return json.loads(json.dumps(warm.to_manifest()))


def make_report(
    run_id: str,
    *,
    ttft: float = 100.0,
    tokens_per_s: float = 300.0,
    software: str = "engine 1.0",
    hardware: str = "1x NVIDIA L4 GPU",
    seed: int = 42,
    failed: int = 0,
    server_ttft: float | None = None,
    duration_s: float = 60.0,
) -> Report:
    """A whole report.json (the scenario's, built) that conforms to the report's types, with
    the run and metrics a test is about; its configuration and compliance are computed from
    them. Server metrics only with ``server_ttft``."""
    report: Report = json.loads(_base_json())
    run = report["run"]
    run.update(
        id=run_id,
        target="http://10.0.0.5:8000",
        model="tiny",
        api="completions",
        workload={"name": "synthetic-uniform", "seed": seed, "spec": run["workload"]["spec"]},
        seed=seed,
        tokenizer=None,
        load={"mode": "poisson", "rate": 2.0, "concurrency": None, "requests": 100},
        warmup=_warmup(run_id),
        duration_s=duration_s,
        otelbench_version="0.1.0",
    )
    run["sut"].update(boundary="Model Engine", software=software, hardware=hardware)
    run["requests"] = {
        "total": 100,
        "succeeded": 100 - failed,
        "failed": failed,
        "failed_by_type": {"504": failed} if failed else {},
    }
    metrics = report["metrics"]
    client = metrics["client"]
    client["ttft_ms"] = summary(ttft, ttft * 3)
    client["tpot_ms"] = summary(10.0, 20.0)
    client["itl_ms"] = summary(9.0, 30.0)
    client["e2e_ms"] = summary(2000.0, 4000.0)
    client["throughput"].update(output_tokens_per_s=tokens_per_s, requests_per_s=2.0)
    if server_ttft is None:
        del metrics["server"]
    else:
        metrics["server"]["span_sources"] = {"otelbench.vllm.request": 100, "llm_request": 0}
        metrics["server"]["ttft_ms"] = summary(server_ttft, server_ttft * 2)
    methodology = report["methodology"]
    methodology["itl_method"].update(option="B", server_option=None, chunk_token_source="usage")
    methodology["first_token_definition"] = "first content token"
    methodology["deviations"] = [f"deviation of {software}"]
    report["configuration"] = configuration_summary(report)
    report["compliance"] = compliance(report)
    assert conforms(report, Report) == []
    return report


def run(report: Report, system: str | None = None) -> RunReport:
    return RunReport(
        path=Path(f"/runs/{report['run']['id']}/report.json"), report=report, system=system
    )


def two_systems(a_ttft: list[float], b_ttft: list[float], **b_kwargs: Any) -> list[RunReport]:
    runs = [run(make_report(f"a{i}", ttft=v), "a") for i, v in enumerate(a_ttft)]
    runs += [run(make_report(f"b{i}", ttft=v, **b_kwargs), "b") for i, v in enumerate(b_ttft)]
    return runs


def metric(result: CompareResult, key: str) -> MetricResult:
    (found,) = [m for m in result["metrics"] if m["key"] == key]
    return found


def check(result: CompareResult, item: str) -> ChecklistItem:
    (found,) = [c for c in result["checklist"] if c["item"] == item]
    return found


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------


def test_three_runs_each_interval_test_and_verdict() -> None:
    a, b = [100.0, 110.0, 120.0], [150.0, 160.0, 170.0]
    result = compare_runs(two_systems(a, b), resamples=2_000)
    assert result["baseline"] == "a"
    assert [s["name"] for s in result["systems"]] == ["a", "b"]
    assert [s["id"] for s in result["systems"]] == ["A", "B"]
    ttft = metric(result, "ttft_p50_ms")
    sa, sb = ttft["systems"]["a"], ttft["systems"]["b"]
    assert (sa["n"], sa["values"], sa["mean"]) == (3, a, 110.0)
    assert sa["sample_std"] == pytest.approx(10.0)
    expected = bootstrap_ci(a, resamples=2_000, seed=0)
    assert (sa["ci"]["low"], sa["ci"]["high"]) == (expected.low, expected.high)
    for stats in (sa, sb):
        assert stats["ci"]["low"] <= stats["mean"] <= stats["ci"]["high"]
    c = ttft["comparisons"]["b"]
    assert c["vs"] == "a"
    assert c["difference"] == 50.0
    assert c["relative_difference"] == pytest.approx(50 / 110)
    w = welch_t_test(b, a)
    assert c["welch"] == {"t": w.t, "df": w.df, "p": w.p}
    assert c["welch"]["df"] == pytest.approx(4.0)
    assert c["permutation"] == {"p": 0.1, "exact": True, "permutations": 20, "min_p": 0.1}
    assert c["significant"] is True
    assert c["verdict"] == "worse"  # higher TTFT is worse
    assert result["deviations"] == []  # equivalent runs, enough of them


def test_higher_throughput_is_better_and_noise_is_not_significant() -> None:
    runs = [run(make_report(f"a{i}", tokens_per_s=v), "a") for i, v in enumerate([300, 310, 290])]
    runs += [run(make_report(f"b{i}", tokens_per_s=v), "b") for i, v in enumerate([400, 405, 395])]
    result = compare_runs(runs, resamples=500)
    assert metric(result, "output_tokens_per_s")["comparisons"]["b"]["verdict"] == "better"
    assert metric(result, "ttft_p50_ms")["comparisons"]["b"]["verdict"] == (
        "no significant difference"
    )
    assert metric(result, "ttft_p50_ms")["comparisons"]["b"]["welch"]["p"] == 1.0


def test_fewer_than_three_runs_prints_the_table_and_lists_the_shortfall() -> None:
    result = compare_runs(two_systems([100.0, 110.0, 120.0], [150.0, 160.0]), resamples=200)
    ttft = metric(result, "ttft_p50_ms")
    assert ttft["systems"]["b"]["ci"] is None
    assert ttft["systems"]["b"]["mean"] == 155.0
    c = ttft["comparisons"]["b"]
    assert (c["difference"], c["welch"], c["permutation"], c["significant"]) == (
        45.0,
        None,
        None,
        None,
    )
    assert c["verdict"] == "not tested: fewer than 3 runs"
    assert result["deviations"] == [
        "system B (b) has 2 run(s); draft 6.3 asks for at least 3 independent runs: "
        "no confidence interval or significance test for it"
    ]
    assert "155.0 (n=2, no CI)" in render_compare_markdown(result)


def test_checklist_detects_a_differing_seed() -> None:
    result = compare_runs(two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], seed=7), resamples=200)
    seed = check(result, "seed")
    assert seed["status"] == "differs"
    assert seed["values"] == {"a": [{"workload": 42, "run": 42}], "b": [{"workload": 7, "run": 7}]}
    assert seed["differences"] == {"run": {"a": [42], "b": [7]}, "workload": {"a": [42], "b": [7]}}
    assert check(result, "workload")["status"] == "equal"  # the seed is its own item
    assert check(result, "load_model")["status"] == "equal"
    assert "Seed differs (draft 6.1): run: a 42, b 7; workload: a 42, b 7" in result["deviations"]


def test_checklist_items_equal_differs_and_not_recorded() -> None:
    runs = two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], software="engine 2.0", duration_s=90.0)
    for r in runs:
        r.report["run"]["sut"].pop("boundary")
    result = compare_runs(runs, resamples=200)
    statuses = {c["item"]: c["status"] for c in result["checklist"]}
    assert statuses == {
        "workload": "equal",
        "seed": "equal",
        "api": "equal",
        "load_model": "equal",
        "request_count": "equal",
        "duration": "differs",
        "warmup": "equal",  # the procedure, not the requests it happened to send
        "tokenizer": "equal",
        "timing": "equal",
        "definitions": "equal",
        "model": "equal",
        "sut_boundary": "not recorded",
        "hardware": "equal",
        "otelbench_version": "equal",
        "software": "differs",
        "target": "equal",
    }
    assert check(result, "tokenizer")["values"]["a"] == ["none declared"]
    assert check(result, "duration")["values"] == {"a": [60.0], "b": [90.0]}
    devs = result["deviations"]
    assert "Test duration (s, within 10 %) differs (draft 6.4): a 60.0, b 90.0" in devs
    assert "SUT boundary not recorded (draft 4.1, 6.1): equivalence cannot be verified" in devs
    assert not any(d.startswith("SUT software") for d in devs)  # identifies the systems


def test_timing_method_differs_when_only_one_system_has_server_spans() -> None:
    result = compare_runs(
        two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], server_ttft=50.0), resamples=200
    )
    timing = check(result, "timing")
    assert timing["status"] == "differs"
    assert timing["differences"]["timing"] == {
        "a": ["client only"],
        "b": ["client and server spans"],
    }
    server = metric(result, "server_ttft_p50_ms")
    assert server["systems"]["a"]["n"] == 0
    assert server["systems"]["b"]["mean"] == 50.0
    assert server["comparisons"]["b"]["verdict"] == "no data"


def test_server_ttft_is_left_out_when_no_run_has_server_spans() -> None:
    result = compare_runs(two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]), resamples=200)
    keys = [m["key"] for m in result["metrics"]]
    assert keys == [
        "ttft_p50_ms",
        "ttft_p99_ms",
        "tpot_p50_ms",
        "tpot_p99_ms",
        "itl_p50_ms",
        "itl_p99_ms",
        "e2e_p50_ms",
        "e2e_p99_ms",
        "output_tokens_per_s",
        "output_tokens_per_gpu_s",
        "requests_per_s",
        "error_rate",
    ]
    assert {m.key for m in METRICS} - set(keys) == {"server_ttft_p50_ms"}


def test_error_rate() -> None:
    runs = [run(make_report(f"a{i}", failed=f), "a") for i, f in enumerate([0, 2, 4])]
    result = compare_runs(runs, resamples=200)
    assert metric(result, "error_rate")["systems"]["a"]["values"] == [0.0, 0.02, 0.04]
    assert "2.00 %" in render_compare_markdown(result)


# ---------------------------------------------------------------------------------------------
# Normalization per GPU (draft 6.2)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hardware", "count"),
    [
        ("1x NVIDIA L4 GPU", 1),
        ("8x NVIDIA H100 80GB GPUs", 8),
        ("8 × A100 GPUs, 2 TB RAM", 8),
        ("4 GPUs", 4),
        ("2 NVIDIA A10G GPU", 2),
        ("node with gpus=4", 4),
        ("gpu_count: 2", 2),
        ({"gpu_count": 3, "model": "L40S"}, 3),
        ({"gpus": 0}, 0),
        ("same host as the load generator: AMD EPYC (2 cores), 24 GiB memory, no accelerator", 0),
        ("CPU-only Xeon", 0),
        ("AMD EPYC (2 cores), 24 GiB memory", None),
        ("8 GiB GPU memory", None),
        ("2x L4 GPU and 4x A100 GPU", None),  # ambiguous
        ({"cpu": "EPYC"}, None),
        (None, None),
        ("", None),
    ],
)
def test_gpu_count_from_hardware(hardware: Any, count: int | None) -> None:
    assert gpu_count_from_hardware(hardware).count == count


def test_gpu_count_source_is_stated() -> None:
    assert gpu_count_from_hardware({"gpu_count": 3}) == GpuCount(3, "run.sut.hardware.gpu_count")
    assert gpu_count_from_hardware(None) == GpuCount(None, "run.sut.hardware not recorded")


def test_per_gpu_normalization_from_hardware_and_from_gpus_option() -> None:
    runs = [
        run(make_report(f"a{i}", tokens_per_s=v, hardware="2x NVIDIA L4 GPUs"), "a")
        for i, v in enumerate([300.0, 320.0, 340.0])
    ]
    runs += [
        run(make_report(f"b{i}", tokens_per_s=v, hardware="an accelerator box"), "b")
        for i, v in enumerate([800.0, 820.0, 840.0])
    ]
    result = compare_runs(runs, gpus={"B": 8}, resamples=200)
    per_gpu = metric(result, "output_tokens_per_gpu_s")
    assert per_gpu["systems"]["a"]["values"] == [150.0, 160.0, 170.0]
    assert per_gpu["systems"]["b"]["values"] == [100.0, 102.5, 105.0]
    assert per_gpu["comparisons"]["b"]["verdict"] == "worse"  # more tok/s, fewer per GPU
    assert metric(result, "output_tokens_per_s")["comparisons"]["b"]["verdict"] == "better"
    systems = result["normalization"]["systems"]
    assert systems["a"]["count"] == 2
    assert systems["a"]["source"] == ["run.sut.hardware: '2x NVIDIA L4 GPUs'"]
    assert systems["b"] == {
        "count": 8,
        "per_run": [8, 8, 8],
        "source": ["--gpus B=8"],
        "status": "normalized: output tokens/s ÷ GPU count = output tokens per GPU-second",
    }
    assert check(result, "hardware")["status"] == "differs"
    assert (
        result["normalization"]["cost"] == "not normalized: no price (dollars per hour) is declared"
    )


def test_cpu_only_is_not_normalized_per_gpu() -> None:
    cpu = "AMD EPYC (2 cores), 24 GiB memory, no accelerator"
    runs = [run(make_report(f"a{i}", hardware=cpu), "a") for i in range(3)]
    runs += [run(make_report(f"b{i}", hardware=cpu), "b") for i in range(3)]
    result = compare_runs(runs, resamples=200)
    assert result["normalization"]["systems"]["a"]["status"] == (
        "no accelerator: not normalized per GPU"
    )
    assert "output_tokens_per_gpu_s" not in [m["key"] for m in result["metrics"]]
    assert "no accelerator: not normalized per GPU" in render_compare_markdown(result)


def test_partial_normalization_is_a_deviation() -> None:
    runs = two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], hardware="unknown box")
    result = compare_runs(runs, resamples=200)
    assert result["normalization"]["systems"]["b"]["status"] == (
        "GPU count not declared: not normalized per GPU (give --gpus SYSTEM=N)"
    )
    assert (
        "per-GPU normalization (draft 6.2) is incomplete: not normalized for b"
        in result["deviations"]
    )


def test_unknown_or_negative_gpus_system_is_a_config_error() -> None:
    runs = two_systems([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match=r"--gpus names unknown system\(s\) c; known: A \(a\)"):
        compare_runs(runs, gpus={"c": 1})
    with pytest.raises(ConfigError, match="must be >= 0"):
        compare_runs(runs, gpus={"a": -1})


# ---------------------------------------------------------------------------------------------
# Grouping
# ---------------------------------------------------------------------------------------------


def test_default_grouping_by_sut_identity() -> None:
    assert DEFAULT_GROUP_BY == ("run.sut.software", "run.model", "run.target")
    runs = [run(make_report(f"a{i}", software="engine 1.0")) for i in range(3)]
    runs += [run(make_report(f"b{i}", software="engine 2.0")) for i in range(3)]
    runs.insert(1, runs.pop())  # order of first appearance decides, not adjacency
    result = compare_runs(runs, resamples=200)
    names = [s["name"] for s in result["systems"]]
    assert names == [
        "engine 1.0 | tiny | http://10.0.0.5:8000",
        "engine 2.0 | tiny | http://10.0.0.5:8000",
    ]
    assert [s["n_runs"] for s in result["systems"]] == [3, 3]
    assert result["systems"][0]["key"] == {
        "run.sut.software": "engine 1.0",
        "run.model": "tiny",
        "run.target": "http://10.0.0.5:8000",
    }
    assert result["systems"][1]["run_deviations"] == ["deviation of engine 2.0"]
    # Long names: the table's columns use the ids.
    assert "| metric | A | B | B vs A |" in render_compare_markdown(result)


def test_group_by_other_keys_and_one_system() -> None:
    runs = [run(make_report(f"a{i}", software=f"engine {i}")) for i in range(3)]
    result = compare_runs(runs, group_by=["run.model", "run.sut.boundary"], resamples=200)
    assert [s["name"] for s in result["systems"]] == ["tiny | Model Engine"]
    assert metric(result, "ttft_p50_ms")["comparisons"] == {}
    assert result["deviations"][0].startswith("only one system: nothing to compare")


def test_every_run_its_own_system_is_flagged() -> None:
    runs = [run(make_report(f"a{i}", software=f"engine {i}")) for i in range(2)]
    result = compare_runs(runs, resamples=200)
    assert any(d.startswith("every run formed its own system") for d in result["deviations"])


def test_a_run_given_twice_is_a_config_error() -> None:
    report = make_report("same")
    with pytest.raises(ConfigError, match="run same is given twice"):
        compare_runs([run(report, "a"), run(copy.deepcopy(report), "b")])
    with pytest.raises(ConfigError, match="no runs to compare"):
        compare_runs([])


# ---------------------------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------------------------


def test_parse_run_arguments(tmp_path: Path) -> None:
    odd = tmp_path / "x=y"
    odd.mkdir()
    assert parse_run_arguments(["a=out/r1", "out/r2", str(odd)]) == [
        ("a", Path("out/r1")),
        (None, Path("out/r2")),
        (None, odd),
    ]
    with pytest.raises(ConfigError, match="expected SYSTEM=PATH or PATH"):
        parse_run_arguments(["=out/r1"])


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_load_run_from_directory_or_file(tmp_path: Path) -> None:
    file = write(tmp_path / "r1" / "report.json", make_report("r1"))
    assert load_run(tmp_path / "r1").path == file
    assert load_run(file, system="x").system == "x"
    assert load_run(file).run_id == "r1"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no report.json in "),
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not an otelbench run report (no schema_version)"),
        ({"schema_version": 99, "run": {}}, "has report schema_version 99, this otelbench reads 1"),
        ({"schema_version": 1, "run": {"id": "x"}}, "no run id or client metrics"),
    ],
)
def test_bad_inputs_are_one_line_config_errors(tmp_path: Path, content: Any, message: str) -> None:
    directory = tmp_path / "run"
    directory.mkdir()
    if content is not None:
        write(directory / "report.json", content)
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load_run(directory)
    assert "\n" not in str(info.value)


def test_missing_file_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such report: "):
        load_run(tmp_path / "nope.json")


def test_result_is_strict_json_and_markdown_has_every_section() -> None:
    result = compare_runs(
        two_systems([100.0, 110.0, 120.0], [150.0, 160.0, 170.0], seed=7, server_ttft=40.0),
        resamples=200,
    )
    text = json.dumps(result, allow_nan=False)
    assert json.loads(text) == result
    assert list(result) == [
        "compare_version",
        "baseline",
        "group_by",
        "method",
        "systems",
        "metrics",
        "normalization",
        "checklist",
        "deviations",
        "compliance",
    ]
    md = render_compare_markdown(result)
    for heading in (
        "# Comparison of 2 system(s) (draft section 6)",
        "## Systems",
        "## Results",
        "## Normalization (draft 6.2)",
        "## Equivalence checklist (draft 6.1, 6.4)",
        "## Statistical method (draft 6.3)",
        "## Deviations",
    ):
        assert heading in md
    assert "| metric | a | b | b vs a |" in md
    line = next(x for x in md.splitlines() if x.startswith("| TTFT P50 (ms)"))
    assert line.startswith("| TTFT P50 (ms) | 110.0 [")
    assert "+45.5 %, p=" in line
    assert "**worse**" in line
    assert "| Seed | 6.1 | differs | run: a 42, b 7; workload: a 42, b 7 |" in md


def test_the_comparison_has_a_draft_6_verdict() -> None:
    """Draft 6.1 MUST: identical workload and seeds, same boundary, comparable hardware, same
    load model; a seed that differs makes the comparison not compliant, and says why."""
    same = compare_runs(two_systems([100.0, 110.0, 120.0], [150.0, 160.0, 170.0]), resamples=200)
    differs = compare_runs(
        two_systems([100.0, 110.0, 120.0], [150.0, 160.0, 170.0], seed=7), resamples=200
    )
    (test,) = differs["compliance"]["tests"]
    assert (test["test"], test["title"]) == ("6", "Multi-System Comparison")
    assert differs["compliance"]["verdict"] == "not compliant"
    assert test["unmet_must"] == ["comparison-equivalence"]
    (statement,) = [s for s in test["statements"] if s["id"] == "comparison-equivalence"]
    assert statement["evidence"] == "equivalence: not equivalent: Seed differs"
    assert "comparison-equivalence" not in same["compliance"]["unmet_must"]
    md = render_compare_markdown(differs)
    assert "**Verdict: not compliant** (draft 2; the lowest of the verdicts of the tests " in md
    assert "| 6 Multi-System Comparison | **not compliant** |" in md


def test_compare_command_prints_and_writes(tmp_path: Path) -> None:
    import io

    args = []
    for name, values in (("a", [100.0, 110.0, 120.0]), ("b", [150.0, 160.0, 170.0])):
        for i, v in enumerate(values):
            write(tmp_path / f"{name}{i}" / "report.json", make_report(f"{name}{i}", ttft=v))
            args.append(f"{name}={tmp_path / f'{name}{i}'}")
    stdout, stderr = io.StringIO(), io.StringIO()
    out = tmp_path / "cmp"
    code = compare_command(args, gpus=["a=1", "b=1"], out=out, stdout=stdout, stderr=stderr)
    assert code == 0
    assert stdout.getvalue() == (out / "compare.md").read_text()
    saved = json.loads((out / "compare.json").read_text())
    assert saved["baseline"] == "a"
    assert saved["normalization"]["systems"]["b"]["source"] == ["--gpus b=1"]
    assert (
        stderr.getvalue()
        == f"otelbench: comparison written to {out}/compare.json and {out}/compare.md\n"
    )
    with pytest.raises(ConfigError, match="expected SYSTEM=N"):
        compare_command(args, gpus=["a=x"], stdout=io.StringIO())
    with pytest.raises(ConfigError, match="--group: give comma-separated report keys"):
        compare_command(args, group_by=" , ", stdout=io.StringIO())
