"""Etalon's fluidity capacity evaluation: the SLO verdict from hand-built records, the search
driven by it, the report, the command.

Records come from ``tests.unit.procedures.test_levels.result``: a request's content chunks
arrive TTFT + k × ITL after submission (k = 0 … n-1), one token each. With D_p = TTFT the first
token banks no slack, so a request with ITL <= D_d meets every deadline (index 1) and one with
ITL > D_d misses every decode deadline: ITL 40 ms at D_d 25 ms misses ⌊(40 − 25) / 25⌋ + 1 = 1
per token → 1 met of 8 → 0.125.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench import semconv
from otelbench.cli import main
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RunConfig
from otelbench.metrics import PrefillFit
from otelbench.procedures import (
    PROCEDURES,
    FluidityParams,
    FluidityProcedure,
    Level,
    MaxSearch,
    OpenLoopLevels,
    ProcedureSpec,
    RateRange,
    get_profile,
    placeholder_load,
    search_max,
)
from otelbench.procedures.fluidity import (
    SEARCH_ROLE,
    PrefillDeadline,
    fluidity_verdict,
    profile_lengths,
    split_outliers,
)
from otelbench.procedures.levels import level_row, run_data_from_outcome
from otelbench.query import RunData, ServerRequests
from otelbench.render.procedure import render_procedure
from otelbench.report import report_from_data
from tests.unit.procedures.test_levels import outcome, result


def requests(
    specs: list[tuple[float, float]], n: int = 8, failed: int = 0, rate: float = 2.0
) -> RunData:
    """One request per (TTFT ms, ITL ms), then ``failed`` HTTP 500 requests."""
    results = [result(i, 0.1 * i, ttft, itl, n) for i, (ttft, itl) in enumerate(specs)]
    results += [result(len(specs) + j, 0.0, 0.0, 0.0, ok=False) for j in range(failed)]
    return run_data_from_outcome(outcome(results, rate=rate))


def verdict(data: RunData, prefill_s: float = 0.020, **kw: Any) -> dict[str, Any]:
    dp = PrefillDeadline(fixed_s=prefill_s)
    return fluidity_verdict(data, prefill=dp, **({"decode_deadline_s": 0.025} | kw))


def test_fluid_and_stalling_requests_by_hand() -> None:
    fluid = verdict(requests([(20.0, 10.0)] * 3))
    assert fluid["passed"] is True
    assert fluid["reasons"] == []
    assert (fluid["evaluated"], fluid["fluid"], fluid["failed"]) == (3, 3, 0)
    assert fluid["fraction_fluid"] == 1.0
    assert fluid["fluidity_index"]["min"] == 1.0
    assert fluid["source"] == "client"
    assert fluid["server"] is None  # no engine-hook spans
    slow = verdict(requests([(20.0, 40.0)] * 3))
    assert slow["passed"] is False
    assert slow["fraction_fluid"] == 0.0
    assert slow["fluidity_index"]["p50"] == pytest.approx(0.125)
    assert slow["reasons"] == ["0.0% of requests fluid (index >= 0.9 at D_d 25 ms), below 99.0%"]


def test_the_fluid_rate_is_the_largest_catch_up_any_request_needs() -> None:
    # D_p 50 ms, TTFT 20 ms: 30 ms banked; token k at 20 + 10k ms meets its deadline while
    # 10k <= 30 + k·D_d, i.e. D_d >= 10 - 30/k; k = 7 needs the most: 10 - 30/7 = 5.714 ms.
    # 8 deadlines: one miss is 7/8 < 0.9, so every deadline must be met.
    v = verdict(requests([(20.0, 10.0)] * 4), prefill_s=0.050)
    rate = v["fluid_rate"]
    assert 10.0 - 30.0 / 7 <= rate["decode_deadline_ms"] <= 10.0 - 30.0 / 7 + 0.1
    assert rate["tokens_per_s"] == pytest.approx(1000.0 / rate["decode_deadline_ms"])
    assert rate["fraction_meeting"] == 1.0


def test_request_fraction_at_its_boundary_and_failures_count_as_not_fluid() -> None:
    ok99 = verdict(requests([(20.0, 10.0)] * 99 + [(20.0, 40.0)]))
    assert (ok99["fluid"], ok99["evaluated"], ok99["passed"]) == (99, 100, True)
    assert ok99["fraction_fluid"] == 0.99
    ok98 = verdict(requests([(20.0, 10.0)] * 98 + [(20.0, 40.0)] * 2))
    assert (ok98["fraction_fluid"], ok98["passed"]) == (0.98, False)
    failed = verdict(requests([(20.0, 10.0)] * 98 + [(20.0, 40.0)], failed=1))
    assert (failed["evaluated"], failed["failed"], failed["fraction_fluid"]) == (99, 1, 0.98)
    assert failed["passed"] is False
    nothing = verdict(requests([], failed=3))
    assert nothing["passed"] is False
    assert nothing["reasons"] == ["no request delivered a token"]
    assert nothing["fraction_fluid"] == 0.0
    assert nothing["fluid_rate"] is None


def test_a_successful_request_without_tokens_is_left_out() -> None:
    empty = replace(result(2, 0.5, 20.0, 10.0), chunk_offsets_us=[], chunk_tokens=[])
    data = run_data_from_outcome(
        outcome([result(0, 0.0, 20.0, 10.0), result(1, 0.1, 20.0, 10.0), empty])
    )
    v = verdict(data)
    assert (v["evaluated"], v["left_out"], v["fraction_fluid"], v["passed"]) == (2, 1, 1.0, True)


def test_server_figures_come_from_the_engine_hooks_token_times() -> None:
    data = requests([(20.0, 40.0)] * 2)  # the client sees stalls …
    m = 2
    offsets = [20_000 + 10_000 * k for k in range(8)]  # … the engine made a token every 10 ms
    nan = np.full(m, np.nan)
    server = ServerRequests(
        trace_id=data.client.trace_id,
        span_id=("s0", "s1"),
        parent_span_id=data.client.span_id,
        client_index=np.arange(m, dtype=np.int64),
        start_unix_ns=data.client.submit_unix_ns,
        duration_ns=np.full(m, 10**8, dtype=np.int64),
        request_id=("q0", "q1"),
        ttft_s=nan, e2e_s=nan, queue_s=nan, prefill_s=nan, decode_s=nan, inference_s=nan,
        prompt_tokens=nan, completion_tokens=np.full(m, 8.0),
        span_name=(semconv.SPAN_HOOK_REQUEST,) * m,
        finish_reason=("length",) * m,
        cache_read_tokens=nan, preemptions=np.zeros(m), preemption_events=np.zeros(m),
        kv_tokens_discarded=np.zeros(m), output_phase_token=nan,
        token_bounds=np.array([0, 8, 16], dtype=np.int64),
        token_offset_us=np.array(offsets * m, dtype=np.int64),
        stall_bounds=np.zeros(m + 1, dtype=np.int64),
        stall_us=np.empty(0, dtype=np.int64),
    )  # fmt: skip
    v = verdict(replace(data, server=server))
    assert v["passed"] is False  # the verdict is the client's
    assert v["fraction_fluid"] == 0.0
    assert v["server"]["evaluated"] == 2
    assert v["server"]["fraction_fluid"] == 1.0
    assert v["server"]["fluidity_index"]["min"] == 1.0


def test_the_search_converges_to_the_rate_where_itl_reaches_d_d() -> None:
    # a simulated system whose ITL is 10 ms + 1 ms per req/s: fluid up to 15 req/s (ITL 25 ms)
    def passes(rate: float) -> bool:
        itl = round(10.0 + rate, 3)
        return bool(verdict(requests([(20.0, itl)] * 5))["passed"])

    search = search_max(
        passes, MaxSearch(start=4.0, lo=1.0, hi=40.0, growth=1.5, abs_tolerance=0.25)
    )
    assert search.best is not None
    assert search.first_fail is not None
    assert search.best <= 15.0 < search.first_fail
    assert search.first_fail - search.best <= 0.25
    assert [s.value for s in search.steps[:4]] == [4.0, 6.0, 9.0, 13.5]


# ------------------------------------------------------------------------------------------
# Procedure: parameters, report (no session)
# ------------------------------------------------------------------------------------------


def bound(params: FluidityParams, tmp_path: Path) -> FluidityProcedure:
    proc = FluidityProcedure(params)
    base = RunConfig(target="http://127.0.0.1:1", model="m", load=placeholder_load())
    proc.bind(ProcedureSpec(base=base, profile=get_profile("quick"), out_dir=tmp_path))
    return proc


def search_level(index: int, rate: float, data: RunData, live: bool) -> Level:
    row = level_row(data, report_from_data(data))
    return Level(
        index=index,
        label=f"search {index}",
        run_id=f"run-{index}",
        load=LoadSpec(mode="poisson", requests=len(data.client), rate=rate),
        out_dir=Path(f"levels/{index:02d}"),
        warmed=False,
        meta={"role": SEARCH_ROLE, "live_verdict": live},
        row={**row, "offered_rps": rate},
        data=data,
        stored=True,
    )


def test_build_and_render(tmp_path: Path) -> None:
    params = FluidityParams(rates=RateRange(capacity_rps=4.0), prefill_deadline_s=0.02)
    proc = bound(params, tmp_path)
    proc.search = search_max(
        lambda r: r <= 4.0, MaxSearch(start=4.0, lo=0.4, hi=8.0, growth=1.5, abs_tolerance=0.6)
    )
    proc.bounds = {"rate_step": 0.6}
    good = requests([(20.0, 10.0)] * 4, rate=4.0)
    bad = requests([(20.0, 40.0)] * 4, rate=6.0)
    body = proc.build([search_level(1, 4.0, good, True), search_level(2, 6.0, bad, True)])
    assert body["summary"]["fluidity_capacity_rps"] == 4.0
    assert body["summary"]["level_index"] == 1
    assert body["summary"]["fraction_fluid"] == 1.0
    assert body["summary"]["fluid_tokens_per_s"] == pytest.approx(
        body["levels"][0]["verdict"]["fluid_rate"]["tokens_per_s"]
    )
    assert body["slo"] == {
        "decode_deadline_ms": 25.0,
        "prefill_deadline_ms": 20.0,
        "prefill_deadline_kind": "fixed",
        "prefill_fit": None,
        "min_fluidity": 0.9,
        "request_fraction": 0.99,
        "timeline": "client (Option B, draft 4.6.3)",
    }
    assert body["profile_levels"] == []
    assert body["capacity"]["source"] == "given (--capacity-rps)"
    assert [(s["rps"], s["passed"]) for s in body["search"]["steps"]] == [
        (4.0, True), (6.0, False), (5.0, False), (4.5, False),
    ]  # fmt: skip
    devs = body["deviations"]
    assert devs[0] == (
        "3 s per load level, shorter than the draft's minimum of 60 s (5.2.2.1, applied to this "
        "rate search)"
    )
    assert devs[1].startswith("D_p is fixed at 20 ms for every request, not Etalon's D_p(L)")
    assert devs[2].startswith("level(s) 1 (4), 2 (4) had fewer than the 100 requests")
    assert any(
        "else a fixed 1000 ms); this procedure's figures use D_p 20 ms" in n for n in proc.notes
    )
    doc = {
        "title": proc.title, "draft_section": proc.section, "procedure": proc.name,
        "profile": "quick", "duration_s": 1.0, "store": "spans.duckdb", "configuration": {},
        "parameters": proc.effective_parameters(), "deviations": devs, **body,
    }  # fmt: skip
    lines = proc.render(doc)
    md = render_procedure(doc, lines)
    assert md.startswith("# Fluidity Capacity Evaluation (Etalon §4.2)\n")
    assert "| Fluidity capacity | 4.000 req/s |" in lines
    assert "| Requests fluid there | 100.0% |" in lines
    row = next(line for line in lines if line.startswith("| 2 | 6.000 |"))
    assert "| 0 / 4 | 0.0% | 0.125 |" in row
    assert row.endswith("| n/a | n/a | fail: 0.0% of requests fluid (index >= 0.9 at D_d 25 ms), "
                        "below 99.0% |")  # fmt: skip


def test_a_verdict_that_changes_with_the_stored_spans_is_noted(tmp_path: Path) -> None:
    proc = bound(FluidityParams(prefill_deadline_s=0.02), tmp_path)
    proc.build([search_level(1, 2.0, requests([(20.0, 40.0)] * 2), live=True)])
    assert "level 1: the verdict from the stored spans (False) differs" in proc.notes[0]


# prefill(L) = 0.1 ms per prompt token: the requests of ``requests`` have 100 + i tokens
LINEAR_FIT = PrefillFit(0.0, 1e-4, 0.0, 1.0, 0.0, (100, 200, 300), 30, 10)


def test_profiled_prefill_deadlines_follow_each_requests_prompt_length() -> None:
    dp = PrefillDeadline(fit=LINEAR_FIT, slack_s=0.011)
    assert dp.seconds(np.array([100.0, 150.0])).tolist() == pytest.approx([0.021, 0.026])
    # NaN: the shortest profiled length's deadline; outside 100–300 tokens: the nearest
    assert dp.seconds(np.array([np.nan, 20.0, 900.0])).tolist() == pytest.approx(
        [0.021, 0.021, 0.041]
    )
    # a fit that predicts a negative prefill time counts it as 0
    falling = PrefillFit(0.01, -1e-4, 0.0, 1.0, 0.0, (100, 200, 300), 30, 10)
    assert PrefillDeadline(fit=falling, slack_s=0.005).seconds(
        np.array([100.0, 300.0])
    ).tolist() == pytest.approx([0.005, 0.005])
    assert PrefillDeadline(fit=falling).seconds(np.array([300.0])).tolist() == [1e-6]
    assert PrefillDeadline(fixed_s=0.3).seconds(np.array([1.0, 2.0])).tolist() == [0.3, 0.3]
    with pytest.raises(ConfigError, match="fixed or fitted"):
        PrefillDeadline()
    with pytest.raises(ConfigError, match="fixed or fitted"):
        PrefillDeadline(fixed_s=1.0, fit=LINEAR_FIT)
    data = requests([(20.0, 10.0)] * 3)  # 100, 101, 102 prompt tokens; first token at 20 ms
    # D_p ≈ 10 ms + 11 ms: the first token (20 ms) is in time, every request fluid
    ok = fluidity_verdict(data, prefill=dp)
    assert (ok["fraction_fluid"], ok["passed"]) == (1.0, True)
    # no slack: D_p ≈ 10 ms, the first token misses ⌊(20 − 10) / 25⌋ + 1 = 1 deadline of 8
    late = fluidity_verdict(data, prefill=PrefillDeadline(fit=LINEAR_FIT, slack_s=0.0))
    assert late["fluidity_index"]["p50"] == pytest.approx(7 / 8)
    assert late["passed"] is False


def test_profile_outliers_are_stalls_above_three_medians() -> None:
    # median (0.012 + 0.031) / 2 = 0.0215; 3 × that = 0.0645
    kept, dropped = split_outliers(np.array([0.010, 0.011, 0.012, 0.066, 0.031, 1.5]))
    assert kept.tolist() == [0.010, 0.011, 0.012, 0.031]
    assert dropped.tolist() == [0.066, 1.5]
    assert [a.size for a in split_outliers(np.empty(0))] == [0, 0]


def test_profile_lengths() -> None:
    assert profile_lengths([5, 9, 7, 300]) == (5, 8, 300)
    assert profile_lengths([64] * 10) == (16, 32, 64)
    assert profile_lengths([10, 10, 11]) == (2, 5, 11)
    with pytest.raises(ConfigError, match="too short to profile"):
        profile_lengths([3, 3])
    with pytest.raises(ConfigError, match="prompt lengths"):
        profile_lengths([])


def test_build_reports_the_profiled_fit(tmp_path: Path) -> None:
    proc = bound(FluidityParams(scheduling_slack_s=0.011, profile_requests=5), tmp_path)
    assert proc.prefill is None  # profiled during run()
    proc.prefill = PrefillDeadline(fit=LINEAR_FIT, slack_s=0.011)
    proc.search = search_max(lambda r: True, MaxSearch(start=2.0, lo=1.0, hi=2.0))
    body = proc.build([search_level(1, 2.0, requests([(20.0, 10.0)] * 2), True)])
    slo = body["slo"]
    assert (slo["prefill_deadline_ms"], slo["prefill_deadline_kind"]) == (None, "profiled")
    assert slo["prefill_fit"] == {
        "a_ms": 0.0,
        "b_ms_per_token": pytest.approx(0.1),
        "c_ms_per_token2": 0.0,
        "r_squared": 1.0,
        "residual_std_ms": 0.0,
        "lengths": [100, 200, 300],
        "requests": 30,
        "scheduling_slack_ms": pytest.approx(11.0),
        "deadline_ms_at": {
            "100": pytest.approx(21.0), "200": pytest.approx(31.0), "300": pytest.approx(41.0),
        },
    }  # fmt: skip
    devs = body["deviations"]
    assert not any(d.startswith("D_p is fixed") for d in devs)
    assert "the prefill profile ran 5 requests per length, fewer than Etalon's 10 (§4.1)" in devs
    assert proc.parameters()["criterion"].endswith(
        "D_p prefill(L) + 11 ms (Etalon §4.1, profiled in isolation) (client timeline)"
    )
    doc = {"summary": body["summary"], "slo": slo, "levels": body["levels"],
           "search": body["search"]}  # fmt: skip
    lines = proc.render(doc)
    assert "| 100 | 21.0 ms |" in lines
    assert any(line.startswith("Prefill deadline (Etalon §4.1)") for line in lines)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scheduling_slack_s": -0.1}, "--scheduling-slack-ms must be >= 0"),
        ({"profile_requests": 0}, "--profile-requests must be at least 1"),
        ({"profile_lengths": (64, 64, 128)}, "at least 3 distinct prompt lengths"),
        ({"decode_deadline_s": 0.0}, "--decode-deadline-ms must be > 0"),
        ({"prefill_deadline_s": -1.0}, "--prefill-deadline-ms must be > 0"),
        ({"min_fluidity": 1.5}, r"--min-fluidity must be within \(0, 1\]"),
        ({"request_fraction": 0.0}, r"--request-fraction must be within \(0, 1\]"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FluidityParams(**kwargs)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (lambda: FluidityParams(rates=RateRange(capacity_rps=0.0)), "--capacity-rps must be > 0"),
        (lambda: FluidityParams(rates=RateRange(rate_step=-1.0)), "--rate-step must be > 0"),
        (
            lambda: FluidityParams(rates=RateRange(min_rps=5.0, max_rps=1.0)),
            "--min-rps must not exceed",
        ),
        (lambda: FluidityParams(open_loop=OpenLoopLevels(arrival="closed_loop")), "open-loop"),
    ],
)
def test_bad_search_parameters_are_config_errors(
    params: Callable[[], FluidityParams], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        params()


def test_registered_with_its_etalon_section() -> None:
    assert PROCEDURES["fluidity"] is FluidityProcedure
    assert FluidityProcedure.section == "Etalon §4.2"


# ------------------------------------------------------------------------------------------
# The commands (both new ones): bad input is one line
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fluidity", "--min-fluidity", "2"], "--min-fluidity must be within (0, 1]"),
        (["fluidity", "--decode-deadline-ms", "0"], "--decode-deadline-ms must be > 0"),
        (["fluidity", "--profile", "nope"], "unknown profile 'nope'"),
        (["memory-pressure", "--capacity", "4", "--capacity-report", "x.json"], "not both"),
        (["memory-pressure", "--capacity-report", "/nonexistent/p.json"], "cannot read"),
        (["memory-pressure", "--capacity", "4", "--level", "110", "--level", "100"], "ascending"),
        (["memory-pressure", "--capacity", "0"], "--capacity must be at least 1"),
    ],
)
def test_the_commands_report_bad_input_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["test", *argv, "--target", "http://127.0.0.1:9", "--model", "m",
              "--out", f"{tmp_path}/o"])  # fmt: skip
    assert exit_info.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("otelbench: error: ")
    assert message in line
