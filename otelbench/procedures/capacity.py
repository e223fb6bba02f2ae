"""Draft 5.5, Concurrent Request Capacity: binary search on closed-loop concurrency.

Procedure (5.5.3): from the initial concurrency, each level keeps ``concurrency`` requests in
flight (closed loop) for ``requests_per_slot × concurrency`` completions — and, when the
profile sets a minimum duration, enough more to last it at the previous level's median E2E
latency — then checks the success criteria (5.5.2); the search
(:class:`~otelbench.procedures.planning.MaxSearch`, integers) doubles the concurrency while
levels pass, halves it while they fail, then bisects to convergence.

Success criteria (5.5.2), all required:

* request completion rate (successful / sent) >= 99 %;
* TTFT P99 <= the threshold (``slo_ttft_p99_ms``; without one the criterion is not applied and
  the report lists that as a deviation);
* no out-of-memory errors — as the API shows them: no request failed with an HTTP 5xx status
  (an engine that runs out of KV-cache memory preempts or fails requests with a server error).

Reported (5.5.4): the maximum concurrency meeting the criteria, the output-token throughput
there, and the tokens in flight there (time-averaged input + output tokens of the open
requests, :func:`~otelbench.procedures.levels.level_row`).

Example::

    run_procedure(CapacityProcedure(CapacityParams(slo_ttft_p99_ms=500)), spec)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import cast

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.model.procedure import (
    CapacityLevel,
    CapacitySection,
    CapacityVerdict,
    LevelRow,
)
from otelbench.options import option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.planning import MaxSearch, shared_option
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = ["CapacityParams", "CapacityProcedure", "capacity_verdict"]


def _server_errors(failed_by_type: dict[str, int]) -> int:
    return sum(n for kind, n in failed_by_type.items() if kind.isdigit() and int(kind) >= 500)


def capacity_verdict(row: LevelRow | None, slo_ttft_p99_ms: float | None) -> CapacityVerdict:
    """The 5.5.2 success criteria at one level (module docstring); ``row`` None: a level with
    no row (interrupted before its run ended), no request.

    >>> v = capacity_verdict({"success_rate": 0.97, "ttft_p99_ms": 100.0,
    ...                       "failed_by_type": {"500": 3}}, 200.0)
    >>> v["passed"], v["reasons"]
    (False, ['completion 97.0% < 99%', '3 server error(s) (HTTP 5xx: out of memory or similar)'])
    """
    reasons = []
    rate = row.get("success_rate") if row else None
    if rate is None or rate < draft.CAPACITY_MIN_COMPLETION:
        reasons.append(
            f"completion {pct(rate)} < {draft.CAPACITY_MIN_COMPLETION:.0%}"
            if rate is not None
            else "no request"
        )
    p99 = row.get("ttft_p99_ms") if row else None
    if slo_ttft_p99_ms is not None and (p99 is None or p99 > slo_ttft_p99_ms):
        reasons.append(f"TTFT P99 {fmt(p99, 1)} ms > {slo_ttft_p99_ms:g} ms")
    errors = _server_errors(row.get("failed_by_type") or {}) if row else 0
    if errors:
        reasons.append(f"{errors} server error(s) (HTTP 5xx: out of memory or similar)")
    return {"passed": not reasons, "reasons": reasons, "server_errors": errors}


@dataclass(frozen=True)
class CapacityParams:
    """5.5.2 setup parameters; None takes the profile's value."""

    initial_concurrency: int = option(8, help="Starting concurrency.")
    max_concurrency: int = option(512, help="Upper bound of the search.")
    slo_ttft_p99_ms: float | None = shared_option("slo_ttft_p99_ms")
    requests_per_slot: int | None = option(
        None, help="Completions per slot (default: profile's; draft 100)."
    )
    min_duration_s: float | None = option(
        None, help="Seconds per level at least (default: profile's).", name="min_duration"
    )
    resolution: float | None = option(
        None, help="Convergence, × the passing concurrency (0: exact)."
    )
    """Convergence: stop when fail − pass <= max(1, resolution × pass)."""

    def __post_init__(self) -> None:
        if not 1 <= self.initial_concurrency <= self.max_concurrency:
            raise ConfigError("need 1 <= --initial-concurrency <= --max-concurrency")
        if self.slo_ttft_p99_ms is not None and not self.slo_ttft_p99_ms > 0:
            raise ConfigError("--slo-ttft-p99-ms must be > 0")


@register_procedure("capacity", "5.5", "Concurrent Request Capacity")
class CapacityProcedure(Procedure[CapacityParams, CapacitySection]):
    """Draft 5.5 (module docstring)."""

    search: MaxSearch | None = None
    """The concurrency search, once :meth:`run` has started it."""

    @property
    def per_slot(self) -> int:
        return self.params.requests_per_slot or self.profile.capacity_requests_per_slot

    @property
    def min_duration_s(self) -> float:
        d = self.params.min_duration_s
        return self.profile.capacity_min_duration_s if d is None else d

    @property
    def resolution(self) -> float:
        r = self.params.resolution
        return self.profile.concurrency_resolution if r is None else r

    def parameters(self) -> RawParameters:
        return {
            **asdict(self.params),
            "requests_per_slot": self.per_slot,
            "min_duration_s": self.min_duration_s,
            "resolution": self.resolution,
            "max_levels": self.profile.search_max_levels,
            "min_completion": draft.CAPACITY_MIN_COMPLETION,
            "load_model": "closed-loop",
        }

    def requests_for(self, concurrency: int, last_e2e_p50_ms: float | None) -> int:
        """Requests of a level: per-slot completions, and enough to last the minimum duration
        at the last level's median E2E latency (when known)."""
        n = concurrency * self.per_slot
        if self.min_duration_s > 0 and last_e2e_p50_ms:
            n = max(n, math.ceil(self.min_duration_s * concurrency / (last_e2e_p50_ms / 1000)))
        return n

    def run(self, session: ProcedureSession) -> None:
        p = self.params
        search = MaxSearch(
            start=p.initial_concurrency,
            lo=1,
            hi=p.max_concurrency,
            integer=True,
            rel_tolerance=self.resolution,
            max_steps=self.profile.search_max_levels,
        )
        self.search = search
        while (value := search.next_value()) is not None:
            c = int(value)
            last = session.levels[-1].live_row if session.levels else None
            load = LoadSpec(
                mode="closed_loop",
                requests=self.requests_for(c, last.get("e2e_p50_ms") if last else None),
                concurrency=c,
            )
            level = session.run_level(load, f"concurrency {c}")
            verdict = capacity_verdict(level.live_row, p.slo_ttft_p99_ms)
            level.meta["live_verdict"] = verdict["passed"]
            search.record(c, verdict["passed"])

    def build(self, levels: list[Level]) -> CapacitySection:
        p = self.params
        entries: list[CapacityLevel] = []
        for lv in levels:
            verdict = capacity_verdict(lv.row, p.slo_ttft_p99_ms)
            if verdict["passed"] != lv.meta.get("live_verdict"):
                self.notes.append(
                    f"level {lv.index}: the verdict from the stored spans differs from the live "
                    "one the search used"
                )
            entries.append(cast(CapacityLevel, level_entry(lv, verdict=verdict)))
        search = self.search
        best = int(search.best) if search is not None and search.best is not None else None
        best_entry = next((e for e in entries if e.get("concurrency") == best), None)
        deviations = shortfalls(
            requests_per_slot=self.per_slot, slot_duration_s=self.min_duration_s
        )
        short = [
            e["index"]
            for e in entries
            if e.get("duration_s") is not None and e["duration_s"] < 60.0
        ]
        if short and self.min_duration_s >= 60.0:
            self.notes.append(
                f"level(s) {', '.join(map(str, short))} ran under 60 s: the first level's "
                "length is set by completions per slot alone (no latency known yet)"
            )
        if p.slo_ttft_p99_ms is None:
            deviations.append(
                "no TTFT P99 threshold was given: the TTFT criterion of 5.5.2 was not applied"
            )
        first = next((lv.report for lv in levels if lv.report), None)
        workload = first["run"]["workload"] if first else None
        output = workload["spec"].get("output") if workload else None
        if isinstance(output, dict) and output.get("min") != output.get("max"):
            deviations.append(
                f"output length varies ({output.get('min')}–{output.get('max')} tokens); 5.5.2 "
                "asks for a fixed output length (e.g. --workload-param output_min=256 "
                "--workload-param output_max=256)"
            )
        if search is not None and search.exhausted:
            deviations.append(
                f"the search stopped after {search.max_steps} levels before converging"
            )
        if search is not None and search.capped:
            self.notes.append("the maximum concurrency passed: capacity may be higher")
        return {
            "slo": {
                "ttft_p99_ms": p.slo_ttft_p99_ms,
                "min_completion": draft.CAPACITY_MIN_COMPLETION,
            },
            "levels": entries,
            "search": {
                "steps": [{"concurrency": int(s.value), "passed": s.passed} for s in search.steps]
                if search
                else [],
                "best": best,
                "first_fail": int(search.first_fail)
                if search is not None and search.first_fail is not None
                else None,
                "capped": search.capped if search else False,
                "exhausted": search.exhausted if search else False,
            },
            "max_concurrency": best,
            "throughput_at_max_tokens_per_s": (
                best_entry.get("output_tokens_per_s") if best_entry else None
            ),
            "tokens_in_flight_at_max": best_entry.get("tokens_in_flight") if best_entry else None,
            "deviations": deviations,
        }

    def render(self, result: CapacitySection) -> list[str]:
        rows = []
        for lv in sorted(result["levels"], key=lambda e: e.get("concurrency") or 0):
            v = lv["verdict"]
            rows.append(
                [
                    str(lv.get("concurrency")),
                    pct(lv.get("success_rate")),
                    fmt(lv.get("ttft_p99_ms"), 1, "ms"),
                    fmt(lv.get("tpot_p99_ms"), 1, "ms"),
                    str(lv.get("failed")),
                    "Pass" if v["passed"] else "Fail (" + "; ".join(v["reasons"]) + ")",
                ]
            )
        best = result["max_concurrency"]
        return [
            "## Capacity search results (5.5.5)",
            "",
            *table(["Concurrency", "Completion", "TTFT P99", "TPOT P99", "Errors", "Status"], rows),
            "",
            f"Maximum concurrent requests meeting criteria: {best if best is not None else NA}",
            "",
            f"- Achieved throughput at maximum: "
            f"{fmt(result['throughput_at_max_tokens_per_s'], 1, 'tok/s')}",
            f"- Tokens in flight at maximum: {fmt(result['tokens_in_flight_at_max'], 0)}",
        ]
