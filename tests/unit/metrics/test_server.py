"""TTFT decomposition, preemption statistics, engine steps and unread work, with hand-computed
values (and engine steps against a Hypothesis-built step schedule)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.metrics import (
    TTFT_COMPONENTS,
    Ragged,
    engine_steps,
    preemption_stats,
    ttft_decomposition,
    unread_work,
)

NAN = float("nan")


def test_decomposition_components_add_up_to_the_client_ttft() -> None:
    # client 100, 200, 40; server 60, 150, 30; queue 20, 50, 5; prefill 30, 80, 20
    d = ttft_decomposition([100, 200, 40], [60, 150, 30], [20, 50, 5], [30, 80, 20])
    assert tuple(d.components) == TTFT_COMPONENTS
    assert d.components["network_and_framing"].tolist() == [40, 50, 10]
    assert d.components["arrival_to_queue"].tolist() == [10, 20, 5]
    assert d.components["queue"].tolist() == [20, 50, 5]
    assert d.components["prefill"].tolist() == [30, 80, 20]
    total = sum(d.components[k] for k in TTFT_COMPONENTS)
    assert total.tolist() == d.client_ttft.tolist() == [100, 200, 40]
    # shares of the mean: component sums 100, 35, 75, 130 over the client sum 340
    assert d.share_of_mean == pytest.approx(
        {
            "network_and_framing": 100 / 340,
            "arrival_to_queue": 35 / 340,
            "queue": 75 / 340,
            "prefill": 130 / 340,
        }
    )
    assert sum(v for v in d.share_of_mean.values() if v is not None) == pytest.approx(1.0)
    # P50 shares: medians of (.4, .25, .25), (.1, .1, .125), (.2, .25, .125), (.3, .4, .5)
    assert d.share_p50 == pytest.approx(
        {"network_and_framing": 0.25, "arrival_to_queue": 0.1, "queue": 0.2, "prefill": 0.4}
    )


def test_decomposition_leaves_out_requests_with_an_undefined_input() -> None:
    d = ttft_decomposition([100, NAN, 50, 80], [60, 10, NAN, 40], [20, 1, 1, NAN], [30, 1, 1, 1])
    assert d.client_ttft.tolist() == [100]
    assert d.components["network_and_framing"].tolist() == [40]


def test_decomposition_of_nothing_has_no_shares() -> None:
    d = ttft_decomposition([], [], [], [])
    assert d.client_ttft.size == 0
    assert d.share_of_mean == dict.fromkeys(TTFT_COMPONENTS)
    assert d.share_p50 == dict.fromkeys(TTFT_COMPONENTS)


def test_decomposition_p50_share_skips_zero_client_ttft() -> None:
    d = ttft_decomposition([0, 10], [0, 5], [0, 2], [0, 2])
    assert d.share_p50["network_and_framing"] == 0.5
    assert d.share_of_mean["network_and_framing"] == 0.5


def test_decomposition_needs_one_value_per_request() -> None:
    with pytest.raises(ValueError, match="same shape"):
        ttft_decomposition([1, 2], [1], [1], [1])


def test_preemption_stats() -> None:
    # four observed requests preempted 0, 2, 1, 0 times; one unobserved (NaN)
    p = preemption_stats([0, 2, 1, 0, NAN], [True, True, False, False, True], [0, 83, 30, 0, 1000])
    assert p.requests_observed == 4
    assert p.total == 3
    assert p.requests_preempted == 2
    assert p.rate == 0.5
    assert p.recovered == 1  # the request preempted twice still succeeded
    assert p.recovery_rate == 0.5
    assert p.kv_tokens_discarded == 113  # the unobserved request's count is not added
    assert p.per_request.tolist() == [0, 2, 1, 0]


def test_preemption_stats_without_preemptions_or_observations() -> None:
    none = preemption_stats([0, 0], [True, False], [0, NAN])
    assert (none.total, none.requests_preempted, none.rate) == (0, 0, 0.0)
    assert none.recovery_rate is None
    unobserved = preemption_stats([NAN], [True], [NAN])
    assert unobserved.requests_observed == 0
    assert unobserved.rate is None
    assert unobserved.kv_tokens_discarded == 0
    assert unobserved.per_request.size == 0
    assert not math.isnan(float(np.sum(unobserved.per_request)))


def test_preemption_stats_needs_one_value_per_request() -> None:
    with pytest.raises(ValueError, match="same shape"):
        preemption_stats([1], [True, False], [1])


# --- engine steps (draft 4.6.2-4.6.3) -----------------------------------------------------------
def test_engine_steps_by_hand() -> None:
    # request 1: steps at 100 (1 token), 140 (3 tokens: speculative decoding), 150 (2 tokens);
    # request 2: no token; request 3: one token at 100 — its time equals request 1's first,
    # which must not join the two requests' steps
    times = Ragged.from_lengths([100.0, 140.0, 140.0, 140.0, 150.0, 150.0, 100.0], [6, 0, 1])
    s = engine_steps(times)
    assert s.tokens_per_step.tolist() == [1, 3, 2, 1]
    assert (s.tokens, s.steps, s.multi_token_steps) == (7, 4, 2)
    assert [g.tolist() for g in s.step_times] == [[100.0, 140.0, 150.0], [], [100.0]]
    assert [g.tolist() for g in s.between_steps] == [[40.0, 10.0], [], []]
    # per-token ITL: 40, 0, 0, 10, 0 — three zeros of five samples
    assert (s.zero_gaps, s.itl_samples, s.zero_gap_share) == (3, 5, 0.6)


def test_engine_steps_of_nothing() -> None:
    s = engine_steps(Ragged.from_lengths([], [0, 0]))
    assert (s.tokens, s.steps, s.zero_gaps, s.itl_samples) == (0, 0, 0, 0)
    assert s.zero_gap_share is None
    assert len(s.step_times) == len(s.between_steps) == 2


@settings(deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(1, 50_000), st.integers(1, 5)), max_size=12),
        min_size=1,
        max_size=6,
    )
)
def test_engine_steps_recover_the_step_schedule(
    requests: list[list[tuple[int, int]]],
) -> None:
    """Each request is a schedule of engine steps (gap in µs since the previous step, tokens);
    its token times repeat each step's time once per token, as the hooks' offsets do."""
    values, lengths = [], []
    for steps in requests:
        t = 0
        for gap, k in steps:
            t += gap
            values += [float(t)] * k
        lengths.append(sum(k for _, k in steps))
    s = engine_steps(Ragged.from_lengths(values, lengths))
    assert s.tokens_per_step.tolist() == [k for steps in requests for _, k in steps]
    assert [g.tolist() for g in s.between_steps] == [
        [float(gap) for gap, _ in steps[1:]] for steps in requests
    ]
    assert s.zero_gaps == sum(k - 1 for steps in requests for _, k in steps)
    assert s.itl_samples == sum(max(n - 1, 0) for n in lengths)


def test_unread_work_by_hand() -> None:
    # a request cut in decode (100 prompt / 4 output tokens, 0.5 s), one cut in the queue
    # without the engine core's account (its tokens unknown, no inference time), and one ended
    # through the finished path with finish reason abort (50 / 2 tokens, 0.25 s)
    w = unread_work([100, NAN, 50], [4, NAN, 2], [0.5, NAN, 0.25])
    assert (w.requests, w.prompt_tokens, w.output_tokens) == (3, 150, 6)
    assert w.engine_s == 0.75
    assert w.unaccounted == 1
    with pytest.raises(ValueError, match="same shape"):
        unread_work([1], [1, 2], [1])
