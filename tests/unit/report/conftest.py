from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.query.spanstore import write_hook_scenario, write_scenario


@pytest.fixture
def scenario_store(tmp_path: Path) -> Path:
    """The shared scenario (``tests/unit/query/spanstore.py``) in a real DuckDB span store."""
    return write_scenario(tmp_path / "otelbench.duckdb")


@pytest.fixture
def scenario_store_without_server(tmp_path: Path) -> Path:
    """The same client spans, and no server spans at all."""
    return write_scenario(tmp_path / "client-only.duckdb", with_server=False)


@pytest.fixture
def hook_store(tmp_path: Path) -> Path:
    """A run with engine-hook server spans (``tests/unit/query/spanstore.write_hook_scenario``)."""
    return write_hook_scenario(tmp_path / "hooks.duckdb")
