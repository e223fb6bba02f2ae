"""``procedure.json``'s TypedDicts (``otelbench.model.procedure``) against the built results.

What the procedures build must have the types' shapes: the two procedure reports of the golden
outputs (``tests/unit/golden/outputs.py``), every section a procedure's ``build`` returns in the
tests of ``tests/unit/procedures/`` (``conftest.py`` checks each with :func:`check_section` as it
is built) and every ``procedure.json`` the integration tests write (:func:`check_procedure_json`,
every key included). Every TypedDict's docstring names its section of
``docs/procedure-schema.md`` and that section mentions each of its keys.

The golden reports and the unit tests build their levels from hand-made rows with the keys the
renderers read, and the golden envelope holds what the renderers read: for them a missing key
is no problem; a key the types do not declare, or a value of another type, is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from otelbench.model import procedure as pt
from otelbench.model.conform import conforms, typeddicts_of
from otelbench.procedures import PROCEDURES
from otelbench.query import extract_run_data, open_store
from otelbench.report import render_json, report_from_data
from tests.unit.golden.outputs import _procedures
from tests.unit.query.spanstore import write_scenario

DOC = Path(__file__).parents[3] / "docs" / "procedure-schema.md"

SECTIONS: dict[str, Any] = {
    "ttft": pt.TtftSection,
    "throughput": pt.ThroughputSection,
    "throughput-latency": pt.TradeoffSection,
    "itl": pt.ItlSection,
    "capacity": pt.CapacitySection,
    "fairness": pt.FairnessSection,
    "prefix-cache": pt.PrefixCacheSection,
    "memory-pressure": pt.PressureSection,
    "long-context": pt.LongContextSection,
    "guardrail-overhead": pt.GuardrailOverheadSection,
    "fluidity": pt.FluiditySection,
}
"""Each procedure's section type, by name."""


def _present(problems: list[str]) -> list[str]:
    """The problems but missing keys (of hand-made rows and envelopes)."""
    return [p for p in problems if ": missing key " not in p]


def _split(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``procedure.json`` as its envelope and its section (with the envelope's
    ``deviations``, as ``build`` returns them, and its ``levels``, rows of the section's own
    level type)."""
    envelope = set(get_type_hints(pt.ProcedureReport)) - {"levels"}
    head = {k: v for k, v in result.items() if k in envelope}
    section = {k: v for k, v in result.items() if k not in envelope}
    return head, {**section, "deviations": result.get("deviations", [])}


def check_section(name: str, body: Any) -> None:
    """``body``, what procedure ``name``'s ``build`` returned, has its section's type (as
    ``procedure.json`` holds it)."""
    assert _present(conforms(json.loads(render_json(body)), SECTIONS[name])) == [], name


def check_procedure_json(path: Path) -> None:
    """A ``procedure.json`` that ``run_procedure`` wrote has the types' shape, every key of
    them included (the integration tests check each one they write)."""
    result = json.loads(path.read_text())
    head, section = _split(result)
    problems = conforms(head, pt.ProcedureReport)
    problems += conforms(section, SECTIONS[result["procedure"]])
    assert problems == [], path


def test_every_procedure_has_its_section_type() -> None:
    assert set(SECTIONS) == set(PROCEDURES)
    for name, cls in PROCEDURES.items():
        assert cls.section_type is SECTIONS[name], name


@pytest.mark.parametrize("name", ["capacity", "tradeoff"])
def test_the_golden_procedure_reports_conform(name: str, tmp_path: Path) -> None:
    with open_store(write_scenario(tmp_path / "s.duckdb")) as runner:
        report = report_from_data(extract_run_data(runner, None))
    result = json.loads(render_json(_procedures(tmp_path, report)[name]["result"]))
    head, section = _split(result)
    assert _present(conforms(head, pt.ProcedureReport)) == []
    assert _present(conforms(section, SECTIONS[result["procedure"]])) == []
    assert conforms(result["compliance"], get_type_hints(pt.ProcedureReport)["compliance"]) == []


def test_the_check_finds_an_unknown_key_a_wrong_type_and_a_missing_key(tmp_path: Path) -> None:
    with open_store(write_scenario(tmp_path / "s.duckdb")) as runner:
        report = report_from_data(extract_run_data(runner, None))
    result = json.loads(render_json(_procedures(tmp_path, report)["capacity"]["result"]))
    _, section = _split(result)
    section["levels"][0]["verdict"]["passed"] = "yes"
    section["search"]["best_rps"] = 2.0
    del section["slo"]["min_completion"]
    rows = re.compile(r"^\$\.levels\[\d+\]: missing key ")  # the hand-made level rows
    problems = [p for p in conforms(section, pt.CapacitySection) if not rows.match(p)]
    assert sorted(problems) == [
        "$.levels[0].verdict.passed: expected bool, got str",
        "$.search: unknown key best_rps",
        "$.slo: missing key min_completion",
    ]


# ------------------------------------------------------------------------------------------
# the types against docs/procedure-schema.md
# ------------------------------------------------------------------------------------------


def _doc_sections() -> dict[str, str]:
    """The doc's ``## `` sections by title (without its parenthesis), and by procedure name its
    row of *The sections* with its ``### `` part of *Section objects* (``Shared`` too)."""
    out: dict[str, str] = {}
    for part in re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        out[heading.split(" (")[0].strip()] = body
    for name in re.findall(r"^\| `([a-z-]+)` \|", out["The sections"], flags=re.MULTILINE):
        row = re.search(rf"^\| `{name}` \|.*$", out["The sections"], flags=re.MULTILINE)
        assert row is not None
        out[name] = row.group(0)
    for part in re.split(r"^### ", out["Section objects"], flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        name = heading.strip().strip("`")
        out[name] = out.get(name, "") + "\n" + body
    return out


def _expand(span: str) -> list[str]:
    """A code span with its ``{a,b}`` alternatives spelled out: ``x_{a,b}`` → ``x_a``, ``x_b``."""
    found = re.search(r"\{([^{}]*)\}", span)
    if found is None:
        return [span]
    head, tail = span[: found.start()], span[found.end() :]
    return [w for alt in found.group(1).split(",") for w in _expand(head + alt + tail)]


def _names(text: str) -> set[str]:
    """Every identifier in the code spans of ``text`` (alternatives spelled out)."""
    return {
        w
        for span in re.findall(r"`([^`]+)`", text)
        for s in _expand(span)
        for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s)
    }


ENVELOPE_SECTIONS = ("The envelope", "A level row")


def test_every_key_of_the_envelope_and_level_row_types_is_in_the_doc() -> None:
    """The envelope's and the level row's TypedDicts, key by key, against their doc sections."""
    sections = _doc_sections()
    types = typeddicts_of(pt.ProcedureReport, pt.__name__)
    types |= typeddicts_of(pt.LevelEntry, pt.__name__)
    undocumented = []
    for name, tp in sorted(types.items()):
        found = re.search(r"section\s+``([^`]+)``", " ".join((tp.__doc__ or "").split()))
        assert found is not None, f"{name}'s docstring names no section of the doc"
        assert found.group(1) in ENVELOPE_SECTIONS, f"{name}: section {found.group(1)!r}"
        names = _names(sections[found.group(1)])
        undocumented += [f"{name}.{key}" for key in get_type_hints(tp) if key not in names]
    assert undocumented == []


def _own_keys(tp: Any) -> list[str]:
    """The keys of ``tp``; of a level's row, those it adds to :class:`LevelEntry`."""
    keys = list(get_type_hints(tp))
    common = get_type_hints(pt.LevelEntry)
    return [k for k in keys if k not in common] if set(common) <= set(keys) else keys


def test_every_key_of_the_section_types_is_in_the_doc() -> None:
    """Each section's TypedDicts, key by key, against the procedure's row of *The sections*
    and its part of *Section objects* (or *Shared*)."""
    sections = _doc_sections()
    types: dict[str, Any] = {}
    for tp in (*SECTIONS.values(), pt.Verdict):
        types |= typeddicts_of(tp, pt.__name__)
    undocumented = []
    for name, tp in sorted(types.items()):
        found = re.search(r"section\s+``([^`]+)``", " ".join((tp.__doc__ or "").split()))
        assert found is not None, f"{name}'s docstring names no section of the doc"
        assert found.group(1) in sections, f"{name}: no doc section {found.group(1)!r}"
        names = _names(sections[found.group(1)])
        keys = [k for k in _own_keys(tp) if k != "deviations"]  # the envelope's
        undocumented += [f"{name}.{key}" for key in keys if key not in names]
    assert undocumented == []
