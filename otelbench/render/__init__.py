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
* :mod:`otelbench.render.procedure` — ``procedure.md`` around each procedure's own tables.

Usage::

    from otelbench.model.load import load_report
    from otelbench.render.markdown import render_markdown

    print(render_markdown(load_report("out/demo/report.json")))
"""
