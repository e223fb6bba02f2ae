"""Throughput-latency curve points (5.3.4), saturation (5.2.3.1), steady state (5.2.3.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import (
    detect_saturation,
    queue_growing,
    steady_state,
    throughput_latency_points,
)

# The draft's Table 5 (5.3.5): offered r/s, achieved tok/s, TTFT P99 ms.
OFFERED = [2, 6, 10, 14, 18, 22]
ACHIEVED = [284, 852, 1420, 1988, 2534, 2712]
TTFT_P99 = [142, 178, 267, 512, 1234, 3456]


def test_draft_table_5_knee_and_peak() -> None:
    # minimum P99 142 → knee threshold 284: 267 is below, 512 (14 r/s) is the first above.
    # Throughput never decreases, so there is no saturation point by the definition; the peak
    # (the draft's "22 req/s (throughput peaks)") is the last level.
    p = throughput_latency_points(OFFERED, ACHIEVED, TTFT_P99)
    assert OFFERED[p.knee or -1] == 14
    assert p.saturation is None
    assert OFFERED[p.peak] == 22
    assert p.min_p99 == 142
    assert p.optimal is None  # no SLO given


def test_optimal_point_under_an_slo() -> None:
    # P99 <= 1300 ms allows up to 18 r/s (2534 tok/s); <= 100 ms allows nothing
    assert throughput_latency_points(OFFERED, ACHIEVED, TTFT_P99, slo_p99=1300).optimal == 4
    assert throughput_latency_points(OFFERED, ACHIEVED, TTFT_P99, slo_p99=100).optimal is None
    # ties in throughput: the lower load wins
    tie = throughput_latency_points([1, 2, 3], [10, 10, 5], [1, 1, 1], slo_p99=1)
    assert tie.optimal == 0


def test_saturation_is_the_first_decrease() -> None:
    p = throughput_latency_points([1, 2, 3, 4, 5], [100, 200, 190, 250, 180], [1, 1, 1, 1, 1])
    assert p.saturation == 2  # 190 < 200
    assert p.peak == 1  # highest throughput up to the saturation point
    assert p.knee is None  # P99 never exceeds 2 × its minimum


def test_curve_input_validation() -> None:
    with pytest.raises(ValueError, match="ascending"):
        throughput_latency_points([1, 1], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="per level"):
        throughput_latency_points([1, 2], [1], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        throughput_latency_points([1, 2], [1, float("nan")], [1, 2])


@given(
    st.lists(st.tuples(st.floats(0.0, 1e4), st.floats(1e-3, 1e4)), min_size=1, max_size=15),
    st.floats(1e-3, 1e4),
)
def test_curve_points_satisfy_their_definitions(
    levels: list[tuple[float, float]], slo: float
) -> None:
    thr = np.asarray([t for t, _ in levels])
    p99 = np.asarray([p for _, p in levels])
    p = throughput_latency_points(np.arange(len(levels)), thr, p99, slo_p99=slo)
    if p.knee is not None:
        assert p99[p.knee] > 2 * p99.min()
        assert np.all(p99[: p.knee] <= 2 * p99.min())
    else:
        assert np.all(p99 <= 2 * p99.min())
    if p.saturation is not None:
        assert thr[p.saturation] < thr[p.saturation - 1]
        assert np.all(np.diff(thr[: p.saturation]) >= 0)
        # non-decreasing up to it, so its predecessor holds the peak throughput
        assert thr[p.peak] == thr[p.saturation - 1]
        assert p.peak < p.saturation
    else:
        assert thr[p.peak] == thr.max()
    if p.optimal is not None:
        assert p99[p.optimal] <= slo
        assert thr[p.optimal] == thr[p99 <= slo].max()
    else:
        assert np.all(p99 > slo)


# --- saturation detection ------------------------------------------------------------------------
def test_queue_growth() -> None:
    t = np.arange(100.0)
    assert queue_growing(t, 0.1 * t)  # 0 → 9.9: quarter means 1.2, 3.7, 6.2, 8.7
    assert not queue_growing(t, 0.001 * t)  # growing, but by less than one request
    assert not queue_growing(t, np.where(t < 50, 0.0, 5.0))  # a step, not continuous growth
    assert not queue_growing(t, 5 + np.sin(t))
    assert not queue_growing([1.0], [3.0])
    assert not queue_growing([0.0, 1.0, 10.0], [0.0, 1.0, 9.0])  # a quarter without samples
    with pytest.raises(ValueError, match="segments"):
        queue_growing(t, t, segments=1)


def test_each_saturation_criterion_fires_alone() -> None:
    t = np.arange(60.0)
    queue = detect_saturation(queue_times=t, queue_depth=t)
    assert (queue.saturated, queue.fired) == (True, ("queue_growth",))
    assert queue.completion_rate is None
    # 89/100 < 90 %; 90/100 is not below
    assert detect_saturation(arrivals=100, completions=89).fired == ("completion_rate",)
    at_limit = detect_saturation(arrivals=100, completions=90)
    assert (at_limit.saturated, at_limit.completion_ratio) == (False, 0.9)
    # P99 10.5 s against a low-load P50 of 1 s: 10.5 > 10; exactly 10 does not fire
    blow = detect_saturation(p99_latency=10.5, low_load_p50_latency=1.0)
    assert blow.fired == ("latency_blowup",)
    assert blow.p99_over_low_load_p50 == 10.5
    assert not detect_saturation(p99_latency=10.0, low_load_p50_latency=1.0).saturated
    nothing = detect_saturation()
    assert (nothing.saturated, nothing.fired, nothing.queue_growth) == (False, (), None)


def test_all_saturation_criteria_together() -> None:
    t = np.arange(40.0)
    s = detect_saturation(
        queue_times=t,
        queue_depth=2 * t,
        arrivals=50,
        completions=10,
        p99_latency=30.0,
        low_load_p50_latency=2.0,
    )
    assert s.fired == ("queue_growth", "completion_rate", "latency_blowup")


# --- steady state ----------------------------------------------------------------------------
def test_steady_state_by_hand() -> None:
    # window 0–100 s: ramp-up ends at 10 s; halves [10, 55) and [55, 100], 45 s each.
    done = [5.0, 20.0, 30.0, 40.0, 60.0, 70.0, 80.0]
    tokens = [1000, 90, 90, 90, 90, 90, 90]  # the ramp-up completion is ignored
    latency = [9.0, 1.0, 1.0, 1.2, 1.0, 1.1, 1.2]
    s = steady_state(done, tokens, latency, 0.0, 100.0)
    assert s.ramp_end_s == 10.0
    assert s.throughput_halves == pytest.approx((6.0, 6.0))  # 270 tokens / 45 s
    assert s.latency_p50_halves == (1.0, 1.1)
    assert s.latency_change == pytest.approx(0.1 / 1.1)
    assert s.steady


def test_unsteady_throughput_latency_or_queue() -> None:
    done = [20.0, 30.0, 60.0]
    # second half has half the tokens: change 0.5 > 0.1
    drop = steady_state(done, [100, 100, 100], [1.0, 1.0, 1.0], 0.0, 100.0)
    assert drop.throughput_change == pytest.approx(0.5)
    assert not drop.steady
    # same throughput, latency doubles: change 0.5 > 0.25
    slow = steady_state([20.0, 60.0], [100, 100], [1.0, 2.0], 0.0, 100.0)
    assert slow.throughput_change == 0.0
    assert not slow.steady
    assert steady_state(
        [20.0, 60.0], [100, 100], [1.0, 2.0], 0.0, 100.0, latency_tolerance=0.5
    ).steady
    # the queue grows after the ramp-up (the ramp-up's own growth is ignored)
    qt = np.arange(0.0, 100.0)
    ramp_only = np.where(qt < 10, qt, 10.0)
    ok = steady_state(
        [20.0, 60.0], [100, 100], [1.0, 1.0], 0.0, 100.0, queue_times=qt, queue_depth=ramp_only
    )
    assert (ok.steady, ok.queue_growing) == (True, False)
    grow = steady_state(
        [20.0, 60.0], [100, 100], [1.0, 1.0], 0.0, 100.0, queue_times=qt, queue_depth=qt
    )
    assert (grow.steady, grow.queue_growing) == (False, True)
    # a half without completions cannot be compared
    assert not steady_state([20.0], [100], [1.0], 0.0, 100.0).steady


def test_steady_state_validation() -> None:
    with pytest.raises(ValueError, match="end after"):
        steady_state([], [], [], 5.0, 5.0)
    with pytest.raises(ValueError, match="ramp_fraction"):
        steady_state([], [], [], 0.0, 5.0, ramp_fraction=1.0)
    with pytest.raises(ValueError, match="per request"):
        steady_state([1.0], [], [], 0.0, 5.0)


@given(st.floats(1.0, 1e3))
def test_constant_rate_is_steady(tokens: float) -> None:
    # completions evenly spread over the window with equal tokens and latency are steady
    done = np.linspace(0.0, 100.0, 201)
    s = steady_state(done, np.full(done.size, tokens), np.ones(done.size), 0.0, 100.0)
    assert s.steady
    assert s.throughput_change <= 0.02


@given(
    st.lists(
        st.tuples(st.floats(0.0, 100.0), st.integers(0, 1000), st.floats(0.01, 10.0)),
        max_size=40,
    )
)
def test_steady_state_counts_every_token_after_the_ramp_up_once(
    requests: list[tuple[float, int, float]],
) -> None:
    done = np.asarray([d for d, _, _ in requests])
    tokens = np.asarray([n for _, n, _ in requests], dtype=float)
    latency = np.asarray([lat for _, _, lat in requests])
    s = steady_state(done, tokens, latency, 0.0, 100.0)
    half = (100.0 - s.ramp_end_s) / 2
    assert sum(s.throughput_halves) * half == pytest.approx(tokens[done >= 10.0].sum())
    assert 0.0 <= s.throughput_change <= 1.0
    if s.steady:
        assert s.throughput_change <= 0.1
