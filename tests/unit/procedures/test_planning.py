"""Level planning and the max search, on synthetic monotone systems (no I/O)."""

from __future__ import annotations

import itertools

import pytest

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.procedures.planning import (
    SWEEP_FRACTIONS,
    MaxSearch,
    fraction_levels,
    open_loop_requests,
    search_max,
)


def test_sweep_fractions_are_the_drafts_twelve_levels() -> None:
    assert SWEEP_FRACTIONS == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)
    assert draft.ITL_LOAD_FRACTIONS == (0.25, 0.5, 0.75, 0.9)
    levels = fraction_levels(5.0)
    assert len(levels) == 12
    assert levels[0] == pytest.approx(0.5)
    assert levels[-1] == pytest.approx(6.0)
    assert all(b > a for a, b in itertools.pairwise(levels))


@pytest.mark.parametrize(
    ("reference", "fractions"),
    [(0.0, (0.5,)), (-1.0, (0.5,)), (1.0, ()), (1.0, (0.5, 0.5)), (1.0, (0.5, 0.2)), (1.0, (0,))],
)
def test_fraction_levels_rejects_bad_plans(reference: float, fractions: tuple[float, ...]) -> None:
    with pytest.raises(ConfigError):
        fraction_levels(reference, fractions)


def test_open_loop_requests_cover_the_duration_with_a_floor() -> None:
    assert open_loop_requests(2.5, 60.0) == 150
    assert open_loop_requests(0.1, 60.0) == 6
    assert open_loop_requests(0.3, 10.0) == 3
    assert open_loop_requests(0.2, 3.0, min_requests=6) == 6
    assert open_loop_requests(10.0, 3.0, min_requests=6) == 30
    with pytest.raises(ConfigError):
        open_loop_requests(0.0, 3.0)


def test_integer_search_doubles_then_bisects_to_the_exact_threshold() -> None:
    search = search_max(lambda c: c <= 40, MaxSearch(start=8, lo=1, hi=512, integer=True))
    assert [s.value for s in search.steps] == [8, 16, 32, 64, 48, 40, 44, 42, 41]
    assert search.best == 40
    assert search.first_fail == 41
    assert not search.capped
    assert not search.exhausted


@pytest.mark.parametrize("threshold", [1, 2, 3, 7, 8, 9, 63, 64, 65, 100, 255, 511])
def test_integer_search_finds_every_threshold(threshold: int) -> None:
    search = search_max(lambda c: c <= threshold, MaxSearch(start=8, lo=1, hi=512, integer=True))
    assert search.best == threshold
    assert search.first_fail == threshold + 1
    assert len(search.steps) <= 20


def test_integer_search_capped_when_the_upper_bound_passes() -> None:
    search = search_max(lambda c: True, MaxSearch(start=8, lo=1, hi=512, integer=True))
    assert [s.value for s in search.steps] == [8, 16, 32, 64, 128, 256, 512]
    assert search.best == 512
    assert search.capped


def test_integer_search_none_when_even_the_lower_bound_fails() -> None:
    search = search_max(lambda c: False, MaxSearch(start=8, lo=1, hi=512, integer=True))
    assert [s.value for s in search.steps] == [8, 4, 2, 1]
    assert search.best is None
    assert search.first_fail == 1
    assert not search.capped


def test_relative_tolerance_stops_early() -> None:
    search = search_max(
        lambda c: c <= 100,
        MaxSearch(start=8, lo=1, hi=512, integer=True, rel_tolerance=0.25),
    )
    assert search.best is not None
    assert search.best <= 100 < search.first_fail  # type: ignore[operator]
    assert search.first_fail - search.best <= 0.25 * search.best  # type: ignore[operator]
    assert [s.value for s in search.steps] == [8, 16, 32, 64, 128, 96, 112]


@pytest.mark.parametrize("threshold", [0.35, 1.0, 2.0, 3.7, 9.99])
def test_rate_search_brackets_the_threshold_within_the_step(threshold: float) -> None:
    search = search_max(
        lambda r: r <= threshold,
        MaxSearch(start=2.0, lo=0.2, hi=10.0, growth=1.5, abs_tolerance=0.1),
    )
    assert search.best is not None
    assert search.best <= threshold
    assert search.first_fail is not None
    assert search.first_fail > threshold
    assert search.first_fail - search.best <= 0.1


def test_rate_search_tries_the_start_after_a_passing_reference() -> None:
    search = MaxSearch(start=4.0, lo=0.4, hi=8.0, growth=1.5, abs_tolerance=0.5)
    search.record(0.4, True)  # the reference level at the lowest rate
    assert search.next_value() == 4.0
    search.record(4.0, True)
    assert search.next_value() == 6.0
    search.record(6.0, False)
    assert search.next_value() == 5.0
    search.record(5.0, False)
    assert search.next_value() == 4.5
    search.record(4.5, True)
    assert search.next_value() is None
    assert (search.best, search.first_fail) == (4.5, 5.0)


def test_search_stops_after_max_steps_and_says_so() -> None:
    search = search_max(
        lambda r: r <= 3.3333,
        MaxSearch(start=1.0, lo=0.1, hi=100.0, abs_tolerance=1e-6, max_steps=5),
    )
    assert len(search.steps) == 5
    assert search.exhausted


def test_non_monotone_verdicts_are_recorded_and_the_newest_wins() -> None:
    search = MaxSearch(start=8, lo=1, hi=64, integer=True)
    search.record(8, True)
    search.record(16, False)
    search.record(12, True)
    search.record(20, True)  # above a failure: noise
    assert [(s.value, s.passed) for s in search.non_monotone] == [(20.0, True)]
    assert search.best == 20
    assert search.first_fail is None
    search.record(10, False)  # below a pass
    assert [(s.value, s.passed) for s in search.non_monotone][-1] == (10.0, False)
    assert search.best == 8
    assert search.first_fail == 10


def test_the_non_monotone_note_names_each_verdict_against_the_bracket() -> None:
    search = MaxSearch(start=8, lo=1, hi=64, integer=True)
    search.record(8, True)
    assert search.non_monotone_note("concurrent") is None
    search.record(16, False)
    search.record(20, True)
    search.record(6, False)
    assert search.non_monotone_note("concurrent") == (
        "the system was not monotone in rate: 20 concurrent passed, 6 concurrent failed against "
        "the bracket so far (noise); the newest verdict was kept"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"start": 0, "lo": 0, "hi": 1},
        {"start": 5, "lo": 6, "hi": 10},
        {"start": 11, "lo": 1, "hi": 10},
        {"start": 2, "lo": 1, "hi": 10, "growth": 1.0},
        {"start": 2, "lo": 1, "hi": 10, "max_steps": 0},
    ],
)
def test_bad_search_bounds_are_config_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        MaxSearch(**kwargs)  # type: ignore[arg-type]
