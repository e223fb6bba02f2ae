"""Scheduling fairness (draft 5.6.4): Jain's index, per-class latency inflation, starvation.

Pure numpy, no I/O. Definitions:

* **Jain's fairness index** (5.6.4): ``J = (Σ x_i)² / (n · Σ x_i²)`` over non-negative values;
  ``1/n <= J <= 1``, 1 when all values are equal. All-zero values are equal, so ``J = 1``.
* **Normalized latency** ``x_i`` (the draft leaves the normalisation open): a request's mixed-run
  TTFT divided by the *isolated* median TTFT of its class (5.6.3 step 2). A long request is
  then compared with what long requests get alone, not with short ones; ``J = 1`` when every
  request is slowed down by the same factor.
* **Latency inflation** (5.6.4): ``(mixed TTFT) / (isolated TTFT)`` per class, taken at a
  percentile (P50 by default; :func:`scheduling_fairness` reports P50 and P99).
* **Starvation rate** (5.6.4): per class, the fraction of requests whose wait (TTFT: submission
  to first token, 5.6.3 step 5) is longer than ``5 ×`` the class's median wait (strictly longer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.arrays import F64
from otelbench.metrics.summary import percentile

__all__ = [
    "ClassFairness",
    "Fairness",
    "jain_fairness_index",
    "latency_inflation",
    "scheduling_fairness",
    "starvation_rate",
]


def jain_fairness_index(x: npt.ArrayLike) -> float:
    """Jain's fairness index ``(Σx)² / (n·Σx²)`` of non-negative values (draft 5.6.4).

    Raises ``ValueError`` on an empty, negative or non-finite input.

    >>> jain_fairness_index([1.0, 1.0, 1.0, 1.0])
    1.0
    >>> jain_fairness_index([1.0, 0.0, 0.0, 0.0])
    0.25
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("Jain's index needs a non-empty 1-D array")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("Jain's index needs finite non-negative values")
    # scale by the largest value first: squares of huge or tiny values neither overflow nor vanish
    top = float(a.max())
    if top == 0.0:
        return 1.0
    s = a / top
    return float(s.sum() ** 2 / (a.size * float(np.sum(s * s))))


def latency_inflation(
    mixed: npt.ArrayLike, isolated: npt.ArrayLike, q: float = 50.0
) -> float | None:
    """``P_q(mixed) / P_q(isolated)`` of one class's TTFTs (draft 5.6.4); None when undefined.

    >>> latency_inflation([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    2.0
    """
    m = percentile(mixed, q)
    i = percentile(isolated, q)
    if m is None or i is None or i == 0.0:
        return None
    return m / i


def starvation_rate(
    wait: npt.ArrayLike, factor: float = draft.FAIRNESS_STARVATION_FACTOR
) -> float | None:
    """Fraction of one class's requests waiting longer than ``factor ×`` its median (5.6.4).

    None for an empty class.

    >>> starvation_rate([1.0, 1.0, 1.0, 5.0, 5.1])
    0.2
    """
    w = np.asarray(wait, dtype=np.float64)
    median = percentile(w, 50)
    if median is None:
        return None
    return float(np.mean(w > factor * median))


@dataclass(frozen=True, slots=True)
class ClassFairness:
    """One request class's TTFTs in the mixed run against its isolated baseline (5.6.4)."""

    label: str
    count: int
    isolated_count: int
    ttft_p50: float | None
    ttft_p95: float | None
    ttft_p99: float | None
    isolated_ttft_p50: float | None
    isolated_ttft_p99: float | None
    inflation_p50: float | None
    inflation_p99: float | None
    starvation_rate: float | None


@dataclass(frozen=True, slots=True)
class Fairness:
    """Per-class rows and Jain's index over the mixed run's normalized latencies (5.6.4).

    ``jain_index`` is None when no request has a class with a positive isolated median.
    """

    classes: Mapping[str, ClassFairness]
    jain_index: float | None
    normalized_requests: int


def scheduling_fairness(
    mixed_ttft: npt.ArrayLike,
    mixed_class: npt.ArrayLike,
    isolated_ttft: npt.ArrayLike,
    isolated_class: npt.ArrayLike,
    factor: float = draft.FAIRNESS_STARVATION_FACTOR,
) -> Fairness:
    """Per-class TTFT percentiles, inflation, starvation and Jain's index (draft 5.6.4).

    ``*_class`` label each request (strings); requests with a NaN TTFT are left out. Classes are
    those of the mixed run, in sorted order. Jain's index is over the normalized latencies of the
    mixed requests whose class has an isolated median > 0 (module docstring).

    >>> f = scheduling_fairness([2.0, 4.0], ["short", "long"], [1.0, 2.0], ["short", "long"])
    >>> f.jain_index, f.classes["long"].inflation_p50
    (1.0, 2.0)
    """
    mt = np.asarray(mixed_ttft, dtype=np.float64)
    mc = np.asarray(mixed_class, dtype=np.str_)
    it = np.asarray(isolated_ttft, dtype=np.float64)
    ic = np.asarray(isolated_class, dtype=np.str_)
    if mt.shape != mc.shape or it.shape != ic.shape or mt.ndim != 1 or it.ndim != 1:
        raise ValueError("each TTFT array needs one class label per request")
    keep_m = np.isfinite(mt)
    keep_i = np.isfinite(it)
    mt, mc, it, ic = mt[keep_m], mc[keep_m], it[keep_i], ic[keep_i]
    rows: dict[str, ClassFairness] = {}
    normalized: list[F64] = []
    for label in sorted({str(v) for v in mc.tolist()}):
        m = mt[mc == label]
        iso = it[ic == label]
        iso_p50 = percentile(iso, 50)
        rows[label] = ClassFairness(
            label=label,
            count=int(m.size),
            isolated_count=int(iso.size),
            ttft_p50=percentile(m, 50),
            ttft_p95=percentile(m, 95),
            ttft_p99=percentile(m, 99),
            isolated_ttft_p50=iso_p50,
            isolated_ttft_p99=percentile(iso, 99),
            inflation_p50=latency_inflation(m, iso, 50),
            inflation_p99=latency_inflation(m, iso, 99),
            starvation_rate=starvation_rate(m, factor),
        )
        if iso_p50 is not None and iso_p50 > 0:
            normalized.append(m / iso_p50)
    x = np.concatenate(normalized) if normalized else np.empty(0)
    return Fairness(
        classes=rows,
        jain_index=jain_fairness_index(x) if x.size else None,
        normalized_requests=int(x.size),
    )
