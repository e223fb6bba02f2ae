"""Server-side metrics that need more than one span's numbers: TTFT decomposition, preemptions.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.metrics.summary import percentile

__all__ = [
    "TTFT_COMPONENTS",
    "Preemptions",
    "TtftDecomposition",
    "preemption_stats",
    "ttft_decomposition",
]

F64 = npt.NDArray[np.float64]

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
