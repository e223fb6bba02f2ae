"""The report as a typed value: ``report.json``'s shape, the one way in from disk, the check.

* :mod:`otelbench.model.report` — one ``TypedDict`` per object of ``docs/report-schema.md``
  (:class:`~otelbench.model.report.Report` is the whole report) and its
  :data:`~otelbench.model.report.SCHEMA_VERSION`;
* :mod:`otelbench.model.procedure` — one ``TypedDict`` per object of
  ``docs/procedure-schema.md``: ``procedure.json``'s envelope
  (:class:`~otelbench.model.procedure.ProcedureReport`), the level row and each procedure's
  section, what :meth:`~otelbench.procedures.base.Procedure.build` returns;
* :mod:`otelbench.model.load` — :func:`~otelbench.model.load.load_report`, the one boundary where
  a stored ``report.json`` enters otelbench: read, upgraded from an older version, checked
  against the types;
* :mod:`otelbench.model.manifest` — the run manifest the load generator writes on its run span
  (:class:`~otelbench.model.manifest.RunManifest`), checked where the store reads it
  (:func:`otelbench.query.records.run_manifest`); the report copies its parts into ``run``;
* :mod:`otelbench.model.compare` — the second document, ``compare.json``
  (:class:`~otelbench.model.compare.CompareResult`, what ``otelbench compare`` writes);
* :mod:`otelbench.model.conform` — :func:`~otelbench.model.conform.conforms`, that check: every
  way a parsed JSON value departs from a type, by path;
* :mod:`otelbench.model.plots` — the plot data of ``report.html``'s figures
  (:class:`~otelbench.model.plots.PlotData`, built by ``otelbench.report.plot_data``; not
  written to disk).

Why ``TypedDict`` and not dataclasses: ``report.json`` is the public contract, read as JSON by
users, dashboards and ``otelbench compare``; a ``TypedDict`` types that very value (mypy checks
every key read; no second representation to keep in step with the document, no conversion that
could change a byte of the output). What a dataclass would add, a value known to have its shape,
comes from checking it once where it enters (:func:`~otelbench.model.load.load_report`); a built
report has it by construction (``tests/unit/report/test_types.py`` checks the golden reports).
"""
