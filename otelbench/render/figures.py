"""The figures of ``report.html``: inline-SVG plots of a report and its plot data.

Each figure of :data:`PLOTS` is drawn by one function registered in :data:`FIGURES` (by its
``data-plot`` name) from the report (:class:`~otelbench.model.report.Report`) and, when given,
the plot data (:class:`~otelbench.model.plots.PlotData`,
:func:`otelbench.report.plot_data.plot_data`'s value), with :mod:`otelbench.render.svg`'
charts; the throughput-latency curve is drawn by :func:`throughput_latency` from a multi-level
procedure's curve (:class:`~otelbench.model.plots.ThroughputLatencyCurve`,
:func:`otelbench.report.curve.curve_of`'s value) instead. :mod:`otelbench.render.html` lays
them out on the page.

Usage::

    from otelbench.render.figures import FIGURES, PLOTS, Figure, throughput_latency

    for name, title in PLOTS:
        fig = Figure(name, title)
        if name == "throughput_latency":
            throughput_latency(fig, curve)       # None: no multi-level procedure
        else:
            FIGURES[name](fig, report, plots)    # plots: PlotData, or None
        svg = fig.html()
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any, Final, Literal

from otelbench import draft
from otelbench.model.plots import (
    SINGLE_LEVEL_NOTE,
    CdfSeries,
    HistogramCounts,
    Histograms,
    PlotData,
    PointSeries,
    ThroughputLatencyCurve,
    WaterfallRow,
)
from otelbench.model.report import (
    FluidityIndex,
    InputLengthBucket,
    Report,
    ShortSummary,
    Summary,
)
from otelbench.render.format import fmt, number
from otelbench.render.svg import LOG_AXIS_RATIO, PALETTE, Axis, Chart

__all__ = ["FIGURES", "PLOTS", "Figure", "esc", "html_table", "throughput_latency"]

PLOTS: Final = (
    ("ttft_cdf", "TTFT — cumulative distribution"),
    ("ttft_histogram", "TTFT — histogram"),
    ("ttft_by_input", "TTFT by input length"),
    ("itl_histogram", "Inter-token latency — histogram"),
    ("jitter", "Per-request ITL jitter"),
    ("throughput_latency", "Throughput–latency curve"),
    ("fluidity_cdf", "Fluidity-index — cumulative distribution"),
    ("fairness", "Per-class latency and fairness"),
    ("preemption_timeline", "Preemption timeline"),
    ("waterfall", "Request waterfall (sampled requests)"),
)
"""Every plot of the page: its ``data-plot`` name and its title, in page order."""


# ------------------------------------------------------------------------------------------
# HTML helpers
# ------------------------------------------------------------------------------------------


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _auto_axis(values: Sequence[float], label: str) -> Axis:
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values) and max(values) / min(values) >= LOG_AXIS_RATIO:
        return Axis.logarithmic(values, label + " (log)")
    return Axis.linear(values, label)


class Figure:
    """One ``<figure data-plot>``: an SVG chart, or the reason the run did not measure it."""

    def __init__(self, name: str, title: str) -> None:
        self.name = name
        self.title = title
        self.svg: str | None = None
        self.note: str | None = None
        self.caption: list[str] = []
        self.extra = ""

    def html(self) -> str:
        if self.svg is not None:
            body = self.svg
        else:
            body = f'<p class="absent">not measured in this run: {esc(self.note or "no data")}</p>'
        caption = "".join(f"<p>{esc(line)}</p>" for line in self.caption)
        cls = "plot" if self.svg is not None else "plot absent-plot"
        return (
            f'<figure class="{cls}" data-plot="{esc(self.name)}">'
            f"<h3>{esc(self.title)}</h3>{body}"
            f"<figcaption>{caption}</figcaption>{self.extra}</figure>"
        )


def _percentile_points(
    points: Sequence[tuple[float | None, float]],
) -> tuple[list[float], list[float]]:
    """The (value, fraction) ``points`` whose value is defined, as two lists."""
    xs, ys = [], []
    for value, q in points:
        v = number(value)
        if v is not None:
            xs.append(v)
            ys.append(q)
    return xs, ys


def _summary_points(s: Summary) -> tuple[list[float], list[float]]:
    """A summary's min, percentiles and max with their fractions, ascending."""
    return _percentile_points(
        [
            (s["min"], 0.0),
            (s["p50"], 0.5),
            (s["p90"], 0.9),
            (s["p95"], 0.95),
            (s["p99"], 0.99),
            (s["p99_9"], 0.999),
            (s["max"], 1.0),
        ]
    )


def _fluidity_points(f: FluidityIndex) -> tuple[list[float], list[float]]:
    """A fluidity-index's min, P1, P5 and P50 with their fractions, ascending."""
    return _percentile_points([(f["min"], 0.0), (f["p1"], 0.01), (f["p5"], 0.05), (f["p50"], 0.5)])


_BAR_PERCENTILES: Final[tuple[Literal["p50", "p95", "p99"], ...]] = ("p50", "p95", "p99")


def _percentile_bars(
    rows: Sequence[InputLengthBucket | ShortSummary], prefix: str = ""
) -> list[tuple[str, list[float | None]]]:
    """The series of :func:`_grouped_bars` that show ``rows``' P50, P95 and P99 (one bar a
    row in each), labelled ``{prefix}P50`` …"""
    return [(f"{prefix}{q.upper()}", [number(r[q]) for r in rows]) for q in _BAR_PERCENTILES]


def _grouped_bars(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    x_label: str,
    y_label: str,
    tip: Callable[[str, str, float], str],
) -> str:
    """Grouped bars: one group per category, one bar per series."""
    values = [v for _, vs in series for v in vs if v is not None]
    chart = Chart(Axis.categorical(categories, x_label), Axis.linear(values, y_label))
    width = 0.8 / max(len(series), 1)
    for k, (label, vs) in enumerate(series):
        lefts = [i + 0.1 + k * width for i in range(len(categories))]
        chart.bars(
            lefts,
            [x + width for x in lefts],
            list(vs),
            color=PALETTE[k % len(PALETTE)],
            label=label,
            tips=[
                tip(cat, label, v) if v is not None else ""
                for cat, v in zip(categories, vs, strict=True)
            ],
        )
    return chart.render(y_label)


# ------------------------------------------------------------------------------------------
# the plots
# ------------------------------------------------------------------------------------------


_CDF_SAMPLING: Final = "at evenly spread ranks, the first and the last kept"
_POINT_SAMPLING: Final = "evenly spread requests in submit order"


def _sampling(obj: CdfSeries | PointSeries, drawn: int, how: str) -> list[str]:
    """The caption that says a series was thinned to ``drawn`` of its ``count`` points
    (:func:`plot_data` keeps at most ``MAX_POINTS`` per series), or nothing."""
    count = obj["count"]
    if count <= drawn:
        return []
    return [f"{drawn:,} of {count:,.0f} points drawn, {how}; the statistics use all of them."]


def _ttft_cdf(fig: Figure, report: Report, plots: PlotData | None) -> None:
    client = plots["ttft_ms"]["client"] if plots is not None else None
    server = plots["ttft_ms"]["server"] if plots is not None else None
    if client is not None:
        cx, cf = client["values"], client["fractions"]
        sx = server["values"] if server is not None else []
        chart = Chart(_auto_axis(cx + sx, "TTFT (ms)"), Axis.fixed(0, 1, "fraction of requests"))
        chart.step_cdf(cx, cf, color=PALETTE[0], label="client", series="client")
        fig.caption.append(f"Client TTFT of {client['count']} successful requests.")
        fig.caption += _sampling(client, len(cx), _CDF_SAMPLING)
        if server is not None:
            chart.step_cdf(
                sx, server["fractions"], color=PALETTE[1], label="server", series="server"
            )
            fig.caption.append(
                f"Server TTFT of {server['count']} joined server spans, from the request's "
                "arrival in the engine."
            )
            fig.caption += _sampling(server, len(sx), _CDF_SAMPLING)
        p99 = number(report["metrics"]["client"]["ttft_ms"]["p99"])
        if p99 is not None:
            chart.vline(p99, color="#555", text="client P99", series="client_p99")
        fig.svg = chart.render(fig.title)
        return
    xs, ys = _summary_points(report["metrics"]["client"]["ttft_ms"])
    if not xs:
        fig.note = "no successful request had a content token"
        return
    chart = Chart(_auto_axis(xs, "TTFT (ms)"), Axis.fixed(0, 1, "fraction of requests"))
    chart.line(xs, ys, color=PALETTE[0], label="client (reported percentiles)", series="client")
    chart.points(xs, ys, color=PALETTE[0], series="client", tips=[f"{x:.2f} ms" for x in xs])
    fig.caption.append(
        "Drawn through the report's min, percentiles and max: report.json holds no per-request "
        "TTFT (no plot data)."
    )
    fig.svg = chart.render(fig.title)


def _histogram_chart(
    hist: Histograms, labels: tuple[str, str], x_label: str
) -> tuple[str, list[str]]:
    """The client and server series of ``hist`` (those with samples) as bars, labelled
    ``labels``, and their captions."""
    edges = hist["edges"]
    present = [
        (key, label, h)
        for key, label, h in (
            ("client", labels[0], hist["client"]),
            ("server", labels[1], hist["server"]),
        )
        if h is not None
    ]
    log = hist["log"]
    width = edges[-1] - edges[0]
    overflow_edge = edges[-1] + width / max(len(edges) - 1, 1) * 2
    any_overflow = any(h["overflow"] > 0 for _, _, h in present)
    x_values = [*edges, overflow_edge] if any_overflow and not log else edges
    x_axis = (
        Axis.logarithmic(x_values, x_label + " (log)") if log else Axis.linear(x_values, x_label)
    )
    heights = [float(v) for _, _, h in present for v in [*h["counts"], h["overflow"]]]
    y_label = "requests" if "TTFT" in x_label else "samples"
    chart = Chart(x_axis, Axis.linear(heights, y_label, integer=True))
    captions = []
    share = 1.0 / len(present)
    for k, (key, label, h) in enumerate(present):
        counts = _bar_heights(h)
        lefts, rights = [], []
        for lo, hi in itertools.pairwise(edges):
            if log:
                ll, lh = math.log10(lo), math.log10(hi)
                lefts.append(10 ** (ll + (lh - ll) * share * k))
                rights.append(10 ** (ll + (lh - ll) * share * (k + 1)))
            else:
                lefts.append(lo + (hi - lo) * share * k)
                rights.append(lo + (hi - lo) * share * (k + 1))
        tips = [
            f"{label}: {int(n)} in [{lo:.3g}, {hi:.3g}) ms"
            for n, lo, hi in zip(counts, edges[:-1], edges[1:], strict=True)
        ]
        chart.bars(lefts, rights, counts, color=PALETTE[k], label=label, tips=tips, series=key)
        overflow = h["overflow"]
        if overflow and not log:
            chart.bars(
                [edges[-1] + (overflow_edge - edges[-1]) * (0.25 + 0.25 * k)],
                [edges[-1] + (overflow_edge - edges[-1]) * (0.5 + 0.25 * k)],
                [float(overflow)],
                color=PALETTE[k],
                tips=[f"{label}: {overflow} beyond {edges[-1]:.3g} ms"],
                series=f"{key}_overflow",
                opacity=0.4,
            )
        captions.append(
            f"{label}: {h['count']} samples"
            + (
                f", {overflow} beyond {edges[-1]:.4g} ms (the pale bar past the last bin)"
                if overflow
                else ""
            )
            + "."
        )
    return chart.render(x_label), captions


def _bar_heights(h: HistogramCounts) -> list[float]:
    """A histogram series' bin counts as bar heights."""
    return [float(k) for k in h["counts"]]


def _not_drawn(fig: Figure, plots: PlotData | None, empty: str, needs: str) -> None:
    """The note of a figure without its series: ``empty`` when the plot data lacks it, else
    that report.json holds no ``needs`` (the figure is drawn from plot data only)."""
    fig.note = (
        empty
        if plots is not None
        else f"report.json holds no {needs}: otelbench report draws it from the span store"
    )


def _ttft_histogram(fig: Figure, report: Report, plots: PlotData | None) -> None:
    hist = plots["ttft_histogram_ms"] if plots is not None else None
    if hist is None:
        _not_drawn(fig, plots, "no per-request TTFT in the plot data", "per-request TTFT")
        return
    fig.svg, fig.caption = _histogram_chart(hist, ("client", "server"), "TTFT (ms)")


_BUCKET_LINES: Final[tuple[tuple[Literal["p50", "p99"], str, str], ...]] = (
    ("p50", PALETTE[2], "bucket P50"),
    ("p99", PALETTE[1], "bucket P99"),
)
"""The TTFT percentiles drawn as each input-length bucket's segment: key, colour, label."""


def _ttft_by_input(fig: Figure, report: Report, plots: PlotData | None) -> None:
    filled = [b for b in report["metrics"]["client"]["ttft_by_input_tokens"] if b["count"] > 0]
    pts = plots["ttft_by_input"] if plots is not None else None
    if pts is not None:
        xs, ys = pts["x"], pts["y"]
        chart = Chart(Axis.linear(xs, "input tokens"), _auto_axis(ys, "TTFT (ms)"))
        chart.points(
            xs,
            ys,
            color=PALETTE[0],
            label="request",
            tips=[f"{x:.0f} tokens, TTFT {y:.2f} ms" for x, y in zip(xs, ys, strict=True)],
            series="request",
        )
        for key, color, name in _BUCKET_LINES:
            for b in filled:
                v = number(b[key])
                lo = max(float(b["min_tokens"]), chart.x.lo)
                top = number(b["max_tokens_exclusive"])
                hi = min(top if top is not None else chart.x.hi, chart.x.hi)
                if v is not None and hi > lo:
                    chart.line([lo, hi], [v, v], color=color, label=name, series=key)
        fig.caption.append(
            f"{pts['count']} successful requests; horizontal segments are each input-length "
            "bucket's TTFT P50 and P99 (draft 5.1.4.2)."
        )
        fig.caption += _sampling(pts, len(xs), _POINT_SAMPLING)
        fig.svg = chart.render(fig.title)
        return
    if not filled:
        fig.note = "no successful request had both a TTFT and an input length"
        return
    fig.svg = _grouped_bars(
        [b["bucket"] for b in filled],
        _percentile_bars(filled),
        x_label="input tokens",
        y_label="TTFT (ms)",
        tip=lambda cat, label, v: f"{cat} tokens: TTFT {label} {v:.2f} ms",
    )
    fig.caption.append(
        "TTFT percentiles by input-length bucket (draft 5.1.4.2); buckets without requests "
        "are left out. " + ", ".join(f"{b['bucket']}: {b['count']} requests" for b in filled) + "."
    )


def _itl_histogram(fig: Figure, report: Report, plots: PlotData | None) -> None:
    hist = plots["itl_histogram_ms"] if plots is not None else None
    if hist is None:
        _not_drawn(fig, plots, "no ITL sample in the plot data", "ITL samples")
        return
    fig.svg, fig.caption = _histogram_chart(
        hist, ("client (Option B)", "server (Option C)"), "ITL (ms)"
    )
    fig.caption.append(
        "Option B gives a chunk of N tokens N − 1 zero intervals; Option C is at engine-step "
        "resolution (draft 4.6.3)."
    )


def _jitter(fig: Figure, report: Report, plots: PlotData | None) -> None:
    client = plots["jitter_ms"]["client"] if plots is not None else None
    server = plots["jitter_ms"]["server"] if plots is not None else None
    drawn = [
        (key, label, obj["x"], obj["y"], obj)
        for key, label, obj in (
            ("client", "client (Option B)", client),
            ("server", "server (Option C)", server),
        )
        if obj is not None
    ]
    if drawn:
        all_x = [x for d in drawn for x in d[2]]
        all_y = [y for d in drawn for y in d[3]]
        chart = Chart(
            Axis.linear(all_x, "request submitted (s since the first)"),
            Axis.linear(all_y, "ITL jitter (ms)"),
        )
        for k, (key, label, xs, ys, obj) in enumerate(drawn):
            chart.points(
                xs,
                ys,
                color=PALETTE[k],
                label=label,
                tips=[f"{label}: {y:.3f} ms at {x:.2f} s" for x, y in zip(xs, ys, strict=True)],
                series=key,
            )
            fig.caption.append(f"{label}: {obj['count']} requests with ≥ 2 ITL samples.")
            fig.caption += _sampling(obj, len(xs), _POINT_SAMPLING)
        fig.caption.append(
            "Jitter is each request's ITL population standard deviation (draft 5.4.4.2)."
        )
        fig.svg = chart.render(fig.title)
        return
    server_metrics = report["metrics"].get("server")
    server_per_request = (
        server_metrics.get("itl_per_request") if server_metrics is not None else None
    )
    sides: tuple[tuple[str, ShortSummary | None], ...] = (
        ("client", report["metrics"]["client"]["itl_per_request"]["jitter_ms"]),
        ("server", server_per_request["jitter_ms"] if server_per_request is not None else None),
    )
    shown = [(label, j) for label, j in sides if j is not None and number(j["p50"]) is not None]
    if not shown:
        fig.note = "no request had 2 or more ITL samples"
        return
    fig.svg = _grouped_bars(
        [label for label, _ in shown],
        _percentile_bars([j for _, j in shown]),
        x_label="side",
        y_label="ITL jitter (ms)",
        tip=lambda cat, label, v: f"{cat} jitter {label}: {v:.3f} ms",
    )
    fig.caption.append(
        "Percentiles over requests of each request's ITL jitter (draft 5.4.4.2); per-request "
        "values need plot data."
    )


def throughput_latency(fig: Figure, curve: ThroughputLatencyCurve | None) -> None:
    """The throughput-latency curve of a multi-level procedure (draft 5.3.4), as
    :func:`otelbench.report.curve.curve_of` made it, or why there is none (None: no procedure, a
    single run)."""
    note = SINGLE_LEVEL_NOTE if curve is None else curve["note"]
    if curve is None or note is not None:
        fig.note = note
        return
    thr, p99, slo = curve["thr"], curve["p99"], curve["slo_p99_ms"]
    knee, saturation = curve["knee"], curve["saturation"]
    peak, optimal = curve["peak"], curve["optimal"]
    metric, load, unit = curve["metric"], curve["load"], curve["load_unit"]

    def name(k: int) -> str:
        return f"{load[k]:g} {unit}"

    chart = Chart(
        Axis.linear(thr, "achieved output throughput (tokens/s)"),
        Axis.linear([*p99, *([slo] if slo is not None else [])], f"{metric} P99 (ms)"),
    )
    chart.line(thr, p99, color=PALETTE[0], label=f"{metric} P99 per load level", series="curve")
    chart.points(
        thr,
        p99,
        color=PALETTE[0],
        tips=[
            f"{name(k)}: {t:.1f} tokens/s, P99 {p:.1f} ms"
            for k, (t, p) in enumerate(zip(thr, p99, strict=True))
        ],
        radius=3.5,
        series="level",
        opacity=1.0,
    )
    if slo is not None:
        chart.hline(slo, color=PALETTE[2], text=f"SLO {slo:g} ms", series="slo")
    if knee is not None:
        chart.marker(thr[knee], p99[knee], f"knee ({name(knee)})", color=PALETTE[3])
    if saturation is not None:
        chart.vline(
            thr[saturation],
            color=PALETTE[1],
            text=f"saturation ({name(saturation)})",
            series="saturation",
        )
    if peak is not None and peak != knee:
        chart.marker(thr[peak], p99[peak], f"peak ({name(peak)})", color=PALETTE[4])
    if optimal is not None and optimal not in (knee, peak):
        chart.marker(thr[optimal], p99[optimal], f"optimal ({name(optimal)})", color=PALETTE[2])
    fig.caption.append(
        f"{len(thr)} load levels by {curve['load_key']}. Knee: the first level whose P99 exceeds "
        "2 × the lowest P99; saturation: the first level whose throughput falls below the "
        "previous level's (draft 5.3.4)."
    )
    if curve["dropped"]:
        fig.caption.append(
            f"{curve['dropped']} level(s) without a load, throughput or P99 are left out."
        )
    if knee is None:
        fig.caption.append("No knee: P99 never exceeded 2 × its minimum.")
    if saturation is None:
        fig.caption.append("No saturation point: throughput never decreased.")
    fig.svg = chart.render(fig.title)


def _prefill_deadline_text(fixed_ms: Any) -> str:
    """The fluidity plot's ``D_p``: the fixed value, or Etalon's profiled ``D_p(L)``."""
    if number(fixed_ms) is None:
        return "D_p(L) = prefill(L) + S, profiled from the run's isolated requests"
    return f"D_p {fmt(fixed_ms, 0)} ms"


def _fluidity_cdf(fig: Figure, report: Report, plots: PlotData | None) -> None:
    section = report["metrics"].get("fluidity")
    fluid = plots["fluidity"] if plots is not None else None
    min_fluidity = (
        number(section["min_fluidity"]) if section is not None else None
    ) or draft.FLUIDITY_MIN_INDEX
    chart = Chart(Axis.fixed(0, 1, "fluidity-index"), Axis.fixed(0, 1, "fraction of requests"))
    drawn = 0
    if fluid is not None:
        rows = fluid["deadlines"]
        for k, row in enumerate(rows):
            cdf = row["cdf"]
            if cdf is not None:
                label = f"{row['preset']} (D_d {fmt(row['decode_deadline_ms'], 0)} ms)"
                chart.step_cdf(
                    cdf["values"],
                    cdf["fractions"],
                    color=PALETTE[k % 8],
                    label=label,
                    series=row["preset"],
                )
                drawn += 1
        if drawn:
            fig.caption.append(
                f"Etalon §4.1 fluidity-index per request ({fluid['source']} timeline, "
                f"{_prefill_deadline_text(fluid['prefill_deadline_ms'])})."
            )
            first = rows[0]["cdf"]
            if first is not None:
                fig.caption += _sampling(first, len(first["values"]), _CDF_SAMPLING)
    if not drawn and section is not None:
        for k, reported in enumerate(section["deadlines"]):
            xs, ys = _fluidity_points(reported["fluidity_index"])
            if xs:
                label = f"{reported['preset']} (D_d {fmt(reported['decode_deadline_ms'], 0)} ms)"
                chart.line(xs, ys, color=PALETTE[k % 8], label=label, series=reported["preset"])
                chart.points(xs, ys, color=PALETTE[k % 8], series=reported["preset"])
                drawn += 1
        if drawn:
            fig.caption.append(
                "Drawn through the report's min, P1, P5 and P50 of the index (no plot data)."
            )
    if not drawn:
        fig.note = "no successful request had a token on the timeline"
        return
    chart.vline(min_fluidity, color="#555", text=f"fluid ≥ {min_fluidity:g}", series="min")
    rate = section["fluid_token_generation_rate"] if section is not None else None
    if rate is not None:
        fig.caption.append(
            f"Fluid token generation rate: {fmt(rate['tokens_per_s'], 1)} tokens/s "
            f"(D_d {fmt(rate['decode_deadline_ms'], 1)} ms)."
        )
    fig.svg = chart.render(fig.title)


def _fairness(fig: Figure, report: Report, plots: PlotData | None) -> None:
    section = report["metrics"].get("classes")
    if section is None or not section["by_class"]:
        fig.note = "fewer than two request classes among the successful requests"
        return
    by_class = section["by_class"]
    fig.svg = _grouped_bars(
        list(by_class),
        _percentile_bars([r["ttft_ms"] for r in by_class.values()], "TTFT "),
        x_label="request class",
        y_label="TTFT (ms)",
        tip=lambda cat, label, v: f"class {cat}: {label} {v:.2f} ms",
    )
    jain = number(section["jain_index"])
    fig.caption.append(
        f"Jain's fairness index J = {fmt(jain, 3)} over {section['jain_requests']} "
        "requests (J < 0.9: significant unfairness; draft 5.6.4)."
        if jain is not None
        else "Jain's fairness index: n/a."
    )
    fig.extra = html_table(
        ("class", "requests", "TTFT P50 ms", "TTFT P99 ms", "TPOT P50 ms", "starvation rate"),
        [
            (
                name,
                str(r["count"]),
                fmt(r["ttft_ms"]["p50"]),
                fmt(r["ttft_ms"]["p99"]),
                fmt(r["tpot_ms"]["p50"]),
                fmt(r["starvation_rate"], 3),
            )
            for name, r in by_class.items()
        ],
        cls="compact",
    )


def _preemption_timeline(fig: Figure, report: Report, plots: PlotData | None) -> None:
    p = plots["preemptions"] if plots is not None else None
    if p is None:
        server = report["metrics"].get("server")
        stats = server.get("preemptions") if server is not None else None
        if stats is not None:
            fig.note = (
                f"{stats['total']} preemptions over {stats['requests_observed']} "
                "requests; their times need plot data"
            )
        else:
            fig.note = "no engine-hook server span was joined (preemptions are not observed)"
        return
    pre = p["preempted"]
    ts = pre["time_s"]
    cum = [float(v) for v in pre["cumulative"]]
    counts = [float(v) for v in pre["preemptions"]]
    stalls = pre["stall_ms"]  # None: never resumed
    window = p["window_s"] or (max(ts) if ts else 1.0)
    total = p["total"]
    at_events = p["placement"].startswith("at each preemption event")
    chart = Chart(
        Axis.linear([0.0, window, *ts], "time (s since the first T_submit)"),
        Axis.linear([0.0, max(float(total), 1.0), *cum], "preemptions so far"),
    )
    xs, ys = [0.0], [0.0]
    for t, v in zip(ts, cum, strict=True):
        xs += [t, t]
        ys += [ys[-1], v]
    xs.append(window)
    ys.append(ys[-1])
    chart.line(xs, ys, color=PALETTE[1], label="cumulative preemptions", series="cumulative")
    if ts:
        chart.points(
            ts,
            cum,
            color=PALETTE[1],
            label="preemption (engine time)" if at_events else "preempted request (at its arrival)",
            tips=[
                f"preempted at {t:.3f} s, stalled {fmt(s, 1, 'ms')}"
                if at_events
                else f"{int(k)} preemption(s), stalled {fmt(s, 1, 'ms')}, arrived {t:.2f} s"
                for t, k, s in zip(ts, counts, stalls, strict=True)
            ],
            radius=3.5,
            series="request",
            opacity=1.0,
        )
    fig.caption.append(
        f"{total} preemptions over {p['requests_observed']} observed requests"
        + (" — no preemption in this run." if total == 0 else ".")
        + (
            " Each preemption is placed at its time in the engine (the hooks' preemption "
            "events; draft 5.8.4)."
            if at_events
            else " Event times are not recorded: each preemption is placed at its request's "
            "arrival in the engine (draft 5.8.4)."
        )
    )
    fig.svg = chart.render(fig.title)


_WATERFALL_PHASES: Final[
    tuple[tuple[Literal["pre_queue_ms", "queue_ms", "prefill_ms", "decode_ms"], str, str], ...]
] = (
    ("pre_queue_ms", "arrival → queued", "#9edae5"),
    ("queue_ms", "queue", PALETTE[3]),
    ("prefill_ms", "prefill", PALETTE[1]),
    ("decode_ms", "decode", PALETTE[2]),
)


def _waterfall_row_label(row: WaterfallRow) -> str:
    label = f"#{row['request']}"
    if row["class"] is not None:
        label += f" {row['class']}"
    return label


def _waterfall_plot(fig: Figure, report: Report, plots: PlotData | None) -> None:
    w = plots["waterfall"] if plots is not None else None
    if w is None or not w["requests"]:
        _not_drawn(fig, plots, "no successful request to sample", "per-request timings")
        return
    rows = w["requests"]
    n = len(rows)
    ends: list[float] = []
    for r in rows:
        ends += [v for v in (number(r["end_ms"]), number(r["ttft_ms"])) if v is not None]
        srv = r["server"]
        if srv is not None:
            t = srv["arrival_ms"] or 0.0
            for key, _, _ in _WATERFALL_PHASES:
                t += number(srv[key]) or 0.0
            ends.append(t)
        g = r["guardrail_ms"]
        if g is not None:
            ends.append(g[1])
    labels = [_waterfall_row_label(r) for r in reversed(rows)]
    chart = Chart(
        Axis.linear(ends, "ms since the request's T_submit"),
        Axis.categorical(labels, "request"),
        height=max(240, 90 + 30 * n),
        left=120,
    )
    guardrail_seen = False
    for k, r in enumerate(rows):
        slot = n - 1 - k
        name = _waterfall_row_label(r)
        ttft, end = number(r["ttft_ms"]), number(r["end_ms"])
        top = slot + 0.88
        if ttft is not None:
            chart.span(
                0.0,
                ttft,
                top - 0.3,
                top,
                color="#c7c7c7",
                label="client: waiting for 1st token",
                tip=f"{name}: TTFT {ttft:.2f} ms",
                series="client_wait",
            )
        if end is not None and ttft is not None and end > ttft:
            chart.span(
                ttft,
                end,
                top - 0.3,
                top,
                color="#7f7f7f",
                label="client: streaming",
                tip=f"{name}: streaming {end - ttft:.2f} ms, end {end:.2f} ms",
                series="client_stream",
            )
        srv = r["server"]
        if srv is not None:
            t = srv["arrival_ms"] or 0.0
            for key, label, color in _WATERFALL_PHASES:
                d = number(srv[key])
                if d is None:
                    continue
                d = max(d, 0.0)
                chart.span(
                    t,
                    t + d,
                    slot + 0.12,
                    slot + 0.48,
                    color=color,
                    label=label,
                    tip=f"{name}: {label} {d:.2f} ms",
                    series=key.removesuffix("_ms"),
                )
                t += d
        g = r["guardrail_ms"]
        if g is not None:
            g0, g1 = g
            if g1 >= g0:
                guardrail_seen = True
                chart.span(
                    g0,
                    g1,
                    slot + 0.12,
                    slot + 0.48,
                    color=PALETTE[4],
                    label="guardrail",
                    tip=f"{name}: guardrail {g1 - g0:.2f} ms",
                    series="guardrail",
                )
    fig.caption.append(
        f"{n} of {w['of']} successful requests, sampled with seed {w['seed']}. "
        "Upper bar: the client's wait for the first token and the stream; lower bar: the "
        "server's phases (arrival → queued, queue, prefill, decode)."
    )
    if not guardrail_seen:
        fig.caption.append("Guardrail: not measured in this run (no guardrail span recorded).")
    fig.caption.append(f"Server phases: {w['server_placement']}.")
    fig.svg = chart.render(fig.title)


FIGURES: Final[Mapping[str, Callable[[Figure, Report, PlotData | None], None]]] = {
    "ttft_cdf": _ttft_cdf,
    "ttft_histogram": _ttft_histogram,
    "ttft_by_input": _ttft_by_input,
    "itl_histogram": _itl_histogram,
    "jitter": _jitter,
    "fluidity_cdf": _fluidity_cdf,
    "fairness": _fairness,
    "preemption_timeline": _preemption_timeline,
    "waterfall": _waterfall_plot,
}
"""The figure of each ``data-plot`` name of :data:`PLOTS` but ``throughput_latency``, drawn from
the report and the plot data (None: none given); :func:`throughput_latency` draws that one from a
procedure block."""
