"""``load_report``: the one boundary where a stored report.json enters otelbench, and where an
older schema version is brought to this version's shape and the result checked against the types
(the error messages of a bad file are checked through ``otelbench compare`` in
``tests/unit/test_compare.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelbench.errors import ConfigError
from otelbench.model import load as load_module
from otelbench.model.load import load_report, report_file
from otelbench.model.report import SCHEMA_VERSION
from otelbench.query import extract_run_data, open_store
from otelbench.report import render_json, report_from_data
from tests.unit.query.spanstore import write_scenario


def write(path: Path, report: dict[str, Any]) -> Path:
    path.mkdir(parents=True)
    (path / "report.json").write_text(json.dumps(report))
    return path


def minimal(version: int) -> dict[str, Any]:
    return {"schema_version": version, "run": {"id": "r"}, "metrics": {"client": {}}}


def built(tmp_path: Path) -> dict[str, Any]:
    """A whole report, as report.json holds it (the golden scenario's run)."""
    with open_store(write_scenario(tmp_path / "scenario.duckdb")) as runner:
        report: dict[str, Any] = json.loads(render_json(report_from_data(extract_run_data(runner))))
    return report


def test_a_report_of_this_version_is_read_as_written(tmp_path: Path) -> None:
    """A key a newer otelbench of the same version added is kept: adding keys is compatible."""
    report = {**built(tmp_path), "extra": [1, 2]}
    run = write(tmp_path / "run", report)
    assert report_file(run) == run / "report.json"
    assert report_file(run / "report.json") == run / "report.json"
    assert load_report(run) == report
    assert load_report(run / "report.json") == load_report(run)


def test_a_report_that_departs_from_the_types_is_refused_by_path(tmp_path: Path) -> None:
    """Past ``load_report`` a report has its type's shape: a missing key, a wrong type or an
    unknown value of a Literal stops it here, named by where it is."""
    report = built(tmp_path)
    del report["metrics"]["client"]["ttft_ms"]
    report["run"]["requests"]["succeeded"] = "3"
    run = write(tmp_path / "run", report)
    with pytest.raises(ConfigError) as raised:
        load_report(run)
    message = str(raised.value)
    assert "$.metrics.client: missing key ttft_ms" in message
    assert "$.run.requests.succeeded: expected int, got str" in message
    assert "rebuild it from its store with `otelbench report`" in message


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
    whole = built(tmp_path)
    run = write(tmp_path / "run", {**whole, "schema_version": 1})
    report: dict[str, Any] = dict(load_report(run))
    assert seen == [1, 2]
    assert report == {**whole, "schema_version": 3, "added_in_2": True, "added_in_3": True}

    monkeypatch.setattr(load_module, "UPGRADES", {2: step(3)})
    with pytest.raises(ConfigError, match="has report schema_version 1, this otelbench reads 3"):
        load_report(run)


def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    run = write(tmp_path / "run", minimal(SCHEMA_VERSION + 1))
    with pytest.raises(ConfigError, match="rebuild it with `otelbench report` of this version"):
        load_report(run)
