"""Build a run report: span store → records (query layer) → metrics → the ``report.json`` dict.

The report's shape is a public contract, documented in ``docs/report-schema.md`` and versioned by
:data:`SCHEMA_VERSION`. A report is deterministic: building it twice from the same store gives
the same JSON (it holds no generation time).

Usage::

    from otelbench.report import build_report, render_json

    report = build_report("otelbench.duckdb")          # the latest run; or run_id="..."
    open("report.json", "w").write(render_json(report))
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from itertools import compress
from typing import Final, Literal, cast

import numpy as np
import numpy.typing as npt

from otelbench import draft, semconv
from otelbench.errors import ConfigError
from otelbench.metrics import (
    PERCENTILE_METHOD,
    Outcomes,
    Ragged,
    Summary,
    consecutive_intervals,
    group_first,
    group_last,
    group_max,
    outcomes,
    preemption_stats,
    tail_ratio,
    tpot,
    ttft_by_input_length,
    ttft_decomposition,
    window_throughput,
)
from otelbench.model import report as rt
from otelbench.model.compare import CompareResult
from otelbench.model.procedure import ProcedureReport
from otelbench.model.report import SCHEMA_VERSION
from otelbench.query import ClientRequests, QueryRunner, RunData, extract_run_data, open_store
from otelbench.report.compliance import compliance
from otelbench.report.configuration import configuration_summary
from otelbench.report.evidence import phases_section, sent_section
from otelbench.report.guardrails import guardrails_section
from otelbench.report.request_ends import request_ends_section
from otelbench.report.sections import (
    MULTI_TOKEN_STEP_HANDLING,
    classes_section,
    client_itl_ms,
    client_itl_shape,
    client_itl_summary,
    client_itl_us,
    client_jitter_us,
    client_token_arrivals_us,
    derive_ahead,
    engine_steps_section,
    engine_steps_statement,
    fluidity_deviations,
    fluidity_section,
    input_tokens_of,
    load_generator_section,
    reasoning_section,
    server_finished,
    server_is_hook,
    server_itl_summary,
    server_itl_us,
    server_jitter_us,
    server_token_offsets_us,
    short_summary_of,
    summary_of,
)
from otelbench.report.shards import shards_section

__all__ = [
    "SCHEMA_VERSION",
    "build_report",
    "render_json",
    "report_from_data",
]


FIRST_TOKEN_DEFINITION: Final = (
    "time to the first content token (draft 5.1.3.1): T_first is when the first SSE data event "
    "whose generated text (content, or a reasoning delta) is non-empty and not whitespace-only "
    "is complete, stamped at the network read that completed it; role-only and empty deltas, "
    "leading whitespace-only deltas, usage-only events, SSE comments and JSON framing do not "
    "count. T_submit is taken as the request is handed to the HTTP transport, so the request's "
    "own send time is inside TTFT (B.1.1). Time to the first event of any kind is recorded "
    "separately on the client span (otelbench.client.first_event_offset_us)."
)
TPOT_DEFINITION: Final = (
    "per request, (T_last - T_first) / (output_tokens - 1): the first token is excluded; "
    "output_tokens is gen_ai.usage.output_tokens (the sum of per-chunk tokens when absent); "
    "undefined for fewer than 2 output tokens. Server TPOT is the same formula over the engine "
    "hooks' per-token offsets when the server span has them, else vLLM's time_in_model_decode / "
    "(completion_tokens - 1)."
)
JITTER_DEFINITION: Final = (
    "per request, the population standard deviation (ddof=0) of its ITL samples, for requests "
    "with at least 2 ITL samples; max pause is the request's largest ITL sample (draft 5.4.4.2)"
)
SERVER_OPTION_C: Final = (
    "Option C (direct token timing, draft 4.6.3) for metrics.server.itl_ms: the engine hooks' "
    "server span records, for every output token, the µs from the request's arrival in the "
    "engine to the engine step that produced it (otelbench.server.token_offsets_us). The "
    "resolution is the engine step: tokens produced in one step (speculative decoding, "
    "multi-token steps) share the step's time and give zero intervals; the timing excludes "
    "detokenisation, SSE framing and the network, which Option B (metrics.client.itl_ms) "
    "includes. Server TTFT and TPOT use the same offsets (first token; (last - first) / "
    "(tokens - 1)) for the requests that have them"
)
STD_DEFINITION: Final = "population standard deviation (ddof=0)"
THROUGHPUT_WINDOW: Final = (
    "from the earliest T_submit to the latest response end (T_submit + end offset) over all of "
    "the run's requests, failed ones included; tokens and requests counted are those of "
    "successful requests (draft 5.2.4.1)"
)
LATENCY_POPULATION: Final = (
    "latency metrics (TTFT, ITL, TPOT, e2e) cover successful requests only; TTFT and ITL "
    "additionally need at least one content token"
)
CLOCK_DOMAINS: Final[rt.ClockDomains] = {
    "client": (
        "TTFT, ITL, time between chunks, TPOT and e2e are offsets on the load generator's "
        "monotonic clock, in µs since T_submit; T_submit itself and the throughput window use the "
        "client span's wall-clock start (otel_traces.Timestamp, ns)"
    ),
    "server": (
        "vLLM's gen_ai.latency.* durations (seconds) and the engine hooks' per-token offsets "
        "(µs since arrival) from the server host's own clocks; server TTFT and e2e start at "
        "the request's arrival in the engine"
    ),
    "client_minus_server_ttft": (
        "difference of two durations, each measured on one clock: no cross-host clock "
        "synchronisation is needed; it is the network, HTTP and API-server overhead before the "
        "engine saw the request plus the first token's way back"
    ),
}


def build_report(
    store: str | os.PathLike[str] | QueryRunner,
    run_id: str | None = None,
    *,
    prefill_deadline_s: float | None = None,
) -> rt.Report:
    """The report dict of run ``run_id`` (the latest run when None) in a span store.

    ``store`` is a store file's path (opened read-only) or an open :class:`QueryRunner`;
    ``prefill_deadline_s`` is a fixed prefill deadline ``D_p`` of ``metrics.fluidity`` (None:
    Etalon's profiled ``D_p(L)`` where the run allows, else the fixed default 1 s).

    >>> report = build_report("otelbench.duckdb")  # doctest: +SKIP
    >>> report["metrics"]["client"]["ttft_ms"]["p99"]  # doctest: +SKIP
    """
    if isinstance(store, QueryRunner):
        return report_from_data(
            extract_run_data(store, run_id), prefill_deadline_s=prefill_deadline_s
        )
    with open_store(store) as runner:
        return report_from_data(
            extract_run_data(runner, run_id), prefill_deadline_s=prefill_deadline_s
        )


def render_json(report: rt.Report | ProcedureReport | CompareResult) -> str:
    """``report.json`` text: 2-space indent, keys in report order, no NaN, trailing newline.

    Also writes the other JSON documents of otelbench (``compare.json``, ``procedure.json``)."""
    return json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def report_from_data(data: RunData, *, prefill_deadline_s: float | None = None) -> rt.Report:
    """The report dict from already extracted records (pure: no I/O).

    ``prefill_deadline_s`` is a fixed prefill deadline ``D_p`` of ``metrics.fluidity`` (Etalon
    §4.1), > 0; None: Etalon's ``D_p(L)`` profiled from the run's isolated requests where they
    support a fit, else the fixed default (``otelbench.report.sections.prefill_deadline_of``).

    >>> report = report_from_data(data, prefill_deadline_s=0.5)  # doctest: +SKIP
    >>> report["metrics"]["fluidity"]["prefill_deadline"]["deadline_ms"]  # doctest: +SKIP
    500.0
    """
    if prefill_deadline_s is not None and not (
        np.isfinite(prefill_deadline_s) and prefill_deadline_s > 0
    ):
        raise ConfigError(
            f"the prefill deadline must be a positive number of seconds, got {prefill_deadline_s}"
        )
    derive_ahead(data, prefill_deadline_s)  # the per-token arrays, on both cores
    c = data.client
    ok = c.ok
    result = outcomes(ok, c.error_type)

    input_tokens = input_tokens_of(data)  # the client's usage, else the server's prompt tokens

    # Token timeline by Option B, ITL and time between chunks (successful requests only).
    all_tokens = client_token_arrivals_us(data)  # shared with the HTML plots (derived once)
    output_tokens = np.where(
        np.isfinite(c.output_tokens), c.output_tokens, all_tokens.lengths().astype(np.float64)
    )
    tokens = all_tokens.select(ok)
    itl_us = client_itl_us(data)  # consecutive_intervals(tokens)
    itl_ms = client_itl_ms(data)  # itl_us.values / 1000.0

    ttft_ms = c.ttft_us / 1000.0
    end_offset_us = np.where(np.isfinite(c.end_offset_us), c.end_offset_us, c.duration_ns / 1e3)
    tpot_ms = tpot(group_first(tokens), group_last(tokens), output_tokens[ok]) / 1000.0
    itl_summary = client_itl_summary(data)
    rates = window_throughput(c.submit_unix_ns, c.end_unix_ns(), ok, output_tokens, input_tokens)

    client_metrics: rt.ClientMetrics = {
        "ttft_ms": summary_of(ttft_ms[ok]),
        "first_content_token": _first_content_token(c),
        "itl_ms": itl_summary.to_dict(),
        "tpot_ms": summary_of(tpot_ms),
        "e2e_ms": summary_of(end_offset_us[ok] / 1000.0),
        "time_between_chunks_ms": _time_between_chunks_ms(c, itl_summary),
        "tokens_per_chunk": _tokens_per_chunk_summary(c),
        "itl_per_request": {
            "jitter_ms": short_summary_of(client_jitter_us(data) / 1000.0),
            "max_pause_ms": short_summary_of(group_max(itl_us) / 1000.0),
        },
        "itl_p99_p50_ratio": tail_ratio(itl_summary.p99, itl_summary.p50),
        "itl_shape": client_itl_shape(data),
        "ttft_by_input_tokens": [
            b.to_dict() for b in ttft_by_input_length(ttft_ms[ok], input_tokens[ok])
        ],
        "throughput": {
            "output_tokens_per_s": rates.output_tokens_per_s,
            "input_tokens_per_s": rates.input_tokens_per_s,
            "requests_per_s": rates.requests_per_s,
            "window_s": rates.window_s,
            "output_tokens": rates.output_tokens,
            "input_tokens": rates.input_tokens,
            "requests": rates.requests,
        },
    }
    reasoning = reasoning_section(data)
    if reasoning is not None:
        client_metrics["reasoning"] = reasoning
    metrics: rt.Metrics = {"client": client_metrics}
    server = _server_metrics(data, ttft_ms, output_tokens)
    if server is not None:
        metrics["server"] = server
    fluidity = fluidity_section(data, prefill_deadline_s=prefill_deadline_s)
    if fluidity is not None:
        metrics["fluidity"] = fluidity
    classes = classes_section(
        [label for label, good in zip(c.request_class, ok, strict=True) if good],
        ttft_ms[ok],
        end_offset_us[ok] / 1000.0,
        tpot_ms,
        Ragged(itl_ms, itl_us.bounds),
    )
    if classes is not None:
        metrics["classes"] = classes
    guardrails = guardrails_section(data)
    if guardrails is not None:
        metrics["guardrails"] = guardrails

    with_chunks = (ok & (np.diff(c.chunk_bounds) > 0)).tolist()
    sources = Counter(s for s in compress(c.chunk_token_source, with_chunks) if s is not None)
    deviations = _deviations(data, ttft_ms[ok], output_tokens[ok], itl_us, result)
    timeline = server if fluidity is not None and fluidity["source"] == "server" else client_metrics
    deviations += fluidity_deviations(fluidity, (timeline or client_metrics)["tpot_ms"]["p50"])
    facts: rt.ReportBody = {
        "schema_version": SCHEMA_VERSION,
        "run": _run_section(data, result),
        "metrics": metrics,
        "methodology": {
            "itl_method": _itl_method(
                dict(sorted(sources.items())), server, engine_steps_statement(data)
            ),
            "first_token_definition": FIRST_TOKEN_DEFINITION,
            "tpot_definition": TPOT_DEFINITION,
            "jitter_definition": JITTER_DEFINITION,
            "percentile_method": PERCENTILE_METHOD,
            "std_definition": STD_DEFINITION,
            "throughput_window": THROUGHPUT_WINDOW,
            "latency_population": LATENCY_POPULATION,
            "clock_domains": {**CLOCK_DOMAINS},
            "deviations": deviations,
        },
        "data_quality": _data_quality(data),
    }
    # Configuration summary (draft 5.1.5.1) and compliance (draft 2), from the report's facts.
    return {
        **facts,
        "configuration": configuration_summary(facts),
        "compliance": compliance(facts),
    }


def _time_between_chunks_ms(c: ClientRequests, itl_summary: Summary) -> rt.Summary:
    """Summary of Option A's time between content chunks of the successful requests (draft
    4.6.3), in ms. With one token per chunk Option B's token times are the chunk times, so this
    is the ITL's summary (``itl_summary``), not computed a second time."""
    if c.chunk_tokens.size == 0 or c.chunk_tokens.min() == c.chunk_tokens.max() == 1:
        return itl_summary.to_dict()
    chunks = Ragged(c.chunk_offset_us.astype(np.float64), c.chunk_bounds).select(c.ok)
    return summary_of(consecutive_intervals(chunks).values / 1000.0)


def _tokens_per_chunk_summary(c: ClientRequests) -> rt.Summary:
    """Summary of the tokens per content chunk of the successful requests (Option A asks for
    the chunk-size distribution, draft 4.6.3). When every chunk holds the same number ``k`` of
    tokens (one, without per-chunk usage) every statistic is ``k`` and the std 0, exactly what
    summarising millions of copies of the integer ``k`` gives, so it is not computed."""
    chunks = int(np.diff(c.chunk_bounds)[c.ok].sum())
    if chunks and c.chunk_tokens.min() == c.chunk_tokens.max():
        k = float(c.chunk_tokens[0])
        return Summary(chunks, k, 0.0, k, k, k, k, k, k, k).to_dict()
    tokens = Ragged(c.chunk_tokens.astype(np.float64), c.chunk_bounds).select(c.ok).values
    return summary_of(tokens)


def _first_content_token(c: ClientRequests) -> rt.FirstContentToken:
    """How the client's first-content detection (:data:`FIRST_TOKEN_DEFINITION`, draft 5.1.3.1)
    applied to the successful requests with a TTFT: each client span records both the first
    SSE event's offset and the first content token's (TTFT); a first event earlier than the
    content is a non-content event the definition skipped, a later one contradicts it."""
    timed = c.ok & np.isfinite(c.ttft_us)
    first = c.first_event_offset_us[timed]
    ttft = c.ttft_us[timed]
    recorded = np.isfinite(first)
    skipped = recorded & (first < ttft)
    return {
        "requests": int(timed.sum()),
        "first_event_recorded": int(recorded.sum()),
        "after_non_content_events": int(skipped.sum()),
        "non_content_lead_ms": short_summary_of((ttft[skipped] - first[skipped]) / 1000.0),
        "content_before_first_event": int(np.count_nonzero(recorded & (first > ttft))),
    }


def _server_metrics(
    data: RunData,
    client_ttft_ms: npt.NDArray[np.float64],
    received_tokens: npt.NDArray[np.float64],
) -> rt.ServerMetrics | None:
    """``metrics.server``: the joined server spans (cut requests' included) in the counts, the
    spans of the requests the engine finished (:func:`server_finished`) in the latencies."""
    s = data.server
    joined_any = s.client_index >= 0
    if not np.any(joined_any):
        return None
    n_joined = int(np.unique(s.client_index[joined_any]).size)
    hook_any = server_is_hook(data)[joined_any]
    joined = joined_any & server_finished(data)
    idx = s.client_index[joined]
    hook = server_is_hook(data)[joined]
    client_ok = data.client.ok[idx]

    # Option C token timeline (hook spans): µs since arrival of every output token.
    tokens = server_token_offsets_us(data).select(joined)
    has_offsets = tokens.lengths() > 0
    first_ms = group_first(tokens) / 1000.0
    last_ms = group_last(tokens) / 1000.0
    completion = np.where(
        np.isfinite(s.completion_tokens[joined]),
        s.completion_tokens[joined],
        tokens.lengths().astype(np.float64),
    )
    # server TTFT: the first token's offset when the span has offsets, else vLLM's latency key
    server_ttft_ms = np.where(has_offsets, first_ms, s.ttft_s[joined] * 1000.0)
    decode_ms = s.decode_s[joined] * 1000.0
    server_tpot_ms = np.where(
        has_offsets,
        tpot(first_ms, last_ms, completion),
        tpot(np.zeros_like(decode_ms), decode_ms, s.completion_tokens[joined]),
    )
    queue_ms = s.queue_s[joined] * 1000.0
    prefill_ms = s.prefill_s[joined] * 1000.0
    difference = client_ttft_ms[idx] - server_ttft_ms
    out: rt.ServerMetrics = {
        "requests_joined": n_joined,
        "client_requests_without_server_span": len(data.client) - n_joined,
        "span_sources": {
            semconv.SPAN_HOOK_REQUEST: int(hook_any.sum()),
            semconv.SPAN_VLLM_REQUEST: int((~hook_any).sum()),
        },
        "ttft_ms": summary_of(server_ttft_ms),
        "tpot_ms": summary_of(server_tpot_ms),
        "e2e_ms": summary_of(s.e2e_s[joined] * 1000.0),
        "queue_ms": summary_of(queue_ms),
        "prefill_ms": summary_of(prefill_ms),
        "decode_ms": summary_of(decode_ms),
        "client_minus_server_ttft_ms": summary_of(difference[client_ok]),
        "ttft_decomposition_ms": _ttft_decomposition(
            client_ttft_ms[idx][client_ok],
            server_ttft_ms[client_ok],
            queue_ms[client_ok],
            prefill_ms[client_ok],
        ),
    }
    ends = request_ends_section(data, received_tokens)
    if not np.any(hook):
        return _with_ends(out, ends)

    itl_us = server_itl_us(data)  # consecutive_intervals(tokens.select(hook & has_offsets))
    itl_summary = server_itl_summary(data)
    out["itl_ms"] = itl_summary.to_dict()
    out["itl_per_request"] = {
        "jitter_ms": short_summary_of(server_jitter_us(data) / 1000.0),
        "max_pause_ms": short_summary_of(group_max(itl_us) / 1000.0),
    }
    out["itl_p99_p50_ratio"] = tail_ratio(itl_summary.p99, itl_summary.p50)

    # the span's preemption counter, else its preemption events (NaN: llm_request, unobserved)
    counts = np.where(
        np.isfinite(s.preemptions[joined]), s.preemptions[joined], s.preemption_events[joined]
    )
    p = preemption_stats(counts, client_ok, s.kv_tokens_discarded[joined])
    stalls_ms = Ragged(s.stall_us.astype(np.float64), s.stall_bounds).select(joined).values / 1e3
    out["preemptions"] = {
        "requests_observed": p.requests_observed,
        "total": p.total,
        "requests_preempted": p.requests_preempted,
        "rate": p.rate,
        "preemptions_per_request": summary_of(p.per_request),
        "recovered": p.recovered,
        "recovery_rate": p.recovery_rate,
        "tokens_lost": p.kv_tokens_discarded,
        "stall_ms": summary_of(stalls_ms),
    }
    steps = engine_steps_section(data)
    if steps is not None:
        out["engine_steps"] = steps
    return _with_ends(out, ends)


def _with_ends(out: rt.ServerMetrics, ends: rt.RequestEnds | None) -> rt.ServerMetrics:
    """``out`` with ``request_ends`` last, when there is one."""
    if ends is not None:
        out["request_ends"] = ends
    return out


def _ttft_decomposition(
    client_ttft_ms: npt.NDArray[np.float64],
    server_ttft_ms: npt.NDArray[np.float64],
    queue_ms: npt.NDArray[np.float64],
    prefill_ms: npt.NDArray[np.float64],
) -> rt.TtftDecomposition:
    d = ttft_decomposition(client_ttft_ms, server_ttft_ms, queue_ms, prefill_ms)
    parts = d.components  # the TTFT_COMPONENTS, in their order
    return {
        "count": int(d.client_ttft.size),
        "client_ttft": summary_of(d.client_ttft),
        "network_and_framing": summary_of(parts["network_and_framing"]),
        "arrival_to_queue": summary_of(parts["arrival_to_queue"]),
        "queue": summary_of(parts["queue"]),
        "prefill": summary_of(parts["prefill"]),
        "share_of_mean": _shares(d.share_of_mean),
        "share_p50": _shares(d.share_p50),
    }


def _shares(share: Mapping[str, float | None]) -> rt.ComponentShares:
    """Each of the TTFT_COMPONENTS' share, in their order."""
    return {
        "network_and_framing": share["network_and_framing"],
        "arrival_to_queue": share["arrival_to_queue"],
        "queue": share["queue"],
        "prefill": share["prefill"],
    }


def _data_quality(data: RunData) -> rt.DataQuality:
    """Stored attribute values of the run's spans that could not be parsed and were read as
    absent, per attribute name (the query layer's lenient parsing; docs/report-schema.md)."""
    return {"rejected_attributes": data.rejected_attributes()}


def _run_section(data: RunData, result: Outcomes) -> rt.RunSection:
    m = data.run.manifest
    span_start_s = data.run.span_start_unix_ns / 1e9
    span_end_s = (data.run.span_start_unix_ns + data.run.span_duration_ns) / 1e9
    run: rt.RunSection = {
        "id": data.run.run_id,
        "target": m.get("target"),
        "model": m.get("model"),
        "api": m.get("api"),
        "workload": m.get("workload"),
        "seed": m.get("seed"),
        "tokenizer": m.get("tokenizer"),
        "load": m.get("load"),
        "client_health": m.get("client_health"),
        "request_options": m.get("request_options"),
        "request_classes": m.get("request_classes"),
        "warmup": m.get("warmup"),
        "cold_start": m.get("cold_start"),
        "started_unix": m.get("started_unix", span_start_s),
        "finished_unix": m.get("finished_unix", span_end_s),
        "duration_s": m.get("duration_s", data.run.span_duration_ns / 1e9),
        "otelbench_version": m.get("otelbench_version"),
        # the manifest's declaration (any producer's JSON) with the measured server timing
        "sut": cast(rt.Sut, {**(m.get("sut") or {}), "server_timing": server_timing(data)}),
        "notes": list(m.get("notes", [])),
        "requests": {
            "total": result.total,
            "succeeded": result.succeeded,
            "failed": result.failed,
            "failed_by_type": result.failed_by_type,
        },
        "load_generator": load_generator_section(data),
        "sent": sent_section(data),
        "phases": phases_section(data),
    }
    shards = shards_section(m)
    if shards is not None:  # a run sent from several hosts
        run["shards"] = shards
    return run


def server_timing(data: RunData) -> rt.ServerTiming:
    """``run.sut.server_timing``: what produced the run's server spans (the engine hooks, with
    the vLLM and hooks versions and the hooks' support level for that release from their spans'
    resource, or vLLM's own tracer), with a note when the server timing is not the hooks'."""
    hooks = [s for s in data.server_sources if s.span_name == semconv.SPAN_HOOK_REQUEST]
    hook_spans = sum(s.spans for s in hooks)
    tracer_spans = sum(
        s.spans for s in data.server_sources if s.span_name == semconv.SPAN_VLLM_REQUEST
    )
    note = None
    source: Literal["engine_hooks", "vllm_tracer", "none"]
    if hook_spans:
        source = "engine_hooks"
        untested = sorted({s.vllm_version or "unknown" for s in hooks if s.support != "tested"})
        if untested:
            note = (
                f"the engine hooks ran in vLLM {', '.join(untested)}, a release otelbench's test "
                "tier has not run: its internals passed the hooks' checks at load (and, where "
                "support is 'conformed', its sources passed scripts/vllm/conformance.sh)"
            )
    elif tracer_spans:
        source = "vllm_tracer"
        note = (
            "the target's server spans are vLLM's own llm_request spans only: the engine hooks "
            "were off, not installed, or disabled themselves on this vLLM (its log says why), so "
            "there is no per-token server timing (draft 4.6.3 Option C)"
        )
    else:
        source = "none"
        note = (
            "no server spans in the run's traces: the target was not traced (or its spans did not "
            "reach the store), so there is no server-side timing"
        )
    return {
        "source": source,
        "hook_spans": hook_spans,
        "vllm_tracer_spans": tracer_spans,
        "hooks": [
            {
                "vllm_version": s.vllm_version or None,
                "hooks_version": s.hooks_version or None,
                "support": s.support or None,
                "spans": s.spans,
            }
            for s in hooks
        ],
        "note": note,
    }


def _itl_method(
    sources: dict[str, int], server: rt.ServerMetrics | None, engine_steps: str | None
) -> rt.ItlMethod:
    if not sources:
        declared = None
    elif len(sources) == 1:
        declared = next(iter(sources))
    else:
        declared = "mixed"
    method: rt.ItlMethod = {
        "option": "B",
        "name": "distributed timing (draft 4.6.3 Option B)",
        "description": (
            "client-side ITL: a content chunk of N tokens arriving at T assigns T to all N "
            "tokens (N-1 zero intervals), which understates ITL variance; ITL_i = T(token_i) - "
            "T(token_{i-1}) within a request, TTFT excluded (draft 5.4.3)"
        ),
        "protocol": "HTTP/1.1 Server-Sent Events (OpenAI-compatible streaming)",
        "chunk_token_source": declared,
        "chunk_token_sources": sources,
        "chunk_token_source_meaning": {
            "usage": "per-chunk token counts from continuous usage statistics (exact)",
            "one_per_chunk": (
                "each content chunk counted as one token (no per-chunk usage): ITL then equals "
                "the time between chunks and may disagree with TPOT"
            ),
        },
        "time_between_chunks": (
            "Option A, reported separately as metrics.client.time_between_chunks_ms, with the "
            "chunk-size distribution in metrics.client.tokens_per_chunk"
        ),
        "server_option": "C" if server is not None and "itl_ms" in server else None,
        "server_side": _server_side(server),
    }
    if server is not None and "itl_ms" in server and engine_steps is not None:
        method["server_engine_steps"] = engine_steps
        if "engine_steps" in server:
            method["server_multi_token_handling"] = MULTI_TOKEN_STEP_HANDLING
    return method


def _server_side(server: rt.ServerMetrics | None) -> str:
    if server is not None and "itl_ms" in server:
        return SERVER_OPTION_C
    return (
        "Option C not used: vLLM's llm_request span carries phase durations but no per-token "
        "timestamps" + ("; its phase durations are in metrics.server" if server is not None else "")
    )


def _deviations(
    data: RunData,
    ttft_ms: npt.NDArray[np.float64],
    output_tokens: npt.NDArray[np.float64],
    itl_us: Ragged,
    result: Outcomes,
) -> list[str]:
    out = [str(d) for d in data.run.manifest.get("deviations", [])]
    workload = data.run.manifest.get("workload")
    if isinstance(workload, dict) and isinstance(workload.get("spec"), dict):
        name = workload.get("name")
        out += [f"workload {name}: {d}" for d in workload["spec"].get("deviations") or []]
    n_ttft = int(np.isfinite(ttft_ms).sum())
    if n_ttft < draft.P99_MIN_SAMPLES:
        out.append(
            f"TTFT has {n_ttft} samples, fewer than the {draft.P99_MIN_SAMPLES} the draft requires "
            f"for P99 and the {draft.P99_9_MIN_SAMPLES} for P99.9 (5.1.4.3): those percentiles are "
            "reported but not statistically reliable"
        )
    elif n_ttft < draft.P99_9_MIN_SAMPLES:
        out.append(
            f"TTFT has {n_ttft} samples, fewer than the {draft.P99_9_MIN_SAMPLES} the draft "
            "requires for P99.9 (5.1.4.3): P99.9 is reported but not statistically reliable"
        )
    no_content = result.succeeded - n_ttft
    if no_content > 0:
        out.append(
            f"{no_content} successful request(s) delivered no content token and have no TTFT"
        )
    if result.failed:
        by_type = ", ".join(f"{k}: {v}" for k, v in result.failed_by_type.items())
        out.append(
            f"{result.failed} of {result.total} requests failed ({by_type}); latency metrics "
            f"cover the {result.succeeded} successful requests only"
        )
    short = int((output_tokens < draft.ITL_MIN_OUTPUT_TOKENS).sum())
    if short:
        out.append(
            f"{short} of {output_tokens.size} successful requests generated fewer than "
            f"{draft.ITL_MIN_OUTPUT_TOKENS} output tokens, the minimum for ITL statistics (5.4.2)"
        )
    with_itl = int((itl_us.lengths() > 0).sum())
    if with_itl < draft.ITL_MIN_REQUESTS:
        out.append(
            f"per-request ITL statistics come from {with_itl} requests, fewer than the "
            f"{draft.ITL_MIN_REQUESTS} the draft requires (5.4.2)"
        )
    return out
