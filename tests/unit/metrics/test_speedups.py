"""The fast paths of the metrics give exactly what the general ones give: percentiles from
sorted samples (``percentiles_of_finite``, ``percentiles_of_sorted``: numpy's own arithmetic) and
from one partition (``OrderStatistics``),
Option B with one token per chunk, the per-request arrays vectorised across requests and the
fluid-rate search that evaluates only the undecided requests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench import draft
from otelbench.metrics import (
    ITL_SHAPE_PERCENTILES,
    FluidRate,
    Ragged,
    Summary,
    deadline_intervals,
    fluid_token_generation_rate,
    fluidity_indices,
    group_std,
    itl_shape,
    summarize,
    token_arrival_times,
)
from otelbench.metrics.effects import _linear_binning
from otelbench.metrics.fluidity import _layout
from otelbench.metrics.summary import (
    OrderStatistics,
    percentiles_of_finite,
    percentiles_of_sorted,
    type7_ranks,
)


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=200))
def test_percentiles_of_finite_equal_numpy(values: list[int]) -> None:
    a = np.array(values, dtype=np.float64) / 7.0
    before = a.copy()
    q = [*draft.PERCENTILES, 0.0, 25.0, 75.0, 100.0]
    got = percentiles_of_finite(a, q)
    assert got.tolist() == np.percentile(a, q, method="linear").tolist()
    assert a.tolist() == before.tolist()  # the caller's array is left as it is


def test_percentiles_of_finite_of_many_ties() -> None:
    a = np.repeat(np.array([3.0, 1.0, 2.0]), [5000, 3000, 2000])
    q = [50.0, 99.9]
    assert percentiles_of_finite(a, q).tolist() == np.percentile(a, q).tolist() == [2.5, 3.0]


def test_one_token_per_chunk_is_the_general_path() -> None:
    offsets = np.array([100.0, 150.0, 300.0, 40.0])
    bounds = np.array([0, 3, 3, 4])
    fast = token_arrival_times(offsets, np.ones(4, dtype=np.int64), bounds)
    general = token_arrival_times(offsets, np.array([1, 2, 1, 1]), bounds)  # np.repeat
    assert [g.tolist() for g in fast] == [[100.0, 150.0, 300.0], [], [40.0]]
    assert fast.bounds.tolist() == [0, 3, 3, 4]
    assert [g.tolist() for g in general] == [[100.0, 150.0, 150.0, 300.0], [], [40.0]]
    assert not np.shares_memory(fast.values, offsets)  # the caller's float array is not aliased


# --- percentiles from sorted samples (numpy's arithmetic, no selection pass) -------------------

QS = [*draft.PERCENTILES, 0.0, 1.0, 5.0, 25.0, 75.0, 100.0, 33.3, 99.99]


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_percentiles_of_sorted_equal_numpy_bit_for_bit(values: list[float]) -> None:
    a = np.array(values)
    ordered = np.sort(a)
    assert percentiles_of_sorted(ordered, QS).tolist() == np.percentile(a, QS).tolist()
    for q in (0.0, 50.0, 99.9, 100.0):  # a scalar q gives a 0-d array, as numpy's
        assert float(percentiles_of_sorted(ordered, q)) == float(np.percentile(a, q))


def test_percentiles_of_sorted_on_random_scales_and_sizes() -> None:
    rng = np.random.default_rng(7)
    for n in [1, 2, 3, 10, 999, 1000, 1001, 100_003]:
        for a in (
            rng.normal(size=n) * 1e-3,
            rng.gamma(2.0, 10.0, n).round(3),
            np.exp(rng.normal(size=n) * 20),
        ):
            assert percentiles_of_sorted(np.sort(a), QS).tolist() == np.percentile(a, QS).tolist()


def test_type7_ranks_clamp_at_the_last_sample() -> None:
    lower, upper, weight = type7_ranks(5, [0.0, 50.0, 99.9, 100.0])
    assert lower.tolist() == [0, 2, 3, 4]
    assert upper.tolist() == [1, 3, 4, 4]
    assert weight[0] == 0.0
    assert weight[3] == 0.0


@given(st.lists(st.integers(-1000, 1000), min_size=0, max_size=200))
def test_summarize_with_its_order_statistics_is_summarize(values: list[int]) -> None:
    a = np.array(values, dtype=np.float64) / 7.0
    assert summarize(a, order=OrderStatistics.of(a)) == summarize(a)


def test_summarize_rejects_order_statistics_of_other_samples() -> None:
    with pytest.raises(ValueError, match="order statistics of the samples"):
        summarize([1.0, 2.0], order=OrderStatistics.of([1.0]))


@given(st.lists(st.integers(0, 400), min_size=0, max_size=300))
def test_itl_shape_with_order_statistics_and_std_is_itl_shape(values: list[int]) -> None:
    x = np.array(values, dtype=np.float64) / 4.0
    order = OrderStatistics.of(x, ITL_SHAPE_PERCENTILES)
    assert itl_shape(x, order=order, std=float(x.std()) if x.size else None) == itl_shape(x)


# --- order statistics from one partition (numpy's percentiles, no sort) -------------------------


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300),
    st.lists(st.sampled_from(QS), min_size=1, max_size=4),
)
def test_order_statistics_equal_numpy_bit_for_bit(values: list[float], qs: list[float]) -> None:
    a = np.array(values)
    before = a.copy()
    order = OrderStatistics.of(a, qs)
    assert order.percentiles(qs).tolist() == np.percentile(a, qs).tolist()
    assert (order.min, order.max, order.size) == (float(a.min()), float(a.max()), a.size)
    assert sorted(order.values.tolist()) == sorted(values)  # a permutation of the samples
    assert a.tolist() == before.tolist()  # of a copy: the caller's array is left as it is


def test_order_statistics_on_random_scales_and_sizes() -> None:
    rng = np.random.default_rng(11)
    for n in [1, 2, 3, 10, 999, 1000, 1001, 100_003]:
        for a in (rng.normal(size=n) * 1e-3, rng.gamma(2.0, 10.0, n).round(3)):
            got = OrderStatistics.of(a, QS).percentiles(QS)
            assert got.tolist() == np.percentile(a, QS).tolist()


def test_order_statistics_refuse_a_percentile_they_were_not_made_for() -> None:
    order = OrderStatistics.of(np.arange(1000.0), [50.0])
    assert float(order.percentiles(50.0)) == 499.5
    assert float(order.percentiles(100.0)) == 999.0  # the largest sample is always selected
    with pytest.raises(ValueError, match="was not selected"):
        order.percentiles(90.0)


def test_order_statistics_reject_undefined_samples() -> None:
    with pytest.raises(ValueError, match="finite"):
        OrderStatistics.of([1.0, np.nan])
    empty = OrderStatistics.of([])
    assert empty.size == 0
    assert empty.largest(3).size == 0


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=300), st.integers(0, 320))
def test_largest_holds_at_least_the_m_largest(values: list[int], m: int) -> None:
    a = np.array(values, dtype=np.float64)
    top = OrderStatistics.of(a, [50.0, 90.0, 99.0]).largest(m)
    want = np.sort(a)[max(a.size - m, 0) :]
    assert top.size >= want.size
    # the m largest samples are the m largest of what it gives
    assert np.sort(top)[top.size - want.size :].tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_linear_binning_equals_the_plain_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(20, 2, 3000).round(), rng.gamma(2.0, 9.0, 3000), [400.0]])
    lo, bins = float(x.min()) - 1.5, 257
    width = (float(x.max()) + 1.5 - lo) / bins
    # the plain formula: the float floor clipped to the last bin, each weight added by bincount
    pos = (x - lo) / width
    left_at = np.minimum(np.floor(pos), bins - 1)
    frac = pos - left_at
    left = left_at.astype(np.int64)
    want = np.bincount(left, weights=1.0 - frac, minlength=bins + 1)
    want += np.bincount(left + 1, weights=frac, minlength=bins + 1)
    assert _linear_binning(x, lo, width, bins).tolist() == want.tolist()


# --- per-request arrays, vectorised across requests ---------------------------------------------

ragged_groups = st.lists(
    st.lists(st.integers(0, 10_000).map(lambda v: v / 8.0), min_size=0, max_size=12),
    min_size=1,
    max_size=30,
)


@given(ragged_groups)
def test_group_std_is_numpy_std_per_group(groups: list[list[float]]) -> None:
    r = Ragged.from_lengths([v for g in groups for v in g], [len(g) for g in groups])
    got = group_std(r)
    for i, g in enumerate(groups):
        if len(g) < 2:
            assert math.isnan(got[i])
        else:
            # the same two-pass arithmetic as numpy's std of the group
            assert got[i] == pytest.approx(float(np.std(g)), rel=1e-12, abs=1e-12)


@given(ragged_groups)
def test_deadline_intervals_are_per_request_diffs(groups: list[list[float]]) -> None:
    times = [sorted(g) for g in groups]
    r = Ragged.from_lengths([v for g in times for v in g], [len(g) for g in times])
    got = deadline_intervals(r)
    for i, g in enumerate(times):
        want = [g[0], *np.diff(g).tolist()] if g else []
        assert got[i].tolist() == want


# --- the fluid-rate search evaluates only the undecided requests -------------------------------


def _plain_rate(
    r: Ragged, dp: np.ndarray, min_fluidity: float, request_fraction: float, precision_s: float
) -> FluidRate | None:
    """Etalon §4.2's bisection written plainly: every request evaluated at every deadline."""
    keep = r.lengths() > 0
    r, dp = r.select(keep), dp[keep]

    def fraction(dd: float) -> float:
        return float(np.mean(fluidity_indices(r, dp, dd) >= min_fluidity))

    hi = max(float(r.values.max()), precision_s)
    if fraction(hi) < request_fraction:
        return None
    lo = 0.0
    while hi - lo > precision_s:
        mid = 0.5 * (lo + hi)
        if fraction(mid) >= request_fraction:
            hi = mid
        else:
            lo = mid
    return FluidRate(
        hi, 1.0 / hi, precision_s, min_fluidity, request_fraction, fraction(hi), len(r)
    )


@pytest.mark.parametrize("seed", range(6))
def test_fluid_rate_equals_the_plain_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    lengths = rng.integers(0, 40, n)  # empty and one-interval requests included
    values = rng.gamma(2.0, 0.004 * (1 + seed % 3), int(lengths.sum()))
    values[rng.random(values.size) < 0.002] *= 50  # stalls
    r = Ragged.from_lengths(values, lengths)
    dp = rng.uniform(0.05, 0.5, n)
    for min_fluidity, fraction in [(0.9, 0.99), (0.8, 0.9), (0.95, 0.5), (1.0, 0.3)]:
        want = _plain_rate(r, dp, min_fluidity, fraction, 1e-5)
        got = fluid_token_generation_rate(
            r, dp, min_fluidity=min_fluidity, request_fraction=fraction, precision_s=1e-5
        )
        assert got == want
        # indices already computed at some deadlines (the report's presets) decide requests
        evaluated = {dd: fluidity_indices(r, dp, dd) for dd in (0.002, 0.01, 0.025, 0.1)}
        got = fluid_token_generation_rate(
            r,
            dp,
            min_fluidity=min_fluidity,
            request_fraction=fraction,
            precision_s=1e-5,
            evaluated=evaluated,
        )
        assert got == want


def test_indices_of_kept_requests_equal_the_full_evaluation() -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 25, 200)
    r = Ragged.from_lengths(rng.gamma(2.0, 0.01, int(lengths.sum())), lengths)
    dp = rng.uniform(0.01, 0.3, 200)
    r.values[7] = np.nan  # that request's index is NaN, kept or not
    keep = rng.random(200) < 0.2
    keep[np.searchsorted(r.bounds, 7, side="right") - 1] = True
    full = fluidity_indices(r, dp, 0.02)
    part = _layout(r).indices(dp, 0.02, keep)
    assert np.array_equal(part[keep], full[keep], equal_nan=True)
    assert np.isnan(part[~keep]).all()
    assert np.isnan(full).sum() == (lengths == 0).sum() + 1


@pytest.mark.parametrize("k", [1, 2, 7, 64])
@pytest.mark.parametrize("n", [1, 2, 3, 1000, 1_000_003])
def test_summary_of_copies_of_an_integer_is_that_integer(n: int, k: int) -> None:
    # the report writes tokens_per_chunk out this way when every chunk holds k tokens
    x = float(k)
    assert summarize(np.full(n, x)) == Summary(n, x, 0.0, x, x, x, x, x, x, x)
