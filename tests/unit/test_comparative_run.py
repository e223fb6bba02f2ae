"""The comparative run a SUT declaration names (``guardrails.comparative_run``, draft 4.8.2), as
``otelbench run`` reads it into ``run.sut.guardrails.comparative``
(:func:`otelbench.benchmark.comparative_run_facts`): a run's report, a guardrail-overhead
procedure, or why nothing was read; each of :data:`otelbench.model.sut.ComparativeRun`'s
shapes."""

from __future__ import annotations

import json
from pathlib import Path

from otelbench.benchmark import comparative_run_facts
from otelbench.model.conform import conforms
from otelbench.model.sut import ComparativeRun
from tests.unit.report.test_compliance import full_report


def test_a_run_report(tmp_path: Path) -> None:
    report = full_report()
    report["run"]["sut"]["guardrails"] = {"input_filter": "none", "output_filter": "none"}
    report["configuration"] = {"guardrails": "input_filter: none; output_filter: none"}
    (tmp_path / "report.json").write_text(json.dumps(report), encoding="utf-8")
    facts = comparative_run_facts(tmp_path)
    assert facts == {
        "read": True,
        "path": str(tmp_path / "report.json"),
        "kind": "run",
        "run_id": "r-full",
        "guardrails": "input_filter: none; output_filter: none",
        "declared": {"input_filter": "none", "output_filter": "none"},
        "workload": report["run"]["workload"]["name"],
        "seed": report["run"]["seed"],
        "requests": report["run"]["requests"]["succeeded"],
        "ttft_p50_ms": report["metrics"]["client"]["ttft_ms"]["p50"],
        "e2e_p50_ms": report["metrics"]["client"]["e2e_ms"]["p50"],
    }
    assert conforms(facts, ComparativeRun) == []


def test_a_guardrail_overhead_procedure(tmp_path: Path) -> None:
    path = tmp_path / "procedure.json"
    table = [{"configuration": "baseline"}, {"configuration": "full"}, "not a row"]
    path.write_text(json.dumps({"procedure": "guardrail-overhead", "table13": table}))
    facts = comparative_run_facts(path)
    assert facts == {
        "read": True,
        "path": str(path),
        "kind": "procedure",
        "configurations": ["baseline", "full"],
    }
    assert conforms(facts, ComparativeRun) == []


def test_nothing_to_read(tmp_path: Path) -> None:
    missing = comparative_run_facts(tmp_path / "nope.json")
    assert missing["read"] is False
    assert missing == {
        "read": False,
        "path": str(tmp_path / "nope.json"),
        "reason": missing["reason"],
    }
    assert missing["reason"].startswith("FileNotFoundError: ")
    (tmp_path / "list.json").write_text("[1, 2]")
    assert comparative_run_facts(tmp_path / "list.json") == {
        "read": False,
        "path": str(tmp_path / "list.json"),
        "reason": "not a JSON object",
    }
    assert conforms(missing, ComparativeRun) == []
