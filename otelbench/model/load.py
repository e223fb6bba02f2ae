"""Reading a ``report.json`` back: the one boundary where a stored run report enters otelbench.

:func:`load_report` reads a run directory's ``report.json`` (or the file), brings an older
``schema_version`` to this version's shape once, here, through :data:`UPGRADES`, and checks the
result against :class:`~otelbench.model.report.Report`
(:func:`~otelbench.model.conform.conforms`; keys a newer otelbench added are let through). Past
this function a report has its type's shape: no code asks which version wrote it, and none reads
it defensively.
``docs/report-schema.md`` is the shape. Adding a key is a compatible change and keeps the
version; a change that is not compatible raises :data:`~otelbench.model.report.SCHEMA_VERSION`
and adds the step from the version before to :data:`UPGRADES`.

Usage::

    from otelbench.model.load import load_report

    report = load_report(Path("out/run-1"))        # or Path("out/run-1/report.json")
    report["metrics"]["client"]["ttft_ms"]["p99"]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, cast

from otelbench.errors import ConfigError
from otelbench.model.conform import conforms
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.report import SCHEMA_VERSION, Report

__all__ = ["UPGRADES", "load_report", "report_file"]

UPGRADES: Final[Mapping[int, Callable[[JsonObject], JsonObject]]] = {}
"""``version → step``: each step takes a report of that ``schema_version`` and returns it in the
next version's shape (its ``schema_version`` included). Empty while version 1 is the only one."""


_SHOWN: Final = 3
"""How many shape problems a refused report's error names."""


def report_file(path: Path) -> Path:
    """The ``report.json`` of a run directory, or ``path`` itself when it is a file."""
    return path / "report.json" if path.is_dir() else path


def load_report(path: Path) -> Report:
    """The run report at ``path`` (a run directory or its ``report.json``) in this version's shape.

    Raises :class:`~otelbench.errors.ConfigError` (one line) when the file is missing or
    unreadable, is not JSON, is not an otelbench run report (no ``schema_version``, run id or
    client metrics), has a ``schema_version`` this otelbench cannot bring to its own, or departs
    from that version's shape (the first problems are named by their JSON path).
    """
    file = report_file(path)
    if not file.is_file():
        where = f"no report.json in {path}" if path.is_dir() else f"no such report: {path}"
        raise ConfigError(f"{where}: give a run directory written by `otelbench run`")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {file}: {exc}") from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file} is not valid JSON ({exc})") from None
    if not isinstance(report, dict) or "schema_version" not in report:
        raise ConfigError(f"{file} is not an otelbench run report (no schema_version)")
    version = report["schema_version"]
    while isinstance(version, int) and version < SCHEMA_VERSION and version in UPGRADES:
        report = UPGRADES[version](report)
        version = report["schema_version"]
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"{file} has report schema_version {version!r}, this otelbench reads "
            f"{SCHEMA_VERSION}: rebuild it with `otelbench report` of this version"
        )
    run, metrics = report.get("run"), report.get("metrics")
    if (
        not isinstance(run, dict)
        or not isinstance(run.get("id"), str)
        or not isinstance(metrics, dict)
        or not isinstance(metrics.get("client"), dict)
    ):
        raise ConfigError(f"{file} is not an otelbench run report (no run id or client metrics)")
    problems = conforms(report, Report, unknown_keys=True)
    if problems:
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise ConfigError(
            f"{file} does not have the shape of report schema_version {SCHEMA_VERSION}: "
            f"{shown}{more}; rebuild it from its store with `otelbench report`"
        )
    return cast(Report, report)
