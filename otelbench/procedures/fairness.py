"""Draft 5.6, Scheduling Fairness: each request class alone, then the mix; the 5.6 report.

Procedure (5.6.3), on the ``mixed-classes`` workload (5.6.2: ``short`` input 64–256 / output
32–128 tokens, ``long`` input 1024–4096 / output 256–1024; within each class the lengths follow
Synthetic-Skewed's log-normals, A.2, which 5.6.2 REQUIRES — ``--workload-param lengths=uniform``
draws them uniformly instead, a deviation its level reports list):

1. one isolated baseline level per class — that class alone, open loop at its share of the
   mixed rate (``rate × share``, so each class sees the arrival rate it has in the mix) for its
   share of the requests (at least the profile's ``min_level_requests``);
2. the mixed level: both classes at ``rate``, ``short_ratio`` short (80/20 by default).

Results (5.6.4), per class: TTFT and E2E P50/P99 isolated and mixed, latency inflation (mixed /
isolated, at P50 and P99), the starvation rate (mixed requests whose TTFT exceeds 5 × the class's
mixed TTFT median) and, over the mixed run, Jain's fairness index of the normalized latencies
(each request's TTFT / its class's isolated TTFT median; 1.0 is perfectly fair).

Example::

    run_procedure(FairnessProcedure(FairnessParams(rate=2.0)), spec)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Final, cast

import numpy as np

from otelbench import draft
from otelbench.arrays import F64
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.metrics.fairness import latency_inflation, scheduling_fairness
from otelbench.metrics.summary import percentile
from otelbench.model.procedure import FairnessClass, FairnessLevel, FairnessSection
from otelbench.options import option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.planning import shared_option
from otelbench.procedures.session import Level, LevelOverrides, ProcedureSession
from otelbench.query import RunData
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = [
    "CLASSES",
    "FAIRNESS_WORKLOAD",
    "FairnessParams",
    "FairnessProcedure",
    "class_latency",
]

FAIRNESS_WORKLOAD: Final = "mixed-classes"
"""The 5.6.2 workload; its ``short_ratio`` selects a class alone (1.0 / 0.0) or the mix."""
CLASSES: Final = ("short", "long")


@dataclass(frozen=True)
class FairnessParams:
    """5.6.2 load: the mixed run's open-loop ``rate`` (req/s), ``arrival`` process, the share
    of short requests, and the mixed run's ``requests``
    (None: enough for the draft's 500 requests of the smaller class, or the quick profile's
    ``min_level_requests``). ``isolated_rate`` None runs each class alone at its share of
    ``rate``; else at that rate. ``saturation_rps``: the saturation throughput measured by 5.2
    or 5.3, recorded so that the compliance check can judge ``rate`` against 5.6.2's 70–90 %."""

    rate: float = option(help="The mixed run's arrival rate, req/s.")
    short_ratio: float = option(
        draft.FAIRNESS_SHORT_MIX, help="Share of short requests (draft 0.8)."
    )
    requests: int | None = option(
        None, help="Mixed-run requests (default: 500 of the smaller class; draft)."
    )
    isolated_rate: float | None = option(
        None, help="Each class alone at this rate (default: its share of --rate)."
    )
    saturation_rps: float | None = option(
        None,
        help="The target's measured saturation throughput, req/s (5.2, 5.3), which 5.6.2's "
        "70-90 % load is judged against.",
    )
    arrival: str = shared_option("arrival")

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ConfigError("5.6 needs --rate > 0 (the mixed run's arrival rate)")
        if self.saturation_rps is not None and not self.saturation_rps > 0:
            raise ConfigError("--saturation-rps must be > 0")
        if not 0.0 < self.short_ratio < 1.0:
            raise ConfigError("--short-ratio must be strictly between 0 and 1 (two classes)")
        if self.isolated_rate is not None and not self.isolated_rate > 0:
            raise ConfigError("--isolated-rate must be > 0")
        if self.requests is not None and self.requests < 2:
            raise ConfigError("--requests must be at least 2")


def class_latency(data: RunData | None) -> dict[str, dict[str, F64]]:
    """Successful requests' TTFT, E2E and TPOT (ms) by request class:
    ``{class: {"ttft", "e2e", "tpot"}}``; TPOT is ``(E2E - TTFT) / (output tokens - 1)``
    (NaN with fewer than 2 output tokens)."""
    if data is None:
        return {}
    c = data.client
    labels = np.array([str(v) for v in c.request_class], dtype=np.str_)
    out: dict[str, dict[str, F64]] = {}
    for label in sorted(set(labels.tolist())):
        keep = (labels == label) & c.ok
        ttft = (c.ttft_us[keep] / 1000.0).astype(np.float64)
        e2e = (c.end_offset_us[keep] / 1000.0).astype(np.float64)
        steps = c.output_tokens[keep] - 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(steps >= 1.0, (e2e - ttft) / steps, np.nan)
        out[label] = {"ttft": ttft, "e2e": e2e, "tpot": tpot.astype(np.float64)}
    return out


def _finite(values: F64) -> F64:
    return values[np.isfinite(values)]


def _p(values: F64, q: int) -> float | None:
    """The ``q``-th percentile of finite ``values``; None without any."""
    return percentile(values, q) if values.size else None


def _inflation(mixed: F64, isolated: F64, q: int) -> float | None:
    """5.6.4's latency inflation at ``q``; None unless both runs measured the class."""
    return latency_inflation(mixed, isolated, q) if isolated.size and mixed.size else None


@register_procedure("fairness", "5.6", "Scheduling Fairness")
class FairnessProcedure(Procedure[FairnessParams, FairnessSection]):
    """Draft 5.6 (module docstring)."""

    @property
    def requests(self) -> int:
        if self.params.requests is not None:
            return self.params.requests
        per_class = (
            draft.FAIRNESS_CLASS_REQUESTS
            if self.profile.name == "draft"
            else self.profile.min_level_requests
        )
        smaller = min(self.params.short_ratio, 1.0 - self.params.short_ratio)
        return max(2, math.ceil(per_class / smaller - 1e-9))

    def share(self, label: str) -> float:
        p = self.params.short_ratio
        return p if label == "short" else 1.0 - p

    def isolated_load(self, label: str) -> LoadSpec:
        share = self.share(label)
        rate = self.params.isolated_rate or round(self.params.rate * share, 9)
        n = max(self.profile.min_level_requests, 2, round(self.requests * share))
        return LoadSpec(mode=self.params.arrival, requests=n, rate=rate)  # type: ignore[arg-type]

    def mixed_load(self) -> LoadSpec:
        p = self.params
        return LoadSpec(mode=p.arrival, requests=self.requests, rate=p.rate)  # type: ignore[arg-type]

    def planned_levels(self) -> int | None:
        return len(CLASSES) + 1

    def parameters(self) -> RawParameters:
        return {
            **asdict(self.params),
            "requests": self.requests,
            "workload": FAIRNESS_WORKLOAD,
            "isolated": {
                label: {
                    "rate": self.isolated_load(label).rate,
                    "requests": self.isolated_load(label).requests,
                }
                for label in CLASSES
            },
            "starvation_factor": draft.FAIRNESS_STARVATION_FACTOR,
            "load_model": "open-loop",
        }

    def _overrides(self, session: ProcedureSession, short_ratio: float) -> LevelOverrides:
        params = {**session.base.workload_params, "short_ratio": short_ratio}
        return {"workload": FAIRNESS_WORKLOAD, "workload_params": params}

    def run(self, session: ProcedureSession) -> None:
        for label in CLASSES:
            ratio = 1.0 if label == "short" else 0.0
            session.run_level(
                self.isolated_load(label),
                f"isolated {label}",
                {"role": "isolated", "request_class": label},
                overrides=self._overrides(session, ratio),
            )
        session.run_level(
            self.mixed_load(),
            f"mixed {round(100 * self.params.short_ratio)}/"
            f"{round(100 * (1 - self.params.short_ratio))}",
            {"role": "mixed", "request_class": None},
            overrides=self._overrides(session, self.params.short_ratio),
        )

    def build(self, levels: list[Level]) -> FairnessSection:
        isolated: dict[str, dict[str, F64]] = {}
        mixed: dict[str, dict[str, F64]] = {}
        for level in levels:
            lat = class_latency(level.data)
            if level.meta.get("role") == "isolated":
                label = str(level.meta["request_class"])
                if label in lat:
                    isolated[label] = lat[label]
            elif level.meta.get("role") == "mixed":
                mixed = lat
        empty = np.empty(0, dtype=np.float64)
        m_ttft = [(_finite(v["ttft"]), k) for k, v in mixed.items()]
        i_ttft = [(_finite(v["ttft"]), k) for k, v in isolated.items()]
        fair = scheduling_fairness(
            np.concatenate([v for v, _ in m_ttft]) if m_ttft else empty,
            np.concatenate([np.full(v.size, k) for v, k in m_ttft]) if m_ttft else np.empty(0),
            np.concatenate([v for v, _ in i_ttft]) if i_ttft else empty,
            np.concatenate([np.full(v.size, k) for v, k in i_ttft]) if i_ttft else np.empty(0),
        )
        classes: list[FairnessClass] = []
        for label in CLASSES:
            iso = isolated.get(label, {"ttft": empty, "e2e": empty, "tpot": empty})
            mix = mixed.get(label, {"ttft": empty, "e2e": empty, "tpot": empty})
            row = fair.classes.get(label)
            ttft_i, ttft_m = _finite(iso["ttft"]), _finite(mix["ttft"])
            e2e_i, e2e_m = _finite(iso["e2e"]), _finite(mix["e2e"])
            tpot = _finite(mix.get("tpot", empty))
            classes.append(
                {
                    "request_class": label,
                    "share": self.share(label),
                    "isolated_count": int(ttft_i.size),
                    "mixed_count": int(ttft_m.size),
                    "ttft_p50_isolated_ms": _p(ttft_i, 50),
                    "ttft_p50_mixed_ms": _p(ttft_m, 50),
                    "ttft_inflation_p50": _inflation(ttft_m, ttft_i, 50),
                    "ttft_p95_isolated_ms": _p(ttft_i, 95),
                    "ttft_p95_mixed_ms": _p(ttft_m, 95),
                    "ttft_inflation_p95": _inflation(ttft_m, ttft_i, 95),
                    "ttft_p99_isolated_ms": _p(ttft_i, 99),
                    "ttft_p99_mixed_ms": _p(ttft_m, 99),
                    "ttft_inflation_p99": _inflation(ttft_m, ttft_i, 99),
                    "e2e_p50_isolated_ms": _p(e2e_i, 50),
                    "e2e_p50_mixed_ms": _p(e2e_m, 50),
                    "e2e_inflation_p50": _inflation(e2e_m, e2e_i, 50),
                    "e2e_p95_isolated_ms": _p(e2e_i, 95),
                    "e2e_p95_mixed_ms": _p(e2e_m, 95),
                    "e2e_inflation_p95": _inflation(e2e_m, e2e_i, 95),
                    "e2e_p99_isolated_ms": _p(e2e_i, 99),
                    "e2e_p99_mixed_ms": _p(e2e_m, 99),
                    "e2e_inflation_p99": _inflation(e2e_m, e2e_i, 99),
                    "tpot_p50_mixed_ms": _p(tpot, 50),
                    "tpot_p99_mixed_ms": _p(tpot, 99),
                    "starvation_rate": None if row is None else row.starvation_rate,
                }
            )
        deviations: list[str] = []
        for label in CLASSES:
            if label not in isolated:
                deviations.append(f"no isolated baseline for the {label} class: not measured")
            if label not in mixed:
                deviations.append(f"no {label} request completed in the mixed run")
        for c in classes:
            if c["mixed_count"] < draft.FAIRNESS_CLASS_REQUESTS:
                deviations.append(
                    f"{c['mixed_count']} {c['request_class']} requests in the mixed run, fewer "
                    f"than the {draft.FAIRNESS_CLASS_REQUESTS} per class of 5.6.2"
                )
        mixed_level = next((lv for lv in levels if lv.meta.get("role") == "mixed"), None)
        duration = mixed_level.row.get("duration_s") if mixed_level and mixed_level.row else None
        if duration is not None and duration < draft.FAIRNESS_MIXED_DURATION_S:
            deviations.append(
                f"the mixed run lasted {duration:.1f} s, shorter than the "
                f"{draft.FAIRNESS_MIXED_DURATION_S:g} s of 5.6.3"
            )
        if self.params.isolated_rate is None:
            deviations.append(
                "each class ran alone at its share of the mixed rate (the arrival rate it has in "
                "the mix); 5.6.3 step 2 says 'at same total load': --isolated-rate equal to "
                "--rate runs that"
            )
        if self.params.short_ratio != draft.FAIRNESS_SHORT_MIX:
            deviations.append(
                f"class mix {self.params.short_ratio:.0%} short, not the draft's 80/20 (5.6.2)"
            )
        if self.params.isolated_rate is not None:
            self.notes.append(
                f"each class ran alone at {self.params.isolated_rate:g} req/s (--isolated-rate), "
                "not at its share of the mixed rate"
            )
        self.notes.append(
            "5.6.2 recommends a load of 70-90 % of the saturation throughput (5.2) for --rate"
        )
        self.notes.append(
            "Jain's index is over the mixed run's TTFTs, each divided by its class's isolated "
            "TTFT median (1.0: every class slowed down alike); starvation: mixed TTFT > "
            f"{draft.FAIRNESS_STARVATION_FACTOR:g} × the class's mixed TTFT median"
        )
        return {
            "levels": [cast(FairnessLevel, level_entry(lv)) for lv in levels],
            "classes": classes,
            "jain_index": fair.jain_index,
            "normalized_requests": fair.normalized_requests,
            "deviations": deviations,
        }

    def render(self, result: FairnessSection) -> list[str]:
        rows = []
        for c in result["classes"]:
            for metric, name in (("ttft", "TTFT"), ("e2e", "E2E")):
                for q in (50, 99):
                    inflation = c.get(f"{metric}_inflation_p{q}")
                    rows.append([
                        c["request_class"], f"{name} P{q}",
                        fmt(c.get(f"{metric}_p{q}_isolated_ms"), 2, "ms"),
                        fmt(c.get(f"{metric}_p{q}_mixed_ms"), 2, "ms"),
                        NA if inflation is None else f"{inflation:.2f}×",
                    ])  # fmt: skip
        lines = ["## Per-class results, mixed run (5.6.5)", ""]
        lines += table(
            ["Class", "Count", "TTFT P50", "TTFT P95", "TTFT P99", "TPOT P50", "TPOT P99"],
            [
                [c["request_class"], str(c["mixed_count"]),
                 *(fmt(c.get(f"ttft_p{q}_mixed_ms"), 1, "ms") for q in (50, 95, 99)),
                 *(fmt(c.get(f"tpot_p{q}_mixed_ms"), 1, "ms") for q in (50, 99))]
                for c in result["classes"]
            ],
        )  # fmt: skip
        lines += ["", "## Per-class latency, isolated vs mixed (5.6.4)", ""]
        lines += table(["Class", "Metric", "Isolated", "Mixed", "Inflation"], rows)
        lines += ["", "## Fairness metrics (5.6.5)", ""]
        jain = result.get("jain_index")
        summary = [["Jain's fairness index (normalized TTFT)", fmt(jain, 3)]]
        summary.append(["Requests normalized", str(result.get("normalized_requests"))])
        for c in result["classes"]:
            summary.append([
                f"Starvation rate, {c['request_class']} (> 5× class median)",
                pct(c.get("starvation_rate")),
            ])  # fmt: skip
            summary.append([
                f"Requests, {c['request_class']} (isolated / mixed)",
                f"{c['isolated_count']} / {c['mixed_count']}",
            ])  # fmt: skip
        lines += table(["Metric", "Value"], summary)
        return lines
