"""Every draft number has one name, read everywhere as ``draft.NAME`` (``otelbench.draft``).

Read with :mod:`ast`: a module that imports a number from ``otelbench.draft`` by name (or under
another name), or copies one into a module-level constant of its own, fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import otelbench
from otelbench import draft

ROOT = Path(otelbench.__file__).parent


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(ROOT.parent)), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(ROOT.rglob("*.py"))
        if path.parent != ROOT / "draft"
    ]


def test_every_name_in_all_is_a_number_with_its_section() -> None:
    source = (ROOT / "draft" / "__init__.py").read_text(encoding="utf-8")
    for name in draft.__all__:
        assert hasattr(draft, name), name
        # each number is followed by its docstring, which starts with the section it comes from
        doc = source.split(f"\n{name}: Final", 1)[1].split('"""', 2)[1]
        assert re.match(r"(\d+(\.\d+)*|A\.\d|Etalon §\d)", doc), (name, doc)


def test_no_module_imports_a_draft_number_by_name() -> None:
    found = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "otelbench.draft":
                found += [f"{path}: {a.name}" for a in node.names if a.name != "statements"]
    assert found == []


def test_no_module_copies_a_draft_number_into_a_constant_of_its_own() -> None:
    found = []
    for path, tree in modules():
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "draft"
            ):
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
