"""Latency metrics: Option B token timelines, ITL, time between chunks, TPOT, jitter, pauses,
TTFT by input length (draft 4.6.3, 5.4, 5.1.4.2)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import (
    Ragged,
    consecutive_intervals,
    group_first,
    group_last,
    group_max,
    group_std,
    summarize,
    tail_class,
    tail_ratio,
    tail_spacing_ratio,
    token_arrival_times,
    tpot,
    ttft_by_input_length,
)


def groups(r: Ragged) -> list[list[float]]:
    return [g.tolist() for g in r]


# --- Ragged ----------------------------------------------------------------------------------
def test_ragged_layout_and_select() -> None:
    r = Ragged.from_lengths([1.0, 2.0, 3.0, 4.0, 5.0], [2, 0, 3])
    assert len(r) == 3
    assert r.bounds.tolist() == [0, 2, 2, 5]
    assert groups(r) == [[1.0, 2.0], [], [3.0, 4.0, 5.0]]
    assert r.group_ids().tolist() == [0, 0, 2, 2, 2]
    assert groups(r.select(np.array([False, True, True]))) == [[], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize(
    "bounds", [[1, 3], [0, 2], [0, 3, 2, 3]], ids=["not-from-0", "short", "decreasing"]
)
def test_ragged_rejects_bad_bounds(bounds: list[int]) -> None:
    with pytest.raises(ValueError, match="bounds"):
        Ragged(np.zeros(3), np.asarray(bounds, dtype=np.int64))


# --- Option B token times and ITL --------------------------------------------------------------
def test_option_b_assigns_chunk_time_to_every_token() -> None:
    # request 0: chunks at 100, 120, 150, 200 µs with 1, 2, 1, 3 tokens; request 1: no chunks;
    # request 2: one chunk of 4 tokens at 70 µs.
    t = token_arrival_times([100, 120, 150, 200, 70], [1, 2, 1, 3, 4], [0, 4, 4, 5])
    assert groups(t) == [
        [100.0, 120.0, 120.0, 150.0, 200.0, 200.0, 200.0],
        [],
        [70.0, 70.0, 70.0, 70.0],
    ]


def test_itl_option_b_gives_n_minus_one_zero_intervals_per_multi_token_chunk() -> None:
    t = token_arrival_times([100, 120, 150, 200, 70], [1, 2, 1, 3, 4], [0, 4, 4, 5])
    itl = consecutive_intervals(t)
    # 20 (100→120), 0 (second token of the 2-token chunk), 30, 50, 0, 0 (3-token chunk);
    # TTFT (submit → 100) is not an interval; the 4-token chunk alone gives three zeros.
    assert groups(itl) == [[20.0, 0.0, 30.0, 50.0, 0.0, 0.0], [], [0.0, 0.0, 0.0]]


def test_zero_token_chunks_carry_no_token() -> None:
    t = token_arrival_times([10, 20, 30], [1, 0, 1], [0, 3])
    assert groups(t) == [[10.0, 30.0]]
    assert groups(consecutive_intervals(t)) == [[20.0]]


def test_time_between_chunks_is_option_a() -> None:
    chunks = Ragged.from_lengths([100.0, 120.0, 150.0, 200.0, 5.0, 300.0, 310.0], [4, 1, 2])
    assert groups(consecutive_intervals(chunks)) == [[20.0, 30.0, 50.0], [], [10.0]]


def test_intervals_never_cross_requests_even_after_empty_groups() -> None:
    r = Ragged.from_lengths([5.0, 1000.0, 1001.0], [0, 1, 0, 2, 0])
    assert groups(consecutive_intervals(r)) == [[], [], [], [1.0], []]
    empty = Ragged.from_lengths(np.empty(0), [0, 0])
    assert groups(consecutive_intervals(empty)) == [[], []]


def test_token_arrival_times_validates_inputs() -> None:
    with pytest.raises(ValueError, match="one entry per chunk"):
        token_arrival_times([1, 2], [1], [0, 2])
    with pytest.raises(ValueError, match=">= 0"):
        token_arrival_times([1, 2], [1, -1], [0, 2])


# --- per-request statistics --------------------------------------------------------------------
def test_jitter_and_max_pause_by_hand() -> None:
    itl = Ragged.from_lengths([20.0, 0.0, 30.0, 50.0, 0.0, 0.0, 10.0, 20.0, 7.0], [6, 2, 1, 0])
    jitter = group_std(itl)
    # request 0: mean 100/6; squared deviations sum to 6400/3 → std = sqrt(6400/18)
    assert jitter[0] == pytest.approx(math.sqrt(6400 / 18))
    assert jitter[1] == pytest.approx(5.0)
    assert math.isnan(jitter[2])  # one ITL sample: jitter undefined
    assert math.isnan(jitter[3])
    assert group_std(itl, min_count=1)[2] == 0.0
    assert group_max(itl)[:3].tolist() == [50.0, 20.0, 7.0]
    assert math.isnan(group_max(itl)[3])
    assert group_first(itl)[:3].tolist() == [20.0, 10.0, 7.0]
    assert group_last(itl)[:3].tolist() == [0.0, 20.0, 7.0]
    assert math.isnan(group_first(itl)[3])
    assert math.isnan(group_last(itl)[3])


def test_group_std_rejects_min_count_zero() -> None:
    with pytest.raises(ValueError, match="min_count"):
        group_std(Ragged.from_lengths([1.0], [1]), min_count=0)


def test_tpot_excludes_the_first_token() -> None:
    # (200 - 100) / (7 - 1); (330 - 300) / (3 - 1); one token: undefined; unknown count: undefined
    got = tpot([100.0, 300.0, 40.0, 10.0], [200.0, 330.0, 40.0, 90.0], [7, 3, 1, np.nan])
    assert got[0] == pytest.approx(100 / 6)
    assert got[1] == pytest.approx(15.0)
    assert math.isnan(got[2])
    assert math.isnan(got[3])


def test_tail_ratio() -> None:
    assert tail_ratio(48.4, 10.0) == pytest.approx(4.84)
    assert tail_ratio(48.4, 0.0) is None
    assert tail_ratio(None, 10.0) is None


# --- TTFT by input length ----------------------------------------------------------------------
def test_bucket_boundaries_are_half_open() -> None:
    ttft = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    inputs = [0, 255, 256, 511, 512, 4095, 4096, 100_000, np.nan]
    rows = ttft_by_input_length(ttft, inputs)
    assert [(r.label, r.lower, r.upper, r.count) for r in rows] == [
        ("0-256", 0, 256, 2),
        ("256-512", 256, 512, 2),
        ("512-1024", 512, 1024, 1),
        ("1024-2048", 1024, 2048, 0),
        ("2048-4096", 2048, 4096, 1),
        ("4096+", 4096, None, 2),
    ]
    # [0-256) holds 1 and 2: P50 = 1.5, P95 = 1.95, P99 = 1.99
    assert (rows[0].p50, rows[0].p95, rows[0].p99) == pytest.approx((1.5, 1.95, 1.99))
    assert (rows[3].p50, rows[3].p95, rows[3].p99) == (None, None, None)
    assert rows[0].to_dict() == {
        "bucket": "0-256",
        "min_tokens": 0,
        "max_tokens_exclusive": 256,
        "count": 2,
        "p50": rows[0].p50,
        "p95": rows[0].p95,
        "p99": rows[0].p99,
    }


def test_bucket_edges_must_ascend() -> None:
    with pytest.raises(ValueError, match="ascending"):
        ttft_by_input_length([1.0], [1], edges=[0, 512, 256])


# --- properties --------------------------------------------------------------------------------
request_chunks = st.lists(
    st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=5)),
    min_size=0,
    max_size=12,
)


@given(st.lists(request_chunks, min_size=1, max_size=8))
def test_option_b_itl_sums_to_first_to_last_token_and_mean_equals_tpot(
    requests: list[list[tuple[int, int]]],
) -> None:
    offsets: list[int] = []
    tokens: list[int] = []
    lengths: list[int] = []
    for chunks in requests:
        gaps = [g for g, _ in chunks]
        offsets += np.cumsum(gaps).tolist() if gaps else []
        tokens += [n for _, n in chunks]
        lengths.append(len(chunks))
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    times = token_arrival_times(offsets, tokens, bounds)
    itl = consecutive_intervals(times)
    n_tokens = times.lengths()
    assert itl.lengths().tolist() == np.maximum(n_tokens - 1, 0).tolist()
    span = group_last(times) - group_first(times)
    per_request_tpot = tpot(group_first(times), group_last(times), n_tokens)
    for i, g in enumerate(itl):
        if n_tokens[i] >= 1:
            assert g.sum() == pytest.approx(span[i])
        if n_tokens[i] >= 2:
            assert summarize(g).mean == pytest.approx(per_request_tpot[i])
        assert np.all(g >= 0)


@given(
    st.lists(
        st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), max_size=10),
        min_size=1,
        max_size=10,
    )
)
def test_vectorised_group_statistics_match_per_request_loops(groups_: list[list[float]]) -> None:
    r = Ragged.from_lengths([v for g in groups_ for v in g], [len(g) for g in groups_])
    intervals = consecutive_intervals(r)
    std = group_std(r)
    biggest = group_max(r)
    for i, g in enumerate(groups_):
        assert intervals[i].tolist() == pytest.approx([b - a for a, b in itertools.pairwise(g)])
        if len(g) >= 2:
            assert std[i] == pytest.approx(statistics.pstdev(g), rel=1e-9, abs=1e-6)
        else:
            assert math.isnan(std[i])
        if g:
            assert biggest[i] == max(g)
        else:
            assert math.isnan(biggest[i])


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (lambda rng: 5.0 + rng.exponential(2.0, 200_000), "exponential"),  # shifted: still 1
        (lambda rng: rng.pareto(1.5, 200_000), "heavy"),  # power law, α 1.5: about 10^(2/3)
        (lambda rng: rng.normal(40.0, 3.0, 200_000), "light"),  # Gaussian: about 0.5
        (lambda rng: rng.uniform(30.0, 50.0, 200_000), "light"),  # bounded
    ],
)
def test_tail_class_from_the_spacing_of_the_tail_percentiles(
    sample: Callable[[np.random.Generator], npt.NDArray[np.float64]], expected: str
) -> None:
    values = sample(np.random.default_rng(7))
    p90, p99, p99_9 = (float(np.percentile(values, q)) for q in (90, 99, 99.9))
    assert tail_class(tail_spacing_ratio(p90, p99, p99_9)) == expected


def test_tail_spacing_ratio_is_undefined_without_a_spread() -> None:
    assert tail_spacing_ratio(10.0, 10.0, 12.0) is None
    assert tail_spacing_ratio(None, 10.0, 12.0) is None
    assert tail_class(None) is None
