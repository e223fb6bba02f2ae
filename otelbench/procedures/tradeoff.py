"""Draft 5.3, Throughput-Latency Tradeoff: an open-loop sweep from 10 % to 120 % of capacity.

Procedure (5.3.3): estimate capacity (:mod:`~otelbench.procedures.probe`), define the levels
10 %, 20 %, …, 120 % of it (at least 10), run each in ascending order (open loop, Poisson by
default) for the level duration, record offered load, achieved throughput and latency
percentiles. Derived (5.3.4, :func:`otelbench.metrics.throughput_latency_points`):

* **knee** — the first level whose TTFT P99 exceeds 2 × the minimum TTFT P99 (the draft's
  Table 5 names TTFT P99);
* **saturation** — the first level whose achieved output-token throughput is lower than the
  previous level's (None when it never decreases; ``peak_index`` is then the highest);
* **optimal operating point** — the level of highest output-token throughput meeting the SLO
  (TTFT P99 and/or TPOT P99 limits; None without an SLO).

Levels whose TTFT P99 or throughput is undefined (every request failed) take no part in the
derived points. The ``levels`` block (one entry per sweep level, the probe apart) is what a
renderer plots: ``offered_rps``, ``achieved_rps``, ``output_tokens_per_s``, ``ttft_p50_ms``,
``ttft_p99_ms``, ``e2e_p99_ms`` … with ``knee_index``, ``saturation_index``, ``optimal_index``
and ``peak_index`` indexing it.

Example::

    run_procedure(TradeoffProcedure(TradeoffParams(capacity_rps=4.0)), spec)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict, cast

import numpy as np

from otelbench.errors import ConfigError
from otelbench.metrics import throughput_latency_points
from otelbench.model.procedure import (
    DerivedPoint,
    LevelRow,
    TradeoffLevel,
    TradeoffSection,
)
from otelbench.options import nested
from otelbench.procedures.base import (
    LevelSizes,
    Procedure,
    RawParameters,
    level_entry,
    register_procedure,
)
from otelbench.procedures.levels import saturation_at
from otelbench.procedures.planning import (
    OPEN_LOOP_OPTIONS,
    SWEEP_FRACTIONS,
    OpenLoopLevels,
    fraction_levels,
    shared_option,
)
from otelbench.procedures.probe import PROBE_ROLE, capacity_section, estimate_capacity
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = [
    "SWEEP_ROLE",
    "CurvePoints",
    "TradeoffParams",
    "TradeoffProcedure",
    "curve_points",
    "slo_ratio",
]

SWEEP_ROLE = "sweep"


@dataclass(frozen=True)
class TradeoffParams:
    """5.3.2 setup parameters; None takes the profile's value."""

    capacity_rps: float | None = shared_option("capacity_rps")
    fractions: tuple[float, ...] = SWEEP_FRACTIONS
    open_loop: OpenLoopLevels = nested(OpenLoopLevels, help=OPEN_LOOP_OPTIONS)
    slo_ttft_p99_ms: float | None = shared_option("slo_ttft_p99_ms")
    slo_tpot_p99_ms: float | None = shared_option("slo_tpot_p99_ms")

    def __post_init__(self) -> None:
        if self.capacity_rps is not None and not self.capacity_rps > 0:
            raise ConfigError("--capacity-rps must be > 0")
        fraction_levels(1.0, self.fractions)  # validates


def slo_ratio(
    row: LevelRow | None, slo_ttft_p99_ms: float | None, slo_tpot_p99_ms: float | None
) -> float | None:
    """The level's worst P99 / SLO ratio (<= 1: meets every SLO given); None when undefined
    (``row`` None: a level with no row).

    >>> slo_ratio({"ttft_p99_ms": 50.0, "tpot_p99_ms": 30.0}, 100.0, 20.0)
    1.5
    """
    ratios = []
    p99s = (row.get("ttft_p99_ms"), row.get("tpot_p99_ms")) if row else (None, None)
    for value, slo in zip(p99s, (slo_ttft_p99_ms, slo_tpot_p99_ms), strict=True):
        if slo is None:
            continue
        if value is None:
            return None
        ratios.append(float(value) / slo)
    return max(ratios) if ratios else None


class CurvePoints(TypedDict):
    """What :func:`curve_points` finds: the four indices (into its rows), the lowest TTFT P99,
    each point's reason and the rows used."""

    knee_index: int | None
    saturation_index: int | None
    optimal_index: int | None
    peak_index: int | None
    min_ttft_p99_ms: float | None
    reasons: dict[str, str]
    levels_used: list[int]


def curve_points(
    rows: Sequence[LevelRow],
    slo_ttft_p99_ms: float | None = None,
    slo_tpot_p99_ms: float | None = None,
) -> CurvePoints:
    """Knee, saturation, optimal and peak indices (into ``rows``, level rows or the part of
    them it reads: ``offered_rps``, ``output_tokens_per_s``, ``ttft_p99_ms``, ``tpot_p99_ms``)
    with their reasons (5.3.4).

    >>> rows = [{"offered_rps": r, "output_tokens_per_s": t, "ttft_p99_ms": p}
    ...         for r, t, p in [(2, 284, 142), (6, 852, 178), (10, 1420, 267), (14, 1988, 512)]]
    >>> p = curve_points(rows, slo_ttft_p99_ms=300)
    >>> p["knee_index"], p["saturation_index"], p["optimal_index"], p["peak_index"]
    (3, None, 2, 3)
    """
    figures = (
        (r.get("offered_rps"), r.get("output_tokens_per_s"), r.get("ttft_p99_ms")) for r in rows
    )
    defined = [
        (i, float(rps), float(tokens), float(ttft))
        for i, (rps, tokens, ttft) in enumerate(figures)
        if rps is not None and tokens is not None and ttft is not None
    ]
    usable = [i for i, *_ in defined]
    out: CurvePoints = {
        "knee_index": None,
        "saturation_index": None,
        "optimal_index": None,
        "peak_index": None,
        "min_ttft_p99_ms": None,
        "reasons": {},
        "levels_used": usable,
    }
    if not usable:
        out["reasons"] = {k: "no level has a defined throughput and TTFT P99" for k in
                          ("knee", "saturation", "optimal", "peak")}  # fmt: skip
        return out
    load = [rps for _, rps, _, _ in defined]
    thr = [tokens for _, _, tokens, _ in defined]
    p99 = [ttft for _, _, _, ttft in defined]
    points = throughput_latency_points(load, thr, p99)
    ratios = [slo_ratio(rows[i], slo_ttft_p99_ms, slo_tpot_p99_ms) for i in usable]
    optimal: int | None = None
    if slo_ttft_p99_ms is not None or slo_tpot_p99_ms is not None:
        finite = [r if r is not None else math.inf for r in ratios]
        if any(np.isfinite(finite)):
            worst = [min(r, 1e300) for r in finite]
            optimal = throughput_latency_points(load, thr, worst, slo_p99=1.0).optimal
    reasons = {
        "knee": (
            f"TTFT P99 first exceeds 2 × the minimum ({points.min_p99:.2f} ms)"
            if points.knee is not None
            else f"TTFT P99 never exceeds 2 × its minimum ({points.min_p99:.2f} ms)"
        ),
        "saturation": (
            "achieved output-token throughput first decreases from the previous level"
            if points.saturation is not None
            else "achieved output-token throughput never decreases from one level to the "
            "next: no saturation point within the sweep (see peak_index)"
        ),
        "optimal": (
            "highest output-token throughput meeting the SLO"
            if optimal is not None
            else (
                "no SLO given"
                if slo_ttft_p99_ms is None and slo_tpot_p99_ms is None
                else "no level meets the SLO"
            )
        ),
        "peak": "highest achieved output-token throughput up to the saturation point",
    }
    out["knee_index"] = None if points.knee is None else usable[points.knee]
    out["saturation_index"] = None if points.saturation is None else usable[points.saturation]
    out["optimal_index"] = None if optimal is None else usable[optimal]
    out["peak_index"] = usable[points.peak]
    out["min_ttft_p99_ms"] = points.min_p99
    out["reasons"] = reasons
    return out


def _derived(index: int | None, entries: list[TradeoffLevel], reason: str) -> DerivedPoint:
    """A point of ``derived``: its index into ``levels``, that level's offered rate, why."""
    return {
        "index": index,
        "offered_rps": entries[index]["offered_rps"] if index is not None else None,
        "reason": reason,
    }


@register_procedure("throughput-latency", "5.3", "Throughput-Latency Tradeoff")
class TradeoffProcedure(LevelSizes, Procedure[TradeoffParams, TradeoffSection]):
    """Draft 5.3 (module docstring)."""

    capacity_rps: float | None = None
    """The capacity estimate the sweep's rates are fractions of, once :meth:`run` has it."""

    def planned_levels(self) -> int | None:
        probe = 0 if self.params.capacity_rps is not None else 1
        return len(self.params.fractions) + probe

    def parameters(self) -> RawParameters:
        return {
            **self.sized_parameters(),
            "load_model": "open-loop (required by 5.3.2)",
        }

    def run(self, session: ProcedureSession) -> None:
        capacity = estimate_capacity(session, self.params.capacity_rps, self)
        self.capacity_rps = capacity
        for fraction, rate in zip(
            self.params.fractions, fraction_levels(capacity, self.params.fractions), strict=True
        ):
            session.run_level(
                self.open_loop_level(rate),
                f"{100 * fraction:.0f}% of capacity",
                {"role": SWEEP_ROLE, "fraction": fraction},
            )

    def build(self, levels: list[Level]) -> TradeoffSection:
        sweep = [lv for lv in levels if lv.meta.get("role") == SWEEP_ROLE]
        p = self.params
        entries = [cast(TradeoffLevel, level_entry(lv)) for lv in sweep]
        reference_p50 = entries[0].get("ttft_p50_ms") if entries else None
        for i, entry in enumerate(entries):
            entry["saturation_criteria"] = saturation_at(entry, reference_p50 if i else None)
            entry["slo_ratio"] = slo_ratio(entry, p.slo_ttft_p99_ms, p.slo_tpot_p99_ms)
        points = curve_points(entries, p.slo_ttft_p99_ms, p.slo_tpot_p99_ms)
        deviations = shortfalls(level_duration_s=self.duration_s, levels=len(sweep))
        if any(lv.meta.get("role") == PROBE_ROLE for lv in levels):
            self.notes.append(
                "capacity was estimated by a closed-loop probe; its level is in "
                "capacity.probe, not in levels"
            )
        return {
            "capacity": capacity_section(levels, p.capacity_rps, self),
            "slo": {"ttft_p99_ms": p.slo_ttft_p99_ms, "tpot_p99_ms": p.slo_tpot_p99_ms},
            "levels": entries,
            "knee_index": points["knee_index"],
            "saturation_index": points["saturation_index"],
            "optimal_index": points["optimal_index"],
            "peak_index": points["peak_index"],
            "min_ttft_p99_ms": points["min_ttft_p99_ms"],
            "derived": {
                "knee": _derived(points["knee_index"], entries, points["reasons"]["knee"]),
                "saturation": _derived(
                    points["saturation_index"], entries, points["reasons"]["saturation"]
                ),
                "optimal": _derived(points["optimal_index"], entries, points["reasons"]["optimal"]),
                "peak": _derived(points["peak_index"], entries, points["reasons"]["peak"]),
            },
            "deviations": deviations,
        }

    def render(self, result: TradeoffSection) -> list[str]:
        cap = result["capacity"]
        lines = [
            "## Capacity estimate (5.3.3 step 1)",
            "",
            f"{fmt(cap.get('rps'), 3)} req/s — {cap.get('source')}.",
            "",
            "## Throughput-latency table (5.3.5)",
            "",
        ]
        rows = []
        for lv in result["levels"]:
            rows.append(
                [
                    fmt(lv.get("offered_rps"), 3),
                    fmt(lv.get("achieved_rps"), 3),
                    fmt(lv.get("output_tokens_per_s"), 1),
                    *(
                        fmt(lv.get(f"{metric}_{q}_ms"), 1)
                        for metric in ("ttft", "tpot", "e2e")
                        for q in ("p50", "p95", "p99")
                    ),
                    pct(lv.get("success_rate")),
                    str(lv.get("queue_growth") or NA),
                ]
            )
        lines += table(
            ["Offered (r/s)", "Achieved (r/s)", "Achieved (tok/s)", "TTFT P50", "TTFT P95",
             "TTFT P99", "TPOT P50", "TPOT P95", "TPOT P99", "E2E P50", "E2E P95", "E2E P99",
             "Success", "Queue"],
            rows,
        )  # fmt: skip
        lines += ["", "Latencies in ms.", ""]
        derived = result["derived"]
        for d, label in (
            (derived["knee"], "Knee point"),
            (derived["saturation"], "Saturation point"),
            (derived["optimal"], "Optimal operating point"),
            (derived["peak"], "Throughput peak"),
        ):
            i = d["index"]
            at = (
                f"{fmt(d['offered_rps'], 3)} req/s "
                f"(levels[{i}], run #{result['levels'][i]['index']})"
                if i is not None
                else "none"
            )
            lines.append(f"- {label}: {at} — {d['reason']}")
        return lines
