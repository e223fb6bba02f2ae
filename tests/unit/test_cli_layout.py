"""The command line's layout (issue 17): typer is imported only under ``otelbench/cli/``, and no
package of otelbench imports the command line (the package graph has no cycle through it)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "otelbench"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules() -> dict[str, set[str]]:
    return {str(p.relative_to(PACKAGE)): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_only_the_cli_package_imports_typer() -> None:
    outside = [
        path
        for path, names in _modules().items()
        if not path.startswith("cli/") and any(n.split(".")[0] == "typer" for n in names)
    ]
    assert outside == []


def test_no_package_imports_the_command_line() -> None:
    """``collector/__main__.py`` is an entry point (``python -m otelbench.collector``) that
    nothing imports: it may run the command line."""
    importers = [
        path
        for path, names in _modules().items()
        if not path.startswith("cli/")
        and path != "collector/__main__.py"
        and any(n == "otelbench.cli" or n.startswith("otelbench.cli.") for n in names)
    ]
    assert importers == []


def test_the_command_line_modules() -> None:
    cli = sorted(p.name for p in (PACKAGE / "cli").glob("*.py"))
    assert cli == [
        "__init__.py",
        "__main__.py",
        "collector.py",
        "compare.py",
        "dashboards.py",
        "gateway.py",
        "live.py",
        "options.py",
        "report.py",
        "run.py",
        "test.py",
    ]
    assert all(len(p.read_text().splitlines()) < 300 for p in (PACKAGE / "cli").glob("*.py"))
