"""The HTML report says when a plot draws fewer points than its series holds.

``plot_data`` keeps at most ``max_points`` values per series (CDFs at evenly spread ranks,
scatter plots at evenly spread requests); the figure's caption then states how many of how many
points are drawn and how they were picked. The run is ``test_html``'s five hand-built requests
(four successful, each with a server span and at least 2 ITL samples but one).
"""

from __future__ import annotations

from otelbench.render.html import render_html
from otelbench.report import report_from_data
from otelbench.report.plot_data import plot_data
from tests.unit.report.test_html import REQS, html_run


def test_thinned_series_are_stated_in_their_captions() -> None:
    data = html_run(REQS)
    html = render_html(report_from_data(data), plot_data(data, max_points=2))
    ranks = "points drawn, at evenly spread ranks, the first and the last kept"
    requests = "points drawn, evenly spread requests in submit order"
    assert html.count(f"2 of 4 {ranks}") == 3  # client and server TTFT, fluidity CDFs
    assert f"2 of 4 {requests}" in html  # TTFT by input length
    assert f"2 of 3 {requests}" in html  # jitter: 3 requests with ≥ 2 ITL samples
    assert html.count("the statistics use all of them") >= 4


def test_no_sampling_caption_when_every_point_is_drawn() -> None:
    data = html_run(REQS)
    html = render_html(report_from_data(data), plot_data(data))
    assert "points drawn" not in html
