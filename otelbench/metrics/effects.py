"""Configuration effects: prefix cache (5.7.4), guardrail overhead (5.10.4), ITL shape (5.4.4.3).

Pure numpy, no I/O. Definitions, each with the draft section it implements:

* **TTFT reduction** from prefix caching (5.7.4): ``(TTFT_no_cache - TTFT_cache) /
  TTFT_no_cache × 100`` %, at the mean and at P50, P95 and P99 (each statistic compared with the
  same statistic).
* **Cache hit rate** (5.7.4): prefix tokens served from cache / prefix tokens, summed over the
  requests (vLLM reports the served tokens as ``usage.prompt_tokens_details.cached_tokens``).
* **Throughput change** (5.7.4 "improvement", 5.10.4 "reduction"): ``(with - without) /
  without × 100`` %, signed: the draft's Table 14 prints a 2867 → 2756 tok/s drop as −3.9 %.
* **Guardrail overhead** (5.10.4): the difference ``filtered - baseline`` of TTFT and of
  end-to-end latency at P50, P95 and P99. Compared with the input-filter configuration, the TTFT
  difference is the draft's *input filter overhead*; with the full configuration, the
  end-to-end difference is the *total guardrail overhead*.
* **ITL distribution shape** (5.4.4.3):

  - *modality* = the number of peaks of a Gaussian kernel density estimate of the ITL samples
    (linearly binned on 512 to 65 536 grid points, at least 3 per bandwidth; Silverman's
    bandwidth ``0.9·min(σ, IQR/1.34)·n^(-1/5)``, σ alone when the IQR is 0) whose topographic
    prominence (height above the lowest point between the peak and higher ground) is at least
    5 % of the highest peak, so ripples of a flat density are not counted. One peak is
    unimodal, more are multimodal. A peak count was chosen over the bimodality coefficient,
    which flags any strongly right-skewed unimodal distribution (an exponential sits at its 5/9
    threshold) — and ITL distributions are right-skewed by stalls. Under Option B the many 0
    samples of multi-token chunks form a peak of their own: that regime is real, but time
    between chunks may be the distribution to inspect.
  - *tail ratio* = P99 / P50 (:func:`~otelbench.metrics.latency.tail_ratio`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.arrays import F64
from otelbench.metrics.latency import tail_ratio
from otelbench.metrics.summary import (
    AnyOrderStatistics,
    OrderStatistics,
    percentile,
    summarize,
)

__all__ = [
    "ITL_SHAPE_PERCENTILES",
    "GuardrailOverhead",
    "ItlShape",
    "PrefixCacheEffect",
    "guardrail_overhead",
    "itl_shape",
    "percent_change",
    "prefix_cache_effect",
]

_STATS: Final = ("p50", "p95", "p99")
KDE_MIN_GRID_POINTS: Final = 512
KDE_MAX_GRID_POINTS: Final = 65_536
PEAK_MIN_RELATIVE_PROMINENCE: Final = 0.05
ITL_SHAPE_PERCENTILES: Final = (50.0, 99.0, 75.0, 25.0)
"""The percentiles :func:`itl_shape` reads: P50 and P99 (its tail ratio), the quartiles (its
bandwidth's IQR)."""


def percent_change(before: float | None, after: float | None) -> float | None:
    """``(after - before) / before × 100``; None when ``before`` is 0 or absent (5.7.4, 5.10.4).

    >>> round(percent_change(2867.0, 2756.0), 1)
    -3.9
    """
    if before is None or after is None or before == 0.0:
        return None
    return (after - before) / before * 100.0


def _stats(values: npt.ArrayLike) -> dict[str, float | None]:
    s = summarize(np.asarray(values, dtype=np.float64))
    return {"mean": s.mean, "p50": s.p50, "p95": s.p95, "p99": s.p99}


@dataclass(frozen=True, slots=True)
class PrefixCacheEffect:
    """Prefix-cache effectiveness (draft 5.7.4); percentages are signed, None when undefined."""

    ttft_no_cache: Mapping[str, float | None]
    ttft_cache: Mapping[str, float | None]
    ttft_reduction_pct: Mapping[str, float | None]
    cache_hit_rate: float | None
    throughput_change_pct: float | None


def prefix_cache_effect(
    ttft_no_cache: npt.ArrayLike,
    ttft_cache: npt.ArrayLike,
    *,
    prefix_tokens: npt.ArrayLike | None = None,
    cached_prefix_tokens: npt.ArrayLike | None = None,
    throughput_no_cache: float | None = None,
    throughput_cache: float | None = None,
) -> PrefixCacheEffect:
    """TTFT with and without prefix cache, its reduction, hit rate, throughput change (5.7.4).

    TTFT statistics are keyed ``mean``, ``p50``, ``p95``, ``p99``; NaN TTFTs are left out. The
    hit rate needs the per-request prefix tokens and those served from cache (NaN adds nothing).

    >>> e = prefix_cache_effect([0.3, 0.3], [0.1, 0.1], prefix_tokens=[100, 100],
    ...                         cached_prefix_tokens=[100, 0])
    >>> round(e.ttft_reduction_pct["p50"], 6), e.cache_hit_rate
    (66.666667, 0.5)
    """
    a = np.asarray(ttft_no_cache, dtype=np.float64)
    b = np.asarray(ttft_cache, dtype=np.float64)
    before = _stats(a[np.isfinite(a)])
    after = _stats(b[np.isfinite(b)])
    reduction: dict[str, float | None] = {}
    for key, value in before.items():
        change = percent_change(value, after[key])
        reduction[key] = -change if change is not None else None
    hit_rate: float | None = None
    if prefix_tokens is not None and cached_prefix_tokens is not None:
        total = np.asarray(prefix_tokens, dtype=np.float64)
        served = np.asarray(cached_prefix_tokens, dtype=np.float64)
        if total.shape != served.shape:
            raise ValueError("one prefix token count and one cached count per request")
        if np.any(served > total):
            raise ValueError("a request cannot serve more prefix tokens from cache than it has")
        denominator = float(np.nansum(total))
        hit_rate = float(np.nansum(served)) / denominator if denominator > 0 else None
    return PrefixCacheEffect(
        ttft_no_cache=before,
        ttft_cache=after,
        ttft_reduction_pct=reduction,
        cache_hit_rate=hit_rate,
        throughput_change_pct=percent_change(throughput_no_cache, throughput_cache),
    )


@dataclass(frozen=True, slots=True)
class GuardrailOverhead:
    """Latency differences ``filtered - baseline`` keyed ``p50``/``p95``/``p99`` (draft 5.10.4)."""

    ttft_overhead: Mapping[str, float | None]
    e2e_overhead: Mapping[str, float | None]
    throughput_change_pct: float | None


def _difference(base: npt.ArrayLike, other: npt.ArrayLike) -> dict[str, float | None]:
    x = np.asarray(base, dtype=np.float64)
    y = np.asarray(other, dtype=np.float64)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    out: dict[str, float | None] = {}
    for key, q in zip(_STATS, (50.0, 95.0, 99.0), strict=True):
        p, r = percentile(x, q), percentile(y, q)
        out[key] = r - p if p is not None and r is not None else None
    return out


def guardrail_overhead(
    baseline_ttft: npt.ArrayLike,
    baseline_e2e: npt.ArrayLike,
    filtered_ttft: npt.ArrayLike,
    filtered_e2e: npt.ArrayLike,
    *,
    baseline_throughput: float | None = None,
    filtered_throughput: float | None = None,
) -> GuardrailOverhead:
    """Overhead of one guardrail configuration against the baseline (draft 5.10.4).

    >>> g = guardrail_overhead([0.098], [4.2], [0.112], [5.0], baseline_throughput=2867.0,
    ...                        filtered_throughput=2289.0)
    >>> round(g.ttft_overhead["p50"], 6), round(g.e2e_overhead["p50"], 6)
    (0.014, 0.8)
    >>> round(g.throughput_change_pct, 1)
    -20.2
    """
    return GuardrailOverhead(
        ttft_overhead=_difference(baseline_ttft, filtered_ttft),
        e2e_overhead=_difference(baseline_e2e, filtered_e2e),
        throughput_change_pct=percent_change(baseline_throughput, filtered_throughput),
    )


@dataclass(frozen=True, slots=True)
class ItlShape:
    """ITL distribution shape (draft 5.4.4.3); everything None/0 for fewer than 2 samples."""

    count: int
    peaks: int
    multimodal: bool
    peak_locations: tuple[float, ...]
    bandwidth: float | None
    p50: float | None
    p99: float | None
    tail_ratio: float | None


def _linear_binning(x: F64, lo: float, width: float, bins: int) -> F64:
    """Linear binning on the grid ``lo + width * k`` (``k = 0 … bins``): each sample's weight is
    split between its two nearest grid points, which avoids the aliasing a plain histogram has
    on lattice-valued data (e.g. whole milliseconds). Samples must lie within the grid."""
    pos = np.subtract(x, lo)
    pos /= width
    # in place over the (up to 10M) samples: the left grid point as an integer (floor, clipped),
    # then pos becomes the fraction past it (an integer-valued float is exact, so frac is
    # pos - left whichever type left has)
    left = np.empty(x.size, dtype=np.int64)
    np.floor(pos, out=left, casting="unsafe")
    np.minimum(left, bins - 1, out=left)
    frac = np.subtract(pos, left, out=pos)
    # each sample's weight on its right grid point (left + 1), then on its left one (1 - frac)
    right = np.bincount(left, weights=frac, minlength=bins)
    counts = np.bincount(left, weights=np.subtract(1.0, frac, out=frac), minlength=bins + 1)
    counts[1:] += right
    return np.asarray(counts, dtype=np.float64)  # bincount's weighted sums: float64 already


def _count_peaks(
    x: F64, q75: float, q25: float, std: float, smallest: float, largest: float
) -> tuple[tuple[float, ...], float]:
    iqr = float(q75 - q25)
    spread = min(std, iqr / 1.34) if iqr > 0 else std
    if spread == 0.0:
        return (float(x[0]),), 0.0
    h = 0.9 * spread * x.size ** (-0.2)
    lo, hi = smallest - 3 * h, largest + 3 * h
    # at least KDE_MIN_GRID_POINTS bins and 3 per bandwidth (so stalls far out in the tail do not
    # make the bins coarser than the kernel), at most KDE_MAX_GRID_POINTS
    bins = int(np.clip(np.ceil(3 * (hi - lo) / h), KDE_MIN_GRID_POINTS, KDE_MAX_GRID_POINTS))
    width = (hi - lo) / bins
    counts = _linear_binning(x, lo, width, bins)
    grid = lo + width * np.arange(bins + 1)
    sigma = h / width
    half = int(np.ceil(4 * sigma))
    k = np.arange(-half, half + 1, dtype=np.float64)
    with np.errstate(over="ignore"):  # a kernel far narrower than a bin: exp(-inf) = 0
        kernel = np.exp(-0.5 * (k / sigma) ** 2)
    # full convolution sliced back to the grid: correct whatever the kernel's size
    density = np.convolve(counts, kernel)[half : half + bins + 1]
    # the density is 0 beyond the grid: pad so that a peak is never on the border
    density = np.concatenate([[0.0], density, [0.0]])
    # collapse runs of equal density (plateaus) to one point each, then take strict local maxima
    run_start = np.flatnonzero(np.concatenate([[True], density[1:] != density[:-1]]))
    run_end = np.concatenate([run_start[1:], [density.size]]) - 1
    level = np.concatenate([[-np.inf], density[run_start], [-np.inf]])
    is_peak = (level[1:-1] > level[:-2]) & (level[1:-1] > level[2:])
    top = float(density.max())
    centres = np.concatenate([[lo - width], grid, [hi + width]])
    kept = []
    for first, last in zip(run_start[is_peak].tolist(), run_end[is_peak].tolist(), strict=True):
        height = float(density[first])
        if height < PEAK_MIN_RELATIVE_PROMINENCE * top:
            continue  # prominence <= height: cannot qualify (skips the sparse tail's bumps)
        # topographic prominence: the height above the higher of the two lowest points met on
        # the way (left and right) to higher ground or to the grid's end; of two equal peaks the
        # right one sees the left one as higher ground, so a flat top counts once
        higher_left = np.flatnonzero(density[:first] >= height)
        higher_right = np.flatnonzero(density[last + 1 :] > height)
        lo_i = int(higher_left[-1]) if higher_left.size else 0
        hi_i = last + 1 + int(higher_right[0]) if higher_right.size else density.size - 1
        base = max(float(density[lo_i : first + 1].min()), float(density[last : hi_i + 1].min()))
        if height - base >= PEAK_MIN_RELATIVE_PROMINENCE * top:
            kept.append(float(centres[(first + last) // 2]))
    return tuple(kept), h


def itl_shape(
    itl: npt.ArrayLike, *, order: AnyOrderStatistics | None = None, std: float | None = None
) -> ItlShape:
    """Modality (KDE peak count) and P99/P50 tail ratio of ITL samples (draft 5.4.4.3).

    ``order`` (``OrderStatistics.of(itl, q)`` with ``q`` holding at least
    :data:`ITL_SHAPE_PERCENTILES`, or the samples' ``CountedOrderStatistics``) and ``std``
    (``itl.std()``) are taken as given when the caller has them already (millions of samples:
    a selection and a pass saved).

    >>> rng = np.random.default_rng(0)
    >>> two = np.concatenate([rng.normal(0.02, 0.002, 500), rng.normal(0.08, 0.002, 500)])
    >>> s = itl_shape(two)
    >>> s.peaks, s.multimodal
    (2, True)
    """
    x = np.asarray(itl, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("ITL samples must be a finite 1-D array")
    if x.size == 0:
        return ItlShape(0, 0, False, (), None, None, None, None)
    # one selection for the four order statistics (numpy's type 7, as percentile())
    if order is None:
        order = OrderStatistics.of(x, ITL_SHAPE_PERCENTILES)
    elif order.size != x.size:
        raise ValueError("order must be the order statistics of the ITL samples")
    p50, p99, q75, q25 = (float(v) for v in order.percentiles(ITL_SHAPE_PERCENTILES))
    if x.size < 2:
        return ItlShape(1, 1, False, tuple(x.tolist()), None, p50, p99, None)
    std = float(x.std()) if std is None else std
    locations, h = _count_peaks(x, q75, q25, std, order.min, order.max)
    return ItlShape(
        count=int(x.size),
        peaks=len(locations),
        multimodal=len(locations) > 1,
        peak_locations=locations,
        bandwidth=h,
        p50=p50,
        p99=p99,
        tail_ratio=tail_ratio(p99, p50),
    )
