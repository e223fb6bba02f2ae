"""``load_report``: the one boundary where a stored report.json enters otelbench, and where an
older schema version is brought to this version's shape (the error messages of a bad file are
checked through ``otelbench compare`` in ``tests/unit/test_compare.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelbench.errors import ConfigError
from otelbench.report import load as load_module
from otelbench.report.build import SCHEMA_VERSION
from otelbench.report.load import load_report, report_file


def write(path: Path, report: dict[str, Any]) -> Path:
    path.mkdir(parents=True)
    (path / "report.json").write_text(json.dumps(report))
    return path


def minimal(version: int) -> dict[str, Any]:
    return {"schema_version": version, "run": {"id": "r"}, "metrics": {"client": {}}}


def test_a_report_of_this_version_is_read_as_written(tmp_path: Path) -> None:
    run = write(tmp_path / "run", {**minimal(SCHEMA_VERSION), "extra": [1, 2]})
    assert report_file(run) == run / "report.json"
    assert report_file(run / "report.json") == run / "report.json"
    assert load_report(run) == {**minimal(SCHEMA_VERSION), "extra": [1, 2]}
    assert load_report(run / "report.json") == load_report(run)


def test_an_older_version_is_upgraded_step_by_step_at_the_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if this otelbench wrote version 3 and knew the steps from 1 and 2: a version 1 report
    goes through each step once, in order, and comes out in version 3's shape; a version with no
    step to the next is refused."""
    seen: list[int] = []

    def step(to: int) -> Any:
        def upgrade(report: dict[str, Any]) -> dict[str, Any]:
            seen.append(report["schema_version"])
            return {**report, "schema_version": to, f"added_in_{to}": True}

        return upgrade

    monkeypatch.setattr(load_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(load_module, "UPGRADES", {1: step(2), 2: step(3)})
    run = write(tmp_path / "run", minimal(1))
    report: dict[str, Any] = dict(load_report(run))
    assert seen == [1, 2]
    assert report == {**minimal(3), "added_in_2": True, "added_in_3": True}

    monkeypatch.setattr(load_module, "UPGRADES", {2: step(3)})
    with pytest.raises(ConfigError, match="has report schema_version 1, this otelbench reads 3"):
        load_report(run)


def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    run = write(tmp_path / "run", minimal(SCHEMA_VERSION + 1))
    with pytest.raises(ConfigError, match="rebuild it with `otelbench report` of this version"):
        load_report(run)
