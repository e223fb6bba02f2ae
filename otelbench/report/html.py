"""Render a run report as one self-contained HTML page with inline SVG plots (issue 5).

:func:`render_html` takes the ``report.json`` dict (``docs/report-schema.md``) and, optionally,
the compact per-request plot data of :func:`plot_data` (or finds it under the report's
``plots`` key). It returns one HTML document that opens offline: no script, style sheet, font
or image is loaded from anywhere; the plots are inline SVG drawn by
:mod:`otelbench.report.plots`, hover text is SVG ``<title>``, and one short inline script at the
end marks the page (``<html data-script="ok" data-plots="…" data-plots-drawn="…">``) so a
headless browser can prove that every plot drew with no script error.

Plots, each a ``<figure data-plot="NAME">``, in this order (:data:`PLOTS`):

========================  ====================================================================
``ttft_cdf``              client (and server) TTFT CDF; from the reported percentiles alone
                          when there is no plot data
``ttft_histogram``        TTFT histogram (plot data)
``ttft_by_input``         TTFT against input length: per-request points with each bucket's
                          P50/P99, or the buckets' P50/P95/P99 bars from the report
``itl_histogram``         client Option B and server Option C ITL histograms (plot data)
``jitter``                per-request ITL jitter over the run, or its P50/P95/P99 bars
``throughput_latency``    throughput-latency curve with knee and saturation marked, from a
                          multi-level procedure block (:data:`CURVE_SHAPE`)
``fluidity_cdf``          fluidity-index CDF per Etalon decode-deadline preset
``fairness``              per-class TTFT percentiles, Jain's index and starvation
``preemption_timeline``   cumulative preemptions over the run (plot data)
``waterfall``             queue / prefill / decode / guardrail of a few sampled requests next to
                          the client's wait and stream (plot data)
========================  ====================================================================

A plot whose data the run lacks shows "not measured in this run" and why, never an empty axis.
Tables carry the headline numbers (client vs server TTFT, ITL, TPOT, e2e), the deviations and
the methodology declarations. All text is escaped.

Usage::

    from otelbench.query import extract_run_data, open_store
    from otelbench.report import report_from_data
    from otelbench.report.html import plot_data, render_html

    with open_store("otelbench.duckdb") as runner:
        data = extract_run_data(runner)
    page = render_html(report_from_data(data), plot_data(data))
    open("report.html", "w").write(page)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.metrics import (
    DECODE_DEADLINE_PRESETS_S,
    OrderStatistics,
    Ragged,
    group_first,
    throughput_latency_points,
)
from otelbench.metrics.summary import AnyOrderStatistics, type7_interpolate, type7_ranks
from otelbench.query import RunData
from otelbench.report.access import NA, dig, fmt, load_text, mapping, number
from otelbench.report.markdown import server_timing_text
from otelbench.report.plots import PALETTE, Axis, Chart
from otelbench.report.sections import (
    DEFAULT_PREFILL_DEADLINE_S,
    MIN_FLUIDITY,
    client_itl_order,
    client_jitter_us,
    fluidity_indices_of,
    fluidity_intervals,
    server_is_hook,
    server_itl_order,
    server_jitter_us,
    server_token_offsets_us,
)

__all__ = [
    "CURVE_SHAPE",
    "MAX_POINTS",
    "PLOTS",
    "PLOT_DATA_VERSION",
    "plot_data",
    "render_html",
    "render_procedure_html",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

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

MAX_POINTS: Final = 2000
"""The most points :func:`plot_data` keeps in one series (downsampled deterministically)."""
PLOT_DATA_VERSION: Final = 1
"""Version of :func:`plot_data`'s shape."""
HISTOGRAM_BINS: Final = 40
HISTOGRAM_PERCENTILES: Final = (99.0,)
"""What a histogram reads of each series besides its smallest and largest sample: the P99 that
caps a linear axis (the pooled P99's tail is read from each series' P99 partition)."""
LOG_AXIS_RATIO: Final = 50.0
"""A positive series spanning at least this max/min ratio gets a log axis."""

CURVE_SHAPE: Final = (
    'report["procedure"] = {"levels": [level row, ...], optional "latency_metric" ("ttft" by '
    'default, or "tpot", "e2e"), optional "knee", "saturation", "peak", "optimal" (indices '
    'into levels, or null) and "slo_p99_ms"}. A level row (the procedures\' level rows fit) '
    'has "offered_rps" (or, when any level lacks it, "concurrency"), "output_tokens_per_s" and '
    '"<latency_metric>_p99_ms" (or "p99_ms"); levels must ascend in load, and levels missing '
    "a value are left out. Missing knee/saturation/peak/optimal are derived by "
    "otelbench.metrics.throughput_latency_points (draft 5.3.4)"
)
"""The multi-level procedure block the throughput-latency plot accepts."""


# ------------------------------------------------------------------------------------------
# plot data: compact per-request arrays from the records
# ------------------------------------------------------------------------------------------


def _rounded(values: npt.ArrayLike, digits: int) -> list[float | None]:
    a = np.asarray(values, dtype=np.float64)
    return [round(float(v), digits) if math.isfinite(v) else None for v in a.tolist()]


def _even_indices(n: int, m: int) -> I64:
    """At most ``m`` indices spread evenly over ``range(n)``, first and last included."""
    if n <= m:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.rint(np.linspace(0, n - 1, m)).astype(np.int64))


def _finite(values: npt.ArrayLike) -> F64:
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    return a if finite.all() else a[finite]  # no copy of 10M samples when all defined


def _cdf(values: npt.ArrayLike, max_points: int, digits: int = 3) -> dict[str, Any] | None:
    """Sorted samples and their empirical CDF fraction ``(rank + 1) / n``, at most
    ``max_points`` of them at evenly spread ranks (the first and the last kept)."""
    v = np.sort(_finite(values))
    if v.size == 0:
        return None
    ranks = _even_indices(int(v.size), max_points)
    return {
        "count": int(v.size),
        "values": _rounded(v[ranks], digits),
        "fractions": _rounded((ranks + 1) / v.size, 6),
    }


def _order_of_finite(values: npt.ArrayLike) -> OrderStatistics:
    """The order statistics of the finite samples of ``values`` that a histogram reads."""
    return OrderStatistics.of(_finite(values), HISTOGRAM_PERCENTILES)


def _pooled_percentile(series: Sequence[AnyOrderStatistics], q: float) -> float:
    """``np.percentile(np.concatenate(samples), q)`` without pooling the samples: the two order
    statistics it interpolates are among the pool's ``n - i`` largest samples (``i`` the lower
    rank), which are among each series' ``n - i`` largest (``largest`` of
    :class:`~otelbench.metrics.summary.OrderStatistics` or ``CountedOrderStatistics``, which may
    give more: the ranks are counted from the pool's size)."""
    n = sum(v.size for v in series)
    lower, upper, weight = type7_ranks(n, q)
    top = n - int(lower)
    tail = np.sort(np.concatenate([v.largest(top) for v in series]))
    skipped = n - tail.size  # the pool's ranks below the tail's first sample
    return float(type7_interpolate(tail[lower - skipped], tail[upper - skipped], weight))


def _bin_counts(
    samples: F64, edges: F64, *, linear: bool, counts: I64 | None = None
) -> tuple[I64, int]:
    """Samples counted in the bins ``[edges[k], edges[k+1])``, the last bin closed, none below
    the first edge (``numpy.histogram``'s bins), and how many lie past the last edge.
    ``linear`` edges are ``np.linspace(edges[0], edges[-1], len(edges))``: numpy then bins
    each sample by arithmetic, not by a binary search.

    ``counts`` are how many times each of ``samples`` occurs (once each when None): numpy bins
    each value alone, by the same arithmetic or search, so a value counted ``c`` times adds
    ``c`` to the bin all its copies would fall in (integer weights: integer sums, exact).
    """
    if linear:
        hist = np.histogram(
            samples, bins=edges.size - 1, range=(edges[0], edges[-1]), weights=counts
        )[0]
    else:
        hist = np.histogram(samples, bins=edges, weights=counts)[0]
    beyond = samples > edges[-1]
    overflow = np.count_nonzero(beyond) if counts is None else np.sum(counts[beyond])
    return hist, int(overflow)


def _histograms(
    series: Mapping[str, AnyOrderStatistics], *, allow_log: bool, bins: int = HISTOGRAM_BINS
) -> dict[str, Any] | None:
    """Histograms of several series on shared bin edges; each series is the order statistics
    of its finite samples (:func:`_order_of_finite`, or any made for
    :data:`HISTOGRAM_PERCENTILES`, or counted: ``CountedOrderStatistics``).

    Log-spaced edges when ``allow_log`` and every sample is positive with max/min ≥
    :data:`LOG_AXIS_RATIO`; otherwise linear from 0 (or the minimum, if negative) to the
    maximum, or to 1.5 × the pooled P99 when the maximum lies beyond 4 × P99 — samples past
    that edge are counted in ``overflow``. The counts are ``numpy.histogram``'s over those
    edges.
    """
    nonempty = [v for v in series.values() if v.size]
    if not nonempty:
        return None
    lo, hi = min(v.min for v in nonempty), max(v.max for v in nonempty)
    log = bool(allow_log and lo > 0 and hi / lo >= LOG_AXIS_RATIO)
    if log:
        edges = np.geomspace(lo, hi, bins + 1)
    else:
        start = min(lo, 0.0)
        p99 = _pooled_percentile(nonempty, 99)
        cap = 1.5 * p99 if p99 > start and hi > 4 * p99 else hi
        if cap <= start:
            cap = start + 1.0
        edges = np.linspace(start, cap, bins + 1)
    out: dict[str, Any] = {"log": log, "edges": _rounded(edges, 4)}
    for name, v in series.items():
        if v.size == 0:
            out[name] = None
            continue
        values, multiplicity = v.samples()
        counts, overflow = _bin_counts(values, edges, linear=not log, counts=multiplicity)
        out[name] = {
            "count": int(v.size),
            "counts": [int(k) for k in counts],
            "overflow": overflow,
        }
    return out


def _points(
    x: F64, y: F64, max_points: int, x_digits: int = 3, y_digits: int = 3
) -> dict[str, Any] | None:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size == 0:
        return None
    idx = _even_indices(int(x.size), max_points)
    return {"count": int(x.size), "x": _rounded(x[idx], x_digits), "y": _rounded(y[idx], y_digits)}


def _server_span_of(data: RunData, i: int) -> int | None:
    """Client request ``i``'s server span (the engine-hook span when it has several), if any."""
    spans = np.flatnonzero(data.server.client_index == i)
    hooks = spans[server_is_hook(data)[spans]]
    if hooks.size:
        return int(hooks[0])
    return int(spans[0]) if spans.size else None


def _server_ttft_ms(data: RunData) -> F64:
    """Per server span: the first token offset when it has offsets, else vLLM's latency key
    (as ``metrics.server.ttft_ms``)."""
    s = data.server
    tokens = server_token_offsets_us(data)
    first = group_first(tokens) / 1000.0
    return np.where(tokens.lengths() > 0, first, s.ttft_s * 1000.0)


def plot_data(
    data: RunData,
    *,
    max_requests_waterfall: int = 12,
    seed: int = 0,
    prefill_deadline_s: float = DEFAULT_PREFILL_DEADLINE_S,
    max_points: int = MAX_POINTS,
) -> dict[str, Any]:
    """Compact per-request arrays for the HTML report's plots (pure: no I/O, deterministic).

    Bounded in size: each series holds at most ``max_points`` values (CDFs keep evenly spread
    ranks, point series evenly spread requests), histograms are precomputed counts, and the
    waterfall holds at most ``max_requests_waterfall`` requests sampled with
    ``numpy.random.default_rng(seed)``. JSON-able: numbers, strings, lists, dicts, None for an
    undefined number. Times on the run's axis are seconds since the run's first T_submit
    (client wall clock); ``prefill_deadline_s`` must match the report's ``D_p``. The same
    populations as the report: client latencies over successful requests, server ones over
    joined server spans.

    >>> pd = plot_data(data, max_requests_waterfall=8)  # doctest: +SKIP
    >>> pd["ttft_ms"]["client"]["count"]  # doctest: +SKIP
    998
    """
    if max_points < 2:
        raise ValueError("max_points must be >= 2")
    if max_requests_waterfall < 0:
        raise ValueError("max_requests_waterfall must be >= 0")
    c, s = data.client, data.server
    ok = c.ok
    origin_ns = int(c.submit_unix_ns.min()) if len(c) else int(data.run.span_start_unix_ns)
    submit_s = (c.submit_unix_ns - origin_ns) / 1e9
    ttft_ms = c.ttft_us / 1000.0
    end_ms = np.where(np.isfinite(c.end_offset_us), c.end_offset_us, c.duration_ns / 1e3) / 1e3
    joined = s.client_index >= 0
    hook = server_is_hook(data)
    server_ttft_ms = _server_ttft_ms(data)

    input_tokens = c.input_tokens.copy()
    rows = s.client_index[joined]
    fill = np.isnan(input_tokens[rows])
    input_tokens[rows[fill]] = s.prompt_tokens[joined][fill]

    # ITL: client Option B (successful requests), server Option C (joined hook spans), as the
    # report derives them (the same arrays, sorted: report.sections.derived)
    with_offsets = joined & hook & (np.diff(s.token_bounds) > 0)

    window_s = float(np.max(submit_s + np.nan_to_num(end_ms) / 1e3)) if len(c) else 0.0
    return {
        "version": PLOT_DATA_VERSION,
        "time_origin": "the run's first T_submit (client wall clock); run times in seconds",
        "window_s": round(window_s, 6),
        "ttft_ms": {
            "client": _cdf(ttft_ms[ok], max_points),
            "server": _cdf(server_ttft_ms[joined], max_points),
        },
        "ttft_histogram_ms": _histograms(
            {
                "client": _order_of_finite(ttft_ms[ok]),
                "server": _order_of_finite(server_ttft_ms[joined]),
            },
            allow_log=True,
        ),
        "ttft_by_input": _points(input_tokens[ok], ttft_ms[ok], max_points, 1, 3),
        "itl_histogram_ms": _histograms(
            {
                "client": client_itl_order(data),
                "server": server_itl_order(data),
            },
            allow_log=False,
        ),
        "jitter_ms": {
            "client": _points(submit_s[ok], client_jitter_us(data) / 1e3, max_points, 6, 4),
            "server": _points(
                submit_s[s.client_index[with_offsets]],
                server_jitter_us(data) / 1e3,
                max_points,
                6,
                4,
            ),
        },
        "fluidity": _fluidity_plot(data, prefill_deadline_s, max_points),
        "preemptions": _preemption_plot(data, origin_ns, window_s, max_points),
        "waterfall": _waterfall(
            data, submit_s, ttft_ms, end_ms, server_ttft_ms, max_requests_waterfall, seed
        ),
    }


def _fluidity_plot(
    data: RunData, prefill_deadline_s: float, max_points: int
) -> dict[str, Any] | None:
    """Per-request fluidity-indices per decode-deadline preset, on ``metrics.fluidity``'s
    timeline and population (:func:`otelbench.report.sections.fluidity_section`)."""
    if not prefill_deadline_s > 0:
        raise ValueError("the prefill deadline must be > 0 s")
    times, source, _ = fluidity_intervals(data)
    if len(times) == 0:
        return None
    return {
        "source": source,
        "prefill_deadline_ms": prefill_deadline_s * 1000.0,
        "min_fluidity": MIN_FLUIDITY,
        "deadlines": [
            {
                "preset": preset,
                "decode_deadline_ms": dd * 1000.0,
                "cdf": _cdf(fluidity_indices_of(data, prefill_deadline_s, dd), max_points, 6),
            }
            for preset, dd in DECODE_DEADLINE_PRESETS_S.items()
        ],
    }


def _preemption_plot(
    data: RunData, origin_ns: int, window_s: float, max_points: int
) -> dict[str, Any] | None:
    """Preempted requests at their arrival in the engine, and the running total.

    The records keep each span's preemption count and resumption stalls, not the events'
    times, so a request's preemptions are placed at its server span's start (its arrival in
    the engine). None when no joined server span is an engine-hook span (nothing observed).
    """
    s = data.server
    observed = (s.client_index >= 0) & server_is_hook(data)
    if not np.any(observed):
        return None
    counts = np.where(np.isfinite(s.preemptions), s.preemptions, s.preemption_events)
    counts = np.nan_to_num(counts[observed])
    arrival_s = (s.start_unix_ns[observed] - origin_ns) / 1e9
    stalls = Ragged(s.stall_us.astype(np.float64), s.stall_bounds).select(observed)
    stall_total_ms = np.zeros(len(stalls))
    has_stalls = stalls.lengths() > 0
    if np.any(has_stalls):  # integer µs: the sums are exact in any order
        stall_total_ms[has_stalls] = (
            np.add.reduceat(stalls.values, stalls.bounds[:-1][has_stalls]) / 1e3
        )
    hit = counts > 0
    order = np.argsort(arrival_s[hit], kind="stable")
    t = arrival_s[hit][order]
    k = counts[hit][order]
    idx = _even_indices(int(t.size), max_points)
    cumulative = np.cumsum(k)
    end_s = max(window_s, float(arrival_s.max()) if arrival_s.size else 0.0)
    return {
        "placement": "at the preempted request's arrival in the engine (server span start)",
        "requests_observed": int(observed.sum()),
        "total": int(counts.sum()),
        "window_s": round(end_s, 6),
        "preempted": {
            "count": int(t.size),
            "arrival_s": _rounded(t[idx], 6),
            "preemptions": [int(v) for v in k[idx]],
            "stall_ms": _rounded(stall_total_ms[hit][order][idx], 3),
            "cumulative": [int(v) for v in cumulative[idx]],
        },
    }


def _input_guardrail_window(data: RunData) -> dict[int, list[float]]:
    """Per client request, [first start, last end] of its input filter spans (ms since
    T_submit)."""
    g, c = data.guardrails, data.client
    out: dict[int, list[float]] = {}
    for i in range(len(g)):
        j = int(g.client_index[i])
        if j < 0 or g.stage[i] != semconv.GUARDRAIL_STAGE_INPUT:
            continue
        start = float(g.start_unix_ns[i] - c.submit_unix_ns[j]) / 1e6
        end = start + float(g.duration_ns[i]) / 1e6
        if j in out:
            out[j] = [min(out[j][0], start), max(out[j][1], end)]
        else:
            out[j] = [start, end]
    return {j: [round(a, 3), round(b, 3)] for j, (a, b) in out.items()}


def _waterfall(
    data: RunData,
    submit_s: F64,
    ttft_ms: F64,
    end_ms: F64,
    server_ttft_ms: F64,
    max_rows: int,
    seed: int,
) -> dict[str, Any]:
    """A few sampled successful requests: the client's wait and stream, and the server's
    phases placed at the server span's start relative to T_submit."""
    c, s = data.client, data.server
    candidates = np.flatnonzero(c.ok)
    k = min(max_rows, int(candidates.size))
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(candidates, size=k, replace=False)) if k else candidates[:0]
    guard = _input_guardrail_window(data)
    rows = []
    for i in chosen.tolist():
        server = None
        j = _server_span_of(data, i)
        if j is not None:
            queue, prefill = s.queue_s[j] * 1e3, s.prefill_s[j] * 1e3
            pre_queue = server_ttft_ms[j] - queue - prefill
            server = {
                "span": s.span_name[j],
                "arrival_ms": round(float(s.start_unix_ns[j] - c.submit_unix_ns[i]) / 1e6, 3),
                "pre_queue_ms": _rounded([pre_queue], 3)[0],
                "queue_ms": _rounded([queue], 3)[0],
                "prefill_ms": _rounded([prefill], 3)[0],
                "decode_ms": _rounded([s.decode_s[j] * 1e3], 3)[0],
                "preemptions": _rounded([s.preemptions[j]], 0)[0],
            }
        rows.append(
            {
                "request": int(i),
                "class": c.request_class[i],
                "submit_s": round(float(submit_s[i]), 6),
                "ttft_ms": _rounded([ttft_ms[i]], 3)[0],
                "end_ms": _rounded([end_ms[i]], 3)[0],
                "server": server,
                "guardrail_ms": guard.get(int(i)),
            }
        )
    return {
        "sampled": len(rows),
        "of": int(candidates.size),
        "seed": seed,
        "server_placement": (
            "server phases start at the server span's start minus T_submit, two wall clocks: "
            "exact on one host, off by the clock offset between two"
        ),
        "guardrail": (
            "guardrail_ms: [start, end] of the request's input guardrail filters, ms since "
            "T_submit on the span's wall clock (null: no input filter span); output filters run "
            "during the stream and are in metrics.guardrails"
        ),
        "requests": rows,
    }


# ------------------------------------------------------------------------------------------
# HTML helpers
# ------------------------------------------------------------------------------------------


def _esc(value: object) -> str:
    return escape(str(value), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    attr = f' class="{_esc(cls)}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _series(obj: Any, key: str = "values") -> list[float]:
    """A list of finite numbers (a malformed entry ends the series as empty)."""
    values = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(values, list):
        return []
    out = [number(v) for v in values]
    return [v for v in out if v is not None] if all(v is not None for v in out) else []


def _auto_axis(values: Sequence[float], label: str) -> Axis:
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values) and max(values) / min(values) >= LOG_AXIS_RATIO:
        return Axis.logarithmic(values, label + " (log)")
    return Axis.linear(values, label)


class _Figure:
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
            body = f'<p class="absent">not measured in this run: {_esc(self.note or "no data")}</p>'
        caption = "".join(f"<p>{_esc(line)}</p>" for line in self.caption)
        cls = "plot" if self.svg is not None else "plot absent-plot"
        return (
            f'<figure class="{cls}" data-plot="{_esc(self.name)}">'
            f"<h3>{_esc(self.title)}</h3>{body}"
            f"<figcaption>{caption}</figcaption>{self.extra}</figure>"
        )


def _percentile_points(summary: Any) -> tuple[list[float], list[float]]:
    """(value, fraction) pairs of a summary's min, percentiles and max, ascending."""
    keys = (
        ("min", 0.0),
        ("p1", 0.01),
        ("p5", 0.05),
        ("p50", 0.5),
        ("p90", 0.9),
        ("p95", 0.95),
        ("p99", 0.99),
        ("p99_9", 0.999),
        ("max", 1.0),
    )
    xs, ys = [], []
    for key, q in keys:
        v = number(dig(summary, key))
        if v is not None:
            xs.append(v)
            ys.append(q)
    return xs, ys


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


def _sampling(obj: Any, drawn: int, how: str) -> list[str]:
    """The caption that says a series was thinned to ``drawn`` of its ``count`` points
    (:func:`plot_data` keeps at most ``MAX_POINTS`` per series), or nothing."""
    count = number(dig(obj, "count"))
    if count is None or count <= drawn:
        return []
    return [f"{drawn:,} of {count:,.0f} points drawn, {how}; the statistics use all of them."]


def _ttft_cdf(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    client = dig(plots, "ttft_ms", "client")
    server = dig(plots, "ttft_ms", "server")
    cx, cf = _series(client), _series(client, "fractions")
    sx, sf = _series(server), _series(server, "fractions")
    if cx and len(cx) == len(cf):
        chart = Chart(_auto_axis(cx + sx, "TTFT (ms)"), Axis.fixed(0, 1, "fraction of requests"))
        chart.step_cdf(cx, cf, color=PALETTE[0], label="client", series="client")
        fig.caption.append(f"Client TTFT of {client['count']} successful requests.")
        fig.caption += _sampling(client, len(cx), _CDF_SAMPLING)
        if sx and len(sx) == len(sf):
            chart.step_cdf(sx, sf, color=PALETTE[1], label="server", series="server")
            fig.caption.append(
                f"Server TTFT of {server['count']} joined server spans, from the request's "
                "arrival in the engine."
            )
            fig.caption += _sampling(server, len(sx), _CDF_SAMPLING)
        p99 = number(dig(report, "metrics", "client", "ttft_ms", "p99"))
        if p99 is not None:
            chart.vline(p99, color="#555", text="client P99", series="client_p99")
        fig.svg = chart.render(fig.title)
        return
    summary = dig(report, "metrics", "client", "ttft_ms")
    xs, ys = _percentile_points(summary)
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
    hist: Mapping[str, Any], names: Sequence[tuple[str, str]], x_label: str
) -> tuple[str, list[str]] | None:
    edges = _series(hist, "edges")
    present = [
        (key, label, hist[key])
        for key, label in names
        if isinstance(hist.get(key), Mapping)
        and len(_series(hist[key], "counts")) == len(edges) - 1
    ]
    if len(edges) < 2 or not present:
        return None
    log = bool(hist.get("log"))
    width = edges[-1] - edges[0]
    overflow_edge = edges[-1] + width / max(len(edges) - 1, 1) * 2
    any_overflow = any(int(h.get("overflow") or 0) > 0 for _, _, h in present)
    x_values = [*edges, overflow_edge] if any_overflow and not log else edges
    x_axis = (
        Axis.logarithmic(x_values, x_label + " (log)") if log else Axis.linear(x_values, x_label)
    )
    heights = [
        float(v) for _, _, h in present for v in [*_series(h, "counts"), h.get("overflow") or 0]
    ]
    y_label = "requests" if "TTFT" in x_label else "samples"
    chart = Chart(x_axis, Axis.linear(heights, y_label, integer=True))
    captions = []
    share = 1.0 / len(present)
    for k, (key, label, h) in enumerate(present):
        counts = _series(h, "counts")
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
        overflow = int(h.get("overflow") or 0)
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
            f"{label}: {h.get('count')} samples"
            + (
                f", {overflow} beyond {edges[-1]:.4g} ms (the pale bar past the last bin)"
                if overflow
                else ""
            )
            + "."
        )
    return chart.render(x_label), captions


def _ttft_histogram(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    hist = dig(plots, "ttft_histogram_ms")
    drawn = (
        _histogram_chart(hist, (("client", "client"), ("server", "server")), "TTFT (ms)")
        if isinstance(hist, Mapping)
        else None
    )
    if drawn is None:
        fig.note = (
            "no per-request TTFT in the plot data"
            if plots
            else "report.json holds no per-request TTFT (render with plot data)"
        )
        return
    fig.svg, fig.caption = drawn


def _ttft_by_input(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    buckets = dig(report, "metrics", "client", "ttft_by_input_tokens")
    buckets = [b for b in buckets if isinstance(b, Mapping)] if isinstance(buckets, list) else []
    filled = [b for b in buckets if (number(b.get("count")) or 0) > 0]
    pts = dig(plots, "ttft_by_input")
    xs, ys = _series(pts, "x"), _series(pts, "y")
    if xs and len(xs) == len(ys):
        chart = Chart(Axis.linear(xs, "input tokens"), _auto_axis(ys, "TTFT (ms)"))
        chart.points(
            xs,
            ys,
            color=PALETTE[0],
            label="request",
            tips=[f"{x:.0f} tokens, TTFT {y:.2f} ms" for x, y in zip(xs, ys, strict=True)],
            series="request",
        )
        for key, color, name in (
            ("p50", PALETTE[2], "bucket P50"),
            ("p99", PALETTE[1], "bucket P99"),
        ):
            for b in filled:
                v = number(b.get(key))
                lo = max(float(b.get("min_tokens") or 0), chart.x.lo)
                top = number(b.get("max_tokens_exclusive"))
                hi = min(top if top is not None else chart.x.hi, chart.x.hi)
                if v is not None and hi > lo:
                    chart.line([lo, hi], [v, v], color=color, label=name, series=key)
        fig.caption.append(
            f"{pts.get('count')} successful requests; horizontal segments are each input-length "
            "bucket's TTFT P50 and P99 (draft 5.1.4.2)."
        )
        fig.caption += _sampling(pts, len(xs), _POINT_SAMPLING)
        fig.svg = chart.render(fig.title)
        return
    if not filled:
        fig.note = "no successful request had both a TTFT and an input length"
        return
    names = [str(b.get("bucket")) for b in filled]
    series = [(key.upper(), [number(b.get(key)) for b in filled]) for key in ("p50", "p95", "p99")]
    fig.svg = _grouped_bars(
        names,
        series,
        x_label="input tokens",
        y_label="TTFT (ms)",
        tip=lambda cat, label, v: f"{cat} tokens: TTFT {label} {v:.2f} ms",
    )
    fig.caption.append(
        "TTFT percentiles by input-length bucket (draft 5.1.4.2); buckets without requests "
        "are left out. "
        + ", ".join(f"{b.get('bucket')}: {b.get('count')} requests" for b in filled)
        + "."
    )


def _itl_histogram(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    hist = dig(plots, "itl_histogram_ms")
    drawn = (
        _histogram_chart(
            hist,
            (("client", "client (Option B)"), ("server", "server (Option C)")),
            "ITL (ms)",
        )
        if isinstance(hist, Mapping)
        else None
    )
    if drawn is None:
        fig.note = (
            "no ITL sample in the plot data"
            if plots
            else "report.json holds no ITL samples (render with plot data)"
        )
        return
    fig.svg, fig.caption = drawn
    fig.caption.append(
        "Option B gives a chunk of N tokens N − 1 zero intervals; Option C is at engine-step "
        "resolution (draft 4.6.3)."
    )


def _jitter(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    client = dig(plots, "jitter_ms", "client")
    server = dig(plots, "jitter_ms", "server")
    drawn = [
        (key, label, _series(obj, "x"), _series(obj, "y"), obj)
        for key, label, obj in (
            ("client", "client (Option B)", client),
            ("server", "server (Option C)", server),
        )
    ]
    drawn = [d for d in drawn if d[2] and len(d[2]) == len(d[3])]
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
            fig.caption.append(f"{label}: {obj.get('count')} requests with ≥ 2 ITL samples.")
            fig.caption += _sampling(obj, len(xs), _POINT_SAMPLING)
        fig.caption.append(
            "Jitter is each request's ITL population standard deviation (draft 5.4.4.2)."
        )
        fig.svg = chart.render(fig.title)
        return
    cats, series = [], []
    for key, label in (("client", "client"), ("server", "server")):
        j = dig(report, "metrics", key, "itl_per_request", "jitter_ms")
        if isinstance(j, Mapping) and number(j.get("p50")) is not None:
            cats.append(label)
            series.append([number(j.get(p)) for p in ("p50", "p95", "p99")])
    if not cats:
        fig.note = "no request had 2 or more ITL samples"
        return
    fig.svg = _grouped_bars(
        cats,
        [(p.upper(), [row[k] for row in series]) for k, p in enumerate(("p50", "p95", "p99"))],
        x_label="side",
        y_label="ITL jitter (ms)",
        tip=lambda cat, label, v: f"{cat} jitter {label}: {v:.3f} ms",
    )
    fig.caption.append(
        "Percentiles over requests of each request's ITL jitter (draft 5.4.4.2); per-request "
        "values need plot data."
    )


_LATENCY_LABELS: Final = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E", "itl": "ITL"}


class _Curve:
    """The usable levels of a procedure block (:data:`CURVE_SHAPE`)."""

    def __init__(self, block: Mapping[str, Any], levels: Sequence[Any]) -> None:
        metric = str(block.get("latency_metric") or "ttft")
        self.metric = _LATENCY_LABELS.get(metric.lower(), metric)
        key = f"{metric.lower()}_p99_ms"
        rows = [level if isinstance(level, Mapping) else {} for level in levels]
        by_rate = all(number(r.get("offered_rps")) is not None for r in rows)
        self.load_key = "offered_rps" if by_rate else "concurrency"
        self.load_unit = "req/s" if by_rate else "concurrent"
        self.kept: list[int] = []
        self.load: list[float] = []
        self.thr: list[float] = []
        self.p99: list[float] = []
        for i, r in enumerate(rows):
            load = number(r.get(self.load_key))
            thr = number(r.get("output_tokens_per_s"))
            p99 = number(r.get(key)) if key in r else number(r.get("p99_ms"))
            if load is None or thr is None or p99 is None:
                continue
            self.kept.append(i)
            self.load.append(load)
            self.thr.append(thr)
            self.p99.append(p99)
        self.dropped = len(rows) - len(self.kept)

    def index(self, block: Mapping[str, Any], key: str, derived: int | None) -> int | None:
        """The level ``block[key]`` names (an index into the block's levels, mapped to the
        kept ones; None if it was left out), else the derived one."""
        if key not in block:
            return derived
        v = block.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v in self.kept:
            return self.kept.index(v)
        return None

    def name(self, k: int) -> str:
        return f"{self.load[k]:g} {self.load_unit}"


def _throughput_latency(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    block = dig(report, "procedure")
    levels = dig(block, "levels")
    if not isinstance(block, Mapping) or not isinstance(levels, list) or len(levels) < 2:
        fig.note = (
            "a single load level was run; the curve needs a multi-level procedure "
            "(report.procedure.levels, draft 5.3)"
        )
        return
    curve = _Curve(block, levels)
    slo = number(block.get("slo_p99_ms"))
    try:
        points = throughput_latency_points(curve.load, curve.thr, curve.p99, slo)
    except ValueError as exc:
        fig.note = f"the procedure's levels are unusable: {exc}"
        return
    thr, p99 = curve.thr, curve.p99
    knee = curve.index(block, "knee", points.knee)
    saturation = curve.index(block, "saturation", points.saturation)
    peak = curve.index(block, "peak", points.peak)
    optimal = curve.index(block, "optimal", points.optimal)
    chart = Chart(
        Axis.linear(thr, "achieved output throughput (tokens/s)"),
        Axis.linear([*p99, *([slo] if slo is not None else [])], f"{curve.metric} P99 (ms)"),
    )
    chart.line(
        thr, p99, color=PALETTE[0], label=f"{curve.metric} P99 per load level", series="curve"
    )
    chart.points(
        thr,
        p99,
        color=PALETTE[0],
        tips=[
            f"{curve.name(k)}: {t:.1f} tokens/s, P99 {p:.1f} ms"
            for k, (t, p) in enumerate(zip(thr, p99, strict=True))
        ],
        radius=3.5,
        series="level",
        opacity=1.0,
    )
    if slo is not None:
        chart.hline(slo, color=PALETTE[2], text=f"SLO {slo:g} ms", series="slo")
    if knee is not None:
        chart.marker(thr[knee], p99[knee], f"knee ({curve.name(knee)})", color=PALETTE[3])
    if saturation is not None:
        chart.vline(
            thr[saturation],
            color=PALETTE[1],
            text=f"saturation ({curve.name(saturation)})",
            series="saturation",
        )
    if peak is not None and peak != knee:
        chart.marker(thr[peak], p99[peak], f"peak ({curve.name(peak)})", color=PALETTE[4])
    if optimal is not None and optimal not in (knee, peak):
        chart.marker(
            thr[optimal], p99[optimal], f"optimal ({curve.name(optimal)})", color=PALETTE[2]
        )
    fig.caption.append(
        f"{len(thr)} load levels by {curve.load_key}. Knee: the first level whose P99 exceeds "
        "2 × the lowest P99; saturation: the first level whose throughput falls below the "
        "previous level's (draft 5.3.4)."
    )
    if curve.dropped:
        fig.caption.append(
            f"{curve.dropped} level(s) without a load, throughput or P99 are left out."
        )
    if knee is None:
        fig.caption.append("No knee: P99 never exceeded 2 × its minimum.")
    if saturation is None:
        fig.caption.append("No saturation point: throughput never decreased.")
    fig.svg = chart.render(fig.title)


def _fluidity_cdf(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    section = dig(report, "metrics", "fluidity")
    fluid = dig(plots, "fluidity")
    min_fluidity = number(dig(section, "min_fluidity")) or MIN_FLUIDITY
    rows = dig(fluid, "deadlines")
    chart = Chart(Axis.fixed(0, 1, "fluidity-index"), Axis.fixed(0, 1, "fraction of requests"))
    drawn = 0
    if isinstance(rows, list):
        for k, row in enumerate(rows):
            cdf = dig(row, "cdf")
            xs, fs = _series(cdf), _series(cdf, "fractions")
            if xs and len(xs) == len(fs):
                label = f"{dig(row, 'preset')} (D_d {fmt(dig(row, 'decode_deadline_ms'), 0)} ms)"
                chart.step_cdf(xs, fs, color=PALETTE[k % 8], label=label, series=str(row["preset"]))
                drawn += 1
        if drawn:
            fig.caption.append(
                f"Etalon §4.1 fluidity-index per request ({dig(fluid, 'source')} timeline, "
                f"D_p {fmt(dig(fluid, 'prefill_deadline_ms'), 0)} ms)."
            )
            first = dig(rows[0], "cdf")
            fig.caption += _sampling(first, len(_series(first)), _CDF_SAMPLING)
    if not drawn and isinstance(section, Mapping):
        for k, row in enumerate(section.get("deadlines") or []):
            xs, ys = _percentile_points(dig(row, "fluidity_index"))
            if xs:
                label = f"{dig(row, 'preset')} (D_d {fmt(dig(row, 'decode_deadline_ms'), 0)} ms)"
                chart.line(xs, ys, color=PALETTE[k % 8], label=label, series=str(row["preset"]))
                chart.points(xs, ys, color=PALETTE[k % 8], series=str(row["preset"]))
                drawn += 1
        if drawn:
            fig.caption.append(
                "Drawn through the report's min, P1, P5 and P50 of the index (no plot data)."
            )
    if not drawn:
        fig.note = "no successful request had a token on the timeline"
        return
    chart.vline(min_fluidity, color="#555", text=f"fluid ≥ {min_fluidity:g}", series="min")
    rate = dig(section, "fluid_token_generation_rate")
    if isinstance(rate, Mapping):
        fig.caption.append(
            f"Fluid token generation rate: {fmt(rate.get('tokens_per_s'), 1)} tokens/s "
            f"(D_d {fmt(rate.get('decode_deadline_ms'), 1)} ms)."
        )
    fig.svg = chart.render(fig.title)


def _fairness(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    section = dig(report, "metrics", "classes")
    by_class = dig(section, "by_class")
    if not isinstance(by_class, Mapping) or not by_class:
        fig.note = "fewer than two request classes among the successful requests"
        return
    names = [str(k) for k in by_class]
    rows = [by_class[k] for k in by_class]
    series = [
        (f"TTFT {p.upper()}", [number(dig(r, "ttft_ms", p)) for r in rows])
        for p in ("p50", "p95", "p99")
    ]
    fig.svg = _grouped_bars(
        names,
        series,
        x_label="request class",
        y_label="TTFT (ms)",
        tip=lambda cat, label, v: f"class {cat}: {label} {v:.2f} ms",
    )
    jain = number(dig(section, "jain_index"))
    fig.caption.append(
        f"Jain's fairness index J = {fmt(jain, 3)} over {dig(section, 'jain_requests')} "
        "requests (J < 0.9: significant unfairness; draft 5.6.4)."
        if jain is not None
        else "Jain's fairness index: n/a."
    )
    fig.extra = _table(
        ("class", "requests", "TTFT P50 ms", "TTFT P99 ms", "TPOT P50 ms", "starvation rate"),
        [
            (
                name,
                str(dig(r, "count")),
                fmt(dig(r, "ttft_ms", "p50")),
                fmt(dig(r, "ttft_ms", "p99")),
                fmt(dig(r, "tpot_ms", "p50")),
                fmt(dig(r, "starvation_rate"), 3),
            )
            for name, r in zip(names, rows, strict=True)
        ],
        cls="compact",
    )


def _preemption_timeline(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    p = dig(plots, "preemptions")
    stats = dig(report, "metrics", "server", "preemptions")
    if not isinstance(p, Mapping):
        if isinstance(stats, Mapping):
            fig.note = (
                f"{stats.get('total')} preemptions over {stats.get('requests_observed')} "
                "requests; their times need plot data"
            )
        else:
            fig.note = "no engine-hook server span was joined (preemptions are not observed)"
        return
    pre = dig(p, "preempted")
    ts, cum = _series(pre, "arrival_s"), _series(pre, "cumulative")
    counts, stalls = _series(pre, "preemptions"), _series(pre, "stall_ms")
    window = number(p.get("window_s")) or (max(ts) if ts else 1.0)
    total = int(number(p.get("total")) or 0)
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
    if ts and len(counts) == len(ts) and len(stalls) == len(ts):
        chart.points(
            ts,
            cum,
            color=PALETTE[1],
            label="preempted request (at its arrival)",
            tips=[
                f"{int(k)} preemption(s), stalled {s:.1f} ms, arrived {t:.2f} s"
                for t, k, s in zip(ts, counts, stalls, strict=True)
            ],
            radius=3.5,
            series="request",
            opacity=1.0,
        )
    fig.caption.append(
        f"{total} preemptions over {p.get('requests_observed')} observed requests"
        + (" — no preemption in this run." if total == 0 else ".")
        + " Event times are not recorded: each preemption is placed at its request's arrival "
        "in the engine (draft 5.8.4)."
    )
    fig.svg = chart.render(fig.title)


_WATERFALL_PHASES: Final = (
    ("pre_queue_ms", "arrival → queued", "#9edae5"),
    ("queue_ms", "queue", PALETTE[3]),
    ("prefill_ms", "prefill", PALETTE[1]),
    ("decode_ms", "decode", PALETTE[2]),
)


def _waterfall_row_label(row: Mapping[str, Any]) -> str:
    label = f"#{row.get('request')}"
    if row.get("class") is not None:
        label += f" {row.get('class')}"
    return label


def _waterfall_plot(fig: _Figure, report: Mapping[str, Any], plots: Mapping[str, Any]) -> None:
    w = dig(plots, "waterfall")
    rows = dig(w, "requests")
    rows = [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
    if not rows:
        fig.note = (
            "no successful request to sample"
            if plots
            else "report.json holds no per-request timings (render with plot data)"
        )
        return
    n = len(rows)
    ends: list[float] = []
    for r in rows:
        ends += [v for v in (number(r.get("end_ms")), number(r.get("ttft_ms"))) if v is not None]
        srv = r.get("server")
        if isinstance(srv, Mapping):
            t = number(srv.get("arrival_ms")) or 0.0
            for key, _, _ in _WATERFALL_PHASES:
                t += number(srv.get(key)) or 0.0
            ends.append(t)
        g = r.get("guardrail_ms")
        if isinstance(g, list) and len(g) == 2 and number(g[1]) is not None:
            ends.append(float(g[1]))
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
        ttft, end = number(r.get("ttft_ms")), number(r.get("end_ms"))
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
        srv = r.get("server")
        if isinstance(srv, Mapping):
            t = number(srv.get("arrival_ms")) or 0.0
            for key, label, color in _WATERFALL_PHASES:
                d = number(srv.get(key))
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
        g = r.get("guardrail_ms")
        if isinstance(g, list) and len(g) == 2:
            g0, g1 = number(g[0]), number(g[1])
            if g0 is not None and g1 is not None and g1 >= g0:
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
        f"{n} of {dig(w, 'of')} successful requests, sampled with seed {dig(w, 'seed')}. "
        "Upper bar: the client's wait for the first token and the stream; lower bar: the "
        "server's phases (arrival → queued, queue, prefill, decode)."
    )
    if not guardrail_seen:
        fig.caption.append("Guardrail: not measured in this run (no guardrail span recorded).")
    placement = dig(w, "server_placement")
    if placement:
        fig.caption.append(f"Server phases: {placement}.")
    fig.svg = chart.render(fig.title)


_PLOT_RENDERERS: Final[
    Mapping[str, Callable[[_Figure, Mapping[str, Any], Mapping[str, Any]], None]]
] = {
    "ttft_cdf": _ttft_cdf,
    "ttft_histogram": _ttft_histogram,
    "ttft_by_input": _ttft_by_input,
    "itl_histogram": _itl_histogram,
    "jitter": _jitter,
    "throughput_latency": _throughput_latency,
    "fluidity_cdf": _fluidity_cdf,
    "fairness": _fairness,
    "preemption_timeline": _preemption_timeline,
    "waterfall": _waterfall_plot,
}


# ------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------


def _run_table(report: Mapping[str, Any]) -> str:
    run = mapping(report.get("run"))
    req = mapping(run.get("requests"))
    thr = dig(report, "metrics", "client", "throughput")
    workload = run.get("workload")
    sut = mapping(run.get("sut"))
    rows = [
        ("run id", str(run.get("id", NA))),
        ("model", str(run.get("model") or "not recorded")),
        ("target", str(run.get("target") or "not recorded")),
        ("API", str(run.get("api") or "not recorded")),
        (
            "workload",
            str(workload.get("name")) if isinstance(workload, Mapping) else "not recorded",
        ),
        ("load", load_text(run.get("load"))),
        (
            "requests",
            f"{req.get('total', NA)} ({req.get('succeeded', NA)} succeeded, "
            f"{req.get('failed', NA)} failed)",
        ),
        ("duration", fmt(run.get("duration_s"), 1, "s")),
        ("output throughput", fmt(dig(thr, "output_tokens_per_s"), 1, "tokens/s")),
        ("request throughput", fmt(dig(thr, "requests_per_s"), 3, "req/s")),
        ("SUT boundary", str(sut.get("boundary") or "not recorded")),
        ("hardware", str(sut.get("hardware") or "not recorded")),
        ("software", str(sut.get("software") or "not recorded")),
        ("server timing", server_timing_text(sut.get("server_timing"))),
    ]
    return _table(("", ""), rows, cls="kv")


def _latency_table(report: Mapping[str, Any]) -> str:
    client = dig(report, "metrics", "client")
    server = dig(report, "metrics", "server")
    rows = []
    for key, label in (
        ("ttft_ms", "TTFT"),
        ("itl_ms", "ITL"),
        ("tpot_ms", "TPOT"),
        ("e2e_ms", "E2E"),
    ):
        for side, section in (("client", client), ("server", server)):
            s = dig(section, key)
            if not isinstance(s, Mapping):
                continue
            rows.append(
                (
                    label,
                    side,
                    str(s.get("count", NA)),
                    *(fmt(s.get(p)) for p in ("p50", "p90", "p95", "p99", "mean", "max")),
                )
            )
    diff = dig(server, "client_minus_server_ttft_ms")
    if isinstance(diff, Mapping):
        rows.append(
            (
                "TTFT client − server",
                "both",
                str(diff.get("count", NA)),
                *(fmt(diff.get(p)) for p in ("p50", "p90", "p95", "p99", "mean", "max")),
            )
        )
    return _table(("metric (ms)", "side", "count", "P50", "P90", "P95", "P99", "mean", "max"), rows)


def _methodology(report: Mapping[str, Any]) -> str:
    m = report.get("methodology")
    if not isinstance(m, Mapping):
        return "<p>No methodology declarations in this report.</p>"
    items: list[tuple[str, str]] = []
    itl = m.get("itl_method")
    if isinstance(itl, Mapping):
        items.append(
            (
                "ITL method",
                f"Option {itl.get('option')}: {itl.get('name')}. {itl.get('description')}",
            )
        )
        items.append(("ITL protocol", str(itl.get("protocol"))))
        items.append(("chunk token source", str(itl.get("chunk_token_source"))))
        items.append(("server ITL", str(itl.get("server_side"))))
    for key, label in (
        ("first_token_definition", "first token"),
        ("tpot_definition", "TPOT"),
        ("jitter_definition", "jitter"),
        ("percentile_method", "percentiles"),
        ("std_definition", "standard deviation"),
        ("throughput_window", "throughput window"),
        ("latency_population", "latency population"),
    ):
        if m.get(key) is not None:
            items.append((label, str(m.get(key))))
    clocks = m.get("clock_domains")
    if isinstance(clocks, Mapping):
        items += [(f"clock: {k}", str(v)) for k, v in clocks.items()]
    return "<dl>" + "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in items) + "</dl>"


def _deviations(report: Mapping[str, Any]) -> str:
    devs = dig(report, "methodology", "deviations")
    if not isinstance(devs, list) or not devs:
        return "<p>None.</p>"
    return '<ul class="deviations">' + "".join(f"<li>{_esc(d)}</li>" for d in devs) + "</ul>"


# ------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------

_CSS: Final = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       margin: 0 auto; padding: 16px 24px 48px; max-width: 1320px; background: #fafafa; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0 0 6px; }
.subtitle { color: #555; margin: 0 0 12px; }
table { border-collapse: collapse; margin: 8px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
table.kv td:first-child { font-weight: 600; } table.kv td { text-align: left; }
table.kv thead { display: none; } table.compact { font-size: 12px; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr));
         gap: 16px; }
figure.plot { margin: 0; padding: 12px; background: #fff; border: 1px solid #ddd;
              border-radius: 4px; }
figcaption p { margin: 4px 0; color: #444; font-size: 12.5px; }
p.absent { color: #8a6d00; background: #fff8e1; border: 1px dashed #e0c060; padding: 24px;
           text-align: center; font-style: italic; }
svg.chart { width: 100%; height: auto; max-width: 100%; font-size: 11px; }
svg.chart .grid { stroke: #eee; } svg.chart .axis, svg.chart .tick { stroke: #444; }
svg.chart .frame { stroke: none; } svg.chart .tick-label { fill: #444; }
svg.chart .axis-title { fill: #222; font-size: 12px; }
svg.chart .ref { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg.chart .legend-item text { fill: #222; }
dl { background: #fff; border: 1px solid #ddd; padding: 8px 12px; }
dt { font-weight: 600; margin-top: 6px; } dd { margin: 0 0 0 16px; color: #333; }
ul.deviations li { margin: 3px 0; }
pre.markdown { background: #fff; border: 1px solid #ddd; padding: 8px 12px; white-space: pre-wrap;
  font-size: 12px; }
"""

_HEAD_SCRIPT: Final = (
    "window.addEventListener('error',function(e){document.documentElement.setAttribute("
    "'data-script-error',String(e.message||e));});"
)
_TAIL_SCRIPT: Final = (
    "(function(){var f=document.querySelectorAll('figure[data-plot]'),d=0,i,s;"
    "for(i=0;i<f.length;i++){s=f[i].querySelector('svg');if(s&&s.querySelector('.data')"
    "&&s.querySelector('.data').childElementCount>0){d++;}}"
    "var h=document.documentElement;h.setAttribute('data-plots',String(f.length));"
    "h.setAttribute('data-plots-drawn',String(d));h.setAttribute('data-script','ok');})();"
)


def _page(title: str, subtitle: str, body: Sequence[str]) -> str:
    """The one page shell of ``report.html`` and ``procedure.html``: a self-contained document
    (inline CSS, the head and tail scripts), its title, a subtitle line (``subtitle`` is escaped
    HTML) and the body's HTML parts."""
    return "".join(
        [
            "<!DOCTYPE html>\n",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_esc(title)}</title>",
            f"<style>{_CSS}</style>",
            f"<script>{_HEAD_SCRIPT}</script>",
            "</head><body>",
            f"<h1>{_esc(title)}</h1>",
            f'<p class="subtitle">{subtitle} · IETF LLM benchmarking methodology</p>',
            *body,
            f"<script>{_TAIL_SCRIPT}</script>",
            "</body></html>\n",
        ]
    )


def render_html(report: Mapping[str, Any], plot_data: Mapping[str, Any] | None = None) -> str:
    """The report as one self-contained HTML page (no external resource) with inline SVG plots.

    ``plot_data`` is :func:`plot_data`'s dict; when None the report's own ``plots`` key is used
    if it has one. Without per-request data the plots that need it say so; the others are drawn
    from the report alone. Sections missing from the report (older reports) are tolerated.

    >>> page = render_html(report_from_data(data), plot_data(data))  # doctest: +SKIP
    >>> page.startswith("<!DOCTYPE html>")  # doctest: +SKIP
    True
    """
    plots: Mapping[str, Any] = {}
    if isinstance(plot_data, Mapping):
        plots = plot_data
    elif isinstance(report.get("plots"), Mapping):
        plots = report["plots"]
    run_id = dig(report, "run", "id")
    model = dig(report, "run", "model")
    figures = []
    for name, title in PLOTS:
        fig = _Figure(name, title)
        _PLOT_RENDERERS[name](fig, report, plots)
        figures.append(fig.html())
    title = f"otelbench report — run {run_id if run_id is not None else NA}"
    return _page(
        title,
        f"model {_esc(model or 'not recorded')} · report schema "
        f"{_esc(report.get('schema_version', NA))}",
        [
            "<h2>Run</h2>",
            _run_table(report),
            "<h2>Headline latencies: client vs server</h2>",
            _latency_table(report),
            "<h2>Plots</h2>",
            f'<div class="plots">{"".join(figures)}</div>',
            "<h2>Deviations from the draft</h2>",
            _deviations(report),
            "<h2>Methodology</h2>",
            _methodology(report),
        ],
    )


def _curve_levels(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The procedure's levels that form one load curve: open-loop levels by offered rate (or,
    when fewer than 3, closed-loop levels by concurrency), of one configuration, by load."""
    levels = [lv for lv in result.get("levels") or [] if isinstance(lv, Mapping)]
    if len({lv.get("configuration") for lv in levels}) > 1:
        return []  # configurations compared (5.7, 5.10): no single curve
    for key in ("offered_rps", "concurrency"):
        rows = [lv for lv in levels if number(lv.get(key)) is not None]
        if key == "concurrency":
            rows = [lv for lv in rows if number(lv.get("offered_rps")) is None]
        if len(rows) >= 3:
            return sorted(rows, key=lambda lv: float(lv[key]))
    return []


def render_procedure_html(result: Mapping[str, Any], markdown: str) -> str:
    """``procedure.html``: the procedure's throughput-latency curve (when its levels form one),
    links to each level's ``report.html``, and ``procedure.md`` itself. Self-contained, like
    :func:`render_html`, with the same script markers.

    >>> page = render_procedure_html(result.result, result.markdown)  # doctest: +SKIP
    """
    section = str(result.get("draft_section", ""))
    source = f"draft {section}" if section[:1].isdigit() else section
    title = f"{result.get('title', 'procedure')} ({source}) — otelbench procedure"
    fig = _Figure("throughput_latency", "Throughput–latency curve")
    curve = _curve_levels(result)
    if curve:
        block: dict[str, Any] = {"levels": curve}
        if curve == result.get("levels"):  # the procedure's own points (5.3.4), when it has them
            for key in ("knee", "saturation", "peak", "optimal"):
                if f"{key}_index" in result:
                    block[key] = result[f"{key}_index"]
        _throughput_latency(fig, {"procedure": block}, {})
    else:
        fig.note = "the procedure's levels do not form one load curve"
    links = "".join(
        f'<li><a href="{_esc(str(run["report"]).removesuffix(".json") + ".html")}">'
        f"{_esc(run.get('index'))}. {_esc(run.get('label'))}</a></li>"
        if run.get("report")
        else f"<li>{_esc(run.get('index'))}. {_esc(run.get('label'))} (no stored report)</li>"
        for run in result.get("runs") or []
        if isinstance(run, Mapping)
    )
    return _page(
        title,
        f"profile {_esc(result.get('profile', NA))} · procedure schema "
        f"{_esc(result.get('schema_version', NA))}",
        [
            f'<div class="plots">{fig.html()}</div>',
            "<h2>Levels (each with its own report)</h2>",
            f"<ul>{links}</ul>",
            "<h2>Procedure report</h2>",
            f'<pre class="markdown">{_esc(markdown)}</pre>',
        ],
    )
