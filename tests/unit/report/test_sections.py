"""The report's issue-4 sections, from RunData records built by hand with hand-checked values.

* Fluidity, server source: token offsets 400, 410, 410, 500, 620 ms since arrival, D_p 0.5 s →
  intervals 0.4, 0.01, 0, 0.09, 0.12 s. Slack after the first token 0.1 s. At D_d 25 ms the slack
  before the last token is 0.075 s and 0.12 > 0.025 + 0.075: ⌊0.02 / 0.025⌋ + 1 = 1 miss of 5
  deadlines → 0.8; at 50 and 100 ms every deadline is met → 1. No miss needs 0.12 ≤ 4·D_d, so the
  fluid rate's D_d is 30 ms.
* Fluidity, client source (Option B): chunks at 200 ms (1 token), 310 ms (3), 340 ms (1), D_p
  0.25 s → intervals 0.2, 0.11, 0, 0, 0.03. At 25 ms: 0.11 misses ⌊0.035 / 0.025⌋ + 1 = 2, then
  the zeros and 0.03 are met → 4/6; at 50 ms: 1 miss of 5 → 0.8; at 100 ms → 1. No miss needs
  0.11 ≤ 0.05 + D_d → D_d = 60 ms.
* Reasoning: chunks 100 (1 token), 200 (2), 300 (1), 500 (1), 600 ms (2), output phase from chunk
  3 → 4 think tokens, TTOT 500 ms, gap 500 − 300 = 200 ms, output ITL 100, 0 ms.
* Classes: short TTFTs 100, 200, 200, 1100 ms (median 200), long 1000, 1000 ms (median 1000) →
  x = 0.5, 1, 1, 5.5, 1, 1: J = 10² / (6 · 34.5) = 100/207; short starvation 1/4 (1100 > 5·200).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.metrics import Ragged
from otelbench.query import ClientRequests, RunData, RunInfo, ServerRequests
from otelbench.report import render_json, render_markdown, report_from_data
from otelbench.report.sections import (
    DEFAULT_PREFILL_DEADLINE_S,
    classes_section,
    itl_shape_section,
    load_generator_section,
)
from tests.unit.report.test_markdown import section

MS = 1000  # µs per ms
NAN = float("nan")
BOTTLENECK = (
    "load generator fell behind its schedule: P99 send lag 19.7 ms (> 10 ms); the generator, "
    "not the target, may have limited the offered load (draft 4.2.5)"
)


@dataclass
class Req:
    """One request: content chunks as (offset µs since T_submit, tokens), and its attributes."""

    chunks: list[tuple[int, int]]
    ok: bool = True
    request_class: str | None = None
    think_phase: str | None = None
    output_phase_chunk: int | None = None
    schedule_lag_us: int | None = None
    server_offsets_us: list[int] | None = field(default=None)


def run_data(
    reqs: list[Req], deviations: tuple[str, ...] = (), bottleneck: bool | None = None
) -> RunData:
    n = len(reqs)
    t0 = 1_700_000_000 * 10**9
    lengths = [len(r.chunks) for r in reqs]
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    offsets = np.array([o for r in reqs for o, _ in r.chunks], dtype=np.int64)
    tokens = np.array([t for r in reqs for _, t in r.chunks], dtype=np.int64)
    end_us = [float(r.chunks[-1][0] + 5 * MS) if r.chunks else 1000.0 for r in reqs]
    client = ClientRequests(
        trace_id=tuple(f"t{i}" for i in range(n)),
        span_id=tuple(f"c{i}" for i in range(n)),
        submit_unix_ns=np.array([t0 + i * 10**6 for i in range(n)], dtype=np.int64),
        duration_ns=np.array([int(e * 1000) for e in end_us], dtype=np.int64),
        ok=np.array([r.ok for r in reqs], dtype=np.bool_),
        error_type=tuple(None if r.ok else "504" for r in reqs),
        request_index=np.arange(n, dtype=np.float64),
        request_class=tuple(r.request_class for r in reqs),
        think_phase=tuple(r.think_phase for r in reqs),
        output_phase_chunk=np.array(
            [NAN if r.output_phase_chunk is None else r.output_phase_chunk for r in reqs]
        ),
        schedule_lag_us=np.array(
            [NAN if r.schedule_lag_us is None else r.schedule_lag_us for r in reqs]
        ),
        ttft_us=np.array([float(r.chunks[0][0]) if r.chunks else NAN for r in reqs]),
        first_event_offset_us=np.array([float(r.chunks[0][0]) if r.chunks else NAN for r in reqs]),
        end_offset_us=np.array(end_us),
        input_tokens=np.full(n, 100.0),
        output_tokens=np.array([float(sum(t for _, t in r.chunks)) for r in reqs]),
        finish_reasons=tuple(("length",) for _ in reqs),
        chunk_token_source=tuple(semconv.CHUNK_TOKENS_FROM_USAGE for _ in reqs),
        chunk_bounds=bounds,
        chunk_offset_us=offsets,
        chunk_tokens=tokens,
    )
    return RunData(
        run=RunInfo("r", manifest(deviations, bottleneck), t0, 2 * 10**9),
        client=client,
        server=_server(reqs, t0),
    )


def manifest(deviations: tuple[str, ...], bottleneck: bool | None) -> dict[str, Any]:
    lag = {} if bottleneck is None else {"schedule_lag": {"generator_bottleneck": bottleneck}}
    return {"id": "r", "deviations": list(deviations), **lag}


def _server(reqs: list[Req], t0: int) -> ServerRequests:
    rows = [(i, r.server_offsets_us) for i, r in enumerate(reqs) if r.server_offsets_us]
    m = len(rows)
    token_bounds = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([len(o) for _, o in rows], out=token_bounds[1:])
    nan = np.full(m, NAN)
    return ServerRequests(
        trace_id=tuple(f"t{i}" for i, _ in rows),
        span_id=tuple(f"s{i}" for i, _ in rows),
        parent_span_id=tuple(f"c{i}" for i, _ in rows),
        client_index=np.array([i for i, _ in rows], dtype=np.int64),
        start_unix_ns=np.full(m, t0, dtype=np.int64),
        duration_ns=np.full(m, 10**9, dtype=np.int64),
        request_id=tuple(f"q{i}" for i, _ in rows),
        ttft_s=nan,
        e2e_s=nan,
        queue_s=nan,
        prefill_s=nan,
        decode_s=nan,
        inference_s=nan,
        prompt_tokens=np.full(m, 100.0),
        completion_tokens=np.array([float(len(o)) for _, o in rows]),
        span_name=tuple(semconv.SPAN_HOOK_REQUEST for _ in rows),
        finish_reason=tuple("length" for _ in rows),
        cache_read_tokens=nan,
        preemptions=np.zeros(m),
        preemption_events=np.zeros(m),
        kv_tokens_discarded=np.zeros(m),
        output_phase_token=nan,
        token_bounds=token_bounds,
        token_offset_us=np.array([v for _, o in rows for v in o], dtype=np.int64),
        stall_bounds=np.zeros(m + 1, dtype=np.int64),
        stall_us=np.empty(0, dtype=np.int64),
    )


def deadline(fluidity: dict[str, Any], preset: str) -> dict[str, Any]:
    rows = {d["preset"]: d for d in fluidity["deadlines"]}
    return dict(rows[preset])


# ------------------------------------------------------------------------------------------
# metrics.fluidity
# ------------------------------------------------------------------------------------------

SERVER_OFFSETS = [400 * MS, 410 * MS, 410 * MS, 500 * MS, 620 * MS]
CLIENT_CHUNKS = [(200 * MS, 1), (310 * MS, 3), (340 * MS, 1)]


def test_fluidity_from_server_token_offsets_by_hand() -> None:
    data = run_data(
        [
            # client chunks that would give other values: the server offsets must be used
            Req([(700 * MS, 5)], server_offsets_us=SERVER_OFFSETS),
            Req([(100 * MS, 1)]),  # successful, no server span: left out
            Req([(50 * MS, 1)], ok=False, server_offsets_us=[9 * MS]),  # failed: not evaluated
        ]
    )
    f = report_from_data(data, prefill_deadline_s=0.5)["metrics"]["fluidity"]
    assert f["source"] == "server"
    assert f["timeline"].startswith("server: Option C")
    assert f["requests"] == 1
    assert f["requests_left_out"] == 1
    assert f["prefill_deadline"]["kind"] == "fixed"
    assert f["prefill_deadline"]["deadline_ms"] == 500.0
    assert (f["min_fluidity"], f["request_fraction"]) == (0.9, 0.99)
    assert [(d["preset"], d["decode_deadline_ms"]) for d in f["deadlines"]] == [
        ("strict", 25.0),
        ("medium", 50.0),
        ("relaxed", 100.0),
    ]
    strict = deadline(f, "strict")["fluidity_index"]
    assert strict["count"] == 1
    for key in ("mean", "min", "p1", "p5", "p50"):
        assert strict[key] == pytest.approx(0.8)
    assert strict["fraction_at_least_min"] == 0.0
    for preset in ("medium", "relaxed"):
        fi = deadline(f, preset)["fluidity_index"]
        assert fi["p1"] == fi["p50"] == 1.0
        assert fi["fraction_at_least_min"] == 1.0
    rate = f["fluid_token_generation_rate"]
    assert 30.0 - 1e-6 <= rate["decode_deadline_ms"] <= 30.1
    assert rate["tokens_per_s"] == pytest.approx(1000.0 / rate["decode_deadline_ms"])
    assert rate["precision_ms"] == pytest.approx(0.1)
    assert (rate["fraction_meeting"], rate["requests"]) == (1.0, 1)


def test_fluidity_from_client_chunks_with_option_b() -> None:
    data = run_data(
        [
            Req(CLIENT_CHUNKS),
            Req([(100 * MS, 1)]),  # one token: its only interval meets D_p → 1
            Req([]),  # no token: left out
        ]
    )
    f = report_from_data(data, prefill_deadline_s=0.25)["metrics"]["fluidity"]
    assert f["source"] == "client"
    assert f["timeline"].startswith("client: Option B")
    assert f["chunk_handling"].startswith("Option B:")
    assert (f["requests"], f["requests_left_out"]) == (2, 1)
    strict = deadline(f, "strict")["fluidity_index"]
    assert strict["min"] == pytest.approx(4 / 6)
    assert strict["mean"] == pytest.approx((4 / 6 + 1) / 2)
    assert strict["p1"] == pytest.approx(4 / 6 + 0.01 * (1 - 4 / 6))
    assert strict["p50"] == pytest.approx((4 / 6 + 1) / 2)
    assert strict["fraction_at_least_min"] == 0.5
    medium = deadline(f, "medium")["fluidity_index"]
    assert medium["min"] == pytest.approx(0.8)
    assert medium["fraction_at_least_min"] == 0.5
    assert deadline(f, "relaxed")["fluidity_index"]["min"] == 1.0
    rate = f["fluid_token_generation_rate"]
    assert 60.0 - 1e-6 <= rate["decode_deadline_ms"] <= 60.1
    assert rate["requests"] == 2


def test_fluidity_default_prefill_deadline() -> None:
    report = report_from_data(run_data([Req(CLIENT_CHUNKS)]))
    f = report["metrics"]["fluidity"]
    assert DEFAULT_PREFILL_DEADLINE_S == 1.0
    assert f["prefill_deadline"]["deadline_ms"] == 1000.0
    # 0.8 s of slack banked by the first token: every deadline is met at every preset
    assert [d["fluidity_index"]["min"] for d in f["deadlines"]] == [1.0, 1.0, 1.0]


def test_fluidity_deviations_say_what_a_fixed_prefill_deadline_cannot_claim() -> None:
    def fluidity_deviations(prefill_deadline_s: float) -> list[str]:
        report = report_from_data(
            run_data([Req(CLIENT_CHUNKS)]), prefill_deadline_s=prefill_deadline_s
        )
        return [d for d in report["methodology"]["deviations"] if "fluid" in d]

    # D_p 1 s: 0.8 s of slack meets any D_d, so the fluid rate (at the search's 0.1 ms floor)
    # is far above the decode rate (TPOT (340 - 200) / 4 = 35 ms: 28.6 tok/s)
    generous = fluidity_deviations(1.0)
    assert len(generous) == 2
    assert generous[0].startswith("fluidity uses a fixed prefill deadline D_p of 1000 ms")
    assert "exceeds the measured decode rate (28.6 tok/s" in generous[1]
    # D_p 0.25 s: the fluid rate (D_d 60 ms: 16.7 tok/s) is below the decode rate
    tight = fluidity_deviations(0.25)
    assert [d[:48] for d in tight] == ["fluidity uses a fixed prefill deadline D_p of 25"]


def test_fluid_rate_is_null_when_no_deadline_can_meet_the_requirement() -> None:
    # every first token 0.3 s late for D_p = 0.2 s: each request misses at least one of its two
    # deadlines (index ≤ 0.5 < 0.9) whatever D_d
    data = run_data([Req([(500 * MS, 1), (510 * MS, 1)]) for _ in range(3)])
    f = report_from_data(data, prefill_deadline_s=0.2)["metrics"]["fluidity"]
    assert f["fluid_token_generation_rate"] is None
    assert deadline(f, "relaxed")["fluidity_index"]["fraction_at_least_min"] == 0.0
    assert json.loads(render_json(report_from_data(data, prefill_deadline_s=0.2)))


def test_no_fluidity_without_a_successful_token() -> None:
    report = report_from_data(run_data([Req([]), Req([(10 * MS, 1)], ok=False)]))
    assert "fluidity" not in report["metrics"]


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_non_positive_prefill_deadline_is_a_config_error(bad: float) -> None:
    with pytest.raises(ConfigError, match="prefill deadline"):
        report_from_data(run_data([Req(CLIENT_CHUNKS)]), prefill_deadline_s=bad)


# ------------------------------------------------------------------------------------------
# metrics.client.reasoning
# ------------------------------------------------------------------------------------------

REASONING = Req(
    [(100 * MS, 1), (200 * MS, 2), (300 * MS, 1), (500 * MS, 1), (600 * MS, 2)],
    think_phase=semconv.THINK_PHASE_ENDED,
    output_phase_chunk=3,
)


def test_reasoning_phases_by_hand() -> None:
    data = run_data(
        [
            REASONING,
            # the end marker and output text in the first chunk: no think token, TTOT = TTFT
            Req([(70 * MS, 2), (90 * MS, 1)], think_phase="ended", output_phase_chunk=0),
            Req([(50 * MS, 1), (80 * MS, 1)], think_phase=semconv.THINK_PHASE_UNTERMINATED),
            Req([(10 * MS, 1)]),  # no think phase
            Req([(1 * MS, 1), (2 * MS, 1)], ok=False, think_phase="ended", output_phase_chunk=1),
        ]
    )
    client = report_from_data(data)["metrics"]["client"]
    assert list(client)[-1] == "reasoning"
    r = client["reasoning"]
    assert list(r) == [
        "requests",
        "population",
        "boundary",
        "ttot_ms",
        "think_to_output_gap_ms",
        "think_tokens",
        "output_itl_ms",
    ]
    assert r["requests"] == {
        "with_think_phase": 3,
        "think_phase_ended": 2,
        "think_phase_unterminated": 1,
        "without_think_phase": 1,
    }
    assert r["ttot_ms"]["count"] == 2
    assert (r["ttot_ms"]["min"], r["ttot_ms"]["max"]) == (70.0, 500.0)
    assert r["think_to_output_gap_ms"]["count"] == 1
    assert r["think_to_output_gap_ms"]["p50"] == 200.0
    think = r["think_tokens"]
    assert (think["count"], think["min"], think["max"], think["mean"]) == (3, 0.0, 4.0, 2.0)
    # output ITL: 600 - 500 and 0 (request 1), 90 - 70 and 0 (request 2)
    itl = r["output_itl_ms"]
    assert itl["count"] == 4
    assert (itl["min"], itl["max"], itl["mean"]) == (0.0, 100.0, 30.0)


def test_no_reasoning_section_without_a_successful_think_phase() -> None:
    failed = Req([(1 * MS, 1)], ok=False, think_phase="unterminated")
    client = report_from_data(run_data([Req([(10 * MS, 1)]), failed]))["metrics"]["client"]
    assert "reasoning" not in client


# ------------------------------------------------------------------------------------------
# metrics.classes
# ------------------------------------------------------------------------------------------


def _class_req(label: str | None, ttft_ms: int, itl_ms: int, ok: bool = True) -> Req:
    return Req([(ttft_ms * MS, 1), ((ttft_ms + itl_ms) * MS, 1)], ok=ok, request_class=label)


CLASSED = [
    *(_class_req("short", t, 10) for t in (100, 200, 200, 1100)),
    *(_class_req("long", t, 40) for t in (1000, 1000)),
    _class_req(None, 50, 10),  # no class: left out of the section
    _class_req("long", 9000, 40, ok=False),  # failed: left out
]


def test_classes_by_hand() -> None:
    classes = report_from_data(run_data(CLASSED))["metrics"]["classes"]
    assert list(classes) == [
        "reference",
        "jain_index",
        "jain_requests",
        "starvation_factor",
        "requests_without_class",
        "by_class",
    ]
    assert "median TTFT of its own class in this same run" in classes["reference"]
    assert classes["jain_index"] == pytest.approx(100 / 207)
    assert classes["jain_requests"] == 6
    assert classes["starvation_factor"] == 5.0
    assert classes["requests_without_class"] == 1
    assert list(classes["by_class"]) == ["long", "short"]
    short = classes["by_class"]["short"]
    assert short["count"] == 4
    assert short["ttft_ms"] == {
        "count": 4,
        "p50": 200.0,
        "p95": pytest.approx(200 + 0.85 * 900),
        "p99": pytest.approx(200 + 0.97 * 900),
    }
    assert short["tpot_ms"]["p50"] == pytest.approx(10.0)
    assert short["itl_ms"] == {"count": 4, "p50": 10.0, "p95": 10.0, "p99": 10.0}
    assert short["e2e_ms"]["p50"] == pytest.approx(215.0)  # last chunk + 5 ms
    assert short["starvation_rate"] == 0.25
    long = classes["by_class"]["long"]
    assert long["count"] == 2
    assert long["ttft_ms"]["p99"] == 1000.0
    assert long["itl_ms"]["p50"] == 40.0
    assert long["starvation_rate"] == 0.0


def test_no_classes_section_with_fewer_than_two_classes() -> None:
    one = [_class_req("short", 100, 10), _class_req(None, 200, 10)]
    assert "classes" not in report_from_data(run_data(one))["metrics"]
    # the second class only on a failed request
    failed = [_class_req("short", 100, 10), _class_req("long", 100, 10, ok=False)]
    assert "classes" not in report_from_data(run_data(failed))["metrics"]


def test_classes_section_checks_its_inputs() -> None:
    itl = Ragged.from_lengths([], [0, 0])
    with pytest.raises(ValueError, match="one TTFT"):
        classes_section(["a", "b"], [1.0], [1.0, 1.0], [1.0, 1.0], itl)
    # a class whose requests have no TTFT has no starvation rate and stays out of J
    out = classes_section(["a", "b"], [NAN, 2.0], [3.0, 4.0], [NAN, NAN], itl)
    assert out is not None
    assert out["by_class"]["a"]["starvation_rate"] is None
    assert (out["jain_index"], out["jain_requests"]) == (1.0, 1)


# ------------------------------------------------------------------------------------------
# metrics.client.itl_shape
# ------------------------------------------------------------------------------------------


def test_itl_shape_in_the_report() -> None:
    # ITL 10, 10, 10 ms: one peak at 10 ms, bandwidth 0, P99/P50 = 1
    report = report_from_data(run_data([Req([(k * 10 * MS, 1) for k in range(1, 5)])]))
    client = report["metrics"]["client"]
    keys = list(client)
    assert keys[keys.index("itl_p99_p50_ratio") + 1] == "itl_shape"
    assert client["itl_shape"] == {
        "count": 3,
        "peaks": 1,
        "multimodal": False,
        "peak_locations_ms": [10.0],
        "bandwidth_ms": 0.0,
        "p50_ms": 10.0,
        "p99_ms": 10.0,
        "p99_p50_ratio": 1.0,
    }


def test_itl_shape_of_two_regimes() -> None:
    s = itl_shape_section(np.repeat([10.0, 50.0], 200))
    assert (s["count"], s["peaks"], s["multimodal"]) == (400, 2, True)
    low, high = s["peak_locations_ms"]
    assert low == pytest.approx(10.0, abs=1.0)
    assert high == pytest.approx(50.0, abs=1.0)
    assert s["p99_p50_ratio"] == pytest.approx(50.0 / 30.0)


def test_itl_shape_without_samples() -> None:
    report = report_from_data(run_data([Req([(10 * MS, 3)])]))  # one chunk: only zero ITLs
    assert report["metrics"]["client"]["itl_shape"]["peak_locations_ms"] == [0.0]
    empty = report_from_data(run_data([Req([(10 * MS, 1)])]))["metrics"]["client"]["itl_shape"]
    assert empty == {
        "count": 0,
        "peaks": 0,
        "multimodal": False,
        "peak_locations_ms": [],
        "bandwidth_ms": None,
        "p50_ms": None,
        "p99_ms": None,
        "p99_p50_ratio": None,
    }


# ------------------------------------------------------------------------------------------
# run.load_generator
# ------------------------------------------------------------------------------------------

LAGGED = [
    Req([(10 * MS, 1)], schedule_lag_us=1000),
    Req([(10 * MS, 1)], schedule_lag_us=3000),
    Req([], ok=False, schedule_lag_us=20000),  # a failed request was sent late too
]


def test_load_generator_schedule_lag_by_hand() -> None:
    run = report_from_data(run_data(LAGGED, deviations=(BOTTLENECK,), bottleneck=True))["run"]
    assert list(run)[-3:] == ["load_generator", "sent", "phases"]
    assert run["load_generator"] == {
        "schedule_lag_ms": {
            "count": 3,
            "p50": 3.0,
            "p99": pytest.approx(3.0 + 0.98 * 17.0),
            "max": 20.0,
        },
        "generator_bottleneck_flagged": True,
    }
    other = ("no warm-up procedure was run before measurement (draft 4.5)",)
    section_ = load_generator_section(run_data(LAGGED, deviations=other, bottleneck=False))
    assert section_ is not None
    assert section_["generator_bottleneck_flagged"] is False
    # the flag is the manifest's, never read from a deviation's words
    section_ = load_generator_section(run_data(LAGGED, deviations=(BOTTLENECK,)))
    assert section_ is not None
    assert section_["generator_bottleneck_flagged"] is False


def test_no_load_generator_section_for_a_closed_loop() -> None:
    assert report_from_data(run_data([Req([(10 * MS, 1)])]))["run"]["load_generator"] is None


# ------------------------------------------------------------------------------------------
# Markdown and JSON
# ------------------------------------------------------------------------------------------


def full_report() -> dict[str, Any]:
    reqs = [
        Req(CLIENT_CHUNKS, request_class="short", schedule_lag_us=1000),
        Req([(100 * MS, 1)], request_class="long", schedule_lag_us=3000),
        Req(
            REASONING.chunks,
            request_class="long",
            think_phase="ended",
            output_phase_chunk=3,
            schedule_lag_us=20000,
        ),
    ]
    return report_from_data(
        run_data(reqs, deviations=(BOTTLENECK,), bottleneck=True), prefill_deadline_s=0.25
    )


def test_markdown_renders_every_new_section() -> None:
    report = full_report()
    md = render_markdown(report)
    shape = section(md, "## ITL distribution shape (draft 5.4.4.3)")
    assert "| ITL Samples | 10 |" in shape
    assert "| Modality | " in shape
    reasoning = section(md, "## Reasoning phases (ADR-0005)")
    assert "1 successful requests with a think phase (1 ended, 0 unterminated); 2 without one." in (
        reasoning
    )
    assert "| TTOT (from submission) | 1 | 500.00 ms | 500.00 ms | 500.00 ms | 500.00 ms |" in (
        reasoning
    )
    assert "| Think tokens | 1 | 4.00 | 4.00 | 4.00 | 4.00 |" in reasoning
    fluidity = section(md, "## Fluidity (Etalon §4)")
    assert (
        "Token timeline: client (3 requests, 0 successful requests left out); prefill deadline "
        "D_p = 250.00 ms (fixed)."
    ) in fluidity
    assert "| Preset | D_d | Requests | P1 | P5 | P50 | Mean | Requests ≥ 0.90 |" in fluidity
    assert "| relaxed | 100.00 ms | 3 |" in fluidity
    assert "Fluid token generation rate: " in fluidity
    assert "99.0% of requests with a fluidity-index ≥ 0.90" in fluidity
    classes = section(md, "## Per-class results (draft 5.6.5)")
    assert classes.count("\n| long | 2 | ") == 1
    assert "| short | 1 | 200.00 ms | 200.00 ms |" in classes
    assert "| Jain's Fairness Index | 1.000 |" in classes
    assert "| short Class Starvation | 0.0% |" in classes
    assert "Fairness reference: normalized latency x_i = a request's TTFT / the median" in classes
    generator = section(md, "## Load generator (draft 4.2.5)")
    assert "| Schedule lag P50 | 3.00 ms |" in generator
    assert "| Schedule lag Max | 20.00 ms |" in generator
    assert "| Generator bottleneck flagged | yes |" in generator
    assert json.loads(render_json(report)) == json.loads(json.dumps(report))


def test_markdown_leaves_out_absent_sections() -> None:
    md = render_markdown(report_from_data(run_data([Req([(10 * MS, 1)])])))
    for heading in (
        "## ITL distribution shape",
        "## Reasoning phases",
        "## Per-class results",
        "## Load generator",
    ):
        assert heading not in md
    assert "## Fluidity (Etalon §4)" in md
    assert "## Fluidity" not in render_markdown(report_from_data(run_data([Req([])])))
