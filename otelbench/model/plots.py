"""The shape of the plot data as types: what ``report.html``'s figures draw besides the report.

:func:`otelbench.report.plot_data.plot_data` reduces a run's records to :class:`PlotData`, the
compact per-request arrays (at most ``MAX_POINTS`` points a series, histograms as counts, a
seeded sample of requests for the waterfall) that :func:`otelbench.render.html.render_html`
passes to :mod:`otelbench.render.figures`. It is not written to disk and not part of
``report.json``: these types are its only description. Its version is
``otelbench.report.plot_data.PLOT_DATA_VERSION``.

Conventions: times on the run's axis are seconds since the run's first T_submit (client wall
clock); latencies are ms; a series holds finite numbers only (undefined samples are left out);
a value ``X | None`` is None where the run has no such number, a section ``X | None`` is None
where the run has no such data (no server span joined, no engine-hook span, no sample).

Usage::

    from otelbench.model.plots import PlotData
    from otelbench.report.plot_data import plot_data

    plots: PlotData = plot_data(data)
    plots["ttft_ms"]["client"]        # CdfSeries | None
"""

# No ``from __future__ import annotations``, as in :mod:`otelbench.model.report`: the functional
# ``TypedDict`` below (its key ``class`` is a keyword) evaluates its types when made.

from collections.abc import Sequence
from typing import Final, Literal, TypedDict

from otelbench.model.procedure import LevelEntry

__all__ = [
    "SINGLE_LEVEL_NOTE",
    "CdfSeries",
    "CurveBlock",
    "CurveLevel",
    "FluidityCdf",
    "FluidityPlot",
    "HistogramCounts",
    "Histograms",
    "JitterPoints",
    "PlotData",
    "PointSeries",
    "PreemptedPoints",
    "PreemptionPlot",
    "ThroughputLatencyCurve",
    "TtftCdfs",
    "Waterfall",
    "WaterfallRow",
    "WaterfallServer",
]


class CdfSeries(TypedDict):
    """An empirical CDF: ``count`` finite samples, of which at most ``MAX_POINTS`` are kept at
    evenly spread ranks (the first and the last kept), ascending in ``values``, each with its
    fraction ``(rank + 1) / count`` in ``fractions``."""

    count: int
    values: list[float]
    fractions: list[float]


class TtftCdfs(TypedDict):
    """``ttft_ms``: the CDFs of the client TTFT of the successful requests and of the server
    TTFT of the joined server spans of the requests the engine finished (the report's
    populations; None: no sample)."""

    client: CdfSeries | None
    server: CdfSeries | None


class HistogramCounts(TypedDict):
    """One series of :class:`Histograms`: its ``count`` finite samples, how many fall in each
    bin (``numpy.histogram``'s bins: ``[edges[k], edges[k+1])``, the last one closed) and how
    many lie past the last edge (``overflow``: a linear axis capped at 1.5 × the pooled P99)."""

    count: int
    counts: list[int]
    overflow: int


class Histograms(TypedDict):
    """``ttft_histogram_ms`` / ``itl_histogram_ms``: the client and server series counted on
    shared bin ``edges`` (ms), log-spaced when ``log`` (every sample positive, max/min ≥
    ``LOG_AXIS_RATIO``), else linear. ITL: the client's Option B and the server's Option C
    (draft 4.6.3). A series is None when it has no sample."""

    log: bool
    edges: list[float]
    client: HistogramCounts | None
    server: HistogramCounts | None


class PointSeries(TypedDict):
    """``(x, y)`` points of ``count`` requests, at most ``MAX_POINTS`` of them kept (evenly
    spread requests in submit order)."""

    count: int
    x: list[float]
    y: list[float]


class JitterPoints(TypedDict):
    """``jitter_ms``: each request's ITL jitter (ms; the population standard deviation of its
    ITLs, draft 5.4.4.2) against its submit time (s), client Option B and server Option C, of
    the requests with two or more ITL samples (None: none has)."""

    client: PointSeries | None
    server: PointSeries | None


class FluidityCdf(TypedDict):
    """An entry of ``fluidity.deadlines``: the CDF of the per-request fluidity-index under one
    Etalon decode-deadline preset (None: no index)."""

    preset: str
    decode_deadline_ms: float
    cdf: CdfSeries | None


class FluidityPlot(TypedDict):
    """``fluidity``: per-request fluidity-indices (Etalon §4.1) on ``metrics.fluidity``'s
    timeline (``source``) and population, one CDF per decode-deadline preset;
    ``prefill_deadline_ms`` is the fixed ``D_p``, None for a profiled ``D_p(L)``."""

    source: Literal["server", "client"]
    prefill_deadline_ms: float | None
    min_fluidity: float
    deadlines: list[FluidityCdf]


class PreemptedPoints(TypedDict):
    """``preemptions.preempted``: the preemptions in time order, at most ``MAX_POINTS`` of the
    ``count`` kept: when (s on the run's axis), how many each point stands for, the stall
    before the resumption (ms; None: the request finished without resuming) and the running
    total."""

    count: int
    time_s: list[float]
    preemptions: list[int]
    stall_ms: list[float | None]
    cumulative: list[int]


class PreemptionPlot(TypedDict):
    """``preemptions``: the preemptions over the run (draft 5.8.4's timeline) among the
    ``requests_observed`` joined engine-hook spans of finished requests; ``placement`` says
    where a point sits (at its event's engine time, or at its request's arrival in the engine
    when the events carry no time); ``window_s`` is the timeline's end."""

    placement: str
    requests_observed: int
    total: int
    window_s: float
    preempted: PreemptedPoints


class WaterfallServer(TypedDict):
    """A waterfall row's server span (the engine-hook span when the request has several): its
    name, its start in ms since the request's T_submit (two wall clocks), and its phases in ms
    (``pre_queue_ms``: from arrival to queueing, the server TTFT less queue and prefill); None
    where the span lacks the number."""

    span: str
    arrival_ms: float
    pre_queue_ms: float | None
    queue_ms: float | None
    prefill_ms: float | None
    decode_ms: float | None
    preemptions: float | None


WaterfallRow = TypedDict(
    "WaterfallRow",
    {
        "request": int,
        "class": str | None,
        "submit_s": float,
        "ttft_ms": float | None,
        "end_ms": float | None,
        "server": WaterfallServer | None,
        "guardrail_ms": list[float] | None,
    },
)
"""An entry of ``waterfall.requests``: one sampled successful request (its index among the
client spans, its class), its submit time (s on the run's axis), its TTFT and end (ms since its
T_submit), its server span (None: not joined) and ``[start, end]`` of its input guardrail
filters (ms since T_submit; None: no input filter span)."""


class Waterfall(TypedDict):
    """``waterfall``: ``sampled`` of the run's ``of`` successful requests, drawn with
    ``numpy.random.default_rng(seed)``, in request order; ``server_placement`` and
    ``guardrail`` say in words how the rows' server phases and guardrail windows are placed."""

    sampled: int
    of: int
    seed: int
    server_placement: str
    guardrail: str
    requests: list[WaterfallRow]


class PlotData(TypedDict):
    """The plot data of one run, :func:`otelbench.report.plot_data.plot_data`'s value
    (``version`` ``PLOT_DATA_VERSION``; ``time_origin`` says the run's time axis in words;
    ``window_s`` is the last response's end on it). A section is None when the run has no data
    for it."""

    version: int
    time_origin: str
    window_s: float
    ttft_ms: TtftCdfs
    ttft_histogram_ms: Histograms | None
    ttft_by_input: PointSeries | None
    itl_histogram_ms: Histograms | None
    jitter_ms: JitterPoints
    fluidity: FluidityPlot | None
    preemptions: PreemptionPlot | None
    waterfall: Waterfall


# ------------------------------------------------------------------------------------------
# The throughput-latency curve of a multi-level procedure (draft 5.3.4)
# ------------------------------------------------------------------------------------------
class CurveLevel(TypedDict, total=False):
    """A level row of a :class:`CurveBlock` given by hand; a procedure's own level rows
    (:class:`~otelbench.model.procedure.LevelEntry`) fit as they are."""

    offered_rps: float | None
    concurrency: int | None
    output_tokens_per_s: float | None
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    e2e_p99_ms: float | None
    itl_p99_ms: float | None
    p99_ms: float | None


class CurveBlock(TypedDict, total=False):
    """A multi-level procedure block (``otelbench.report.curve.CURVE_SHAPE``): its levels, the
    latency metric drawn, the levels the procedure named (draft 5.3.4: indices into
    ``levels``) and the SLO."""

    levels: Sequence[CurveLevel | LevelEntry]
    latency_metric: str
    knee: int | None
    saturation: int | None
    peak: int | None
    optimal: int | None
    slo_p99_ms: float | None


SINGLE_LEVEL_NOTE: Final = (
    "a single load level was run; the curve needs a multi-level procedure "
    "(report.procedure.levels, draft 5.3)"
)
"""A :class:`ThroughputLatencyCurve`'s ``note`` without a multi-level procedure (also what the
figure says when it is given no curve at all)."""


class ThroughputLatencyCurve(TypedDict):
    """What the throughput-latency figure draws (:func:`otelbench.report.curve.curve_of`): the
    usable levels' load, achieved output throughput (tokens/s) and latency P99 (ms), the latency
    drawn (``metric``: TTFT, TPOT, E2E or ITL), by what the load is counted (``load_key``,
    ``load_unit``), the SLO, draft 5.3.4's knee, saturation, peak and optimal levels (indices
    into the usable levels; None where there is none) and how many levels were left out
    (``dropped``: no load, throughput or P99). ``note`` says why there is no curve (the lists
    are then empty)."""

    note: str | None
    metric: str
    load_key: str
    load_unit: str
    load: list[float]
    thr: list[float]
    p99: list[float]
    slo_p99_ms: float | None
    knee: int | None
    saturation: int | None
    peak: int | None
    optimal: int | None
    dropped: int
