"""The HTML's histograms from order statistics give numpy's counts and percentiles exactly: bin
counts on linear edges by arithmetic and on log edges by a binary search (``numpy.histogram``'s
bins), the pooled P99 without merging the series."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import OrderStatistics
from otelbench.report.html import (
    HISTOGRAM_PERCENTILES,
    _bin_counts,
    _histograms,
    _order_of_finite,
    _pooled_percentile,
)

samples = st.lists(st.integers(-50, 2000).map(lambda v: v / 4.0), min_size=1, max_size=300)


@given(samples, st.integers(1, 60))
def test_bin_counts_equal_numpy_on_linear_edges(values: list[float], bins: int) -> None:
    a = np.array(values)
    start, cap = min(float(a.min()), 0.0), float(np.percentile(a, 90)) + 0.25
    edges = np.linspace(start, cap, bins + 1)
    counts, overflow = _bin_counts(a, edges, linear=True)
    want = np.histogram(a, bins=bins, range=(float(edges[0]), float(edges[-1])))[0]
    assert counts.tolist() == want.tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


@given(samples.map(lambda v: [abs(x) + 0.25 for x in v]), st.integers(1, 60))
def test_bin_counts_equal_numpy_on_log_edges(values: list[float], bins: int) -> None:
    a = np.array([*values, 0.25, 50.0])  # a log axis spans max/min >= 50
    edges = np.geomspace(float(a.min()), float(a.max()), bins + 1)
    counts, overflow = _bin_counts(a, edges, linear=False)
    assert counts.tolist() == np.histogram(a[a <= edges[-1]], bins=edges)[0].tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


def test_samples_on_the_edges_go_right_and_the_last_edge_closes() -> None:
    for linear in (True, False):
        counts, overflow = _bin_counts(
            np.array([3.5, 0.0, 1.0, 2.0, 1.0, 3.0]), np.array([0.0, 1.0, 2.0, 3.0]), linear=linear
        )
        assert counts.tolist() == [1, 2, 2]
        assert overflow == 1


@given(st.lists(samples, min_size=1, max_size=3), st.sampled_from([0.0, 50.0, 99.0, 99.9, 100.0]))
def test_pooled_percentile_is_numpy_of_the_concatenation(
    series: list[list[float]], q: float
) -> None:
    arrays = [np.array(v) for v in series]
    orders = [OrderStatistics.of(a, HISTOGRAM_PERCENTILES) for a in arrays]
    assert _pooled_percentile(orders, q) == float(np.percentile(np.concatenate(arrays), q))


def test_histogram_series_drop_infinities_and_nan() -> None:
    order = _order_of_finite([np.nan, 3.0, -np.inf, 1.0, np.inf, -np.inf, 2.0])
    assert sorted(order.values.tolist()) == [1.0, 2.0, 3.0]
    assert _order_of_finite([np.nan]).size == 0
    assert _order_of_finite([]).size == 0


def test_histograms_of_empty_series() -> None:
    assert _histograms({"a": _order_of_finite([])}, allow_log=False) is None
    out = _histograms(
        {"a": _order_of_finite([2.0, 1.0]), "b": _order_of_finite([])}, allow_log=False
    )
    assert out is not None
    assert out["b"] is None
    assert out["a"]["count"] == 2


@pytest.mark.parametrize("seed", range(3))
def test_itl_like_histogram_caps_the_tail_as_numpy_would(seed: int) -> None:
    rng = np.random.default_rng(seed)
    client = rng.gamma(2.0, 8.0, 20_000).round(3)
    server = np.concatenate([rng.gamma(2.0, 8.0, 20_000), [5000.0]])  # a stall far out
    series = {"client": _order_of_finite(client), "server": _order_of_finite(server)}
    out = _histograms(series, allow_log=False)
    assert out is not None
    pooled = np.concatenate([client, server])
    p99 = float(np.percentile(pooled, 99))
    edges = np.linspace(0.0, 1.5 * p99, 41)
    assert out["edges"] == [round(float(e), 4) for e in edges]
    for name, v in (("client", client), ("server", server)):
        want = np.histogram(v, bins=40, range=(0.0, float(edges[-1])))[0]
        assert out[name]["counts"] == want.tolist()
        assert out[name]["overflow"] == int(np.count_nonzero(v > edges[-1]))
