"""Distribution summary: type-7 percentiles checked against hand interpolation (draft 5.1.4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench import draft
from otelbench.metrics import Summary, percentile, summarize


def hand_percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks, written out without numpy."""
    x = sorted(values)
    h = (len(x) - 1) * q / 100.0
    i = math.floor(h)
    if i + 1 >= len(x):
        return x[-1]
    return x[i] + (h - i) * (x[i + 1] - x[i])


def test_percentiles_of_one_to_ten_by_hand() -> None:
    s = summarize([7.0, 1.0, 10.0, 3.0, 2.0, 9.0, 4.0, 6.0, 5.0, 8.0])
    # n = 10: h = 9q/100.  P50: h=4.5 → 5 + .5 = 5.5;  P90: h=8.1 → 9.1;  P95: h=8.55 → 9.55;
    # P99: h=8.91 → 9.91;  P99.9: h=8.991 → 9.991.
    assert s.count == 10
    assert s.p50 == pytest.approx(5.5)
    assert s.p90 == pytest.approx(9.1)
    assert s.p95 == pytest.approx(9.55)
    assert s.p99 == pytest.approx(9.91)
    assert s.p99_9 == pytest.approx(9.991)
    assert s.mean == pytest.approx(5.5)
    assert s.min == 1.0
    assert s.max == 10.0
    # population std of 1..10: sqrt((n^2 - 1) / 12) = sqrt(99/12)
    assert s.std == pytest.approx(math.sqrt(99 / 12))


def test_p99_9_lands_on_a_rank_with_1001_samples() -> None:
    values = np.arange(1001, dtype=np.float64)[::-1] * 2.0  # 0, 2, …, 2000, shuffled order
    s = summarize(values)
    # h = 1000 * 0.999 = 999 exactly → x[999] = 1998; P99: h = 990 → 1980.
    assert s.p99_9 == pytest.approx(1998.0)
    assert s.p99 == pytest.approx(1980.0)
    assert s.p50 == pytest.approx(1000.0)


def test_skewed_sample_tail_percentiles() -> None:
    values = [10.0, 11.0, 12.0, 13.0, 500.0]
    s = summarize(values)
    # n = 5: h = 4q/100.  P90: h=3.6 → 13 + .6*487 = 305.2;  P99: h=3.96 → 13 + .96*487 = 480.52
    assert s.p90 == pytest.approx(305.2)
    assert s.p99 == pytest.approx(480.52)
    assert s.p99_9 == pytest.approx(13.0 + 0.996 * 487.0)


def test_empty_sample_is_count_zero_and_nulls() -> None:
    s = summarize([])
    assert s == Summary(0, None, None, None, None, None, None, None, None, None)
    assert s.to_dict() == {
        "count": 0,
        "mean": None,
        "std": None,
        "min": None,
        "max": None,
        "p50": None,
        "p90": None,
        "p95": None,
        "p99": None,
        "p99_9": None,
    }
    assert percentile([], 50) is None


def test_one_sample_is_that_value_everywhere_with_std_zero() -> None:
    s = summarize([42.5])
    assert s.to_dict() == {
        "count": 1,
        "mean": 42.5,
        "std": 0.0,
        "min": 42.5,
        "max": 42.5,
        "p50": 42.5,
        "p90": 42.5,
        "p95": 42.5,
        "p99": 42.5,
        "p99_9": 42.5,
    }


def test_summary_values_are_python_numbers() -> None:
    d = summarize(np.array([1, 2, 3], dtype=np.int64)).to_dict()
    assert type(d["count"]) is int
    assert all(type(d[k]) is float for k in d if k != "count")


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [float("inf")]])
def test_non_finite_samples_are_rejected(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="finite"):
        summarize(bad)


def test_percentile_outside_range_is_rejected() -> None:
    with pytest.raises(ValueError, match="within"):
        percentile([1.0], 100.5)


def test_two_dimensional_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="1-D"):
        summarize([[1.0, 2.0]])


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=200,
    )
)
def test_percentiles_match_hand_interpolation(values: list[float]) -> None:
    s = summarize(values)
    got = [s.p50, s.p90, s.p95, s.p99, s.p99_9]
    for q, value in zip(draft.PERCENTILES, got, strict=True):
        assert value == pytest.approx(hand_percentile(values, q), rel=1e-9, abs=1e-6)
    assert s.min is not None
    assert s.max is not None
    assert s.p50 is not None
    assert s.min <= s.p50 <= s.max
