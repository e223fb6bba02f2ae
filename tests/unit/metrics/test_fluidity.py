"""Fluidity-index, prefill deadline model and fluid token generation rate (Etalon §4, Alg. 1).

Times are in milliseconds with integer values wherever exact arithmetic matters: the functions
take any unit as long as intervals and deadlines share it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.metrics import (
    PrefillFit,
    Ragged,
    deadline_intervals,
    fit_prefill_time,
    fluid_token_generation_rate,
    fluidity_index,
    fluidity_indices,
    isolated,
    percentile,
    prefill_deadlines,
    profile_groups,
    profiled_prefill_deadlines,
    summarize,
)


# --- Algorithm 1 by hand -----------------------------------------------------------------------
def test_early_stall_misses_deadlines_late_stall_is_absorbed_by_slack() -> None:
    # The Etalon figure's case (§4.1): the same stall early or late in a request. D_p = 500 ms,
    # D_d = 50 ms; the first token arrives exactly at D_p (slack 0); 19 decode tokens come 40 ms
    # apart and one comes after a 200 ms stall.
    #
    # Early stall [500, 200, 40 × 19]:
    #   i=0  500 <= 500 + 0        met, slack 0                    total 1
    #   i=1  200 >  50 + 0         misses = (200 - 0 - 50) // 50 + 1 = 3 + 1 = 4, slack 0
    #                                                              total 5, missed 4
    #   i=2..20  40 <= 50 + slack  19 met, slack += 10 each        total 24, missed 4
    #   fluidity = (24 - 4) / 24 = 5/6
    # Late stall [500, 40 × 19, 200]:
    #   i=0 met; i=1..19 met, slack = 19 × 10 = 190; i=20: 200 <= 50 + 190 met
    #   fluidity = 21 / 21 = 1
    early = [500.0, 200.0] + [40.0] * 19
    late = [500.0] + [40.0] * 19 + [200.0]
    assert fluidity_index(early, 500.0, 50.0) == pytest.approx(5 / 6)
    assert fluidity_index(late, 500.0, 50.0) == 1.0
    # ... while TBT percentiles and TPOT cannot tell them apart: same decode-interval multiset
    early_tbt, late_tbt = summarize(early[1:]), summarize(late[1:])
    assert early_tbt == late_tbt
    assert percentile(early[1:], 90) == percentile(late[1:], 90) == 40.0
    assert sum(early[1:]) / 20 == sum(late[1:]) / 20  # TPOT


def test_paper_example_fast_tokens_bank_slack_for_a_late_one() -> None:
    # Etalon §4: desired TBT 100 ms. System 1 makes 10 tokens 10 ms apart, then one after
    # 150 ms; system 2 makes 10 tokens 100 ms apart, then one after 150 ms. Both have the same
    # TBT miss rate (1 of 11 intervals > 100 ms). First token exactly at D_p = 300 ms.
    # System 1: slack after 10 tokens = 10 × 90 = 900; 150 <= 100 + 900 → all 12 met → 1.
    # System 2: slack stays 0; 150 > 100 → misses = (150 - 0 - 100) // 100 + 1 = 1
    #           → 11 met of 12 deadlines → 11/12.
    system1 = [300.0] + [10.0] * 10 + [150.0]
    system2 = [300.0] + [100.0] * 10 + [150.0]
    assert fluidity_index(system1, 300.0, 100.0) == 1.0
    assert fluidity_index(system2, 300.0, 100.0) == pytest.approx(11 / 12)


def test_tokens_of_one_engine_step_have_zero_intervals_and_bank_slack() -> None:
    # Etalon §3.1 (speculative decoding): 3 tokens in one step of T, then one after 3T. The
    # user saw 4 tokens in 4T. With D_d = T: T met (slack 0), 0 met (slack T), 0 met (slack 2T),
    # 3T <= T + 2T met → 1, although the TBT sample 3T misses a T deadline.
    t = 40.0
    assert fluidity_index([100.0, t, 0.0, 0.0, 3 * t], 100.0, t) == 1.0
    # without the two zero intervals the 3T token misses: (120 - 0 - 40) // 40 + 1 = 3 misses
    assert fluidity_index([100.0, t, 3 * t], 100.0, t) == pytest.approx(2 / 5)


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(2, 40)), min_size=1, max_size=6),
       st.integers(1, 30))  # fmt: skip
def test_engine_steps_of_k_tokens_every_k_decode_deadlines_are_fluid(
    requests: list[tuple[int, int]], dd: int
) -> None:
    """Etalon §3.1 through the report's path (per-token step times as the hooks record them →
    deadline_intervals → the vectorised Algorithm 1): a request whose engine steps each give k
    tokens (speculative decoding), one step every k·D_d, is shown at one token per D_d: every
    deadline is met. The same step times with one token each miss their deadlines once k ≥ 2
    (each interval k·D_d exceeds D_d with no slack to spend)."""
    dp = 100
    multi, single, lengths, steps_of = [], [], [], []
    for k, steps in requests:
        step_times = [float(dp + j * k * dd) for j in range(steps)]
        multi += [t for t in step_times for _ in range(k)]
        single += step_times
        lengths.append(k * steps)
        steps_of.append(steps)
    fluid = fluidity_indices(deadline_intervals(Ragged.from_lengths(multi, lengths)), dp, dd)
    assert fluid.tolist() == [1.0] * len(requests)
    one = fluidity_indices(deadline_intervals(Ragged.from_lengths(single, steps_of)), dp, dd)
    for (k, _), got in zip(requests, one.tolist(), strict=True):
        assert (got == 1.0) is (k == 1)


def test_late_first_token_counts_decode_deadlines_that_elapsed() -> None:
    # Line 16 divides by D_d even for i = 0: late by 230 with D_d = 50 → 230 // 50 + 1 = 5
    assert fluidity_index([730.0, 50.0], 500.0, 50.0) == pytest.approx(1 / 6)
    # exactly k·D_d late counts k + 1 misses (floor division, literal): 100 // 50 + 1 = 3
    assert fluidity_index([600.0], 500.0, 50.0) == 0.0
    assert fluidity_index([600.0, 50.0], 500.0, 50.0) == pytest.approx(1 / 4)


def test_a_miss_resets_slack() -> None:
    # slack 40 banked (two 30 ms tokens), a 200 ms stall: (200 - 40 - 50) // 50 + 1 = 3 misses
    # and slack 0, so the next 60 ms token misses too (60 > 50 + 0): 1 more miss.
    got = fluidity_index([100.0, 30.0, 30.0, 200.0, 60.0], 100.0, 50.0)
    # met: i0, i1, i2 = 3; missed: 3 + 1 = 4; total 7
    assert got == pytest.approx(3 / 7)


def test_no_interval_is_undefined_and_deadlines_must_be_positive() -> None:
    assert math.isnan(fluidity_index([], 1.0, 1.0))
    with pytest.raises(ValueError, match="decode deadline"):
        fluidity_index([1.0], 1.0, 0.0)
    with pytest.raises(ValueError, match="prefill deadline"):
        fluidity_index([1.0], -1.0, 1.0)
    with pytest.raises(ValueError, match="1-D"):
        fluidity_index([[1.0]], 1.0, 1.0)


def test_decode_deadline_presets() -> None:
    assert dict(draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S) == {
        "strict": 0.025,
        "medium": 0.05,
        "relaxed": 0.1,
    }


# --- deadline intervals and the vectorised form ------------------------------------------------
def test_deadline_intervals_start_from_arrival() -> None:
    times = Ragged.from_lengths([200.0, 250.0, 250.0, 300.0, 90.0], [4, 0, 1])
    assert [g.tolist() for g in deadline_intervals(times)] == [[200.0, 50.0, 0.0, 50.0], [], [90.0]]
    with pytest.raises(ValueError, match="non-decreasing"):
        deadline_intervals(Ragged.from_lengths([5.0, 3.0], [2]))


def test_fluidity_indices_by_hand() -> None:
    r = Ragged.from_lengths([500.0, 200.0, *[40.0] * 19, 300.0, 10.0, 150.0], [21, 0, 3])
    got = fluidity_indices(r, [500.0, 1.0, 300.0], 50.0)
    assert got[0] == pytest.approx(5 / 6)
    assert math.isnan(got[1])
    # [300, 10, 150] with D_d 50: met (0), met (slack 40), 150 > 90: (150-40-50)//50+1 = 2 misses
    assert got[2] == pytest.approx(2 / 4)


intervals_ms = st.lists(st.integers(min_value=0, max_value=400).map(float), max_size=30)


@given(
    st.lists(st.tuples(intervals_ms, st.integers(1, 600)), min_size=1, max_size=8),
    st.integers(min_value=1, max_value=200),
)
def test_vectorised_matches_algorithm_1(
    requests: list[tuple[list[float], int]], decode_deadline: int
) -> None:
    r = Ragged.from_lengths([v for g, _ in requests for v in g], [len(g) for g, _ in requests])
    dp = [float(d) for _, d in requests]
    got = fluidity_indices(r, dp, float(decode_deadline))
    for i, (g, d) in enumerate(requests):
        want = fluidity_index(g, float(d), float(decode_deadline))
        if math.isnan(want):
            assert math.isnan(got[i])
        else:
            assert got[i] == want


@given(intervals_ms.filter(bool), st.integers(1, 600), st.integers(1, 200), st.integers(1, 200))
def test_fluidity_is_a_fraction_and_monotone_in_the_decode_deadline(
    intervals: list[float], dp: int, d1: int, d2: int
) -> None:
    small, large = sorted((float(d1), float(d2)))
    f_small = fluidity_index(intervals, float(dp), small)
    f_large = fluidity_index(intervals, float(dp), large)
    assert 0.0 <= f_small <= f_large <= 1.0


@given(intervals_ms.filter(bool), st.integers(1, 600), st.integers(1, 200))
def test_perfect_fluidity_iff_every_token_meets_its_original_deadline(
    intervals: list[float], dp: int, dd: int
) -> None:
    # §4.1: D_i = D_p + i·D_d; no deadline-miss means no reset, so index 1 ⟺ all met.
    arrival = np.cumsum(intervals)
    deadlines = dp + dd * np.arange(len(intervals))
    all_met = bool(np.all(arrival <= deadlines))
    assert (fluidity_index(intervals, float(dp), float(dd)) == 1.0) == all_met


@given(intervals_ms.filter(bool), st.integers(1, 600), st.integers(1, 200), st.integers(-6, 6))
def test_fluidity_does_not_depend_on_the_time_unit(
    intervals: list[float], dp: int, dd: int, exponent: int
) -> None:
    scale = 2.0**exponent  # exact in binary floating point
    base = fluidity_index(intervals, float(dp), float(dd))
    scaled = fluidity_index([v * scale for v in intervals], dp * scale, dd * scale)
    assert scaled == base


# --- prefill deadline model ----------------------------------------------------------------------
def test_prefill_fit_recovers_a_quadratic_and_builds_deadlines() -> None:
    lengths = np.repeat([128, 512, 1024, 4096], 10)
    prefill = 0.02 + 3e-5 * lengths + 2e-9 * lengths.astype(float) ** 2
    fit = fit_prefill_time(lengths, prefill)
    assert (fit.a, fit.b, fit.c) == pytest.approx((0.02, 3e-5, 2e-9), rel=1e-6)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.lengths == (128, 512, 1024, 4096)
    assert (fit.requests, fit.min_requests_per_length) == (40, 10)
    # D_p(2048) = 0.02 + 0.06144 + 0.008388608 + slack 0.5
    assert prefill_deadlines(fit, [2048], 0.5)[0] == pytest.approx(0.589828608)
    with pytest.raises(ValueError, match="slack"):
        prefill_deadlines(fit, [1], -0.1)


def test_prefill_fit_reports_a_noisy_fit() -> None:
    rng = np.random.default_rng(7)
    lengths = np.repeat([256, 1024, 2048, 8192], 12)
    prefill = 0.01 + 2e-5 * lengths + rng.normal(0, 0.01, lengths.size)
    fit = fit_prefill_time(lengths, prefill)
    assert 0.9 < fit.r_squared < 1.0
    assert fit.residual_std_s == pytest.approx(0.01, rel=0.4)


def test_prefill_fit_needs_ten_requests_per_length_and_three_lengths() -> None:
    with pytest.raises(ConfigError, match="length 512 was profiled 9 times"):
        fit_prefill_time(np.repeat([128, 512, 1024], [10, 9, 10]), np.ones(29))
    with pytest.raises(ConfigError, match="3 distinct"):
        fit_prefill_time(np.repeat([128, 512], 10), np.ones(20))
    fit = fit_prefill_time(np.repeat([1, 2, 3], 2), [1.0] * 6, min_requests_per_length=2)
    assert fit.a == pytest.approx(1.0)


@given(
    st.floats(0.0, 0.1),
    st.floats(0.0, 1e-4),
    st.floats(0.0, 1e-8),
    st.lists(st.integers(1, 16384), min_size=3, max_size=6, unique=True),
)
def test_prefill_fit_predicts_exact_quadratics(a: float, b: float, c: float, ls: list[int]) -> None:
    lengths = np.repeat(ls, 10).astype(float)
    fit = fit_prefill_time(lengths, a + b * lengths + c * lengths**2)
    probe = np.asarray(ls, dtype=float)
    assert fit.predict(probe) == pytest.approx(a + b * probe + c * probe**2, rel=1e-6, abs=1e-9)


def test_prefill_fit_predict_is_the_polynomial() -> None:
    fit = PrefillFit(1.0, 2.0, 3.0, 1.0, 0.0, (1, 2, 3), 30, 10)
    assert fit.predict([0, 1, 2]).tolist() == [1.0, 6.0, 17.0]


def test_profiled_deadlines_use_the_fit_within_the_profiled_lengths_only() -> None:
    # prefill(L) = 10 ms + 0.1 ms/token · L over lengths 100..300: inside, the fit; outside and
    # unknown, the nearest profiled length's (100 for NaN, the shortest); slack 0.5 s
    fit = PrefillFit(0.01, 1e-4, 0.0, 1.0, 0.0, (100, 200, 300), 30, 10)
    got = profiled_prefill_deadlines(fit, [150, 50, 900, float("nan")], 0.5)
    assert got.tolist() == pytest.approx([0.525, 0.52, 0.54, 0.52])
    # a fit predicting a negative prefill counts it as 0; D_p is at least 1 µs
    falling = PrefillFit(-1.0, 0.0, 0.0, 1.0, 0.0, (1, 2, 3), 30, 10)
    assert profiled_prefill_deadlines(falling, [2], 0.0).tolist() == [1e-6]
    with pytest.raises(ValueError, match="slack"):
        profiled_prefill_deadlines(fit, [150], -0.1)


# --- isolation and profile groups (Etalon §4.1: "profiling the request in isolation") -----------
def test_isolated_by_hand() -> None:
    # windows start → first token: r0 [0, 2] alone; r1 [10, 11] alone (r2 arrives at 12, after
    # r1's first token); r2 [12, 20] while r1 (until 30) is in flight; r3 [40, 45] alone; r4
    # starts exactly when r3 ends (touching counts: not alone), r3's window ends before r4.
    start = [0, 10, 12, 40, 50]
    end = [8, 30, 35, 50, 60]
    first = [2, 11, 20, 45, 55]
    assert isolated(start, end, first).tolist() == [True, True, False, True, False]
    # no first token (NaN): never isolated, but its interval still counts against the others
    assert isolated([0, 5], [100, 6], [float("nan"), 6]).tolist() == [False, False]
    # two identical requests hide each other
    assert isolated([0, 0], [5, 5], [1, 1]).tolist() == [False, False]
    with pytest.raises(ValueError, match="same shape"):
        isolated([0], [1, 2], [0])
    with pytest.raises(ValueError, match="end before"):
        isolated([5], [1], [5])


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1000), st.integers(0, 100), st.integers(0, 100)),
        min_size=1,
        max_size=30,
    )
)
def test_isolated_matches_the_pairwise_definition(rows: list[tuple[int, int, int]]) -> None:
    start = [s for s, _, _ in rows]
    first = [s + min(f, d) for s, d, f in rows]
    end = [s + d for s, d, _ in rows]
    expected = [
        not any(start[j] <= first[i] and end[j] >= start[i] for j in range(len(rows)) if j != i)
        for i in range(len(rows))
    ]
    assert isolated(start, end, first).tolist() == expected


def test_profile_groups_are_etalons_lengths_or_ranges_of_ten() -> None:
    # Etalon's profile: 3 lengths of 10 requests each are exactly the 3 groups, whatever the
    # order of the requests
    lengths = [300] * 10 + [100] * 10 + [200] * 10
    groups = profile_groups(lengths)
    assert groups is not None
    assert groups.tolist() == [2] * 10 + [0] * 10 + [1] * 10
    # continuous lengths: groups of ten from the shortest; a short last group joins the one
    # before; unknown lengths belong to none
    groups = profile_groups([*range(1, 36), float("nan")])
    assert groups is not None
    assert groups.tolist() == [0] * 10 + [1] * 10 + [2] * 15 + [-1]
    # a length never splits across groups: 12 requests of length 5 make one group
    groups = profile_groups([5] * 12 + [6] * 10 + [7] * 10)
    assert groups is not None
    assert sorted(set(groups.tolist())) == [0, 1, 2]
    assert groups[:12].tolist() == [0] * 12


@pytest.mark.parametrize(
    "lengths",
    [
        [100] * 10 + [200] * 9 + [300] * 12,  # one length profiled 9 times
        [100] * 40,  # one length
        [100] * 20 + [200] * 20,  # two lengths
        list(range(29)),  # 29 requests
    ],
)
def test_profile_groups_refuse_a_profile_a_quadratic_cannot_stand_on(lengths: list[int]) -> None:
    assert profile_groups(lengths) is None


# --- fluid token generation rate ---------------------------------------------------------------
def test_fluid_rate_by_hand() -> None:
    # One request, D_p = 100 met exactly. Decode 20, 30, 20 ms with min fluidity 1:
    # 20 <= D; 30 <= 2D - 20 → D >= 25; 20 <= 3D - 50 → D >= 23.3. Smallest D_d = 25 ms.
    r = Ragged.from_lengths([100.0, 20.0, 30.0, 20.0], [4])
    res = fluid_token_generation_rate(r, [100.0], min_fluidity=1.0, precision_s=1e-3)
    assert res is not None
    assert 25.0 <= res.decode_deadline_s <= 25.0 + 1e-3
    assert res.tokens_per_s == pytest.approx(1 / 25.0, rel=1e-4)
    assert res.fraction_meeting == 1.0
    assert (res.requests, res.precision_s) == (1, 1e-3)


def test_fluid_rate_uses_the_request_fraction() -> None:
    # 9 smooth requests (10 ms apart) and one that stalls 1000 ms; need 90 % of requests at 1.0:
    # the stalled one may fail, so the answer is 10 ms; at 100 % it must absorb the stall.
    smooth = [50.0] + [10.0] * 20
    stalled = [50.0, 1000.0] + [10.0] * 19
    r = Ragged.from_lengths(smooth * 9 + stalled, [21] * 10)
    loose = fluid_token_generation_rate(r, 50.0, min_fluidity=1.0, request_fraction=0.9)
    strict = fluid_token_generation_rate(r, 50.0, min_fluidity=1.0, request_fraction=1.0)
    assert loose is not None
    assert strict is not None
    assert 10.0 <= loose.decode_deadline_s <= 10.0 + 1e-4
    assert loose.fraction_meeting == pytest.approx(0.9)
    assert strict.decode_deadline_s >= 1000.0  # one deadline must cover the whole stall


def test_fluid_rate_is_none_when_first_tokens_miss_d_p() -> None:
    r = Ragged.from_lengths([900.0, 10.0, 10.0], [3])
    assert fluid_token_generation_rate(r, [500.0], min_fluidity=1.0) is None
    assert fluid_token_generation_rate(Ragged.from_lengths([], [0]), [1.0]) is None
    with pytest.raises(ValueError, match="min_fluidity"):
        fluid_token_generation_rate(r, [1.0], min_fluidity=0.0)
    with pytest.raises(ValueError, match="request_fraction"):
        fluid_token_generation_rate(r, [1.0], request_fraction=1.5)
    with pytest.raises(ValueError, match="precision"):
        fluid_token_generation_rate(r, [1.0], precision_s=0.0)


@given(
    st.lists(st.tuples(intervals_ms.filter(bool), st.integers(1, 600)), min_size=1, max_size=6),
    st.sampled_from([0.5, 0.8, 0.9, 1.0]),
    st.sampled_from([0.5, 0.9, 1.0]),
)
def test_fluid_rate_is_the_smallest_passing_deadline_within_precision(
    requests: list[tuple[list[float], int]], min_fluidity: float, fraction: float
) -> None:
    r = Ragged.from_lengths([v for g, _ in requests for v in g], [len(g) for g, _ in requests])
    dp = np.asarray([float(d) for _, d in requests])
    precision = 0.01
    res = fluid_token_generation_rate(
        r, dp, min_fluidity=min_fluidity, request_fraction=fraction, precision_s=precision
    )

    def passes(dd: float) -> bool:
        return bool(np.mean(fluidity_indices(r, dp, dd) >= min_fluidity) >= fraction)

    if res is None:
        assert not passes(1e9)
        return
    assert passes(res.decode_deadline_s)
    below = res.decode_deadline_s - precision
    if below > 0:
        assert not passes(below)
