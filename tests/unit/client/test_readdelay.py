"""The read-delay histogram (otelbench.client.readdelay): fixed size, percentiles within 3.1 %."""

from __future__ import annotations

import pickle
from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.client.readdelay import READ_DELAYS, DelayHistogram

delays = st.lists(st.integers(0, 10**12), min_size=1, max_size=400)


@settings(deadline=None, max_examples=100)
@given(values=delays, q=st.sampled_from([1.0, 50.0, 90.0, 99.0, 100.0]))
def test_percentiles_are_within_the_bucket_width(values: list[int], q: float) -> None:
    h = DelayHistogram()
    h.add(array("q", values[: len(values) // 2]))
    h.add(np.asarray(values[len(values) // 2 :], dtype=np.int64))
    exact = float(np.percentile(values, q, method="inverted_cdf"))
    got = h.percentile_ns(q)
    assert got is not None
    assert abs(got - exact) <= max(0.5, exact / 32)  # half a bucket: 1/64 of the value
    assert h.count == len(values)
    assert h.max_ns == max(values)


@settings(deadline=None, max_examples=50)
@given(a=delays, b=delays)
def test_merged_histograms_count_both(a: list[int], b: list[int]) -> None:
    ha, hb, both = DelayHistogram(), DelayHistogram(), DelayHistogram()
    ha.add(array("q", a))
    hb.add(array("q", b))
    both.add(array("q", a + b))
    ha.merge(hb)
    assert ha.counts.tolist() == both.counts.tolist()
    assert ha.max_ns == both.max_ns


def test_summary_and_pickling() -> None:
    h = DelayHistogram()
    assert h.summary_ms() == {"count": 0, "p50": None, "p99": None, "max": None}
    h.add(array("q", [-5, 10, 2_000_000, 10**15]))  # negative: 0; beyond 39 h: the last bucket
    again = pickle.loads(pickle.dumps(h))
    assert again.counts.tolist() == h.counts.tolist()
    summary = again.summary_ms()
    assert summary["count"] == 4
    assert summary["max"] == 10**15 / 1e6
    assert summary["p50"] == 0.0  # the bucket of 10 ns, exact below 32 ns


def test_recording_is_off_until_started_and_folds_its_pending_reads() -> None:
    assert READ_DELAYS.pending is None
    assert READ_DELAYS.histogram is None
    READ_DELAYS.start()
    assert READ_DELAYS.pending is not None
    READ_DELAYS.pending.extend([1500, 2500])
    READ_DELAYS.fold()
    assert READ_DELAYS.pending is not None
    assert len(READ_DELAYS.pending) == 0
    READ_DELAYS.pending.append(40_000)  # still pending when recording stops: counted too
    recorded = READ_DELAYS.stop()
    assert recorded.count == 3
    assert recorded.max_ns == 40_000
    assert READ_DELAYS.pending is None
    assert READ_DELAYS.histogram is None
    assert READ_DELAYS.stop().count == 0


@settings(deadline=None, max_examples=100)
@given(values=delays, q=st.sampled_from([1.0, 50.0, 99.0, 100.0]), bits=st.sampled_from([5, 10]))
def test_a_finer_histogram_is_within_its_own_bucket_width(
    values: list[int], q: float, bits: int
) -> None:
    """The loop lateness's histogram (1,024 buckets per power of two): within 1/2048."""
    h = DelayHistogram(sub_bits=bits)
    h.add(array("q", values))
    exact = float(np.percentile(values, q, method="inverted_cdf"))
    got = h.percentile_ns(q)
    assert got is not None
    assert abs(got - exact) <= max(0.5, exact / (2 << bits))
    assert h.count == len(values)
    assert h.max_ns == max(values)
    assert h.counts.size == 48 << bits  # fixed, however many values


@settings(deadline=None, max_examples=100)
@given(values=delays, at=st.integers(0, 10**12))
def test_count_at_least_counts_the_buckets_wholly_above(values: list[int], at: int) -> None:
    h = DelayHistogram(sub_bits=10)
    h.add(array("q", values))
    got = h.count_at_least(at)
    assert got <= sum(v >= at for v in values)  # never a value below ``at``
    assert got >= sum(v >= at + at / 1024 + 1 for v in values)  # at most one bucket short


def test_histograms_of_two_resolutions_do_not_merge() -> None:
    with pytest.raises(ValueError, match="5 and 10 sub-bits"):
        DelayHistogram().merge(DelayHistogram(sub_bits=10))
