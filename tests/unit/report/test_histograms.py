"""The HTML's histograms from sorted samples give numpy's counts and percentiles exactly: bin
counts by a binary search per edge (``numpy.histogram``'s bins), the pooled P99 without merging
the series."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.report.html import (
    _bin_counts,
    _finite_of_sorted,
    _histograms,
    _pooled_percentile,
    _sorted_finite,
)

samples = st.lists(st.integers(-50, 2000).map(lambda v: v / 4.0), min_size=1, max_size=300)


@given(samples, st.integers(1, 60))
def test_bin_counts_equal_numpy_on_linear_edges(values: list[float], bins: int) -> None:
    a = np.array(values)
    start, cap = min(float(a.min()), 0.0), float(np.percentile(a, 90)) + 0.25
    edges = np.linspace(start, cap, bins + 1)
    counts, overflow = _bin_counts(np.sort(a), edges)
    want = np.histogram(a, bins=bins, range=(float(edges[0]), float(edges[-1])))[0]
    assert counts.tolist() == want.tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


@given(samples.map(lambda v: [abs(x) + 0.25 for x in v]), st.integers(1, 60))
def test_bin_counts_equal_numpy_on_log_edges(values: list[float], bins: int) -> None:
    a = np.array([*values, 0.25, 50.0])  # a log axis spans max/min >= 50
    edges = np.geomspace(float(a.min()), float(a.max()), bins + 1)
    counts, overflow = _bin_counts(np.sort(a), edges)
    assert counts.tolist() == np.histogram(a[a <= edges[-1]], bins=edges)[0].tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


def test_samples_on_the_edges_go_right_and_the_last_edge_closes() -> None:
    counts, overflow = _bin_counts(
        np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.5]), np.array([0.0, 1.0, 2.0, 3.0])
    )
    assert counts.tolist() == [1, 2, 2]
    assert overflow == 1


@given(st.lists(samples, min_size=1, max_size=3), st.sampled_from([0.0, 50.0, 99.0, 99.9, 100.0]))
def test_pooled_percentile_is_numpy_of_the_concatenation(
    series: list[list[float]], q: float
) -> None:
    arrays = [np.sort(np.array(v)) for v in series]
    assert _pooled_percentile(arrays, q) == float(np.percentile(np.concatenate(arrays), q))


def test_finite_of_sorted_drops_infinities_and_nan() -> None:
    a = np.sort(np.array([np.nan, 3.0, -np.inf, 1.0, np.inf, -np.inf, 2.0]))
    assert _finite_of_sorted(a).tolist() == [1.0, 2.0, 3.0]
    assert _finite_of_sorted(np.array([np.nan])).size == 0
    assert _finite_of_sorted(np.array([])).size == 0
    assert _sorted_finite([3.0, np.nan, 1.0]).tolist() == [1.0, 3.0]


def test_histograms_of_empty_series() -> None:
    assert _histograms({"a": np.empty(0)}, allow_log=False) is None
    out = _histograms({"a": np.array([1.0, 2.0]), "b": np.empty(0)}, allow_log=False)
    assert out is not None
    assert out["b"] is None
    assert out["a"]["count"] == 2


@pytest.mark.parametrize("seed", range(3))
def test_itl_like_histogram_caps_the_tail_as_numpy_would(seed: int) -> None:
    rng = np.random.default_rng(seed)
    client = rng.gamma(2.0, 8.0, 20_000).round(3)
    server = np.concatenate([rng.gamma(2.0, 8.0, 20_000), [5000.0]])  # a stall far out
    out = _histograms({"client": np.sort(client), "server": np.sort(server)}, allow_log=False)
    assert out is not None
    pooled = np.concatenate([client, server])
    p99 = float(np.percentile(pooled, 99))
    edges = np.linspace(0.0, 1.5 * p99, 41)
    assert out["edges"] == [round(float(e), 4) for e in edges]
    for name, v in (("client", client), ("server", server)):
        want = np.histogram(v, bins=40, range=(0.0, float(edges[-1])))[0]
        assert out[name]["counts"] == want.tolist()
        assert out[name]["overflow"] == int(np.count_nonzero(v > edges[-1]))
