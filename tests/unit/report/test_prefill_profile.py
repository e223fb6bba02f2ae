"""The run report's profiled prefill deadline: Etalon's D_p(L) = prefill(L) + S (§4.1) from the
run's own isolated requests, from RunData records built by hand.

Every run here sends its requests one at a time, 1 s apart (each finished long before the next),
unless a test overlaps some on purpose. A request of prompt length L has its first token after
prefill(L) = 5 ms + 0.02 ms·L + 1e-5 ms·L² (integer µs), then two more tokens 20 ms apart; on the
client each token arrives 2 ms after the engine made it. So the fit must recover
a = 5 ms, b = 0.02 ms/token, c = 1e-5 ms/token² (to the µs rounding), and D_p(L) =
prefill(L) + 500 ms.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from otelbench.model import report as rt
from otelbench.model.conform import conforms
from otelbench.query import RunData
from otelbench.render.html import render_html
from otelbench.report import render_json, render_markdown, report_from_data
from otelbench.report.plot_data import plot_data
from tests.unit.report.test_sections import MS, Req, run_data

GAP_NS = 10**9
LENGTHS = [64] * 12 + [256] * 12 + [1024] * 12


def prefill_us(length: float) -> int:
    return round(1000 * (5.0 + 0.02 * length + 1e-5 * length * length))


def one_at_a_time(
    lengths: list[int],
    *,
    server: bool = True,
    starts_ns: list[int] | None = None,
    stall_us: dict[int, int] | None = None,
) -> RunData:
    """A run of one request per prompt length, started ``starts_ns`` (default 1 s apart)
    after the first; ``stall_us`` adds a stall before request ``i``'s last token."""
    stall_us = stall_us or {}
    reqs = []
    for i, length in enumerate(lengths):
        first = prefill_us(length)
        offsets = [first, first + 20 * MS, first + 40 * MS + stall_us.get(i, 0)]
        reqs.append(
            Req([(o + 2 * MS, 1) for o in offsets], server_offsets_us=offsets if server else None)
        )
    data = run_data(reqs)
    starts = np.array(starts_ns or [i * GAP_NS for i in range(len(lengths))], dtype=np.int64)
    t0 = int(data.client.submit_unix_ns[0])
    client = dataclasses.replace(
        data.client,
        submit_unix_ns=t0 + starts,
        input_tokens=np.array(lengths, dtype=np.float64),
    )
    s = data.server
    if len(s):
        ends_us = np.array([s.token_offsets(i)[-1] for i in range(len(s))], dtype=np.int64)
        s = dataclasses.replace(
            s,
            start_unix_ns=t0 + starts[s.client_index] + 1000 * MS,  # 1 ms after T_submit
            duration_ns=(ends_us + MS) * 1000,
            prompt_tokens=np.array(lengths, dtype=np.float64)[s.client_index],
            cache_read_tokens=np.zeros(len(s)),
        )
    return dataclasses.replace(data, client=client, server=s)


def fluidity(data: RunData, **kwargs: float) -> dict[str, Any]:
    """``metrics.fluidity`` as report.json has it (the report conforms to the types)."""
    report = json.loads(render_json(report_from_data(data, **kwargs)))
    assert conforms(report, rt.Report) == []
    section: dict[str, Any] = report["metrics"]["fluidity"]
    return section


def test_a_run_of_isolated_requests_profiles_etalons_quadratic_on_the_server_timeline() -> None:
    report = report_from_data(one_at_a_time(LENGTHS))
    f = report["metrics"]["fluidity"]
    assert f["source"] == "server"
    d = f["prefill_deadline"]
    assert d["kind"] == "profiled"
    assert d["source"].startswith("server: each isolated request's first token offset")
    assert d["isolation"].startswith("a request is isolated when no other server span")
    assert (d["isolated_requests"], d["requests_outside_range"]) == (36, 0)
    assert d["left_out"] == {"unknown_prompt_length": 0, "preempted": 0, "prefix_cache_hit": 0}
    fit = d["fit"]
    assert (fit["a_ms"], fit["b_ms_per_token"], fit["c_ms_per_token2"]) == pytest.approx(
        (5.0, 0.02, 1e-5), rel=1e-3, abs=1e-3
    )
    assert fit["r_squared"] == pytest.approx(1.0, abs=1e-6)
    assert (fit["requests"], fit["min_tokens"], fit["max_tokens"]) == (36, 64, 1024)
    assert [(g["min_tokens"], g["max_tokens"], g["requests"]) for g in d["groups"]] == [
        (64, 64, 12),
        (256, 256, 12),
        (1024, 1024, 12),
    ]
    assert [g["prefill_p50_ms"] for g in d["groups"]] == pytest.approx(
        [prefill_us(n) / 1000 for n in (64, 256, 1024)]
    )
    assert d["scheduling_slack_ms"] == 500.0
    assert [d["deadline_range_ms"][k] for k in ("min", "p50", "max")] == pytest.approx(
        [500 + prefill_us(n) / 1000 for n in (64, 256, 1024)], abs=1e-3
    )
    deviations = report["methodology"]["deviations"]
    assert not [x for x in deviations if x.startswith("fluidity uses a fixed prefill deadline")]
    # S = 500 ms of slack covers three-token requests whatever D_d: the fluid rate exceeds the
    # decode rate (tokens 20 ms apart: 50 tok/s), and the deviation says so
    assert [x for x in deviations if "exceeds the measured decode rate (50.0 tok/s" in x]
    assert "D_p(L) = prefill(L) + 500.00 ms (profiled, Etalon §4.1)" in render_markdown(report)
    plots = plot_data(one_at_a_time(LENGTHS))
    assert plots["fluidity"]["prefill_deadline_ms"] is None
    assert "D_p(L) = prefill(L) + S, profiled from the run" in render_html(report, plots)


def test_each_request_is_judged_by_its_own_profiled_deadline() -> None:
    # request 0 (64 tokens: D_p = 506.3 ms): its first token at 6.3 ms banks 500 ms of slack,
    # its second (20 ms) 80 ms more at D_d 100 ms; an 800 ms stall before its last token (an
    # 820 ms interval) outruns 100 + 580 ms, where the fixed 1 s D_p's 993.7 + 80 ms absorb it
    data = one_at_a_time(LENGTHS, stall_us={0: 800 * MS})
    profiled = fluidity(data)
    assert profiled["prefill_deadline"]["kind"] == "profiled"
    relaxed = profiled["deadlines"][2]["fluidity_index"]
    assert relaxed["min"] < 1.0
    fixed = fluidity(one_at_a_time(LENGTHS, stall_us={0: 800 * MS}), prefill_deadline_s=1.0)
    assert fixed["prefill_deadline"]["kind"] == "fixed"
    assert fixed["deadlines"][2]["fluidity_index"]["min"] == 1.0


def test_overlapping_requests_are_not_isolated_and_too_few_isolated_leave_d_p_fixed() -> None:
    # the 1024-token requests start in pairs 1 ms apart: neither of a pair is alone before its
    # first token (36 ms), so only 24 requests, 2 lengths, are isolated: no profile
    starts = [i * GAP_NS for i in range(24)] + [
        (24 + i // 2) * GAP_NS + (i % 2) * 1000 * MS for i in range(12)
    ]
    data = one_at_a_time(LENGTHS, starts_ns=starts)
    report = report_from_data(data)
    d = report["metrics"]["fluidity"]["prefill_deadline"]
    assert d == {
        "kind": "fixed",
        "deadline_ms": 1000.0,
        "description": d["description"],
    }
    assert any(
        x.startswith("fluidity uses a fixed prefill deadline D_p of 1000 ms")
        for x in report["methodology"]["deviations"]
    )


def test_preempted_requests_and_prefix_cache_hits_are_no_profile_points() -> None:
    data = one_at_a_time([*LENGTHS, 64, 64, 256])
    s = data.server
    preempted = np.zeros(len(s))
    preempted[[36, 37]] = 1
    cached = np.zeros(len(s))
    cached[38] = 32
    data = dataclasses.replace(
        data, server=dataclasses.replace(s, preemptions=preempted, cache_read_tokens=cached)
    )
    d = fluidity(data)["prefill_deadline"]
    assert d["isolated_requests"] == 39
    assert d["left_out"] == {
        "unknown_prompt_length": 0,
        "preempted": 2,
        "prefix_cache_hit": 1,
    }
    assert d["fit"]["requests"] == 36


def test_a_client_only_run_profiles_ttft_of_requests_alone_in_flight() -> None:
    data = one_at_a_time(LENGTHS, server=False)
    f = fluidity(data)
    assert f["source"] == "client"
    d = f["prefill_deadline"]
    assert d["kind"] == "profiled"
    assert d["source"].startswith("client: each isolated request's TTFT")
    assert d["isolation"].startswith("a request is isolated when no other request")
    assert d["left_out"] == {"unknown_prompt_length": 0}
    # TTFT = prefill + 2 ms: the same curve, 2 ms higher
    assert d["fit"]["a_ms"] == pytest.approx(7.0, abs=1e-3)
    assert d["fit"]["b_ms_per_token"] == pytest.approx(0.02, rel=1e-3)


def test_prompts_outside_the_profiled_lengths_take_the_nearest_and_are_a_deviation() -> None:
    # 4 requests of 4096 tokens, started 1 ms apart, none isolated: their D_p is D_p(1024)
    lengths = [*LENGTHS, 4096, 4096, 4096, 4096]
    starts = [i * GAP_NS for i in range(36)] + [36 * GAP_NS + i * 1000 * MS for i in range(4)]
    report = report_from_data(one_at_a_time(lengths, starts_ns=starts))
    d = report["metrics"]["fluidity"]["prefill_deadline"]
    assert d["kind"] == "profiled"
    assert (d["isolated_requests"], d["requests_outside_range"]) == (36, 4)
    assert d["deadline_range_ms"]["max"] == pytest.approx(500 + prefill_us(1024) / 1000, abs=1e-3)
    assert any(
        x.startswith(
            "4 of the fluidity section's requests had prompt lengths outside the "
            "profiled 64–1024 tokens"
        )
        for x in report["methodology"]["deviations"]
    )


def test_a_given_prefill_deadline_is_used_as_declared() -> None:
    d = fluidity(one_at_a_time(LENGTHS), prefill_deadline_s=0.25)["prefill_deadline"]
    assert (d["kind"], d["deadline_ms"]) == ("fixed", 250.0)
