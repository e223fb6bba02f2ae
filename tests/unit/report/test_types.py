"""``report.json``'s TypedDicts (``otelbench.model.report``) against the built reports and the doc.

Three things that must not drift apart: what :func:`report_from_data` writes (every report of the
golden scenarios, ``tests/unit/golden/outputs.py``, and the report with every optional section,
``tests/unit/report/test_sections.full_report``, conforms to :class:`Report`), the types, and
``docs/report-schema.md`` (every key of every TypedDict is mentioned in the doc section its
docstring names, and every key a doc table lists resolves to a key of the types).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from otelbench.loadgen.affinity import CpuPlan
from otelbench.loadgen.runner import LoadSpec, _arrival, _tokenizer_declaration
from otelbench.loadgen.tokenizers import load_tokenizer
from otelbench.loadgen.warmup import WarmupOutcome, WarmupSpec, probe_summary
from otelbench.loadgen.workloads import make_workload
from otelbench.metrics import TTFT_COMPONENTS
from otelbench.model import report as rt
from otelbench.model.conform import conforms, typeddicts_of
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.report import CONFIGURATION_LABELS
from otelbench.query import extract_run_data, open_store
from otelbench.report import render_json, report_from_data
from tests.unit.golden.outputs import SCENARIOS
from tests.unit.loadgen.test_tokenizers import build_tiny_tokenizer
from tests.unit.report.test_sections import full_report

DOC = Path(__file__).parents[3] / "docs" / "report-schema.md"


def _scenario_report(name: str, tmp_path: Path) -> Any:
    store = SCENARIOS[name](tmp_path / f"{name}.duckdb")
    with open_store(store) as runner:
        report = report_from_data(extract_run_data(runner, None))
    return json.loads(render_json(report))  # what a reader of report.json sees


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_golden_report_conforms(name: str, tmp_path: Path) -> None:
    assert conforms(_scenario_report(name, tmp_path), rt.Report) == []


def test_the_report_with_every_optional_section_conforms() -> None:
    report = json.loads(render_json(full_report()))
    assert {"reasoning"} <= set(report["metrics"]["client"])
    assert {"fluidity", "classes"} <= set(report["metrics"])
    assert report["run"]["load_generator"] is not None
    assert conforms(report, rt.Report) == []


def test_the_manifest_declarations_conform() -> None:
    """``run.warmup`` and ``run.tokenizer`` are copied from the run manifest: the objects the
    load generator writes there have the types' shapes."""
    spec = WarmupSpec(min_requests=2, min_output_tokens=4, probes=2)
    warm = WarmupOutcome(spec=spec, concurrency=2, seed=7, requests=3, output_tokens=12)
    warm.probe_before = probe_summary([], spec.threshold)
    after = probe_summary([], spec.threshold)
    round_ = {"requests": 3, "failed": 0, "output_tokens": 12, "duration_s": 0.5}
    warm.rounds = [{**round_, "probe_after": after}]
    cold = WarmupOutcome(spec=WarmupSpec(cold_start=True))
    for manifest in (warm.to_manifest(), cold.to_manifest(), {"mode": "warm", "interrupted": True}):
        assert conforms(json.loads(json.dumps(manifest)), rt.Warmup) == []
    assert conforms(_tokenizer_declaration(None, 32000), rt.Tokenizer) == []


@pytest.mark.parametrize("kind", ["tokenizer.json", "cl100k_base"])
def test_a_loaded_tokenizers_declaration_conforms(kind: str, tmp_path: Path) -> None:
    """``run.tokenizer`` of a run with ``--tokenizer``: the tokenizer's own declaration."""
    spec = str(build_tiny_tokenizer(tmp_path / "tiny")) if kind == "tokenizer.json" else kind
    declared = json.loads(json.dumps(load_tokenizer(spec).describe()))
    assert "version" in declared
    assert conforms(declared, rt.Tokenizer) == []


@pytest.mark.parametrize(
    "load",
    [
        LoadSpec(mode="bursty", requests=20, rate=4.0, arrival_params={"cv": 2.0}),
        LoadSpec(mode="closed_loop", requests=20, concurrency=4),
    ],
)
def test_the_manifest_load_and_workload_conform(load: LoadSpec) -> None:
    """``run.load`` and ``run.workload`` are the run manifest's: what the load generator writes
    there (``loadgen.runner``: the load spec, its arrival process, the workers and their CPUs)
    has the types' shapes."""
    plan = CpuPlan(load=(0,), rest=(1,))
    workers = {"count": 2, "chosen": "--workers", "start_method": "forkserver"}
    manifest = {
        **asdict(load),
        "arrival": _arrival(load, 7),
        "workers": {**workers, "cpus": plan.describe({"collector": os.getpid(), "sut": None})},
    }
    assert conforms(json.loads(json.dumps(manifest)), rt.RunLoad) == []
    spec = make_workload("synthetic-uniform", seed=7).spec()
    workload = {"name": "synthetic-uniform", "seed": 7, "spec": json.loads(json.dumps(spec))}
    assert conforms(workload, rt.RunWorkload) == []


def test_the_checker_finds_an_unknown_key_a_missing_key_and_a_wrong_type(tmp_path: Path) -> None:
    report = _scenario_report("hooks", tmp_path)
    report["metrics"]["client"]["ttft_ms"]["p99_99"] = 1.0
    report["metrics"]["client"]["throughput"]["requests"] = "4"
    del report["run"]["requests"]["failed"]
    report["metrics"]["server"]["preemptions"]["rate"] = True
    report["compliance"]["verdict"] = "compliant"
    report["metrics"]["fluidity"]["deadlines"][1]["fluidity_index"] = []
    assert sorted(conforms(report, rt.Report)) == [
        "$.compliance.verdict: 'compliant' is none of "
        "['not compliant', 'conditionally compliant', 'unconditionally compliant']",
        "$.metrics.client.throughput.requests: expected int, got str",
        "$.metrics.client.ttft_ms: unknown key p99_99",
        "$.metrics.fluidity.deadlines[1].fluidity_index: expected FluidityIndex (an object), "
        "got list",
        "$.metrics.server.preemptions.rate: expected float | None, got bool",
        "$.run.requests: missing key failed",
    ]


def test_optional_keys_are_optional_and_an_int_is_a_number() -> None:
    assert conforms({"client": None}, rt.Metrics) == [
        "$.client: expected ClientMetrics (an object), got NoneType"
    ]
    row = {"count": 1, "p50": 2, "p95": 2.5, "p99": None}
    assert conforms(row, rt.ShortSummary) == []
    assert conforms({**row, "count": 1.0}, rt.ShortSummary) == ["$.count: expected int, got float"]


def test_a_json_value_field_takes_any_json_and_nothing_else() -> None:
    """Open data (``parameters``, ``extra_body``) is typed ``JsonValue``: any JSON passes, a
    value json.dumps could not write, or would write as something else, is named by its path."""
    value = {"a": [1, 2.5, True, None, "x", {"b": {}}], "c": float("inf")}
    assert conforms(value, JsonObject) == []
    assert conforms({"a": [1, (2, 3)], "b": {1: "x"}, "c": {4}}, JsonObject) == [
        "$.a[1]: expected a JSON value, got tuple",
        "$.b: key 1 is not a str",
        "$.c: expected a JSON value, got set",
    ]


# ------------------------------------------------------------------------------------------
# the types against docs/report-schema.md
# ------------------------------------------------------------------------------------------


def _sections() -> dict[str, str]:
    """The doc's ``## `` sections by title: the heading's first code span, else its text."""
    out: dict[str, str] = {}
    for part in re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        code = re.search(r"`([^`]+)`", heading)
        out[code.group(1) if code else heading.strip()] = body
    return out


def _names(text: str) -> set[str]:
    """Every identifier in the code spans and ``{…}`` spans of ``text``."""
    spans = re.findall(r"`([^`]+)`|\{([^{}]+)\}", text)
    return {w for pair in spans for s in pair for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s)}


def test_the_top_level_keys_are_the_doc_sections() -> None:
    sections = {title.split(".")[0] for title in _sections()}
    assert sections - set(get_type_hints(rt.Report)) == {
        "The *summary* shape",
        "Markdown rendering",
        "HTML rendering",
    }
    assert set(get_type_hints(rt.Report)) <= sections
    assert {f"metrics.{key}" for key in get_type_hints(rt.Metrics)} <= set(_sections())


def test_every_key_of_the_types_is_in_its_doc_section() -> None:
    sections = _sections()
    undocumented = []
    for name, tp in sorted(typeddicts_of(rt.Report).items()):
        if tp in (rt.Report, rt.ReportBody, rt.Metrics):
            continue  # their keys are the doc's sections
        found = re.search(r"section\s+``([^`]+)``", tp.__doc__ or "")
        assert found is not None, f"{name}'s docstring names no section of the doc"
        assert found.group(1) in sections, f"{name}: no doc section {found.group(1)!r}"
        names = _names(sections[found.group(1)])
        undocumented += [f"{name}.{key}" for key in get_type_hints(tp) if key not in names]
    assert undocumented == []


TABLES: dict[tuple[str, int], Any] = {
    ("The *summary* shape", 0): rt.Summary,
    ("run", 0): rt.RunSection,
    ("run", 1): rt.ServerTiming,
    ("run", 2): rt.LoadGenerator,
    ("run", 3): rt.Sent,
    ("run", 4): rt.ClientHealth,
    ("metrics.client", 0): rt.ClientMetrics,
    ("metrics.client", 1): rt.InputLengthBucket,
    ("metrics.client", 2): rt.Throughput,
    ("metrics.client", 3): rt.ItlShape,
    ("metrics.client", 4): rt.Reasoning,
    ("metrics.server", 0): rt.ServerMetrics,
    ("metrics.server", 1): rt.TtftDecomposition,
    ("metrics.server", 2): rt.Preemptions,
    ("metrics.server", 3): rt.EngineStepsSection,
    ("metrics.server", 4): rt.RequestEnds,
    ("metrics.fluidity", 0): rt.Fluidity,
    ("metrics.fluidity", 1): rt.DeadlineRow,
    ("metrics.fluidity", 2): rt.FluidRate,
    ("metrics.classes", 0): rt.Classes,
    ("metrics.classes", 1): rt.ClassRow,
    ("metrics.guardrails", 0): rt.Guardrails,
    ("methodology", 0): rt.Methodology,
    ("data_quality", 0): rt.DataQuality,
    ("configuration", 0): rt.Configuration,
    ("compliance", 0): rt.ComplianceSection,
    ("compliance", 1): None,  # the checks by id: values of compliance.checks[].id, not keys
    ("compliance", 2): None,  # the whole-test checks by id, likewise
}
"""Each key table of the doc (by section and order in it) and the TypedDict it describes."""


def _key_tables() -> Iterator[tuple[tuple[str, int], list[str]]]:
    """Each table of the doc by section and order, with the first cell of its rows."""
    for title, body in _sections().items():
        tables = re.findall(r"((?:^\|.*\|\n)+)", body, flags=re.MULTILINE)
        for i, table in enumerate(tables):
            rows = table.strip().splitlines()[2:]
            yield (title, i), [row.split("|")[1] for row in rows]


def _field(tp: Any, key: str) -> Any:
    """The type of key ``key`` of the TypedDicts in ``tp`` (through ``| None`` and lists); Any
    below a manifest's own object; None when no TypedDict there has the key."""
    if is_typeddict(tp):
        return get_type_hints(tp).get(key)
    if tp is Any or get_origin(tp) is dict:
        return Any
    for arg in get_args(tp):
        found = _field(arg, key)
        if found is not None:
            return found
    return None


def test_every_key_in_the_doc_tables_is_in_the_types() -> None:
    tables = dict(_key_tables())
    assert set(tables) == set(TABLES)
    missing = []
    for where, cells in sorted(tables.items()):
        root = TABLES[where]
        if root is None:
            continue
        for cell in cells:
            parent: list[str] = []
            for path in re.findall(r"`([^`]+)`", cell):
                keys = [*parent, *path[1:].split(".")] if path.startswith(".") else path.split(".")
                parent = keys[:-1]
                tp = root
                for key in keys:
                    tp = _field(tp, key)
                    if tp is None:
                        missing.append(f"{where[0]}: {'.'.join(keys)}")
                        break
    assert missing == []


def test_the_configuration_type_has_the_summary_items() -> None:
    assert list(get_type_hints(rt.Configuration)) == list(CONFIGURATION_LABELS)


def test_the_decomposition_type_has_the_ttft_components() -> None:
    components = list(TTFT_COMPONENTS)
    assert list(get_type_hints(rt.ComponentShares)) == components
    assert [k for k in get_type_hints(rt.TtftDecomposition) if k in components] == components
