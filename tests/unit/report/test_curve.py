"""The throughput-latency curve is made before rendering (otelbench.report.curve): the levels
kept, the 5.3.4 points derived or named, and the notes when there is no curve."""

from __future__ import annotations

from otelbench.model.conform import conforms
from otelbench.model.plots import SINGLE_LEVEL_NOTE, CurveLevel, ThroughputLatencyCurve
from otelbench.report.curve import NO_CURVE_NOTE, curve_of, procedure_curve

# the draft's Table 5 (5.3.4): P99 first above 2 x its minimum (142 ms) at 14 req/s, throughput
# never falls, so no saturation point, and the peak at the last level
TABLE_5: list[CurveLevel] = [
    {"offered_rps": o, "output_tokens_per_s": t, "p99_ms": p}
    for o, t, p in zip(
        [2, 6, 10, 14, 18, 22],
        [284, 852, 1420, 1988, 2534, 2712],
        [142, 178, 267, 512, 1234, 3456],
        strict=True,
    )
]


def test_the_points_are_derived_where_the_block_names_none() -> None:
    curve = curve_of({"levels": TABLE_5, "latency_metric": "ttft", "slo_p99_ms": 300.0})
    assert conforms(curve, ThroughputLatencyCurve) == []
    assert curve["note"] is None
    assert (curve["knee"], curve["saturation"], curve["peak"]) == (3, None, 5)
    assert curve["optimal"] == 2  # the highest throughput whose P99 meets the 300 ms SLO
    assert (curve["metric"], curve["load_key"], curve["load_unit"]) == (
        "TTFT",
        "offered_rps",
        "req/s",
    )
    assert curve["load"] == [2, 6, 10, 14, 18, 22]
    assert curve["slo_p99_ms"] == 300.0


def test_named_points_index_the_kept_levels_and_unusable_levels_are_counted() -> None:
    levels: list[CurveLevel] = [
        {"offered_rps": None, "concurrency": c, "output_tokens_per_s": t, "e2e_p99_ms": p}
        for c, t, p in ((1, 100.0, 50.0), (2, 190.0, 60.0), (4, 300.0, 150.0), (8, 280.0, 900.0))
    ]
    levels.insert(2, {"concurrency": 3, "output_tokens_per_s": None, "e2e_p99_ms": 70.0})
    curve = curve_of({"levels": levels, "latency_metric": "e2e", "saturation": 4, "knee": 2})
    assert curve["dropped"] == 1
    assert curve["load"] == [1, 2, 4, 8]
    assert curve["saturation"] == 3  # level 4 of the block is the 4th kept one
    assert curve["knee"] is None  # level 2 of the block was left out
    assert (curve["metric"], curve["load_unit"]) == ("E2E", "concurrent")


def test_no_curve_says_why() -> None:
    assert curve_of(None)["note"] == SINGLE_LEVEL_NOTE
    assert curve_of({"levels": TABLE_5[:1]})["note"] == SINGLE_LEVEL_NOTE
    unusable = curve_of({"levels": [TABLE_5[0], TABLE_5[0]]})
    assert (unusable["note"] or "").startswith("the procedure's levels are unusable: ")
    assert unusable["load"] == []
    assert unusable["knee"] is None


def test_a_procedures_levels_form_a_curve_only_of_one_configuration() -> None:
    levels = [{**lv, "configuration": "a"} for lv in TABLE_5]
    result = {"levels": levels}
    assert procedure_curve(result)["knee"] == 3  # type: ignore[arg-type]
    mixed = {"levels": [*levels[:3], *({**lv, "configuration": "b"} for lv in levels[3:])]}
    assert procedure_curve(mixed)["note"] == NO_CURVE_NOTE  # type: ignore[arg-type]
    own: dict[str, object] = {"levels": levels, "knee_index": 1, "saturation_index": None,
                              "peak_index": 4, "optimal_index": 0}  # fmt: skip
    curve = procedure_curve(own)  # type: ignore[arg-type]
    assert (curve["knee"], curve["saturation"], curve["peak"], curve["optimal"]) == (1, None, 4, 0)
