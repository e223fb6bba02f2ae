"""Arrival schedules: seeded, precomputed, with the right statistics (draft 4.2.3)."""

from __future__ import annotations

import numpy as np
import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import ARRIVALS, poisson, uniform


def test_registry_names() -> None:
    assert sorted(ARRIVALS) == ["poisson", "uniform"]


def test_poisson_is_reproducible_and_starts_at_zero() -> None:
    a = poisson(rate=5.0, n=1000, seed=7)
    b = poisson(rate=5.0, n=1000, seed=7)
    c = poisson(rate=5.0, n=1000, seed=8)
    assert a.shape == (1000,)
    assert a[0] == 0.0
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all(np.diff(a) >= 0)


def test_poisson_gaps_are_exponential_with_the_asked_rate() -> None:
    rate = 20.0
    gaps = np.diff(poisson(rate=rate, n=20001, seed=1))
    # Mean 1/rate within 3 %, coefficient of variation 1 within 3 % (exponential: CV = 1).
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.03)


def test_uniform_is_evenly_spaced() -> None:
    offsets = uniform(rate=4.0, n=5, seed=0)
    np.testing.assert_allclose(offsets, [0.0, 0.25, 0.5, 0.75, 1.0])


@pytest.mark.parametrize("rate", [0.0, -1.0])
def test_bad_rate_is_a_config_error(rate: float) -> None:
    with pytest.raises(ConfigError, match="rate must be > 0"):
        poisson(rate=rate, n=3, seed=0)


def test_single_request_schedule() -> None:
    np.testing.assert_array_equal(poisson(rate=1.0, n=1, seed=0), [0.0])
    assert poisson(rate=1.0, n=0, seed=0).shape == (0,)
