"""Long-context scaling (draft 5.9.4): time per input token, power-law and linear fits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.metrics import (
    fit_linear,
    fit_power_law,
    long_context_scaling,
    time_per_input_token,
)


def test_time_per_input_token() -> None:
    got = time_per_input_token([0.089, 9.123, 1.0], [1024, 131072, 0])
    assert got[0] == pytest.approx(0.089 / 1024)
    assert got[1] == pytest.approx(9.123 / 131072)
    assert math.isnan(got[2])
    with pytest.raises(ValueError, match="same shape"):
        time_per_input_token([1.0], [1, 2])


def test_draft_linear_fit_of_68_us_per_token() -> None:
    # 5.9.5's "~68 microseconds per input token": TTFT = 20 ms + 68 µs · L exactly
    lengths = np.array([1024, 4096, 16384, 65536, 131072] * 20)
    ttft = 0.020 + 68e-6 * lengths
    f = fit_linear(lengths, ttft)
    assert f.slope_us_per_token == pytest.approx(68.0)
    assert f.intercept_s == pytest.approx(0.020)
    assert f.r_squared == pytest.approx(1.0)
    assert f.requests == 100


def test_power_law_exponent_by_hand() -> None:
    # TTFT doubles per 4x context: k = log 2 / log 4 = 0.5, C = 0.1 / sqrt(1000)
    f = fit_power_law([1000, 4000, 16000], [0.1, 0.2, 0.4])
    assert f.exponent == pytest.approx(0.5)
    assert f.coefficient == pytest.approx(0.1 / math.sqrt(1000))
    assert f.r_squared == pytest.approx(1.0)
    # a quadratic prefill has k = 2
    assert fit_power_law([1, 2, 3, 4], [1, 4, 9, 16]).exponent == pytest.approx(2.0)


def test_r_squared_of_an_imperfect_fit_by_hand() -> None:
    # y = 1, 3, 2 at x = 0, 1, 2: slope 0.5, intercept 1.5, predictions 1.5, 2, 2.5;
    # SS_res = 0.25 + 1 + 0.25 = 1.5, SS_tot = 2 → R² = 0.25
    f = fit_linear([0, 1, 2], [1.0, 3.0, 2.0])
    assert (f.slope_s_per_token, f.intercept_s) == pytest.approx((0.5, 1.5))
    assert f.r_squared == pytest.approx(0.25)


def test_fits_need_two_lengths_and_positive_values() -> None:
    with pytest.raises(ConfigError, match="2 distinct"):
        fit_linear([1000, 1000], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1000, 2000], [0.0, 1.0])


def test_long_context_scaling_rows_and_fits() -> None:
    # 20 requests per length; TTFT = 76 µs/token · L, spread ±1 ms, one NaN left out
    lengths = np.repeat([1024, 4096, 16384], 20).astype(float)
    spread = np.tile(np.linspace(-0.001, 0.001, 20), 3)
    ttft = 76e-6 * lengths + spread
    ttft[0] = np.nan
    s = long_context_scaling(lengths, ttft)
    assert [r.input_tokens for r in s.lengths] == [1024, 4096, 16384]
    assert [r.count for r in s.lengths] == [19, 20, 20]
    row = s.lengths[1]
    assert row.ttft_mean == pytest.approx(76e-6 * 4096)
    assert row.ms_per_1k_tokens == pytest.approx(76.0)
    assert row.ttft_p50 == pytest.approx(76e-6 * 4096)
    assert row.ttft_p95 == pytest.approx(76e-6 * 4096 + 0.001 * (0.95 * 19 * 2 / 19 - 1))
    assert s.linear.slope_us_per_token == pytest.approx(76.0, rel=1e-3)
    assert s.power_law.exponent == pytest.approx(1.0, abs=0.01)
    assert s.power_law.requests == 59


@given(
    st.floats(1e-3, 10.0),
    st.floats(0.1, 3.0),
    st.lists(st.integers(1, 200_000), min_size=2, max_size=8, unique=True),
)
def test_power_law_recovers_exact_exponents(c: float, k: float, lengths: list[int]) -> None:
    x = np.asarray(lengths, dtype=float)
    f = fit_power_law(x, c * x**k)
    assert f.exponent == pytest.approx(k, rel=1e-6)
    assert f.coefficient == pytest.approx(c, rel=1e-5)
    assert f.r_squared == pytest.approx(1.0)


@given(st.lists(st.tuples(st.integers(1, 10_000), st.floats(0.0, 100.0)), min_size=3, max_size=30))
def test_linear_fit_r_squared_is_at_most_one(points: list[tuple[int, float]]) -> None:
    x = [p for p, _ in points]
    if len(set(x)) < 2:
        return
    f = fit_linear(x, [y for _, y in points])
    assert f.r_squared <= 1.0 + 1e-9
