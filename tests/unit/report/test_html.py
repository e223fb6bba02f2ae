"""The HTML report (``otelbench.render.html``) and its SVG helper, from hand-built records.

The run (:func:`html_run`) has five requests submitted 1 s apart, with hand-checked values:

==  ======  =====  =========================  ===========  ==============================
i   class   input  chunks (ms since T_submit, tokens)      server: queue/prefill/decode ms,
                                                           preemptions (stalls ms)
==  ======  =====  =========================  ===========  ==============================
0   chat    100    (100, 1) (150, 1) (250, 1)              10 / 40 / 120, 0
1   chat    300    (200, 1) (260, 2) (300, 1)              20 / 60 / 90, 2 (5, 7)
2   batch   700    (400, 1) (420, 1)                       30 / 80 / 15, 0
3   batch   1500   (800, 1) (900, 1) (1000, 1) (1300, 1)   50 / 100 / 400, 1 (11)
4   batch   200    failed (504), no chunk                  no server span
==  ======  =====  =========================  ===========  ==============================

Each server span starts 5 ms after its T_submit; its token offsets are the client chunk times
minus 20 ms, one per token. Client TTFTs of the successful requests: 100, 200, 400, 800 ms.
Client Option B ITLs: [50, 100], [60, 0, 40], [20], [100, 100, 300] ms → jitter (population
std) 25, 24.944…, —, 94.28… ms.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench import draft, semconv
from otelbench.model.conform import conforms
from otelbench.model.plots import PlotData
from otelbench.query import (
    ClientRequests,
    RunData,
    RunInfo,
    ServerRequests,
    extract_run_data,
    open_store,
)
from otelbench.render.html import PLOTS, render_html
from otelbench.render.svg import Axis, Chart, linear_ticks, log_ticks, tick_label
from otelbench.report import report_from_data
from otelbench.report.curve import curve_of
from otelbench.report.plot_data import MAX_POINTS, plot_data
from tests.unit.golden.outputs import SCENARIOS
from tests.unit.report.test_curve import TABLE_5

MS = 1000  # µs per ms
NAN = float("nan")
T0 = 1_700_000_000 * 10**9


@dataclass
class Req:
    chunks: list[tuple[int, int]]  # (ms since T_submit, tokens)
    request_class: str | None = None
    input_tokens: float = 100.0
    ok: bool = True
    server: tuple[float, float, float] | None = None  # queue, prefill, decode (ms)
    preemptions: int = 0
    stalls_ms: list[float] = field(default_factory=list)


REQS = [
    Req([(100, 1), (150, 1), (250, 1)], "chat", 100, server=(10, 40, 120)),
    Req(
        [(200, 1), (260, 2), (300, 1)],
        "chat",
        300,
        server=(20, 60, 90),
        preemptions=2,
        stalls_ms=[5, 7],
    ),
    Req([(400, 1), (420, 1)], "batch", 700, server=(30, 80, 15)),
    Req(
        [(800, 1), (900, 1), (1000, 1), (1300, 1)],
        "batch",
        1500,
        server=(50, 100, 400),
        preemptions=1,
        stalls_ms=[11],
    ),
    Req([], "batch", 200, ok=False),
]


def html_run(reqs: list[Req], *, model: str = "tiny", deviations: tuple[str, ...] = ()) -> RunData:
    n = len(reqs)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(r.chunks) for r in reqs], out=bounds[1:])
    end_us = [float((r.chunks[-1][0] + 5) * MS) if r.chunks else 1000.0 for r in reqs]
    client = ClientRequests(
        trace_id=tuple(f"t{i}" for i in range(n)),
        span_id=tuple(f"c{i}" for i in range(n)),
        submit_unix_ns=np.array([T0 + i * 10**9 for i in range(n)], dtype=np.int64),
        duration_ns=np.array([int(e * 1000) for e in end_us], dtype=np.int64),
        ok=np.array([r.ok for r in reqs], dtype=np.bool_),
        error_type=tuple(None if r.ok else "504" for r in reqs),
        request_index=np.arange(n, dtype=np.float64),
        request_class=tuple(r.request_class for r in reqs),
        think_phase=tuple(None for _ in reqs),
        output_phase_chunk=np.full(n, NAN),
        schedule_lag_us=np.full(n, 100.0),
        ttft_us=np.array([float(r.chunks[0][0] * MS) if r.chunks else NAN for r in reqs]),
        first_event_offset_us=np.array(
            [float(r.chunks[0][0] * MS) if r.chunks else NAN for r in reqs]
        ),
        end_offset_us=np.array(end_us),
        input_tokens=np.array([r.input_tokens for r in reqs]),
        output_tokens=np.array([float(sum(t for _, t in r.chunks)) for r in reqs]),
        finish_reasons=tuple(("length",) for _ in reqs),
        chunk_token_source=tuple(semconv.CHUNK_TOKENS_FROM_USAGE for _ in reqs),
        chunk_bounds=bounds,
        chunk_offset_us=np.array([o * MS for r in reqs for o, _ in r.chunks], dtype=np.int64),
        chunk_tokens=np.array([t for r in reqs for _, t in r.chunks], dtype=np.int64),
    )
    rows = [(i, r) for i, r in enumerate(reqs) if r.server is not None]
    m = len(rows)
    offsets = [[(o - 20) * MS for o, t in r.chunks for _ in range(t)] for _, r in rows]
    token_bounds = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([len(o) for o in offsets], out=token_bounds[1:])
    stall_bounds = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([len(r.stalls_ms) for _, r in rows], out=stall_bounds[1:])
    phases = np.array([r.server for _, r in rows], dtype=np.float64).reshape(m, 3) / 1000.0
    server = ServerRequests(
        trace_id=tuple(f"t{i}" for i, _ in rows),
        span_id=tuple(f"s{i}" for i, _ in rows),
        parent_span_id=tuple(f"c{i}" for i, _ in rows),
        client_index=np.array([i for i, _ in rows], dtype=np.int64),
        start_unix_ns=np.array([T0 + i * 10**9 + 5 * 10**6 for i, _ in rows], dtype=np.int64),
        duration_ns=np.full(m, 10**9, dtype=np.int64),
        request_id=tuple(f"q{i}" for i, _ in rows),
        ttft_s=np.full(m, NAN),
        e2e_s=np.full(m, 1.0),
        queue_s=phases[:, 0],
        prefill_s=phases[:, 1],
        decode_s=phases[:, 2],
        inference_s=np.full(m, NAN),
        prompt_tokens=np.array([r.input_tokens for _, r in rows]),
        completion_tokens=np.array([float(len(o)) for o in offsets]),
        span_name=tuple(semconv.SPAN_HOOK_REQUEST for _ in rows),
        finish_reason=tuple("length" for _ in rows),
        cache_read_tokens=np.full(m, NAN),
        preemptions=np.array([float(r.preemptions) for _, r in rows]),
        preemption_events=np.array([float(r.preemptions) for _, r in rows]),
        kv_tokens_discarded=np.zeros(m),
        output_phase_token=np.full(m, NAN),
        token_bounds=token_bounds,
        token_offset_us=np.array([v for o in offsets for v in o], dtype=np.int64),
        stall_bounds=stall_bounds,
        stall_us=np.array([int(s * MS) for _, r in rows for s in r.stalls_ms], dtype=np.int64),
    )
    manifest = {"id": "run-1", "model": model, "deviations": list(deviations)}
    return RunData(RunInfo("run-1", manifest, T0, 6 * 10**9), client, server)


# the draft's Table 5 (5.3.4): knee at level 3, no saturation, peak at level 5
PROCEDURE: dict[str, Any] = {"latency_metric": "TTFT", "levels": TABLE_5}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], figure: str | None) -> None:
        self.tag, self.attrs, self.figure = tag, attrs, figure
        self.text = ""


class Page(HTMLParser):
    """Every element of a page with its attributes and the ``data-plot`` of its figure."""

    VOID = frozenset({"meta", "br", "img", "link", "input", "hr"})

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._stack: list[Element] = []
        self._figure: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "figure":
            self._figure = a.get("data-plot")
        e = Element(tag, a, self._figure)
        self.elements.append(e)
        if tag not in self.VOID:
            self._stack.append(e)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}, self._figure))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            e = self._stack.pop()
            if e.tag == tag:
                break
        if tag == "figure":
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._stack:
            self._stack[-1].text += data

    def in_figure(self, name: str, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [
            e
            for e in self.elements
            if e.figure == name
            and (tag is None or e.tag == tag)
            and (cls is None or cls in e.attrs.get("class", "").split())
        ]

    def figure_text(self, name: str) -> str:
        return " ".join(e.text for e in self.elements if e.figure == name)


def points(e: Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in e.attrs["points"].split())]


@pytest.fixture
def data() -> RunData:
    return html_run(REQS)


@pytest.fixture
def report(data: RunData) -> dict[str, Any]:
    return report_from_data(data)


@pytest.fixture
def pd(data: RunData) -> dict[str, Any]:
    return plot_data(data)


# ------------------------------------------------------------------------------------------
# plot_data
# ------------------------------------------------------------------------------------------


def test_plot_data_ttft_cdfs_by_hand(pd: dict[str, Any]) -> None:
    client = pd["ttft_ms"]["client"]
    assert client == {
        "count": 4,
        "values": [100.0, 200.0, 400.0, 800.0],
        "fractions": [0.25, 0.5, 0.75, 1.0],
    }
    # server TTFT: the first token offset, 20 ms before the client's first chunk
    assert pd["ttft_ms"]["server"]["values"] == [80.0, 180.0, 380.0, 780.0]


def test_plot_data_is_json_deterministic_and_bounded(data: RunData, pd: dict[str, Any]) -> None:
    text = json.dumps(pd, allow_nan=False)
    assert text == json.dumps(plot_data(data), allow_nan=False)
    assert pd["version"] == 1
    # the last response end: request 3, submitted at 3 s, ends 1305 ms later
    assert pd["window_s"] == 4.305


def test_plot_data_downsamples_evenly_keeping_min_and_max() -> None:
    reqs = [Req([(10 + k, 1), (20 + k, 1)]) for k in range(50)]
    small = plot_data(html_run(reqs), max_points=5)
    cdf = small["ttft_ms"]["client"]
    assert cdf["count"] == 50
    # ranks 0, 12, 24 (rint of 24.5 is even), 37, 49 → TTFT 10 + rank ms, fraction (rank+1)/50
    assert cdf["values"] == [10.0, 22.0, 34.0, 47.0, 59.0]
    assert cdf["fractions"] == [0.02, 0.26, 0.5, 0.76, 1.0]
    assert len(small["ttft_by_input"]["x"]) == 5
    assert small["ttft_by_input"]["count"] == 50
    with pytest.raises(ValueError, match="max_points"):
        plot_data(html_run(reqs), max_points=1)
    assert MAX_POINTS == 2000


def test_plot_data_itl_histograms_count_every_sample(pd: dict[str, Any]) -> None:
    h = pd["itl_histogram_ms"]
    assert h["log"] is False
    # client Option B ITLs 50, 100, 60, 0, 40, 20, 100, 100, 300: max 300 ≤ 4 × P99, no cap
    assert h["edges"][0] == 0.0
    assert h["edges"][-1] == 300.0
    assert len(h["edges"]) == 41
    assert sum(h["client"]["counts"]) == 9
    assert h["client"]["overflow"] == 0
    assert h["client"]["counts"][0] == 1  # the zero interval: [0, 7.5)
    assert h["client"]["counts"][-1] == 1  # 300, the right edge is inclusive
    # server Option C: one offset per token, so the 2-token chunk gives a 0 interval too
    assert sum(h["server"]["counts"]) == 9


def test_plot_data_histogram_caps_a_far_tail_as_overflow() -> None:
    reqs = [Req([(100, 1)]) for _ in range(99)] + [Req([(100_000, 1)])]
    h = plot_data(html_run(reqs))["ttft_histogram_ms"]
    # TTFT 100 ms ×99 and 100 s: max/min ≥ 50 and all positive → log bins, no overflow
    assert h["log"] is True
    assert h["client"]["overflow"] == 0
    assert sum(h["client"]["counts"]) == 100
    reqs = [Req([(0, 1), (10, 1)]) for _ in range(99)] + [Req([(0, 1), (5000, 1)])]
    h = plot_data(html_run(reqs))["itl_histogram_ms"]
    # ITL 10 ms ×99, 5000 ms once: P99 = 59.9 → cap at 89.85, the 5 s sample overflows
    assert h["edges"][-1] == pytest.approx(1.5 * (10 + 0.01 * 4990))
    assert h["client"]["overflow"] == 1
    assert sum(h["client"]["counts"]) == 99


def test_plot_data_jitter_per_request(pd: dict[str, Any]) -> None:
    client = pd["jitter_ms"]["client"]
    assert client["count"] == 3  # request 2 has one ITL sample
    assert client["x"] == [0.0, 1.0, 3.0]
    assert client["y"] == pytest.approx(
        [25.0, float(np.std([60, 0, 40])), float(np.std([100, 100, 300]))], abs=1e-4
    )
    assert pd["jitter_ms"]["server"]["x"] == [0.0, 1.0, 3.0]


def test_plot_data_fluidity_matches_the_report(pd: dict[str, Any], report: dict[str, Any]) -> None:
    f = pd["fluidity"]
    section = report["metrics"]["fluidity"]
    assert f["source"] == section["source"] == "server"
    assert [d["preset"] for d in f["deadlines"]] == list(draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S)
    for row, reported in zip(f["deadlines"], section["deadlines"], strict=True):
        values = row["cdf"]["values"]
        assert row["cdf"]["count"] == reported["fluidity_index"]["count"] == 4
        assert min(values) == pytest.approx(reported["fluidity_index"]["min"])
        assert np.mean(values) == pytest.approx(reported["fluidity_index"]["mean"])


def test_plot_data_preemptions_by_hand(pd: dict[str, Any]) -> None:
    p = pd["preemptions"]
    assert (p["requests_observed"], p["total"]) == (4, 3)
    assert p["placement"].startswith("at the preempted request's arrival")  # no event times
    pre = p["preempted"]
    assert pre["count"] == 2
    assert pre["time_s"] == [1.005, 3.005]
    assert pre["preemptions"] == [2, 1]
    assert pre["cumulative"] == [2, 3]
    assert pre["stall_ms"] == [12.0, 11.0]


def test_plot_data_waterfall_rows(data: RunData) -> None:
    w = plot_data(data, max_requests_waterfall=10)["waterfall"]
    assert (w["sampled"], w["of"]) == (4, 4)  # the failed request is not a candidate
    rows = {r["request"]: r for r in w["requests"]}
    assert list(rows) == [0, 1, 2, 3]
    r = rows[1]
    assert (r["class"], r["submit_s"], r["ttft_ms"], r["end_ms"]) == ("chat", 1.0, 200.0, 305.0)
    assert r["guardrail_ms"] is None
    s = r["server"]
    # server TTFT 180 ms = arrival→queue + queue 20 + prefill 60 → 100 ms before queueing
    assert s["arrival_ms"] == 5.0
    assert (s["pre_queue_ms"], s["queue_ms"], s["prefill_ms"], s["decode_ms"]) == (
        100.0,
        20.0,
        60.0,
        90.0,
    )
    assert s["preemptions"] == 2.0
    two = plot_data(data, max_requests_waterfall=2, seed=7)["waterfall"]
    assert two["sampled"] == 2
    again = plot_data(data, max_requests_waterfall=2, seed=7)["waterfall"]
    assert two == again


def test_plot_data_without_server_spans() -> None:
    pd = plot_data(html_run([Req([(100, 1), (130, 1)])]))
    assert pd["ttft_ms"]["server"] is None
    assert pd["itl_histogram_ms"]["server"] is None
    assert pd["jitter_ms"]["server"] is None
    assert pd["preemptions"] is None
    assert pd["fluidity"]["source"] == "client"
    assert pd["waterfall"]["requests"][0]["server"] is None


@pytest.mark.parametrize(
    "reqs", [REQS, [Req([(100, 1), (130, 1)])]], ids=["with_server", "client_only"]
)
def test_plot_data_conforms_to_its_types(reqs: list[Req]) -> None:
    pd = plot_data(html_run(reqs))
    assert conforms(pd, PlotData) == []
    assert conforms(json.loads(json.dumps(pd, allow_nan=False)), PlotData) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_golden_scenarios_plot_data_conforms(name: str, tmp_path: Path) -> None:
    with open_store(SCENARIOS[name](tmp_path / f"{name}.duckdb")) as runner:
        data = extract_run_data(runner, None)
    assert conforms(plot_data(data), PlotData) == []


# ------------------------------------------------------------------------------------------
# render_html: structure
# ------------------------------------------------------------------------------------------


def full_page(report: dict[str, Any], pd: dict[str, Any]) -> Page:
    return Page(render_html(report, pd, curve=curve_of(PROCEDURE)))


def test_every_plot_draws_an_svg_with_data(report: dict[str, Any], pd: dict[str, Any]) -> None:
    page_text = render_html(report, pd, curve=curve_of(PROCEDURE))
    assert page_text.startswith("<!DOCTYPE html>")
    page = Page(page_text)
    figures = [e.attrs["data-plot"] for e in page.elements if e.tag == "figure"]
    assert figures == [name for name, _ in PLOTS]
    for name in figures:
        assert len(page.in_figure(name, "svg")) == 1, name
        drawn = [
            e for e in page.in_figure(name) if e.tag in ("polyline", "rect", "circle", "g", "path")
        ]
        assert drawn, name
        assert page.in_figure(name, "p", "absent") == [], name


def test_ttft_cdf_has_one_step_per_sample(report: dict[str, Any], pd: dict[str, Any]) -> None:
    page = full_page(report, pd)
    (client,) = [
        e
        for e in page.in_figure("ttft_cdf", "polyline", "cdf")
        if e.attrs["data-series"] == "client"
    ]
    assert client.attrs["data-steps"] == "4"
    pts = points(client)
    assert len(pts) == 2 * 4 + 2
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    assert xs == sorted(xs)
    assert ys == sorted(ys, reverse=True)  # SVG y grows downwards: the CDF never falls
    # the levels are 0, 1/4, 1/2, 3/4, 1 of the plot height: y = 30 + (1 - f) · 242
    levels = sorted(set(ys), reverse=True)
    assert levels == pytest.approx([30 + (1 - f) * 242 for f in (0, 0.25, 0.5, 0.75, 1)], abs=0.01)
    assert any(e.attrs["data-series"] == "server" for e in page.in_figure("ttft_cdf", "polyline"))


def test_histogram_bar_heights_are_proportional_to_counts(
    report: dict[str, Any], pd: dict[str, Any]
) -> None:
    page = full_page(report, pd)
    bars = [
        e
        for e in page.in_figure("itl_histogram", "rect", "bar")
        if e.attrs["data-series"] == "client"
    ]
    counts = [k for k in pd["itl_histogram_ms"]["client"]["counts"] if k > 0]
    assert len(bars) == 40  # zero-count bars are drawn with zero height
    heights = [float(b.attrs["height"]) for b in bars if float(b.attrs["height"]) > 0]
    assert len(heights) == len(counts)
    ratios = [h / k for h, k in zip(heights, counts, strict=True)]
    assert max(ratios) == pytest.approx(min(ratios), rel=1e-3)


def test_fairness_bars_follow_the_class_percentiles(
    report: dict[str, Any], pd: dict[str, Any]
) -> None:
    page = full_page(report, pd)
    by_class = report["metrics"]["classes"]["by_class"]
    assert list(by_class) == ["batch", "chat"]
    for series in ("TTFT P50", "TTFT P99"):
        bars = [
            e for e in page.in_figure("fairness", "rect", "bar") if e.attrs["data-series"] == series
        ]
        key = series.split()[1].lower()
        expected = [by_class[c]["ttft_ms"][key] for c in ("batch", "chat")]
        heights = [float(b.attrs["height"]) for b in bars]
        assert heights[0] / heights[1] == pytest.approx(expected[0] / expected[1], rel=1e-3)
    assert "Jain's fairness index J = " in page.figure_text("fairness")


def test_throughput_latency_marks_knee_and_saturation(
    report: dict[str, Any], pd: dict[str, Any]
) -> None:
    page = full_page(report, pd)
    markers = {
        e.attrs["data-series"]: e for e in page.in_figure("throughput_latency", "g", "marker")
    }
    assert set(markers) == {"knee (14 req/s)", "peak (22 req/s)"}
    assert page.in_figure("throughput_latency", "g", "vline") == []
    assert "No saturation point" in page.figure_text("throughput_latency")
    assert len(page.in_figure("throughput_latency", "circle", "point")) == 6
    # a drop in throughput at level 4: saturation there, drawn as a vertical line
    levels = [dict(level) for level in PROCEDURE["levels"]]
    levels[4]["output_tokens_per_s"] = 1900
    page = Page(render_html(report, pd, curve=curve_of({"levels": levels})))
    (line,) = page.in_figure("throughput_latency", "g", "vline")
    assert line.attrs["data-series"] == "saturation"
    assert "saturation (18 req/s)" in page.figure_text("throughput_latency")
    # explicit indices win over the derived ones
    page = Page(render_html(report, pd, curve=curve_of({**PROCEDURE, "knee": 1})))
    markers = {e.attrs["data-series"] for e in page.in_figure("throughput_latency", "g", "marker")}
    assert "knee (6 req/s)" in markers


def test_throughput_latency_without_a_procedure_says_so(
    report: dict[str, Any], pd: dict[str, Any]
) -> None:
    page = Page(render_html(report, pd))
    assert page.in_figure("throughput_latency", "svg") == []
    assert "not measured in this run" in page.figure_text("throughput_latency")
    bad = {"levels": [{"offered_rps": 2, "output_tokens_per_s": 1, "p99_ms": 1}] * 2}
    page = Page(render_html(report, pd, curve=curve_of(bad)))
    assert "strictly ascending" in page.figure_text("throughput_latency")


def test_preemption_timeline_and_waterfall(report: dict[str, Any], pd: dict[str, Any]) -> None:
    page = full_page(report, pd)
    dots = page.in_figure("preemption_timeline", "circle", "point")
    assert len(dots) == 2
    assert "3 preemptions over 4 observed requests." in page.figure_text("preemption_timeline")
    spans = page.in_figure("waterfall", "rect", "span")
    series = [e.attrs["data-series"] for e in spans]
    n = pd["waterfall"]["sampled"]
    assert series.count("queue") == series.count("prefill") == series.count("decode") == n
    assert series.count("client_wait") == series.count("client_stream") == n
    assert "Guardrail: not measured in this run" in page.figure_text("waterfall")


def test_report_alone_draws_what_it_can(report: dict[str, Any]) -> None:
    page = Page(render_html(report))
    drawn = {e.figure for e in page.elements if e.tag == "svg"}
    assert drawn == {"ttft_cdf", "ttft_by_input", "jitter", "fluidity_cdf", "fairness"}
    for name in ("ttft_histogram", "itl_histogram", "preemption_timeline", "waterfall"):
        assert "not measured in this run" in page.figure_text(name), name


def test_no_external_resource(report: dict[str, Any], pd: dict[str, Any]) -> None:
    text = render_html(report, pd, curve=curve_of(PROCEDURE))
    assert not re.search(r"https?:|ftp:|//[a-z]", text)
    assert not re.search(r"\b(src|href|xlink:href)\s*=", text)
    assert "<link" not in text
    assert "url(" not in text
    assert "@import" not in text
    assert text.count("<script") == 2  # the two inline scripts, neither with a src


def test_hostile_strings_are_escaped() -> None:
    evil = '<script>alert("x")</script>'
    reqs = [
        Req([(100, 1), (120, 1)], '"><img onerror=alert(1)>'),
        Req([(200, 1), (220, 1)], "b&b"),
    ]
    data = html_run(reqs, model=evil, deviations=(evil, "</li><li>fake"))
    report = report_from_data(data)
    text = render_html(report, plot_data(data))
    assert evil not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert "<img" not in text
    assert "&quot;&gt;&lt;img onerror=alert(1)&gt;" in text
    assert "b&amp;b" in text
    assert "</li><li>fake" not in text
    assert text.count("<script") == 2
    page = Page(text)
    deviations = report["methodology"]["deviations"]
    assert deviations[:2] == [evil, "</li><li>fake"]
    assert [e.text for e in page.elements if e.tag == "li"] == deviations


def test_headline_tables(report: dict[str, Any], pd: dict[str, Any]) -> None:
    page = full_page(report, pd)
    cells = [e.text for e in page.elements if e.tag == "td"]
    assert "TTFT" in cells
    assert "TTFT client − server" in cells
    i = cells.index("TTFT")
    # client TTFT: count 4, min 100 ms, P50 300 ms
    assert cells[i : i + 5] == ["TTFT", "client", "4", "100.00", "300.00"]
    dts = [e.text for e in page.elements if e.tag == "dt"]
    assert "ITL method" in dts
    assert "percentiles" in dts


# ------------------------------------------------------------------------------------------
# the SVG helper
# ------------------------------------------------------------------------------------------


def test_ticks_and_labels() -> None:
    assert linear_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert linear_ticks(0, 7) == [0.0, 2.0, 4.0, 6.0]
    assert log_ticks(10, 1000) == [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
    assert log_ticks(1, 10**5) == [1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0]
    assert [tick_label(v) for v in (0.0, 2.5, 40.0, 12000.0, 0.125, -3.0)] == [
        "0",
        "2.5",
        "40",
        "12k",
        "0.125",
        "-3",
    ]


def test_axes_map_values_to_pixels() -> None:
    a = Axis.linear([3.0, 97.0], "ms")
    assert (a.lo, a.hi) == (0.0, 100.0)
    assert a.fraction(25.0) == 0.25
    assert a.fraction(1000.0) == 1.0  # clamped
    log = Axis.logarithmic([30.0, 4800.0], "ms")
    assert (log.lo, log.hi) == (20.0, 5000.0)
    assert log.fraction(math.sqrt(20.0 * 5000.0)) == pytest.approx(0.5)
    cat = Axis.categorical(["a", "b"], "class")
    assert (cat.lo, cat.hi, cat.ticks) == (0.0, 2.0, (0.5, 1.5))
    chart = Chart(Axis.fixed(0, 10, "x"), Axis.fixed(0, 1, "y"), width=600, height=320)
    assert (chart.px(0), chart.px(10)) == (66, 600 - 20)
    assert (chart.py(0), chart.py(1)) == (320 - 48, 30)


def test_chart_escapes_labels_and_draws_each_kind() -> None:
    chart = Chart(Axis.categorical(["<a>"], "x&y"), Axis.fixed(0, 1, '"y"'))
    chart.bars([0.1], [0.9], [0.5], color="#000", label="<b>", tips=["<t>"])
    chart.points([0.5], [0.5], color="#000", label="p")
    chart.line([0, 1], [0, 1], color="#000", label="l")
    chart.vline(0.5, color="#000", text="<v>")
    chart.hline(0.5, color="#000", text="h")
    chart.marker(0.5, 0.5, "<m>", color="#000")
    chart.span(0.1, 0.2, 0.1, 0.2, color="#000", tip="s")
    svg = chart.render("<title>")
    for raw in ("<a>", "<b>", "<v>", "<m>", "<t>"):
        assert raw not in svg
    for escaped in ("&lt;a&gt;", "x&amp;y", "&quot;y&quot;", "&lt;t&gt;"):
        assert escaped in svg
    page = Page(svg)
    kinds = {e.attrs.get("class") for e in page.elements}
    assert {"bar", "point", "line", "vline", "hline", "marker", "span"} <= kinds
    (bar,) = [e for e in page.elements if e.attrs.get("class") == "bar"]
    assert float(bar.attrs["height"]) == pytest.approx(0.5 * (320 - 30 - 48))


def test_plot_data_itl_is_option_b() -> None:
    # one 3-token chunk after a 1-token chunk: intervals 100, 0, 0 ms
    pd = plot_data(html_run([Req([(100, 1), (200, 3)])]))
    assert sum(pd["itl_histogram_ms"]["client"]["counts"]) == 3
    assert pd["itl_histogram_ms"]["client"]["counts"][0] == 2


def test_throughput_latency_reads_procedure_level_rows(
    report: dict[str, Any], pd: dict[str, Any]
) -> None:
    # closed-loop level rows as otelbench.procedures writes them: concurrency, e2e P99
    levels: list[dict[str, Any]] = [
        {"offered_rps": None, "concurrency": c, "output_tokens_per_s": t, "e2e_p99_ms": p}
        for c, t, p in ((1, 100.0, 50.0), (2, 190.0, 60.0), (4, 300.0, 150.0), (8, 280.0, 900.0))
    ]
    levels.insert(2, {"concurrency": 3, "output_tokens_per_s": None, "e2e_p99_ms": 70.0})
    block = {"latency_metric": "e2e", "levels": levels, "saturation": 4}
    page = Page(render_html(report, pd, curve=curve_of(block)))
    assert len(page.in_figure("throughput_latency", "circle", "point")) == 4
    markers = {e.attrs["data-series"] for e in page.in_figure("throughput_latency", "g", "marker")}
    # knee: 150 > 2 × 50 at concurrency 4; peak at 4 (throughput falls at 8)
    assert markers == {"knee (4 concurrent)"}
    (line,) = page.in_figure("throughput_latency", "g", "vline")
    assert line.attrs["data-series"] == "saturation"
    assert "saturation (8 concurrent)" in page.figure_text("throughput_latency")  # index 4
    text = page.figure_text("throughput_latency")
    assert "1 level(s) without a load, throughput or P99 are left out." in text
    assert "E2E P99 (ms)" in text
