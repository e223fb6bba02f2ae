"""Every section a procedure's ``build`` returns in these tests is checked against its type
(``otelbench.model.procedure``) as it is built: :func:`test_procedure_types.check_section`."""

from __future__ import annotations

from typing import Any

import pytest

from otelbench.procedures import PROCEDURES, Procedure
from otelbench.procedures.session import Level
from tests.unit.procedures.test_procedure_types import check_section


@pytest.fixture(autouse=True)
def _sections_conform(monkeypatch: pytest.MonkeyPatch) -> None:
    def checked(cls: type[Procedure[Any, Any]]) -> Any:
        build = cls.build

        def checking(self: Procedure[Any, Any], levels: list[Level]) -> Any:
            body = build(self, levels)
            check_section(cls.name, body)
            return body

        return checking

    for cls in PROCEDURES.values():
        monkeypatch.setattr(cls, "build", checked(cls))
