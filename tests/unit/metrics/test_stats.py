"""Percentile bootstrap confidence intervals over independent runs (draft 6.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.metrics import bootstrap_ci


def test_three_runs_by_hand() -> None:
    # Runs 1, 2, 3: the 27 equally likely resamples have means 1 (1 way), 4/3 (3), 5/3 (6),
    # 2 (7), 7/3 (6), 8/3 (3), 3 (1); cumulative 1/27 = 3.7 %, 14.8 %, 37 %, 63 %, 85 %, 96.3 %.
    # 80 % interval: the 10th percentile falls in the 4/3 block, the 90th in the 8/3 block;
    # 95 % interval: the 2.5th percentile falls in the block of 1, the 97.5th in the block of 3.
    ci80 = bootstrap_ci([1.0, 2.0, 3.0], confidence=0.8, resamples=20_000, seed=11)
    assert ci80.estimate == 2.0
    assert (ci80.low, ci80.high) == pytest.approx((4 / 3, 8 / 3))
    ci95 = bootstrap_ci([3.0, 1.0, 2.0], confidence=0.95, resamples=20_000, seed=12)
    assert (ci95.low, ci95.high) == pytest.approx((1.0, 3.0))
    assert (ci95.confidence, ci95.n_runs, ci95.resamples, ci95.seed) == (0.95, 3, 20_000, 12)


def test_other_statistics() -> None:
    ci = bootstrap_ci([5.0, 1.0, 3.0, 100.0], statistic=lambda x: float(np.median(x)))
    assert ci.estimate == 4.0
    assert 1.0 <= ci.low <= ci.high <= 100.0


def test_fewer_than_three_runs_is_a_config_error() -> None:
    assert draft.COMPARISON_MIN_RUNS == 3
    with pytest.raises(ConfigError, match="at least 3 independent runs, got 2"):
        bootstrap_ci([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci([1.0, 2.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0, 2.0, 3.0], confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([1.0, 2.0, 3.0], resamples=0)
    with pytest.raises(ValueError, match="1-D"):
        bootstrap_ci([[1.0, 2.0, 3.0]])


runs = st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=12)


@settings(max_examples=30)
@given(runs, st.integers(0, 2**32 - 1))
def test_mean_interval_is_seeded_and_within_the_runs(values: list[float], seed: int) -> None:
    a = bootstrap_ci(values, resamples=500, seed=seed)
    b = bootstrap_ci(values, resamples=500, seed=seed)
    assert a == b
    assert min(values) - 1e-6 <= a.low <= a.high <= max(values) + 1e-6


@settings(max_examples=30)
@given(runs, st.floats(-1e3, 1e3), st.integers(0, 1000))
def test_mean_interval_shifts_with_the_data(values: list[float], shift: float, seed: int) -> None:
    base = bootstrap_ci(values, resamples=300, seed=seed)
    moved = bootstrap_ci([v + shift for v in values], resamples=300, seed=seed)
    assert moved.low == pytest.approx(base.low + shift, abs=1e-6)
    assert moved.high == pytest.approx(base.high + shift, abs=1e-6)


@settings(max_examples=20)
@given(st.integers(0, 1000))
def test_wider_confidence_gives_a_wider_interval(seed: int) -> None:
    values = [10.0, 12.0, 9.0, 14.0, 11.0]
    narrow = bootstrap_ci(values, confidence=0.5, resamples=2000, seed=seed)
    wide = bootstrap_ci(values, confidence=0.99, resamples=2000, seed=seed)
    assert wide.low <= narrow.low <= narrow.high <= wide.high
