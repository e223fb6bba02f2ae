"""``procedure.md``: the common header and footer around a procedure's own tables.

Header: title and draft section, profile, the configuration summary (5.1.5.1-style) and the
parameters. Footer: the levels and their run reports, the requests cut per level (when a level
had any), deviations, notes, and the procedure's methodology compliance (its own verdict, draft
2). Latencies print in
ms with the precision given; absent values as ``n/a``.

Example::

    markdown = render_procedure(result, ["## Results", "", *table(["a"], [["1"]])])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from otelbench.model.procedure import ProcedureReport
from otelbench.render.format import NA
from otelbench.render.format import fmt as format_number
from otelbench.render.format import markdown_table as table
from otelbench.render.markdown import compliance_lines

__all__ = ["NA", "fmt", "pct", "render_procedure", "table"]


def fmt(value: Any, digits: int = 1, unit: str = "") -> str:
    """A number with ``digits`` decimals (and `` unit``), or ``n/a``
    (:func:`otelbench.render.format.fmt`, one decimal by default)."""
    return format_number(value, digits, unit)


def pct(value: Any, digits: int = 1) -> str:
    """A ratio as a percentage, or ``n/a``."""
    return NA if value is None else f"{100.0 * float(value):.{digits}f}%"


def _value(value: Any) -> str:
    if isinstance(value, Mapping | list):
        return "`" + json.dumps(value, sort_keys=True) + "`"
    return str(value)


def _configuration(result: ProcedureReport) -> list[str]:
    c = result["configuration"]
    sut = c.get("sut") or {}
    workload = c.get("workload") or {}
    warmup = c.get("warmup")
    if warmup is None:
        warm = "none"
    elif "cold_start" in warmup:
        warm = "skipped (cold start, 4.5.3)"
    else:
        outcome = warmup["outcome"]  # a warm-up that ran to its end has figures
        ran = (
            None
            if outcome is None or outcome["mode"] == "cold_start" or "interrupted" in outcome
            else outcome
        )
        warm = (
            f"draft 4.5 warm-up before level {warmup['before_level']}"
            + (f": {ran['requests']} requests" if ran and ran["requests"] else "")
            + (f", stabilized: {ran['stabilized']}" if ran is not None else "")
            + "; the SUT stays warm between levels"
        )
    rows = [
        ["SUT boundary", str(sut.get("boundary", "not declared"))],
        ["SUT software", str(sut.get("software", "not declared"))],
        ["Hardware", str(sut.get("hardware", "not declared"))],
        ["Target", str(c.get("target"))],
        ["Model", str(c.get("model"))],
        ["Workload", f"{workload.get('name')} (seed {workload.get('seed')})"],
        ["Warm-up", warm],
        ["Prefix caching", str(c.get("prefix_caching"))],
        ["Guardrails", str(c.get("guardrails"))],
    ]
    lines = ["## Configuration summary", "", *table(["Item", "Value"], rows), ""]
    configurations = c.get("configurations") or {}
    if configurations:
        lines += ["## SUT configurations", ""]
        lines += table(
            ["Label", "Started by", "URL", "Description"],
            [
                [
                    str(label),
                    {"vllm-cpu": "otelbench (vLLM on CPU)", "command": "its launch command"}.get(
                        conf["kind"], "already running"
                    )
                    + (f": `{' '.join(args)}`" if (args := conf["vllm_args"]) else ""),
                    str(conf["url"]),
                    conf["description"] or "",
                ]
                for label, conf in configurations.items()
            ],
        )
        lines.append("")
    return lines


def _requests_cut(result: ProcedureReport) -> list[str]:
    """The levels' ``requests_cut`` (``otelbench.procedures.levels.requests_cut``) as a table,
    when a level of ``levels`` had a request cut on either side; nothing otherwise."""
    rows = []
    for lv in result.get("levels") or []:
        cut = lv.get("requests_cut")  # None: a row without its stored run's figures
        if cut is not None and (cut["client"] or cut["server"]):
            rows.append(
                [
                    str(lv.get("index")),
                    str(lv.get("label")),
                    str(cut["client"]),
                    NA if cut["server"] is None else str(cut["server"]),
                    NA if cut["both"] is None else str(cut["both"]),
                ]
            )
    if not rows:
        return []
    header = ["#", "Label", "Client cut (cancelled, timed out)", "Engine did not finish", "Both"]
    return ["## Requests cut", "", *table(header, rows), ""]


def _source(section: str) -> str:
    """``draft 5.3`` for a draft section; a reference outside the draft (``Etalon §4.2``) as is."""
    return f"draft {section}" if section[:1].isdigit() else section


def render_procedure(result: ProcedureReport, body: Sequence[str]) -> str:
    """The whole ``procedure.md``: header, the procedure's ``body`` lines, footer."""
    lines = [
        f"# {result['title']} ({_source(str(result['draft_section']))})",
        "",
        f"Procedure `{result['procedure']}`, profile `{result['profile']}`"
        + (" — **interrupted, partial results**" if result.get("interrupted") else "")
        + f"; {len(result.get('runs', []))} run(s) in "
        + f"{fmt(result.get('duration_s'), 0)} s; spans in `{result['store']}`.",
        "",
        *_configuration(result),
        "## Parameters",
        "",
        *table(
            ["Parameter", "Value"],
            [[k, _value(v)] for k, v in result["parameters"].items()],
        ),
        "",
        *body,
        "",
        "## Runs (one per load level)",
        "",
        *table(
            ["#", "Label", "Load", "Requests", "Run id", "Report"],
            [
                [
                    str(lv["index"]),
                    str(lv["label"]),
                    (
                        f"concurrency {lv.get('concurrency')}"
                        if lv.get("mode") == "closed_loop"
                        else f"{fmt(lv.get('offered_rps'), 3)} req/s {lv.get('mode')}"
                    ),
                    str(lv.get("requests")),
                    str(lv.get("run_id")),
                    f"`{lv['report']}`" if lv.get("report") else NA,
                ]
                for lv in result.get("runs", [])
            ],
        ),
        "",
        *_requests_cut(result),
        "## Deviations from the draft",
        "",
        *([f"- {d}" for d in result["deviations"]] or ["- none"]),
    ]
    if result.get("notes"):
        lines += ["", "## Notes", "", *[f"- {n}" for n in result["notes"]]]
    if result.get("compliance"):
        lines += ["", "## Methodology Compliance", "", *compliance_lines(result["compliance"])]
    return "\n".join(lines).rstrip("\n") + "\n"
