"""Etalon's fluidity-index and fluid token generation rate, with the prefill deadline model.

Pure numpy, no I/O. Source: Etalon (Agrawal et al.), §4.1, Algorithm 1 and §4.2
(``/work/shared/reference/etalon-paper.txt``); the draft's ITL section (5.4) measures the same
token timelines without a deadline model.

Definitions:

* **Deadline intervals** of one request: ``T[0]`` = time from the request's arrival to its first
  token (deadline ``D_p``); ``T[i]`` (``i >= 1``) = time from token ``i - 1`` to token ``i``
  (deadline ``D_d``). Build them from **server-side per-token times** (one time per generated
  token), not from client chunks with Option B zero-padding: tokens that share one engine step
  (speculative decoding, multi-token steps) genuinely share one time and give 0 intervals. A 0
  interval always meets its deadline and adds ``D_d`` of slack — exactly Etalon's argument (§3.1)
  that ``k`` tokens delivered in one step can be shown to the user at a uniform pace.
* **Fluidity-index** (Algorithm 1): walk the intervals with a running ``slack`` (0 at start);
  deadline ``D = D_p`` for ``i = 0``, else ``D_d``. If ``t <= D + slack`` the deadline is met:
  ``slack += D - t`` and one deadline is counted. Otherwise ``misses = (t - slack - D) // D_d + 1``
  deadlines are counted as missed (the stall also swallowed the deadlines of the tokens that
  *would* have followed) and ``slack`` is reset to 0 (deadlines restart from the late token).
  The index is ``(total - missed) / total``.
* **Prefill deadline** (§4.1, "Picking the target latencies"): ``D_p(L) = prefill(L) + S`` where
  ``prefill(L)`` is a quadratic ``a + b·L + c·L²`` least-squares fit to prefill times profiled in
  isolation (at least 10 requests per prompt length) and ``S`` is the scheduling slack (500 ms,
  Etalon's example for interactive applications). :func:`profiled_prefill_deadlines` uses the
  fit within the profiled lengths only.
* **Isolation** (§4.1: "profiling the request in isolation, in the absence of any other variables
  like scheduling delays"): :func:`isolated` finds the requests of a run that were alone from their
  arrival to their first token (no other request's span overlapped that window), and
  :func:`profile_groups` whether their prompt lengths support a quadratic as Etalon's profile
  does (3 groups of 10 requests with disjoint length ranges).
* **Decode deadline presets** (§4.1): strict 25 ms (chat), medium 50 ms, relaxed 100 ms.
* **Fluid token generation rate** (§4.2, §5): the smallest ``D_d`` such that at least
  ``request_fraction`` (0.99) of the requests reach a fluidity-index of at least
  ``min_fluidity`` (0.9); the rate is ``1 / D_d`` tokens per second.

Ambiguities of Algorithm 1 and how they are resolved (the algorithm is followed literally):

* ``//`` is floor division on floats, as in Python (``numpy.floor_divide``); a token late by
  exactly ``k·D_d`` past its deadline counts ``k + 1`` misses.
* The miss count divides by ``D_d`` even for the first token (``D = D_p``): a late first token
  also misses the decode deadlines that elapsed while it was late.
* A request with no intervals has no deadline: its index is undefined (NaN), not 1.
* ``D_p`` is an input per request: :func:`prefill_deadlines` computes it from a fit (line 2).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.arrays import F64
from otelbench.errors import ConfigError
from otelbench.metrics.latency import Ragged

__all__ = [
    "FluidRate",
    "PrefillFit",
    "deadline_intervals",
    "fit_prefill_time",
    "fluid_token_generation_rate",
    "fluidity_index",
    "fluidity_indices",
    "isolated",
    "prefill_deadlines",
    "profile_groups",
    "profiled_prefill_deadlines",
]


PROFILE_GROUPS: Final = 3
"""A quadratic has 3 coefficients: Etalon's profile needs at least 3 prompt lengths (§4.1)."""


def fluidity_index(
    intervals_s: npt.ArrayLike, prefill_deadline_s: float, decode_deadline_s: float
) -> float:
    """Fluidity-index of one request, Etalon Algorithm 1 followed line by line (§4.1).

    ``intervals_s[0]`` is arrival → first token, ``intervals_s[i]`` the ``i``-th inter-token
    time. NaN when there are no intervals. See the module docstring for the ambiguities.

    >>> fluidity_index([0.5, 0.01, 0.01, 0.30, 0.01], 1.0, 0.1)
    1.0
    >>> fluidity_index([0.1, 0.10, 0.10, 0.35, 0.10], 0.1, 0.1)  # 0.25 s late: 3 misses
    0.5714285714285714
    """
    t_all = np.asarray(intervals_s, dtype=np.float64)
    if t_all.ndim != 1:
        raise ValueError("intervals must be a 1-D array")
    _check_deadlines(prefill_deadline_s, decode_deadline_s)
    total = 0.0
    missed = 0.0
    slack = 0.0
    for i, t in enumerate(t_all.tolist()):
        d = prefill_deadline_s if i == 0 else decode_deadline_s
        if t <= d + slack:
            slack = slack + d - t
            total += 1
        else:
            misses = (t - slack - d) // decode_deadline_s + 1
            missed += misses
            total += misses
            slack = 0.0
    if total == 0:
        return float("nan")
    return (total - missed) / total


def _check_deadlines(prefill: float | F64, decode: float) -> None:
    if not 0 < decode < np.inf:
        raise ValueError("the decode deadline must be > 0 and finite")
    p = np.asarray(prefill)
    if np.any(~((p > 0) & (p < np.inf))):
        raise ValueError("prefill deadlines must be > 0 and finite")


def fluidity_indices(
    intervals: Ragged, prefill_deadlines_s: npt.ArrayLike, decode_deadline_s: float
) -> F64:
    """:func:`fluidity_index` of every request at once (§4.1); NaN for requests with no interval.

    ``intervals`` holds each request's deadline intervals (:func:`deadline_intervals`);
    ``prefill_deadlines_s`` is one ``D_p`` per request or a scalar. The loop runs over token
    positions, vectorised across the requests still generating (each position's intervals
    contiguous in memory), and applies exactly the arithmetic of Algorithm 1
    (``numpy.floor_divide`` is Python's float ``//``).

    >>> r = Ragged.from_lengths([0.5, 0.01, 0.1, 0.15], [2, 2])
    >>> fluidity_indices(r, [1.0, 0.1], 0.1).tolist()
    [1.0, 0.5]
    """
    n = len(intervals)
    dp = np.broadcast_to(np.asarray(prefill_deadlines_s, dtype=np.float64), (n,))
    _check_deadlines(dp, decode_deadline_s)
    return _layout(intervals).indices(dp, decode_deadline_s)


_PADDING_LIMIT: Final = 2.0
"""Largest ``requests × longest request / intervals`` for which :class:`_PositionMajor` lays
the intervals out through a padded matrix (one transposing copy) rather than by gathering each
token position (memory-bound on the strided reads)."""


_UNDECIDED_LIMIT: Final = 0.25
"""Largest fraction of the requests still undecided for which the fluid-rate search evaluates
those alone (gathering their intervals costs more per interval than slicing all of them)."""

_LAYOUTS: dict[int, _PositionMajor] = {}


def _layout(intervals: Ragged) -> _PositionMajor:
    """``intervals`` laid out by token position, once for as long as the Ragged lives: the
    report evaluates the same intervals at every preset and in the fluid-rate search (a
    transposing copy of millions of intervals each time otherwise). A Ragged's arrays are
    never modified in place."""
    key = id(intervals)
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = _LAYOUTS[key] = _PositionMajor.of(intervals)
        weakref.finalize(intervals, _LAYOUTS.pop, key, None)
    return layout


@dataclass(frozen=True, slots=True)
class _PositionMajor:
    """Deadline intervals laid out token position by token position, longest request first.

    ``values[starts[k]:starts[k] + active[k]]`` are the ``k``-th intervals of the ``active[k]``
    longest requests (in ``order``), so each step of Algorithm 1 reads one contiguous slice.
    Built once and reused by every deadline the fluid-rate search tries. ``lengths`` is per
    request, in ``order``.
    """

    values: F64
    starts: npt.NDArray[np.int64]
    active: npt.NDArray[np.int64]
    order: npt.NDArray[np.int64]
    lengths: F64

    @classmethod
    def of(cls, intervals: Ragged) -> _PositionMajor:
        lengths = intervals.lengths()
        n, size = len(intervals), intervals.values.size
        order = np.argsort(-lengths, kind="stable")  # active requests are a prefix
        max_len = int(lengths[order[0]]) if n else 0
        # requests longer than k, for every position k
        active = n - np.cumsum(np.bincount(lengths, minlength=max_len)[:max_len])
        if n * max_len <= _PADDING_LIMIT * size:
            if size == n * max_len:  # every request equally long: order is the identity
                padded = intervals.values.reshape(n, max_len)
            else:
                padded = np.zeros((n, max_len))
                row_shift = np.arange(n, dtype=np.int64) * max_len - intervals.bounds[:-1]
                padded.ravel()[np.arange(size) + np.repeat(row_shift, lengths)] = intervals.values
                padded = padded[order]
            values = np.ascontiguousarray(padded.T).ravel()
            starts = np.arange(max_len, dtype=np.int64) * n
        else:
            first = intervals.bounds[:-1][order]
            starts = np.zeros(max_len, dtype=np.int64)
            np.cumsum(active[:-1], out=starts[1:])
            values = np.empty(size)
            for k, (start, m) in enumerate(zip(starts.tolist(), active.tolist(), strict=True)):
                values[start : start + m] = intervals.values[first[:m] + k]
        return cls(
            values, starts, active.astype(np.int64), order, lengths[order].astype(np.float64)
        )

    def indices(
        self,
        prefill_deadlines_s: F64,
        decode_deadline_s: float,
        keep: npt.NDArray[np.bool_] | None = None,
    ) -> F64:
        """Algorithm 1 for every request at once, in the caller's request order; with ``keep``
        (one flag per request) for the kept requests only, the others NaN (each position's
        intervals of the kept requests are then gathered, not sliced).

        Per token: the budget is ``slack + D`` and ``left = budget - t``; a token within the
        budget (``left >= 0``, exactly ``t <= budget`` for finite deadlines) is met and leaves
        ``left`` of slack, a late one counts its misses and leaves 0, so the new slack is
        ``max(left, 0)`` either way. The late tokens are few, so their misses are computed on
        their indices only. Late means "not ``left >= 0``", as "not ``t <= budget``" in
        :func:`fluidity_index`, so a NaN makes the index NaN.
        """
        # rows: the evaluated requests' places in the layout, longest first as all of them
        rows = np.arange(self.order.size) if keep is None else np.flatnonzero(keep[self.order])
        active = self.active if keep is None else np.searchsorted(rows, self.active)
        n = rows.size
        dp = prefill_deadlines_s[self.order[rows]]
        slack = np.zeros(n)
        late_count = np.zeros(n)
        missed = np.zeros(n)
        left_buffer = np.empty(n)
        mask_buffer = np.empty(n, dtype=np.bool_)
        for k, (start, m) in enumerate(zip(self.starts.tolist(), active.tolist(), strict=True)):
            t = self.values[start : start + m] if keep is None else self.values[start + rows[:m]]
            s = slack[:m]
            d: F64 | float = dp[:m] if k == 0 else decode_deadline_s
            left = np.subtract(np.add(s, d, out=left_buffer[:m]), t, out=left_buffer[:m])
            met = np.greater_equal(left, 0.0, out=mask_buffer[:m])
            late = np.flatnonzero(np.logical_not(met, out=met))
            if late.size:
                d_late = dp[late] if k == 0 else decode_deadline_s
                missed[late] += np.floor_divide(t[late] - s[late] - d_late, decode_deadline_s) + 1.0
                late_count[late] += 1.0
            np.maximum(left, 0.0, out=s)
        total = (self.lengths[rows] - late_count) + missed  # met deadlines + missed ones
        out = np.full(self.order.size, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(total > 0, (total - missed) / total, np.nan)
        out[self.order[rows]] = ratio
        return out


def deadline_intervals(token_times: Ragged) -> Ragged:
    """Each request's deadline intervals from its per-token times measured from its arrival.

    ``token_times`` group ``i`` holds request ``i``'s token times (seconds since the request
    arrived, non-decreasing); the result is ``[t0, t1 - t0, t2 - t1, …]`` per request (§4.1).
    Tokens of one engine step share a time and give 0 intervals (module docstring).

    >>> deadline_intervals(Ragged.from_lengths([0.2, 0.25, 0.25, 0.3], [3, 1]))[0].tolist()
    [0.2, 0.04999999999999999, 0.0]
    """
    v = token_times.values
    out = np.empty_like(v)
    if v.size:
        out[0] = v[0]
        np.subtract(v[1:], v[:-1], out=out[1:])  # np.diff(v), without a copy of its own
        nonempty = token_times.lengths() > 0
        first = token_times.bounds[:-1][nonempty]
        out[first] = v[first]
    if np.any(out < 0):
        raise ValueError("token times must be >= 0 and non-decreasing within a request")
    return Ragged(out, token_times.bounds)


@dataclass(frozen=True, slots=True)
class PrefillFit:
    """Quadratic prefill-time model ``a + b·L + c·L²`` in seconds (Etalon §4.1), with its fit.

    ``r_squared`` is the coefficient of determination over all profiled requests;
    ``residual_std_s`` the population standard deviation of the residuals.
    """

    a: float
    b: float
    c: float
    r_squared: float
    residual_std_s: float
    lengths: tuple[int, ...]
    requests: int
    min_requests_per_length: int

    def predict(self, prompt_tokens: npt.ArrayLike) -> F64:
        """Predicted isolated prefill time (seconds) of prompts of these lengths."""
        length = np.asarray(prompt_tokens, dtype=np.float64)
        return np.asarray(self.a + self.b * length + self.c * length * length, dtype=np.float64)


def fit_prefill_time(
    prompt_tokens: npt.ArrayLike,
    prefill_s: npt.ArrayLike,
    *,
    min_requests_per_length: int = draft.FLUIDITY_PROFILE_REQUESTS,
) -> PrefillFit:
    """Least-squares quadratic fit of isolated prefill time against prompt length (Etalon §4.1).

    Every profiled request is one point; each distinct length needs at least
    ``min_requests_per_length`` requests and at least 3 distinct lengths are needed (a quadratic
    has 3 coefficients). Raises :class:`~otelbench.errors.ConfigError` otherwise.

    >>> lengths = np.repeat([128, 512, 2048], 10)
    >>> fit = fit_prefill_time(lengths, 0.01 + 2e-5 * lengths + 1e-9 * lengths**2)
    >>> round(float(fit.predict(1024)), 6), round(fit.r_squared, 6)
    (0.031529, 1.0)
    """
    length = np.asarray(prompt_tokens, dtype=np.float64)
    y = np.asarray(prefill_s, dtype=np.float64)
    if length.shape != y.shape or length.ndim != 1:
        raise ValueError("prompt lengths and prefill times must be 1-D and the same shape")
    if not (np.all(np.isfinite(length)) and np.all(np.isfinite(y))):
        raise ValueError("prompt lengths and prefill times must be finite")
    distinct, counts = np.unique(length, return_counts=True)
    if distinct.size < 3:
        raise ConfigError(
            f"the prefill fit needs at least 3 distinct prompt lengths, got {distinct.size}: "
            "profile more lengths"
        )
    if counts.min() < min_requests_per_length:
        short = int(distinct[np.argmin(counts)])
        raise ConfigError(
            f"prompt length {short} was profiled {int(counts.min())} times; the prefill fit "
            f"needs at least {min_requests_per_length} requests per length"
        )
    c, b, a = np.polyfit(length, y, 2)  # polyfit scales the Vandermonde columns itself
    pred = a + b * length + c * length * length
    resid = y - pred
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return PrefillFit(
        a=float(a),
        b=float(b),
        c=float(c),
        r_squared=r2,
        residual_std_s=float(resid.std()),
        lengths=tuple(int(v) for v in distinct),
        requests=int(y.size),
        min_requests_per_length=int(counts.min()),
    )


def prefill_deadlines(
    fit: PrefillFit, prompt_tokens: npt.ArrayLike, scheduling_slack_s: float
) -> F64:
    """Per-request prefill deadline ``D_p = predict_prefill_time(P) + S`` (Algorithm 1, line 2).

    >>> fit = PrefillFit(0.01, 1e-4, 0.0, 1.0, 0.0, (1, 2, 3), 30, 10)
    >>> prefill_deadlines(fit, [100, 1000], 0.5).tolist()
    [0.52, 0.61]
    """
    if scheduling_slack_s < 0:
        raise ValueError("the scheduling slack must be >= 0")
    return fit.predict(prompt_tokens) + scheduling_slack_s


def profiled_prefill_deadlines(
    fit: PrefillFit, prompt_tokens: npt.ArrayLike, scheduling_slack_s: float
) -> F64:
    """:func:`prefill_deadlines` with the fit used within the profiled lengths only: a length
    outside them takes the nearest profiled length's value (a quadratic fitted there says nothing
    beyond them), an unknown one (NaN) the shortest's; a predicted prefill time below 0 counts
    as 0, and ``D_p`` is at least 1 µs.

    >>> fit = PrefillFit(0.01, 1e-4, 0.0, 1.0, 0.0, (100, 200, 300), 30, 10)
    >>> profiled_prefill_deadlines(fit, [150, 900, float("nan")], 0.5).round(6).tolist()
    [0.525, 0.54, 0.52]
    """
    if scheduling_slack_s < 0:
        raise ValueError("the scheduling slack must be >= 0")
    n = np.asarray(prompt_tokens, dtype=np.float64)
    lo, hi = float(min(fit.lengths)), float(max(fit.lengths))
    lengths = np.clip(np.where(np.isfinite(n), n, lo), lo, hi)
    prefill = np.maximum(fit.predict(lengths), 0.0)
    return np.maximum(prefill + scheduling_slack_s, 1e-6)


def isolated(
    start_ns: npt.ArrayLike, end_ns: npt.ArrayLike, first_token_ns: npt.ArrayLike
) -> npt.NDArray[np.bool_]:
    """Which requests were alone from their start to their first token (Etalon §4.1: a prefill
    profiled "in isolation").

    Request ``i`` occupies ``[start_ns[i], end_ns[i]]`` (arrival to its last byte or its end in
    the engine: one clock for all of them); it is isolated when no other request's interval
    touches ``[start_ns[i], first_token_ns[i]]`` (touching counts: the test is conservative). A
    request with no first token (NaN) is not isolated, but its interval still counts against the
    others. ``O(n log n)``.

    >>> isolated([0, 10, 12, 40], [8, 30, 35, 50], [2, 11, 20, 45]).tolist()
    [True, True, False, True]
    """
    start = np.asarray(start_ns, dtype=np.float64)
    end = np.asarray(end_ns, dtype=np.float64)
    first = np.asarray(first_token_ns, dtype=np.float64)
    if not start.shape == end.shape == first.shape or start.ndim != 1:
        raise ValueError("start, end and first-token times must be 1-D and the same shape")
    if np.any(end < start):
        raise ValueError("a request cannot end before it starts")
    timed = np.isfinite(first) & (first >= start)
    until = np.where(timed, first, start)
    # touching [start_i, until_i]: those started by until_i less those ended before start_i
    started = np.searchsorted(np.sort(start), until, side="right")
    ended = np.searchsorted(np.sort(end), start, side="left")
    alone: npt.NDArray[np.bool_] = timed & (started - ended == 1)  # itself only
    return alone


def profile_groups(
    prompt_tokens: npt.ArrayLike, min_requests: int = draft.FLUIDITY_PROFILE_REQUESTS
) -> npt.NDArray[np.int64] | None:
    """Split profiled requests by prompt length into groups that stand for Etalon's profiled
    lengths (§4.1): each group at least ``min_requests`` requests, no prompt length in two
    groups, the groups' length ranges disjoint. Returns each request's group (0 = shortest, in
    the input's order), or None when fewer than :data:`PROFILE_GROUPS` groups can be formed
    (a quadratic needs 3 lengths). Greedy from the shortest, so a profile of ``k`` lengths with
    ``min_requests`` requests each gives exactly those ``k`` groups; continuous lengths give
    ranges. Requests of unknown length (NaN) belong to no group (-1).

    >>> groups = profile_groups([300] * 12 + [100] * 10 + [200] * 10)
    >>> groups.tolist() == [2] * 12 + [0] * 10 + [1] * 10
    True
    >>> profile_groups([100] * 10 + [200] * 9 + [300] * 12) is None
    True
    """
    if min_requests < 1:
        raise ValueError("min_requests must be >= 1")
    length = np.asarray(prompt_tokens, dtype=np.float64)
    known = np.flatnonzero(np.isfinite(length))
    order = known[np.argsort(length[known], kind="stable")]
    distinct, counts = np.unique(length[order], return_counts=True)
    group_of_length = np.empty(distinct.size, dtype=np.int64)
    group, size = 0, 0
    for k, count in enumerate(counts.tolist()):
        group_of_length[k] = group
        size += count
        if size >= min_requests:
            group, size = group + 1, 0
    if size:  # a short last group joins the one before it
        group_of_length[group_of_length == group] = group - 1
    if group < PROFILE_GROUPS:  # ``group`` groups reached ``min_requests``
        return None
    out = np.full(length.size, -1, dtype=np.int64)
    out[order] = group_of_length[np.searchsorted(distinct, length[order])]
    return out


@dataclass(frozen=True, slots=True)
class FluidRate:
    """Result of the fluid token generation rate search (Etalon §4.2).

    ``decode_deadline_s`` is the smallest ``D_d`` found that meets the requirement, within
    ``precision_s`` above the true minimum; ``tokens_per_s = 1 / decode_deadline_s``;
    ``fraction_meeting`` the fraction of requests reaching ``min_fluidity`` at that ``D_d``.
    """

    decode_deadline_s: float
    tokens_per_s: float
    precision_s: float
    min_fluidity: float
    request_fraction: float
    fraction_meeting: float
    requests: int


def fluid_token_generation_rate(
    intervals: Ragged,
    prefill_deadlines_s: npt.ArrayLike,
    *,
    min_fluidity: float = 0.9,
    request_fraction: float = 0.99,
    precision_s: float = 1e-4,
    evaluated: Mapping[float, npt.ArrayLike] | None = None,
) -> FluidRate | None:
    """Smallest decode deadline (and its inverse rate) meeting a fluidity SLO (Etalon §4.2, §5).

    Requests with no interval are left out. The requirement is monotone in ``D_d`` (a larger
    ``D_d`` never has less slack after any token, so its misses are a subset of a smaller one's,
    each counting no more), so bisection is exact up to ``precision_s``: the search keeps
    ``lo`` failing and ``hi`` passing and stops when ``hi - lo <= precision_s``. Once
    ``D_d >= max interval`` every decode token meets its deadline and a late first token counts
    one miss, so a larger ``D_d`` changes nothing; if the requirement fails there it cannot be
    met (e.g. too many first tokens miss ``D_p``) and the result is None.

    As Algorithm 1 carries slack across the prefill, a first token well ahead of ``D_p`` banks
    ``D_p - T[0]`` that later decode tokens may spend: a generous ``D_p`` lowers the rate's
    ``D_d``. Choose ``D_p`` from :func:`prefill_deadlines`, as Etalon does.

    ``evaluated`` maps decode deadlines to the fluidity-indices already computed there for the
    same ``intervals`` and ``prefill_deadlines_s`` (one per request, :func:`fluidity_indices`;
    e.g. at the presets): the search does not evaluate again the requests they decide.

    >>> r = Ragged.from_lengths([0.1, 0.02, 0.03, 0.02], [4])
    >>> res = fluid_token_generation_rate(r, [0.1], min_fluidity=1.0, precision_s=1e-6)
    >>> abs(res.decode_deadline_s - 0.025) <= 1e-6  # 0.02 + 0.03 within 2·D_d
    True
    """
    if not 0 < min_fluidity <= 1:
        raise ValueError("min_fluidity must be within (0, 1]")
    if not 0 < request_fraction <= 1:
        raise ValueError("request_fraction must be within (0, 1]")
    if not precision_s > 0:
        raise ValueError("precision_s must be > 0")
    n = len(intervals)
    dp = np.broadcast_to(np.asarray(prefill_deadlines_s, dtype=np.float64), (n,))
    keep = intervals.lengths() > 0
    r = intervals.select(keep)
    dp = dp[keep]
    if len(r) == 0:
        return None

    hi = max(float(r.values.max()), precision_s)
    _check_deadlines(dp, hi)  # every D_d tried is within (0, hi]
    layout = _layout(r)

    # Each request's own index never falls as D_d grows (the argument above, request by
    # request): one meeting min_fluidity at some D_d meets it at every larger one, one missing
    # it at some D_d misses it at every smaller one. So a deadline needs evaluating only for the
    # requests no deadline tried so far (``evaluated`` included) decides, once they are few.
    meets_from = np.full(len(r), np.inf)  # the smallest D_d tried where the request meets
    misses_to = np.zeros(len(r))  # the largest D_d tried where it misses (0: none)

    def learn(dd: float, meets: npt.NDArray[np.bool_]) -> None:
        np.minimum(meets_from, dd, out=meets_from, where=meets)
        np.maximum(misses_to, dd, out=misses_to, where=~meets)

    for dd, fi in (evaluated or {}).items():
        learn(dd, np.asarray(fi, dtype=np.float64)[keep] >= min_fluidity)

    def fraction(dd: float) -> float:
        meets = meets_from <= dd
        undecided = ~meets & (misses_to < dd)
        if np.count_nonzero(undecided) > _UNDECIDED_LIMIT * len(r):
            meets = layout.indices(dp, dd) >= min_fluidity
        else:
            meets[undecided] = layout.indices(dp, dd, undecided)[undecided] >= min_fluidity
        learn(dd, meets)
        return float(np.mean(meets))

    fraction_hi = fraction(hi)
    if fraction_hi < request_fraction:
        return None
    lo = 0.0
    while hi - lo > precision_s:
        mid = 0.5 * (lo + hi)
        fraction_mid = fraction(mid)
        if fraction_mid >= request_fraction:
            hi, fraction_hi = mid, fraction_mid
        else:
            lo = mid
    return FluidRate(
        decode_deadline_s=hi,
        tokens_per_s=1.0 / hi,
        precision_s=precision_s,
        min_fluidity=min_fluidity,
        request_fraction=request_fraction,
        fraction_meeting=fraction_hi,
        requests=len(r),
    )
