"""The storage layer stands below the query layer: ``otelbench.store`` never imports
``otelbench.query`` (nor anything built on it), so the dependency points query → store only."""

from __future__ import annotations

import ast
from pathlib import Path

import otelbench

PACKAGE = Path(otelbench.__file__).parent
ABOVE_THE_STORE = (
    "otelbench.query",
    "otelbench.live",
    "otelbench.report",
    "otelbench.procedures",
    "otelbench.dashboards",
    "otelbench.benchmark",
    "otelbench.cli",
)


def _imports(path: Path, package: str) -> set[str]:
    """Every module ``path`` (a module of ``package``) imports, at any depth (function bodies
    too), as absolute names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                base = package.rsplit(".", node.level - 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _store_modules() -> dict[str, Path]:
    """Every module of ``otelbench.store`` (at any depth) → its file."""
    modules = {}
    for path in sorted((PACKAGE / "store").rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _package(path: Path) -> str:
    """The package a module file belongs to (``otelbench.store`` for ``store/duckdb.py``)."""
    return ".".join(path.parent.relative_to(PACKAGE.parent).parts)


def _above(module: str) -> bool:
    return any(module == a or module.startswith(f"{a}.") for a in ABOVE_THE_STORE)


def test_the_store_never_imports_the_query_layer() -> None:
    modules = _store_modules()
    assert {"otelbench.store", "otelbench.store.duckdb", "otelbench.store.clickhouse"} <= set(
        modules
    )
    offenders = {
        name: sorted(i for i in _imports(path, _package(path)) if _above(i))
        for name, path in modules.items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    """The store's ClickHouse writer once imported the query layer inside a method: the check
    walks the whole tree, not only the module's top level."""
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n    from otelbench.query import clickhouse as ch\n    from . import rows\n"
    )
    found = _imports(source, "otelbench.store")
    assert "otelbench.query.clickhouse" in found
    assert "otelbench.store.rows" in found
