"""The same picture in every format (issue: "the human-facing reports drop what report.json has"):
report.md and report.html show report.json's verdict of each test, every item of its
configuration summary (draft 5.1.5.1: seed, tokenizer, warm-up, guardrails …) and the TTFT
minimum and P99.9 (5.1.5.2), for the stored scenarios of ``tests/unit/query/spanstore.py``."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from otelbench.model.report import CONFIGURATION_LABELS, Report
from otelbench.render.format import fmt
from otelbench.render.html import render_html
from otelbench.report import build_report, render_markdown


@pytest.fixture(params=["scenario_store", "hook_store", "scenario_store_without_server"])
def report(request: pytest.FixtureRequest) -> Report:
    store: Path = request.getfixturevalue(request.param)
    return build_report(store)


def _formats(report: Report) -> dict[str, str]:
    return {"report.md": render_markdown(report), "report.html": html.unescape(render_html(report))}


def test_every_format_shows_each_tests_verdict(report: Report) -> None:
    tests = report["compliance"]["tests"]
    assert [t["test"] for t in tests] == ["5.1", "5.4"]
    for name, text in _formats(report).items():
        for t in tests:
            assert f"{t['test']} {t['title']}" in text, (name, t["test"])
            assert t["verdict"] in text, (name, t["test"])
        assert report["compliance"]["verdict"] in text, name


def test_every_format_shows_the_configuration_summary(report: Report) -> None:
    summary = report["configuration"]
    assert list(summary) == list(CONFIGURATION_LABELS)
    for name, text in _formats(report).items():
        for key, label in CONFIGURATION_LABELS.items():
            assert label in text, (name, key)
            assert str(summary[key]) in text, (name, key)  # type: ignore[literal-required]


def test_every_format_shows_the_ttft_minimum_and_p99_9(report: Report) -> None:
    ttft = report["metrics"]["client"]["ttft_ms"]
    markdown = render_markdown(report)
    assert f"| TTFT Min | {fmt(ttft['min'], 2, 'ms')} |" in markdown
    assert f"| TTFT P99.9 | {fmt(ttft['p99_9'], 2, 'ms')} |" in markdown
    page = render_html(report)
    assert "<th>min</th>" in page
    assert "<th>P99.9</th>" in page
    row = f"<td>TTFT</td><td>client</td><td>{ttft['count']}</td><td>{fmt(ttft['min'])}</td>"
    assert row in page
