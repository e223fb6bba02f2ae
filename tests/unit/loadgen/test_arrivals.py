"""Arrival schedules: seeded, precomputed, with the right statistics (draft 4.2.3)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import (
    ARRIVALS,
    arrival_needs_rate,
    arrival_parameters,
    arrival_schedule,
    bursty,
    load_trace,
    poisson,
    trace,
    uniform,
)


def test_registry_names() -> None:
    assert sorted(ARRIVALS) == ["bursty", "poisson", "trace", "uniform"]


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


# --------------------------------------------------------------------------------------------
# bursty: gamma gaps with a chosen coefficient of variation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cv", [0.5, 1.0, 3.0])
def test_bursty_gaps_have_the_asked_mean_and_cv(cv: float) -> None:
    rate = 20.0
    offsets = bursty(rate=rate, n=100_001, seed=3, cv=cv)
    gaps = np.diff(offsets)
    assert offsets[0] == 0.0
    assert np.all(gaps >= 0)
    # Mean 1/rate within 3 %, CV within 5 % (the CV of heavy-tailed gamma gaps converges slowly).
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_bursty_default_cv_is_3_and_clusters_sends() -> None:
    gaps = np.diff(bursty(rate=10.0, n=50_001, seed=1))
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.05)
    # Half the gaps are shorter than 1 % of the mean gap: requests arrive in bursts.
    assert np.mean(gaps < 0.001) == pytest.approx(0.5, abs=0.03)


def test_bursty_is_reproducible() -> None:
    a = bursty(rate=5.0, n=500, seed=7, cv=2.0)
    np.testing.assert_array_equal(a, bursty(rate=5.0, n=500, seed=7, cv=2.0))
    assert not np.array_equal(a, bursty(rate=5.0, n=500, seed=8, cv=2.0))
    assert bursty(rate=5.0, n=0, seed=7).shape == (0,)


@pytest.mark.parametrize("cv", [0.0, -1.0, float("nan"), float("inf")])
def test_bursty_bad_cv_is_a_config_error(cv: float) -> None:
    with pytest.raises(ConfigError, match="coefficient of variation cv > 0"):
        bursty(rate=1.0, n=3, seed=0, cv=cv)


def test_bursty_parameters_for_the_manifest() -> None:
    assert arrival_parameters("bursty", rate=4.0, seed=1, params={"cv": 2.0}) == {
        "process": "bursty",
        "rate": 4.0,
        "seed": 1,
        "cv": 2.0,
        "distribution": "gamma",
        "gamma_shape": 0.25,
    }
    assert arrival_parameters("bursty", rate=4.0, seed=1)["cv"] == 3.0
    assert arrival_parameters("poisson", rate=2.0, seed=5) == {
        "process": "poisson",
        "rate": 2.0,
        "seed": 5,
    }


# --------------------------------------------------------------------------------------------
# trace: replay from a file
# --------------------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "trace.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_trace_lines_absolute_times_are_normalised(tmp_path: Path) -> None:
    p = write(tmp_path, "# unix seconds\n1700000000.5\n\n1700000000.75\n1700000001.5\n")
    np.testing.assert_allclose(load_trace(p), [0.0, 0.25, 1.0])
    np.testing.assert_allclose(trace(n=2, seed=0, path=p), [0.0, 0.25])
    assert trace(n=3, seed=0, path=str(p))[0] == 0.0


def test_trace_json_list_relative_times_and_time_scale(tmp_path: Path) -> None:
    p = write(tmp_path, "[2, 2, 3.5, 6]", "trace.json")
    np.testing.assert_allclose(trace(n=4, seed=0, path=p), [0.0, 0.0, 1.5, 4.0])
    np.testing.assert_allclose(trace(n=4, seed=0, path=p, time_scale=0.5), [0, 0, 0.75, 2.0])


def test_trace_rate_rescales_to_the_mean_rate(tmp_path: Path) -> None:
    p = write(tmp_path, "0\n1\n4\n")
    np.testing.assert_allclose(trace(rate=1.0, n=3, seed=0, path=p), [0.0, 0.5, 2.0])
    with pytest.raises(ConfigError, match="either a rate or a time_scale"):
        trace(rate=1.0, n=3, seed=0, path=p, time_scale=2.0)


def test_trace_is_reproducible_and_seed_free(tmp_path: Path) -> None:
    p = write(tmp_path, "0\n0.1\n0.3\n")
    np.testing.assert_array_equal(trace(n=3, seed=1, path=p), trace(n=3, seed=2, path=p))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n1\nabc\n", r"trace\.txt:3: 'abc' is not a number of seconds"),
        ("0\n-1\n", r"trace\.txt:2: negative timestamp '-1'"),
        (
            "0\n2\n\n1\n",
            r"trace\.txt:4: timestamp '1' is earlier than the one before it "
            r"\(.*trace\.txt:2: '2'\)",
        ),
        ("0\nnan\n", r"trace\.txt:2: 'nan' is not a finite number"),
        ("# nothing\n\n", r"trace\.txt holds no timestamps"),
        ("[0, 1, 0.5]", r"trace\.txt: element 2 of the JSON list: timestamp 0\.5 is earlier"),
        ('[0, "x"]', r"trace\.txt: element 1 of the JSON list: 'x' is not a number"),
        ("[0, true]", r"element 1 of the JSON list: True is not a number"),
        ("[0, 1", r"trace\.txt:1: not valid JSON"),
    ],
)
def test_bad_trace_is_a_config_error_naming_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        trace(n=1, seed=0, path=p)


def test_trace_too_short_or_missing_is_a_config_error(tmp_path: Path) -> None:
    p = write(tmp_path, "0\n1\n")
    with pytest.raises(ConfigError, match="holds 2 timestamps; the run needs 3"):
        trace(n=3, seed=0, path=p)
    with pytest.raises(ConfigError, match=r"cannot read arrival trace .*missing"):
        trace(n=1, seed=0, path=tmp_path / "missing")
    with pytest.raises(ConfigError, match="time_scale must be > 0"):
        trace(n=1, seed=0, path=p, time_scale=0.0)


def test_trace_parameters_record_the_file_digest(tmp_path: Path) -> None:
    p = write(tmp_path, "10\n11\n12.5\n")
    desc = arrival_parameters("trace", rate=None, seed=0, params={"path": p})
    assert desc == {
        "process": "trace",
        "rate": None,
        "seed": 0,
        "path": str(p),
        "time_scale": 1.0,
        "sha256": hashlib.sha256(b"10\n11\n12.5\n").hexdigest(),
        "timestamps_in_file": 3,
        "file_duration_s": 2.5,
    }


# --------------------------------------------------------------------------------------------
# the registry's checked entry points
# --------------------------------------------------------------------------------------------


def test_schedule_checks_parameters(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'poisson' has no parameter 'cv'; its parameters: none"):
        arrival_schedule("poisson", rate=1.0, n=3, seed=0, params={"cv": 2.0})
    with pytest.raises(ConfigError, match=r"'trace' needs the parameter 'path'"):
        arrival_schedule("trace", rate=None, n=3, seed=0)
    with pytest.raises(ConfigError, match="needs --rate > 0"):
        arrival_schedule("bursty", rate=None, n=3, seed=0)
    with pytest.raises(ConfigError, match="unknown arrival process 'zipf'"):
        arrival_schedule("zipf", rate=1.0, n=3, seed=0)
    with pytest.raises(ConfigError, match="bad parameters for arrival process 'bursty'"):
        arrival_schedule("bursty", rate=1.0, n=3, seed=0, params={"cv": "x"})
    assert arrival_needs_rate("bursty")
    assert not arrival_needs_rate("trace")
    np.testing.assert_array_equal(
        arrival_schedule("bursty", rate=2.0, n=50, seed=4, params={"cv": 1.5}),
        bursty(rate=2.0, n=50, seed=4, cv=1.5),
    )
