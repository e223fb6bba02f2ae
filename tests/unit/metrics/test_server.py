"""TTFT decomposition and preemption statistics, with hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from otelbench.metrics import TTFT_COMPONENTS, preemption_stats, ttft_decomposition

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
