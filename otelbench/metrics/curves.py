"""Throughput-latency curve analysis, saturation detection and steady-state check.

Pure numpy, no I/O. Definitions, each with the draft section it implements:

* **Optimal operating point** (5.3.4): the level with the highest achieved throughput whose P99
  latency is at most the SLO (the lowest offered load among equal throughputs).
* **Knee point** (5.3.4): the first level (in ascending offered load) whose P99 latency exceeds
  ``2 ×`` the minimum P99 observed over all levels.
* **Saturation point** (5.3.4): the first level whose achieved throughput is *lower* than the
  previous level's. The draft's own example (Table 5) names the throughput *peak* ("22 req/s
  (throughput peaks)") although throughput never decreases there; both are reported:
  ``saturation`` by the definition (None when throughput never decreases) and ``peak`` = the
  level of highest throughput up to the saturation point (or over all levels).
* **Saturation detection** (5.2.3.1) — saturated when any criterion fires:

  - ``queue_growth``: queue depth grows continuously (:func:`queue_growing`: the mean depth of
    each of ``segments`` equal-time segments is larger than the previous segment's, and the
    last exceeds the first by at least ``min_increase`` requests);
  - ``completion_rate``: completions / arrivals < 0.9;
  - ``latency_blowup``: P99 latency > ``10 ×`` the P50 latency at a lower load.
* **Steady state** (5.2.3.2): drop the first 10 % of the measurement window (ramp-up); split the
  rest into two equal halves; steady when the output-token throughput of the halves differs by
  at most ``throughput_tolerance`` and the median latency of the requests completing in each
  half by at most ``latency_tolerance`` (relative difference ``|a - b| / max(a, b)``), and the
  queue (if given) is not growing over the remaining window. A half with no completion is not
  steady (nothing to compare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.metrics.summary import percentile

__all__ = [
    "CurvePoints",
    "Saturation",
    "SteadyState",
    "detect_saturation",
    "queue_growing",
    "steady_state",
    "throughput_latency_points",
]

KNEE_FACTOR: Final = 2.0
COMPLETION_RATIO_MIN: Final = 0.9
LATENCY_BLOWUP_FACTOR: Final = 10.0
RAMP_FRACTION: Final = 0.1


@dataclass(frozen=True, slots=True)
class CurvePoints:
    """Indices (into the load levels) of the derived points of 5.3.4; None when absent."""

    optimal: int | None
    knee: int | None
    saturation: int | None
    peak: int
    min_p99: float


def throughput_latency_points(
    offered_load: npt.ArrayLike,
    achieved_throughput: npt.ArrayLike,
    p99_latency: npt.ArrayLike,
    slo_p99: float | None = None,
) -> CurvePoints:
    """Optimal operating point, knee, saturation point and peak of a load sweep (draft 5.3.4).

    Levels must be in strictly ascending offered load. ``optimal`` is None without an SLO or
    when no level meets it.

    >>> p = throughput_latency_points([2, 6, 10, 14, 18, 22], [284, 852, 1420, 1988, 2534, 2712],
    ...                               [142, 178, 267, 512, 1234, 3456], slo_p99=600)
    >>> (p.optimal, p.knee, p.saturation, p.peak)
    (3, 3, None, 5)
    """
    load = np.asarray(offered_load, dtype=np.float64)
    thr = np.asarray(achieved_throughput, dtype=np.float64)
    p99 = np.asarray(p99_latency, dtype=np.float64)
    if not (load.shape == thr.shape == p99.shape) or load.ndim != 1 or load.size == 0:
        raise ValueError("one offered load, throughput and P99 per level, at least one level")
    if not (np.all(np.isfinite(load)) and np.all(np.isfinite(thr)) and np.all(np.isfinite(p99))):
        raise ValueError("load levels must be finite")
    if np.any(np.diff(load) <= 0):
        raise ValueError("load levels must be in strictly ascending offered load")
    min_p99 = float(p99.min())
    above = np.flatnonzero(p99 > KNEE_FACTOR * min_p99)
    knee = int(above[0]) if above.size else None
    drops = np.flatnonzero(np.diff(thr) < 0)
    saturation = int(drops[0]) + 1 if drops.size else None
    upto = saturation if saturation is not None else thr.size
    peak = int(np.argmax(thr[:upto]))
    optimal = None
    if slo_p99 is not None:
        ok = np.flatnonzero(p99 <= slo_p99)
        if ok.size:
            optimal = int(ok[np.argmax(thr[ok])])  # argmax: first (lowest load) among ties
    return CurvePoints(
        optimal=optimal, knee=knee, saturation=saturation, peak=peak, min_p99=min_p99
    )


def queue_growing(
    times: npt.ArrayLike,
    depth: npt.ArrayLike,
    *,
    segments: int = 4,
    min_increase: float = 1.0,
) -> bool:
    """Whether queue depth grows continuously over the samples' time span (draft 5.2.3.1).

    The span ``[min(times), max(times)]`` is cut into ``segments`` equal parts; the queue grows
    when each part's mean depth is larger than the previous part's and the last part's exceeds
    the first part's by at least ``min_increase``. A part with no sample makes the answer False
    (not enough evidence), as do fewer than 2 distinct times.

    >>> queue_growing([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7])
    True
    >>> queue_growing([0, 1, 2, 3, 4, 5, 6, 7], [3, 2, 3, 2, 3, 2, 3, 2])
    False
    """
    t = np.asarray(times, dtype=np.float64)
    q = np.asarray(depth, dtype=np.float64)
    if t.shape != q.shape or t.ndim != 1:
        raise ValueError("one queue depth per sample time")
    if segments < 2:
        raise ValueError("segments must be >= 2")
    if t.size < 2 or t.max() == t.min():
        return False
    part = np.minimum(
        ((t - t.min()) / (t.max() - t.min()) * segments).astype(np.int64), segments - 1
    )
    counts = np.bincount(part, minlength=segments)
    if np.any(counts == 0):
        return False
    means = np.bincount(part, weights=q, minlength=segments) / counts
    return bool(np.all(np.diff(means) > 0) and means[-1] - means[0] >= min_increase)


@dataclass(frozen=True, slots=True)
class Saturation:
    """Which criteria of draft 5.2.3.1 fired; a criterion without its inputs is None."""

    saturated: bool
    fired: tuple[str, ...]
    queue_growth: bool | None
    completion_ratio: float | None
    completion_rate: bool | None
    p99_over_low_load_p50: float | None
    latency_blowup: bool | None


def detect_saturation(
    *,
    queue_times: npt.ArrayLike | None = None,
    queue_depth: npt.ArrayLike | None = None,
    arrivals: float | None = None,
    completions: float | None = None,
    p99_latency: float | None = None,
    low_load_p50_latency: float | None = None,
) -> Saturation:
    """Saturation by the three criteria of draft 5.2.3.1; saturated when any fires.

    ``arrivals``/``completions`` are counts (or rates) over the same window;
    ``low_load_p50_latency`` is the P50 latency at a lower load level, in ``p99_latency``'s unit.

    >>> s = detect_saturation(arrivals=100, completions=85, p99_latency=5.0,
    ...                       low_load_p50_latency=1.0)
    >>> s.saturated, s.fired
    (True, ('completion_rate',))
    """
    queue: bool | None = None
    if queue_times is not None and queue_depth is not None:
        queue = queue_growing(queue_times, queue_depth)
    ratio: float | None = None
    low_completion: bool | None = None
    if arrivals is not None and completions is not None and arrivals > 0:
        ratio = completions / arrivals
        low_completion = ratio < COMPLETION_RATIO_MIN
    blow: float | None = None
    blowup: bool | None = None
    if p99_latency is not None and low_load_p50_latency is not None and low_load_p50_latency > 0:
        blow = p99_latency / low_load_p50_latency
        blowup = blow > LATENCY_BLOWUP_FACTOR
    fired = tuple(
        name
        for name, hit in (
            ("queue_growth", queue),
            ("completion_rate", low_completion),
            ("latency_blowup", blowup),
        )
        if hit
    )
    return Saturation(
        saturated=bool(fired),
        fired=fired,
        queue_growth=queue,
        completion_ratio=ratio,
        completion_rate=low_completion,
        p99_over_low_load_p50=blow,
        latency_blowup=blowup,
    )


@dataclass(frozen=True, slots=True)
class SteadyState:
    """The steady-state check of draft 5.2.3.2 over ``[ramp_end_s, end_s]``."""

    steady: bool
    ramp_end_s: float
    end_s: float
    throughput_halves: tuple[float, float]
    throughput_change: float
    latency_p50_halves: tuple[float | None, float | None]
    latency_change: float | None
    queue_growing: bool | None


def _relative_change(a: float, b: float) -> float:
    top = max(abs(a), abs(b))
    return abs(b - a) / top if top > 0 else 0.0


def steady_state(
    completion_s: npt.ArrayLike,
    output_tokens: npt.ArrayLike,
    latency_s: npt.ArrayLike,
    start_s: float,
    end_s: float,
    *,
    queue_times: npt.ArrayLike | None = None,
    queue_depth: npt.ArrayLike | None = None,
    ramp_fraction: float = RAMP_FRACTION,
    throughput_tolerance: float = 0.1,
    latency_tolerance: float = 0.25,
) -> SteadyState:
    """Steady state of one load level (draft 5.2.3.2), per the module docstring's definition.

    Requests are placed in a half by their completion time; requests completing in the ramp-up
    (or outside the window) are left out. Throughput per half = their output tokens / half length.
    The latency tolerance is wider than the throughput one because a median of one half's
    requests is noisier than a token count. Queue samples in the ramp-up are ignored.

    >>> s = steady_state([2.0, 3.0, 7.0, 8.0], [10, 10, 10, 10], [1.0, 1.0, 1.0, 1.1], 0.0, 10.0)
    >>> s.steady, s.throughput_halves, s.ramp_end_s
    (True, (4.444444444444445, 4.444444444444445), 1.0)
    """
    done = np.asarray(completion_s, dtype=np.float64)
    tokens = np.asarray(output_tokens, dtype=np.float64)
    lat = np.asarray(latency_s, dtype=np.float64)
    if not (done.shape == tokens.shape == lat.shape) or done.ndim != 1:
        raise ValueError("one completion time, token count and latency per request")
    if not end_s > start_s:
        raise ValueError("the window must end after it starts")
    if not 0 <= ramp_fraction < 1:
        raise ValueError("ramp_fraction must be within [0, 1)")
    ramp_end = start_s + ramp_fraction * (end_s - start_s)
    mid = 0.5 * (ramp_end + end_s)
    half = mid - ramp_end
    first = (done >= ramp_end) & (done < mid)
    second = (done >= mid) & (done <= end_s)
    thr = (float(np.nansum(tokens[first])) / half, float(np.nansum(tokens[second])) / half)
    thr_change = _relative_change(*thr)
    lat1 = percentile(lat[first & np.isfinite(lat)], 50)
    lat2 = percentile(lat[second & np.isfinite(lat)], 50)
    lat_change = _relative_change(lat1, lat2) if lat1 is not None and lat2 is not None else None
    growing: bool | None = None
    if queue_times is not None and queue_depth is not None:
        qt = np.asarray(queue_times, dtype=np.float64)
        qd = np.asarray(queue_depth, dtype=np.float64)
        after = (qt >= ramp_end) & (qt <= end_s)
        growing = queue_growing(qt[after], qd[after])
    steady = (
        bool(first.any() and second.any())
        and thr_change <= throughput_tolerance
        and (lat_change is None or lat_change <= latency_tolerance)
        and not growing
    )
    return SteadyState(
        steady=steady,
        ramp_end_s=ramp_end,
        end_s=end_s,
        throughput_halves=thr,
        throughput_change=thr_change,
        latency_p50_halves=(lat1, lat2),
        latency_change=lat_change,
        queue_growing=growing,
    )
