"""Etalon's capacity evaluation: the maximum load at which a fluidity-index SLO holds.

Source: Etalon (Agrawal et al., ``/work/shared/reference/etalon-paper.txt``) — §4.1 (the
fluidity-index, Algorithm 1, the deadlines ``D_p`` and ``D_d``), §4.2 ("Capacity Evaluation …
identify the maximum capacity each replica can provide while meeting the fluidity-index SLO
requirements"; the fluid token generation rate) and §5.2 (the SLO used there: 99 % of requests
with less than 10 % deadline misses at a 25 ms target TBT, i.e. fluidity-index >= 0.9).

Procedure: profile the prefill deadline (below), estimate capacity
(:mod:`~otelbench.procedures.probe`: a closed-loop probe, or ``capacity_rps``), then search the
open-loop arrival rate as 5.2 does
(:class:`~otelbench.procedures.planning.MaxSearch`: from the estimate, growing ×1.5 while levels
pass, shrinking while they fail, bisecting once bracketed, until the bracket is within the rate
step; 10 %–200 % of the estimate by default). Each level is open loop (Poisson by default) for
the level duration.

**The SLO** (:func:`fluidity_verdict`), all parameters options:

* every request's fluidity-index (Algorithm 1, :func:`otelbench.metrics.fluidity_indices`) at
  the decode deadline ``D_d`` (``decode_deadline_s``, default 25 ms: Etalon's strict preset,
  §4.1) and the prefill deadline ``D_p`` of its prompt length ``L``;
* a request is **fluid** when its index is >= ``min_fluidity`` (0.9); a failed request is not
  fluid; a successful request whose tokens were not timed is left out (and counted);
* the level **passes** when fluid requests / (evaluated + failed requests) >=
  ``request_fraction`` (0.99).

**The prefill deadline** ``D_p`` (Etalon §4.1, Algorithm 1 line 2): by default Etalon's
``D_p(L) = prefill(L) + S``. Before the search, ``profile_requests`` (10, "tunable") isolated
requests (closed loop, concurrency 1, one output token) at each of 3 prompt lengths — the
workload's shortest, median and longest input of its first 200 requests, or
``profile_lengths`` — measure the time to the first token; a quadratic least-squares fit
(:func:`otelbench.metrics.fit_prefill_time`) gives ``prefill(L)`` (a time above 3 × its
length's median — a stall such as the engine's first pass at a new shape — is left out and
noted; each length needs half its requests left), and ``S`` is the scheduling
slack (``scheduling_slack_s``, default 500 ms, Etalon's example for interactive applications).
A request's ``L`` is its prompt token count as the target reported it. With
``prefill_deadline_s`` set, ``D_p`` is that fixed value for every request instead (the run
report's fluidity section profiles ``D_p(L)`` from a level's isolated requests where they allow,
else uses a fixed 1 s), and the report lists it as a deviation. Either
way, a first token well ahead of ``D_p`` banks slack that later tokens may spend (Algorithm 1
carries it): a generous ``D_p`` raises every index and lowers the fluid rate's ``D_d``.

The timeline is the **client's** (Option B, draft 4.6.3: content-chunk arrivals at the load
generator, since T_submit): Etalon's black-box evaluator measures what the user receives (§4.2),
and it is the one timeline available while the search runs (the server's spans are read from the
store only after the procedure). When the target has engine hooks, every level also reports the
**server's** (Option C) fraction of fluid requests and fluid rate, for comparison.

**Fluid token generation rate** at each level (§4.2, §5.1): the smallest ``D_d`` at which
``request_fraction`` of the successful requests reach ``min_fluidity``
(:func:`otelbench.metrics.fluid_token_generation_rate`, same ``D_p``), and ``1 / D_d`` tokens/s.

``procedure.json`` keys of this section: ``capacity`` (the estimate: ``rps``, ``source``,
``probe``), ``slo`` (``decode_deadline_ms``, ``prefill_deadline_ms`` (the fixed ``D_p``, or null),
``prefill_deadline_kind`` (``fixed`` or ``profiled``), ``prefill_fit`` (profiled: ``a_ms``,
``b_ms_per_token``, ``c_ms_per_token2``, ``r_squared``, ``residual_std_ms``, ``lengths``,
``requests``, ``scheduling_slack_ms``, ``deadline_ms_at``: ``D_p`` at each profiled length) or
null, ``min_fluidity``, ``request_fraction``, ``timeline``), ``profile_levels`` (the prefill
profile's levels: the level row plus ``input_tokens``), ``levels`` (search levels: the level row
plus ``verdict``: ``passed``, ``reasons``, ``source``, ``evaluated``, ``failed``, ``left_out``,
``fluid``, ``fraction_fluid``, ``fluidity_index`` (count, mean, min, p1, p5, p50),
``fluid_rate`` (``decode_deadline_ms``, ``tokens_per_s``, ``fraction_meeting``) or null, and
``server`` (the Option C figures: ``evaluated``, ``fraction_fluid``, ``fluid_rate``) or null),
``search`` (``steps``, ``best_rps``, ``first_fail_rps``, ``capped``, ``exhausted``,
``rate_step``), ``summary`` (``fluidity_capacity_rps``, ``level_index``,
``achieved_rps``, ``output_tokens_per_s``, ``fraction_fluid``, ``fluid_tokens_per_s``).

Example::

    params = FluidityParams(rates=RateRange(capacity_rps=4.0), decode_deadline_s=0.05)
    result = run_procedure(FluidityProcedure(params), spec)
    result.result["summary"]["fluidity_capacity_rps"]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.loadgen.workloads import make_workload
from otelbench.metrics import (
    PrefillFit,
    Ragged,
    deadline_intervals,
    fit_prefill_time,
    fluid_token_generation_rate,
    fluidity_indices,
    profiled_prefill_deadlines,
    token_arrival_times,
)
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.procedure import (
    FluidityFit,
    FluidityLevel,
    FluidityProfileLevel,
    FluiditySection,
    FluiditySummary,
    FluidityVerdict,
    FluidityVerdictFigures,
)
from otelbench.options import nested, option
from otelbench.procedures.base import (
    LoadSearch,
    Procedure,
    RawParameters,
    level_entry,
    register_procedure,
    search_entries,
)
from otelbench.procedures.planning import (
    OPEN_LOOP_OPTIONS,
    RATE_RANGE_OPTIONS,
    OpenLoopLevels,
    RateRange,
)
from otelbench.procedures.probe import capacity_section, estimate_capacity
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.query import RunData
from otelbench.render.procedure import NA, fmt, pct, table
from otelbench.report.sections import (
    DEFAULT_PREFILL_DEADLINE_S,
    FLUID_RATE_PRECISION_S,
    fluidity_distribution,
)

__all__ = [
    "PROFILE_ROLE",
    "SEARCH_ROLE",
    "FluidityParams",
    "FluidityProcedure",
    "PrefillDeadline",
    "fluidity_verdict",
    "profile_lengths",
    "split_outliers",
]

SEARCH_ROLE: Final = "fluidity-search"
PROFILE_ROLE: Final = "prefill-profile"
OUTLIER_FACTOR: Final = 3.0
"""A profiled time above this × its length's median is left out of the prefill fit."""
PROFILE_WORKLOAD: Final = "synthetic-uniform"
PROFILE_SAMPLE: Final = 200


@dataclass(frozen=True)
class PrefillDeadline:
    """``D_p``: ``fixed_s`` for every request, or Etalon's ``fit(L) + slack_s`` (§4.1).

    >>> PrefillDeadline(fixed_s=0.5).seconds(np.array([10.0, 900.0])).tolist()
    [0.5, 0.5]
    >>> fit = PrefillFit(0.01, 1e-4, 0.0, 1.0, 0.0, (100, 200, 300), 30, 10)
    >>> PrefillDeadline(fit=fit, slack_s=0.5).seconds(np.array([150.0, np.nan])).round(6).tolist()
    [0.525, 0.52]
    """

    fixed_s: float | None = None
    fit: PrefillFit | None = None
    slack_s: float = 0.0

    def __post_init__(self) -> None:
        if (self.fixed_s is None) == (self.fit is None):
            raise ConfigError("a prefill deadline is fixed or fitted, one of the two")

    def seconds(self, prompt_tokens: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """``D_p`` per request; the fit within the profiled lengths only
        (:func:`otelbench.metrics.profiled_prefill_deadlines`)."""
        n = np.asarray(prompt_tokens, dtype=np.float64)
        if self.fit is None:
            assert self.fixed_s is not None
            return np.full(n.shape, self.fixed_s)
        return profiled_prefill_deadlines(self.fit, n, self.slack_s)


def _evaluate(
    times: Ragged,
    prompt_tokens: np.ndarray[Any, Any],
    failed: int,
    prefill: PrefillDeadline,
    decode_deadline_s: float,
    min_fluidity: float,
    request_fraction: float,
) -> FluidityVerdictFigures:
    evaluated = len(times)
    prefill_deadline_s = prefill.seconds(prompt_tokens)
    if evaluated:
        intervals = deadline_intervals(times)
        fi = fluidity_indices(intervals, prefill_deadline_s, decode_deadline_s)
        rate = fluid_token_generation_rate(
            intervals,
            prefill_deadline_s,
            min_fluidity=min_fluidity,
            request_fraction=request_fraction,
            precision_s=FLUID_RATE_PRECISION_S,
        )
    else:
        fi, rate = np.empty(0), None
    fluid = int(np.count_nonzero(fi >= min_fluidity))
    population = evaluated + failed
    return {
        "evaluated": evaluated,
        "fluid": fluid,
        "fraction_fluid": fluid / population if population else None,
        "fluidity_index": fluidity_distribution(fi, min_fluidity) if fi.size else None,
        "fluid_rate": None
        if rate is None
        else {
            "decode_deadline_ms": 1000.0 * rate.decode_deadline_s,
            "tokens_per_s": rate.tokens_per_s,
            "fraction_meeting": rate.fraction_meeting,
        },
    }


def _client_times(data: RunData) -> tuple[Ragged, np.ndarray[Any, Any]]:
    """Option B token times (s since T_submit) of the successful requests with a token, and
    those requests' positions."""
    c = data.client
    tokens = token_arrival_times(c.chunk_offset_us, c.chunk_tokens, c.chunk_bounds)
    keep = c.ok & (tokens.lengths() > 0)
    t = tokens.select(keep)
    return Ragged(t.values / 1e6, t.bounds), np.flatnonzero(keep)


def _server_times(data: RunData) -> tuple[Ragged, np.ndarray[Any, Any]] | None:
    """Option C token times (s since arrival) of the successful requests whose engine-hook span
    has them (requests the engine finished), and the positions of those requests among the
    client's; None without any."""
    s = data.server
    joined = s.client_index >= 0
    keep = joined & s.is_hook() & (np.diff(s.token_bounds) > 0) & ~s.cut()
    keep[joined] &= data.client.ok[s.client_index[joined]]
    if not np.any(keep):
        return None
    times = Ragged(s.token_offset_us.astype(np.float64) / 1e6, s.token_bounds).select(keep)
    return times, s.client_index[keep]


def fluidity_verdict(
    data: RunData,
    *,
    prefill: PrefillDeadline | None = None,
    decode_deadline_s: float = draft.FLUIDITY_DECODE_DEADLINE_S,
    min_fluidity: float = draft.FLUIDITY_MIN_INDEX,
    request_fraction: float = draft.FLUIDITY_REQUEST_FRACTION,
) -> FluidityVerdict:
    """Whether a level meets the fluidity SLO (module docstring), with its figures.

    ``prefill``: ``D_p`` (None: a fixed 1 s, the run report's fallback). The verdict is on the
    client timeline; ``server`` holds the engine hooks' (Option C) figures when the level's
    requests have them, else None.
    """
    c = data.client
    prefill = prefill or PrefillDeadline(fixed_s=DEFAULT_PREFILL_DEADLINE_S)
    failed = int(np.count_nonzero(~c.ok))
    args = (failed, prefill, decode_deadline_s, min_fluidity, request_fraction)
    times, rows = _client_times(data)
    client = _evaluate(times, c.input_tokens[rows], *args)
    found = _server_times(data)
    server = None
    if found is not None:
        server = _evaluate(found[0], c.input_tokens[found[1]], *args)
    reasons = []
    share = client["fraction_fluid"]
    if client["evaluated"] == 0:
        reasons.append("no request delivered a token")
    elif share is None or share < request_fraction:
        reasons.append(
            f"{pct(share)} of requests fluid (index >= {min_fluidity:g} at D_d "
            f"{1000 * decode_deadline_s:g} ms), below {pct(request_fraction)}"
        )
    return {
        "passed": not reasons,
        "reasons": reasons,
        "source": "client",
        "failed": failed,
        "left_out": int(np.count_nonzero(c.ok)) - client["evaluated"],
        **client,
        "server": server,
    }


def split_outliers(
    values: np.ndarray[Any, Any],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(kept, dropped)``: a profiled time above :data:`OUTLIER_FACTOR` × the median of its
    prompt length is an outlier (a stall: the engine's first pass at a new shape took 1.5 s on
    the tiny CPU model, against a median of 20 ms) and is left out of the fit.

    >>> [a.tolist() for a in split_outliers(np.array([0.02, 0.021, 1.5, 0.019]))]
    [[0.02, 0.021, 0.019], [1.5]]
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return v, v
    out = v > OUTLIER_FACTOR * float(np.median(v))
    return v[~out], v[out]


def profile_lengths(input_lengths: list[int]) -> tuple[int, int, int]:
    """The 3 prompt lengths the prefill profile runs: the shortest, median and longest of the
    workload's inputs; a workload of (nearly) one length gives ``L/4, L/2, L`` (Etalon §4.1 fits
    a curve, which needs 3 distinct lengths).

    >>> profile_lengths([128, 300, 512, 200]), profile_lengths([448] * 5)
    ((128, 250, 512), (112, 224, 448))
    """
    if not input_lengths:
        raise ConfigError("the prefill profile needs the workload's prompt lengths")
    lo, hi = min(input_lengths), max(input_lengths)
    mid = int(np.median(input_lengths))
    if lo < mid < hi:
        return lo, mid, hi
    if hi < 4:
        raise ConfigError(
            f"prompts of {hi} tokens are too short to profile prefill at 3 lengths: give "
            "--prefill-deadline-ms"
        )
    return max(1, hi // 4), hi // 2, hi


@dataclass(frozen=True)
class FluidityParams:
    """The SLO (Etalon §4.1, §4.2, §5.2) and the search (as 5.2's); None takes the profile's
    value or one derived from capacity (``min_rps`` 10 %, ``max_rps`` 200 %, ``rate_step`` =
    profile resolution × capacity)."""

    decode_deadline_s: float = option(
        draft.FLUIDITY_DECODE_DEADLINE_S,
        help="D_d, the per-token deadline (Etalon §4.1: 25/50/100 ms).",
        name="decode_deadline_ms",
        scale=1000.0,
    )
    prefill_deadline_s: float | None = option(
        None,
        help="A fixed D_p for every request (default: Etalon's D_p(L) = prefill(L) + S, "
        "profiled in isolation, §4.1).",
        name="prefill_deadline_ms",
        scale=1000.0,
    )
    """A fixed ``D_p``; None: Etalon's profiled ``D_p(L) = prefill(L) + S``."""
    scheduling_slack_s: float = option(
        draft.FLUIDITY_SCHEDULING_SLACK_S,
        help="S of the profiled D_p (Etalon §4.1: 500 ms, interactive).",
        name="scheduling_slack_ms",
        scale=1000.0,
    )
    profile_requests: int = option(
        draft.FLUIDITY_PROFILE_REQUESTS,
        help="Isolated requests per prompt length of the profile (Etalon 10).",
    )
    profile_lengths: tuple[int, ...] | None = option(
        None,
        help="Prompt length to profile (repeatable, >= 3; default: the workload's).",
        name="profile_length",
    )
    min_fluidity: float = option(
        draft.FLUIDITY_MIN_INDEX, help="Fluidity-index a request must reach (Etalon §5.2: 0.9)."
    )
    request_fraction: float = option(
        draft.FLUIDITY_REQUEST_FRACTION,
        help="Share of requests that must reach it (Etalon §5.2: 0.99).",
    )
    rates: RateRange = nested(RateRange, help=RATE_RANGE_OPTIONS)
    open_loop: OpenLoopLevels = nested(OpenLoopLevels, help=OPEN_LOOP_OPTIONS)

    def __post_init__(self) -> None:
        if not self.decode_deadline_s > 0:
            raise ConfigError("--decode-deadline-ms must be > 0")
        if self.prefill_deadline_s is not None and not self.prefill_deadline_s > 0:
            raise ConfigError("--prefill-deadline-ms must be > 0")
        if not self.scheduling_slack_s >= 0:
            raise ConfigError("--scheduling-slack-ms must be >= 0")
        if self.profile_requests < 1:
            raise ConfigError("--profile-requests must be at least 1")
        if self.profile_lengths is not None and (
            len(set(self.profile_lengths)) < 3 or min(self.profile_lengths) < 1
        ):
            raise ConfigError("--profile-length: at least 3 distinct prompt lengths >= 1")
        if not 0 < self.min_fluidity <= 1:
            raise ConfigError("--min-fluidity must be within (0, 1]")
        if not 0 < self.request_fraction <= 1:
            raise ConfigError("--request-fraction must be within (0, 1]")


@register_procedure("fluidity", "Etalon §4.2", "Fluidity Capacity Evaluation")
class FluidityProcedure(LoadSearch, Procedure[FluidityParams, FluiditySection]):
    """Etalon's capacity evaluation (module docstring)."""

    def __init__(self, params: FluidityParams) -> None:
        super().__init__(params)
        self.prefill: PrefillDeadline | None = (
            None
            if params.prefill_deadline_s is None
            else PrefillDeadline(fixed_s=params.prefill_deadline_s)
        )

    def parameters(self) -> RawParameters:
        return self.search_parameters(
            "open-loop",
            "arrival rate",
            f"{pct(self.params.request_fraction)} of requests with fluidity-index >= "
            f"{self.params.min_fluidity:g} at D_d {1000 * self.params.decode_deadline_s:g} "
            f"ms, D_p {self._dp_text()} (client timeline)",
        )

    def _dp_text(self) -> str:
        p = self.params
        if p.prefill_deadline_s is not None:
            return f"{1000 * p.prefill_deadline_s:g} ms (fixed)"
        return (
            f"prefill(L) + {1000 * p.scheduling_slack_s:g} ms (Etalon §4.1, profiled in isolation)"
        )

    def _verdict(self, data: RunData | None) -> FluidityVerdict:
        p = self.params
        if data is None:
            return {"passed": False, "reasons": ["no records"], "server": None}
        assert self.prefill is not None, "the prefill deadline is set before any search level"
        return fluidity_verdict(
            data,
            prefill=self.prefill,
            decode_deadline_s=p.decode_deadline_s,
            min_fluidity=p.min_fluidity,
            request_fraction=p.request_fraction,
        )

    def _level(self, session: ProcedureSession, rate: float, label: str) -> bool:
        level = session.run_level(self.open_loop_level(rate), label, {"role": SEARCH_ROLE})
        passed = bool(self._verdict(level.data)["passed"])
        level.meta["live_verdict"] = passed
        return passed

    def _profile_prefill(self, session: ProcedureSession) -> PrefillDeadline:
        """Etalon §4.1: isolated requests at 3 prompt lengths → the quadratic prefill fit."""
        p = self.params
        base = session.base
        lengths = p.profile_lengths
        if lengths is None:
            workload = make_workload(base.workload, seed=base.seed, **base.workload_params)
            sample = workload.requests(PROFILE_SAMPLE)
            lengths = profile_lengths([len(r.prompt_token_ids) for r in sample])
        vocab = base.workload_params.get("vocab_size")
        xs: list[float] = []
        ys: list[float] = []
        for length in sorted(set(lengths)):
            params: JsonObject = {
                "input_min": length,
                "input_max": length,
                "output_min": 1,
                "output_max": 1,
            }
            if vocab is not None:
                params["vocab_size"] = vocab
            level = session.run_level(
                LoadSpec(mode="closed_loop", requests=p.profile_requests, concurrency=1),
                f"prefill profile: {length} tokens, in isolation",
                {"role": PROFILE_ROLE, "input_tokens": length},
                overrides={"workload": PROFILE_WORKLOAD, "workload_params": params},
            )
            c = level.data.client if level.data is not None else None
            if c is not None:
                ttft = c.ttft_us[c.ok & np.isfinite(c.ttft_us)] / 1e6
                kept, dropped = split_outliers(ttft)
                if dropped.size:
                    self.notes.append(
                        f"prefill profile at {length} tokens: left out "
                        + ", ".join(f"{1000 * v:.1f} ms" for v in dropped)
                        + f" of the fit as outliers (> {OUTLIER_FACTOR:g} × the length's "
                        f"median {1000 * float(np.median(ttft)):.1f} ms)"
                    )
                ys += kept.tolist()
                xs += [float(length)] * int(kept.size)
        needed = max(1, min(p.profile_requests, draft.FLUIDITY_PROFILE_REQUESTS) // 2)
        fit = fit_prefill_time(xs, ys, min_requests_per_length=needed)
        return PrefillDeadline(fit=fit, slack_s=p.scheduling_slack_s)

    def run(self, session: ProcedureSession) -> None:
        p = self.params
        if self.prefill is None:
            self.prefill = self._profile_prefill(session)
        capacity = estimate_capacity(session, p.rates.capacity_rps, self)
        rates = p.rates.bounds(capacity, self.profile.rate_resolution)
        self.bounds = {"capacity_estimate_rps": capacity, **rates}
        search = self.start_search(capacity, rates["min_rps"], rates["max_rps"], rates["rate_step"])
        while (rate := search.next_value()) is not None:
            search.record(rate, self._level(session, rate, f"search {len(search.steps) + 1}"))

    def build(self, levels: list[Level]) -> FluiditySection:
        p = self.params
        entries = [
            cast(FluidityLevel, e)
            for e in search_entries(
                levels, SEARCH_ROLE, lambda lv: self._verdict(lv.data), self.notes
            )
        ]
        search = self.search
        best = search.best if search is not None else None
        best_entry = next(
            (e for e in entries if best is not None and e.get("offered_rps") == best), None
        )
        deviations = self._deviations(entries)
        if search is not None and search.exhausted:
            deviations.append(
                f"the search stopped after {search.max_steps} levels before converging to the "
                f"rate step; the capacity lies between {fmt(search.best, 3)} and "
                f"{fmt(search.first_fail, 3)} req/s"
            )
        if search is not None and search.capped:
            self.notes.append(
                "the highest rate of the range met the SLO: the capacity may lie above --max-rps"
            )
        unstable = search.non_monotone_note("req/s") if search is not None else None
        if unstable is not None:
            self.notes.append(unstable)
        if p.prefill_deadline_s != DEFAULT_PREFILL_DEADLINE_S:
            self.notes.append(
                "each level's run report (levels/NN/report.json) has its own fluidity section "
                "with its own D_p (profiled from that level's isolated requests where they "
                f"allow, else a fixed {1000 * DEFAULT_PREFILL_DEADLINE_S:g} ms); this "
                f"procedure's figures use D_p {self._dp_text()}"
            )
        best_verdict = best_entry["verdict"] if best_entry else None
        fluid_rate = best_verdict.get("fluid_rate") if best_verdict else None
        summary: FluiditySummary = {
            "fluidity_capacity_rps": best,
            "level_index": best_entry["index"] if best_entry else None,
            "achieved_rps": best_entry.get("achieved_rps") if best_entry else None,
            "output_tokens_per_s": best_entry.get("output_tokens_per_s") if best_entry else None,
            "fraction_fluid": best_verdict.get("fraction_fluid") if best_verdict else None,
            "fluid_tokens_per_s": fluid_rate["tokens_per_s"] if fluid_rate else None,
        }
        return {
            "capacity": capacity_section(levels, p.rates.capacity_rps, self),
            "slo": {
                "decode_deadline_ms": 1000.0 * p.decode_deadline_s,
                "prefill_deadline_ms": None
                if p.prefill_deadline_s is None
                else 1000.0 * p.prefill_deadline_s,
                "prefill_deadline_kind": "fixed"
                if p.prefill_deadline_s is not None
                else "profiled",
                "prefill_fit": self._fit_block(),
                "min_fluidity": p.min_fluidity,
                "request_fraction": p.request_fraction,
                "timeline": "client (Option B, draft 4.6.3)",
            },
            "profile_levels": [
                cast(FluidityProfileLevel, level_entry(lv))
                for lv in levels
                if lv.meta.get("role") == PROFILE_ROLE
            ],
            "levels": entries,
            "search": {
                "steps": [{"rps": s.value, "passed": s.passed} for s in search.steps]
                if search
                else [],
                "best_rps": best,
                "first_fail_rps": search.first_fail if search else None,
                "capped": search.capped if search else False,
                "exhausted": search.exhausted if search else False,
                "rate_step": self.bounds.get("rate_step"),
            },
            "summary": summary,
            "deviations": deviations,
        }

    def _fit_block(self) -> FluidityFit | None:
        prefill = self.prefill
        if prefill is None or prefill.fit is None:
            return None
        fit = prefill.fit
        lengths = np.array(fit.lengths, dtype=np.float64)
        return {
            "a_ms": 1000.0 * fit.a,
            "b_ms_per_token": 1000.0 * fit.b,
            "c_ms_per_token2": 1000.0 * fit.c,
            "r_squared": fit.r_squared,
            "residual_std_ms": 1000.0 * fit.residual_std_s,
            "lengths": list(fit.lengths),
            "requests": fit.requests,
            "scheduling_slack_ms": 1000.0 * prefill.slack_s,
            "deadline_ms_at": {
                str(int(length)): 1000.0 * float(d)
                for length, d in zip(lengths, prefill.seconds(lengths), strict=True)
            },
        }

    def _deviations(self, entries: list[FluidityLevel]) -> list[str]:
        p = self.params
        out = [
            text.replace("(5.2.2.1, 5.3.2)", "(5.2.2.1, applied to this rate search)")
            for text in shortfalls(level_duration_s=self.duration_s)
        ]
        if p.prefill_deadline_s is not None:
            out.append(
                f"D_p is fixed at {1000 * p.prefill_deadline_s:g} ms for every request, not "
                "Etalon's D_p(L) = prefill(L) + S fitted to isolated prefill times per prompt "
                "length (§4.1); a first token well ahead of D_p banks slack later tokens may "
                "spend"
            )
        elif p.profile_requests < draft.FLUIDITY_PROFILE_REQUESTS:
            out.append(
                f"the prefill profile ran {p.profile_requests} requests per length, fewer than "
                f"Etalon's {draft.FLUIDITY_PROFILE_REQUESTS} (§4.1)"
            )
        needed = (
            math.ceil(round(1.0 / (1.0 - p.request_fraction), 6)) if p.request_fraction < 1 else 1
        )
        few = [
            f"{e['index']} ({e['verdict']['evaluated'] + e['verdict']['failed']})"
            for e in entries
            if e["verdict"].get("evaluated", 0) + e["verdict"].get("failed", 0) < needed
        ]
        if few:
            out.append(
                f"level(s) {', '.join(few)} had fewer than the {needed} requests at which "
                f"'{pct(p.request_fraction)} of requests' differs from 'every request': each "
                "of those levels passed only if every request was fluid"
            )
        left = [str(e["index"]) for e in entries if e["verdict"].get("left_out")]
        if left:
            self.notes.append(
                f"level(s) {', '.join(left)}: successful requests without a content token were "
                "left out of the fluid fraction"
            )
        return out

    def render(self, result: FluiditySection) -> list[str]:
        s, slo = result["summary"], result["slo"]
        lines = [
            "## Fluidity capacity (Etalon §4.2)",
            "",
            f"SLO: {pct(slo['request_fraction'])} of requests with fluidity-index >= "
            f"{slo['min_fluidity']:g} at D_d = {slo['decode_deadline_ms']:g} ms, D_p = "
            + (
                f"{slo['prefill_deadline_ms']:g} ms (fixed)"
                if slo["prefill_deadline_kind"] == "fixed"
                else "prefill(L) + S (profiled, below)"
            )
            + f"; timeline: {slo['timeline']}.",
            "",
            *_fit_lines(slo.get("prefill_fit")),
            *table(
                ["Metric", "Value"],
                [
                    ["Fluidity capacity", fmt(s["fluidity_capacity_rps"], 3, "req/s")],
                    ["Achieved request rate there", fmt(s["achieved_rps"], 3, "req/s")],
                    ["Output throughput there", fmt(s["output_tokens_per_s"], 1, "tok/s")],
                    ["Requests fluid there", pct(s["fraction_fluid"])],
                    ["Fluid token generation rate there", fmt(s["fluid_tokens_per_s"], 1, "tok/s")],
                ],
            ),
            "",
            "## Levels: fluidity and fluid token generation rate (Etalon §4.2, §5)",
            "",
        ]
        rows = []
        for lv in sorted(result["levels"], key=lambda e: e.get("offered_rps") or 0.0):
            v = lv["verdict"]
            fi = v.get("fluidity_index")
            rate = v.get("fluid_rate")
            server = v["server"]
            server_rate = server["fluid_rate"] if server else None
            rows.append(
                [
                    str(lv["index"]),
                    fmt(lv.get("offered_rps"), 3),
                    fmt(lv.get("output_tokens_per_s"), 1),
                    f"{v.get('fluid', 0)} / {v.get('evaluated', 0) + v.get('failed', 0)}",
                    pct(v.get("fraction_fluid")),
                    fmt(fi["p1"] if fi else None, 3),
                    fmt(rate["decode_deadline_ms"] if rate else None, 1),
                    fmt(rate["tokens_per_s"] if rate else None, 1),
                    pct(server["fraction_fluid"]) if server else NA,
                    fmt(server_rate["tokens_per_s"] if server_rate else None, 1) if server else NA,
                    "pass" if v["passed"] else "fail: " + "; ".join(v["reasons"]),
                ]
            )
        lines += table(
            ["#", "Offered (r/s)", "Output (tok/s)", "Fluid / requests", "Fluid %",
             "Fluidity P1", "Fluid D_d (ms)", "Fluid rate (tok/s)", "Server fluid %",
             "Server fluid rate (tok/s)", "Verdict"],
            rows,
        )  # fmt: skip
        search = result["search"]
        lines += [
            "",
            f"Maximum rate meeting the SLO: {fmt(search['best_rps'], 3)} req/s; lowest failing: "
            f"{fmt(search['first_fail_rps'], 3)} req/s (rate step {fmt(search['rate_step'], 3)}).",
            "",
            "Fluid token generation rate: 1 / the smallest D_d at which "
            f"{pct(slo['request_fraction'])} of the level's successful requests reach "
            f"fluidity-index {slo['min_fluidity']:g} (same D_p). Server columns: the engine hooks' "
            "per-token times (Option C), when the target has them.",
        ]
        return lines


def _fit_lines(fit: FluidityFit | None) -> list[str]:
    if fit is None:
        return []
    rows = [[length, fmt(d, 1, "ms")] for length, d in fit["deadline_ms_at"].items()]
    return [
        "Prefill deadline (Etalon §4.1): isolated time to first token fitted as "
        f"prefill(L) = {fit['a_ms']:.3f} + {fit['b_ms_per_token']:.3g}·L + "
        f"{fit['c_ms_per_token2']:.3g}·L² ms (R² {fit['r_squared']:.3f}, {fit['requests']} "
        f"requests at {', '.join(map(str, fit['lengths']))} tokens), plus the scheduling slack "
        f"S = {fit['scheduling_slack_ms']:g} ms:",
        "",
        *table(["Prompt tokens", "D_p"], rows),
        "",
    ]
