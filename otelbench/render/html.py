"""Render a run report as one self-contained HTML page with inline SVG plots (issue 5).

:func:`render_html` takes the report (:class:`~otelbench.model.report.Report`,
``docs/report-schema.md``) and, optionally, the compact per-request plot data that
:func:`otelbench.report.plot_data.plot_data` builds (:class:`~otelbench.model.plots.PlotData`)
and a multi-level procedure's throughput-latency curve (:mod:`otelbench.report.curve`). It
returns one HTML document that opens offline: no script, style sheet, font or image is loaded
from anywhere; the plots are inline SVG drawn by :mod:`otelbench.render.svg`, hover text is
SVG ``<title>``, and one short inline script at the end marks the page
(``<html data-script="ok" data-plots="…" data-plots-drawn="…">``) so a headless browser can
prove that every plot drew with no script error.

Plots, each a ``<figure data-plot="NAME">``, in this order (:data:`PLOTS`):

========================  ====================================================================
``ttft_cdf``              client (and server) TTFT CDF; from the reported percentiles alone
                          when there is no plot data
``ttft_histogram``        TTFT histogram (plot data)
``ttft_by_input``         TTFT against input length: per-request points with each bucket's
                          P50/P99, or the buckets' P50/P95/P99 bars from the report
``itl_histogram``         client Option B and server Option C ITL histograms (plot data)
``jitter``                per-request ITL jitter over the run, or its P50/P95/P99 bars
``throughput_latency``    throughput-latency curve with knee and saturation marked, of a
                          multi-level procedure (``otelbench.report.curve.CURVE_SHAPE``)
``fluidity_cdf``          fluidity-index CDF per Etalon decode-deadline preset
``fairness``              per-class TTFT percentiles, Jain's index and starvation
``preemption_timeline``   cumulative preemptions over the run (plot data)
``waterfall``             queue / prefill / decode / guardrail of a few sampled requests next to
                          the client's wait and stream (plot data)
========================  ====================================================================

A plot whose data the run lacks shows "not measured in this run" and why, never an empty axis.
Tables carry the headline numbers (client vs server TTFT, ITL, TPOT, e2e), the deviations and
the methodology declarations. All text is escaped.

Usage::

    from otelbench.query import extract_run_data, open_store
    from otelbench.report import report_from_data
    from otelbench.render.html import render_html
    from otelbench.report.plot_data import plot_data

    with open_store("otelbench.duckdb") as runner:
        data = extract_run_data(runner)
    page = render_html(report_from_data(data), plot_data(data))
    open("report.html", "w").write(page)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from otelbench.model.plots import PlotData, ThroughputLatencyCurve
from otelbench.model.procedure import ProcedureReport
from otelbench.model.report import CONFIGURATION_LABELS, ComplianceSection, Report, Summary
from otelbench.render.figures import (
    FIGURES,
    PLOTS,
    Figure,
    esc,
    html_table,
    throughput_latency,
)
from otelbench.render.format import NA, fmt, load_text
from otelbench.render.markdown import request_ends_table, server_timing_text

__all__ = [
    "PLOTS",
    "render_html",
    "render_procedure_html",
]

# ------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------


def _run_table(report: Report) -> str:
    run = report["run"]
    req = run["requests"]
    thr = report["metrics"]["client"]["throughput"]
    workload = run["workload"]
    sut = run["sut"]
    rows = [
        ("run id", run["id"]),
        ("model", run["model"] or "not recorded"),
        ("target", run["target"] or "not recorded"),
        ("API", run["api"] or "not recorded"),
        ("workload", str(workload.get("name")) if workload is not None else "not recorded"),
        ("load", load_text(run["load"])),
        (
            "requests",
            f"{req['total']} ({req['succeeded']} succeeded, {req['failed']} failed)",
        ),
        ("duration", fmt(run["duration_s"], 1, "s")),
        ("output throughput", fmt(thr["output_tokens_per_s"], 1, "tokens/s")),
        ("request throughput", fmt(thr["requests_per_s"], 3, "req/s")),
        ("SUT boundary", sut.get("boundary") or "not recorded"),
        ("hardware", sut.get("hardware") or "not recorded"),
        ("software", sut.get("software") or "not recorded"),
        ("server timing", server_timing_text(sut["server_timing"])),
    ]
    return html_table(("", ""), rows, cls="kv")


_LATENCY_COLUMNS: Final[
    tuple[Literal["min", "p50", "p90", "p95", "p99", "p99_9", "mean", "max"], ...]
] = ("min", "p50", "p90", "p95", "p99", "p99_9", "mean", "max")
"""The summary statistics the latency table shows (5.1.5.2 asks for P99.9 and the minimum)."""


def _latency_row(label: str, side: str, s: Summary) -> tuple[str, ...]:
    """One row of the latency table: a summary's count and :data:`_LATENCY_COLUMNS`."""
    return (label, side, str(s["count"]), *(fmt(s[p]) for p in _LATENCY_COLUMNS))


def _latency_table(report: Report) -> str:
    client = report["metrics"]["client"]
    server = report["metrics"].get("server")
    rows = []
    for label, client_summary, server_summary in (
        ("TTFT", client["ttft_ms"], server["ttft_ms"] if server is not None else None),
        ("ITL", client["itl_ms"], server.get("itl_ms") if server is not None else None),
        ("TPOT", client["tpot_ms"], server["tpot_ms"] if server is not None else None),
        ("E2E", client["e2e_ms"], server["e2e_ms"] if server is not None else None),
    ):
        rows.append(_latency_row(label, "client", client_summary))
        if server_summary is not None:
            rows.append(_latency_row(label, "server", server_summary))
    if server is not None:
        rows.append(
            _latency_row("TTFT client − server", "both", server["client_minus_server_ttft_ms"])
        )
    return html_table(
        ("metric (ms)", "side", "count", "min", "P50", "P90", "P95", "P99", "P99.9", "mean", "max"),
        rows,
    )


def _request_ends(report: Report) -> list[str]:
    """``metrics.server.request_ends`` as report.md shows it: client outcome by server end
    reason, and the rest in words (nothing when the report has no such section)."""
    server = report["metrics"].get("server")
    table = request_ends_table(server.get("request_ends") if server is not None else None)
    if table is None:
        return []
    header, rows, notes = table
    return [
        "<h2>Requests by end: client vs server</h2>",
        html_table(header, rows) if rows else "",
        '<ul class="ends">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>",
    ]


def _configuration_table(report: Report) -> str:
    """The configuration summary (draft 5.1.5.1), as report.md shows it."""
    summary: Mapping[str, object] = report["configuration"]  # one line (str) per label's key
    rows = [(label, str(summary[key])) for key, label in CONFIGURATION_LABELS.items()]
    return html_table(("", ""), rows, cls="kv")


def _methodology(report: Report) -> str:
    m = report["methodology"]
    itl = m["itl_method"]
    items: list[tuple[str, str]] = [
        ("ITL method", f"Option {itl['option']}: {itl['name']}. {itl['description']}"),
        ("ITL protocol", itl["protocol"]),
        ("chunk token source", str(itl["chunk_token_source"])),
        ("server ITL", itl["server_side"]),
    ]
    steps = itl.get("server_engine_steps")
    if steps:
        items.append(("engine steps", steps))
    multi_token = itl.get("server_multi_token_handling")
    if multi_token:
        items.append(("several tokens of one engine step", multi_token))
    items += [
        ("first token", m["first_token_definition"]),
        ("TPOT", m["tpot_definition"]),
        ("jitter", m["jitter_definition"]),
        ("percentiles", m["percentile_method"]),
        ("standard deviation", m["std_definition"]),
        ("throughput window", m["throughput_window"]),
        ("latency population", m["latency_population"]),
    ]
    items += [(f"clock: {k}", str(v)) for k, v in m["clock_domains"].items()]
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


def _deviations(report: Report) -> str:
    devs = report["methodology"]["deviations"]
    if not devs:
        return "<p>None.</p>"
    return '<ul class="deviations">' + "".join(f"<li>{esc(d)}</li>" for d in devs) + "</ul>"


# ------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------

_CSS: Final = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       margin: 0 auto; padding: 16px 24px 48px; max-width: 1320px; background: #fafafa; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0 0 6px; }
.subtitle { color: #555; margin: 0 0 12px; }
table { border-collapse: collapse; margin: 8px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
table.kv td:first-child { font-weight: 600; } table.kv td { text-align: left; }
table.kv thead { display: none; } table.compact { font-size: 12px; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr));
         gap: 16px; }
figure.plot { margin: 0; padding: 12px; background: #fff; border: 1px solid #ddd;
              border-radius: 4px; }
figcaption p { margin: 4px 0; color: #444; font-size: 12.5px; }
p.absent { color: #8a6d00; background: #fff8e1; border: 1px dashed #e0c060; padding: 24px;
           text-align: center; font-style: italic; }
svg.chart { width: 100%; height: auto; max-width: 100%; font-size: 11px; }
svg.chart .grid { stroke: #eee; } svg.chart .axis, svg.chart .tick { stroke: #444; }
svg.chart .frame { stroke: none; } svg.chart .tick-label { fill: #444; }
svg.chart .axis-title { fill: #222; font-size: 12px; }
svg.chart .ref { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg.chart .legend-item text { fill: #222; }
dl { background: #fff; border: 1px solid #ddd; padding: 8px 12px; }
dt { font-weight: 600; margin-top: 6px; } dd { margin: 0 0 0 16px; color: #333; }
ul.deviations li { margin: 3px 0; }
pre.markdown { background: #fff; border: 1px solid #ddd; padding: 8px 12px; white-space: pre-wrap;
  font-size: 12px; }
"""

_HEAD_SCRIPT: Final = (
    "window.addEventListener('error',function(e){document.documentElement.setAttribute("
    "'data-script-error',String(e.message||e));});"
)
_TAIL_SCRIPT: Final = (
    "(function(){var f=document.querySelectorAll('figure[data-plot]'),d=0,i,s;"
    "for(i=0;i<f.length;i++){s=f[i].querySelector('svg');if(s&&s.querySelector('.data')"
    "&&s.querySelector('.data').childElementCount>0){d++;}}"
    "var h=document.documentElement;h.setAttribute('data-plots',String(f.length));"
    "h.setAttribute('data-plots-drawn',String(d));h.setAttribute('data-script','ok');})();"
)


def _page(title: str, subtitle: str, body: Sequence[str]) -> str:
    """The one page shell of ``report.html`` and ``procedure.html``: a self-contained document
    (inline CSS, the head and tail scripts), its title, a subtitle line (``subtitle`` is escaped
    HTML) and the body's HTML parts."""
    return "".join(
        [
            "<!DOCTYPE html>\n",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{_CSS}</style>",
            f"<script>{_HEAD_SCRIPT}</script>",
            "</head><body>",
            f"<h1>{esc(title)}</h1>",
            f'<p class="subtitle">{subtitle} · IETF LLM benchmarking methodology</p>',
            *body,
            f"<script>{_TAIL_SCRIPT}</script>",
            "</body></html>\n",
        ]
    )


def _verdict(compliance: ComplianceSection | None) -> str:
    """The methodology compliance verdict of each test a report or procedure stands for (draft
    2), with the unmet statements' ids; empty when a procedure result has no compliance."""
    if compliance is None:
        return ""
    rows = "".join(
        f"<tr><td>{esc(t['test'])} {esc(t['title'])}</td>"
        f"<td><strong>{esc(t['verdict'])}</strong></td>"
        f"<td>{esc(', '.join([*t['unmet_must'], *t['unmet_should']]) or '—')}"
        "</td></tr>"
        for t in compliance["tests"]
    )
    return (
        "<h2>Methodology compliance (draft 2)</h2>"
        f"<p>Verdict: <strong>{esc(compliance['verdict'])}</strong> (the lowest of its "
        "tests')</p><table><tr><th>Test</th><th>Verdict</th><th>Not met</th></tr>"
        f"{rows}</table>"
    )


def render_html(
    report: Report,
    plot_data: PlotData | None = None,
    *,
    curve: ThroughputLatencyCurve | None = None,
) -> str:
    """The report as one self-contained HTML page (no external resource) with inline SVG plots.

    ``plot_data`` is :func:`otelbench.report.plot_data.plot_data`'s value. Without it the plots
    that need per-request data say so; the others are drawn from the report alone. The
    throughput-latency curve is drawn from ``curve``, a multi-level procedure's
    (:func:`otelbench.report.curve.curve_of`); without one the figure says that a single load
    level was run.

    >>> page = render_html(report_from_data(data), plot_data(data))  # doctest: +SKIP
    >>> page.startswith("<!DOCTYPE html>")  # doctest: +SKIP
    True
    """
    figures = []
    for name, title in PLOTS:
        fig = Figure(name, title)
        if name == "throughput_latency":
            throughput_latency(fig, curve)
        else:
            FIGURES[name](fig, report, plot_data)
        figures.append(fig.html())
    title = f"otelbench report — run {report['run']['id']}"
    return _page(
        title,
        f"model {esc(report['run']['model'] or 'not recorded')} · report schema "
        f"{esc(report['schema_version'])}",
        [
            _verdict(report["compliance"]),
            "<h2>Run</h2>",
            _run_table(report),
            "<h2>Configuration (draft 5.1.5.1)</h2>",
            _configuration_table(report),
            "<h2>Headline latencies: client vs server</h2>",
            _latency_table(report),
            *_request_ends(report),
            "<h2>Plots</h2>",
            f'<div class="plots">{"".join(figures)}</div>',
            "<h2>Deviations from the draft</h2>",
            _deviations(report),
            "<h2>Methodology</h2>",
            _methodology(report),
        ],
    )


def render_procedure_html(
    result: ProcedureReport, markdown: str, curve: ThroughputLatencyCurve
) -> str:
    """``procedure.html``: the procedure's throughput-latency ``curve``
    (:func:`otelbench.report.curve.procedure_curve`: a note when its levels form none), links to
    each level's ``report.html``, and ``procedure.md`` itself. Self-contained, like
    :func:`render_html`, with the same script markers.

    >>> curve = procedure_curve(result.result)  # doctest: +SKIP
    >>> page = render_procedure_html(result.result, result.markdown, curve)  # doctest: +SKIP
    """
    section = str(result.get("draft_section", ""))
    source = f"draft {section}" if section[:1].isdigit() else section
    title = f"{result.get('title', 'procedure')} ({source}) — otelbench procedure"
    fig = Figure("throughput_latency", "Throughput–latency curve")
    throughput_latency(fig, curve)
    links = "".join(
        f'<li><a href="{esc(str(run["report"]).removesuffix(".json") + ".html")}">'
        f"{esc(run.get('index'))}. {esc(run.get('label'))}</a></li>"
        if run.get("report")
        else f"<li>{esc(run.get('index'))}. {esc(run.get('label'))} (no stored report)</li>"
        for run in result.get("runs") or []
    )
    return _page(
        title,
        f"profile {esc(result.get('profile', NA))} · procedure schema "
        f"{esc(result.get('schema_version', NA))}",
        [
            _verdict(result.get("compliance")),
            f'<div class="plots">{fig.html()}</div>',
            "<h2>Levels (each with its own report)</h2>",
            f"<ul>{links}</ul>",
            "<h2>Procedure report</h2>",
            f'<pre class="markdown">{esc(markdown)}</pre>',
        ],
    )
