"""A level's records → run report → row, from in-memory results with known timing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from otelbench import semconv
from otelbench.client import CompletionResult
from otelbench.loadgen.runner import RequestRecord, RunOutcome
from otelbench.procedures.levels import (
    LEVEL_ROW_KEYS,
    MIN_COMPLETION_SAMPLES,
    in_flight,
    level_row,
    run_data_from_outcome,
    saturation_at,
)
from otelbench.query import extract_run_data, open_store
from otelbench.render.procedure import render_procedure
from otelbench.report import report_from_data
from tests.unit.query.spanstore import write_hook_scenario

S = 1_000_000_000  # ns per second
T0 = 1_700_000_000 * S


def result(
    i: int, submit_s: float, ttft_ms: float, itl_ms: float, n: int = 5, *, ok: bool = True
) -> CompletionResult:
    offsets = [int(ttft_ms * 1000 + k * itl_ms * 1000) for k in range(n)] if ok else []
    return CompletionResult(
        ok=ok,
        error_type=None if ok else "500",
        error_message=None if ok else "scripted HTTP 500",
        status_code=200 if ok else 500,
        submit_unix_ns=T0 + int(submit_s * S),
        submit_mono_ns=int(submit_s * S),
        first_event_offset_us=offsets[0] if offsets else None,
        ttft_us=offsets[0] if offsets else None,
        chunk_offsets_us=offsets,
        chunk_tokens=[1] * len(offsets),
        end_offset_us=offsets[-1] + 100 if offsets else 1000,
        input_tokens=100 + i if ok else None,
        output_tokens=n if ok else None,
        cached_tokens=None,
        finish_reason="length" if ok else None,
        response_id=f"cmpl-{i}",
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        chunks_total=n,
        chunk_token_source="usage" if ok else None,
    )


def outcome(results: list[CompletionResult], rate: float | None = 2.0) -> RunOutcome:
    load = (
        {"mode": "poisson", "requests": len(results), "rate": rate, "concurrency": None}
        if rate is not None
        else {"mode": "closed_loop", "requests": len(results), "rate": None, "concurrency": 2}
    )
    manifest = {
        "id": "run-1",
        "load": load,
        "started_unix": T0 / S,
        "finished_unix": T0 / S + 30,
        "duration_s": 30.0,
        "deviations": [],
    }
    out = RunOutcome("run-1", manifest)
    for i, r in enumerate(results):
        out.records.append(RequestRecord(i, "default", semconv.PHASE_MEASURE, 0, 0, r))
        out.results.append(r)
    # a warm-up request: not part of the level
    warm = result(99, -5.0, 1.0, 1.0)
    out.records.append(RequestRecord(99, "default", semconv.PHASE_WARMUP, None, None, warm))
    return out


def row_of(results: list[CompletionResult], rate: float | None = 2.0) -> dict[str, object]:
    data = run_data_from_outcome(outcome(results, rate))
    return level_row(data, report_from_data(data))


def test_in_flight_counts_submissions_and_completions() -> None:
    t, d = in_flight([0, S, 2 * S], [3 * S, 2 * S, 4 * S])
    assert t.tolist() == [0.0, 1.0, 2.0, 2.0, 3.0, 4.0]
    assert d.tolist() == [1.0, 2.0, 1.0, 2.0, 1.0, 0.0]
    empty_t, empty_d = in_flight([], [])
    assert empty_t.size == empty_d.size == 0


def test_live_records_become_run_data_without_warmup_requests() -> None:
    results = [result(i, 0.5 * i, 20.0 + i, 10.0) for i in range(10)]
    data = run_data_from_outcome(outcome(list(reversed(results))))
    assert len(data.client) == 10
    assert data.client.submit_unix_ns.tolist() == sorted(data.client.submit_unix_ns.tolist())
    assert data.client.ttft_us.tolist() == [(20.0 + i) * 1000 for i in range(10)]
    assert len(data.server) == 0
    assert data.run.run_id == "run-1"


def test_level_row_has_the_scripted_latencies() -> None:
    # 20 requests at 2 req/s, TTFT 20..39 ms, ITL 10 ms, 5 tokens each (4 intervals)
    results = [result(i, 0.5 * i, 20.0 + i, 10.0) for i in range(20)]
    row = row_of(results)
    assert tuple(row) == LEVEL_ROW_KEYS
    assert row["offered_rps"] == 2.0
    assert row["requests"] == row["succeeded"] == 20
    assert row["success_rate"] == 1.0
    assert row["ttft_p50_ms"] == pytest.approx(float(np.percentile(np.arange(20, 40), 50)))
    assert row["ttft_p99_ms"] == pytest.approx(float(np.percentile(np.arange(20, 40), 99)))
    assert row["tpot_p50_ms"] == pytest.approx(10.0)
    e2e = np.arange(20, 40) + 40 + 0.1
    assert row["e2e_p99_ms"] == pytest.approx(float(np.percentile(e2e, 99)))
    assert row["arrival_rps"] == pytest.approx(2.0)
    assert row["completion_rps"] == pytest.approx(19 / (9.5 + 0.019))
    assert row["completion_ratio"] == pytest.approx(1.0, abs=0.01)
    assert row["queue_growth"] == "stable"
    assert row["max_in_flight"] == 1
    assert row["steady_state"]["steady"] is True  # type: ignore[index]
    # tokens in flight: each request holds 100+i input + 5 output tokens for ~e2e
    assert 0 < row["tokens_in_flight"] < 105 + 19  # type: ignore[operator]


def test_a_closed_loop_level_does_not_judge_queue_growth_from_its_ramp() -> None:
    """The same submissions read as growing in an open loop are not assessed in a closed loop:
    there the client holds at most its concurrency in flight, so a rising depth is only the
    loop filling up (which made 5.2's closed-loop search call a level saturated with a flat
    TTFT)."""
    results = [result(i, 0.1 * i, 50.0 + 100.0 * i, 10.0) for i in range(40)]
    assert row_of(results, rate=10.0)["queue_growth"] == "growing"
    row = row_of(results, rate=None)
    assert row["mode"] == "closed_loop"
    assert row["queue_growth"] is None
    assert "queue_growth" not in saturation_at(row, lower_load_p50_ms=50.0)["fired"]


def test_a_saturated_level_shows_queue_growth_and_low_completion() -> None:
    # arrivals every 0.1 s, each request 10x slower than the last: completions fall behind
    results = [result(i, 0.1 * i, 50.0 + 100.0 * i, 10.0) for i in range(40)]
    row = row_of(results, rate=10.0)
    assert row["queue_growth"] == "growing"
    sat = saturation_at(row, lower_load_p50_ms=50.0)
    assert sat["saturated"]
    assert sat["fired"][0] == "queue_growth"
    assert "completion_rate" in sat["fired"]
    assert "latency_blowup" in sat["fired"]
    assert sat["completion_ratio"] == pytest.approx(row["completion_ratio"])


def test_failures_count_against_success_and_completion() -> None:
    results = [result(i, 0.5 * i, 20.0, 10.0, ok=i % 4 != 0) for i in range(20)]
    row = row_of(results)
    assert row["failed"] == 5
    assert row["success_rate"] == 0.75
    assert row["failed_by_type"] == {"500": 5}
    assert row["completion_ratio"] == pytest.approx(0.75, abs=0.05)


def test_closed_loop_row_has_no_offered_rate() -> None:
    results = [result(i, 0.5 * (i // 2), 20.0, 10.0) for i in range(10)]
    row = row_of(results, rate=None)
    assert row["mode"] == "closed_loop"
    assert row["offered_rps"] is None
    assert row["concurrency"] == 2
    assert saturation_at(row, None)["fired"] == []


def test_completion_criterion_needs_enough_submissions() -> None:
    # 5 requests, the last one slow: the two rates' ratio would read far below 90 %
    results = [result(i, 0.5 * i, 20.0 + (3000.0 if i == 4 else 0.0), 10.0) for i in range(5)]
    row = row_of(results)
    assert row["completion_ratio"] is None
    sat = saturation_at(row, lower_load_p50_ms=None)
    assert "completion_rate" not in sat["fired"]
    assert sat["completion_ratio"] is None
    enough = row_of([result(i, 0.5 * i, 20.0, 10.0) for i in range(MIN_COMPLETION_SAMPLES)])
    assert enough["completion_ratio"] == pytest.approx(1.0, abs=0.01)


def test_requests_cut_on_the_client_without_server_spans() -> None:
    """A live level row (no server span yet): the client's cancellations and timeouts are
    counted, the engine's side is not known (None); a 500 is a failure, not a cut."""
    results = [result(i, 0.5 * i, 20.0, 10.0) for i in range(6)]
    for i, kind in ((1, "timeout"), (2, "cancelled"), (3, "timeout"), (4, "500")):
        results[i] = dataclasses.replace(results[i], ok=False, error_type=kind)
    assert row_of(results)["requests_cut"] == {"client": 3, "server": None, "both": None}


def test_requests_cut_from_the_stored_spans(tmp_path: Path) -> None:
    """The hook scenario's stored run (tests/unit/query/spanstore.py): H3's client timed out
    and its server span (finish reason abort, no end reason) counts as aborted: one cut on each
    side, none cancelled on both; the procedure's Markdown lists the level."""
    with open_store(write_hook_scenario(tmp_path / "h.duckdb")) as store:
        data = extract_run_data(store)
    row = level_row(data, report_from_data(data))
    assert row["requests_cut"] == {"client": 1, "server": 1, "both": 0}
    levels = [
        {"index": 1, "label": "a", "requests_cut": row["requests_cut"]},
        {"index": 2, "label": "b", "requests_cut": {"client": 0, "server": 0, "both": 0}},
    ]
    md = render_procedure(_minimal_result(levels), [])
    assert (
        "## Requests cut\n\n"
        "| # | Label | Client cut (cancelled, timed out) | Engine did not finish | Both |\n"
        "|---|---|---|---|---|\n"
        "| 1 | a | 1 | 1 | 0 |\n"
    ) in md
    assert "## Requests cut" not in render_procedure(_minimal_result(levels[1:]), [])


def _minimal_result(levels: list[dict[str, object]]) -> dict[str, object]:
    return {
        "title": "t", "draft_section": "5.2", "procedure": "throughput", "profile": "quick",
        "store": "spans.duckdb", "duration_s": 1.0, "runs": [], "parameters": {},
        "configuration": {"sut": {}, "workload": {}, "warmup": None},
        "deviations": [], "levels": levels,
    }  # fmt: skip
