"""Arrays the report and the HTML plots share are derived once per RunData
(report.sections.derived), and the memo goes with the records."""

from __future__ import annotations

import gc

from otelbench.report import report_from_data
from otelbench.report.html import plot_data
from otelbench.report.sections import (
    _DERIVED,
    client_itl_us,
    client_token_arrivals_us,
    derived,
    fluidity_indices_of,
    server_itl_us,
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
