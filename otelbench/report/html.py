"""Render a run report as one self-contained HTML page with inline SVG plots (issue 5).

:func:`render_html` takes the ``report.json`` dict (``docs/report-schema.md``) and, optionally,
the compact per-request plot data that :func:`otelbench.report.plot_data.plot_data` builds (or
finds it under the report's ``plots`` key). It returns one HTML document that opens offline:
no script, style sheet, font or image is loaded from anywhere; the plots are inline SVG drawn by
:mod:`otelbench.report.plots`, hover text is SVG ``<title>``, and one short inline script at the
end marks the page (``<html data-script="ok" data-plots="…" data-plots-drawn="…">``) so a
headless browser can prove that every plot drew with no script error.

Plots, each a ``<figure data-plot="NAME">``, in this order (:data:`PLOTS`):

========================  ====================================================================
``ttft_cdf``              client (and server) TTFT CDF; from the reported percentiles alone
                          when there is no plot data
``ttft_histogram``        TTFT histogram (plot data)
``ttft_by_input``         TTFT against input length: per-request points with each bucket's
                          P50/P99, or the buckets' P50/P95/P99 bars from the report
``itl_histogram``         client Option B and server Option C ITL histograms (plot data)
``jitter``                per-request ITL jitter over the run, or its P50/P95/P99 bars
``throughput_latency``    throughput-latency curve with knee and saturation marked, from a
                          multi-level procedure block (:data:`CURVE_SHAPE`)
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
    from otelbench.report.html import render_html
    from otelbench.report.plot_data import plot_data

    with open_store("otelbench.duckdb") as runner:
        data = extract_run_data(runner)
    page = render_html(report_from_data(data), plot_data(data))
    open("report.html", "w").write(page)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from otelbench.model.report import Report
from otelbench.report.access import NA, dig, fmt, load_text, mapping, number
from otelbench.report.configuration import CONFIGURATION_LABELS
from otelbench.report.figures import (
    CURVE_SHAPE,
    FIGURES,
    PLOTS,
    Figure,
    esc,
    html_table,
    throughput_latency,
)
from otelbench.report.markdown import request_ends_table, server_timing_text

__all__ = [
    "CURVE_SHAPE",
    "PLOTS",
    "render_html",
    "render_procedure_html",
]

# ------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------


def _run_table(report: Mapping[str, Any]) -> str:
    run = mapping(report.get("run"))
    req = mapping(run.get("requests"))
    thr = dig(report, "metrics", "client", "throughput")
    workload = run.get("workload")
    sut = mapping(run.get("sut"))
    rows = [
        ("run id", str(run.get("id", NA))),
        ("model", str(run.get("model") or "not recorded")),
        ("target", str(run.get("target") or "not recorded")),
        ("API", str(run.get("api") or "not recorded")),
        (
            "workload",
            str(workload.get("name")) if isinstance(workload, Mapping) else "not recorded",
        ),
        ("load", load_text(run.get("load"))),
        (
            "requests",
            f"{req.get('total', NA)} ({req.get('succeeded', NA)} succeeded, "
            f"{req.get('failed', NA)} failed)",
        ),
        ("duration", fmt(run.get("duration_s"), 1, "s")),
        ("output throughput", fmt(dig(thr, "output_tokens_per_s"), 1, "tokens/s")),
        ("request throughput", fmt(dig(thr, "requests_per_s"), 3, "req/s")),
        ("SUT boundary", str(sut.get("boundary") or "not recorded")),
        ("hardware", str(sut.get("hardware") or "not recorded")),
        ("software", str(sut.get("software") or "not recorded")),
        ("server timing", server_timing_text(sut.get("server_timing"))),
    ]
    return html_table(("", ""), rows, cls="kv")


_LATENCY_COLUMNS: Final = ("min", "p50", "p90", "p95", "p99", "p99_9", "mean", "max")
"""The summary statistics the latency table shows (5.1.5.2 asks for P99.9 and the minimum)."""


def _latency_table(report: Mapping[str, Any]) -> str:
    client = dig(report, "metrics", "client")
    server = dig(report, "metrics", "server")
    rows = []
    for key, label in (
        ("ttft_ms", "TTFT"),
        ("itl_ms", "ITL"),
        ("tpot_ms", "TPOT"),
        ("e2e_ms", "E2E"),
    ):
        for side, section in (("client", client), ("server", server)):
            s = dig(section, key)
            if not isinstance(s, Mapping):
                continue
            rows.append(
                (
                    label,
                    side,
                    str(s.get("count", NA)),
                    *(fmt(s.get(p)) for p in _LATENCY_COLUMNS),
                )
            )
    diff = dig(server, "client_minus_server_ttft_ms")
    if isinstance(diff, Mapping):
        rows.append(
            (
                "TTFT client − server",
                "both",
                str(diff.get("count", NA)),
                *(fmt(diff.get(p)) for p in _LATENCY_COLUMNS),
            )
        )
    return html_table(
        ("metric (ms)", "side", "count", "min", "P50", "P90", "P95", "P99", "P99.9", "mean", "max"),
        rows,
    )


def _request_ends(report: Mapping[str, Any]) -> list[str]:
    """``metrics.server.request_ends`` as report.md shows it: client outcome by server end
    reason, and the rest in words (nothing when the report has no such section)."""
    table = request_ends_table(dig(report, "metrics", "server", "request_ends"))
    if table is None:
        return []
    header, rows, notes = table
    return [
        "<h2>Requests by end: client vs server</h2>",
        html_table(header, rows) if rows else "",
        '<ul class="ends">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>",
    ]


def _configuration_table(report: Mapping[str, Any]) -> str:
    """The configuration summary (draft 5.1.5.1), as report.md shows it."""
    summary = mapping(report.get("configuration"))
    if not summary:
        return "<p>No configuration summary in this report.</p>"
    rows = [(label, str(summary.get(key, NA))) for key, label in CONFIGURATION_LABELS.items()]
    return html_table(("", ""), rows, cls="kv")


def _methodology(report: Mapping[str, Any]) -> str:
    m = report.get("methodology")
    if not isinstance(m, Mapping):
        return "<p>No methodology declarations in this report.</p>"
    items: list[tuple[str, str]] = []
    itl = m.get("itl_method")
    if isinstance(itl, Mapping):
        items.append(
            (
                "ITL method",
                f"Option {itl.get('option')}: {itl.get('name')}. {itl.get('description')}",
            )
        )
        items.append(("ITL protocol", str(itl.get("protocol"))))
        items.append(("chunk token source", str(itl.get("chunk_token_source"))))
        items.append(("server ITL", str(itl.get("server_side"))))
        for key, label in (
            ("server_engine_steps", "engine steps"),
            ("server_multi_token_handling", "several tokens of one engine step"),
        ):
            if itl.get(key):
                items.append((label, str(itl[key])))
    for key, label in (
        ("first_token_definition", "first token"),
        ("tpot_definition", "TPOT"),
        ("jitter_definition", "jitter"),
        ("percentile_method", "percentiles"),
        ("std_definition", "standard deviation"),
        ("throughput_window", "throughput window"),
        ("latency_population", "latency population"),
    ):
        if m.get(key) is not None:
            items.append((label, str(m.get(key))))
    clocks = m.get("clock_domains")
    if isinstance(clocks, Mapping):
        items += [(f"clock: {k}", str(v)) for k, v in clocks.items()]
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


def _deviations(report: Mapping[str, Any]) -> str:
    devs = dig(report, "methodology", "deviations")
    if not isinstance(devs, list) or not devs:
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


def _verdict(compliance: Any) -> str:
    """The methodology compliance verdict of each test a report stands for (draft 2), with the
    unmet statements' ids; empty when the report has no compliance."""
    if not isinstance(compliance, Mapping):
        return ""
    rows = "".join(
        f"<tr><td>{esc(t.get('test'))} {esc(t.get('title'))}</td>"
        f"<td><strong>{esc(t.get('verdict'))}</strong></td>"
        f"<td>{esc(', '.join([*t.get('unmet_must', []), *t.get('unmet_should', [])]) or '—')}"
        "</td></tr>"
        for t in compliance.get("tests") or []
        if isinstance(t, Mapping)
    )
    return (
        "<h2>Methodology compliance (draft 2)</h2>"
        f"<p>Verdict: <strong>{esc(compliance.get('verdict'))}</strong> (the lowest of its "
        "tests')</p><table><tr><th>Test</th><th>Verdict</th><th>Not met</th></tr>"
        f"{rows}</table>"
    )


def render_html(report: Report, plot_data: Mapping[str, Any] | None = None) -> str:
    """The report as one self-contained HTML page (no external resource) with inline SVG plots.

    ``plot_data`` is :func:`otelbench.report.plot_data.plot_data`'s dict; when None the report's
    own ``plots`` key is used if it has one. Without per-request data the plots that need it say
    so; the others are drawn from the report alone. Sections missing from the report (older
    reports) are tolerated.

    >>> page = render_html(report_from_data(data), plot_data(data))  # doctest: +SKIP
    >>> page.startswith("<!DOCTYPE html>")  # doctest: +SKIP
    True
    """
    plots: Mapping[str, Any] = {}
    given: Mapping[str, Any] = report  # may carry its own "plots" (not a report.json key)
    if isinstance(plot_data, Mapping):
        plots = plot_data
    elif isinstance(given.get("plots"), Mapping):
        plots = given["plots"]
    run_id = dig(report, "run", "id")
    model = dig(report, "run", "model")
    figures = []
    for name, title in PLOTS:
        fig = Figure(name, title)
        FIGURES[name](fig, report, plots)
        figures.append(fig.html())
    title = f"otelbench report — run {run_id if run_id is not None else NA}"
    return _page(
        title,
        f"model {esc(model or 'not recorded')} · report schema "
        f"{esc(report.get('schema_version', NA))}",
        [
            _verdict(report.get("compliance")),
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


def _curve_levels(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The procedure's levels that form one load curve: open-loop levels by offered rate (or,
    when fewer than 3, closed-loop levels by concurrency), of one configuration, by load."""
    levels = [lv for lv in result.get("levels") or [] if isinstance(lv, Mapping)]
    if len({lv.get("configuration") for lv in levels}) > 1:
        return []  # configurations compared (5.7, 5.10): no single curve
    for key in ("offered_rps", "concurrency"):
        rows = [lv for lv in levels if number(lv.get(key)) is not None]
        if key == "concurrency":
            rows = [lv for lv in rows if number(lv.get("offered_rps")) is None]
        if len(rows) >= 3:
            return sorted(rows, key=lambda lv: float(lv[key]))
    return []


def render_procedure_html(result: Mapping[str, Any], markdown: str) -> str:
    """``procedure.html``: the procedure's throughput-latency curve (when its levels form one),
    links to each level's ``report.html``, and ``procedure.md`` itself. Self-contained, like
    :func:`render_html`, with the same script markers.

    >>> page = render_procedure_html(result.result, result.markdown)  # doctest: +SKIP
    """
    section = str(result.get("draft_section", ""))
    source = f"draft {section}" if section[:1].isdigit() else section
    title = f"{result.get('title', 'procedure')} ({source}) — otelbench procedure"
    fig = Figure("throughput_latency", "Throughput–latency curve")
    curve = _curve_levels(result)
    if curve:
        block: dict[str, Any] = {"levels": curve}
        if curve == result.get("levels"):  # the procedure's own points (5.3.4), when it has them
            for key in ("knee", "saturation", "peak", "optimal"):
                if f"{key}_index" in result:
                    block[key] = result[f"{key}_index"]
        throughput_latency(fig, {"procedure": block}, {})
    else:
        fig.note = "the procedure's levels do not form one load curve"
    links = "".join(
        f'<li><a href="{esc(str(run["report"]).removesuffix(".json") + ".html")}">'
        f"{esc(run.get('index'))}. {esc(run.get('label'))}</a></li>"
        if run.get("report")
        else f"<li>{esc(run.get('index'))}. {esc(run.get('label'))} (no stored report)</li>"
        for run in result.get("runs") or []
        if isinstance(run, Mapping)
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
