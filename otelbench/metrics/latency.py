"""Per-request latency metrics: token timelines, ITL, time between chunks, TPOT, jitter, pauses.

Pure numpy, no I/O. Per-request sequences (chunk arrival offsets, token arrival times, ITL samples)
are held as a :class:`Ragged` array — one flat value array plus ``bounds`` (``n + 1`` offsets;
request ``i`` owns ``values[bounds[i]:bounds[i+1]]``) — so a run with millions of tokens is
processed without a Python loop per request.

Definitions, each with the draft section it implements:

* **Token arrival times, Option B** (draft 4.6.3, "distributed timing"): a content chunk carrying
  ``N`` tokens that arrives at ``T`` assigns ``T`` to all ``N`` tokens, so it contributes ``N - 1``
  zero intervals. A chunk with 0 tokens contributes no token.
* **ITL** (draft 5.4.3): ``ITL_i = T(token_i) - T(token_{i-1})`` for each consecutive pair of
  tokens of one request. The interval from submission to the first token (TTFT) is never an ITL
  sample: only token-to-token intervals are taken.
* **Time between chunks** (draft 4.6.3 Option A): the interval between consecutive *content*
  chunks of one request, whatever each carries.
* **TPOT** (time per output token, per request): ``(T_last - T_first) / (output_tokens - 1)``,
  where ``T_first``/``T_last`` are the arrival times of the first and last output token. It
  *excludes* the first token (as vLLM and inference-perf do; GuideLLM includes it), and is
  undefined (NaN) for fewer than 2 output tokens.
* **Jitter** (draft 5.4.4.2): per request, the population standard deviation (``ddof=0``) of its
  ITL samples; defined only for requests with at least 2 ITL samples.
* **Maximum pause** (draft 5.4.4.2): per request, its largest ITL sample; defined for requests with
  at least 1 ITL sample.
* **Tail ratio** (draft 5.4.4.3): ``P99 / P50`` of the aggregate ITL distribution.
* **TTFT by input length** (draft 5.1.4.2): TTFT percentiles per input-token bucket
  ``[0-256), [256-512), [512-1024), [1024-2048), [2048-4096), [4096+)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.metrics.summary import percentile
from otelbench.model import report as rt

__all__ = [
    "TAIL_EXPONENTIAL_BAND",
    "InputBucket",
    "Ragged",
    "consecutive_intervals",
    "group_first",
    "group_last",
    "group_max",
    "group_std",
    "input_bucket_labels",
    "tail_class",
    "tail_ratio",
    "tail_spacing_ratio",
    "token_arrival_times",
    "tpot",
    "ttft_by_input_length",
]


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Ragged:
    """A sequence of variable-length groups: ``values`` flat, group ``i`` is
    ``values[bounds[i]:bounds[i+1]]``.

    >>> r = Ragged.from_lengths(np.array([10.0, 20.0, 35.0, 5.0]), [3, 0, 1])
    >>> [g.tolist() for g in r]
    [[10.0, 20.0, 35.0], [], [5.0]]
    """

    values: npt.NDArray[np.float64]
    bounds: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        b = self.bounds
        if b.ndim != 1 or b.size < 1 or b[0] != 0 or b[-1] != self.values.size:
            raise ValueError("bounds must start at 0 and end at len(values)")
        if np.any(np.diff(b) < 0):
            raise ValueError("bounds must be non-decreasing")

    @classmethod
    def from_lengths(cls, values: npt.ArrayLike, lengths: npt.ArrayLike) -> Ragged:
        """Build from the flat values and each group's length."""
        lens = np.asarray(lengths, dtype=np.int64)
        bounds = np.zeros(lens.size + 1, dtype=np.int64)
        np.cumsum(lens, out=bounds[1:])
        return cls(np.asarray(values, dtype=np.float64), bounds)

    def __len__(self) -> int:
        return int(self.bounds.size - 1)

    def __getitem__(self, i: int) -> npt.NDArray[np.float64]:
        return self.values[self.bounds[i] : self.bounds[i + 1]]

    def __iter__(self) -> Iterator[npt.NDArray[np.float64]]:
        for i in range(len(self)):
            yield self[i]

    def lengths(self) -> npt.NDArray[np.int64]:
        """Number of values in each group."""
        return np.diff(self.bounds)

    def group_ids(self) -> npt.NDArray[np.int64]:
        """The group index of every value (``len(values)`` entries)."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths())

    def select(self, mask: npt.NDArray[np.bool_]) -> Ragged:
        """Only the groups where ``mask`` is true, in order (``self`` when all are)."""
        if mask.shape != (len(self),):
            raise ValueError("mask must have one entry per group")
        if mask.all():  # the common case (every request kept): no copy of millions of values
            return self
        keep = np.repeat(mask, self.lengths())
        return Ragged.from_lengths(self.values[keep], self.lengths()[mask])


def token_arrival_times(
    chunk_offsets: npt.ArrayLike, chunk_tokens: npt.ArrayLike, chunk_bounds: npt.ArrayLike
) -> Ragged:
    """Per-token arrival times by **Option B** (distributed timing, draft 4.6.3).

    A chunk of ``N`` tokens arriving at ``T`` gives ``N`` tokens that arrive at ``T``. Inputs are
    flat per-chunk arrays grouped by ``chunk_bounds`` (per request); the result is grouped the
    same way, in the same unit as ``chunk_offsets``.

    >>> t = token_arrival_times([100, 150, 300], [1, 3, 1], [0, 3])
    >>> t[0].tolist()
    [100.0, 150.0, 150.0, 150.0, 300.0]
    """
    offsets = np.asarray(chunk_offsets, dtype=np.float64)
    tokens = np.asarray(chunk_tokens, dtype=np.int64)
    chunks = Ragged(offsets, np.asarray(chunk_bounds, dtype=np.int64))
    if tokens.shape != offsets.shape:
        raise ValueError("chunk_tokens must have one entry per chunk offset")
    if np.any(tokens < 0):
        raise ValueError("chunk token counts must be >= 0")
    if tokens.size and tokens.min() == 1 and tokens.max() == 1:  # one token per chunk
        values = offsets.copy() if offsets is chunk_offsets else offsets  # ours, not the caller's
        return Ragged(values, chunks.bounds)
    per_request = np.zeros(len(chunks), dtype=np.int64)
    nonempty = chunks.lengths() > 0
    if np.any(nonempty):
        per_request[nonempty] = np.add.reduceat(tokens, chunks.bounds[:-1][nonempty])
    return Ragged.from_lengths(np.repeat(offsets, tokens), per_request)


def consecutive_intervals(times: Ragged) -> Ragged:
    """``t[k] - t[k-1]`` within each group (never across groups); a group of ``m`` values gives
    ``max(m - 1, 0)`` intervals.

    Applied to Option B token times this is the draft's ITL (5.4.3); applied to chunk offsets it
    is Option A's *time between chunks* (4.6.3).

    >>> consecutive_intervals(Ragged.from_lengths([1.0, 4.0, 9.0, 100.0], [3, 1]))[0].tolist()
    [3.0, 5.0]
    """
    v = times.values
    lengths = times.lengths()
    if v.size < 2:
        return Ragged.from_lengths(np.empty(0), np.zeros(len(times), dtype=np.int64))
    same_group = np.ones(v.size - 1, dtype=np.bool_)
    # the pair (b-1, b) straddles two groups for every interior bound b
    interior = times.bounds[1:-1]
    interior = interior[(interior > 0) & (interior < v.size)]
    same_group[interior - 1] = False
    return Ragged.from_lengths(np.diff(v)[same_group], np.maximum(lengths - 1, 0))


def _group_reduce_mask(r: Ragged, min_count: int) -> npt.NDArray[np.bool_]:
    return r.lengths() >= min_count


def group_first(r: Ragged) -> npt.NDArray[np.float64]:
    """First value of each group; NaN for an empty group."""
    out = np.full(len(r), np.nan)
    ok = _group_reduce_mask(r, 1)
    out[ok] = r.values[r.bounds[:-1][ok]]
    return out


def group_last(r: Ragged) -> npt.NDArray[np.float64]:
    """Last value of each group; NaN for an empty group."""
    out = np.full(len(r), np.nan)
    ok = _group_reduce_mask(r, 1)
    out[ok] = r.values[r.bounds[1:][ok] - 1]
    return out


def group_max(r: Ragged) -> npt.NDArray[np.float64]:
    """Largest value of each group (the draft's per-request *maximum pause* when applied to ITL,
    5.4.4.2); NaN for an empty group."""
    out = np.full(len(r), np.nan)
    ok = _group_reduce_mask(r, 1)
    if np.any(ok):
        out[ok] = np.maximum.reduceat(r.values, r.bounds[:-1][ok])
    return out


def group_std(r: Ragged, min_count: int = 2) -> npt.NDArray[np.float64]:
    """Population standard deviation (``ddof=0``) of each group (the draft's per-request *jitter*
    when applied to ITL, 5.4.4.2); NaN for groups with fewer than ``min_count`` values.

    Two-pass (mean first, then squared deviations) for accuracy.
    """
    if min_count < 1:
        raise ValueError("min_count must be >= 1")
    lengths = r.lengths()
    out = np.full(len(r), np.nan)
    ok = lengths >= min_count
    if not np.any(ok):
        return out
    # reduceat over the non-empty groups' starts sums exactly each non-empty group
    nonempty = lengths > 0
    starts = r.bounds[:-1][nonempty]
    n = lengths[nonempty]
    means = np.add.reduceat(r.values, starts) / n
    dev = np.repeat(means, n)  # one buffer of len(values) for the deviations and their squares
    np.subtract(r.values, dev, out=dev)
    np.multiply(dev, dev, out=dev)
    var = np.add.reduceat(dev, starts) / n
    std = np.full(len(r), np.nan)
    std[nonempty] = np.sqrt(var)
    out[ok] = std[ok]
    return out


def tpot(
    first_token_time: npt.ArrayLike,
    last_token_time: npt.ArrayLike,
    output_tokens: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """Time per output token per request: ``(T_last - T_first) / (output_tokens - 1)``.

    Excludes the first token. NaN where ``output_tokens < 2`` or an input is NaN.

    >>> tpot([100.0, 50.0], [400.0, 50.0], [4, 1]).tolist()
    [100.0, nan]
    """
    first = np.asarray(first_token_time, dtype=np.float64)
    last = np.asarray(last_token_time, dtype=np.float64)
    n = np.asarray(output_tokens, dtype=np.float64)
    out = np.full(np.broadcast(first, last, n).shape, np.nan)
    ok = np.isfinite(first) & np.isfinite(last) & np.isfinite(n) & (n >= 2)
    out[ok] = (last[ok] - first[ok]) / (n[ok] - 1.0)
    return out


def tail_ratio(p99: float | None, p50: float | None) -> float | None:
    """``P99 / P50``, the draft's tail-heaviness indicator (5.4.4.3); None when P50 is 0 or absent.

    Under Option B a median ITL of 0 (most tokens delivered in multi-token chunks) makes the
    ratio undefined; the time-between-chunks distribution is then the informative one.
    """
    if p99 is None or p50 is None or p50 == 0.0:
        return None
    return p99 / p50


TAIL_EXPONENTIAL_BAND: Final = (0.8, 1.25)
"""Spacing ratios (:func:`tail_class`) read as an exponential tail; below: light (a Gaussian tail
gives 0.73), above: heavy (a log-normal with σ = 1 gives 1.8, a power law with index 3 gives 2.2).
The ratio rests on P99.9: with the draft's 5,000 ITL samples, five samples lie above it, so the
class is an indication and the ratio is reported beside it."""


def tail_spacing_ratio(p90: float | None, p99: float | None, p99_9: float | None) -> float | None:
    """``(P99.9 − P99) / (P99 − P90)``: how the tail's spacing grows per decade of probability.

    Each decade of an exponential tail adds the same amount (``ln 10 / λ``), whatever its shift,
    so the ratio is 1; a power-law (heavy) tail with index α gives about ``10^(1/α)`` > 1, and a
    tail lighter than exponential (Gaussian-like, bounded) < 1. None when a percentile is absent
    or ``P99 = P90``.

    >>> round(tail_spacing_ratio(2.303, 4.605, 6.908), 3)  # exponential, λ = 1
    1.0
    """
    if p90 is None or p99 is None or p99_9 is None or p99 <= p90:
        return None
    return (p99_9 - p99) / (p99 - p90)


def tail_class(spacing_ratio: float | None) -> str | None:
    """The draft's tail characterization (5.4.4.3: "exponential, heavy-tailed") from
    :func:`tail_spacing_ratio`: ``light``, ``exponential`` (within :data:`TAIL_EXPONENTIAL_BAND`)
    or ``heavy``; None without a ratio.

    >>> tail_class(1.0), tail_class(3.2), tail_class(0.4)
    ('exponential', 'heavy', 'light')
    """
    if spacing_ratio is None:
        return None
    low, high = TAIL_EXPONENTIAL_BAND
    if spacing_ratio < low:
        return "light"
    return "exponential" if spacing_ratio <= high else "heavy"


@dataclass(frozen=True, slots=True)
class InputBucket:
    """TTFT percentiles for requests whose input length is in ``[lower, upper)``."""

    label: str
    lower: int
    upper: int | None
    count: int
    p50: float | None
    p95: float | None
    p99: float | None

    def to_dict(self) -> rt.InputLengthBucket:
        """The report's ``ttft_by_input_tokens`` row shape."""
        return {
            "bucket": self.label,
            "min_tokens": self.lower,
            "max_tokens_exclusive": self.upper,
            "count": self.count,
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
        }


def _bucket_label(lower: int, upper: int | None) -> str:
    return f"{lower}-{upper}" if upper is not None else f"{lower}+"


def input_bucket_labels(edges: Sequence[int]) -> tuple[str, ...]:
    """The labels of the buckets :func:`ttft_by_input_length` makes from these lower edges.

    >>> input_bucket_labels((0, 256, 512))
    ('0-256', '256-512', '512+')
    """
    uppers = [*edges[1:], None]
    return tuple(_bucket_label(lower, upper) for lower, upper in zip(edges, uppers, strict=True))


def ttft_by_input_length(
    ttft: npt.ArrayLike,
    input_tokens: npt.ArrayLike,
    edges: Sequence[int] = draft.TTFT_INPUT_BUCKET_EDGES,
) -> list[InputBucket]:
    """TTFT P50/P95/P99 per input-length bucket (draft 5.1.4.2).

    ``edges`` are the buckets' inclusive lower edges, ascending; the last bucket is open-ended.
    Requests whose TTFT or input length is NaN are left out. Every bucket is returned, empty ones
    with count 0 and ``None`` percentiles.

    >>> [(b.label, b.count) for b in ttft_by_input_length([5.0, 7.0], [255, 256])][:2]
    [('0-256', 1), ('256-512', 1)]
    """
    t = np.asarray(ttft, dtype=np.float64)
    n = np.asarray(input_tokens, dtype=np.float64)
    if t.shape != n.shape:
        raise ValueError("ttft and input_tokens must have the same shape")
    lowers = list(edges)
    if not lowers or any(b <= a for a, b in pairwise(lowers)):
        raise ValueError("bucket edges must be non-empty and strictly ascending")
    ok = np.isfinite(t) & np.isfinite(n)
    t, n = t[ok], n[ok]
    rows = []
    for k, lower in enumerate(lowers):
        upper = lowers[k + 1] if k + 1 < len(lowers) else None
        in_bucket = (n >= lower) & (n < upper) if upper is not None else (n >= lower)
        sample = t[in_bucket]
        rows.append(
            InputBucket(
                label=_bucket_label(lower, upper),
                lower=lower,
                upper=upper,
                count=int(sample.size),
                p50=percentile(sample, 50),
                p95=percentile(sample, 95),
                p99=percentile(sample, 99),
            )
        )
    return rows
