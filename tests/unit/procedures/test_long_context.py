"""5.9 Long Context Scaling: length plan and caps, per-length table and fits, the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench import draft, semconv
from otelbench.cli import main
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RequestRecord, RunConfig, RunOutcome
from otelbench.procedures import (
    PROCEDURES,
    Level,
    LongContextParams,
    LongContextProcedure,
    ProcedureSpec,
    get_profile,
    placeholder_load,
)
from otelbench.procedures.levels import run_data_from_outcome
from otelbench.procedures.long_context import plan_lengths
from tests.unit.procedures.test_levels import T0, S, result


def bound(params: LongContextParams, profile: str = "quick") -> LongContextProcedure:
    proc = LongContextProcedure(params)
    base = RunConfig(target="http://127.0.0.1:1", model="m", load=placeholder_load())
    proc.bind(ProcedureSpec(base=base, profile=get_profile(profile), out_dir=Path("o")))
    return proc


def level(index: int, length: int, ttfts: list[float]) -> Level:
    manifest = {
        "id": f"run-{index}",
        "load": {"mode": "closed_loop", "requests": len(ttfts), "rate": None, "concurrency": 1},
        "started_unix": T0 / S,
        "finished_unix": T0 / S + 30,
        "duration_s": 30.0,
        "deviations": [],
    }
    out = RunOutcome(f"run-{index}", manifest)
    for i, ttft in enumerate(ttfts):
        r = result(i, i * 2.0, ttft, 1.0)
        out.records.append(RequestRecord(i, "default", semconv.PHASE_MEASURE, 0, 0, r))
        out.results.append(r)
    return Level(
        index=index,
        label=f"{length} tokens",
        run_id=f"run-{index}",
        load=LoadSpec(mode="closed_loop", requests=len(ttfts), concurrency=1),
        out_dir=Path(f"levels/{index:02d}"),
        warmed=False,
        meta={"input_tokens": length, "requested_tokens": length},
        data=run_data_from_outcome(out),
        stored=True,
    )


def test_registered_as_5_9() -> None:
    assert PROCEDURES["long-context"] is LongContextProcedure
    assert LongContextProcedure.section == "5.9"


def test_plan_caps_and_dedupes_lengths() -> None:
    assert plan_lengths((2048, 1024), None) == ([(1024, 1024), (2048, 2048)], [])
    plan, dev = plan_lengths(draft.LONG_CONTEXT_LENGTHS, 1792)
    assert plan == [(1024, 1024), (2048, 1792)]
    assert len(dev) == 1
    assert "capped to 1792" in dev[0]
    assert "4096, 8192" in dev[0]
    proc = bound(LongContextParams(max_context_len=2048))
    assert proc.planned_levels() == 2
    assert proc.parameters()["lengths_run"] == [1024, 1792]
    assert proc.parameters()["input_cap"] == 1792


def test_requests_per_length_by_profile() -> None:
    assert bound(LongContextParams(), "draft").requests == 20
    assert bound(LongContextParams(), "quick").requests == 6
    assert bound(LongContextParams(requests=3)).requests == 3


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lengths": ()},
        {"lengths": (50,)},
        {"max_context_len": 300},
        {"concurrency": 0},
        {"output_tokens": 0},
    ],
)
def test_bad_parameters(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        LongContextParams(**kwargs)  # type: ignore[arg-type]


def test_build_fits_a_linear_prefill(tmp_path: Path) -> None:
    # TTFT = 10 ms + 50 µs per token: linear, µs/token 50
    lengths = (1024, 2048, 4096, 8192)
    proc = bound(LongContextParams(lengths=lengths, requests=4))
    levels = [level(i + 1, n, [10.0 + 0.05 * n] * 4) for i, n in enumerate(lengths)]
    body = proc.build(levels)
    assert [r["input_tokens"] for r in body["lengths"]] == list(lengths)
    first = body["lengths"][0]
    assert first["count"] == 4
    assert first["ttft_mean_ms"] == pytest.approx(10.0 + 0.05 * 1024)
    assert first["ttft_p50_ms"] == first["ttft_p95_ms"] == pytest.approx(first["ttft_mean_ms"])
    assert first["ms_per_1k_tokens"] == pytest.approx(first["ttft_mean_ms"] / 1.024)
    assert first["time_per_input_token_us"] == pytest.approx(first["ttft_mean_ms"] / 1.024)
    fits = body["fits"]
    assert fits["linear"]["us_per_token"] == pytest.approx(50.0)
    assert fits["linear"]["intercept_ms"] == pytest.approx(10.0)
    assert fits["linear"]["r_squared"] == pytest.approx(1.0)
    assert 0.8 < fits["power_law"]["exponent_k"] < 1.0
    assert fits["best_fit"] == "linear"
    assert any("4 requests per context length" in d for d in body["deviations"])
    assert any("instead of 5.9.2's" in d for d in body["deviations"])
    text = "\n".join(proc.render(body))
    assert "| 1024 | 4 | 61.2 ms |" in text
    assert "Best fit: Linear (R^2 = 1.0000), ~50.0 microseconds per input token" in text


def test_one_length_has_no_fit() -> None:
    proc = bound(LongContextParams(lengths=(1024,), requests=20))
    body = proc.build([level(1, 1024, [30.0] * 3)])
    assert body["fits"] == {"power_law": None, "linear": None, "best_fit": None}
    assert "fewer than 2 context lengths measured: no scaling fit" in body["deviations"]
    assert any("Not fitted" in line for line in proc.render(body))


def test_command_reaches_its_parameters(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["test", "long-context", "--max-context-len", "300", "--target",
            "http://127.0.0.1:9", "--model", "m", "--out", f"{tmp_path}/o"]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--max-context-len 300 leaves no room" in line
