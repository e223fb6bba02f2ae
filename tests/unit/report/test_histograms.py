"""The HTML's histograms from order statistics give numpy's counts and percentiles exactly: bin
counts on linear edges by arithmetic and on log edges by a binary search (``numpy.histogram``'s
bins), the pooled P99 without merging the series; from counted order statistics
(``CountedOrderStatistics``: each distinct value weighted by its count) the same as from the
samples themselves, and the report's ITL is counted when it is in whole µs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import OrderStatistics, summarize
from otelbench.metrics.summary import CountedOrderStatistics
from otelbench.report.plot_data import (
    HISTOGRAM_PERCENTILES,
    _bin_counts,
    _histograms,
    _order_of_finite,
    _pooled_percentile,
    plot_data,
)
from otelbench.report.sections import (
    client_itl_ms,
    client_itl_order,
    client_itl_summary,
    server_itl_ms,
    server_itl_order,
    server_itl_summary,
)
from tests.unit.report.test_sections import MS, Req, run_data

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
    empty = _order_of_finite([])
    assert _histograms(empty, empty, allow_log=False) is None
    out = _histograms(_order_of_finite([2.0, 1.0]), empty, allow_log=False)
    assert out is not None
    assert out["server"] is None
    assert out["client"] is not None
    assert out["client"]["count"] == 2


@pytest.mark.parametrize("seed", range(3))
def test_itl_like_histogram_caps_the_tail_as_numpy_would(seed: int) -> None:
    rng = np.random.default_rng(seed)
    client = rng.gamma(2.0, 8.0, 20_000).round(3)
    server = np.concatenate([rng.gamma(2.0, 8.0, 20_000), [5000.0]])  # a stall far out
    series = {"client": _order_of_finite(client), "server": _order_of_finite(server)}
    out = _histograms(**series, allow_log=False)
    assert out is not None
    pooled = np.concatenate([client, server])
    p99 = float(np.percentile(pooled, 99))
    edges = np.linspace(0.0, 1.5 * p99, 41)
    assert out["edges"] == [round(float(e), 4) for e in edges]
    for name, v in (("client", client), ("server", server)):
        want = np.histogram(v, bins=40, range=(0.0, float(edges[-1])))[0]
        assert out[name]["counts"] == want.tolist()
        assert out[name]["overflow"] == int(np.count_nonzero(v > edges[-1]))


# --- counted order statistics: each distinct value weighted by its count ------------------------

# whole µs in a span of less than 4 per sample (so they are counted), and in ms
dense_us = st.integers(1, 300).flatmap(
    lambda n: st.lists(st.integers(-40, 4 * n - 41), min_size=n, max_size=n)
)


def counted_ms(units: list[int]) -> CountedOrderStatistics:
    order = CountedOrderStatistics.of_integers(np.array(units, dtype=np.float64), 1000.0)
    assert order is not None
    return order


@given(dense_us, st.integers(1, 60), st.floats(0.05, 1.0))
def test_counted_bin_counts_equal_numpy_on_linear_edges(
    units: list[int], bins: int, cap_fraction: float
) -> None:
    a = np.array(units) / 1000.0
    values, counts = counted_ms(units).samples()
    start = min(float(a.min()), 0.0)
    edges = np.linspace(start, start + cap_fraction * (float(a.max()) - start) + 1e-3, bins + 1)
    got, overflow = _bin_counts(values, edges, linear=True, counts=counts)
    want = np.histogram(a, bins=bins, range=(float(edges[0]), float(edges[-1])))[0]
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


@given(dense_us.map(lambda v: [x + 41 for x in v]), st.integers(1, 60))
def test_counted_bin_counts_equal_numpy_on_log_edges(units: list[int], bins: int) -> None:
    a = np.array(units) / 1000.0  # positive: from 1 µs on
    values, counts = counted_ms(units).samples()
    lo = 0.5 * float(a.min())
    edges = np.geomspace(lo, max(0.9 * float(a.max()), 50 * lo), bins + 1)
    got, overflow = _bin_counts(values, edges, linear=False, counts=counts)
    assert got.tolist() == np.histogram(a[a <= edges[-1]], bins=edges)[0].tolist()
    assert overflow == int(np.count_nonzero(a > edges[-1]))


@given(
    st.lists(dense_us, min_size=1, max_size=3),
    st.sampled_from([0.0, 50.0, 99.0, 99.9, 100.0]),
    st.booleans(),
)
def test_pooled_percentile_of_counted_and_mixed_series(
    series: list[list[int]], q: float, select_first: bool
) -> None:
    arrays = [np.array(v) / 1000.0 for v in series]
    orders: list[OrderStatistics | CountedOrderStatistics] = [counted_ms(v) for v in series]
    if select_first:
        orders[0] = OrderStatistics.of(arrays[0], HISTOGRAM_PERCENTILES)
    assert _pooled_percentile(orders, q) == float(np.percentile(np.concatenate(arrays), q))


@given(dense_us, dense_us, st.booleans())
def test_histograms_of_counted_series_are_those_of_the_samples(
    client: list[int], server: list[int], allow_log: bool
) -> None:
    counted = {"client": counted_ms(client), "server": counted_ms(server)}
    samples = {
        "client": _order_of_finite(np.array(client) / 1000.0),
        "server": _order_of_finite(np.array(server) / 1000.0),
    }
    assert _histograms(**counted, allow_log=allow_log) == _histograms(
        **samples, allow_log=allow_log
    )


def test_a_far_stall_caps_the_counted_histogram_as_numpy_would() -> None:
    rng = np.random.default_rng(5)
    client = rng.integers(5000, 40_000, 20_000)
    # a 200 ms stall beyond 4 x P99, within 4 per sample of the rest
    server = np.concatenate([rng.integers(5000, 40_000, 50_000), [200_000]])
    out = _histograms(counted_ms(client.tolist()), counted_ms(server.tolist()), allow_log=False)
    assert out is not None
    pooled = np.concatenate([client, server]) / 1000.0
    edges = np.linspace(0.0, 1.5 * float(np.percentile(pooled, 99)), 41)
    assert out["edges"] == [round(float(e), 4) for e in edges]
    for name, v in (("client", client / 1000.0), ("server", server / 1000.0)):
        assert out[name]["counts"] == np.histogram(v, bins=40, range=(0.0, edges[-1]))[0].tolist()
        assert out[name]["overflow"] == int(np.count_nonzero(v > edges[-1]))
    assert out["server"]["overflow"] == 1


def _itl_run(step_us: int) -> list[Req]:
    """20 requests of 30 tokens, one chunk each ``step_us`` apart plus a per-request jitter of
    0 to 19 µs (whole µs): ITLs within a span far narrower than 4 per sample."""
    rng = np.random.default_rng(step_us)
    reqs = []
    for _ in range(20):
        chunk_us = np.cumsum(step_us + rng.integers(0, 20, 30))
        reqs.append(
            Req(
                [(int(t), 1) for t in chunk_us],
                server_offsets_us=[int(t) - 7 for t in chunk_us],
            )
        )
    return reqs


def test_the_reports_whole_us_itl_is_counted_with_summarizes_numbers() -> None:
    data = run_data(_itl_run(20 * MS))
    for order, summary, ms in (
        (client_itl_order(data), client_itl_summary(data), client_itl_ms(data)),
        (server_itl_order(data), server_itl_summary(data), server_itl_ms(data)),
    ):
        assert isinstance(order, CountedOrderStatistics)
        assert summary == summarize(ms)  # its own selection: OrderStatistics.of(ms)
    assert plot_data(data)["itl_histogram_ms"] == _histograms(
        _order_of_finite(client_itl_ms(data)),
        _order_of_finite(server_itl_ms(data)),
        allow_log=False,
    )


def test_the_reports_itl_is_selected_when_a_stall_widens_its_span() -> None:
    reqs = _itl_run(20 * MS)
    reqs[0].chunks.append((reqs[0].chunks[-1][0] + 5_000 * MS, 1))  # a 5 s stall
    data = run_data(reqs)
    order = client_itl_order(data)
    assert isinstance(order, OrderStatistics)
    assert client_itl_summary(data) == summarize(client_itl_ms(data))
    assert isinstance(server_itl_order(data), CountedOrderStatistics)
