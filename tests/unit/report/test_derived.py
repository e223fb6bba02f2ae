"""Arrays the report and the HTML plots share are derived once per RunData
(report.sections.derived), and the memo goes with the records."""

from __future__ import annotations

import gc

import pytest
from numpy.testing import assert_array_equal

from otelbench.report import render_json, report_from_data
from otelbench.report.plot_data import plot_data
from otelbench.report.sections import (
    _DERIVED,
    client_itl_order,
    client_itl_us,
    client_jitter_us,
    client_token_arrivals_us,
    derive_ahead,
    derived,
    fluidity_indices_of,
    server_itl_order,
    server_itl_us,
    server_jitter_us,
)
from tests.unit.report.test_sections import MS, Req, run_data


def test_derived_once_per_records_and_key() -> None:
    data = run_data([Req([(100 * MS, 1), (150 * MS, 2)])])
    calls: list[str] = []

    def compute() -> list[str]:
        calls.append("x")
        return calls

    first = derived(data, "k", compute)
    assert derived(data, "k", compute) is first
    assert calls == ["x"]
    key = id(data)
    assert key in _DERIVED
    del data, first
    gc.collect()
    assert key not in _DERIVED


def test_the_report_and_the_plots_share_the_timelines() -> None:
    data = run_data(
        [
            Req([(100 * MS, 1), (130 * MS, 1), (170 * MS, 1)], server_offsets_us=[50, 90, 95]),
            Req([(200 * MS, 2), (260 * MS, 1)], server_offsets_us=[70, 75, 120]),
        ]
    )
    report_from_data(data)
    tokens, itl, server = client_token_arrivals_us(data), client_itl_us(data), server_itl_us(data)
    fi = fluidity_indices_of(data, 1.0, 0.025)
    plots = plot_data(data)
    assert client_token_arrivals_us(data) is tokens
    assert client_itl_us(data) is itl
    assert server_itl_us(data) is server
    assert fluidity_indices_of(data, 1.0, 0.025) is fi
    assert [g.tolist() for g in itl] == [[30 * MS, 40 * MS], [0.0, 60 * MS]]
    assert [g.tolist() for g in server] == [[40.0, 5.0], [5.0, 45.0]]
    assert plots["itl_histogram_ms"]["client"]["count"] == 4


def _reqs() -> list[Req]:
    return [
        Req([(100 * MS, 1), (130 * MS, 1), (170 * MS, 3)], server_offsets_us=[50, 90, 95, 99, 140]),
        Req([(200 * MS, 2), (260 * MS, 1)], server_offsets_us=[70, 75, 120]),
        Req([(90 * MS, 1)], server_offsets_us=[60]),
    ]


def test_derived_ahead_in_two_threads_is_derived_one_by_one() -> None:
    """``derive_ahead`` fills the memo in two threads with what the report derives itself."""
    ahead, serial = run_data(_reqs()), run_data(_reqs())
    derive_ahead(ahead, 1.0)
    memo = _DERIVED[id(ahead)]
    for key in ("client_itl_order", "client_jitter_us", "server_itl_order", "server_jitter_us"):
        assert key in memo
    assert ("fluidity_indices", 1.0, 0.025) in memo
    qs = [50.0, 99.0]
    assert_array_equal(
        client_itl_order(ahead).percentiles(qs), client_itl_order(serial).percentiles(qs)
    )
    assert_array_equal(
        server_itl_order(ahead).percentiles(qs), server_itl_order(serial).percentiles(qs)
    )
    assert_array_equal(client_jitter_us(ahead), client_jitter_us(serial))
    assert_array_equal(server_jitter_us(ahead), server_jitter_us(serial))
    for dd in (0.025, 0.05):
        assert_array_equal(
            fluidity_indices_of(ahead, 1.0, dd), fluidity_indices_of(serial, 1.0, dd)
        )
    assert render_json(report_from_data(ahead)) == render_json(report_from_data(serial))


def test_an_error_deriving_ahead_is_the_reports_error() -> None:
    """A thread's error is raised by ``derive_ahead``, as the report would raise it: here token
    times that go backwards, which the fluidity-index refuses (its thread)."""
    data = run_data([Req([(100 * MS, 1), (130 * MS, 1)])])
    data.client.chunk_offset_us[1] = 50 * MS
    with pytest.raises(ValueError, match="non-decreasing"):
        derive_ahead(data, 1.0)
    with pytest.raises(ValueError, match="non-decreasing"):
        report_from_data(run_data([Req([(100 * MS, 1), (50 * MS, 1)])]))
