"""Draft 5.8, Memory Pressure Behavior: closed-loop levels at and above the 5.5 capacity.

Procedure (5.8.3):

1. **Capacity** ``C`` (the maximum concurrency of 5.5): from a 5.5 ``procedure.json``
   (``capacity_report``: its ``max_concurrency``), given (``capacity``), or — with neither — found
   first in this same session by 5.5's own search (:class:`~otelbench.procedures.capacity.
   CapacityProcedure`, run on this procedure's workload, so that 100 % is the capacity for it).
2. Warm-up (draft 4.5) once, before the first level (the session's).
3. For each **oversubscription level** ``ℓ`` (default 100 % (base), 110 %, 125 %, 150 %): a
   closed loop at concurrency ``round(C × ℓ)`` (half up; :func:`plan_oversubscription`). A
   level above 100 % must exceed the capacity (5.8.3 step 3.1), so it is at least ``C + 1``;
   levels that land on the same concurrency run once, as one row naming all of them, and the
   row's ``effective_oversubscription`` is ``concurrency / C``. Each level runs for at least
   ``level_duration_s`` (the draft: 120 s, step 3.2): ``max(min_level_requests, concurrency,
   ceil(duration × concurrency / E2E P50))`` requests, the E2E P50 from the previous level (the
   first level: from the capacity level, when known; else ``capacity_requests_per_slot ×
   concurrency``). Levels that ran shorter than 120 s are deviations.
4. Degradation (step 4): each level against the base level — completion change and TTFT P99
   ratio — and the first level below 99 % completion (5.5.2's criterion) and the first with a
   preemption.

**Workload.** 5.8.2 recommends the Long Context workload (A.5), which is the default here. It
needs the target's context window: ``max_context_len`` if given, else the launched vLLM's
``max_model_len``, else the ``max_model_len`` the target's ``/v1/models`` reports for the model
(vLLM does); without one the procedure stops with a one-line error. Every input is capped at
``max_context_len - output_tokens`` (``output_tokens`` = A.5's 256 by default), so on a small
window (the tiny test model's 512–1024 tokens) **every request fills the whole context window**:
the most KV cache per request the target admits, which is what puts the memory under pressure.
With a window of 8K or more the A.5 lengths are sent as specified (capped to the window).

Measurements per level (5.8.4, :func:`pressure_row`):

* ``completion_rate`` — successful requests / requests sent (client records);
* ``failure_rate`` and ``failures`` by kind (:func:`failure_kinds`, client ``error.type``):
  ``http_5xx`` (OOM-like: an engine out of KV-cache memory answers with a server error, as in
  5.5.2), ``http_4xx``, ``timeout``, ``other`` (stream cut, unreachable, …); ``oom_like_errors``
  is the ``http_5xx`` count;
* ``preemption`` — from the engine hooks' server spans (``otelbench.vllm.request``) joined to the
  level's requests the engine finished, as the run report's ``metrics.server.preemptions``
  (:func:`preemption_measurements`): ``requests_observed``,
  ``requests_preempted``, ``rate`` (fraction of observed requests preempted at least once),
  ``recovered`` / ``recovery_rate`` (preempted requests that still completed successfully),
  ``events`` (preemption span events), ``kv_tokens_discarded`` and ``loss_per_preemption``
  (average tokens discarded per preemption event: the event attribute
  ``otelbench.preemption.kv_tokens_discarded``, prompt + output tokens whose KV cache was freed
  and is recomputed on resumption — vLLM V1 keeps the generated tokens themselves), the
  resumption stalls (P50/P99 ms) and a ``timeline``. **None** when no hook span joined the
  level (no engine hooks on the target): the report then shows ``n/a`` and lists why, never 0;
* ``ttft_p99_ms`` (and the rest of the level row, :data:`~otelbench.procedures.levels.
  LEVEL_ROW_KEYS`).

The **preemption timeline** of a level counts preemptions in 10 equal bins from the level's
first submission to its last response; as the records keep each request's preemption count
and not the events' times, a request's preemptions are placed at its arrival in the engine
(its server span's start), as the HTML report's preemption plot does.

``procedure.json`` keys of this section (between ``configuration`` and ``runs``):
``capacity`` (``concurrency``, ``source``, ``report`` path or null, ``workload`` it was measured
with, ``e2e_p50_ms`` there, ``search``: the embedded 5.5 search — ``steps``, ``best``,
``first_fail``, ``capped``, ``exhausted``, ``slo``, ``max_concurrency``,
``throughput_at_max_tokens_per_s``, ``tokens_in_flight_at_max`` — or null),
``workload`` (``name``, ``max_context_len``, ``output_tokens``, ``input_tokens``, ``choice``),
``levels`` (one row per distinct concurrency: the level row plus ``role``,
``oversubscription`` (the requested levels, fractions), ``effective_oversubscription``,
``capacity``, ``completion_rate``, ``failure_rate``, ``failures``, ``oom_like_errors``,
``preemption``, ``degradation``), ``capacity_levels`` (the embedded search's levels, else []),
``summary`` (``base_index``, ``first_below_completion_index``, ``first_preempted_index``,
``max_preemption_rate``, ``preemptions_observed``).

Example::

    params = MemoryPressureParams(capacity_report=Path("out/5.5/procedure.json"))
    result = run_procedure(MemoryPressureProcedure(params), spec)
    [lv["preemption"]["rate"] for lv in result.result["levels"]]
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final, cast

import httpx
import numpy as np

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.metrics import percentile
from otelbench.metrics.server import preemption_stats
from otelbench.model.procedure import (
    CapacityLevel,
    LevelRow,
    MemoryPressureLevel,
    Preemption,
    PreemptionTimeline,
    PressureCapacitySearch,
    PressureDegradation,
    PressureFailures,
    PressureMeasurements,
    PressureSection,
    PressureSummary,
    PressureWorkload,
)
from otelbench.options import common, nested, option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.capacity import CapacityParams, CapacityProcedure
from otelbench.procedures.planning import shared_option
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.query import RunData
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = [
    "CAPACITY_ROLE",
    "FAILURE_KINDS",
    "PRESSURE_ROLE",
    "CapacitySource",
    "MemoryPressureParams",
    "MemoryPressureProcedure",
    "PressureLevel",
    "capacity_from_report",
    "failure_kinds",
    "plan_oversubscription",
    "preemption_measurements",
    "pressure_row",
]

LONG_CONTEXT_WORKLOAD: Final = "long-context"
PRESSURE_ROLE: Final = "pressure"
CAPACITY_ROLE: Final = "capacity-search"
TIMELINE_BINS: Final = 10
FAILURE_KINDS: Final = ("http_5xx", "http_4xx", "timeout", "other")
"""The failure kinds of :func:`failure_kinds`, in report order."""
NO_HOOKS_REASON: Final = (
    "no engine-hook server span (otelbench.vllm.request) joined the level's requests — the "
    "target runs without otelbench's engine hooks, or their spans did not arrive — so "
    "preemption rate, recovery and loss (5.8.4) are not observed: reported as n/a, not 0"
)
TIMELINE_PLACEMENT: Final = (
    "each request's preemptions at its arrival in the engine (server span start); the records "
    "keep per-request preemption counts, not the events' times"
)


# ------------------------------------------------------------------------------------------
# Planning (pure)
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PressureLevel:
    """One closed-loop level: its concurrency and the requested levels it stands for."""

    concurrency: int
    requested: tuple[float, ...]
    effective: float
    """``concurrency / capacity``."""
    raised: bool = False
    """Rounding put a level above 100 % at the capacity or below: it was raised to ``C + 1``."""


def _half_up(value: float) -> int:
    return math.floor(value + 0.5 + 1e-9)


def plan_oversubscription(capacity: int, levels: Sequence[float]) -> list[PressureLevel]:
    """Each level's closed-loop concurrency (module docstring, step 3).

    ``round(C × ℓ)`` half up; a level above 100 % at least ``C + 1``; levels with the same
    concurrency merged. ``levels`` are fractions (1.1 = 110 %), positive and ascending.

    >>> [(p.concurrency, p.requested) for p in plan_oversubscription(4, (1.0, 1.1, 1.25, 1.5))]
    [(4, (1.0,)), (5, (1.1, 1.25)), (6, (1.5,))]
    >>> [p.concurrency for p in plan_oversubscription(64, (1.0, 1.1, 1.25, 1.5))]
    [64, 70, 80, 96]
    """
    if capacity < 1:
        raise ConfigError(f"the capacity must be a concurrency >= 1, got {capacity}")
    if not levels or any(not (math.isfinite(v) and v > 0) for v in levels):
        raise ConfigError("oversubscription levels must be positive percentages")
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ConfigError("oversubscription levels must be strictly ascending")
    out: list[PressureLevel] = []
    for level in levels:
        c = max(1, _half_up(capacity * level))
        raised = level > 1.0 and c <= capacity
        if raised:
            c = capacity + 1
        if out and out[-1].concurrency == c:
            last = out[-1]
            out[-1] = replace(
                last, requested=(*last.requested, level), raised=last.raised or raised
            )
        else:
            out.append(PressureLevel(c, (level,), c / capacity, raised))
    return out


def failure_kinds(failed_by_type: Mapping[str, int]) -> PressureFailures:
    """Failed requests by kind (keys :data:`FAILURE_KINDS`) from a level's ``failed_by_type``.

    >>> failure_kinds({"500": 2, "503": 1, "400": 1, "timeout": 3, "stream_error": 1})
    {'http_5xx': 3, 'http_4xx': 1, 'timeout': 3, 'other': 1}
    """
    out: PressureFailures = {"http_5xx": 0, "http_4xx": 0, "timeout": 0, "other": 0}
    for kind, n in failed_by_type.items():
        if kind.isdigit() and int(kind) >= 500:
            out["http_5xx"] += int(n)
        elif kind.isdigit() and int(kind) >= 400:
            out["http_4xx"] += int(n)
        elif kind == "timeout":
            out["timeout"] += int(n)
        else:
            out["other"] += int(n)
    return out


# ------------------------------------------------------------------------------------------
# Measurements (pure)
# ------------------------------------------------------------------------------------------


def preemption_measurements(data: RunData, bins: int = TIMELINE_BINS) -> Preemption | None:
    """A level's preemption measurements (5.8.4) from its engine-hook server spans.

    None when no hook span joined a request of the level (the target has no engine hooks):
    the caller reports n/a. See the module docstring for the definitions.
    """
    s, c = data.server, data.client
    hook = s.is_hook() & (s.client_index >= 0) & ~s.cut()  # requests the engine finished
    if not np.any(hook):
        return None
    counts = np.where(np.isfinite(s.preemptions), s.preemptions, s.preemption_events)[hook]
    ok = c.ok[s.client_index[hook]]
    kv = s.kv_tokens_discarded[hook]
    p = preemption_stats(counts, ok, kv)
    events = s.preemption_events[hook]
    n_events = int(np.nansum(np.where(np.isfinite(events), events, counts)))
    stall_ms = (
        np.concatenate(
            [s.stalls(int(i)) for i in np.flatnonzero(hook)] or [np.empty(0, dtype=np.int64)]
        ).astype(np.float64)
        / 1000.0
    )
    return {
        "requests_observed": p.requests_observed,
        "requests_preempted": p.requests_preempted,
        "rate": p.rate,
        "recovered": p.recovered,
        "recovery_rate": p.recovery_rate,
        "events": n_events,
        "kv_tokens_discarded": p.kv_tokens_discarded,
        "loss_per_preemption": p.kv_tokens_discarded / n_events if n_events else None,
        "max_preemptions_per_request": int(counts[np.isfinite(counts)].max())
        if np.any(np.isfinite(counts))
        else 0,
        "stall_p50_ms": percentile(stall_ms, 50) if stall_ms.size else None,
        "stall_p99_ms": percentile(stall_ms, 99) if stall_ms.size else None,
        "timeline": _timeline(data, hook, counts, bins),
    }


def _timeline(
    data: RunData, hook: np.ndarray[Any, Any], counts: np.ndarray[Any, Any], bins: int
) -> PreemptionTimeline:
    c, s = data.client, data.server
    start = int(c.submit_unix_ns.min())
    end = int(c.end_unix_ns().max())
    width_s = max(end - start, 1) / 1e9 / bins
    at_s = (s.start_unix_ns[hook] - start) / 1e9
    slot = np.clip(np.floor(at_s / width_s), 0, bins - 1).astype(np.int64)
    weights = np.where(np.isfinite(counts), counts, 0.0)
    per_bin = np.bincount(slot, weights=weights, minlength=bins)
    return {
        "bin_s": width_s,
        "bins": bins,
        "preemptions": [int(v) for v in per_bin],
        "placement": TIMELINE_PLACEMENT,
    }


def pressure_row(data: RunData | None, row: LevelRow | None) -> PressureMeasurements:
    """The 5.8.4 measurements of one level from its records and its level row (None: a level
    with no row, interrupted before its run ended).

    ``completion_rate`` and ``failure_rate`` are over the requests sent; ``preemption`` is
    :func:`preemption_measurements` (None without engine hooks).
    """
    total = int((row.get("requests") if row else None) or 0)
    failed = int((row.get("failed") if row else None) or 0)
    kinds = failure_kinds((row.get("failed_by_type") if row else None) or {})
    succeeded = int((row.get("succeeded") if row else None) or 0)
    return {
        "completion_rate": succeeded / total if total else None,
        "failure_rate": failed / total if total else None,
        "failures": kinds,
        "oom_like_errors": kinds["http_5xx"],
        "preemption": None if data is None else preemption_measurements(data),
    }


# ------------------------------------------------------------------------------------------
# Capacity sources
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacitySource:
    """The capacity ``concurrency`` and where it came from."""

    concurrency: int
    source: str
    report: str | None = None
    workload: str | None = None
    e2e_p50_ms: float | None = None


def capacity_from_report(path: Path) -> CapacitySource:
    """The maximum concurrency of a 5.5 ``procedure.json`` (``otelbench test capacity``).

    Raises :class:`~otelbench.errors.ConfigError` (one line) for a missing or malformed file,
    another procedure's report, or a 5.5 run that found no passing concurrency.
    """
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the capacity report {path}: {exc.strerror}") from None
    except ValueError:
        raise ConfigError(f"the capacity report {path} is not JSON") from None
    if not isinstance(doc, dict) or doc.get("procedure") != CapacityProcedure.name:
        found = doc.get("procedure") if isinstance(doc, dict) else None
        raise ConfigError(
            f"{path} is not a 5.5 capacity procedure.json (procedure: {found!r}); give the "
            "procedure.json of `otelbench test capacity`"
        )
    best = doc.get("max_concurrency")
    if not isinstance(best, int) or isinstance(best, bool) or best < 1:
        raise ConfigError(
            f"the capacity report {path} has no maximum concurrency (no level met 5.5's "
            "criteria): give --capacity N"
        )
    at_max = next((lv for lv in doc.get("levels") or [] if lv.get("concurrency") == best), None)
    workload = ((doc.get("configuration") or {}).get("workload") or {}).get("name")
    e2e = (at_max or {}).get("e2e_p50_ms")
    return CapacitySource(
        concurrency=best,
        source=f"5.5 report ({path})",
        report=str(path),
        workload=workload if isinstance(workload, str) else None,
        e2e_p50_ms=float(e2e) if isinstance(e2e, int | float) else None,
    )


def target_max_model_len(target: str, model: str, timeout_s: float = 10.0) -> int | None:
    """The ``max_model_len`` the target's ``/v1/models`` reports for ``model`` (vLLM), or None."""
    try:
        response = httpx.get(f"{target.rstrip('/')}/v1/models", timeout=timeout_s)
        entries = response.json().get("data", []) if response.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            value = entry.get("max_model_len")
            return value if isinstance(value, int) and value > 0 else None
    return None


# ------------------------------------------------------------------------------------------
# The procedure
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryPressureParams:
    """5.8.2 setup parameters (module docstring); None takes the profile's or a derived value.

    ``levels`` are fractions of the capacity (1.1 = 110 %). ``search`` configures 5.5's search,
    run only when neither ``capacity`` nor ``capacity_report`` is given.
    """

    capacity: int | None = option(
        None,
        help="The 5.5 capacity (max concurrency); without it or --capacity-report, 5.5's "
        "search runs first.",
    )
    capacity_report: Path | None = option(
        None, help="A 5.5 procedure.json: capacity = its max concurrency."
    )
    levels: tuple[float, ...] = option(
        draft.PRESSURE_OVERSUBSCRIPTION,
        help="Oversubscription level, % of capacity (repeatable; 100 110 125 150).",
        name="level",
        scale=100.0,
    )
    level_duration_s: float | None = option(
        None,
        help="Seconds per level at least (default: draft 120, quick profile's).",
        name="level_duration",
    )
    min_level_requests: int | None = shared_option("min_level_requests")
    workload: str = common(LONG_CONTEXT_WORKLOAD)
    max_context_len: int | None = option(
        None,
        help="The target's context window (default: --max-model-len with --sut, else the "
        "target's /v1/models).",
    )
    output_tokens: int = option(
        draft.LONG_CONTEXT_OUTPUT_TOKENS, help="Long Context output tokens (A.5)."
    )
    search: CapacityParams = nested(
        CapacityParams,
        help={
            "initial_concurrency": "5.5 search (when it runs): starting concurrency.",
            "max_concurrency": "5.5 search (when it runs): upper bound.",
            "slo_ttft_p99_ms": "5.5 search (when it runs): TTFT P99 limit, ms.",
        },
    )

    def __post_init__(self) -> None:
        if self.capacity is not None and self.capacity_report is not None:
            raise ConfigError("give --capacity or --capacity-report, not both")
        if self.capacity is not None and self.capacity < 1:
            raise ConfigError("--capacity must be at least 1")
        plan_oversubscription(1, self.levels)  # validates the levels
        if self.level_duration_s is not None and not self.level_duration_s > 0:
            raise ConfigError("--level-duration must be > 0")
        if self.min_level_requests is not None and self.min_level_requests < 1:
            raise ConfigError("--min-level-requests must be at least 1")
        if self.output_tokens < 1:
            raise ConfigError("--output-tokens must be at least 1")
        if self.max_context_len is not None and self.max_context_len <= self.output_tokens:
            raise ConfigError("--max-context-len must exceed --output-tokens")


@register_procedure("memory-pressure", "5.8", "Memory Pressure Behavior")
class MemoryPressureProcedure(Procedure[MemoryPressureParams, PressureSection]):
    """Draft 5.8 (module docstring)."""

    def __init__(self, params: MemoryPressureParams) -> None:
        super().__init__(params)
        self.capacity: CapacitySource | None = None
        self.search: CapacityProcedure | None = None
        self.plan: list[PressureLevel] = []
        self.context_len: int | None = None
        self.context_source: str | None = None
        self._levels: list[Level] = []
        if params.capacity_report is not None:
            self.capacity = capacity_from_report(params.capacity_report)  # fail before starting
        elif params.capacity is not None:
            self.capacity = CapacitySource(params.capacity, "given (--capacity)")

    @property
    def duration_s(self) -> float:
        d = self.params.level_duration_s
        if d is not None:
            return d
        return (
            draft.PRESSURE_LEVEL_MIN_S
            if self.profile.name == "draft"
            else self.profile.level_duration_s
        )

    @property
    def min_requests(self) -> int:
        return self.params.min_level_requests or self.profile.min_level_requests

    def planned_levels(self) -> int | None:
        if self.capacity is None:
            return None
        return len(plan_oversubscription(self.capacity.concurrency, self.params.levels))

    def parameters(self) -> RawParameters:
        p = self.params
        out: RawParameters = asdict(p)
        out["capacity_report"] = None if p.capacity_report is None else str(p.capacity_report)
        out["search"] = asdict(p.search) if self.capacity is None or self.search else None
        return {
            **out,
            "levels_percent": [round(100.0 * v, 3) for v in p.levels],
            "level_duration_s": self.duration_s,
            "min_level_requests": self.min_requests,
            "max_context_len": self.context_len or p.max_context_len,
            "max_context_len_source": self.context_source,
            "load_model": "closed-loop",
        }

    # -------------------------------------------------------------- run
    def _resolve_workload(self, session: ProcedureSession) -> None:
        """Pin the workload (and, for Long Context, the context window) on the session's base
        config before any level, so that 5.5's search and the levels send the same requests."""
        p = self.params
        params = dict(session.base.workload_params)
        if p.workload == LONG_CONTEXT_WORKLOAD:
            launched = (self.spec.launch_vllm_cpu or {}) if self.spec is not None else {}
            if p.max_context_len is not None:
                self.context_len, self.context_source = p.max_context_len, "given"
            elif isinstance(launched.get("max_model_len"), int):
                self.context_len = int(launched["max_model_len"])
                self.context_source = "the launched vLLM's max_model_len"
            else:
                self.context_len = target_max_model_len(session.base.target, session.base.model)
                self.context_source = "the target's /v1/models max_model_len"
            if self.context_len is None:
                raise ConfigError(
                    "the Long Context workload needs the target's context window and "
                    f"{session.base.target}/v1/models reports none: give --max-context-len"
                )
            if self.context_len <= p.output_tokens + 100:
                raise ConfigError(
                    f"context window {self.context_len} leaves no room for a document next to "
                    f"{p.output_tokens} output tokens: lower --output-tokens"
                )
            params.update(max_context_len=self.context_len, output_tokens=p.output_tokens)
        session.base = replace(session.base, workload=p.workload, workload_params=params)

    def _search_capacity(self, session: ProcedureSession) -> CapacitySource:
        assert self.spec is not None
        search = CapacityProcedure(self.params.search)
        search.bind(self.spec)
        self.search = search
        first = len(session.levels)
        try:
            search.run(session)
        finally:
            for lv in session.levels[first:]:
                lv.meta["role"] = CAPACITY_ROLE
        best = search.search.best if search.search is not None else None
        if best is None:
            raise ConfigError(
                "5.5's search found no concurrency meeting its criteria: no capacity to "
                "oversubscribe (give --capacity N)"
            )
        at_best = next(
            (lv for lv in session.levels[first:] if lv.load.concurrency == int(best)), None
        )
        e2e = (
            at_best.live_row.get("e2e_p50_ms") if at_best is not None and at_best.live_row else None
        )
        return CapacitySource(
            concurrency=int(best),
            source="5.5 search in this procedure (on this procedure's workload)",
            workload=self.params.workload,
            e2e_p50_ms=e2e,
        )

    def requests_for(self, concurrency: int, e2e_p50_ms: float | None) -> int:
        """Requests of a level: enough to last the level duration at the E2E P50 given."""
        n = max(self.min_requests, concurrency)
        if e2e_p50_ms:
            return max(n, math.ceil(self.duration_s * concurrency / (e2e_p50_ms / 1000.0)))
        return max(n, concurrency * self.profile.capacity_requests_per_slot)

    def run(self, session: ProcedureSession) -> None:
        self._resolve_workload(session)
        if self.capacity is None:
            self.capacity = self._search_capacity(session)
        cap = self.capacity
        self.plan = plan_oversubscription(cap.concurrency, self.params.levels)
        e2e = cap.e2e_p50_ms
        for planned in self.plan:
            load = LoadSpec(
                mode="closed_loop",
                requests=self.requests_for(planned.concurrency, e2e),
                concurrency=planned.concurrency,
            )
            level = session.run_level(
                load,
                _label(planned.requested, planned.effective),
                {
                    "role": PRESSURE_ROLE,
                    "oversubscription": list(planned.requested),
                    "effective_oversubscription": planned.effective,
                    "capacity": cap.concurrency,
                },
            )
            e2e = (level.live_row.get("e2e_p50_ms") if level.live_row else None) or e2e

    # -------------------------------------------------------------- build
    def build(self, levels: list[Level]) -> PressureSection:
        cap = self.capacity
        self._levels = [lv for lv in levels if lv.meta.get("role") == PRESSURE_ROLE]
        entries: list[MemoryPressureLevel] = []
        for lv in levels:
            if lv.meta.get("role") != PRESSURE_ROLE:
                continue
            measured = pressure_row(lv.data, lv.row)
            entries.append(cast(MemoryPressureLevel, level_entry(lv, **measured)))
        base = next((e for e in entries if 1.0 in e["oversubscription"]), None)
        for e in entries:
            e["degradation"] = _degradation(e, base)
        deviations = self._deviations(entries)
        search_body: PressureCapacitySearch | None = None
        capacity_levels: list[CapacityLevel] = []
        if self.search is not None:
            searched = [lv for lv in levels if lv.meta.get("role") == CAPACITY_ROLE]
            body = self.search.build(searched)
            capacity_levels = body["levels"]
            deviations += [f"5.5 capacity search: {d}" for d in body["deviations"]]
            search_body = {
                **body["search"],
                "slo": body["slo"],
                "max_concurrency": body["max_concurrency"],
                "throughput_at_max_tokens_per_s": body["throughput_at_max_tokens_per_s"],
                "tokens_in_flight_at_max": body["tokens_in_flight_at_max"],
            }
            self.notes += [f"5.5 capacity search: {n}" for n in self.search.notes]
        if cap is not None and cap.workload and cap.workload != self.params.workload:
            self.notes.append(
                f"the capacity was measured with the {cap.workload} workload and the levels run "
                f"{self.params.workload}: 100 % is the 5.5 capacity as 5.8.3 step 1 asks, not "
                "necessarily the capacity for this workload"
            )
        observed = [e["preemption"] for e in entries if e["preemption"] is not None]
        rates = [p["rate"] for p in observed if p["rate"] is not None]
        summary: PressureSummary = {
            "base_index": entries.index(base) if base is not None else None,
            "first_below_completion_index": next(
                (
                    i
                    for i, e in enumerate(entries)
                    if e["completion_rate"] is None
                    or e["completion_rate"] < draft.CAPACITY_MIN_COMPLETION
                ),
                None,
            ),
            "first_preempted_index": next(
                (
                    i
                    for i, e in enumerate(entries)
                    if e["preemption"] is not None and e["preemption"]["requests_preempted"] > 0
                ),
                None,
            ),
            "max_preemption_rate": max(rates) if rates else None,
            "preemptions_observed": bool(observed),
        }
        return {
            "capacity": None
            if cap is None
            else {
                "concurrency": cap.concurrency,
                "source": cap.source,
                "report": cap.report,
                "workload": cap.workload,
                "e2e_p50_ms": cap.e2e_p50_ms,
                "search": search_body,
            },
            "workload": self._workload_block(levels),
            "levels": entries,
            "capacity_levels": capacity_levels,
            "summary": summary,
            "deviations": deviations,
        }

    def _workload_block(self, levels: list[Level]) -> PressureWorkload:
        p = self.params
        inputs: list[int] = []
        for lv in levels:
            if lv.meta.get("role") == PRESSURE_ROLE and lv.data is not None:
                c = lv.data.client
                inputs += [int(v) for v in np.unique(c.input_tokens[np.isfinite(c.input_tokens)])]
        long_context = p.workload == LONG_CONTEXT_WORKLOAD
        return {
            "name": p.workload,
            "max_context_len": self.context_len,
            "max_context_len_source": self.context_source,
            "output_tokens": p.output_tokens if long_context else None,
            "input_tokens": sorted(set(inputs)),
            "choice": (
                "Long Context (A.5), as 5.8.2 recommends; inputs capped at the context window "
                f"less {p.output_tokens} output tokens, so on a window below 8K tokens every "
                "request fills the whole window (the most KV cache per request)"
            )
            if long_context
            else f"{p.workload} (given)",
        }

    def _deviations(self, entries: list[MemoryPressureLevel]) -> list[str]:
        p = self.params
        out: list[str] = []
        if self.duration_s < draft.PRESSURE_LEVEL_MIN_S:
            out.append(
                f"levels planned for {self.duration_s:g} s, shorter than the "
                f"{draft.PRESSURE_LEVEL_MIN_S:g} s of 5.8.3 step 3.2"
            )
        short = [
            f"{e['index']} ({fmt(e.get('duration_s'), 1)} s)"
            for e in entries
            if e.get("duration_s") is not None and e["duration_s"] < draft.PRESSURE_LEVEL_MIN_S
        ]
        if short and self.duration_s >= draft.PRESSURE_LEVEL_MIN_S:
            out.append(
                f"level(s) {', '.join(short)} ran shorter than the "
                f"{draft.PRESSURE_LEVEL_MIN_S:g} s "
                "of 5.8.3 step 3.2 (closed-loop levels are sized by request count from the "
                "previous level's median latency)"
            )
        elif short:
            self.notes.append(f"levels ran for: {', '.join(short)}")
        out += [f"workload: {d}" for d in self._workload_deviations()]
        if p.workload != LONG_CONTEXT_WORKLOAD:
            out.append(
                f"workload {p.workload} instead of the Long Context workload 5.8.2 recommends"
            )
        cap = self.capacity.concurrency if self.capacity else NA
        for planned in self.plan:
            text = (
                f"oversubscription {' and '.join(_percent(r) for r in planned.requested)} of "
                f"capacity {cap} ran at concurrency {planned.concurrency} "
                f"({_percent(planned.effective)} effective)"
            )
            if len(planned.requested) > 1 or planned.raised:
                out.append(
                    f"{text}: with this capacity the levels do not map to distinct "
                    "concurrencies above it (a closed loop has integer concurrency)"
                )
            elif abs(planned.requested[0] - planned.effective) > 0.005:
                self.notes.append(f"{text}: concurrency is rounded half up")
        if 1.0 not in p.levels:
            self.notes.append("no 100 % base level: degradation is not measured against one")
        no_hooks = [str(e["index"]) for e in entries if e["preemption"] is None]
        if no_hooks:
            out.append(f"level(s) {', '.join(no_hooks)}: {NO_HOOKS_REASON}")
        counts = [int(e.get("requests") or 0) for e in entries]
        if counts and min(counts) < draft.P99_MIN_SAMPLES:
            out.append(
                f"TTFT P99 from as few as {min(counts)} requests per level, fewer than the "
                f"{draft.P99_MIN_SAMPLES} the draft requires for P99 (5.1.2.1)"
            )
        return out

    def _workload_deviations(self) -> list[str]:
        """The workload spec's own deviations (e.g. A.5's lengths capped to the window)."""
        for lv in self._levels:
            workload = lv.report["run"]["workload"] if lv.report else None
            spec = workload["spec"] if workload else {}
            return [str(d) for d in spec.get("deviations") or []]
        return []

    # -------------------------------------------------------------- render
    def render(self, result: PressureSection) -> list[str]:
        cap = result["capacity"]
        wl = result["workload"]
        rows = []
        for lv in result["levels"]:
            pre = lv["preemption"]
            rows.append(
                [
                    _row_label(lv),
                    str(lv.get("concurrency")),
                    pct(lv["completion_rate"]),
                    NA if pre is None else pct(pre["rate"]),
                    pct(lv["failure_rate"]),
                    fmt(lv.get("ttft_p99_ms"), 0, "ms"),
                ]
            )
        lines = [
            "## Memory pressure degradation (5.8.5)",
            "",
            f"Capacity (5.5): {cap['concurrency'] if cap else NA} concurrent requests — "
            f"{cap['source'] if cap else NA}. Workload: {wl['choice']}"
            + (f"; context window {wl['max_context_len']} tokens" if wl["max_context_len"] else "")
            + (f", inputs {wl['input_tokens']} tokens" if wl["input_tokens"] else "")
            + ".",
            "",
            *table(
                ["Oversub Level", "Concurrency", "Complete", "Preempt", "Fail Rate", "TTFT P99"],
                rows,
            ),
            "",
            "## Preemption (5.8.4)",
            "",
        ]
        pre_rows = []
        for lv in result["levels"]:
            pre = lv["preemption"]
            if pre is None:
                pre_rows.append([_row_label(lv)] + [NA] * 7)
                continue
            pre_rows.append(
                [
                    _row_label(lv),
                    f"{pre['requests_preempted']} / {pre['requests_observed']}",
                    pct(pre["rate"]),
                    pct(pre["recovery_rate"]),
                    str(pre["events"]),
                    fmt(pre["loss_per_preemption"], 1),
                    fmt(pre["stall_p50_ms"], 1, "ms"),
                    fmt(pre["stall_p99_ms"], 1, "ms"),
                ]
            )
        lines += table(
            ["Oversub Level", "Preempted / observed", "Preemption rate", "Recovery rate",
             "Preemption events", "Tokens discarded / preemption", "Stall P50", "Stall P99"],
            pre_rows,
        )  # fmt: skip
        lines += [
            "",
            "Tokens discarded: prompt + output tokens whose KV cache a preemption freed "
            "(recomputed on resumption; vLLM V1 keeps the generated tokens). Recovery: preempted "
            "requests "
            "that still completed.",
            "",
            "## Failures and degradation (5.8.3 steps 3.4, 4)",
            "",
        ]
        fail_rows = []
        for lv in result["levels"]:
            f, d = lv["failures"], lv["degradation"]
            fail_rows.append(
                [_row_label(lv)]
                + [str(f[k]) for k in FAILURE_KINDS]
                + [
                    NA
                    if d["completion_change"] is None
                    else f"{100 * d['completion_change']:+.1f} pp",
                    NA if d["ttft_p99_ratio"] is None else f"{d['ttft_p99_ratio']:.2f}×",
                ]
            )
        lines += table(
            ["Oversub Level", "HTTP 5xx (OOM-like)", "HTTP 4xx", "Timeout", "Other",
             "Completion vs base", "TTFT P99 vs base"],
            fail_rows,
        )  # fmt: skip
        s = result["summary"]
        levels = result["levels"]

        def at(index: int | None) -> str:
            return "none" if index is None else _row_label(levels[index])

        lines += [
            "",
            f"- First level below {draft.CAPACITY_MIN_COMPLETION:.0%} completion: "
            f"{at(s['first_below_completion_index'])}",
            "- First level with a preemption: "
            + (at(s["first_preempted_index"]) if s["preemptions_observed"] else NA + " (no hooks)"),
            "",
            "## Preemption timeline",
            "",
        ]
        timeline_rows = []
        for lv in levels:
            pre = lv["preemption"]
            if pre is None:
                continue
            t = pre["timeline"]
            timeline_rows.append(
                [_row_label(lv), fmt(t["bin_s"], 2, "s"), " ".join(map(str, t["preemptions"]))]
            )
        if timeline_rows:
            lines += table(["Oversub Level", "Bin", "Preemptions per bin"], timeline_rows)
            lines += ["", f"Placement: {TIMELINE_PLACEMENT}."]
        else:
            lines.append(f"{NA}: {NO_HOOKS_REASON}.")
        return lines


def _percent(value: float) -> str:
    return f"{100.0 * value:.4g}%"


def _label(requested: Sequence[float], effective: float) -> str:
    text = " / ".join(_percent(r) for r in requested)
    if 1.0 in requested:
        text += " (base)"
    if len(requested) > 1 or any(abs(r - effective) > 0.005 for r in requested):
        text += f" (effective {_percent(effective)})"
    return text


def _row_label(entry: MemoryPressureLevel) -> str:
    return _label(entry["oversubscription"], entry["effective_oversubscription"])


def _degradation(
    entry: MemoryPressureLevel, base: MemoryPressureLevel | None
) -> PressureDegradation:
    if base is None:
        return {"completion_change": None, "ttft_p99_ratio": None}
    rate, base_rate = entry["completion_rate"], base["completion_rate"]
    p99, base_p99 = entry.get("ttft_p99_ms"), base.get("ttft_p99_ms")
    return {
        "completion_change": None if rate is None or base_rate is None else rate - base_rate,
        "ttft_p99_ratio": p99 / base_p99 if p99 is not None and base_p99 else None,
    }
