"""How long received data waited in the kernel before the client read it (draft 4.2.1).

Every read of the client's HTTP/1.1 transport (:mod:`otelbench.client._http11`) carries the
kernel's receive time of its data (``SO_TIMESTAMPNS``); the read's own time minus that is how
long the data waited for the event loop: the delay between data becoming readable and being
read. While :data:`READ_DELAYS` records (the load generator's health monitor,
:mod:`otelbench.loadgen.health`, turns it on for the measurement), each read appends its delay
to an array (one append per read), folded every second into a log-linear histogram of a fixed
size however long the run (32 buckets per power of two, each within 3.1 % of its values).
A read that coalesced several chunks reports the wait of the newest; the older ones waited
longer.

Clock domain: ``time.perf_counter_ns()`` (CLOCK_MONOTONIC, ns).

Example::

    READ_DELAYS.start()
    ...                                  # reads happen
    READ_DELAYS.fold()                   # now and then, from the reading thread
    histogram = READ_DELAYS.stop()       # DelayHistogram
    histogram.summary_ms()               # {"count": …, "p50": …, "p99": …, "max": …}
"""

from __future__ import annotations

import math
from array import array
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.model.report import HealthQuantiles

__all__ = ["READ_DELAYS", "SUB_BITS", "DelayHistogram", "ReadDelays"]

SUB_BITS: Final = 5
"""The read delays' resolution: 2**5 = 32 buckets per power of two (each within 3.1 % of its
values)."""
_POWERS: Final = 48
"""Up to 2**47 ns (39 hours); anything longer lands in the last bucket."""


class DelayHistogram:
    """Counts of nanosecond delays in log-linear buckets, and the largest delay exactly.

    ``sub_bits`` sets the resolution: 2**sub_bits buckets per power of two, values below
    2**sub_bits ns exact, any other within 2**-sub_bits of its bucket's middle; the size is
    48 × 2**sub_bits counts, whatever was counted (5: 12 KiB; 10: 384 KiB, of pages that stay
    untouched, and so not resident, until a value lands there).
    """

    __slots__ = ("counts", "max_ns", "sub_bits")

    def __init__(self, sub_bits: int = SUB_BITS) -> None:
        self.sub_bits = sub_bits
        self.counts = np.zeros(_POWERS << sub_bits, dtype=np.int64)
        self.max_ns = 0

    def add(self, delays_ns: array[int] | npt.NDArray[np.int64]) -> None:
        """Count delays (ns; negative ones count as 0)."""
        v = np.maximum(np.asarray(delays_ns, dtype=np.int64), 0)
        if v.size == 0:
            return
        bits, sub = self.sub_bits, 1 << self.sub_bits
        # a value's bit length: frexp's exponent, exact for integers below 2**53
        e = np.maximum(np.frexp(v.astype(np.float64))[1] - bits - 1, 0)
        index = np.minimum(
            np.where(v < sub, v, sub * (e + 1) + (v >> e) - sub), self.counts.size - 1
        )
        found = np.bincount(index)
        self.counts[: found.size] += found
        self.max_ns = max(self.max_ns, int(v.max()))

    def merge(self, other: DelayHistogram) -> None:
        """Add ``other``'s counts (of the same resolution) to these."""
        if other.sub_bits != self.sub_bits:
            raise ValueError(f"histograms of {self.sub_bits} and {other.sub_bits} sub-bits")
        self.counts = self.counts + other.counts
        self.max_ns = max(self.max_ns, other.max_ns)

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def count_at_least(self, ns: int) -> int:
        """How many delays were counted in buckets that hold only values of ``ns`` or more."""
        first = int(np.searchsorted(self._lows(), ns, side="left"))
        return int(self.counts[first:].sum())

    def _lows(self) -> npt.NDArray[np.int64]:
        """Each bucket's smallest value."""
        index = np.arange(self.counts.size, dtype=np.int64)
        sub = 1 << self.sub_bits
        e, m = np.divmod(np.maximum(index - sub, 0), sub)
        return np.where(index < sub, index, (sub + m) << e)

    def percentile_ns(self, q: float) -> float | None:
        """The ``q``-th percentile (0–100): the middle of the bucket it falls in (exact below
        2**sub_bits ns), at most the largest delay; None when empty."""
        total = self.count
        if total == 0:
            return None
        rank = max(1, math.ceil(q * total / 100))
        index = int(np.searchsorted(np.cumsum(self.counts), rank))
        return min(_middle(index, 1 << self.sub_bits), float(self.max_ns))

    def summary_ms(self) -> HealthQuantiles:
        """``{count, p50, p99, max}``, the percentiles and the maximum in ms."""
        p50, p99 = self.percentile_ns(50), self.percentile_ns(99)
        return {
            "count": self.count,
            "p50": None if p50 is None else round(p50 / 1e6, 4),
            "p99": None if p99 is None else round(p99 / 1e6, 4),
            "max": round(self.max_ns / 1e6, 4) if self.count else None,
        }


def _middle(index: int, sub: int) -> float:
    if index < sub:
        return float(index)
    e, m = divmod(index - sub, sub)
    low = (sub + m) << e
    return low + ((1 << e) - 1) / 2


class ReadDelays:
    """The process's read-delay recording: off until :meth:`start`. A read appends its delay to
    :attr:`pending` (one append: the hot path); :meth:`fold` moves them into the histogram, as
    the recorder's owner calls it now and then (the health monitor: every second)."""

    __slots__ = ("histogram", "pending")

    def __init__(self) -> None:
        self.histogram: DelayHistogram | None = None
        self.pending: array[int] | None = None

    def start(self) -> None:
        """Record every read from now on, into a new histogram."""
        self.histogram = DelayHistogram()
        self.pending = array("q")

    def fold(self) -> None:
        """Count the pending delays into the histogram (from the reading thread)."""
        if self.histogram is not None and self.pending:
            self.histogram.add(self.pending)
            self.pending = array("q")

    def stop(self) -> DelayHistogram:
        """Stop recording; returns what was recorded (empty if nothing was)."""
        self.fold()
        histogram, self.histogram, self.pending = self.histogram, None, None
        return histogram if histogram is not None else DelayHistogram()


READ_DELAYS: Final = ReadDelays()
"""The process-wide recording the transport's reads add to."""
