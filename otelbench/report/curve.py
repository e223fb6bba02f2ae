"""The throughput-latency curve of a multi-level procedure, ready to draw (draft 5.3.4).

:func:`curve_of` takes a procedure block (:data:`CURVE_SHAPE`: its level rows, and optionally
the latency drawn, the SLO and the levels the procedure itself named), keeps the levels that have
a load, a throughput and a P99, and derives the knee, saturation, peak and optimal levels that
the block does not name (:func:`otelbench.metrics.throughput_latency_points`).
:func:`procedure_curve` picks the levels of a ``procedure.json`` that form one load curve. Their
value, a :class:`~otelbench.model.plots.ThroughputLatencyCurve`, is what the figure
(:func:`otelbench.render.figures.throughput_latency`) draws: the renderer derives nothing.

Usage::

    from otelbench.report.curve import curve_of, procedure_curve

    render_html(report, plots, curve=curve_of({"levels": rows, "slo_p99_ms": 500.0}))
    render_procedure_html(result, markdown, procedure_curve(result))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, cast

from otelbench.metrics import throughput_latency_points
from otelbench.model.plots import (
    SINGLE_LEVEL_NOTE,
    CurveBlock,
    CurveLevel,
    ThroughputLatencyCurve,
)
from otelbench.model.procedure import LevelEntry, ProcedureReport, TradeoffSection
from otelbench.render.format import number

__all__ = ["CURVE_SHAPE", "curve_of", "procedure_curve"]

CURVE_SHAPE: Final = (
    'procedure = {"levels": [level row, ...], optional "latency_metric" ("ttft" by '
    'default, or "tpot", "e2e"), optional "knee", "saturation", "peak", "optimal" (indices '
    'into levels, or null) and "slo_p99_ms"}. A level row (the procedures\' level rows fit) '
    'has "offered_rps" (or, when any level lacks it, "concurrency"), "output_tokens_per_s" and '
    '"<latency_metric>_p99_ms" (or "p99_ms"); levels must ascend in load, and levels missing '
    "a value are left out. Missing knee/saturation/peak/optimal are derived by "
    "otelbench.metrics.throughput_latency_points (draft 5.3.4)"
)
"""The multi-level procedure block the throughput-latency curve is made from."""

NO_CURVE_NOTE: Final = "the procedure's levels do not form one load curve"

_LATENCY_LABELS: Final = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E", "itl": "ITL"}
_Point = Literal["knee", "saturation", "peak", "optimal"]


def _empty(note: str) -> ThroughputLatencyCurve:
    return {
        "note": note, "metric": "", "load_key": "", "load_unit": "", "load": [], "thr": [],
        "p99": [], "slo_p99_ms": None, "knee": None, "saturation": None, "peak": None,
        "optimal": None, "dropped": 0,
    }  # fmt: skip


def curve_of(block: CurveBlock | None) -> ThroughputLatencyCurve:
    """The curve of a procedure ``block`` (:data:`CURVE_SHAPE`), or a note saying why there is
    none (None or fewer than 2 levels: a single run; levels whose values are unusable)."""
    levels: Sequence[CurveLevel | LevelEntry] | None = (
        block.get("levels") if block is not None else None
    )
    if block is None or levels is None or len(levels) < 2:
        return _empty(SINGLE_LEVEL_NOTE)
    metric = block.get("latency_metric") or "ttft"
    key = f"{metric.lower()}_p99_ms"
    by_rate = all(number(r.get("offered_rps")) is not None for r in levels)
    load_key = "offered_rps" if by_rate else "concurrency"
    kept: list[int] = []
    load: list[float] = []
    thr: list[float] = []
    p99: list[float] = []
    for i, r in enumerate(levels):
        x = number(r.get(load_key))
        t = number(r.get("output_tokens_per_s"))
        p = number(r.get(key)) if key in r else number(r.get("p99_ms"))
        if x is None or t is None or p is None:
            continue
        kept.append(i)
        load.append(x)
        thr.append(t)
        p99.append(p)
    slo = number(block.get("slo_p99_ms"))
    try:
        points = throughput_latency_points(load, thr, p99, slo)
    except ValueError as exc:
        return _empty(f"the procedure's levels are unusable: {exc}")

    def index(name: _Point, derived: int | None) -> int | None:
        """The level the block names (mapped to the kept ones; None if left out), else the
        derived one."""
        if name not in block:
            return derived
        v = block.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v in kept:
            return kept.index(v)
        return None

    return {
        "note": None,
        "metric": _LATENCY_LABELS.get(metric.lower(), metric),
        "load_key": load_key,
        "load_unit": "req/s" if by_rate else "concurrent",
        "load": load,
        "thr": thr,
        "p99": p99,
        "slo_p99_ms": slo,
        "knee": index("knee", points.knee),
        "saturation": index("saturation", points.saturation),
        "peak": index("peak", points.peak),
        "optimal": index("optimal", points.optimal),
        "dropped": len(levels) - len(kept),
    }


def _curve_levels(result: ProcedureReport) -> list[LevelEntry]:
    """The procedure's levels that form one load curve: open-loop levels by offered rate (or,
    when fewer than 3, closed-loop levels by concurrency), of one configuration, by load."""
    levels = result.get("levels") or []
    if len({lv.get("configuration") for lv in levels}) > 1:
        return []  # configurations compared (5.7, 5.10): no single curve
    by_rate = [(rps, lv) for lv in levels if (rps := number(lv.get("offered_rps"))) is not None]
    by_concurrency = [
        (n, lv)
        for lv in levels
        if (n := number(lv.get("concurrency"))) is not None
        and number(lv.get("offered_rps")) is None
    ]
    for rows in (by_rate, by_concurrency):
        if len(rows) >= 3:
            return [lv for _, lv in sorted(rows, key=lambda row: row[0])]
    return []


def procedure_curve(result: ProcedureReport) -> ThroughputLatencyCurve:
    """The curve of a ``procedure.json`` (its levels that form one, with the 5.3.4 points a 5.3
    procedure names itself), or a note that its levels form none."""
    levels = _curve_levels(result)
    if not levels:
        return _empty(NO_CURVE_NOTE)
    block: CurveBlock = {"levels": levels}
    # the procedure's own points (5.3.4), when it has them: a 5.3 procedure.json holds
    # TradeoffSection's keys beside the envelope's
    if levels == result.get("levels") and "knee_index" in result:
        own = cast(TradeoffSection, result)
        block["knee"] = own["knee_index"]
        block["saturation"] = own["saturation_index"]
        block["peak"] = own["peak_index"]
        block["optimal"] = own["optimal_index"]
    return curve_of(block)
