"""Prefix cache (5.7.4), guardrail overhead (5.10.4) and ITL distribution shape (5.4.4.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.metrics import (
    guardrail_overhead,
    itl_shape,
    percent_change,
    prefix_cache_effect,
)


# --- prefix cache --------------------------------------------------------------------------------
def test_prefix_cache_effect_by_hand() -> None:
    # no cache: 0.2, 0.4, 0.6 (mean/P50 0.4); cache: 0.1, 0.1, 0.4 (mean 0.2, P50 0.1)
    e = prefix_cache_effect(
        [0.2, 0.4, 0.6, float("nan")],
        [0.1, 0.1, 0.4],
        prefix_tokens=[512, 512, 512, float("nan")],
        cached_prefix_tokens=[512, 256, 0, float("nan")],
        throughput_no_cache=1000.0,
        throughput_cache=1250.0,
    )
    assert e.ttft_no_cache["p50"] == pytest.approx(0.4)
    assert e.ttft_cache["mean"] == pytest.approx(0.2)
    assert e.ttft_reduction_pct["mean"] == pytest.approx(50.0)
    assert e.ttft_reduction_pct["p50"] == pytest.approx(75.0)
    # P99: 0.6 - 0.004 = 0.596 vs 0.4 - 0.006 = 0.394
    assert e.ttft_reduction_pct["p99"] == pytest.approx((0.596 - 0.394) / 0.596 * 100)
    assert e.cache_hit_rate == pytest.approx(768 / 1536)
    assert e.throughput_change_pct == pytest.approx(25.0)


def test_draft_table_10_reductions() -> None:
    # Table 10: disabled P50 312 ms, warm cache P50 98 ms → (312 - 98) / 312 = 68.6 %
    e = prefix_cache_effect([0.312], [0.098])
    assert e.ttft_reduction_pct["p50"] == pytest.approx(68.589743, rel=1e-6)
    assert e.cache_hit_rate is None
    assert e.throughput_change_pct is None


def test_prefix_cache_validation_and_empty_runs() -> None:
    with pytest.raises(ValueError, match="more prefix tokens"):
        prefix_cache_effect([1.0], [1.0], prefix_tokens=[10], cached_prefix_tokens=[11])
    with pytest.raises(ValueError, match="per request"):
        prefix_cache_effect([1.0], [1.0], prefix_tokens=[10], cached_prefix_tokens=[1, 2])
    e = prefix_cache_effect([], [1.0], prefix_tokens=[0], cached_prefix_tokens=[0])
    assert e.ttft_reduction_pct["p50"] is None
    assert e.cache_hit_rate is None


@given(st.lists(st.floats(1e-3, 10.0), min_size=1, max_size=20), st.floats(0.0, 1.0))
def test_a_cache_that_scales_ttft_reduces_every_statistic_equally(
    ttft: list[float], factor: float
) -> None:
    cached = [t * factor for t in ttft]
    e = prefix_cache_effect(ttft, cached)
    for key in ("mean", "p50", "p95", "p99"):
        assert e.ttft_reduction_pct[key] == pytest.approx((1 - factor) * 100, abs=1e-6)


# --- guardrails ---------------------------------------------------------------------------------
def test_draft_table_14_throughput_changes() -> None:
    assert round(percent_change(2867.0, 2756.0) or 0.0, 1) == -3.9
    assert round(percent_change(2867.0, 2412.0) or 0.0, 1) == -15.9
    assert round(percent_change(2867.0, 2289.0) or 0.0, 1) == -20.2
    assert percent_change(0.0, 1.0) is None
    assert percent_change(None, 1.0) is None


def test_guardrail_overhead_by_hand() -> None:
    # Table 13 style: baseline TTFT 90/98/106 ms, input filter 100/112/124 ms → P50 +14 ms;
    # E2E baseline 4.0/4.2/4.4 s, full filter 4.8/5.0/5.2 s → +0.8 s at every percentile
    g = guardrail_overhead(
        [0.090, 0.098, 0.106],
        [4.0, 4.2, 4.4],
        [0.100, 0.112, 0.124],
        [4.8, 5.0, 5.2],
        baseline_throughput=2867.0,
        filtered_throughput=2756.0,
    )
    assert g.ttft_overhead["p50"] == pytest.approx(0.014)
    # P99: 0.106 - 0.00016 vs 0.124 - 0.00024 → 0.01792
    assert g.ttft_overhead["p99"] == pytest.approx(0.01792)
    assert g.e2e_overhead == pytest.approx({"p50": 0.8, "p95": 0.8, "p99": 0.8})
    assert g.throughput_change_pct == pytest.approx((2756 - 2867) / 2867 * 100)
    empty = guardrail_overhead([], [], [0.1], [1.0])
    assert empty.ttft_overhead == {"p50": None, "p95": None, "p99": None}
    assert empty.throughput_change_pct is None


@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=20), st.floats(0.0, 5.0))
def test_a_constant_added_delay_is_the_overhead(ttft: list[float], delay: float) -> None:
    g = guardrail_overhead(ttft, ttft, [t + delay for t in ttft], ttft)
    assert g.ttft_overhead == pytest.approx({"p50": delay, "p95": delay, "p99": delay}, abs=1e-9)
    assert g.e2e_overhead == {"p50": 0.0, "p95": 0.0, "p99": 0.0}


# --- ITL distribution shape --------------------------------------------------------------------
def test_unimodal_distributions_including_skewed_ones() -> None:
    rng = np.random.default_rng(3)
    for sample in (
        rng.normal(0.030, 0.003, 5000),
        rng.exponential(0.030, 5000),  # the bimodality coefficient would sit at its threshold
        rng.lognormal(np.log(0.03), 0.5, 5000),
        np.concatenate([rng.normal(0.03, 0.003, 5000), rng.uniform(0.2, 2.0, 40)]),  # stalls
    ):
        s = itl_shape(sample)
        assert (s.peaks, s.multimodal) == (1, False)


def test_batching_regimes_are_multimodal() -> None:
    rng = np.random.default_rng(4)
    two = np.concatenate([rng.normal(0.020, 0.002, 3000), rng.normal(0.060, 0.004, 1000)])
    s = itl_shape(two)
    assert (s.peaks, s.multimodal) == (2, True)
    assert s.peak_locations[0] == pytest.approx(0.020, abs=0.002)
    assert s.peak_locations[1] == pytest.approx(0.060, abs=0.004)
    three = np.concatenate([two, rng.normal(0.150, 0.005, 1000)])
    assert itl_shape(three).peaks == 3
    # a mode holding under 5 % of the highest peak's density is not counted
    tiny = np.concatenate([rng.normal(0.020, 0.002, 5000), rng.normal(0.060, 0.002, 50)])
    assert itl_shape(tiny).peaks == 1


def test_option_b_zero_intervals_form_their_own_mode() -> None:
    rng = np.random.default_rng(5)
    s = itl_shape(np.concatenate([np.zeros(3000), rng.normal(0.03, 0.003, 1000)]))
    assert s.peaks == 2
    assert s.p50 == 0.0
    assert s.tail_ratio is None  # P50 = 0: undefined, as latency.tail_ratio says


def test_tail_ratio_and_degenerate_samples() -> None:
    s = itl_shape(np.arange(1.0, 101.0))  # P50 50.5, P99 99.01
    assert s.tail_ratio == pytest.approx(99.01 / 50.5)
    assert s.peaks == 1
    same = itl_shape([0.02, 0.02, 0.02])
    assert (same.peaks, same.bandwidth, same.tail_ratio) == (1, 0.0, 1.0)
    one = itl_shape([0.02])
    assert (one.count, one.peaks, one.tail_ratio) == (1, 1, None)
    none = itl_shape([])
    assert (none.count, none.peaks, none.p50) == (0, 0, None)
    with pytest.raises(ValueError, match="finite"):
        itl_shape([0.1, float("inf")])


@settings(max_examples=40)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=200),
    st.integers(-8, 8),
)
def test_peak_count_does_not_depend_on_the_time_unit(itl: list[float], exponent: int) -> None:
    base = itl_shape(itl)
    scaled = itl_shape([v * 2.0**exponent for v in itl])
    assert base.peaks >= 1
    assert scaled.peaks == base.peaks
    assert base.peaks <= len(set(itl))
