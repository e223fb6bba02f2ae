"""Run reports: build the ``report.json`` dict from a span store, render it as JSON, Markdown or
a self-contained HTML page with plots.

Renderers are registered by format name in :data:`RENDERERS`.

Usage::

    from otelbench.report import build_report, render

    report = build_report("otelbench.duckdb", run_id=None)   # the latest run
    print(render(report, "markdown"))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from otelbench.errors import registered
from otelbench.model.report import Report
from otelbench.render.html import render_html
from otelbench.render.markdown import render_markdown
from otelbench.report.build import SCHEMA_VERSION, build_report, render_json, report_from_data

__all__ = [
    "RENDERERS",
    "SCHEMA_VERSION",
    "build_report",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
    "report_from_data",
]

RENDERERS: Final[Mapping[str, Callable[[Report], str]]] = {
    "json": render_json,
    "markdown": render_markdown,
    "html": render_html,
}
"""Report renderers by format name."""


def render(report: Report, fmt: str) -> str:
    """The report in format ``fmt`` (a key of :data:`RENDERERS`)."""
    return registered(RENDERERS, fmt, "report format")(report)
