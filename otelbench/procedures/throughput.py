"""Draft 5.2, Output Token Throughput: search for the maximum sustainable load.

Procedure (5.2.3): estimate capacity (:mod:`~otelbench.procedures.probe`), run a reference
level at the lowest load of the range (the "lower load" of 5.2.3.1's latency criterion), then
search the load (:class:`~otelbench.procedures.planning.MaxSearch`: from the capacity estimate,
growing ×1.5 while levels pass, bisecting once one fails, until the bracket is within the
step). The load model is either of 5.2.2.2's:

* **open loop** (the default): the arrival rate is searched; each level is open loop (Poisson
  by default) for the level duration;
* **closed loop** (``load_model="closed-loop"``): the concurrency is searched (integers, from
  the capacity probe's concurrency); a level at concurrency ``c`` sends ``c`` × the probe's
  request throughput per in-flight request × the level duration requests (at least the
  profile's minimum), so that it lasts about the level duration. In a closed loop the client
  queue cannot grow and completions keep pace with arrivals by construction, so of 5.2.3.1's
  criteria the latency one (TTFT P99 > 10 × the lowest level's P50) is the one that fires.

A level **passes** (is sustainable) when

* it is not saturated by 5.2.3.1 (:func:`~otelbench.procedures.levels.saturation_at`: the
  in-flight queue grows while requests arrive, completions < 90 % of arrivals, or TTFT P99 >
  10 × the reference level's TTFT P50), and
* with a latency constraint (5.2.2.3), its TTFT P99 and TPOT P99 are within the SLO, and
* at least one request succeeded.

Without an SLO the search finds the saturation point (5.2.3 step 4.1), with one the highest
level meeting it (4.2). The steady-state check of 5.2.3.2 (ramp-up excluded, throughput and
latency stable across the two halves, queue not growing) is reported per level; a maximum
level that is not steady is a deviation, not a failure. Reported (5.2.5): output, request and
input throughput at the maximum sustainable level, the sustainable load, tokens per
GPU-second (with ``gpus`` > 0), and TTFT/TPOT/E2E P50/P95/P99 there. With an SLO, the
highest level measured that was not saturated is reported too (``highest_unsaturated_rps``:
the maximum without the SLO, as far as the SLO search's levels show it).

Example::

    run_procedure(ThroughputProcedure(ThroughputParams(slo_ttft_p99_ms=500)), spec)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, cast

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.model.procedure import (
    LatencyAtMax,
    LevelRow,
    ThroughputLevel,
    ThroughputSection,
    ThroughputSummary,
    ThroughputVerdict,
)
from otelbench.options import nested, option
from otelbench.procedures.base import (
    LoadSearch,
    Procedure,
    RawParameters,
    register_procedure,
    search_entries,
)
from otelbench.procedures.levels import saturation_at
from otelbench.procedures.planning import (
    OPEN_LOOP_OPTIONS,
    RATE_RANGE_OPTIONS,
    OpenLoopLevels,
    RateRange,
    shared_option,
)
from otelbench.procedures.probe import capacity_section, estimate_capacity
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.procedures.tradeoff import slo_ratio
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = ["SEARCH_ROLE", "ThroughputParams", "ThroughputProcedure", "throughput_verdict"]

SEARCH_ROLE: Final = "rate-search"


def throughput_verdict(
    row: LevelRow | None,
    lower_load_p50_ms: float | None,
    slo_ttft_p99_ms: float | None = None,
    slo_tpot_p99_ms: float | None = None,
) -> ThroughputVerdict:
    """Whether a level is sustainable (module docstring), with the reasons when it is not;
    ``row`` None: a level with no row (interrupted before its run ended).

    >>> v = throughput_verdict({"succeeded": 10, "queue_growth": "stable", "arrival_rps": 2.0,
    ...                         "completion_rps": 1.98, "ttft_p99_ms": 80.0,
    ...                         "tpot_p99_ms": 20.0}, 50.0, slo_ttft_p99_ms=60.0)
    >>> v["passed"], v["reasons"]
    (False, ['TTFT/TPOT P99 above the SLO (worst P99/SLO ratio 1.33)'])
    """
    sat = saturation_at(row, lower_load_p50_ms)
    reasons = []
    if not (row and row.get("succeeded")):
        reasons.append("no request succeeded")
    if sat["saturated"]:
        reasons.append("saturated (5.2.3.1): " + ", ".join(sat["fired"]))
    ratio = slo_ratio(row, slo_ttft_p99_ms, slo_tpot_p99_ms)
    has_slo = slo_ttft_p99_ms is not None or slo_tpot_p99_ms is not None
    if has_slo and ratio is None:
        reasons.append("the SLO could not be assessed (no P99 measured)")
    elif ratio is not None and ratio > 1.0:
        reasons.append(f"TTFT/TPOT P99 above the SLO (worst P99/SLO ratio {ratio:.2f})")
    return {"passed": not reasons, "reasons": reasons, "saturation": sat, "slo_ratio": ratio}


def _steady(entry: ThroughputLevel) -> bool | None:
    """Whether 5.2.3.2's steady state held at a level (None: not assessed)."""
    state = entry.get("steady_state")
    return state.get("steady") if state else None


def _latency(entry: ThroughputLevel | None) -> LatencyAtMax:
    """Table 4: the latency percentiles of the level at the maximum (None without one)."""
    if entry is None:
        return {
            "ttft": {"p50": None, "p95": None, "p99": None},
            "tpot": {"p50": None, "p95": None, "p99": None},
            "e2e": {"p50": None, "p95": None, "p99": None},
        }
    return {
        "ttft": {
            "p50": entry.get("ttft_p50_ms"),
            "p95": entry.get("ttft_p95_ms"),
            "p99": entry.get("ttft_p99_ms"),
        },
        "tpot": {
            "p50": entry.get("tpot_p50_ms"),
            "p95": entry.get("tpot_p95_ms"),
            "p99": entry.get("tpot_p99_ms"),
        },
        "e2e": {
            "p50": entry.get("e2e_p50_ms"),
            "p95": entry.get("e2e_p95_ms"),
            "p99": entry.get("e2e_p99_ms"),
        },
    }


@dataclass(frozen=True)
class ThroughputParams:
    """5.2.2 setup parameters; None takes the profile's value or one derived from capacity
    (``min_rps`` = 10 %, ``max_rps`` = 200 %, ``rate_step`` = profile resolution × capacity)."""

    rates: RateRange = nested(RateRange, help=RATE_RANGE_OPTIONS)
    open_loop: OpenLoopLevels = nested(OpenLoopLevels, help=OPEN_LOOP_OPTIONS)
    slo_ttft_p99_ms: float | None = shared_option("slo_ttft_p99_ms")
    slo_tpot_p99_ms: float | None = shared_option("slo_tpot_p99_ms")
    load_model: str = option(
        "open-loop", help="5.2.2.2: open-loop (search the rate) or closed-loop (the concurrency)."
    )
    """5.2.2.2: ``open-loop`` (search the arrival rate) or ``closed-loop`` (the concurrency)."""
    min_concurrency: int | None = option(None, help="Closed loop: lowest concurrency (default 1).")
    max_concurrency: int | None = option(
        None, help="Closed loop: highest concurrency (default 8 × probe concurrency)."
    )
    concurrency_step: int | None = option(None, help="Closed loop: search resolution (default 1).")

    def __post_init__(self) -> None:
        if self.load_model not in ("open-loop", "closed-loop"):
            raise ConfigError(
                f"--load-model must be open-loop or closed-loop, got {self.load_model!r}"
            )
        for name in ("min_concurrency", "max_concurrency", "concurrency_step"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if (
            self.min_concurrency is not None
            and self.max_concurrency is not None
            and self.min_concurrency > self.max_concurrency
        ):
            raise ConfigError("--min-concurrency must not exceed --max-concurrency")


@register_procedure("throughput", "5.2", "Output Token Throughput")
class ThroughputProcedure(LoadSearch, Procedure[ThroughputParams, ThroughputSection]):
    """Draft 5.2 (module docstring)."""

    @property
    def closed(self) -> bool:
        return self.params.load_model == "closed-loop"

    @property
    def load_key(self) -> str:
        """The level row key of the searched load."""
        return "concurrency" if self.closed else "offered_rps"

    def _load_in(self, entry: ThroughputLevel) -> float | None:
        """The searched load of a level's row (:attr:`load_key`)."""
        return entry.get("concurrency") if self.closed else entry.get("offered_rps")

    @property
    def has_slo(self) -> bool:
        return self.params.slo_ttft_p99_ms is not None or self.params.slo_tpot_p99_ms is not None

    def parameters(self) -> RawParameters:
        return self.search_parameters(
            self.params.load_model,
            "concurrency" if self.closed else "arrival rate",
            "highest level meeting the SLO and not saturated"
            if self.has_slo
            else "highest level not saturated (5.2.3.1)",
        )

    def _load_of(self, level: Level) -> float:
        return float((level.load.concurrency if self.closed else level.load.rate) or 0)

    def _level(self, session: ProcedureSession, value: float, label: str) -> bool:
        lower = [
            lv
            for lv in session.levels
            if lv.meta.get("role") == SEARCH_ROLE and self._load_of(lv) < value
        ]
        reference = min(lower, key=self._load_of) if lower else None
        p50 = reference.live_row.get("ttft_p50_ms") if reference and reference.live_row else None
        if self.closed:
            c = int(value)
            per_slot_rps = self.bounds["capacity_estimate_rps"] / self.probe_concurrency
            requests = max(self.min_requests, c, math.ceil(c * per_slot_rps * self.duration_s))
            load = LoadSpec(mode="closed_loop", requests=requests, concurrency=c)
        else:
            load = self.open_loop_level(value)
        level = session.run_level(load, label, {"role": SEARCH_ROLE})
        verdict = throughput_verdict(
            level.live_row, p50, self.params.slo_ttft_p99_ms, self.params.slo_tpot_p99_ms
        )
        level.meta["live_verdict"] = verdict["passed"]
        level.meta["lower_load_level"] = reference.index if reference else None
        return bool(verdict["passed"])

    def run(self, session: ProcedureSession) -> None:
        p = self.params
        capacity = estimate_capacity(session, p.rates.capacity_rps, self)
        bounds = {"capacity_estimate_rps": capacity}
        if self.closed:
            lo = float(p.min_concurrency or 1)
            hi = float(p.max_concurrency or 8 * self.probe_concurrency)
            start = float(self.probe_concurrency)
            step = float(p.concurrency_step or 1)
            bounds |= {"min_concurrency": lo, "max_concurrency": hi, "concurrency_step": step}
        else:
            rates = p.rates.bounds(capacity, self.profile.rate_resolution)
            lo, hi, step, start = rates["min_rps"], rates["max_rps"], rates["rate_step"], capacity
            bounds |= rates
        self.bounds = bounds
        search = self.start_search(
            start,
            lo,
            hi,
            step,
            integer=self.closed,
            rel_tolerance=self.profile.concurrency_resolution if self.closed else 0.0,
        )
        lowest = "reference (lowest concurrency)" if self.closed else "reference (lowest rate)"
        search.record(lo, self._level(session, lo, lowest))
        while (rate := search.next_value()) is not None:
            search.record(rate, self._level(session, rate, f"search {len(search.steps) + 1}"))

    def build(self, levels: list[Level]) -> ThroughputSection:
        p = self.params
        by_index = {lv.index: lv for lv in levels}

        def verdict_of(lv: Level) -> ThroughputVerdict:
            ref_index = lv.meta.get("lower_load_level")
            ref = by_index.get(ref_index) if ref_index is not None else None
            p50 = ref.row.get("ttft_p50_ms") if ref is not None and ref.row else None
            return throughput_verdict(lv.row, p50, p.slo_ttft_p99_ms, p.slo_tpot_p99_ms)

        entries = [
            cast(ThroughputLevel, e)
            for e in search_entries(levels, SEARCH_ROLE, verdict_of, self.notes)
        ]
        search = self.search
        best = search.best if search is not None else None
        best_entry = next(
            (e for e in entries if best is not None and self._load_in(e) == best), None
        )
        deviations = shortfalls(level_duration_s=self.duration_s)
        if self.duration_s < draft.THROUGHPUT_RECOMMENDED_DURATION_S:
            self.notes.append(
                f"{self.duration_s:g} s per level; 5.2.2.1 recommends "
                f"{draft.THROUGHPUT_RECOMMENDED_DURATION_S:g} s"
            )
        if search is not None and search.exhausted:
            unit = "concurrent requests" if self.closed else "req/s"
            deviations.append(
                f"the search stopped after {search.max_steps} levels before converging to the "
                f"step; the maximum lies between {fmt(search.best, 3)} and "
                f"{fmt(search.first_fail, 3)} {unit}"
            )
        if search is not None and search.capped:
            bound = "--max-concurrency" if self.closed else "--max-rps"
            self.notes.append(
                f"the highest load of the range was sustainable: the maximum may lie above {bound}"
            )
        unstable = (
            search.non_monotone_note("concurrent" if self.closed else "req/s") if search else None
        )
        if unstable is not None:
            self.notes.append(unstable)
        if best_entry is not None and not _steady(best_entry):
            deviations.append(
                "steady state (5.2.3.2) was not verified at the maximum sustainable level"
            )
        self.notes.append(
            "batch utilization (5.2.4.2) is not measurable: the target reports no batch sizes"
        )
        gpus = self.spec.gpus if self.spec is not None else 0
        out_tps = best_entry.get("output_tokens_per_s") if best_entry else None
        summary: ThroughputSummary = {
            "level_index": best_entry["index"] if best_entry else None,
            "max_output_tokens_per_s": out_tps,
            "max_requests_per_s": best_entry.get("achieved_rps") if best_entry else None,
            "max_input_tokens_per_s": best_entry.get("input_tokens_per_s") if best_entry else None,
            "load_model": p.load_model,
            "sustainable_load_rps": None if self.closed else best,
            "sustainable_concurrency": int(best) if self.closed and best is not None else None,
            "tokens_per_gpu_s": out_tps / gpus if out_tps is not None and gpus > 0 else None,
            "gpus": gpus,
            "criterion": "slo" if self.has_slo else "saturation",
        }
        highest = max(
            (
                load
                for e in entries
                if not e["verdict"]["saturation"]["saturated"] and e.get("succeeded")
                if (load := self._load_in(e)) is not None  # every search level has its load
            ),
            default=None,
        )
        if self.closed:
            summary["highest_unsaturated_concurrency"] = highest
        else:
            summary["highest_unsaturated_rps"] = highest
        return {
            "capacity": capacity_section(levels, p.rates.capacity_rps, self),
            "slo": {"ttft_p99_ms": p.slo_ttft_p99_ms, "tpot_p99_ms": p.slo_tpot_p99_ms},
            "levels": entries,
            "search": {
                "variable": "concurrency" if self.closed else "rps",
                "steps": [
                    {"concurrency": s.value, "passed": s.passed}
                    if self.closed
                    else {"rps": s.value, "passed": s.passed}
                    for s in search.steps
                ]
                if search
                else [],
                "best_rps": None if self.closed else best,
                "first_fail_rps": None if self.closed or not search else search.first_fail,
                "best_concurrency": best if self.closed else None,
                "first_fail_concurrency": search.first_fail if self.closed and search else None,
                "capped": search.capped if search else False,
                "exhausted": search.exhausted if search else False,
                "rate_step": self.bounds.get("rate_step"),
                "concurrency_step": self.bounds.get("concurrency_step"),
            },
            "summary": summary,
            "latency_at_max": _latency(best_entry),
            "deviations": deviations,
        }

    def render(self, result: ThroughputSection) -> list[str]:
        s = result["summary"]
        closed = s.get("load_model") == "closed-loop"

        def load_text(summary: ThroughputSummary) -> str:
            if closed:
                return fmt(summary.get("sustainable_concurrency"), 0, "concurrent requests")
            return fmt(summary.get("sustainable_load_rps"), 3, "req/s")

        gpu = (
            fmt(s["tokens_per_gpu_s"], 1, "tok/s/GPU")
            if s["tokens_per_gpu_s"] is not None
            else "n/a (no accelerator declared; --gpus)"
        )
        lines = [
            "## Summary results (5.2.5.1)",
            "",
            *table(
                ["Metric", "Value"],
                [
                    ["Max Output Throughput", fmt(s["max_output_tokens_per_s"], 1, "tok/s")],
                    ["Max Request Throughput", fmt(s["max_requests_per_s"], 3, "req/s")],
                    ["Max Input Throughput", fmt(s["max_input_tokens_per_s"], 1, "tok/s")],
                    ["Sustainable Load", load_text(s)],
                    [
                        "Highest unsaturated load measured (no SLO)",
                        fmt(s.get("highest_unsaturated_rps"), 3, "req/s")
                        if closed is False
                        else fmt(s.get("highest_unsaturated_concurrency"), 0, "concurrent"),
                    ],
                    ["Tokens per GPU-second", gpu],
                    [
                        "Criterion",
                        "SLO and no saturation"
                        if s["criterion"] == "slo"
                        else "no saturation (5.2.3.1)",
                    ],
                ],
            ),
            "",
            "## Latency at maximum throughput (5.2.5.2)",
            "",
        ]
        lat = result["latency_at_max"]
        lines += table(
            ["Metric", "P50", "P95", "P99"],
            [
                [name] + [fmt(q[key], 1, "ms") for key in ("p50", "p95", "p99")]
                for q, name in (
                    (lat["ttft"], "TTFT"),
                    (lat["tpot"], "TPOT"),
                    (lat["e2e"], "End-to-End"),
                )
            ],
        )
        lines += ["", "## Search (5.2.3)", ""]
        rows = []
        for lv in result["levels"]:
            v = lv["verdict"]
            steady = _steady(lv)
            rows.append(
                [
                    str(lv["index"]),
                    fmt(lv.get("concurrency"), 0) if closed else fmt(lv.get("offered_rps"), 3),
                    fmt(lv.get("output_tokens_per_s"), 1),
                    fmt(lv.get("ttft_p99_ms"), 1),
                    fmt(lv.get("tpot_p99_ms"), 1),
                    pct(lv.get("completion_ratio")),
                    str(lv.get("queue_growth") or NA),
                    NA if steady is None else ("yes" if steady else "no"),
                    "pass" if v["passed"] else "fail: " + "; ".join(v["reasons"]),
                ]
            )
        lines += table(
            ["#", "Concurrency" if closed else "Offered (r/s)", "Output (tok/s)",
             "TTFT P99 (ms)", "TPOT P99 (ms)", "Completion/arrival", "Queue", "Steady",
             "Verdict"],
            rows,
        )  # fmt: skip
        search = result["search"]
        if closed:
            line = (
                f"Maximum sustainable concurrency: {fmt(search['best_concurrency'], 0)}; lowest "
                f"failing: {fmt(search['first_fail_concurrency'], 0)} (closed loop)."
            )
        else:
            line = (
                f"Maximum sustainable rate: {fmt(search['best_rps'], 3)} req/s; lowest failing: "
                f"{fmt(search['first_fail_rps'], 3)} req/s (rate step "
                f"{fmt(search['rate_step'], 3)})."
            )
        lines += ["", line]
        return lines
