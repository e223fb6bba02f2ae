"""The metrics of one sliding window of server spans: pure numpy, no I/O.

Input: a :class:`~otelbench.live.query.LiveWindow` (the server spans that ended within the
window, one per request) restricted to one traffic source. Definitions, each reusing the
methodology's functions in :mod:`otelbench.metrics`:

* **requests** (every server span that ended in the window, the requests the engine did not
  finish included), **errors** (span status Error: the hooks' ``aborted`` and ``error`` ends
  among them), **request rate** = requests / window length; **output token rate** = output
  tokens of the successful requests / window length.
* **Requests cut** (the engine hooks' ``otelbench.server.end_reason`` ``cancelled``,
  ``aborted`` or ``error``, by ``otelbench.server.end_phase``; ``unknown`` without one): every
  pair counted, 0 included; **unread work**: the prompt tokens processed, output tokens
  generated and engine request-seconds (``gen_ai.latency.time_in_model_inference``) of those
  requests, whose responses nobody read whole (the report's ``metrics.server.request_ends.
  unread_work``).
* A request is **successful** when its span's status is not Error and the engine finished it
  (a cancelled request's status is unset, yet its timing stops where it was cut).
* Over the **successful** requests: **TTFT**, **E2E**, **queue** and **prefill** are the server
  span's ``gen_ai.latency.*`` values (the TTFT components of draft 5.1.4.2); **ITL** samples are
  the gaps between consecutive output-token steps of the hook spans' per-token offsets (draft
  5.4.3, Option C timeline); **TPOT** (draft 5.4, :func:`otelbench.metrics.tpot`) is
  ``(last − first token) / (tokens − 1)`` from the hook offsets, else from ``time_to_first_token``
  and ``time_in_model_decode`` with the completion tokens (an ``llm_request`` span). Percentiles
  are type 7 (:func:`otelbench.metrics.summarize`).
* **Fluidity-index** (Etalon §4.1, :func:`otelbench.metrics.fluidity_indices`) of every hook
  span with token offsets, at each configured decode deadline ``D_d`` with one declared prefill
  deadline ``D_p``; the exposed distribution is its low tail (P1, P5, P50) and the fraction of
  requests at least ``min_fluidity``. **Fluid token rate** (Etalon §4.2,
  :func:`otelbench.metrics.fluid_token_generation_rate`).
* **Preemptions** (draft 5.8.4, :func:`otelbench.metrics.preemption_stats`) over hook spans:
  preempted requests / observed requests, and preemptions / window length.
* **Jain's index** (draft 5.6.4, :func:`otelbench.metrics.jain_fairness_index`) across request
  classes (the configured attribute) of each class's **mean** TTFT and mean TPOT. Live traffic
  has no isolated baseline, so this is the spread of the service the classes receive, not the
  draft's normalized-latency index; it needs at least 2 classes with values (else None).
  Requests without the attribute form the class :data:`~otelbench.semconv.CLASS_NONE`.
* **SLO attainment** (per configured SLO and for all together): requests meeting it / all
  requests; a failed or cut request never meets it, a request without a TPOT (one output
  token) meets the TPOT SLO. **Goodput** (DistServe's definition): requests meeting every
  configured SLO per second, and their output tokens per second.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, TypedDict

import numpy as np
import numpy.typing as npt

from otelbench import draft, semconv
from otelbench.arrays import F64
from otelbench.live.query import LiveWindow
from otelbench.metrics import (
    FluidRate,
    Preemptions,
    Ragged,
    Summary,
    consecutive_intervals,
    deadline_intervals,
    fluid_token_generation_rate,
    fluidity_indices,
    group_first,
    group_last,
    jain_fairness_index,
    percentile,
    preemption_stats,
    summarize,
    tpot,
    unread_work,
)
from otelbench.query import ServerRequests

__all__ = [
    "FLUIDITY_QUANTILES",
    "FluidityAt",
    "SourceMetrics",
    "WindowConfig",
    "source_metrics",
    "window_metrics",
]

FLUIDITY_QUANTILES: Final = (1.0, 5.0, 50.0)
"""The percentiles of the fluidity-index distribution exposed (its low tail matters)."""


@dataclass(frozen=True, slots=True)
class WindowConfig:
    """What ``watch`` computes: window, SLOs and Etalon's deadlines (seconds)."""

    window_s: float = 300.0
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    prefill_deadline_s: float = 1.0
    decode_deadlines_s: tuple[float, ...] = tuple(draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S.values())
    min_fluidity: float = 0.9
    fluid_request_fraction: float = 0.99
    fluid_rate_precision_s: float = 1e-4
    class_attribute: str = semconv.REQUEST_CLASS
    max_classes: int = 20

    def __post_init__(self) -> None:
        if not self.window_s > 0:
            raise ValueError("the window must be > 0 s")
        for name in ("slo_ttft_s", "slo_tpot_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0")
        if not self.prefill_deadline_s > 0 or not all(d > 0 for d in self.decode_deadlines_s):
            raise ValueError("fluidity deadlines must be > 0")
        if self.max_classes < 1:
            raise ValueError("max_classes must be >= 1")


@dataclass(frozen=True, slots=True)
class FluidityAt:
    """The fluidity-index distribution at one decode deadline."""

    decode_deadline_s: float
    count: int
    quantiles: Mapping[float, float | None]
    """Percentile (1, 5, 50) → value."""
    fraction_fluid: float | None


@dataclass(frozen=True, slots=True)
class SourceMetrics:
    """Every metric of one source over one window (module docstring)."""

    source: str
    window_s: float
    requests: int
    errors: int
    requests_per_s: float
    output_tokens_per_s: float
    ttft_s: Summary
    itl_s: Summary
    tpot_s: Summary
    e2e_s: Summary
    queue_s: Summary
    prefill_s: Summary
    fluidity: tuple[FluidityAt, ...]
    fluid_rate: FluidRate | None
    preemptions: Preemptions
    preemptions_per_s: float
    jain: Mapping[str, float | None]
    """``ttft`` / ``tpot`` → Jain's index across classes (None with fewer than 2 classes)."""
    class_requests: Mapping[str, int]
    slo_attainment: Mapping[str, float | None] = field(default_factory=dict)
    """``ttft`` / ``tpot`` / ``all`` → attainment, for the SLOs configured (None: no request)."""
    goodput_requests_per_s: float | None = None
    goodput_tokens_per_s: float | None = None
    cut: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(end reason, end phase) → requests the engine did not finish; every reason other than
    ``finished`` with every phase, 0 included (empty where not computed)."""
    unread_prompt_tokens: int = 0
    unread_output_tokens: int = 0
    unread_engine_s: float = 0.0
    """The work of the requests in :attr:`cut` (module docstring)."""


def _finite(a: npt.ArrayLike) -> F64:
    v = np.asarray(a, dtype=np.float64)
    return v[np.isfinite(v)]


def _valid_timelines(times: Ragged) -> npt.NDArray[np.bool_]:
    """False for a request whose token offsets are negative or decrease (a malformed span from
    live traffic must not stop the window's other metrics)."""
    bad = group_first(times) < 0
    gaps = consecutive_intervals(times)
    bad[gaps.group_ids()[gaps.values < 0]] = True
    return np.asarray(~bad, dtype=np.bool_)


def _class_jain(values: F64, classes: npt.NDArray[np.str_]) -> float | None:
    keep = np.isfinite(values) & (values >= 0)
    v, c = values[keep], classes[keep]
    labels = np.unique(c)
    if labels.size < 2:
        return None
    means = np.array([v[c == label].mean() for label in labels])
    return jain_fairness_index(means)


def _limit_classes(labels: list[str], max_classes: int) -> list[str]:
    counts = Counter(labels)
    if len(counts) <= max_classes:
        return labels
    keep = {label for label, _ in counts.most_common(max_classes - 1)}
    return [label if label in keep else "(other)" for label in labels]


def source_metrics(window: LiveWindow, source: str, config: WindowConfig) -> SourceMetrics:
    """The metrics of ``source``'s requests in ``window`` (module docstring)."""
    select = window.mask(source)
    r = window.requests
    cut_all = r.cut()
    finished = window.ok & ~cut_all  # successful: not an error, and not cut short
    unfinished = np.fromiter(
        (reason != semconv.END_REASON_FINISHED for reason in r.end_reasons()),
        dtype=np.bool_,
        count=len(r),
    )
    ok_all = finished & select
    idx_all = np.flatnonzero(select)
    idx = np.flatnonzero(ok_all)
    window_s = window.window_s
    completion = r.completion_tokens[idx]

    # token timelines of the successful hook spans (Option C, seconds since arrival)
    lengths_all = np.diff(r.token_bounds)
    times_all = Ragged(r.token_offset_us.astype(np.float64) / 1e6, r.token_bounds)
    has_tokens = ok_all & r.is_hook() & (lengths_all > 0) & _valid_timelines(times_all)
    times = times_all.select(has_tokens)

    # TPOT per successful request: hook offsets first, else the span's latency attributes
    first, last = group_first(times_all), group_last(times_all)
    n_tokens = lengths_all.astype(np.float64)
    tpot_hook = tpot(first, last, n_tokens)
    tpot_span = tpot(r.ttft_s, r.ttft_s + r.decode_s, r.completion_tokens)
    tpot_all = np.where(has_tokens, tpot_hook, tpot_span)

    fluidity = []
    intervals = deadline_intervals(times)
    for dd in config.decode_deadlines_s:
        fi = fluidity_indices(intervals, config.prefill_deadline_s, dd) if len(times) else None
        fi_v = _finite(fi) if fi is not None else np.empty(0)
        fluidity.append(
            FluidityAt(
                decode_deadline_s=dd,
                count=int(fi_v.size),
                quantiles={q: percentile(fi_v, q) for q in FLUIDITY_QUANTILES},
                fraction_fluid=float(np.mean(fi_v >= config.min_fluidity)) if fi_v.size else None,
            )
        )
    fluid_rate = (
        fluid_token_generation_rate(
            intervals,
            config.prefill_deadline_s,
            min_fluidity=config.min_fluidity,
            request_fraction=config.fluid_request_fraction,
            precision_s=config.fluid_rate_precision_s,
        )
        if len(times)
        else None
    )

    hook_rows = idx_all[r.is_hook()[idx_all] & ~cut_all[idx_all]]
    preempt = preemption_stats(
        r.preemptions[hook_rows], window.ok[hook_rows], r.kv_tokens_discarded[hook_rows]
    )

    labels = _limit_classes(
        [window.request_class[i] or semconv.CLASS_NONE for i in idx_all.tolist()],
        config.max_classes,
    )
    class_requests = dict(sorted(Counter(labels).items()))
    ok_labels = np.asarray(
        [lab for lab, i in zip(labels, idx_all.tolist(), strict=True) if finished[i]],
        dtype=np.str_,
    )
    jain = {
        "ttft": _class_jain(r.ttft_s[idx], ok_labels),
        "tpot": _class_jain(tpot_all[idx], ok_labels),
    }

    attainment: dict[str, float | None] = {}
    goodput_rps = goodput_tps = None
    if config.slo_ttft_s is not None or config.slo_tpot_s is not None:
        meets = np.ones(idx_all.size, dtype=np.bool_) & finished[idx_all]
        ttft_sel = r.ttft_s[idx_all]
        tpot_sel = tpot_all[idx_all]
        total = idx_all.size
        if config.slo_ttft_s is not None:
            m = finished[idx_all] & np.isfinite(ttft_sel) & (ttft_sel <= config.slo_ttft_s)
            attainment["ttft"] = float(m.mean()) if total else None
            meets &= m
        if config.slo_tpot_s is not None:
            with np.errstate(invalid="ignore"):
                m = finished[idx_all] & (~np.isfinite(tpot_sel) | (tpot_sel <= config.slo_tpot_s))
            attainment["tpot"] = float(m.mean()) if total else None
            meets &= m
        attainment["all"] = float(meets.mean()) if total else None
        goodput_rps = float(meets.sum()) / window_s
        goodput_tps = float(np.nansum(r.completion_tokens[idx_all][meets])) / window_s

    return SourceMetrics(
        source=source,
        window_s=window_s,
        requests=int(idx_all.size),
        errors=int(np.count_nonzero(~window.ok[idx_all])),
        requests_per_s=idx_all.size / window_s,
        output_tokens_per_s=float(np.nansum(completion)) / window_s,
        ttft_s=summarize(_finite(r.ttft_s[idx])),
        itl_s=summarize(consecutive_intervals(times).values),
        tpot_s=summarize(_finite(tpot_all[idx])),
        e2e_s=summarize(_finite(r.e2e_s[idx])),
        queue_s=summarize(_finite(r.queue_s[idx])),
        prefill_s=summarize(_finite(r.prefill_s[idx])),
        fluidity=tuple(fluidity),
        fluid_rate=fluid_rate,
        preemptions=preempt,
        preemptions_per_s=preempt.total / window_s,
        jain=jain,
        class_requests=class_requests,
        slo_attainment=attainment,
        goodput_requests_per_s=goodput_rps,
        goodput_tokens_per_s=goodput_tps,
        **_cut_requests(r, idx_all[unfinished[idx_all]]),
    )


class _CutRequests(TypedDict):
    """:class:`SourceMetrics`' fields of the requests the engine did not finish."""

    cut: dict[tuple[str, str], int]
    unread_prompt_tokens: int
    unread_output_tokens: int
    unread_engine_s: float


def _cut_requests(r: ServerRequests, rows: npt.NDArray[np.intp]) -> _CutRequests:
    """:class:`SourceMetrics`' ``cut`` and unread work of the server spans ``rows``: the
    requests the engine did not finish (:func:`otelbench.metrics.unread_work`)."""
    reasons = r.end_reasons()
    phases = r.end_phase or (None,) * len(r)
    counts = Counter((reasons[i], phases[i] or semconv.END_PHASE_UNKNOWN) for i in rows.tolist())
    prompt, output = r.engine_work()
    work = unread_work(prompt[rows], output[rows], r.inference_s[rows])
    return {
        "cut": {
            (reason, phase): counts[(reason, phase)]
            for reason in semconv.END_REASONS
            if reason != semconv.END_REASON_FINISHED
            for phase in semconv.END_PHASES
        },
        "unread_prompt_tokens": work.prompt_tokens,
        "unread_output_tokens": work.output_tokens,
        "unread_engine_s": work.engine_s,
    }


def window_metrics(
    window: LiveWindow,
    config: WindowConfig,
    sources: tuple[str, ...] = (semconv.SOURCE_LIVE, semconv.SOURCE_PROBE),
) -> dict[str, SourceMetrics]:
    """:func:`source_metrics` of every source in ``sources`` and of any other source present
    (a source without requests in the window still gets its request count, 0)."""
    wanted = sorted(set(sources) | set(window.sources()))
    return {s: source_metrics(window, s, config) for s in wanted}
