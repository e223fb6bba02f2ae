"""Report shaping: derived points, verdicts, the procedures' result blocks and Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RunConfig
from otelbench.procedures import (
    PROCEDURES,
    CapacityParams,
    CapacityProcedure,
    Level,
    MaxSearch,
    ProcedureSpec,
    RateRange,
    TradeoffParams,
    TradeoffProcedure,
    curve_points,
    get_profile,
    placeholder_load,
)
from otelbench.procedures.base import (
    _level_deviations,
    _lost_client_spans,
    level_entry,
    search_entries,
)
from otelbench.procedures.capacity import capacity_verdict
from otelbench.procedures.itl import saturation_from_sweep
from otelbench.procedures.profiles import DRAFT, QUICK, shortfalls
from otelbench.procedures.throughput import throughput_verdict
from otelbench.procedures.tradeoff import SWEEP_ROLE, slo_ratio
from otelbench.procedures.ttft import TtftParams, TtftProcedure, ttft_distribution
from otelbench.render.procedure import render_procedure

# Draft Table 5: offered r/s, achieved tok/s, TTFT P50, TTFT P99
TABLE_5 = [
    (2, 284, 95, 142),
    (6, 852, 102, 178),
    (10, 1420, 128, 267),
    (14, 1988, 198, 512),
    (18, 2534, 378, 1234),
    (22, 2712, 823, 3456),
]


def rows(table: list[tuple[float, float, float, float]]) -> list[dict[str, Any]]:
    return [
        {"offered_rps": r, "output_tokens_per_s": t, "ttft_p50_ms": p50, "ttft_p99_ms": p99}
        for r, t, p50, p99 in table
    ]


def spec(tmp_path: Path) -> ProcedureSpec:
    base = RunConfig(target="http://127.0.0.1:1", model="m", load=placeholder_load())
    return ProcedureSpec(base=base, profile=get_profile("quick"), out_dir=tmp_path)


def level(index: int, row: dict[str, Any], **meta: Any) -> Level:
    return Level(
        index=index,
        label=f"level {index}",
        run_id=f"run-{index:02d}",
        load=LoadSpec(mode="poisson", requests=10, rate=row.get("offered_rps") or 1.0),
        out_dir=Path(f"levels/{index:02d}"),
        warmed=index == 1,
        meta=meta,
        row=row,
        stored=True,
    )


def test_registry_names_the_procedures() -> None:
    assert {name: cls.section for name, cls in PROCEDURES.items()} == {
        "ttft": "5.1",
        "throughput": "5.2",
        "throughput-latency": "5.3",
        "itl": "5.4",
        "capacity": "5.5",
        "fairness": "5.6",
        "prefix-cache": "5.7",
        "memory-pressure": "5.8",
        "long-context": "5.9",
        "guardrail-overhead": "5.10",
        "fluidity": "Etalon §4.2",
    }


def test_search_entries_recheck_each_search_level_and_note_a_changed_verdict() -> None:
    """Only the search's levels; each verdict recomputed; a level whose stored verdict differs
    from the live one gets one note naming both."""
    levels = [
        level(1, {"offered_rps": 1.0}, role="capacity-probe"),
        level(2, {"offered_rps": 2.0}, role="rate-search", live_verdict=True),
        level(3, {"offered_rps": 4.0}, role="rate-search", live_verdict=True),
    ]
    notes: list[str] = []
    entries = search_entries(levels, "rate-search", lambda lv: {"passed": lv.index == 2}, notes)
    assert [(e["index"], e["verdict"]["passed"]) for e in entries] == [(2, True), (3, False)]
    assert entries[0] == level_entry(levels[1], verdict={"passed": True})
    assert notes == [
        "level 3: the verdict from the stored spans (False) differs from the live one the "
        "search used (True)"
    ]


def test_curve_points_on_the_drafts_table_5() -> None:
    p = curve_points(rows(TABLE_5), slo_ttft_p99_ms=600.0)
    assert (p["knee_index"], p["saturation_index"], p["optimal_index"], p["peak_index"]) == (
        3, None, 3, 5,
    )  # fmt: skip
    assert p["min_ttft_p99_ms"] == 142.0
    assert "never decreases" in p["reasons"]["saturation"]
    assert curve_points(rows(TABLE_5))["optimal_index"] is None


def test_curve_points_saturation_and_skipped_levels() -> None:
    table = [*TABLE_5, (26, 2600, 1500, 6000)]
    r = rows(table)
    r.insert(1, {"offered_rps": 4, "output_tokens_per_s": None, "ttft_p99_ms": None})
    p = curve_points(r, slo_ttft_p99_ms=600.0, slo_tpot_p99_ms=None)
    assert p["levels_used"] == [0, 2, 3, 4, 5, 6, 7]
    assert p["saturation_index"] == 7  # throughput 2712 → 2600
    assert p["peak_index"] == 6
    assert p["knee_index"] == 4
    assert p["optimal_index"] == 4
    empty = curve_points([{"offered_rps": 1, "output_tokens_per_s": None, "ttft_p99_ms": None}])
    assert empty["knee_index"] is None
    assert empty["reasons"]["knee"].startswith("no level")


def test_optimal_point_with_both_slos() -> None:
    r = rows(TABLE_5)
    for row, tpot in zip(r, [30, 32, 38, 80, 120, 200], strict=True):
        row["tpot_p99_ms"] = tpot
    p = curve_points(r, slo_ttft_p99_ms=1500.0, slo_tpot_p99_ms=50.0)
    assert p["optimal_index"] == 2  # TPOT P99 80 ms at 14 r/s breaks the TPOT SLO
    assert slo_ratio(r[3], 1500.0, 50.0) == pytest.approx(1.6)
    assert slo_ratio(r[3], None, None) is None
    assert slo_ratio({"ttft_p99_ms": None}, 10.0, None) is None


def test_throughput_verdict_by_5_2_3_1() -> None:
    ok = {"succeeded": 10, "queue_growth": "stable", "arrival_rps": 2.0, "completion_rps": 1.95,
          "ttft_p99_ms": 100.0, "tpot_p99_ms": 20.0}  # fmt: skip
    assert throughput_verdict(ok, 50.0)["passed"] is True
    slow = {**ok, "completion_rps": 1.5}
    v = throughput_verdict(slow, 50.0)
    assert v["passed"] is False
    assert v["reasons"] == ["saturated (5.2.3.1): completion_rate"]
    blown = {**ok, "ttft_p99_ms": 600.0}
    assert throughput_verdict(blown, 50.0)["saturation"]["fired"] == ["latency_blowup"]
    assert throughput_verdict(blown, None)["passed"] is True  # no lower load: not assessed
    growing = {**ok, "queue_growth": "growing"}
    assert throughput_verdict(growing, None)["saturation"]["fired"] == ["queue_growth"]
    assert throughput_verdict({**ok, "succeeded": 0}, None)["reasons"] == ["no request succeeded"]
    no_p99 = {**ok, "tpot_p99_ms": None}
    assert throughput_verdict(no_p99, None, slo_tpot_p99_ms=10.0)["reasons"] == [
        "the SLO could not be assessed (no P99 measured)"
    ]


def test_capacity_verdict_by_5_5_2() -> None:
    good = {"success_rate": 1.0, "ttft_p99_ms": 100.0, "failed_by_type": {}}
    assert capacity_verdict(good, 200.0) == {"passed": True, "reasons": [], "server_errors": 0}
    assert capacity_verdict(good, 50.0)["reasons"] == ["TTFT P99 100.0 ms > 50 ms"]
    assert capacity_verdict(good, None)["passed"] is True
    timeouts = {**good, "success_rate": 0.995, "failed_by_type": {"timeout": 1}}
    assert capacity_verdict(timeouts, None)["passed"] is True
    oom = {**good, "success_rate": 0.995, "failed_by_type": {"503": 1}}
    assert capacity_verdict(oom, None)["server_errors"] == 1
    assert capacity_verdict({"success_rate": None}, None)["reasons"] == ["no request"]


def test_saturation_from_a_sweep_result() -> None:
    sweep = {
        "procedure": "throughput-latency",
        "peak_index": 2,
        "levels": [{"offered_rps": 1.0}, {"offered_rps": 2.0}, {"offered_rps": 3.0}],
    }
    rate, source = saturation_from_sweep(sweep)
    assert rate == 3.0
    assert "peak (level 2)" in source
    with pytest.raises(ConfigError, match="throughput-latency"):
        saturation_from_sweep({**sweep, "procedure": "ttft"})
    with pytest.raises(ConfigError, match="no throughput peak"):
        saturation_from_sweep({**sweep, "peak_index": None})


def test_ttft_distribution_cdf_and_histogram() -> None:
    d = ttft_distribution(np.arange(1.0, 101.0))
    cdf = dict((q, v) for q, v in d["cdf_ms"])
    assert cdf[0] == 1.0
    assert cdf[50] == pytest.approx(50.5)
    assert cdf[100] == 100.0
    assert len(d["histogram"]["edges_ms"]) == 21
    assert d["histogram"]["counts"] == [5] * 20
    assert ttft_distribution(np.array([np.nan]))["cdf_ms"] == []


def test_profiles_and_shortfalls() -> None:
    assert DRAFT.ttft_requests == 1000
    assert DRAFT.level_duration_s == 60.0
    assert DRAFT.warmup.min_requests == 100
    assert QUICK.level_duration_s < DRAFT.level_duration_s
    assert shortfalls(
        requests=1000, level_duration_s=60, levels=12, itl_requests=100, requests_per_slot=100,
        slot_duration_s=60,
    ) == []  # fmt: skip
    assert shortfalls(levels=8) == ["8 load levels, fewer than the 10 of 5.3.2"]
    assert len(shortfalls(level_duration_s=3, itl_requests=12, requests_per_slot=3)) == 3
    with pytest.raises(ConfigError, match="known: draft, quick"):
        get_profile("fast")


def test_tradeoff_build_shapes_the_levels_block(tmp_path: Path) -> None:
    procedure = TradeoffProcedure(TradeoffParams(capacity_rps=20.0, slo_ttft_p99_ms=600.0))
    procedure.bind(spec(tmp_path))
    levels = [
        level(i + 1, {**r, "achieved_rps": r["offered_rps"] * 0.99, "arrival_rps": r["offered_rps"],
                      "completion_rps": r["offered_rps"], "queue_growth": "stable"},
              role=SWEEP_ROLE, fraction=0.1 * (i + 1))
        for i, r in enumerate(rows(TABLE_5))
    ]  # fmt: skip
    body = procedure.build(levels)
    assert (body["knee_index"], body["saturation_index"], body["optimal_index"]) == (3, None, 3)
    assert body["peak_index"] == 5
    assert [e["offered_rps"] for e in body["levels"]] == [2, 6, 10, 14, 18, 22]
    first = body["levels"][0]
    assert first["index"] == 1
    assert first["report"] == "levels/01/report.json"
    assert first["fraction"] == pytest.approx(0.1)
    assert first["saturation_criteria"]["fired"] == []
    assert body["levels"][-1]["saturation_criteria"]["fired"] == ["latency_blowup"]
    assert body["derived"]["knee"] == {
        "index": 3,
        "offered_rps": 14,
        "reason": "TTFT P99 first exceeds 2 × the minimum (142.00 ms)",
    }
    assert body["capacity"]["source"] == "given (--capacity-rps)"
    assert any("60 s" in d for d in body["deviations"])
    assert any("6 load levels" in d for d in body["deviations"])
    result = {
        "title": procedure.title, "draft_section": "5.3", "procedure": procedure.name,
        "profile": "quick", "store": "spans.duckdb", "duration_s": 12.0, "runs": [],
        "parameters": procedure.effective_parameters(),
        "deviations": body["deviations"], "notes": [],
        "configuration": {"sut": {}, "workload": {"name": "w", "seed": 1}, "warmup": None},
        **body,
    }  # fmt: skip
    md = render_procedure(result, procedure.render(result))
    assert md.startswith("# Throughput-Latency Tradeoff (draft 5.3)\n")
    assert "| 14.000 |" in md
    assert "- Knee point: 14.000 req/s (levels[3], run #4)" in md
    assert "- Saturation point: none" in md


def capacity_levels(procedure: CapacityProcedure) -> list[Level]:
    """Four levels of a 5.5 capacity search from concurrency 8 (SLO TTFT P99 300 ms): 8, 16 meet
    it, 32 does not, 24 does; the search records each as ``procedure.search``."""
    search = MaxSearch(start=8, lo=1, hi=512, integer=True)
    procedure.search = search
    levels = []
    for i, (c, p99) in enumerate([(8, 142.0), (16, 178.0), (32, 520.0), (24, 250.0)], start=1):
        row = {
            "concurrency": c,
            "success_rate": 1.0,
            "ttft_p99_ms": p99,
            "failed": 0,
            "failed_by_type": {},
            "output_tokens_per_s": 10.0 * c,
            "tokens_in_flight": 100 * c,
        }
        levels.append(level(i, row, live_verdict=p99 <= 300.0))
        search.record(c, p99 <= 300.0)
    return levels


def test_capacity_build_reports_the_maximum(tmp_path: Path) -> None:
    procedure = CapacityProcedure(CapacityParams(initial_concurrency=8, slo_ttft_p99_ms=300.0))
    procedure.bind(spec(tmp_path))
    levels = capacity_levels(procedure)
    body = procedure.build(levels)
    assert body["max_concurrency"] == 24
    assert body["search"]["first_fail"] == 32
    assert body["throughput_at_max_tokens_per_s"] == 240.0
    assert body["tokens_in_flight_at_max"] == 2400
    assert [e["verdict"]["passed"] for e in body["levels"]] == [True, True, False, True]
    assert any("completions per concurrency slot" in d for d in body["deviations"])
    md = "\n".join(procedure.render(body))
    assert "| 24 | 100.0% | 250.0 ms |" in md
    assert "Maximum concurrent requests meeting criteria: 24" in md


def test_level_deviations_are_grouped_by_kind() -> None:
    levels = []
    for i, n in enumerate([6, 7, 8], start=1):
        lv = level(i, {"offered_rps": float(i)})
        lv.report = {"methodology": {"deviations": [
            f"TTFT has {n} samples, fewer than the 1000",
            "prompt token ids drawn from a vocabulary of 1024 ids",
            *(["no warm-up procedure was run before measurement (draft 4.5)"] if i > 1 else []),
            *(["load generator fell behind"] if i == 3 else []),
        ]}}  # fmt: skip
        levels.append(lv)
    assert _level_deviations(levels) == [
        "every level: TTFT has 6 samples, fewer than the 1000 (figures of level 1)",
        "every level: prompt token ids drawn from a vocabulary of 1024 ids",
        "level 3: load generator fell behind",
    ]
    entry = level_entry(levels[0], extra=1)
    assert entry["index"] == 1
    assert entry["extra"] == 1


def test_lost_client_spans_are_one_deviation_naming_the_levels() -> None:
    counts = [
        None,  # a clean export: the report has no client_telemetry
        {"spans_sent": 90, "spans_spooled": 40, "spans_replayed": 40, "spans_dropped": 0},
        {"spans_sent": 10, "spans_spooled": 70, "spans_dropped": 12, "spans_rejected": 3},
    ]
    levels = []
    for i, telemetry in enumerate(counts, start=1):
        lv = level(i, {"offered_rps": float(i)})
        lv.report = {"run": {"client_telemetry": telemetry}}
        levels.append(lv)
    assert _lost_client_spans(levels) == [
        "client spans lost on the way to the collector (spool full or refused), so missing from "
        "the stored runs: 15 (level 3: 15)"
    ]
    assert _lost_client_spans(levels[:2]) == []
    levels[0].report = None  # a level without a stored run
    assert _lost_client_spans(levels[:2]) == []


def test_itl_reference_from_a_sweep_file(tmp_path: Path) -> None:
    from otelbench.procedures import ItlParams

    sweep = tmp_path / "procedure.json"
    sweep.write_text(
        '{"procedure": "throughput-latency", "peak_index": 0, "levels": [{"offered_rps": 2.5}]}'
    )
    assert ItlParams(sweep=sweep).reference()[0] == 2.5
    assert ItlParams(saturation_rps=4.0).reference() == (4.0, "given (--saturation-rps)")
    with pytest.raises(ConfigError, match=r"cannot read the 5\.3 result"):
        ItlParams(sweep=tmp_path / "missing.json").reference()
    with pytest.raises(ConfigError, match="one of --saturation-rps or --sweep"):
        ItlParams(saturation_rps=1.0, sweep=sweep)


STEADY = {
    "steady": True,
    "ramp_end_s": 0.3,
    "end_s": 3.0,
    "throughput_halves": [100.0, 101.0],
    "throughput_change": 0.01,
    "latency_p50_halves_s": [0.9, 0.91],
    "latency_change": 0.01,
    "queue_growing": False,
}
"""A level row's ``steady_state`` where 5.2.3.2's check held."""


def test_throughput_build_reports_the_maximum_sustainable_level(tmp_path: Path) -> None:
    from otelbench.procedures import ThroughputParams, ThroughputProcedure
    from otelbench.procedures.throughput import SEARCH_ROLE

    procedure = ThroughputProcedure(ThroughputParams(rates=RateRange(capacity_rps=10.0)))
    procedure.bind(spec(tmp_path))
    search = MaxSearch(start=10.0, lo=1.0, hi=20.0, growth=1.5, abs_tolerance=1.5)
    procedure.search = search
    levels = []
    # rate, completion rate, TTFT P50, TTFT P99: saturation from 15 r/s on
    plan = [(1.0, 1.0, 50.0, 80.0), (10.0, 9.9, 60.0, 200.0), (15.0, 11.0, 400.0, 2000.0),
            (12.5, 12.4, 80.0, 300.0), (13.75, 12.0, 300.0, 900.0)]  # fmt: skip
    for i, (rate, done, p50, p99) in enumerate(plan, start=1):
        row = {"offered_rps": rate, "arrival_rps": rate, "completion_rps": done,
               "achieved_rps": done, "succeeded": 100, "queue_growth": "stable",
               "ttft_p50_ms": p50, "ttft_p95_ms": p99, "ttft_p99_ms": p99, "tpot_p50_ms": 10.0,
               "tpot_p95_ms": 12.0, "tpot_p99_ms": 14.0, "e2e_p50_ms": 900.0, "e2e_p95_ms": 1e3,
               "e2e_p99_ms": 1100.0, "output_tokens_per_s": 100.0 * done,
               "input_tokens_per_s": 300.0 * done, "steady_state": STEADY}  # fmt: skip
        passed = done / rate >= 0.9
        levels.append(
            level(
                i, row, role=SEARCH_ROLE, live_verdict=passed, lower_load_level=1 if i > 1 else None
            )
        )
        search.record(rate, passed)
    body = procedure.build(levels)
    assert [e["verdict"]["passed"] for e in body["levels"]] == [True, True, False, True, False]
    assert body["levels"][2]["verdict"]["saturation"]["fired"] == [
        "completion_rate", "latency_blowup",
    ]  # fmt: skip
    assert body["search"]["best_rps"] == 12.5
    assert body["search"]["first_fail_rps"] == 13.75
    s = body["summary"]
    assert s["sustainable_load_rps"] == 12.5
    assert s["level_index"] == 4
    assert s["max_output_tokens_per_s"] == pytest.approx(1240.0)
    assert s["max_input_tokens_per_s"] == pytest.approx(3720.0)
    assert s["tokens_per_gpu_s"] is None
    assert body["latency_at_max"]["ttft"] == {"p50": 80.0, "p95": 300.0, "p99": 300.0}
    assert procedure.notes[-1].startswith("batch utilization")
    md = "\n".join(procedure.render(body))
    assert "| Sustainable Load | 12.500 req/s |" in md
    assert "fail: saturated (5.2.3.1): completion_rate, latency_blowup" in md


def test_the_procedure_schema_doc_names_every_procedure_and_level_key() -> None:
    """docs/procedure-schema.md lists every registered procedure and every level-row key."""
    from pathlib import Path

    from otelbench.procedures import LEVEL_ROW_KEYS, PROCEDURES

    doc = (Path(__file__).resolve().parents[3] / "docs" / "procedure-schema.md").read_text()
    for name, cls in PROCEDURES.items():
        assert f"| `{name}` | {cls.section} |" in doc, name
    for key in LEVEL_ROW_KEYS:
        assert f"`{key}`" in doc, key


@pytest.mark.parametrize(("arrival", "flagged"), [("poisson", False), ("uniform", True)])
def test_ttft_arrivals_other_than_poisson_are_a_deviation(
    arrival: str, flagged: bool, tmp_path: Path
) -> None:
    """5.1.2.2: Poisson arrivals are REQUIRED for an open-loop TTFT test."""
    procedure = TtftProcedure(TtftParams(rate=2.0, arrival=arrival))
    procedure.bind(spec(tmp_path))
    body = procedure.build([level(1, {"offered_rps": 2.0})])
    deviation = (
        "open-loop arrivals are uniform, not Poisson: 5.1.2.2 REQUIRES Poisson (--arrival poisson)"
    )
    assert (deviation in body["deviations"]) is flagged
    assert not any("Poisson" in d for d in body["deviations"]) or flagged
