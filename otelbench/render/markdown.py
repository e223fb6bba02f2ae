"""Render a report dict (``docs/report-schema.md``) as Markdown, in the draft's table layouts.

Sections: the Appendix C.1 *Minimum Viable Report* block, the 5.1.5.2 TTFT results table, the
5.1.5.3 TTFT-by-input-length table, the 5.4.5 ITL table (with per-request jitter and maximum
pause, 5.4.4.2, and time between chunks, 4.6.3 Option A), latency and throughput (5.2.5), a
client-vs-server table when server spans exist (server ITL by Option C next to the client's
Option B when engine-hook spans exist) with the TTFT decomposition (5.1.4.2), a preemption
section (5.8.4) when any preemption happened, the methodology declarations, and at the end the
configuration summary (5.1.5.1) and the methodology compliance checks with their verdict (draft
2, ``otelbench.report.compliance``). When the report has them: the ITL distribution shape
(5.4.4.3), reasoning phases (ADR-0005), fluidity (Etalon §4), per-class results and fairness
(5.6.5) and the load generator's schedule lag (4.2.5).

Latencies are printed in milliseconds with two decimals; absent values print as ``n/a``.

Usage::

    from otelbench.report import build_report, render_markdown

    print(render_markdown(build_report("otelbench.duckdb")))
"""

from __future__ import annotations

from typing import Final, Literal

from otelbench.model import report as rt
from otelbench.render.format import NA, NOT_RECORDED, fmt, load_text, markdown_cell, markdown_table

__all__ = ["compliance_lines", "render_markdown", "request_ends_table", "server_timing_text"]


def _ms(value: float | None) -> str:
    return fmt(value, 2, "ms")


def _workload_text(workload: rt.RunWorkload | None) -> str:
    """``run.workload`` (the run manifest's workload, as declared) by its name."""
    return NOT_RECORDED if workload is None else workload["name"]


def _tokenizer_text(tokenizer: rt.Tokenizer | None) -> str:
    """Draft 4.4.3's declaration in one line."""
    if tokenizer is None:
        return NOT_RECORDED
    parts = [f"Option {tokenizer['option']}", tokenizer["name"]]
    vocab_size = tokenizer.get("vocab_size")
    if vocab_size:
        parts.append(f"vocabulary {vocab_size}")
    if tokenizer["source"]:
        parts.append(tokenizer["source"])
    return ", ".join(parts)


def _warmup_text(warmup: rt.Warmup | None) -> str:
    """Draft 4.5's warm-up in one line."""
    if warmup is None:
        return "none (listed under Notes)"
    if warmup["mode"] == "cold_start":
        return "skipped: cold-start measurement (draft 4.5.3)"
    if "interrupted" in warmup:
        # Interrupted during its warm-up: nothing was counted (the notes say so).
        return "None requests, None output tokens in n/a s, probes NOT stabilized (draft 4.5)"
    stabilized = "stabilized" if warmup["stabilized"] else "NOT stabilized"
    return (
        f"{warmup['requests']} requests, {warmup['output_tokens']} output tokens in "
        f"{fmt(warmup['duration_s'], 1)} s, probes {stabilized} (draft 4.5)"
    )


def server_timing_text(timing: rt.ServerTiming | None) -> str:
    """``run.sut.server_timing`` in one line: who produced the server spans, and its note
    (:data:`~otelbench.render.format.NOT_RECORDED` for None)."""
    if timing is None:
        return NOT_RECORDED
    if timing["source"] == "engine_hooks":
        text = "otelbench engine hooks (Option C) " + "; ".join(
            f"{h['hooks_version'] or '?'} in vLLM {h['vllm_version'] or '?'} "
            f"({h['support'] or '?'}, {h['spans']} spans)"
            for h in timing["hooks"]
        )
    elif timing["source"] == "vllm_tracer":
        text = f"vLLM's own tracer only ({timing['vllm_tracer_spans']} llm_request spans)"
    else:
        text = "none"
    note = timing["note"]
    return f"{text}. {note}" if note else text


def _minimum_report(report: rt.Report) -> list[str]:
    run = report["run"]
    client = report["metrics"]["client"]
    requests = run["requests"]
    deviations = report["methodology"]["deviations"]
    sut = run["sut"]
    lines = [
        "```text",
        "=== LLM Benchmark Report (Minimum) ===",
        "",
        "System Identification:",
        f"- Model: {run['model'] or NOT_RECORDED}",
        f"- Hardware: {sut.get('hardware') or NOT_RECORDED}",
        f"- Software: {sut.get('software') or NOT_RECORDED}"
        f" (target {run['target'] or NOT_RECORDED})",
        f"- SUT Boundary: {sut.get('boundary') or NOT_RECORDED}",
        f"- Server Timing: {server_timing_text(sut['server_timing'])}",
        "",
        "Test Configuration:",
        f"- Workload: {_workload_text(run['workload'])}",
        f"- Load Model: {load_text(run['load'])}",
        f"- Request Count: {requests['total']} "
        f"({requests['succeeded']} succeeded, {requests['failed']} failed)",
        f"- Test Duration: {fmt(run['duration_s'], 1)} s",
        f"- Tokenizer: {_tokenizer_text(run['tokenizer'])}",
        f"- Warm-up: {_warmup_text(run['warmup'])}",
        "",
        "Key Results:",
        f"- TTFT P50: {_ms(client['ttft_ms']['p50'])}",
        f"- TTFT P99: {_ms(client['ttft_ms']['p99'])}",
        f"- TPOT P50: {_ms(client['tpot_ms']['p50'])}",
        f"- TPOT P99: {_ms(client['tpot_ms']['p99'])}",
        f"- Max Throughput: {fmt(client['throughput']['output_tokens_per_s'], 1, 'tok/s')} "
        "(output tokens/s at this run's single load level, not a maximum search)",
        "- Throughput at P99 TTFT < 500ms: not measured (needs the load sweep of draft 5.2/5.3)",
        "",
        "Notes:",
    ]
    lines += [f"- {d}" for d in deviations] or ["- no deviations recorded"]
    guardrails = report["configuration"]["guardrails"] or NOT_RECORDED
    lines += [f"- Guardrail configuration: {guardrails}", "", "=== End Report ===", "```"]
    return lines


def _summary_rows(name: str, summary: rt.Summary, count_label: str) -> list[list[str]]:
    return [
        [count_label, str(summary["count"])],
        [f"{name} P50", _ms(summary["p50"])],
        [f"{name} P90", _ms(summary["p90"])],
        [f"{name} P95", _ms(summary["p95"])],
        [f"{name} P99", _ms(summary["p99"])],
        [f"{name} P99.9", _ms(summary["p99_9"])],
        [f"{name} Mean", _ms(summary["mean"])],
    ]


def _ttft_section(client: rt.ClientMetrics) -> list[str]:
    s = client["ttft_ms"]
    rows = [*_summary_rows("TTFT", s, "Requests"), ["TTFT Min", _ms(s["min"])]]
    rows.append(["TTFT Max", _ms(s["max"])])
    lines = ["## TTFT results (draft 5.1.5.2)", "", *markdown_table(["Metric", "Value"], rows), ""]
    buckets = [
        [b["bucket"], str(b["count"]), fmt(b["p50"]), fmt(b["p95"]), fmt(b["p99"])]
        for b in client["ttft_by_input_tokens"]
    ]
    lines += ["## TTFT by input length (draft 5.1.5.3)", ""]
    lines += markdown_table(
        ["Input Tokens", "Requests", "P50 (ms)", "P95 (ms)", "P99 (ms)"], buckets
    )
    return [*lines, ""]


def _itl_section(client: rt.ClientMetrics, itl_method: rt.ItlMethod) -> list[str]:
    s = client["itl_ms"]
    rows = _summary_rows("ITL", s, "ITL Samples")
    rows.append(["ITL Std Dev", _ms(s["std"])])
    rows.append(["P99/P50 Ratio", fmt(client["itl_p99_p50_ratio"])])
    source = itl_method["chunk_token_source"] or NOT_RECORDED
    lines = [
        "## Inter-token latency (draft 5.4.5)",
        "",
        f"Method: Option {itl_method['option']}, {itl_method['name']}; "
        f"chunk token counts: {source}.",
        "",
        *markdown_table(["Metric", "Value"], rows),
        "",
    ]
    per_request = client["itl_per_request"]
    pr_rows = [
        [label, str(v["count"]), _ms(v["p50"]), _ms(v["p95"]), _ms(v["p99"])]
        for label, v in (
            ("Jitter (per-request ITL std dev)", per_request["jitter_ms"]),
            ("Maximum pause (per-request max ITL)", per_request["max_pause_ms"]),
        )
    ]
    lines += ["Per-request statistics (draft 5.4.4.2):", ""]
    lines += markdown_table(["Metric", "Requests", "P50", "P95", "P99"], pr_rows)
    tbc = client["time_between_chunks_ms"]
    tpc = client["tokens_per_chunk"]
    lines += [
        "",
        "Time between chunks (draft 4.6.3 Option A):",
        "",
        *markdown_table(
            ["Metric", "Samples", "P50", "P90", "P99", "Mean"],
            [
                [
                    "Time between chunks",
                    str(tbc["count"]),
                    _ms(tbc["p50"]),
                    _ms(tbc["p90"]),
                    _ms(tbc["p99"]),
                    _ms(tbc["mean"]),
                ],
                [
                    "Tokens per chunk",
                    str(tpc["count"]),
                    fmt(tpc["p50"]),
                    fmt(tpc["p90"]),
                    fmt(tpc["p99"]),
                    fmt(tpc["mean"]),
                ],
            ],
        ),
        "",
    ]
    return lines


def _latency_throughput_section(client: rt.ClientMetrics) -> list[str]:
    rows = [
        [name, _ms(s["p50"]), _ms(s["p95"]), _ms(s["p99"])]
        for name, s in (
            ("TTFT", client["ttft_ms"]),
            ("TPOT", client["tpot_ms"]),
            ("End-to-End", client["e2e_ms"]),
        )
    ]
    t = client["throughput"]
    throughput_rows = [
        ["Output Throughput", fmt(t["output_tokens_per_s"], 1, "tok/s")],
        ["Request Throughput", fmt(t["requests_per_s"], 2, "req/s")],
        ["Input Throughput", fmt(t["input_tokens_per_s"], 1, "tok/s")],
        ["Measurement Window", fmt(t["window_s"], 3, "s")],
    ]
    return [
        "## Latency and throughput (draft 5.2.5)",
        "",
        *markdown_table(["Metric", "P50", "P95", "P99"], rows),
        "",
        *markdown_table(["Metric", "Value"], throughput_rows),
        "",
    ]


def _server_section(metrics: rt.Metrics) -> list[str]:
    server = metrics.get("server")
    if server is None:
        return []
    client = metrics["client"]
    pairs: list[tuple[str, rt.Summary | rt.ShortSummary, rt.Summary | rt.ShortSummary]] = [
        ("TTFT", client["ttft_ms"], server["ttft_ms"]),
        ("TPOT", client["tpot_ms"], server["tpot_ms"]),
        ("End-to-End", client["e2e_ms"], server["e2e_ms"]),
    ]
    server_itl, server_per_request = server.get("itl_ms"), server.get("itl_per_request")
    if server_itl is not None and server_per_request is not None:  # the engine hooks' spans
        pairs += [
            ("ITL (client Option B, server Option C)", client["itl_ms"], server_itl),
            (
                "Jitter (per-request ITL std dev)",
                client["itl_per_request"]["jitter_ms"],
                server_per_request["jitter_ms"],
            ),
            (
                "Maximum pause (per-request max ITL)",
                client["itl_per_request"]["max_pause_ms"],
                server_per_request["max_pause_ms"],
            ),
        ]
    side = [
        [name, _ms(c["p50"]), _ms(s["p50"]), _ms(c["p99"]), _ms(s["p99"])] for name, c, s in pairs
    ]
    components = [
        [name, str(s["count"]), _ms(s["p50"]), _ms(s["p95"]), _ms(s["p99"])]
        for name, s in (
            ("Queue", server["queue_ms"]),
            ("Prefill", server["prefill_ms"]),
            ("Decode", server["decode_ms"]),
            ("Client − server TTFT", server["client_minus_server_ttft_ms"]),
        )
    ]
    sources = server["span_sources"]
    lines = [
        "## Client vs server",
        "",
        f"Server spans joined to {server['requests_joined']} client requests "
        f"({server['client_requests_without_server_span']} without one).",
    ]
    if sources:
        lines[-1] += (
            " Server spans by source: "
            + ", ".join(f"{name} {count}" for name, count in sources.items())
            + "."
        )
    lines += [
        "",
        *markdown_table(["Metric", "Client P50", "Server P50", "Client P99", "Server P99"], side),
        "",
        "Server components (draft 5.1.4.2):",
        "",
        *markdown_table(["Component", "Requests", "P50", "P95", "P99"], components),
        "",
    ]
    lines += _request_ends_section(server.get("request_ends"))
    lines += _decomposition_section(server["ttft_decomposition_ms"])
    lines += _preemption_section(server.get("preemptions"))
    lines += _engine_steps_section(server.get("engine_steps"))
    return lines


_END_REASONS = ("finished", "cancelled", "aborted", "error")
_CLIENT_CUT = ("cancelled", "timeout")


def request_ends_table(
    ends: rt.RequestEnds | None,
) -> tuple[list[str], list[list[str]], list[str]] | None:
    """``metrics.server.request_ends`` as a table, client outcome by server end reason (header
    and rows; the last row sums each column), and the lines that say the rest in words: cut on
    both sides, mismatches, phases, the work nobody read. Only the line "no request was cut"
    when nothing was; None without the section (report.md and report.html show the same)."""
    if ends is None:
        return None
    client, server, by_client = ends["client"], ends["server"], ends["by_client_outcome"]
    cut_client = sum(client.get(k, 0) for k in _CLIENT_CUT)
    not_finished = sum(server.get(k, 0) for k in _END_REASONS[1:])
    finished = server.get("finished", 0)
    if not cut_client and not not_finished:
        return (
            [],
            [],
            [
                f"No request was cut: the engine finished all {finished} "
                "joined requests, and no client request was cancelled or timed out."
            ],
        )
    columns = [*_END_REASONS, "no_server_span"]
    header = ["Client outcome", "Requests", *(c.replace("_", " ") for c in columns)]
    rows = [
        [
            outcome,
            str(n),
            *(str(by_client.get(outcome, {}).get(c, 0)) for c in columns),
        ]
        for outcome, n in client.items()
    ]
    totals = [sum(row.get(c, 0) for row in by_client.values()) for c in columns]
    rows.append(["all", str(sum(client.values())), *map(str, totals)])
    m = ends["mismatches"]
    where = "; ".join(
        f"{reason} — " + ", ".join(f"{phase} {n}" for phase, n in counts.items() if n)
        for reason, counts in ends["by_phase"].items()
        if any(counts.values())
    )
    w = ends["unread_work"]
    requests = w["requests"]
    notes = [
        f"Server latencies above cover the {finished} requests the engine "
        "finished; the requests cut short are counted here.",
        f"Cut on both sides (client cancelled or timed out, engine cancelled): "
        f"{ends['cut_on_both_sides']}.",
        f"Mismatches: client cut but engine finished {m['client_cut_server_finished']}"
        f"; client ok but engine did not finish {m['client_ok_server_not_finished']}"
        f"; client cut without a server span {m['client_cut_without_server_span']}.",
    ]
    if where:
        notes.append(f"Where the engine was when it cut them: {where}.")
    if requests:
        unaccounted = w["requests_without_engine_account"]
        notes.append(
            f"Work nobody read: on the {requests} request{'s' if requests != 1 else ''} the engine "
            f"did not finish it processed {w['prompt_tokens_processed']} prompt "
            f"tokens and generated {w['output_tokens_generated']} output tokens "
            f"({w['output_tokens_received_by_client']} reached the client), in "
            f"{fmt(w['engine_request_s'], 3, 'request-seconds')} of engine time"
            + (
                f" ({unaccounted} without the engine core's account: their work is not counted)"
                if unaccounted
                else ""
            )
            + "."
        )
    return header, rows, notes


def _request_ends_section(ends: rt.RequestEnds | None) -> list[str]:
    found = request_ends_table(ends)
    if found is None:
        return []
    header, rows, notes = found
    lines = ["Requests by how they ended (client span and server span, joined by trace):", ""]
    if rows:
        lines += [*markdown_table(header, rows), ""]
    return [*lines, *(f"- {n}" for n in notes), ""]


def _engine_steps_section(steps: rt.EngineStepsSection | None) -> list[str]:
    """Tokens per engine step and the time between steps (draft 4.6.2-4.6.3), when a step
    produced several tokens."""
    if steps is None:
        return []
    per_step, between = steps["tokens_per_step"], steps["time_between_steps_ms"]
    sizes = ", ".join(f"{k}: {v}" for k, v in steps["steps_by_tokens"].items())
    share = steps["zero_itl_share"]
    rows = [
        [
            "Engine steps",
            f"{steps['steps']} ({steps['multi_token_steps']} with several tokens)",
        ],
        [
            "Tokens per step (mean / max)",
            f"{fmt(per_step['mean'])} / {fmt(per_step['max'], 0)}",
        ],
        ["Steps by tokens", sizes or NA],
        ["Zero server ITL samples", f"{steps['zero_itl_samples']} ({_share(share)})"],
        ["Time between steps P50", _ms(between["p50"])],
        ["Time between steps P99", _ms(between["p99"])],
    ]
    return [
        "## Engine steps (draft 4.6.2-4.6.3)",
        "",
        "Several tokens came from one engine step (speculative decoding or another multi-token "
        "step): they share the step's time, so part of the server ITL samples are 0.",
        "",
        *markdown_table(["Metric", "Value"], rows),
        "",
    ]


_Component = Literal["network_and_framing", "arrival_to_queue", "queue", "prefill"]

_COMPONENT_LABELS: Final[dict[_Component, str]] = {
    "network_and_framing": "Network and framing (client − server TTFT)",
    "arrival_to_queue": "Arrival to queue (server TTFT − queue − prefill)",
    "queue": "Queue",
    "prefill": "Prefill",
}


def _share(value: float | None) -> str:
    return NA if value is None else f"{float(value) * 100:.1f}%"


def _decomposition_section(d: rt.TtftDecomposition) -> list[str]:
    rows = [
        [
            label,
            _ms(d[key]["mean"]),
            _ms(d[key]["p50"]),
            _ms(d[key]["p99"]),
            _share(d["share_of_mean"][key]),
            _share(d["share_p50"][key]),
        ]
        for key, label in _COMPONENT_LABELS.items()
    ]
    c = d["client_ttft"]
    rows.append(["Client TTFT", _ms(c["mean"]), _ms(c["p50"]), _ms(c["p99"]), "100.0%", "100.0%"])
    return [
        f"TTFT decomposition (draft 5.1.4.2), {d['count']} successful requests:",
        "",
        *markdown_table(["Component", "Mean", "P50", "P99", "Share of mean", "P50 share"], rows),
        "",
    ]


def _preemption_section(p: rt.Preemptions | None) -> list[str]:
    if p is None or not p["total"]:
        return []
    stall = p["stall_ms"]
    per_request = p["preemptions_per_request"]
    rows = [
        ["Preemptions", str(p["total"])],
        ["Requests preempted", f"{p['requests_preempted']} of {p['requests_observed']}"],
        ["Preemption rate", _share(p["rate"])],
        [
            "Preemptions per request (mean / max)",
            f"{fmt(per_request['mean'])} / {fmt(per_request['max'], 0)}",
        ],
        ["Recovery rate", _share(p["recovery_rate"])],
        ["KV tokens recomputed (tokens lost)", str(p["tokens_lost"])],
        ["Stall P50", _ms(stall["p50"])],
        ["Stall P99", _ms(stall["p99"])],
        ["Stall Max", _ms(stall["max"])],
    ]
    return ["## Preemption (draft 5.8.4)", "", *markdown_table(["Metric", "Value"], rows), ""]


def _itl_shape_section(client: rt.ClientMetrics) -> list[str]:
    shape = client["itl_shape"]
    if not shape["count"]:
        return []
    locations = ", ".join(_ms(v) for v in shape["peak_locations_ms"]) or NA
    rows = [
        ["ITL Samples", str(shape["count"])],
        ["Modality", "multimodal" if shape["multimodal"] else "unimodal"],
        ["Peaks (KDE)", str(shape["peaks"])],
        ["Peak locations", locations],
        ["KDE bandwidth", _ms(shape["bandwidth_ms"])],
        ["P99/P50 Ratio", fmt(shape["p99_p50_ratio"])],
    ]
    return [
        "## ITL distribution shape (draft 5.4.4.3)",
        "",
        "Client ITL (Option B); peaks of a Gaussian kernel density estimate.",
        "",
        *markdown_table(["Metric", "Value"], rows),
        "",
    ]


def _reasoning_section(client: rt.ClientMetrics) -> list[str]:
    r = client.get("reasoning")
    if r is None:
        return []
    n = r["requests"]
    rows = [
        [label, str(s["count"]), fmt(s["p50"]), fmt(s["p95"]), fmt(s["p99"]), fmt(s["mean"])]
        for label, s, fmt in (
            ("TTOT (from submission)", r["ttot_ms"], _ms),
            ("Think-to-output gap", r["think_to_output_gap_ms"], _ms),
            ("Output-phase ITL", r["output_itl_ms"], _ms),
            ("Think tokens", r["think_tokens"], fmt),
        )
    ]
    return [
        "## Reasoning phases (ADR-0005)",
        "",
        f"{n['with_think_phase']} successful requests with a think phase "
        f"({n['think_phase_ended']} ended, {n['think_phase_unterminated']} unterminated); "
        f"{n['without_think_phase']} without one.",
        "",
        *markdown_table(["Metric", "Samples", "P50", "P95", "P99", "Mean"], rows),
        "",
    ]


def _prefill_deadline(d: rt.PrefillDeadline) -> str:
    """``metrics.fluidity.prefill_deadline`` in words: the fixed value, or the profiled fit."""
    if d["kind"] == "fixed":
        return f"D_p = {_ms(d['deadline_ms'])} (fixed)"
    fit, dp = d["fit"], d["deadline_range_ms"]
    return (
        f"D_p(L) = prefill(L) + {_ms(d['scheduling_slack_ms'])} (profiled, Etalon §4.1): "
        f"prefill(L) = {fit['a_ms']:.4g} + {fit['b_ms_per_token']:.4g}·L + "
        f"{fit['c_ms_per_token2']:.4g}·L² ms, r² {fmt(fit['r_squared'], 3)}, from "
        f"{fit['requests']} isolated requests of {fit['min_tokens']}–{fit['max_tokens']} "
        f"prompt tokens ({d['source'].split(':')[0]} timeline); D_p {_ms(dp['min'])} to "
        f"{_ms(dp['max'])}, median {_ms(dp['p50'])}"
    )


def _fluidity_section(metrics: rt.Metrics) -> list[str]:
    f = metrics.get("fluidity")
    if f is None:
        return []
    share = f"≥ {fmt(f['min_fluidity'])}"
    rows = [
        [
            d["preset"],
            _ms(d["decode_deadline_ms"]),
            str(d["fluidity_index"]["count"]),
            fmt(d["fluidity_index"]["p1"], 3),
            fmt(d["fluidity_index"]["p5"], 3),
            fmt(d["fluidity_index"]["p50"], 3),
            fmt(d["fluidity_index"]["mean"], 3),
            _share(d["fluidity_index"]["fraction_at_least_min"]),
        ]
        for d in f["deadlines"]
    ]
    rate = f["fluid_token_generation_rate"]
    requirement = f"{_share(f['request_fraction'])} of requests with a fluidity-index {share}"
    if rate is None:
        rate_line = f"Fluid token generation rate: not reached ({requirement} at no D_d)."
    else:
        rate_line = (
            f"Fluid token generation rate: {fmt(rate['tokens_per_s'], 1, 'tok/s')} "
            f"(D_d = {_ms(rate['decode_deadline_ms'])}, {requirement})."
        )
    return [
        "## Fluidity (Etalon §4)",
        "",
        f"Token timeline: {f['source']} ({f['requests']} requests, "
        f"{f['requests_left_out']} successful requests left out); prefill deadline "
        f"{_prefill_deadline(f['prefill_deadline'])}.",
        "",
        *markdown_table(
            ["Preset", "D_d", "Requests", "P1", "P5", "P50", "Mean", f"Requests {share}"], rows
        ),
        "",
        rate_line,
        "",
    ]


_CLASS_METRICS: Final[tuple[Literal["ttft_ms", "tpot_ms", "e2e_ms", "itl_ms"], ...]] = (
    "ttft_ms",
    "tpot_ms",
    "e2e_ms",
    "itl_ms",
)
_CLASS_QUANTILES: Final[tuple[Literal["p50", "p99"], ...]] = ("p50", "p99")


def _classes_section(metrics: rt.Metrics) -> list[str]:
    cl = metrics.get("classes")
    if cl is None:
        return []
    rows = [
        [
            name,
            str(c["count"]),
            *(_ms(c[key][q]) for key in _CLASS_METRICS for q in _CLASS_QUANTILES),
        ]
        for name, c in cl["by_class"].items()
    ]
    header = ["Class", "Count"] + [
        f"{label} {q}" for label in ("TTFT", "TPOT", "E2E", "ITL") for q in ("P50", "P99")
    ]
    fairness = [["Jain's Fairness Index", fmt(cl["jain_index"], 3)]]
    fairness += [
        [f"{name} Class Starvation", _share(c["starvation_rate"])]
        for name, c in cl["by_class"].items()
    ]
    return [
        "## Per-class results (draft 5.6.5)",
        "",
        *markdown_table(header, rows),
        "",
        *markdown_table(["Metric", "Value"], fairness),
        "",
        f"Fairness reference: {cl['reference']}.",
        "",
    ]


_ADDED_LATENCY: Final[
    tuple[
        tuple[Literal["input_ms", "output_first_event_ms", "ttft_ms", "output_per_event_ms"], str],
        ...,
    ]
] = (
    ("input_ms", "Input filters (adds to TTFT)"),
    ("output_first_event_ms", "Output filters, first event (adds to TTFT)"),
    ("ttft_ms", "TTFT added"),
    ("output_per_event_ms", "Output filters, per later event (adds to ITL)"),
)


def _p99(stats: rt.FilterStats | None) -> str:
    """The P99 of a filter row's optional statistics (output filters' ``busy_ms_per_event``)."""
    return _ms(None if stats is None else stats["p99"])


def _guardrails_section(metrics: rt.Metrics) -> list[str]:
    g = metrics.get("guardrails")
    if g is None:
        return []
    d = g["disclosure"]
    rows = [
        [
            f["name"],
            f["stage"],
            str(f["spans"]),
            ", ".join(f"{k}: {v}" for k, v in f["decisions"].items()),
            ", ".join(f"{k}: {v}" for k, v in f["errors"].items()) or "none",
            _ms(f["busy_ms_per_request"]["p50"]),
            _ms(f["busy_ms_per_request"]["p99"]),
            _p99(f.get("busy_ms_per_event")),
        ]
        for f in g["filters"]
    ]
    added = g["added_latency"]
    added_rows = [
        [label, str(added[key]["count"]), _ms(added[key]["p50"]), _ms(added[key]["p99"])]
        for key, label in _ADDED_LATENCY
    ]
    refusals = g["refusals"]
    by_stage = ", ".join(f"{k}: {v}" for k, v in refusals["by_stage"].items()) or "none"
    header = ["Filter", "Stage", "Spans", "Decisions", "Errors", "Busy P50", "Busy P99"]
    return [
        "## Guardrails (draft 4.8.1, 5.10)",
        "",
        f"- Input filtering: {', '.join(d['input_filters']) or 'disabled'}",
        f"- Output filtering: {', '.join(d['output_filters']) or 'disabled'}",
        f"- Refused requests: {refusals['requests']} (by stage: {by_stage})",
        f"- Requests with guardrail spans: {g['requests_with_guardrail_spans']}",
        "",
        *markdown_table([*header, "Per event P99"], rows),
        "",
        *markdown_table(["Added latency", "Requests", "P50", "P99"], added_rows),
        "",
    ]


def _load_generator_section(run: rt.RunSection) -> list[str]:
    g = run["load_generator"]
    if g is None:
        return []
    lag = g["schedule_lag_ms"]
    rows = [
        ["Requests", str(lag["count"])],
        ["Schedule lag P50", _ms(lag["p50"])],
        ["Schedule lag P99", _ms(lag["p99"])],
        ["Schedule lag Max", _ms(lag["max"])],
        ["Generator bottleneck flagged", "yes" if g["generator_bottleneck_flagged"] else "no"],
    ]
    return ["## Load generator (draft 4.2.5)", "", *markdown_table(["Metric", "Value"], rows), ""]


def _lateness(value: float | None) -> str:
    return fmt(value, 3, "ms")


def _gc_note(p: rt.GcPauses | None, limit_ms: float) -> str:
    """The load generator's garbage collections, where it counted them."""
    if p is None:
        return ""
    return (
        f" Garbage collection: {p['collections']} collection(s) ({p['full']} full), "
        f"{p['over_limit']} pause(s) over {limit_ms:g} ms, longest {fmt(p['max_ms'], 1, 'ms')}."
    )


def _client_health_section(run: rt.RunSection) -> list[str]:
    h = run["client_health"]
    if h is None:
        return []

    def row(
        name: str,
        lateness: rt.HealthQuantiles,
        reads: rt.HealthQuantiles,
        cpu: rt.WorkerCpu | None,
    ) -> list[str]:
        return [
            name,
            _lateness(lateness["p50"]),
            _lateness(lateness["p99"]),
            _lateness(lateness["max"]),
            _lateness(reads["p99"]),
            "" if cpu is None else fmt(cpu["utilization"], 2),
            "" if cpu is None else str(cpu["involuntary_context_switches"]),
        ]

    rows = [
        row(str(w["worker"]), w["loop_lateness_ms"], w["read_delay_ms"], w["cpu"])
        for w in h["workers"]
    ]
    rows.append(row("all", h["loop_lateness_ms"], h["read_delay_ms"], None))
    head = ["Worker", "Loop lateness P50", "P99", "Max", "Read delay P99", "CPU (cores)"]
    head.append("Involuntary switches")
    load = run["load"]
    workers = None if load is None else load.get("workers")
    note = (
        (
            f"{len(h['workers'])} load-generator worker(s) "
            f"({NA if workers is None else workers['chosen']}); "
            f"timing holds to 1 ms while the lateness P99 is within {h['limit_ms']:g} ms. "
            f"Method: {h['method']}."
        )
        + _pinning(None if workers is None else workers.get("cpus"), h["workers"])
        + _gc_note(h.get("gc_pauses"), h["limit_ms"])
    )
    return [
        "## Load generator health (draft 4.2.1)",
        "",
        *markdown_table(head, rows),
        "",
        note,
        "",
    ]


def _shards_section(run: rt.RunSection) -> list[str]:
    """A run sent from several hosts: one row per shard, its own timing and clock evidence."""
    shards = run.get("shards")
    if shards is None:
        return []

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("yes" if ok else "**no**")

    rows = [
        [
            str(r["index"]),
            markdown_cell(r["host"] or NA),
            NA if r["requests_sent"] is None else str(r["requests_sent"]),
            fmt(r["start_late_ms"], 1, "ms"),
            _ms(r["schedule_lag_p99_ms"]),
            "**yes**" if r["generator_bottleneck"] else "no",
            _lateness(r["loop_lateness_p99_ms"]),
            fmt(r["cpu_utilization_max"], 2),
            fmt(r["runqueue_wait_share_max"], 3),
            markdown_cell(r["clock"]["method"]),
            fmt(r["clock"]["accuracy_ms"], 3, "ms"),
            verdict(r["clock"]["within_limit"]),
        ]
        for r in shards["rows"]
    ]
    head = ["Shard", "Host", "Sent", "Start late", "Schedule lag P99", "Bottleneck"]
    head += ["Loop lateness P99", "CPU (cores)", "Waited for a core", "Clock evidence"]
    head += ["Accuracy", "Within 10 ms (4.7.2)"]
    missing = shards["missing"]
    note = f"{len(shards['rows'])} of {shards['count']} shard(s) reported" + (
        f"; no run span from shard(s) {', '.join(map(str, missing))}: see the deviations."
        if missing
        else "."
    )
    return ["## Shards (draft 4.2.1, 4.2.5, 4.7.2)", "", *markdown_table(head, rows), "", note, ""]


def _cpu_list(cpus: list[int] | None) -> str:
    return ",".join(map(str, cpus)) if cpus else "unpinned"


def _pinning(cpus: rt.LoadCpus | None, workers: list[rt.WorkerHealth]) -> str:
    """The ``--loadgen-cpus`` sentence (run.load.workers.cpus, as the manifest declares it, and
    each worker's read-back CPUs); empty for a run without it."""
    if cpus is None:
        return ""
    found = "; ".join(f"worker {w['worker']} on {_cpu_list(w.get('cpus'))}" for w in workers)
    others = ", ".join(f"{name} on {_cpu_list(on)}" for name, on in cpus["processes"].items())
    return (
        f" --loadgen-cpus {_cpu_list(cpus['loadgen'])}, the rest of the run on "
        f"{_cpu_list(cpus['others'])}; read back: {found}" + (f"; {others}" if others else "") + "."
    )


def _client_telemetry_section(run: rt.RunSection) -> list[str]:
    t = run.get("client_telemetry")
    if not t:
        return []
    rows = [[key, str(t[key])] for key in ("spans_sent", "spans_spooled", "spans_replayed")]
    rows += [[key, str(t[key])] for key in ("spans_dropped", "spans_rejected") if key in t]
    lost = t.get("spans_dropped", 0) + t.get("spans_rejected", 0)
    note = f"Client spans lost (spool full or refused by the collector): {lost}."
    return ["## Client span export", "", *markdown_table(["Counter", "Spans"], rows), "", note, ""]


def _methodology_section(methodology: rt.Methodology) -> list[str]:
    itl = methodology["itl_method"]
    lines = [
        "## Methodology",
        "",
        f"- ITL method: Option {itl['option']} — {itl['description']}",
        f"- Protocol: {itl['protocol']}",
        f"- Time between chunks: {itl['time_between_chunks']}",
        f"- Server-side timing: {itl['server_side']}",
        *(
            [f"- Engine steps: {itl['server_engine_steps']}"]
            if itl.get("server_engine_steps")
            else []
        ),
        *(
            [f"- Several tokens of one engine step: {itl['server_multi_token_handling']}"]
            if itl.get("server_multi_token_handling")
            else []
        ),
        f"- First token: {methodology['first_token_definition']}",
        f"- TPOT: {methodology['tpot_definition']}",
        f"- Jitter and maximum pause: {methodology['jitter_definition']}",
        f"- Percentiles: {methodology['percentile_method']}",
        f"- Standard deviation: {methodology['std_definition']}",
        f"- Throughput window: {methodology['throughput_window']}",
        f"- Latency population: {methodology['latency_population']}",
    ]
    lines += [f"- Clock ({k}): {v}" for k, v in methodology["clock_domains"].items()]
    lines += ["", "### Deviations", ""]
    lines += [f"- {d}" for d in methodology["deviations"]] or ["- none"]
    return [*lines, ""]


def _data_quality_section(quality: rt.DataQuality) -> list[str]:
    rejected = quality["rejected_attributes"]
    if not rejected:
        return []
    counts = ", ".join(f"`{name}` {count}" for name, count in rejected.items())
    return [
        "## Data quality",
        "",
        f"- Stored attribute values that could not be parsed (read as absent): {counts}",
        "",
    ]


_MET = {True: "✓", False: "✗", None: "n/a"}


def _configuration_section(config: rt.Configuration) -> list[str]:
    """Draft 5.1.5.1's configuration summary (``report["configuration"]``), in the order of
    :data:`~otelbench.model.report.CONFIGURATION_LABELS` (its keys are the section's)."""
    rows = [
        [label, markdown_cell(config.get(key))] for key, label in rt.CONFIGURATION_LABELS.items()
    ]
    return [
        "## Configuration summary (draft 5.1.5.1)",
        "",
        *markdown_table(["Item", "Value"], rows),
        "",
    ]


def _counts(counts: rt.LevelCounts) -> str:
    return f"{counts['met']} met, {counts['unmet']} not met, {counts['not_applicable']} n/a"


def compliance_lines(c: rt.ComplianceSection) -> list[str]:
    """Markdown of a compliance result (``otelbench.report.compliance``): the verdict of each
    test (draft 2: compliance is per test), each test's unmet statements with their evidence,
    then every check. Shared by report.md, procedure.md and compare.md."""
    tests = c["tests"]
    names = ", ".join(f"{t['test']} ({t['title']})" for t in tests) or "none"
    lines = [
        f"**Verdict: {c['verdict']}** (draft 2; the lowest of the verdicts of the tests this "
        f"report stands for: {names}).",
        "",
        *markdown_table(
            ["Test", "Verdict", "MUST statements", "SHOULD statements"],
            [
                [
                    f"{t['test']} {t['title']}",
                    f"**{t['verdict']}**",
                    _counts(t["counts"]["MUST"]),
                    _counts(t["counts"]["SHOULD"]),
                ]
                for t in tests
            ],
        ),
        "",
    ]
    for t in tests:
        unmet = [s for s in t["statements"] if s["met"] is False]
        lines += [f"### {t['test']} {t['title']}: {t['verdict']}", ""]
        if not unmet:
            lines += ["Every applicable statement is met.", ""]
            continue
        lines += markdown_table(
            ["Not met", "Section", "Keyword", "Evidence"],
            [
                [
                    f"`{s['id']}`: {markdown_cell(s['statement'])}",
                    s["section"],
                    s["keyword"],
                    markdown_cell(s["evidence"]),
                ]
                for s in unmet
            ],
        )
        lines.append("")
    rows = [
        [
            f"`{check['id']}`: {markdown_cell(check['requirement'])}",
            check["section"],
            check["level"],
            _MET[check["met"]],
            markdown_cell(check["evidence"]),
        ]
        for check in c["checks"]
    ]
    lines += [
        "### Checks",
        "",
        *markdown_table(["Check", "Section", "Level", "Met", "Evidence"], rows),
        "",
        f"Scope: {c['scope']}.",
        "",
    ]
    return lines


def _compliance_section(c: rt.ComplianceSection) -> list[str]:
    """The methodology compliance: each test's verdict (draft 2) and the checks."""
    return ["## Methodology Compliance", "", *compliance_lines(c)]


def render_markdown(report: rt.Report) -> str:
    """The report as Markdown (draft Appendix C.1 block, then the 5.x result tables).

    >>> from otelbench.report import build_report
    >>> print(render_markdown(build_report("otelbench.duckdb")))  # doctest: +SKIP
    """
    run = report["run"]
    metrics = report["metrics"]
    lines = [f"# otelbench report — run {run['id']}", "", *_minimum_report(report), ""]
    lines += _ttft_section(metrics["client"])
    lines += _itl_section(metrics["client"], report["methodology"]["itl_method"])
    lines += _itl_shape_section(metrics["client"])
    lines += _reasoning_section(metrics["client"])
    lines += _latency_throughput_section(metrics["client"])
    lines += _server_section(metrics)
    lines += _fluidity_section(metrics)
    lines += _classes_section(metrics)
    lines += _guardrails_section(metrics)
    lines += _load_generator_section(run)
    lines += _client_health_section(run)
    lines += _shards_section(run)
    lines += _client_telemetry_section(run)
    lines += _methodology_section(report["methodology"])
    lines += _data_quality_section(report["data_quality"])
    lines += _configuration_section(report["configuration"])
    lines += _compliance_section(report["compliance"])
    return "\n".join(lines).rstrip("\n") + "\n"
