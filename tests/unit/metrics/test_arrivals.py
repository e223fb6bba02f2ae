"""The fit of sent arrival gaps to a Poisson process (draft 5.1.2.2): the coefficient of
variation and the Kolmogorov–Smirnov test against the exponential at the declared rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.loadgen.arrivals import arrival_schedule
from otelbench.metrics.arrivals import exponential_fit, kolmogorov_sf


@pytest.mark.parametrize(
    ("x", "p"),
    [(0.0, 1.0), (0.5, 0.9639), (1.0, 0.2700), (1.2238, 0.1), (1.3581, 0.05), (1.6276, 0.01)],
)
def test_the_kolmogorov_distribution_at_its_tabulated_points(x: float, p: float) -> None:
    assert kolmogorov_sf(x) == pytest.approx(p, abs=1e-4)


def ns(offsets_s: object) -> np.ndarray:
    return (np.asarray(offsets_s, dtype=np.float64) * 1e9).astype(np.int64)


def test_uniform_gaps_are_not_exponential() -> None:
    """Every gap 1/λ: the empirical CDF jumps 0 → 1 where the exponential's is 1 − 1/e."""
    fit = exponential_fit(ns(np.arange(1000) / 8.0), 8.0)
    assert fit is not None
    assert (fit.gaps, fit.rate_per_s, fit.cv) == (999, pytest.approx(8.0), pytest.approx(0.0))
    assert fit.ks_statistic == pytest.approx(1 - math.exp(-1))
    assert fit.ks_p_value < 1e-100


@pytest.mark.parametrize(("mode", "params", "poisson"), [
    ("poisson", {}, True), ("bursty", {"cv": 1.0}, True), ("bursty", {"cv": 3.0}, False),
    ("uniform", {}, False),
])  # fmt: skip
def test_otelbench_s_own_schedules_by_their_gaps(
    mode: str, params: dict[str, float], poisson: bool
) -> None:
    """1,000 requests at 200 req/s, the size of a draft P99 run: gamma gaps of coefficient of
    variation 1 are exponential, whatever the mode is called."""
    fit = exponential_fit(
        ns(arrival_schedule(mode, rate=200.0, n=1000, seed=3, params=params)), 200.0
    )
    assert fit is not None
    within = abs(fit.cv - 1.0) <= fit.cv_tolerance and fit.ks_p_value >= 0.01
    assert within is poisson, fit


def test_the_gaps_at_another_rate_are_not_those_of_the_declared_one() -> None:
    """Poisson gaps at 100 req/s declared as 200 req/s: the KS test sees the rate."""
    fit = exponential_fit(ns(arrival_schedule("poisson", rate=100.0, n=1000, seed=3)), 200.0)
    assert fit is not None
    assert fit.ks_p_value < 1e-6


def test_too_few_sends_or_no_rate_give_no_fit() -> None:
    assert exponential_fit(ns([0.0, 1.0]), 2.0) is None
    assert exponential_fit(ns([0.0, 1.0, 2.5]), 0.0) is None


@settings(deadline=None, max_examples=50, derandomize=True)
@given(st.integers(min_value=0, max_value=2**31), st.floats(min_value=0.5, max_value=500.0))
def test_poisson_sends_are_rarely_rejected(seed: int, rate: float) -> None:
    """Exponential gaps at any rate and seed keep a KS p-value far from zero and the cv within
    1.5 times its tolerance (4.5 standard errors); derandomized, so the examples are the same
    every run (a test at p ≥ 1e-6 over 50 seeds would otherwise fail once in 20,000 runs)."""
    fit = exponential_fit(ns(arrival_schedule("poisson", rate=rate, n=2000, seed=seed)), rate)
    assert fit is not None
    assert fit.ks_p_value >= 1e-6, fit
    assert abs(fit.cv - 1.0) <= 1.5 * fit.cv_tolerance, fit


def test_gaps_known_to_1_ms_are_judged_within_it() -> None:
    """4.2.1's 1 ms: sends each up to 1 ms late (here about 0.2 ms, capped at 1 ms) are still a
    Poisson sender's, and the band leaves uniform and bursty schedules rejected."""
    sends = np.asarray(arrival_schedule("poisson", rate=200.0, n=10_000, seed=3))
    late = np.minimum(np.random.default_rng(1).exponential(0.0002, sends.size), 0.001)
    exact = exponential_fit(ns(sends + late), 200.0)
    banded = exponential_fit(ns(sends + late), 200.0, tolerance_s=0.001)
    assert exact is not None
    assert banded is not None
    assert banded.ks_statistic < exact.ks_statistic
    assert banded.ks_p_value >= exact.ks_p_value >= 0.01
    assert banded.cv_tolerance == pytest.approx(3 / math.sqrt(9_999) + 2 * (0.001 * 200.0) ** 2)
    for mode, params in (("uniform", {}), ("bursty", {"cv": 3.0}), ("bursty", {"cv": 1.3})):
        schedule = arrival_schedule(mode, rate=200.0, n=10_000, seed=3, params=params)
        fit = exponential_fit(ns(schedule), 200.0, tolerance_s=0.001)
        assert fit is not None
        rejected = fit.ks_p_value < 0.01 or abs(fit.cv - 1.0) > fit.cv_tolerance
        assert rejected, (mode, params, fit)
