from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.query.spanstore import write_hook_scenario, write_scenario


@pytest.fixture
def scenario_store(tmp_path: Path) -> Path:
    """A real DuckDB span store holding the shared scenario (see ``spanstore.write_scenario``)."""
    return write_scenario(tmp_path / "otelbench.duckdb")


@pytest.fixture
def hook_store(tmp_path: Path) -> Path:
    """A run with engine-hook server spans (see ``spanstore.write_hook_scenario``)."""
    return write_hook_scenario(tmp_path / "hooks.duckdb")
