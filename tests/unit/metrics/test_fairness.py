"""Scheduling fairness (draft 5.6.4): Jain's index, latency inflation, starvation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import (
    jain_fairness_index,
    latency_inflation,
    scheduling_fairness,
    starvation_rate,
)


def test_jain_index_by_hand() -> None:
    # (1 + 2 + 3 + 4)² / (4 · (1 + 4 + 9 + 16)) = 100 / 120
    assert jain_fairness_index([1.0, 2.0, 3.0, 4.0]) == pytest.approx(100 / 120)
    # one of n gets everything: 1/n
    assert jain_fairness_index([0.0, 0.0, 5.0, 0.0, 0.0]) == pytest.approx(1 / 5)
    assert jain_fairness_index([3.0, 3.0]) == 1.0
    assert jain_fairness_index([0.0, 0.0]) == 1.0  # all equal


def test_jain_index_rejects_bad_input() -> None:
    for bad in ([], [1.0, -1.0], [1.0, float("nan")], [[1.0]]):
        with pytest.raises(ValueError, match="Jain"):
            jain_fairness_index(bad)


@given(st.lists(st.floats(0.0, 1e12), min_size=1, max_size=50), st.floats(1e-6, 1e6))
def test_jain_index_bounds_and_scale_invariance(x: list[float], scale: float) -> None:
    j = jain_fairness_index(x)
    assert 1 / len(x) - 1e-12 <= j <= 1.0 + 1e-12
    if max(x) > 0:
        assert jain_fairness_index([v * scale for v in x]) == pytest.approx(j, rel=1e-9)


@given(st.floats(1e-300, 1e300), st.integers(1, 40))
def test_jain_index_of_equal_values_is_one(v: float, n: int) -> None:
    assert jain_fairness_index([v] * n) == pytest.approx(1.0)


def test_inflation_and_starvation_by_hand() -> None:
    assert latency_inflation([3.0, 5.0, 100.0], [1.0, 2.0, 3.0]) == 2.5  # median 5 / median 2
    assert latency_inflation([3.0, 5.0, 100.0], [1.0, 2.0, 3.0], q=0) == 3.0
    assert latency_inflation([1.0], []) is None
    assert latency_inflation([1.0], [0.0]) is None
    # median 2; waiting longer than 10: only 10.5 (10 itself is not longer)
    assert starvation_rate([1.0, 2.0, 2.0, 10.0, 10.5]) == pytest.approx(1 / 5)
    assert starvation_rate([1.0, 2.0, 2.0, 10.0, 10.5], factor=2.0) == pytest.approx(2 / 5)
    assert starvation_rate([]) is None


@given(st.lists(st.floats(0.0, 1e6), min_size=1, max_size=60))
def test_starvation_rate_is_below_one_half(wait: list[float]) -> None:
    # more than half of the requests cannot be above 5 × the median (which half of them reach)
    rate = starvation_rate(wait)
    assert rate is not None
    assert 0.0 <= rate < 0.5


def test_scheduling_fairness_by_hand() -> None:
    # isolated medians: short 100 ms, long 400 ms; mixed: short 100/200/300 (+ one 1100),
    # long 400/800.
    mixed_ttft = [0.1, 0.2, 0.3, 1.1, 0.4, 0.8, float("nan")]
    mixed_class = ["short", "short", "short", "short", "long", "long", "long"]
    iso_ttft = [0.09, 0.1, 0.11, 0.4, 0.4]
    iso_class = ["short", "short", "short", "long", "long"]
    f = scheduling_fairness(mixed_ttft, mixed_class, iso_ttft, iso_class)
    assert list(f.classes) == ["long", "short"]
    short, long_ = f.classes["short"], f.classes["long"]
    assert (short.count, short.isolated_count, long_.count) == (4, 3, 2)
    assert short.ttft_p50 == pytest.approx(0.25)
    assert short.inflation_p50 == pytest.approx(2.5)  # 0.25 / 0.1
    assert long_.inflation_p50 == pytest.approx(1.5)  # 0.6 / 0.4
    # short median 0.25: 1.1 > 1.25? no → 0; long: nothing above 3.0
    assert short.starvation_rate == 0.0
    # normalized latencies 1, 2, 3, 11 (short) and 1, 2 (long):
    # (20)² / (6 · (1 + 4 + 9 + 121 + 1 + 4)) = 400 / 840
    assert f.jain_index == pytest.approx(400 / 840)
    assert f.normalized_requests == 6


def test_scheduling_fairness_without_a_baseline_has_no_jain_index() -> None:
    f = scheduling_fairness([1.0, 2.0], ["a", "a"], [], [])
    assert f.jain_index is None
    assert f.classes["a"].inflation_p50 is None
    with pytest.raises(ValueError, match="class label"):
        scheduling_fairness([1.0], ["a", "b"], [], [])


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=20), st.floats(1.0, 10.0))
def test_uniform_slowdown_is_perfectly_fair(iso: list[float], factor: float) -> None:
    # every request slowed down by the same factor from its class median: J = 1, inflation = factor
    median = float(np.median(iso))
    mixed = [median * factor] * 5
    f = scheduling_fairness(mixed, ["c"] * 5, iso, ["c"] * len(iso))
    assert f.jain_index == pytest.approx(1.0)
    assert f.classes["c"].inflation_p50 == pytest.approx(factor)
