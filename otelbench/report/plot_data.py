"""Plot data: the compact per-request arrays ``report.html``'s figures draw, from the records.

:func:`plot_data` reduces a run's records (``otelbench.query.RunData``) to at most
:data:`MAX_POINTS` points per series (deterministic, evenly spread ranks or requests) and to
histogram counts, so the page stays small for millions of requests. Its shape is
:class:`otelbench.model.plots.PlotData`, versioned by :data:`PLOT_DATA_VERSION`;
:mod:`otelbench.render.figures` draws it.

Usage::

    from otelbench.report.plot_data import plot_data

    plots = plot_data(data)   # data: otelbench.query.RunData
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import draft, semconv
from otelbench.arrays import F64, I64
from otelbench.metrics import OrderStatistics, Ragged, group_first
from otelbench.metrics.summary import AnyOrderStatistics, type7_interpolate, type7_ranks
from otelbench.model.plots import (
    CdfSeries,
    FluidityPlot,
    HistogramCounts,
    Histograms,
    PlotData,
    PointSeries,
    PreemptionPlot,
    Waterfall,
    WaterfallRow,
    WaterfallServer,
)
from otelbench.query import RunData
from otelbench.render.svg import LOG_AXIS_RATIO
from otelbench.report.sections import (
    client_itl_order,
    client_jitter_us,
    fluidity_indices_of,
    fluidity_intervals,
    prefill_deadline_of,
    server_finished,
    server_is_hook,
    server_itl_order,
    server_jitter_us,
    server_token_offsets_us,
)

__all__ = [
    "HISTOGRAM_BINS",
    "HISTOGRAM_PERCENTILES",
    "MAX_POINTS",
    "PLOT_DATA_VERSION",
    "plot_data",
]

MAX_POINTS: Final = 2000
"""The most points :func:`plot_data` keeps in one series (downsampled deterministically)."""
PLOT_DATA_VERSION: Final = 1
"""Version of :func:`plot_data`'s shape."""
HISTOGRAM_BINS: Final = 40
HISTOGRAM_PERCENTILES: Final = (99.0,)
"""What a histogram reads of each series besides its smallest and largest sample: the P99 that
caps a linear axis (the pooled P99's tail is read from each series' P99 partition)."""

# ------------------------------------------------------------------------------------------
# plot data: compact per-request arrays from the records
# ------------------------------------------------------------------------------------------


def _rounded(values: npt.ArrayLike, digits: int) -> list[float | None]:
    a = np.asarray(values, dtype=np.float64)
    return [round(float(v), digits) if math.isfinite(v) else None for v in a.tolist()]


def _rounded_finite(values: npt.ArrayLike, digits: int) -> list[float]:
    """:func:`_rounded` of values known to be finite (a series: its samples were filtered)."""
    a = np.asarray(values, dtype=np.float64)
    return [round(float(v), digits) for v in a.tolist()]


def _even_indices(n: int, m: int) -> I64:
    """At most ``m`` indices spread evenly over ``range(n)``, first and last included."""
    if n <= m:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.rint(np.linspace(0, n - 1, m)).astype(np.int64))


def _finite(values: npt.ArrayLike) -> F64:
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    return a if finite.all() else a[finite]  # no copy of 10M samples when all defined


def _cdf(values: npt.ArrayLike, max_points: int, digits: int = 3) -> CdfSeries | None:
    """Sorted samples and their empirical CDF fraction ``(rank + 1) / n``, at most
    ``max_points`` of them at evenly spread ranks (the first and the last kept)."""
    v = np.sort(_finite(values))
    if v.size == 0:
        return None
    ranks = _even_indices(int(v.size), max_points)
    return {
        "count": int(v.size),
        "values": _rounded_finite(v[ranks], digits),
        "fractions": _rounded_finite((ranks + 1) / v.size, 6),
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
    client: AnyOrderStatistics,
    server: AnyOrderStatistics,
    *,
    allow_log: bool,
    bins: int = HISTOGRAM_BINS,
) -> Histograms | None:
    """Histograms of the client and server series on shared bin edges; each series is the
    order statistics of its finite samples (:func:`_order_of_finite`, or any made for
    :data:`HISTOGRAM_PERCENTILES`, or counted: ``CountedOrderStatistics``).

    Log-spaced edges when ``allow_log`` and every sample is positive with max/min ≥
    :data:`LOG_AXIS_RATIO`; otherwise linear from 0 (or the minimum, if negative) to the
    maximum, or to 1.5 × the pooled P99 when the maximum lies beyond 4 × P99 — samples past
    that edge are counted in ``overflow``. The counts are ``numpy.histogram``'s over those
    edges.
    """
    nonempty = [v for v in (client, server) if v.size]
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

    def counted(v: AnyOrderStatistics) -> HistogramCounts | None:
        if v.size == 0:
            return None
        values, multiplicity = v.samples()
        counts, overflow = _bin_counts(values, edges, linear=not log, counts=multiplicity)
        return {"count": int(v.size), "counts": [int(k) for k in counts], "overflow": overflow}

    return {
        "log": log,
        "edges": _rounded_finite(edges, 4),
        "client": counted(client),
        "server": counted(server),
    }


def _points(
    x: F64, y: F64, max_points: int, x_digits: int = 3, y_digits: int = 3
) -> PointSeries | None:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size == 0:
        return None
    idx = _even_indices(int(x.size), max_points)
    return {
        "count": int(x.size),
        "x": _rounded_finite(x[idx], x_digits),
        "y": _rounded_finite(y[idx], y_digits),
    }


def _server_span_of(data: RunData, i: int) -> int | None:
    """Client request ``i``'s server span (the engine-hook span when it has several), if any."""
    spans = np.flatnonzero((data.server.client_index == i) & server_finished(data))
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
    prefill_deadline_s: float | None = None,
    max_points: int = MAX_POINTS,
) -> PlotData:
    """Compact per-request arrays for the HTML report's plots (pure: no I/O, deterministic).

    Bounded in size: each series holds at most ``max_points`` values (CDFs keep evenly spread
    ranks, point series evenly spread requests), histograms are precomputed counts, and the
    waterfall holds at most ``max_requests_waterfall`` requests sampled with
    ``numpy.random.default_rng(seed)``. JSON-able: numbers, strings, lists, dicts, None for an
    undefined number. Times on the run's axis are seconds since the run's first T_submit
    (client wall clock); ``prefill_deadline_s`` must match the report's (None: the profiled or
    default ``D_p`` the report chooses too). The same
    populations as the report: client latencies over successful requests, server ones over
    joined server spans of the requests the engine finished.

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
    joined &= server_finished(data)  # the server's latencies: requests the engine finished

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
            _order_of_finite(ttft_ms[ok]), _order_of_finite(server_ttft_ms[joined]), allow_log=True
        ),
        "ttft_by_input": _points(input_tokens[ok], ttft_ms[ok], max_points, 1, 3),
        "itl_histogram_ms": _histograms(
            client_itl_order(data), server_itl_order(data), allow_log=False
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
    data: RunData, prefill_deadline_s: float | None, max_points: int
) -> FluidityPlot | None:
    """Per-request fluidity-indices per decode-deadline preset, on ``metrics.fluidity``'s
    timeline and population (:func:`otelbench.report.sections.fluidity_section`);
    ``prefill_deadline_ms`` is the fixed ``D_p``, or None for a profiled ``D_p(L)``."""
    if prefill_deadline_s is not None and not prefill_deadline_s > 0:
        raise ValueError("the prefill deadline must be > 0 s")
    times, source, _ = fluidity_intervals(data)
    if len(times) == 0:
        return None
    deadline = prefill_deadline_of(data, prefill_deadline_s).section
    return {
        "source": source,
        "prefill_deadline_ms": deadline["deadline_ms"] if deadline["kind"] == "fixed" else None,
        "min_fluidity": draft.FLUIDITY_MIN_INDEX,
        "deadlines": [
            {
                "preset": preset,
                "decode_deadline_ms": dd * 1000.0,
                "cdf": _cdf(fluidity_indices_of(data, prefill_deadline_s, dd), max_points, 6),
            }
            for preset, dd in draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S.items()
        ],
    }


def _preemption_plot(
    data: RunData, origin_ns: int, window_s: float, max_points: int
) -> PreemptionPlot | None:
    """Preemptions over the run, and the running total (draft 5.8.4's timeline).

    Each preemption is placed at its engine time when the hooks' preemption span events carry
    one for every preempted request (``ServerRequests.preemption_offset_us``; one point per
    event, with the stall of the resumption that followed it); otherwise each preempted request
    is placed at its arrival in the engine (its server span's start), with its count and total
    stall. None when no joined server span is an engine-hook span (nothing observed).
    """
    s = data.server
    observed = (s.client_index >= 0) & server_is_hook(data) & server_finished(data)
    if not np.any(observed):
        return None
    counts = np.where(np.isfinite(s.preemptions), s.preemptions, s.preemption_events)
    counts = np.nan_to_num(counts[observed])
    start_s = (s.start_unix_ns[observed] - origin_ns) / 1e9
    stalls = Ragged(s.stall_us.astype(np.float64), s.stall_bounds).select(observed)
    rows = np.flatnonzero(observed)
    hit = counts > 0
    events = _preemption_events(data, rows[hit], start_s[hit], stalls.select(hit))
    if events is not None:
        t, stall_ms = events
        k = np.ones(t.size)
        placement = "at each preemption event's time in the engine (the hooks' span events)"
    else:
        t, k = start_s[hit], counts[hit]
        stall_ms = np.array([float(g.sum()) / 1e3 for g in stalls.select(hit)])
        placement = "at the preempted request's arrival in the engine (server span start)"
    order = np.argsort(t, kind="stable")
    t, k, stall_ms = t[order], k[order], stall_ms[order]
    idx = _even_indices(int(t.size), max_points)
    cumulative = np.cumsum(k)
    end_s = max(window_s, float(start_s.max()) if start_s.size else 0.0, *t[-1:])
    return {
        "placement": placement,
        "requests_observed": int(observed.sum()),
        "total": int(counts.sum()),
        "window_s": round(end_s, 6),
        "preempted": {
            "count": int(t.size),
            "time_s": _rounded_finite(t[idx], 6),
            "preemptions": [int(v) for v in k[idx]],
            "stall_ms": _rounded(stall_ms[idx], 3),
            "cumulative": [int(v) for v in cumulative[idx]],
        },
    }


def _preemption_events(
    data: RunData, rows: I64, start_s: F64, stalls: Ragged
) -> tuple[F64, F64] | None:
    """(time s, stall ms) of every preemption event of the server spans ``rows`` (each
    starting at ``start_s``); None unless every one of them has its events' times. Event ``i``
    of a span is followed by its resumption ``i`` (the hooks emit them in pairs; NaN stall
    when the request finished without resuming)."""
    s = data.server
    times: list[float] = []
    stall_ms: list[float] = []
    for row, start, resumed in zip(rows, start_s, stalls, strict=True):
        offsets = s.preemption_offsets(int(row))
        if offsets is None or offsets.size == 0:
            return None
        times += (start + offsets / 1e6).tolist()
        stall_ms += [
            float(resumed[i]) / 1e3 if i < resumed.size else np.nan for i in range(offsets.size)
        ]
    return np.array(times), np.array(stall_ms)


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
) -> Waterfall:
    """A few sampled successful requests: the client's wait and stream, and the server's
    phases placed at the server span's start relative to T_submit."""
    c, s = data.client, data.server
    candidates = np.flatnonzero(c.ok)
    k = min(max_rows, int(candidates.size))
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(candidates, size=k, replace=False)) if k else candidates[:0]
    guard = _input_guardrail_window(data)
    rows: list[WaterfallRow] = []
    for i in chosen.tolist():
        server: WaterfallServer | None = None
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
