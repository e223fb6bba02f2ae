"""Distribution summary: the statistics every latency table in the draft reports.

Definitions (draft 5.1.4.1 and 5.4.4.1):

* ``count`` — number of samples;
* ``mean`` — arithmetic mean;
* ``std`` — *population* standard deviation (``ddof=0``: divide by ``count``), so one sample has
  ``std`` 0;
* ``min`` / ``max`` — smallest and largest sample;
* ``p50``, ``p90``, ``p95``, ``p99``, ``p99_9`` — percentiles by **linear interpolation between
  closest ranks** (Hyndman & Fan type 7, numpy's ``method="linear"``, the default of numpy, R and
  Excel's ``PERCENTILE.INC``): sort the ``n`` samples ``x[0] <= … <= x[n-1]``, let
  ``h = (n - 1) * q / 100``, ``i = floor(h)``; then ``P_q = x[i] + (h - i) * (x[i+1] - x[i])``
  (``x[i]`` when ``i = n - 1``).

An empty sample set has ``count`` 0 and every statistic ``None`` (never NaN, so the JSON report
stays valid JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Final, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.model import report as rt

__all__ = [
    "COUNTING_MAX_SPAN",
    "PERCENTILE_METHOD",
    "AnyOrderStatistics",
    "CountedOrderStatistics",
    "OrderStatistics",
    "Summary",
    "percentile",
    "percentiles_of_finite",
    "percentiles_of_sorted",
    "summarize",
    "type7_interpolate",
    "type7_ranks",
]


PERCENTILE_METHOD: Final = (
    "linear interpolation between closest ranks (Hyndman-Fan type 7, numpy method='linear'): "
    "h = (n-1)*q/100, P = x[floor(h)] + (h-floor(h))*(x[floor(h)+1]-x[floor(h)])"
)
COUNTING_MAX_SPAN: Final = 2**21
"""The widest span ``max - min`` of integer samples :meth:`CountedOrderStatistics.of_integers`
counts: 2 097 152 (µs ITL samples up to 2.1 s apart), 16 MB of counts, a fifth of the 80 MB that
10 million samples take. Measured here, counting 10 million samples takes 35 ms over a span of
20 000 and 155 ms when spread evenly over this whole span (a cache miss a sample), selecting
their ITL percentiles 230 to 260 ms."""
_COUNTING_BLOCK: Final = 2**18
"""Samples counted per block (at least): a 2 MB integer buffer, reused."""


@dataclass(frozen=True, slots=True)
class Summary:
    """Summary statistics of one sample set; every field but ``count`` is ``None`` when empty."""

    count: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None

    def to_dict(self) -> rt.Summary:
        """The report's ``summary`` shape (``docs/report-schema.md``): the fields by name, in
        order (:class:`otelbench.model.report.Summary` declares the same ones)."""
        return cast(rt.Summary, asdict(self))


def _finite_1d(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"expected a 1-D sample array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("samples must be finite; drop undefined (NaN) samples before summarising")
    return a


def type7_ranks(
    n: int, q: float | Sequence[float]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The ranks (0-based, in sorted order) ``i`` and ``i + 1`` and the weight ``h - i`` of the
    type-7 percentiles ``q`` of ``n`` samples (module docstring), with numpy's own arithmetic
    (``numpy.percentile``, ``method="linear"``): ``h = (n - 1) * (q / 100)``, and both ranks
    are ``n - 1`` from ``h >= n - 1`` on. Combine the order statistics with
    :func:`type7_interpolate`.

    >>> [r.tolist() for r in type7_ranks(4, [50, 100])]
    [[1, 3], [2, 3], [0.5, 0.0]]
    """
    h = (n - 1) * np.true_divide(np.asarray(q, dtype=np.float64), 100)
    below = np.floor(h)
    weight = h - below
    last = h >= n - 1
    lower = np.where(last, n - 1, below).astype(np.intp)
    upper = np.where(last, n - 1, below + 1).astype(np.intp)
    return lower, upper, np.where(last, 0.0, weight)


def type7_interpolate(
    lower: npt.NDArray[np.float64], upper: npt.NDArray[np.float64], weight: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``lower + weight * (upper - lower)`` as numpy's percentile computes it (bit for bit):
    from the upper value, ``upper - (1 - weight) * (upper - lower)``, when ``weight >= 0.5``."""
    diff = upper - lower
    return np.where(weight >= 0.5, upper - diff * (1 - weight), lower + diff * weight)


def percentiles_of_sorted(
    ordered: npt.NDArray[np.float64], q: float | Sequence[float]
) -> npt.NDArray[np.float64]:
    """numpy's type-7 percentiles ``q`` of finite samples already sorted ascending (non-empty),
    exactly ``np.percentile(ordered, q, method="linear")``: two order statistics each, read
    from their ranks, where numpy would run a selection pass over all the samples.

    >>> percentiles_of_sorted(np.array([10.0, 20.0, 30.0, 40.0]), [50, 90]).tolist()
    [25.0, 37.0]
    """
    lower, upper, weight = type7_ranks(int(ordered.size), q)
    return type7_interpolate(ordered[lower], ordered[upper], weight)


def percentiles_of_finite(
    a: npt.NDArray[np.float64], q: float | Sequence[float]
) -> npt.NDArray[np.float64]:
    """numpy's type-7 percentiles ``q`` of the finite, non-empty samples ``a``, exactly
    ``np.percentile(a, q, method="linear")``, from a sorted copy: numpy's vectorized sort of
    10M samples takes less than half the time of the selection ``np.percentile`` runs for
    several ranks, and the percentiles only depend on the order statistics (``a`` is left as
    it is; :func:`percentiles_of_sorted`).

    >>> percentiles_of_finite(np.array([40.0, 10.0, 30.0, 20.0]), [50, 90]).tolist()
    [25.0, 37.0]
    """
    return percentiles_of_sorted(np.sort(a), q)


@dataclass(frozen=True, slots=True, eq=False)
class OrderStatistics:
    """Finite samples **partitioned** (``np.partition``) at the ranks a caller will read: the
    type-7 ranks of the percentiles ``q`` it was made for, the smallest and the largest sample.

    ``values[r]`` is the ``r``-th smallest sample for every ``r`` in ``ranks``, and every sample
    before such an ``r`` is no larger, every one after it no smaller; between two ranks the
    samples are in no order. Reading percentiles of 10 million ITL samples this way costs one
    selection pass instead of a full sort (2 to 3 times faster here), with the same numbers: the
    percentiles are numpy's, bit for bit (:func:`type7_interpolate`).

    >>> o = OrderStatistics.of(np.array([40.0, 10.0, 30.0, 20.0]), [50.0])
    >>> (float(o.percentiles([50.0])[0]), o.min, o.max)
    (25.0, 10.0, 40.0)
    """

    values: npt.NDArray[np.float64]
    ranks: frozenset[int]

    @classmethod
    def of(cls, samples: npt.ArrayLike, q: Sequence[float] = draft.PERCENTILES) -> OrderStatistics:
        """Partition a copy of ``samples`` (finite, 1-D) at the type-7 ranks of ``q``, 0 and
        ``n - 1`` (``samples`` is left as it is)."""
        a = _finite_1d(samples)
        if a.size == 0:
            return cls(a.copy(), frozenset())
        lower, upper, _ = type7_ranks(int(a.size), q)
        ranks = frozenset({0, int(a.size) - 1, *lower.tolist(), *upper.tolist()})
        return cls(np.partition(a, sorted(ranks)), ranks)

    @property
    def size(self) -> int:
        return int(self.values.size)

    @property
    def min(self) -> float:
        return self._at(0)

    @property
    def max(self) -> float:
        return self._at(self.size - 1)

    def _at(self, rank: int) -> float:
        if rank not in self.ranks:
            raise ValueError(f"rank {rank} of {self.size} samples was not selected")
        return float(self.values[rank])

    def percentiles(self, q: float | Sequence[float]) -> npt.NDArray[np.float64]:
        """numpy's type-7 percentiles ``q`` (exactly ``np.percentile(samples, q)``); each must
        be one the statistics were made for (``ValueError`` otherwise)."""
        lower, upper, weight = type7_ranks(self.size, q)
        for rank in {*np.ravel(lower).tolist(), *np.ravel(upper).tolist()}:
            self._at(rank)
        return type7_interpolate(self.values[lower], self.values[upper], weight)

    def largest(self, m: int) -> npt.NDArray[np.float64]:
        """At least the ``m`` largest samples, in no order: the samples from the largest
        selected rank that is at most ``n - m`` (all of them when none is)."""
        cut = max((r for r in self.ranks if r <= self.size - m), default=0)
        return self.values[cut:]

    def samples(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64] | None]:
        """Every sample, as values and how many times each occurs: here each value once
        (``None``), in no order (as :meth:`CountedOrderStatistics.samples`)."""
        return self.values, None


@dataclass(frozen=True, slots=True, eq=False)
class CountedOrderStatistics:
    """Samples ``u / divisor`` whose ``u`` are integers (ITL in whole µs, read in ms), held as
    their distinct values, ascending, and how many times each occurs (:meth:`of_integers`).

    Every order statistic is then at hand: the sample of rank ``r`` (0-based, in sorted order)
    is the first value whose cumulative count exceeds ``r``. Counting 10 million samples with
    ``np.bincount`` costs a tenth of :class:`OrderStatistics`' selection pass, and gives the same
    numbers: the value of rank ``r`` is ``u_r / divisor``, the very float the sorted samples
    ``units / divisor`` hold at ``r``, so the percentiles are numpy's bit for bit
    (:func:`type7_interpolate`). A histogram counts the distinct values, each weighted by its
    count (:meth:`samples`): each value falls in the same bin as each of its copies.

    >>> o = CountedOrderStatistics.of_integers(np.array([4.0, 1.0, 3.0, 3.0]), 10.0)
    >>> (o.values.tolist(), o.counts.tolist())
    ([0.1, 0.3, 0.4], [1, 2, 1])
    >>> (float(o.percentiles([50.0])[0]), o.min, o.max, o.size)
    (0.3, 0.1, 0.4, 4)
    >>> CountedOrderStatistics.of_integers(np.array([1.0, 2.5])) is None  # not integers
    True
    """

    values: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    cumulative: npt.NDArray[np.int64]

    @classmethod
    def of_integers(
        cls, units: npt.ArrayLike, divisor: float = 1.0
    ) -> CountedOrderStatistics | None:
        """The order statistics of ``units / divisor``, counted, when every one of ``units``
        (1-D) is an integer and they span at most :data:`COUNTING_MAX_SPAN` and less than 4 per
        sample (so a few samples never get a large count array); ``None`` otherwise (also when
        empty or when a sample is NaN or infinite): :meth:`OrderStatistics.of` then selects.

        Counting costs one pass over the samples and a few over the span's counts, where a
        selection takes several passes over the samples. ``units`` is left as it is; a sample
        ``-0.0`` is counted as its equal ``0.0``.
        """
        a = np.asarray(units, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"expected a 1-D sample array, got shape {a.shape}")
        if a.size == 0:
            return None
        lo, hi = float(a.min()), float(a.max())  # NaN when a sample is: no comparison holds
        # at most 4 counts per sample; integers beyond 2**53 are not all floats, nor cast to
        # int64 without a warning
        span_limit = min(COUNTING_MAX_SPAN, 4 * a.size - 1)
        if not (lo >= -(2.0**53) and hi <= 2.0**53 and hi - lo <= span_limit):
            return None
        counts = _integer_counts(a, int(lo), int(hi - lo))
        if counts is None:
            return None
        present = np.flatnonzero(counts)
        counts = counts[present]
        # int(lo) + present are the samples' integers; as floats they are the samples themselves
        values = np.true_divide(present + int(lo), divisor)
        return cls(values, counts, np.cumsum(counts))

    @property
    def size(self) -> int:
        return int(self.cumulative[-1])

    @property
    def min(self) -> float:
        return float(self.values[0])

    @property
    def max(self) -> float:
        return float(self.values[-1])

    def _of_rank(self, ranks: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        """The samples of ``ranks``: the first value whose cumulative count exceeds each."""
        return self.values[np.searchsorted(self.cumulative, ranks, side="right")]

    def percentiles(self, q: float | Sequence[float]) -> npt.NDArray[np.float64]:
        """numpy's type-7 percentiles ``q`` (exactly ``np.percentile(units / divisor, q)``),
        any ``q``: every rank is at hand."""
        lower, upper, weight = type7_ranks(self.size, q)
        return type7_interpolate(self._of_rank(lower), self._of_rank(upper), weight)

    def largest(self, m: int) -> npt.NDArray[np.float64]:
        """The ``m`` largest samples, ascending (all of them when ``m >= n``): from the sample of
        rank ``n - m`` on, as many copies of each value as it has there (never every copy of a
        value most samples share)."""
        rank = max(self.size - m, 0)
        first = int(np.searchsorted(self.cumulative, rank, side="right"))
        copies = self.counts[first:].copy()
        if copies.size:
            copies[0] = self.cumulative[first] - rank  # the copies of rank ``rank`` and above
        return np.repeat(self.values[first:], copies)

    def samples(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64] | None]:
        """Every sample, as the distinct values and how many times each occurs."""
        return self.values, self.counts


AnyOrderStatistics: TypeAlias = OrderStatistics | CountedOrderStatistics
"""Order statistics selected (:class:`OrderStatistics`) or counted
(:class:`CountedOrderStatistics`): both read percentiles, ``min``, ``max``, ``size``,
``largest(m)`` and ``samples()`` alike."""


def _integer_counts(a: npt.NDArray[np.float64], lo: int, span: int) -> npt.NDArray[np.int64] | None:
    """How many samples of ``a`` equal ``lo + k``, for ``k = 0 … span`` (``a`` within that range),
    or ``None`` when a sample is not an integer.

    In blocks, through one reused integer buffer (no second array as large as ``a``); a block
    holds at least ``span + 1`` samples so that adding its ``bincount`` costs less than counting
    it.
    """
    counts = np.zeros(span + 1, dtype=np.int64)
    step = min(a.size, max(_COUNTING_BLOCK, span + 1))
    buffer = np.empty(step, dtype=np.int64)
    for start in range(0, a.size, step):
        block = a[start : start + step]
        k = buffer[: block.size]
        np.copyto(k, block, casting="unsafe")  # truncated toward 0: equal iff an integer
        if not np.array_equal(k, block):
            return None
        k -= lo
        counts += np.bincount(k, minlength=span + 1)
    return counts


def percentile(values: npt.ArrayLike, q: float) -> float | None:
    """The ``q``-th percentile (0 ≤ q ≤ 100) by linear interpolation (type 7); None if empty.

    >>> percentile([10.0, 20.0, 30.0, 40.0], 50)
    25.0
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within [0, 100], got {q}")
    a = _finite_1d(values)
    if a.size == 0:
        return None
    return float(percentiles_of_finite(a, q))


def summarize(values: npt.ArrayLike, *, order: AnyOrderStatistics | None = None) -> Summary:
    """Count, mean, population std, min, max and P50/P90/P95/P99/P99.9 of finite samples.

    Raises ``ValueError`` on NaN or infinite samples: callers choose which samples are defined.
    ``order`` is ``OrderStatistics.of(values)`` (made for at least
    :data:`otelbench.draft.PERCENTILES`), or their :class:`CountedOrderStatistics`, when the caller
    has it already (the order statistics are then read from it, not from a sort of their own); the
    mean and std are summed in ``values``' order either way.

    >>> s = summarize([1.0, 2.0, 3.0, 4.0])
    >>> (s.count, s.mean, s.p50, s.p90)
    (4, 2.5, 2.5, 3.7)
    """
    a = _finite_1d(values)
    if a.size == 0:
        return Summary(0, None, None, None, None, None, None, None, None, None)
    if order is None:
        order = OrderStatistics.of(a)
    elif order.size != a.size:
        raise ValueError("order must be the order statistics of the samples")
    p50, p90, p95, p99, p99_9 = (float(v) for v in order.percentiles(draft.PERCENTILES))
    return Summary(
        count=int(a.size),
        mean=float(a.mean()),
        std=float(a.std()),
        min=float(a.min()),
        max=float(a.max()),
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        p99_9=p99_9,
    )
