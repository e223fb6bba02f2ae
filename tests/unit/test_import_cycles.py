"""No import cycle among otelbench's modules (imports inside functions count too: a deferred
import that breaks a cycle at run time still makes the two modules one unit).

Read with :mod:`ast`, never imported. ``from otelbench.x import y`` counts as an import of
``otelbench.x.y`` when that is a module, else of ``otelbench.x``; a package's ``__init__`` is
the package's module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import otelbench

ROOT = Path(otelbench.__file__).parent


def module_files() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("otelbench", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_report_modules() -> None:
    graph = import_graph()
    assert "otelbench.draft" in graph["otelbench.report.build"]
    assert "otelbench.report.compliance" in graph["otelbench.report.build"]


def test_no_cycle_among_the_report_modules() -> None:
    graph = import_graph()
    report = {k: {v for v in vs if v.startswith("otelbench.report")}
              for k, vs in graph.items() if k.startswith("otelbench.report")}  # fmt: skip
    assert cycles(report) == []


KNOWN_CYCLES = [["otelbench.loadgen.workload_file", "otelbench.loadgen.workloads"]]
"""Cycles outside the report left for later (workload files build the registered workloads)."""


def test_no_other_cycle_in_the_package() -> None:
    assert cycles(import_graph()) == KNOWN_CYCLES


def test_the_draft_imports_nothing_of_otelbench_outside_itself() -> None:
    graph = import_graph()
    package = [name for name in graph if name.split(".")[:2] == ["otelbench", "draft"]]
    assert sorted(package) == ["otelbench.draft", "otelbench.draft.statements"]
    for name in package:
        assert {m for m in graph[name] if m not in package} == set(), name


def imports_outside(package: str, allowed: tuple[str, ...]) -> tuple[int, set[tuple[str, str]]]:
    """How many modules ``package`` has, and each import of one of them outside ``package``
    and the ``allowed`` packages, as (module, imported)."""
    graph = import_graph()
    inside = (package, *allowed)
    modules = [name for name in graph if name == package or name.startswith(package + ".")]
    found = {
        (name, target)
        for name in modules
        for target in graph[name]
        if not any(target == a or target.startswith(a + ".") for a in inside)
    }
    return len(modules), found


def test_no_renderer_imports_the_builder_the_judge_or_the_query_layer() -> None:
    """Every module of ``otelbench.render`` turns a typed value (a built report or one read
    back, a procedure result, a comparison) into text: it imports the other renderers, the
    model's types and the draft's numbers, and nothing that computes (``otelbench.report``,
    ``otelbench.metrics``, ``otelbench.query``, the procedures)."""
    count, found = imports_outside("otelbench.render", ("otelbench.model", "otelbench.draft"))
    assert count >= 8
    assert found == set()


def test_the_model_imports_nothing_that_computes() -> None:
    """``otelbench.model`` is the report's types and its one way in from disk: a report read
    back renders with the model and the renderers alone (``otelbench render``)."""
    count, found = imports_outside("otelbench.model", ("otelbench.draft", "otelbench.errors"))
    assert count >= 9
    assert found == set()
