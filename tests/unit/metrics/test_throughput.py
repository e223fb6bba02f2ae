"""Throughput over the measurement window and outcome counts (draft 5.2.4.1)."""

from __future__ import annotations

import numpy as np
import pytest

from otelbench.metrics import Outcomes, measurement_window_ns, outcomes, window_throughput

S = 1_000_000_000


def test_window_runs_from_first_submit_to_last_end() -> None:
    # the request submitted last is not the one that ends last
    assert measurement_window_ns([2 * S, 0, 1 * S], [3 * S, 5 * S, 4 * S]) == (0, 5 * S)
    assert measurement_window_ns([], []) is None


def test_window_rejects_end_before_submit() -> None:
    with pytest.raises(ValueError, match="before"):
        measurement_window_ns([10], [9])


def test_rates_count_successful_requests_over_a_window_that_includes_failures() -> None:
    # three successes in [0, 2 s]; a failure submitted at 3 s ends at 4 s → window 4 s
    t = window_throughput(
        submit_unix_ns=[0, S, 2 * S, 3 * S],
        end_unix_ns=[S, 2 * S, 2 * S, 4 * S],
        succeeded=[True, True, True, False],
        output_tokens=[10, 20, 10, 99],
        input_tokens=[100, np.nan, 300, 1000],
    )
    assert t.window_s == 4.0
    assert (t.output_tokens, t.input_tokens, t.requests) == (40, 400, 3)
    assert t.output_tokens_per_s == pytest.approx(10.0)
    assert t.input_tokens_per_s == pytest.approx(100.0)
    assert t.requests_per_s == pytest.approx(0.75)


def test_zero_length_window_leaves_rates_undefined() -> None:
    t = window_throughput([S], [S], [True], [5], [5])
    assert t.window_s == 0.0
    assert (t.output_tokens_per_s, t.input_tokens_per_s, t.requests_per_s) == (None, None, None)
    empty = window_throughput([], [], [], [], [])
    assert empty.window_s is None
    assert empty.requests == 0


def test_outcomes_group_failures_by_error_type() -> None:
    got = outcomes([True, False, False, False, True], [None, "504", "stream_error", None, None])
    assert got == Outcomes(
        total=5, succeeded=2, failed=3, failed_by_type={"504": 1, "_OTHER": 1, "stream_error": 1}
    )
    assert list(got.failed_by_type) == ["504", "_OTHER", "stream_error"]


def test_outcomes_need_one_error_type_per_request() -> None:
    with pytest.raises(ValueError, match="per request"):
        outcomes([True, False], [None])
