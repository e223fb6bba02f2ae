"""``compare.md``: a multi-system comparison (draft section 6) as Markdown, and the words both
the comparison's deviations and its page use for systems and values.

:func:`render_compare_markdown` renders a :class:`~otelbench.model.compare.CompareResult`
(:func:`otelbench.compare.compare_runs`'s value, or ``compare.json`` read back) and computes
nothing.

Example::

    from otelbench.compare import compare_runs, load_run
    from otelbench.render.compare import render_compare_markdown

    print(render_compare_markdown(compare_runs([load_run(Path(d)) for d in dirs])))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from otelbench.model import compare as ct
from otelbench.render.format import markdown_cell, markdown_table
from otelbench.render.markdown import compliance_lines

__all__ = ["display", "render_compare_markdown", "short", "system_labels", "values_text"]


def display(value: Any) -> str:
    if value is None:
        return "not recorded"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def short(value: Any, limit: int = 80) -> str:
    text = display(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def values_text(check: ct.ChecklistItem, label: Mapping[str, str], limit: int = 60) -> str:
    """What differs: ``key: A v, B w; key2: …`` (the dotted keys that differ), each system's
    distinct values joined by `` / ``; the whole values when there is no key to point at."""

    def systems(per_system: Mapping[str, list[Any]]) -> str:
        return ", ".join(
            f"{label[name]} {' / '.join(short(v, limit) for v in values)}"
            for name, values in per_system.items()
        )

    if not check["differences"]:
        return systems(check["values"])
    return "; ".join(
        systems(leaves) if key == "value" else f"{key}: {systems(leaves)}"
        for key, leaves in check["differences"].items()
    )


def system_labels(names: Sequence[str], ids: Sequence[str]) -> dict[str, str]:
    """How tables and deviations name systems: their names when all are short, else ids."""
    short = all(len(n) <= 24 for n in names)
    return {n: (n if short else i) for n, i in zip(names, ids, strict=True)}


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.4g}"


def _fmt_metric(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:.2f} %" if unit == "fraction" else _fmt(value)


def _fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _system_cell(stats: ct.SystemStats, unit: str) -> str:
    if stats["n"] == 0:
        return "n/a"
    mean = _fmt_metric(stats["mean"], unit)
    ci = stats["ci"]
    if ci is None:
        return f"{mean} (n={stats['n']}, no CI)"
    low, high = _fmt_metric(ci["low"], unit), _fmt_metric(ci["high"], unit)
    return f"{mean} [{low}, {high}] (n={stats['n']})"


def _comparison_cell(c: ct.Comparison) -> str:
    rel = c["relative_difference"]
    change = "n/a" if rel is None else f"{rel * 100:+.1f} %"
    welch, perm = c["welch"], c["permutation"]
    if welch is None or perm is None:  # tested with both, or with neither
        return f"{change}, {c['verdict']}"
    verdict = f"**{c['verdict']}**" if c["significant"] else c["verdict"]
    tests = f"p={_fmt_p(welch['p'])} (perm. {_fmt_p(perm['p'])})"
    return f"{change}, {tests}, {verdict}"


def render_compare_markdown(result: ct.CompareResult) -> str:
    """The comparison as Markdown: systems, results table, normalization, checklist,
    statistical method and deviations.

    Example::

        print(render_compare_markdown(compare_runs([load_run(Path(d)) for d in dirs])))
    """
    systems = result["systems"]
    head = system_labels([s["name"] for s in systems], [s["id"] for s in systems])
    base = result["baseline"]
    method = result["method"]
    lines = [
        f"# Comparison of {len(systems)} system(s) (draft section 6)",
        "",
        "## Systems",
        "",
        *markdown_table(
            ["id", "system", "runs", "GPUs"],
            [
                [
                    s["id"],
                    markdown_cell(s["name"]) + (" (baseline)" if s["baseline"] else ""),
                    f"{s['n_runs']}: " + markdown_cell(", ".join(r["id"] for r in s["runs"])),
                    markdown_cell(s["gpus"]["status"]),
                ]
                for s in systems
            ],
        ),
    ]
    conf = f"{method['confidence']:.0%}"
    others = [s for s in systems if s["name"] != base]
    lines += [
        "",
        "## Results",
        "",
        f"Per system: mean over runs [{conf} bootstrap CI] (runs). Against the baseline "
        f"{head[base]}: relative difference, Welch's t-test p (permutation test p), verdict "
        f"at α = {method['alpha']}.",
        "",
    ]
    header = ["metric", *(markdown_cell(head[s["name"]]) for s in systems)]
    header += [f"{markdown_cell(head[s['name']])} vs {markdown_cell(head[base])}" for s in others]
    rows = []
    for m in result["metrics"]:
        unit = "%" if m["unit"] == "fraction" else m["unit"]
        cells = [f"{m['label']} ({unit})"]
        cells += [_system_cell(m["systems"][s["name"]], m["unit"]) for s in systems]
        cells += [_comparison_cell(m["comparisons"][s["name"]]) for s in others]
        rows.append([markdown_cell(c) for c in cells])
    lines += markdown_table(header, rows)
    norm = result["normalization"]
    lines += [
        "",
        "## Normalization (draft 6.2)",
        "",
        f"- Throughput: {norm['throughput']}.",
        f"- Per GPU: {norm['per_gpu']}.",
    ]
    for name, g in norm["systems"].items():
        lines.append(
            f"  - {markdown_cell(head[name])}: {g['status']} (from {'; '.join(g['source'])})"
        )
    lines += [
        f"- Cost: {norm['cost']}.",
        "",
        "## Equivalence checklist (draft 6.1, 6.4)",
        "",
    ]
    rows = []
    for c in result["checklist"]:
        status = c["status"] + (" (identifies the systems)" if c["identity"] else "")
        if c["status"] == "not recorded":
            values = "not recorded in any run"
        elif c["status"] == "equal":
            values = short(c["values"][systems[0]["name"]][0], 100)
        else:
            values = values_text(c, head, 50)
        rows.append([c["label"], c["draft"], status, markdown_cell(values)])
    lines += markdown_table(["item", "draft", "status", "values"], rows)
    lines += ["", "## Methodology Compliance", "", *compliance_lines(result["compliance"])]
    lines.pop()  # compliance_lines ends with a blank line; the next section adds its own
    lines += [
        "",
        "## Statistical method (draft 6.3)",
        "",
        f"- Per system: {method['per_system']}.",
        f"- Difference: {method['difference']}.",
        f"- Primary test: {method['welch_t']}.",
        f"- Also: {method['permutation']}.",
        f"- {method['significance'][0].upper()}{method['significance'][1:]}.",
        "",
        "## Deviations",
        "",
    ]
    lines += [f"- {d}" for d in result["deviations"]] or ["- none"]
    own = [s for s in systems if s["run_deviations"]]
    if own:
        lines += ["", "Deviations the runs' own reports record:", ""]
        for s in own:
            lines.append(f"- {markdown_cell(head[s['name']])}:")
            lines += [f"  - {d}" for d in s["run_deviations"]]
    return "\n".join(lines) + "\n"
