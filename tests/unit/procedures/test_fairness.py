"""5.6 Scheduling Fairness: the plan, the per-class report from known latencies, the command."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from otelbench import semconv
from otelbench.cli import main
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RequestRecord, RunConfig, RunOutcome
from otelbench.procedures import (
    PROCEDURES,
    FairnessParams,
    FairnessProcedure,
    Level,
    ProcedureSpec,
    get_profile,
    placeholder_load,
)
from otelbench.procedures.fairness import class_latency
from otelbench.procedures.levels import run_data_from_outcome
from otelbench.report.compliance import PROCEDURE_REQUIREMENTS, ProcedureFacts
from tests.unit.procedures.test_levels import T0, S, result


def bound(params: FairnessParams, tmp_path: Path, profile: str = "quick") -> FairnessProcedure:
    proc = FairnessProcedure(params)
    base = RunConfig(target="http://127.0.0.1:1", model="m", load=placeholder_load())
    proc.bind(ProcedureSpec(base=base, profile=get_profile(profile), out_dir=tmp_path))
    return proc


def level(index: int, role: str, label: str | None, ttfts: list[tuple[str, float]]) -> Level:
    manifest = {
        "id": f"run-{index}",
        "load": {"mode": "poisson", "requests": len(ttfts), "rate": 2.0, "concurrency": None},
        "started_unix": T0 / S,
        "finished_unix": T0 / S + 30,
        "duration_s": 30.0,
        "deviations": [],
    }
    out = RunOutcome(f"run-{index}", manifest)
    for i, (cls, ttft) in enumerate(ttfts):
        r = result(i, i * 0.5, ttft, 2.0)
        out.records.append(RequestRecord(i, cls, semconv.PHASE_MEASURE, 0, 0, r))
        out.results.append(r)
    return Level(
        index=index,
        label=f"level {index}",
        run_id=f"run-{index}",
        load=LoadSpec(mode="poisson", requests=len(ttfts), rate=2.0),
        out_dir=Path(f"levels/{index:02d}"),
        warmed=False,
        meta={"role": role, "request_class": label},
        data=run_data_from_outcome(out),
        stored=True,
    )


def test_registered_as_5_6() -> None:
    assert PROCEDURES["fairness"] is FairnessProcedure
    assert FairnessProcedure.section == "5.6"


def test_isolated_levels_run_at_each_class_share(tmp_path: Path) -> None:
    proc = bound(FairnessParams(rate=10.0, requests=50), tmp_path)
    assert proc.planned_levels() == 3
    short, long = proc.isolated_load("short"), proc.isolated_load("long")
    assert (short.rate, short.requests) == (pytest.approx(8.0), 40)
    assert (long.rate, long.requests) == (pytest.approx(2.0), 10)
    assert (proc.mixed_load().rate, proc.mixed_load().requests) == (10.0, 50)
    fixed = bound(FairnessParams(rate=10.0, requests=50, isolated_rate=1.0), tmp_path)
    assert fixed.isolated_load("long").rate == 1.0
    assert fixed.parameters()["isolated"]["short"] == {"rate": 1.0, "requests": 40}
    assert bound(FairnessParams(rate=1.0), tmp_path, "draft").requests == 2500  # 500 long
    assert bound(FairnessParams(rate=1.0), tmp_path).requests == 30  # 6 long (quick)


@pytest.mark.parametrize(
    "kwargs",
    [{"rate": 0.0}, {"rate": 1.0, "short_ratio": 1.0}, {"rate": 1.0, "isolated_rate": -1.0}],
)
def test_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        FairnessParams(**kwargs)


def test_build_reports_inflation_jain_and_starvation(tmp_path: Path) -> None:
    proc = bound(FairnessParams(rate=2.0, requests=10), tmp_path)
    levels = [
        level(1, "isolated", "short", [("short", 10.0)] * 8),
        level(2, "isolated", "long", [("long", 100.0)] * 4),
        # mixed: short twice as slow, long unchanged; one short request starved (> 5 × median)
        level(3, "mixed", None, [("short", 20.0)] * 7 + [("short", 200.0)] + [("long", 100.0)] * 2),
    ]
    assert set(class_latency(levels[2].data)) == {"short", "long"}
    body = proc.build(levels)
    by = {c["request_class"]: c for c in body["classes"]}
    assert by["short"]["ttft_p50_isolated_ms"] == pytest.approx(10.0)
    assert by["short"]["ttft_p50_mixed_ms"] == pytest.approx(20.0)
    assert by["short"]["ttft_inflation_p50"] == pytest.approx(2.0)
    assert by["long"]["ttft_inflation_p50"] == pytest.approx(1.0)
    assert by["short"]["starvation_rate"] == pytest.approx(1 / 8)
    assert by["long"]["starvation_rate"] == 0.0
    assert (by["short"]["isolated_count"], by["short"]["mixed_count"]) == (8, 8)
    assert by["short"]["e2e_p50_mixed_ms"] > by["short"]["ttft_p50_mixed_ms"]
    assert body["normalized_requests"] == 10
    assert 0.0 < body["jain_index"] < 1.0
    assert (
        "2 long requests in the mixed run, fewer than the 500 per class of 5.6.2"
        in (body["deviations"])
    )
    assert any("'at same total load'" in d for d in body["deviations"])
    # 5.6.2 REQUIRES Synthetic-Skewed: the default class lengths are its log-normals, so the
    # procedure records no workload deviation of its own
    assert not any("Synthetic-Skewed" in d for d in body["deviations"])
    assert by["short"]["ttft_p95_mixed_ms"] >= by["short"]["ttft_p50_mixed_ms"]
    assert by["short"]["tpot_p50_mixed_ms"] == pytest.approx(2.0 + 0.1 / 4)
    assert [lv["role"] for lv in body["levels"]] == ["isolated", "isolated", "mixed"]
    lines = proc.render(body)
    assert "| short | TTFT P50 | 10.00 ms | 20.00 ms | 2.00× |" in lines
    assert any("Starvation rate, short" in line and "12.5%" in line for line in lines)
    assert "| long | 2 | 100.0 ms | 100.0 ms | 100.0 ms | 2.0 ms | 2.0 ms |" in lines


def test_missing_class_and_other_mix_are_deviations(tmp_path: Path) -> None:
    proc = bound(FairnessParams(rate=2.0, short_ratio=0.5, requests=4), tmp_path)
    levels = [
        level(1, "isolated", "short", [("short", 10.0)] * 4),
        level(2, "mixed", None, [("short", 10.0)] * 4),
    ]
    body = proc.build(levels)
    assert "no isolated baseline for the long class: not measured" in body["deviations"]
    assert "no long request completed in the mixed run" in body["deviations"]
    assert any("50% short" in d for d in body["deviations"])
    long = next(c for c in body["classes"] if c["request_class"] == "long")
    assert long["ttft_inflation_p50"] is None
    assert long["mixed_count"] == 0
    assert any("| long | TTFT P50 | n/a | n/a | n/a |" in line for line in proc.render(body))


def test_command_reaches_its_parameters(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["test", "fairness", "--rate", "1", "--short-ratio", "1.5", "--target",
            "http://127.0.0.1:9", "--model", "m", "--out", f"{tmp_path}/o"]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--short-ratio must be strictly between 0 and 1" in line


@pytest.mark.parametrize(
    ("rate", "saturation", "met"), [(4.0, 5.0, True), (2.0, 5.0, False), (4.0, None, False)]
)
def test_the_load_level_check_judges_the_declared_saturation(
    rate: float, saturation: float | None, met: bool
) -> None:
    """5.6.2 RECOMMENDS 70–90 % of saturation: the procedure records the saturation the tester
    measured (--saturation-rps), and the whole-test check compares the mixed rate with it."""
    params = FairnessParams(rate=rate, saturation_rps=saturation)
    facts = ProcedureFacts((), {"parameters": asdict(params)})
    (check,) = [r for r in PROCEDURE_REQUIREMENTS if r.id == "fairness-load-level"]
    assert check.check(facts)["met"] is met
