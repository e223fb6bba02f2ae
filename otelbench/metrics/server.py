"""Server-side metrics that need more than one span's numbers: TTFT decomposition, preemptions,
engine steps.

Pure numpy, no I/O. Definitions:

* **TTFT decomposition** (draft 5.1.4.2, per request): the client's TTFT is split into

  - ``network_and_framing`` = client TTFT − server TTFT: the request's way to the engine (network,
    HTTP, API server) plus the first token's way back (detokenisation, SSE framing, network);
    two durations each measured on one clock, so no clock synchronisation is needed;
  - ``arrival_to_queue`` = server TTFT − queue − prefill: from the request's arrival in vLLM's
    API server to its queueing in the engine core (tokenisation, inter-process hand-off);
  - ``queue`` (queued → first scheduled) and ``prefill`` (scheduled → first token).

  The four add up to the client TTFT. Only requests with all four inputs defined are decomposed.
  Each component's **share of the mean** is ``mean(component) / mean(client TTFT)`` over those
  requests (the shares add up to 1); its **P50 share** is the median over requests of
  ``component_i / client TTFT_i`` (requests with a positive client TTFT; these need not add up).
* **Preemptions** (draft 5.8.4), over requests whose server span carries preemption data:
  ``total`` preemptions, ``requests_preempted`` (at least one), ``rate`` (preempted / observed),
  ``recovery_rate`` (preempted requests that still succeeded / preempted requests), tokens whose
  KV cache was discarded (recomputed on resumption) and the stall of each resumption.
* **Engine steps** (draft 4.6.2–4.6.3 applied to Option C): the engine hooks give every output
  token the time of the engine step that produced it, so the tokens of one step (speculative
  decoding — n-gram, EAGLE, MTP — or any multi-token step) share one time. A **step** is a run
  of equal times within a request; **tokens per step** is its length. Per-token ITL (Option C,
  draft 5.4.3) then has ``tokens − steps`` zero samples, one per token beyond the first of its
  step; the **time between steps** is the gap between consecutive distinct step times within a
  request — Option A's "time between chunks" (4.6.3) taken at the engine, where a step is the
  chunk and tokens per step its chunk size.
* **Unread work**: the engine's work on requests it did not finish (cancelled, aborted,
  failed), whose responses nobody read whole — prompt tokens processed and output tokens
  generated (the engine core's account on a span cut short; a span ended through vLLM's finished
  path counts its prompt and completion tokens) and request-seconds in the engine (time in model
  inference: first scheduling to the end).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.arrays import F64
from otelbench.metrics.latency import Ragged, consecutive_intervals
from otelbench.metrics.summary import percentile

__all__ = [
    "TTFT_COMPONENTS",
    "EngineSteps",
    "Preemptions",
    "TtftDecomposition",
    "UnreadWork",
    "engine_steps",
    "preemption_stats",
    "ttft_decomposition",
    "unread_work",
]

TTFT_COMPONENTS: Final = ("network_and_framing", "arrival_to_queue", "queue", "prefill")
"""The TTFT decomposition's components, in the order a request meets them (framing both ways)."""


@dataclass(frozen=True, slots=True, eq=False)
class TtftDecomposition:
    """Per-request TTFT components of the decomposed requests, and their shares."""

    client_ttft: F64
    components: Mapping[str, F64]
    share_of_mean: Mapping[str, float | None]
    share_p50: Mapping[str, float | None]


def ttft_decomposition(
    client_ttft: npt.ArrayLike,
    server_ttft: npt.ArrayLike,
    queue: npt.ArrayLike,
    prefill: npt.ArrayLike,
) -> TtftDecomposition:
    """Split each client TTFT into network and framing, arrival to queue, queue and prefill.

    All inputs are per request in one unit; requests where any input is NaN are left out.

    >>> d = ttft_decomposition([100.0], [60.0], [10.0], [45.0])
    >>> {k: v.tolist() for k, v in d.components.items()}
    {'network_and_framing': [40.0], 'arrival_to_queue': [5.0], 'queue': [10.0], 'prefill': [45.0]}
    >>> d.share_of_mean["network_and_framing"]
    0.4
    """
    c, s, q, p = (
        np.asarray(a, dtype=np.float64) for a in (client_ttft, server_ttft, queue, prefill)
    )
    if not (c.shape == s.shape == q.shape == p.shape):
        raise ValueError("per-request arrays must have the same shape")
    ok = np.isfinite(c) & np.isfinite(s) & np.isfinite(q) & np.isfinite(p)
    c, s, q, p = c[ok], s[ok], q[ok], p[ok]
    components = {
        "network_and_framing": c - s,
        "arrival_to_queue": s - q - p,
        "queue": q,
        "prefill": p,
    }
    mean_c = float(c.mean()) if c.size else 0.0
    positive = c > 0
    share_of_mean: dict[str, float | None] = {}
    share_p50: dict[str, float | None] = {}
    for name, values in components.items():
        share_of_mean[name] = float(values.mean()) / mean_c if mean_c > 0 else None
        share_p50[name] = percentile(values[positive] / c[positive], 50)
    return TtftDecomposition(c, components, share_of_mean, share_p50)


@dataclass(frozen=True, slots=True)
class Preemptions:
    """Preemption counts of the observed requests (draft 5.8.4); rates None when undefined."""

    requests_observed: int
    total: int
    requests_preempted: int
    rate: float | None
    recovered: int
    recovery_rate: float | None
    kv_tokens_discarded: int
    per_request: F64


def preemption_stats(
    preemptions: npt.ArrayLike,
    succeeded: npt.ArrayLike,
    kv_tokens_discarded: npt.ArrayLike,
) -> Preemptions:
    """Preemption totals over requests; NaN preemption counts mark requests not observed.

    ``preemptions`` is each request's number of preemptions, ``succeeded`` whether the request
    still finished successfully, ``kv_tokens_discarded`` the KV tokens its preemptions freed
    (NaN adds nothing).

    >>> p = preemption_stats([0, 2, 1, float("nan")], [True, True, False, True], [0, 40, 20, 0])
    >>> (p.requests_observed, p.total, p.requests_preempted, p.rate, p.recovery_rate)
    (3, 3, 2, 0.6666666666666666, 0.5)
    """
    n = np.asarray(preemptions, dtype=np.float64)
    ok = np.asarray(succeeded, dtype=np.bool_)
    kv = np.asarray(kv_tokens_discarded, dtype=np.float64)
    if not (n.shape == ok.shape == kv.shape):
        raise ValueError("per-request arrays must have the same shape")
    observed = np.isfinite(n)
    counts = n[observed]
    preempted = counts > 0
    n_preempted = int(preempted.sum())
    recovered = int((ok[observed] & preempted).sum())
    return Preemptions(
        requests_observed=int(counts.size),
        total=int(counts.sum()),
        requests_preempted=n_preempted,
        rate=n_preempted / counts.size if counts.size else None,
        recovered=recovered,
        recovery_rate=recovered / n_preempted if n_preempted else None,
        kv_tokens_discarded=int(np.nansum(kv[observed])),
        per_request=counts,
    )


@dataclass(frozen=True, slots=True, eq=False)
class EngineSteps:
    """The engine steps of per-token timelines (module docstring, draft 4.6.2–4.6.3).

    ``tokens_per_step`` has one entry per step, request after request; ``step_times`` each
    request's distinct step times (a request without tokens has none); ``between_steps`` the
    gaps between consecutive ones (:func:`~otelbench.metrics.consecutive_intervals`);
    ``zero_gaps`` the per-token ITL samples that are 0 (``tokens - steps``) and ``itl_samples``
    all of them (``tokens`` less one per request with a token).
    """

    tokens_per_step: npt.NDArray[np.int64]
    step_times: Ragged
    between_steps: Ragged
    tokens: int
    zero_gaps: int
    itl_samples: int

    @property
    def steps(self) -> int:
        """How many engine steps produced the tokens."""
        return int(self.tokens_per_step.size)

    @property
    def multi_token_steps(self) -> int:
        """Steps that produced more than one token."""
        return int(np.count_nonzero(self.tokens_per_step > 1))

    @property
    def zero_gap_share(self) -> float | None:
        """``zero_gaps / itl_samples``: the share of per-token ITL samples that are 0 (None
        without a sample)."""
        return self.zero_gaps / self.itl_samples if self.itl_samples else None


def engine_steps(token_times: Ragged) -> EngineSteps:
    """Group each request's per-token times (non-decreasing, one per token; the engine hooks'
    Option C offsets) into engine steps: runs of equal times.

    >>> s = engine_steps(Ragged.from_lengths([10.0, 20.0, 20.0, 20.0, 35.0, 5.0], [5, 1]))
    >>> s.tokens_per_step.tolist(), [g.tolist() for g in s.between_steps]
    ([1, 3, 1, 1], [[10.0, 15.0], []])
    >>> s.zero_gaps, s.itl_samples, s.zero_gap_share
    (2, 4, 0.5)
    """
    v = token_times.values
    lengths = token_times.lengths()
    nonempty = lengths > 0
    starts = token_times.bounds[:-1][nonempty]
    new_step = np.ones(v.size, dtype=np.bool_)
    if v.size > 1:
        np.not_equal(v[1:], v[:-1], out=new_step[1:])
    new_step[starts] = True  # a request's first token opens its first step
    step_starts = np.flatnonzero(new_step)
    tokens_per_step = np.diff(np.append(step_starts, v.size)).astype(np.int64)
    steps_per_request = np.zeros(lengths.size, dtype=np.int64)
    if starts.size:
        steps_per_request[nonempty] = np.add.reduceat(new_step.astype(np.int64), starts)
    step_times = Ragged.from_lengths(v[new_step], steps_per_request)
    tokens = int(v.size)
    return EngineSteps(
        tokens_per_step=tokens_per_step,
        step_times=step_times,
        between_steps=consecutive_intervals(step_times),
        tokens=tokens,
        zero_gaps=tokens - int(step_starts.size),
        itl_samples=tokens - int(starts.size),
    )


@dataclass(frozen=True, slots=True)
class UnreadWork:
    """The engine's work on requests it did not finish (module docstring)."""

    requests: int
    prompt_tokens: int
    output_tokens: int
    engine_s: float
    unaccounted: int
    """Requests whose work is not known: cut short without the engine core's account (their
    tokens count as 0)."""


def unread_work(
    prompt_tokens: npt.ArrayLike, output_tokens: npt.ArrayLike, inference_s: npt.ArrayLike
) -> UnreadWork:
    """Sum the work of requests the engine did not finish, one entry per request: the prompt
    tokens it processed and the output tokens it generated for each (NaN: not known, counted
    in ``unaccounted`` and as 0), and each one's time in model inference (NaN: none, a request
    cut in the queue).

    >>> w = unread_work([100, float("nan"), 50], [4, float("nan"), 2], [0.5, float("nan"), 0.25])
    >>> (w.requests, w.prompt_tokens, w.output_tokens, w.engine_s, w.unaccounted)
    (3, 150, 6, 0.75, 1)
    """
    prompt, output, inference = (
        np.asarray(a, dtype=np.float64) for a in (prompt_tokens, output_tokens, inference_s)
    )
    if not prompt.shape == output.shape == inference.shape:
        raise ValueError("per-request arrays must have the same shape")
    return UnreadWork(
        requests=int(prompt.size),
        prompt_tokens=int(np.nansum(prompt)),
        output_tokens=int(np.nansum(output)),
        engine_s=float(np.nansum(inference)),
        unaccounted=int(np.count_nonzero(~(np.isfinite(prompt) & np.isfinite(output)))),
    )
