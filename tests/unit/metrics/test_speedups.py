"""The fast paths of the metrics give exactly what the general ones give: percentiles from a
sorted copy (``percentiles_of_finite``) and Option B with one token per chunk."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import PERCENTILES, token_arrival_times
from otelbench.metrics.summary import percentiles_of_finite


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=200))
def test_percentiles_of_finite_equal_numpy(values: list[int]) -> None:
    a = np.array(values, dtype=np.float64) / 7.0
    before = a.copy()
    q = [*PERCENTILES, 0.0, 25.0, 75.0, 100.0]
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
