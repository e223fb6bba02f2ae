"""Fixtures of the integration tier that several of its modules ask for by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.procedures.test_procedure_types import check_procedure_json


@pytest.fixture
def procedure_json_conforms(tmp_path: Path) -> Iterator[None]:
    """After the test: every ``procedure.json`` it wrote has the shape of its types
    (``otelbench.model.procedure``), every key of them included. A module that runs procedures
    asks for it in its ``pytestmark`` (``pytest.mark.usefixtures``)."""
    yield
    for path in sorted(tmp_path.rglob("procedure.json")):
        check_procedure_json(path)
