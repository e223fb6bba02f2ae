"""Every rendered output of the stored test scenarios, for byte-for-byte comparison.

:func:`generate` writes the ``report.json``/``report.md``/``report.html`` of each span-store
scenario of ``tests/unit/query/spanstore.py`` (and the guardrail scenario), the ``compare.md``
and ``compare.json`` of those reports, and two procedures' ``procedure.md``/``procedure.html``.
``tests/unit/golden/test_golden.py`` compares their SHA-256 digests with the committed
``expected.sha256``; ``python -m tests.unit.golden.outputs DIR`` writes them for a ``diff -r``.
None of them holds a wall-clock time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otelbench.compare import RunReport, compare_runs
from otelbench.procedures import (
    CapacityParams,
    CapacityProcedure,
    TradeoffParams,
    TradeoffProcedure,
)
from otelbench.procedures.tradeoff import SWEEP_ROLE
from otelbench.query import extract_run_data, open_store
from otelbench.render.compare import render_compare_markdown
from otelbench.render.html import render_html, render_procedure_html
from otelbench.render.procedure import render_procedure
from otelbench.report import render_json, render_markdown, report_from_data
from otelbench.report.compliance import procedure_compliance
from otelbench.report.curve import procedure_curve
from otelbench.report.plot_data import plot_data
from tests.unit.procedures.test_reports import TABLE_5, capacity_levels, level, spec
from tests.unit.query.spanstore import write_hook_scenario, write_scenario
from tests.unit.report.test_guardrails import write_guarded

SCENARIOS: dict[str, Callable[[Path], Path]] = {
    "scenario": write_scenario,
    "client_only": lambda p: write_scenario(p, with_server=False),
    "hooks": write_hook_scenario,
    "guarded": write_guarded,
    "guarded_no_stage_totals": lambda p: write_guarded(p, stage_totals=False),
}


def _procedures(tmp: Path, run_report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The two procedures' outputs; every level's run report is ``run_report`` (the
    compliance verdict reads them)."""
    tradeoff = TradeoffProcedure(TradeoffParams(capacity_rps=20.0, slo_ttft_p99_ms=600.0))
    tradeoff.bind(spec(tmp))
    levels = [
        level(
            i + 1,
            {
                "offered_rps": r,
                "output_tokens_per_s": t,
                "ttft_p50_ms": p50,
                "ttft_p99_ms": p99,
                "achieved_rps": r * 0.99,
                "arrival_rps": r,
                "completion_rps": r,
                "queue_growth": "stable",
            },
            role=SWEEP_ROLE,
            fraction=0.1 * (i + 1),
        )
        for i, (r, t, p50, p99) in enumerate(TABLE_5)
    ]
    capacity = CapacityProcedure(CapacityParams(initial_concurrency=8, slo_ttft_p99_ms=300.0))
    capacity.bind(spec(tmp))
    cap_levels = capacity_levels(capacity)
    out = {}
    for name, procedure, lv, section in (
        ("tradeoff", tradeoff, levels, "5.3"),
        ("capacity", capacity, cap_levels, "5.5"),
    ):
        body = procedure.build(lv)
        result = {
            "title": procedure.title,
            "draft_section": section,
            "procedure": procedure.name,
            "profile": "quick",
            "store": "spans.duckdb",
            "duration_s": 12.0,
            "runs": [],
            "parameters": procedure.effective_parameters(),
            "deviations": body["deviations"],
            "notes": [],
            "configuration": {
                "sut": {"boundary": "Model Engine", "hardware": "1x L4"},
                "workload": {"name": "w", "seed": 1},
                "warmup": None,
            },
            **body,
        }
        reports = [(f"level {x.index} ({x.label})", run_report) for x in lv]
        result["compliance"] = procedure_compliance(result, reports)
        md = render_procedure(result, procedure.render(result))
        out[name] = {
            "result": result,
            "md": md,
            "html": render_procedure_html(result, md, procedure_curve(result)),
        }
    return out


def generate(out: Path, tmp: Path) -> list[Path]:
    """Write every output under ``out`` (``tmp`` holds the span stores); returns the files."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def write(name: str, text: str) -> None:
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)

    reports = []
    for name, writer in SCENARIOS.items():
        store = writer(tmp / f"{name}.duckdb")
        with open_store(store) as runner:
            data = extract_run_data(runner, None)
        report = report_from_data(data)
        reports.append((name, report))
        write(f"{name}.report.json", render_json(report))
        write(f"{name}.report.md", render_markdown(report))
        write(f"{name}.report.html", render_html(report, plot_data(data)))
        write(f"{name}.report-noplots.html", render_html(report))
    runs = []
    for i in range(3):
        for name, report in reports:
            r = {**report, "run": {**report["run"], "id": f"{name}-{i}"}}
            path = Path(f"/runs/{name}-{i}/report.json")
            runs.append(RunReport(path=path, report=r, system=name))
    compared = compare_runs(runs, resamples=200)
    write("compare.json", render_json(compared))
    write("compare.md", render_compare_markdown(compared))
    for name, p in _procedures(tmp, reports[0][1]).items():
        write(f"{name}.procedure.json", render_json(p["result"]))
        write(f"{name}.procedure.md", p["md"])
        write(f"{name}.procedure.html", p["html"])
    return written


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        for path in generate(Path(sys.argv[1]), Path(t)):
            print(path)
