"""5.8 Memory Pressure: level planning, the 5.8.4 measurements from hand-built records, reports.

Records: four requests submitted at 0, 1, 2, 3 s (TTFT 100 ms, 5 tokens 10 ms apart), the third
failed with HTTP 503. Their engine-hook spans start 10 ms after submission and say:

=======  ===========  =======  =====================  ===============
request  preemptions  events   KV tokens discarded    resumption stalls
=======  ===========  =======  =====================  ===============
0        0            0        0                      —
1        2            2        300 (e.g. 140 + 160)   4 ms, 6 ms
2        1            1        100                    (none: it failed)
3        vLLM's own ``llm_request`` span: not observed (NaN)
=======  ===========  =======  =====================  ===============

→ observed 3, preempted 2 (rate 2/3), recovered 1 (request 1; recovery 1/2), 3 events, 400
tokens discarded, loss 400/3 per preemption, stalls P50 5 ms. The level window is 0 → 3.14 s
(last response at 3 s + 100 ms + 4 × 10 ms + 0.1 ms), 10 bins of 0.31401 s: request 1's span
starts at 1.01 s → bin 3 (2 preemptions), request 2's at 2.01 s → bin 6 (1).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RunConfig
from otelbench.procedures import (
    PROCEDURES,
    CapacityParams,
    Level,
    MemoryPressureParams,
    MemoryPressureProcedure,
    ProcedureSpec,
    get_profile,
    placeholder_load,
)
from otelbench.procedures.levels import level_row, run_data_from_outcome
from otelbench.procedures.memory_pressure import (
    NO_HOOKS_REASON,
    PRESSURE_ROLE,
    CapacitySource,
    PressureLevel,
    capacity_from_report,
    failure_kinds,
    plan_oversubscription,
    preemption_measurements,
    pressure_row,
)
from otelbench.query import RunData, ServerRequests
from otelbench.render.procedure import render_procedure
from otelbench.report import report_from_data
from tests.unit.procedures.test_levels import T0, S, outcome, result

NAN = float("nan")


# ------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------


def test_default_levels_at_a_capacity_of_64_are_the_drafts() -> None:
    plan = plan_oversubscription(64, (1.0, 1.1, 1.25, 1.5))
    assert plan == [
        PressureLevel(64, (1.0,), 1.0),
        PressureLevel(70, (1.1,), 70 / 64),
        PressureLevel(80, (1.25,), 1.25),
        PressureLevel(96, (1.5,), 1.5),
    ]


def test_rounding_is_half_up_and_levels_on_one_concurrency_merge() -> None:
    # 4 × 1.1 = 4.4 → 4, not above the capacity: raised to 5; 4 × 1.25 = 5 → merged with it
    assert plan_oversubscription(4, (1.0, 1.1, 1.25, 1.5)) == [
        PressureLevel(4, (1.0,), 1.0),
        PressureLevel(5, (1.1, 1.25), 1.25, raised=True),
        PressureLevel(6, (1.5,), 1.5),
    ]
    # 10 × 1.25 = 12.5 → 13 (Python's round() would give 12)
    assert [p.concurrency for p in plan_oversubscription(10, (1.0, 1.1, 1.25, 1.5))] == [
        10, 11, 13, 15,
    ]  # fmt: skip
    # a capacity of 1: every level above 100 % is concurrency 2
    assert plan_oversubscription(1, (1.0, 1.1, 1.25, 1.5)) == [
        PressureLevel(1, (1.0,), 1.0),
        PressureLevel(2, (1.1, 1.25, 1.5), 2.0, raised=True),
    ]
    # below 100 %: rounded, at least 1
    assert [p.concurrency for p in plan_oversubscription(3, (0.1, 0.5, 1.0))] == [1, 2, 3]


@pytest.mark.parametrize(
    ("capacity", "levels", "message"),
    [
        (0, (1.0,), "capacity must be a concurrency >= 1"),
        (4, (), "must be positive"),
        (4, (1.0, -1.5), "must be positive"),
        (4, (1.0, 1.5, 1.25), "strictly ascending"),
        (4, (1.0, 1.0), "strictly ascending"),
    ],
)
def test_bad_plans_are_config_errors(
    capacity: int, levels: tuple[float, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        plan_oversubscription(capacity, levels)


def test_failure_kinds_split_http_errors_timeouts_and_the_rest() -> None:
    assert failure_kinds({}) == {"http_5xx": 0, "http_4xx": 0, "timeout": 0, "other": 0}
    assert failure_kinds(
        {"500": 2, "503": 1, "429": 4, "timeout": 3, "stream_error": 1, "unreachable": 2}
    ) == {"http_5xx": 3, "http_4xx": 4, "timeout": 3, "other": 3}


# ------------------------------------------------------------------------------------------
# Measurements from records
# ------------------------------------------------------------------------------------------


def _server(spans: list[dict[str, Any]]) -> ServerRequests:
    m = len(spans)
    stalls = [s.get("stalls", []) for s in spans]
    stall_bounds = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([len(x) for x in stalls], out=stall_bounds[1:])
    nan = np.full(m, NAN)
    return ServerRequests(
        trace_id=tuple(f"{s['client']:032x}" for s in spans),
        span_id=tuple(f"s{i}" for i in range(m)),
        parent_span_id=tuple(f"{s['client']:016x}" for s in spans),
        client_index=np.array([s["client"] for s in spans], dtype=np.int64),
        start_unix_ns=np.array([s["start_ns"] for s in spans], dtype=np.int64),
        duration_ns=np.full(m, 10**8, dtype=np.int64),
        request_id=tuple(f"q{i}" for i in range(m)),
        ttft_s=nan,
        e2e_s=nan,
        queue_s=nan,
        prefill_s=nan,
        decode_s=nan,
        inference_s=nan,
        prompt_tokens=np.full(m, 100.0),
        completion_tokens=np.full(m, 5.0),
        span_name=tuple(s.get("name", semconv.SPAN_HOOK_REQUEST) for s in spans),
        finish_reason=tuple("length" for _ in spans),
        cache_read_tokens=nan,
        preemptions=np.array([s["preemptions"] for s in spans], dtype=np.float64),
        preemption_events=np.array([s["preemptions"] for s in spans], dtype=np.float64),
        kv_tokens_discarded=np.array([s["kv"] for s in spans], dtype=np.float64),
        output_phase_token=nan,
        token_bounds=np.zeros(m + 1, dtype=np.int64),
        token_offset_us=np.empty(0, dtype=np.int64),
        stall_bounds=stall_bounds,
        stall_us=np.array([v for x in stalls for v in x], dtype=np.int64),
    )


def level_data(*, hooks: bool = True) -> RunData:
    results = [result(i, float(i), 100.0, 10.0) for i in range(4)]
    results[2] = replace(result(2, 2.0, 100.0, 10.0, ok=False), error_type="503", status_code=503)
    data = run_data_from_outcome(outcome(results, rate=None))
    if not hooks:
        return data
    spans = [
        {"client": 0, "start_ns": T0 + 10**7, "preemptions": 0, "kv": 0},
        {"client": 1, "start_ns": T0 + S + 10**7, "preemptions": 2, "kv": 300,
         "stalls": [4000, 6000]},
        {"client": 2, "start_ns": T0 + 2 * S + 10**7, "preemptions": 1, "kv": 100},
        {"client": 3, "start_ns": T0 + 3 * S + 10**7, "preemptions": NAN, "kv": NAN,
         "name": semconv.SPAN_VLLM_REQUEST},
    ]  # fmt: skip
    return replace(data, server=_server(spans))


def test_preemption_measurements_by_hand() -> None:
    p = preemption_measurements(level_data())
    assert p is not None
    timeline = p.pop("timeline")
    assert p == {
        "requests_observed": 3,
        "requests_preempted": 2,
        "rate": pytest.approx(2 / 3),
        "recovered": 1,
        "recovery_rate": 0.5,
        "events": 3,
        "kv_tokens_discarded": 400,
        "loss_per_preemption": pytest.approx(400 / 3),
        "max_preemptions_per_request": 2,
        "stall_p50_ms": pytest.approx(5.0),
        "stall_p99_ms": pytest.approx(5.98),
    }
    assert timeline["bins"] == 10
    assert timeline["bin_s"] == pytest.approx(3.1401 / 10)
    assert timeline["preemptions"] == [0, 0, 0, 2, 0, 0, 1, 0, 0, 0]
    assert timeline["placement"].startswith("each request's preemptions at its arrival")


def test_without_engine_hooks_preemption_is_none_not_zero() -> None:
    data = level_data(hooks=False)
    assert preemption_measurements(data) is None
    # only vLLM's own llm_request spans: still not observed
    llm_only = replace(
        data,
        server=_server(
            [{"client": 0, "start_ns": T0, "preemptions": NAN, "kv": NAN,
              "name": semconv.SPAN_VLLM_REQUEST}]
        ),
    )  # fmt: skip
    assert preemption_measurements(llm_only) is None


def test_pressure_row_counts_completion_and_failures_from_client_records() -> None:
    data = level_data()
    row = level_row(data, report_from_data(data))
    measured = pressure_row(data, row)
    assert measured["completion_rate"] == 0.75
    assert measured["failure_rate"] == 0.25
    assert measured["failures"] == {"http_5xx": 1, "http_4xx": 0, "timeout": 0, "other": 0}
    assert measured["oom_like_errors"] == 1
    assert measured["preemption"]["requests_preempted"] == 2
    assert pressure_row(None, row)["preemption"] is None


# ------------------------------------------------------------------------------------------
# Capacity sources
# ------------------------------------------------------------------------------------------


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_capacity_from_a_5_5_report(tmp_path: Path) -> None:
    doc = {
        "procedure": "capacity",
        "max_concurrency": 16,
        "configuration": {"workload": {"name": "synthetic-uniform", "seed": 1}},
        "levels": [
            {"concurrency": 8, "e2e_p50_ms": 900.0},
            {"concurrency": 16, "e2e_p50_ms": 1500.0},
            {"concurrency": 32, "e2e_p50_ms": 4000.0},
        ],
    }
    path = write(tmp_path / "procedure.json", doc)
    assert capacity_from_report(path) == CapacitySource(
        concurrency=16,
        source=f"5.5 report ({path})",
        report=str(path),
        workload="synthetic-uniform",
        e2e_p50_ms=1500.0,
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the capacity report"),
        ("{not json", "is not JSON"),
        (json.dumps({"procedure": "throughput", "max_concurrency": 4}), "not a 5.5 capacity"),
        (json.dumps([1, 2]), "not a 5.5 capacity"),
        (json.dumps({"procedure": "capacity", "max_concurrency": None}), "no maximum"),
        (json.dumps({"procedure": "capacity", "max_concurrency": True}), "no maximum"),
    ],
)
def test_bad_capacity_reports_are_one_line_config_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "procedure.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        MemoryPressureProcedure(MemoryPressureParams(capacity_report=path))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": 4, "capacity_report": Path("x.json")}, "not both"),
        ({"capacity": 0}, "at least 1"),
        ({"levels": (1.0, 0.9)}, "ascending"),
        ({"level_duration_s": 0.0}, "--level-duration"),
        ({"max_context_len": 256, "output_tokens": 256}, "must exceed --output-tokens"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MemoryPressureParams(**kwargs)


# ------------------------------------------------------------------------------------------
# The report from levels (no session)
# ------------------------------------------------------------------------------------------


def bound(params: MemoryPressureParams, tmp_path: Path, profile: str) -> MemoryPressureProcedure:
    proc = MemoryPressureProcedure(params)
    base = RunConfig(target="http://127.0.0.1:1", model="m", load=placeholder_load())
    proc.bind(ProcedureSpec(base=base, profile=get_profile(profile), out_dir=tmp_path))
    return proc


def pressure_level(index: int, planned: PressureLevel, data: RunData) -> Level:
    row = {**level_row(data, report_from_data(data)), "concurrency": planned.concurrency}
    return Level(
        index=index,
        label=f"level {index}",
        run_id=f"run-{index}",
        load=LoadSpec(mode="closed_loop", requests=4, concurrency=planned.concurrency),
        out_dir=Path(f"levels/{index:02d}"),
        warmed=False,
        meta={
            "role": PRESSURE_ROLE,
            "oversubscription": list(planned.requested),
            "effective_oversubscription": planned.effective,
            "capacity": 4,
        },
        row=row,
        data=data,
        stored=True,
    )


def test_build_and_render_table_11(tmp_path: Path) -> None:
    proc = bound(MemoryPressureParams(capacity=4), tmp_path, "quick")
    proc.plan = plan_oversubscription(4, proc.params.levels)
    base, over, high = proc.plan
    clean = run_data_from_outcome(
        outcome([result(i, float(i), 50.0, 10.0) for i in range(4)], rate=None)
    )
    clean = replace(
        clean,
        server=_server(
            [{"client": i, "start_ns": T0 + i * S, "preemptions": 0, "kv": 0} for i in range(4)]
        ),
    )
    levels = [
        pressure_level(1, base, clean),
        pressure_level(2, over, level_data()),
        pressure_level(3, high, level_data(hooks=False)),
    ]
    body = proc.build(levels)
    entries = body["levels"]
    assert [e["concurrency"] for e in entries] == [4, 5, 6]
    assert [e["completion_rate"] for e in entries] == [1.0, 0.75, 0.75]
    assert entries[0]["preemption"]["rate"] == 0.0  # observed, none: a real 0
    assert entries[1]["preemption"]["rate"] == pytest.approx(2 / 3)
    assert entries[2]["preemption"] is None  # no hooks: not observed
    assert entries[1]["degradation"]["completion_change"] == pytest.approx(-0.25)
    assert entries[1]["degradation"]["ttft_p99_ratio"] == pytest.approx(100.0 / 50.0, rel=1e-3)
    assert body["summary"] == {
        "base_index": 0,
        "first_below_completion_index": 1,
        "first_preempted_index": 1,
        "max_preemption_rate": pytest.approx(2 / 3),
        "preemptions_observed": True,
    }
    assert body["capacity"]["concurrency"] == 4
    assert body["capacity"]["source"] == "given (--capacity)"
    assert body["capacity"]["search"] is None
    devs = body["deviations"]
    assert devs[0] == "levels planned for 3 s, shorter than the 120 s of 5.8.3 step 3.2"
    assert (
        "oversubscription 110% and 125% of capacity 4 ran at concurrency 5 (125% effective): "
        "with this capacity the levels do not map to distinct concurrencies above it (a closed "
        "loop has integer concurrency)"
    ) in devs
    assert f"level(s) 3: {NO_HOOKS_REASON}" in devs
    assert any(d.startswith("TTFT P99 from as few as 4 requests per level") for d in devs)

    result_doc = {
        "title": proc.title,
        "draft_section": proc.section,
        "procedure": proc.name,
        "profile": "quick",
        "duration_s": 1.0,
        "store": "spans.duckdb",
        "configuration": {},
        "parameters": {},
        "deviations": devs,
        **body,
    }
    lines = proc.render(result_doc)
    md = render_procedure(result_doc, lines)
    assert md.startswith("# Memory Pressure Behavior (draft 5.8)\n")
    assert "| Oversub Level | Concurrency | Complete | Preempt | Fail Rate | TTFT P99 |" in lines
    assert "| 100% (base) | 4 | 100.0% | 0.0% | 0.0% | 50 ms |" in lines
    assert "| 110% / 125% (effective 125%) | 5 | 75.0% | 66.7% | 25.0% | 100 ms |" in lines
    assert "| 150% | 6 | 75.0% | n/a | 25.0% | 100 ms |" in lines
    assert (
        "| 110% / 125% (effective 125%) | 2 / 3 | 66.7% | 50.0% | 3 | 133.3 | 5.0 ms | 6.0 ms |"
        in lines
    )
    assert "| 150% | n/a | n/a | n/a | n/a | n/a | n/a | n/a |" in lines
    assert "- First level below 99% completion: 110% / 125% (effective 125%)" in lines
    assert "| 110% / 125% (effective 125%) | 0.31 s | 0 0 0 2 0 0 1 0 0 0 |" in lines


def test_the_draft_profile_runs_120_s_levels_and_sizes_them_by_latency(tmp_path: Path) -> None:
    proc = bound(MemoryPressureParams(capacity=8), tmp_path, "draft")
    assert proc.duration_s == 120.0
    assert proc.planned_levels() == 4
    # 120 s × 8 slots / 2 s per request
    assert proc.requests_for(8, 2000.0) == 480
    # no latency known yet: 5.5's completions per slot (draft 100)
    assert proc.requests_for(8, None) == 800
    quick = bound(MemoryPressureParams(capacity=8, min_level_requests=20), tmp_path, "quick")
    assert quick.duration_s == 3.0
    assert quick.requests_for(8, 2000.0) == 20  # 3 s × 8 / 2 s = 12 < the floor


def test_parameters_show_the_search_only_when_it_runs(tmp_path: Path) -> None:
    given = bound(MemoryPressureParams(capacity=8), tmp_path, "quick")
    assert given.parameters()["search"] is None
    assert given.parameters()["levels_percent"] == [100.0, 110.0, 125.0, 150.0]
    searched = bound(
        MemoryPressureParams(search=CapacityParams(initial_concurrency=2)), tmp_path, "quick"
    )
    assert searched.planned_levels() is None
    assert searched.parameters()["search"]["initial_concurrency"] == 2


def test_registered() -> None:
    assert PROCEDURES["memory-pressure"] is MemoryPressureProcedure
    assert MemoryPressureProcedure.section == "5.8"
