"""The renderers: typed values in, text out. They compute nothing.

A built report (:func:`otelbench.report.build_report`) or one read back from disk
(:func:`otelbench.model.load.load_report`) is rendered here, and so is a procedure's result.
Nothing in this package imports the builder, the judge, the metrics or the query layer
(``tests/unit/test_import_cycles.py`` holds it to that): what a page shows was decided before it
is drawn.

* :mod:`otelbench.render.format` — the one number formatter and Markdown table helper;
* :mod:`otelbench.render.markdown` — ``report.md``;
* :mod:`otelbench.render.html` — ``report.html`` and ``procedure.html``: one page shell, with
  :mod:`otelbench.render.figures` (the plots of a report and its plot data) drawn with
  :mod:`otelbench.render.svg` (inline SVG);
* :mod:`otelbench.render.procedure` — ``procedure.md`` around each procedure's own tables;
* :mod:`otelbench.render.compare` — ``compare.md``;
* :func:`write_report_pages` — a report's ``report.md`` and ``report.html`` written to a
  directory (``otelbench run``/``report`` with the plot data of the stored records,
  ``otelbench render`` from a ``report.json`` alone).

Usage::

    from otelbench.model.load import load_report
    from otelbench.render.markdown import render_markdown

    print(render_markdown(load_report("out/demo/report.json")))
"""

from __future__ import annotations

from pathlib import Path

from otelbench.model.plots import PlotData
from otelbench.model.report import Report
from otelbench.render.html import render_html
from otelbench.render.markdown import render_markdown

__all__ = ["write_report_pages"]


def write_report_pages(report: Report, out_dir: Path, plot_data: PlotData | None = None) -> str:
    """Write ``report.md`` and ``report.html`` of ``report`` into ``out_dir``; the Markdown.

    ``plot_data`` (:func:`otelbench.report.plot_data.plot_data`'s value, from the stored
    records) feeds the per-request figures; without it those figures say that they need the
    span store, and the others are drawn from the report alone."""
    markdown = render_markdown(report)
    (out_dir / "report.md").write_text(markdown)
    (out_dir / "report.html").write_text(render_html(report, plot_data), encoding="utf-8")
    return markdown
