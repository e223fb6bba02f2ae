"""Order statistics counted from integer samples (``CountedOrderStatistics``) give exactly what
numpy gives for the samples ``units / divisor``: the percentiles, the smallest and largest
sample, the sorted samples themselves; and they decline (``None``) whatever they cannot count
exactly or cheaply, so the caller selects (``OrderStatistics``) instead."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench import draft
from otelbench.metrics import ITL_SHAPE_PERCENTILES, itl_shape, summarize
from otelbench.metrics.summary import (
    _COUNTING_BLOCK,
    COUNTING_MAX_SPAN,
    CountedOrderStatistics,
    OrderStatistics,
)

QS = [*draft.PERCENTILES, *ITL_SHAPE_PERCENTILES, 0.0, 1.0, 33.3, 100.0]
DIVISORS = st.sampled_from([1.0, 1000.0, 7.0, 0.1])


def counted(units: np.ndarray, divisor: float = 1.0) -> CountedOrderStatistics:
    order = CountedOrderStatistics.of_integers(units, divisor)
    assert order is not None
    return order


# n integers above a base anywhere in ±1e9, spanning less than 4n (so they are counted)
dense_units = st.tuples(
    st.integers(-(10**9), 10**9),
    st.integers(1, 300).flatmap(
        lambda n: st.lists(st.integers(0, 4 * n - 1), min_size=n, max_size=n)
    ),
).map(lambda t: np.array([t[0] + v for v in t[1]], dtype=np.float64))


@given(dense_units, DIVISORS)
def test_counted_percentiles_are_numpys_bit_for_bit(units: np.ndarray, divisor: float) -> None:
    before = units.copy()
    order = counted(units, divisor)
    scaled = units / divisor
    assert order.percentiles(QS).tolist() == np.percentile(scaled, QS).tolist()
    assert order.percentiles(QS).tolist() == OrderStatistics.of(scaled, QS).percentiles(QS).tolist()
    assert float(order.percentiles(50.0)) == float(np.percentile(scaled, 50.0))  # scalar q
    assert (order.min, order.max, order.size) == (
        float(scaled.min()),
        float(scaled.max()),
        scaled.size,
    )
    values, counts = order.samples()
    assert counts is not None
    assert np.repeat(values, counts).tolist() == np.sort(scaled).tolist()  # the very floats
    assert units.tolist() == before.tolist()  # the caller's array is left as it is


@given(dense_units, DIVISORS)
def test_summarize_and_itl_shape_with_counted_statistics(units: np.ndarray, divisor: float) -> None:
    x = units / divisor
    order = counted(units, divisor)
    assert summarize(x, order=order) == summarize(x)
    assert itl_shape(x, order=order, std=float(x.std())) == itl_shape(x)


@given(dense_units, st.integers(-2, 320))
def test_counted_largest_are_the_m_largest(units: np.ndarray, m: int) -> None:
    want = np.sort(units)[min(max(units.size - m, 0), units.size) :]
    assert counted(units).largest(m).tolist() == want.tolist()


def test_largest_of_a_value_most_samples_share_are_only_m() -> None:
    units = np.concatenate([np.full(1_000_000, 20_000.0), np.arange(20_001.0, 20_101.0)])
    top = counted(units, 1000.0).largest(150)
    assert top.tolist() == [20.0] * 50 + (np.arange(20_001.0, 20_101.0) / 1000.0).tolist()


def test_one_sample_and_all_equal() -> None:
    one = counted(np.array([-17.0]), 1000.0)
    assert (one.values.tolist(), one.counts.tolist()) == ([-0.017], [1])
    assert one.percentiles(QS).tolist() == [-0.017] * len(QS)
    assert one.largest(5).tolist() == [-0.017]
    same = counted(np.full(1000, 12_345.0), 1000.0)
    assert (same.values.tolist(), same.counts.tolist(), same.size) == ([12.345], [1000], 1000)
    assert same.percentiles(QS).tolist() == np.percentile(np.full(1000, 12.345), QS).tolist()


def test_negative_samples_are_counted_from_the_smallest() -> None:
    units = np.array([-3.0, 5.0, -3.0, 0.0, 2.0, -1.0])
    order = counted(units, 1000.0)
    assert order.values.tolist() == [-0.003, -0.001, 0.0, 0.002, 0.005]
    assert order.counts.tolist() == [2, 1, 1, 1, 1]
    assert order.percentiles(QS).tolist() == np.percentile(units / 1000.0, QS).tolist()


def test_samples_that_are_not_integers_are_not_counted() -> None:
    assert CountedOrderStatistics.of_integers(np.array([1.0, 2.5, 3.0])) is None
    assert CountedOrderStatistics.of_integers(np.array([0.5])) is None  # the smallest too
    assert CountedOrderStatistics.of_integers(np.array([-3.0, 1e-300, 1.0, 2.0])) is None
    # one fraction in the last of several blocks
    units = np.arange(3 * _COUNTING_BLOCK, dtype=np.float64) % 1000
    assert CountedOrderStatistics.of_integers(units) is not None
    units[-1] = 499.75
    assert CountedOrderStatistics.of_integers(units) is None


def test_undefined_and_empty_samples_are_not_counted() -> None:
    for bad in ([1.0, np.nan], [np.inf, 1.0], [-np.inf, 1.0], [np.nan]):
        assert CountedOrderStatistics.of_integers(np.array(bad)) is None
    assert CountedOrderStatistics.of_integers(np.array([])) is None
    with pytest.raises(ValueError, match="1-D"):
        CountedOrderStatistics.of_integers(np.zeros((2, 2)))


def test_integers_beyond_2_to_the_53_are_not_counted_and_raise_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert CountedOrderStatistics.of_integers(np.array([2.0**53 + 2, 2.0**53 + 2])) is None
        assert CountedOrderStatistics.of_integers(np.array([-(2.0**63), -(2.0**63)])) is None
    edge = counted(np.array([2.0**53, 2.0**53 - 1]))
    assert edge.values.tolist() == [2.0**53 - 1, 2.0**53]


def test_a_span_wider_than_the_bound_or_4_per_sample_is_not_counted() -> None:
    # a huge outlier (a 10 s stall among 5-25 ms ITLs in µs) falls back to selection
    rng = np.random.default_rng(3)
    units = rng.integers(5000, 25_000, 1_000_000).astype(np.float64)
    assert CountedOrderStatistics.of_integers(units, 1000.0) is not None
    units[7] = 10_000_000.0
    assert CountedOrderStatistics.of_integers(units, 1000.0) is None
    # the bound itself, with samples enough
    n = COUNTING_MAX_SPAN // 4 + 1
    at_bound = np.zeros(n)
    at_bound[-1] = COUNTING_MAX_SPAN
    wide = counted(at_bound, 1000.0)
    assert wide.percentiles(QS).tolist() == np.percentile(at_bound / 1000.0, QS).tolist()
    at_bound[-1] = COUNTING_MAX_SPAN + 1
    assert CountedOrderStatistics.of_integers(at_bound) is None
    # at most 4 counts per sample: 3 samples span at most 11
    assert CountedOrderStatistics.of_integers(np.array([0.0, 5.0, 11.0])) is not None
    assert CountedOrderStatistics.of_integers(np.array([0.0, 5.0, 12.0])) is None


@pytest.mark.parametrize("seed", range(3))
def test_itl_like_samples_in_many_blocks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2 * _COUNTING_BLOCK + 12_345
    units = np.round(rng.gamma(2.0, 8000.0, n)) + rng.integers(0, 2, n) * 40_000
    units[rng.integers(0, n, 50)] = 0.0  # multi-token chunks' zero intervals
    order = counted(units, 1000.0)
    ms = units / 1000.0
    assert order.percentiles(QS).tolist() == np.percentile(ms, QS).tolist()
    assert (order.min, order.max, order.size) == (float(ms.min()), float(ms.max()), n)
    assert summarize(ms, order=order) == summarize(ms)
