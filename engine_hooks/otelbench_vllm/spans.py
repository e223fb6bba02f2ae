"""One ended request as a compact record, and the server span and child spans built from it.

:class:`FinishedRequest` is everything the span needs, taken from vLLM's ``RequestStateStats`` and
the hook's per-request state when the request finishes (:meth:`otelbench_vllm.hook.RequestHook.
on_finished`). It is plain data (strings, numbers, the token timestamps as ``array('d')`` bytes),
so it pickles small and fast: in the default export mode it is sent to the hooks' exporter
process (:mod:`otelbench_vllm.offload`), which calls :func:`emit_spans`; in the in-process mode
the API server calls :func:`emit_spans` itself. Both modes build the same spans from the same
record (draft 4.6.3, Option C: server-side timing as spans joined to the client's trace).

A request that ended without finishing — cancelled by vLLM's frontend (the client hung up),
aborted by the engine core, or failed — is a record too, with its ``end_reason``, the phase it
was in (``end_phase``) and when it ended (``end_ts``): its span carries the phases it reached
(the last one cut at ``end_ts``), the tokens that reached the frontend with their offsets, the
engine core's account of the work done (prompt tokens processed, output tokens generated), and
``gen_ai.latency.time_in_model_inference`` from its first scheduling to its end; it has no decode
time. Span status (OpenTelemetry's "Recording errors"): left unset for a cancelled request (the
caller's choice, not a server failure, as the RPC conventions treat a cancelled server call);
``Error`` with ``error.type`` for an engine abort (``abort``) or an error (``error``, or the
exception's class when the engine died).

Time domains: ``arrival_time`` and ``iteration_timestamp`` are vLLM's frontend wall clock
(seconds since the epoch); ``queued_ts``, ``scheduled_ts``, ``first_token_ts``,
``last_token_ts``, the token timestamps, preemption and resumption times are the engine core's
``time.monotonic()`` seconds (``CLOCK_MONOTONIC``, host-wide). ``offset_ns`` converts the latter
to the former: ``time.time_ns() - time.monotonic_ns()`` read in the API server when the record
was made (:func:`otelbench_vllm.hook.mono_to_unix_offset_ns`), carried in the record so that the
exporter process applies the API server's offset of that moment, not one of its own.

This module depends on ``opentelemetry-api`` only.

Example::

    record = FinishedRequest(...)          # RequestHook.on_finished packs it
    emit_spans(tracer, record)             # 1 server span + span_count(record) - 1 phases
"""

from __future__ import annotations

import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otelbench_vllm import names

__all__ = [
    "FinishedRequest",
    "SpanPlan",
    "emit_spans",
    "parent_context",
    "phase_durations",
    "plan_spans",
    "span_count",
    "token_offsets_us",
    "unix_ns",
]

_PROPAGATOR = TraceContextTextMapPropagator()


class FinishedRequest(NamedTuple):
    """One finished request (module docstring: time domains)."""

    iteration_timestamp: float
    """vLLM's wall-clock time of the step that finished the request (s)."""
    finish_reason: str
    request_id: str | None
    """The external request id (``gen_ai.request.id``)."""
    num_prompt_tokens: int
    num_cached_tokens: int
    arrival_time: float
    """Wall clock (s)."""
    queued_ts: float
    scheduled_ts: float
    first_token_ts: float
    last_token_ts: float
    """Monotonic (s); 0.0 where the request never reached that point."""
    first_token_latency: float
    engine_request_id: str | None
    trace_headers: Mapping[str, str] | None
    token_ts: bytes
    """Every output token's step timestamp (monotonic s), ``array('d')`` bytes."""
    preemptions: Sequence[tuple[float, int]]
    """(monotonic time, output tokens before it) per preemption."""
    resumptions: Sequence[float]
    output_phase_token: int | None
    offset_ns: int
    """``time.time_ns() - time.monotonic_ns()`` in the API server."""
    end_reason: str = names.END_REASON_FINISHED
    """``otelbench.server.end_reason``: ``finished``, ``cancelled``, ``aborted`` or ``error``."""
    end_phase: str | None = None
    """Where a request that did not finish was (``otelbench.server.end_phase``); None: finished."""
    error_type: str | None = None
    """``error.type`` of a request that ended in an error."""
    end_ts: float = 0.0
    """Monotonic (s): when a request that did not finish ended in the engine (the engine core's
    abort time, else the frontend's); 0.0 for a finished request."""
    prompt_tokens_computed: int | None = None
    output_tokens_generated: int | None = None
    """The engine core's account of a request that did not finish (None: not known)."""

    def token_timestamps(self) -> array.array[float]:
        """``token_ts`` as an array of floats."""
        out = array.array("d")
        out.frombytes(self.token_ts)
        return out


def unix_ns(mono_s: float, offset_ns: int) -> int:
    """A monotonic time (s) on the wall clock (ns since the epoch)."""
    return int(mono_s * 1e9) + offset_ns


def token_offsets_us(token_ts: Iterable[float], arrival_unix_ns: int, offset_ns: int) -> list[int]:
    """Microseconds from arrival (wall clock) to each token's step timestamp (monotonic seconds).

    ``offset_ns`` is :func:`otelbench_vllm.hook.mono_to_unix_offset_ns`; tokens of one engine
    step share a timestamp and therefore an offset.
    """
    base_us = (arrival_unix_ns - offset_ns) / 1e3
    return [round(ts * 1e6 - base_us) for ts in token_ts]


def phase_durations(rec: FinishedRequest) -> tuple[float | None, float | None, float | None]:
    """(queue, prefill, decode) in seconds; None for a phase the request never went through."""
    queued, scheduled = rec.queued_ts, rec.scheduled_ts
    first, last = rec.first_token_ts, rec.last_token_ts
    queue = scheduled - queued if queued and scheduled else None
    if scheduled and first:
        return queue, first - scheduled, last - first
    return queue, None, None


def _attributes(rec: FinishedRequest, offsets: list[int]) -> dict[str, Any]:
    queue, prefill, decode = phase_durations(rec)
    attributes: dict[str, Any] = {
        names.VLLM_REQUEST_ID: rec.request_id or "",
        names.VLLM_RESPONSE_FINISH_REASON: rec.finish_reason,
        names.SERVER_END_REASON: rec.end_reason,
        names.VLLM_USAGE_PROMPT_TOKENS: rec.num_prompt_tokens,
        names.VLLM_USAGE_COMPLETION_TOKENS: len(offsets),
        names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: rec.num_cached_tokens,
        names.VLLM_LATENCY_E2E: rec.iteration_timestamp - rec.arrival_time,
        names.SERVER_TOKEN_OFFSETS_US: offsets,
        names.SERVER_PREEMPTIONS: len(rec.preemptions),
        names.SERVER_MONO_TO_UNIX_OFFSET_NS: rec.offset_ns,
    }
    if rec.engine_request_id:
        attributes[names.SERVER_ENGINE_REQUEST_ID] = rec.engine_request_id
    if rec.output_phase_token is not None:
        attributes[names.SERVER_OUTPUT_PHASE_TOKEN] = rec.output_phase_token
    if rec.first_token_ts:
        attributes[names.VLLM_LATENCY_TTFT] = rec.first_token_latency
    if queue is not None:
        attributes[names.VLLM_LATENCY_QUEUE] = queue
    if prefill is not None and decode is not None:
        attributes[names.VLLM_LATENCY_PREFILL] = prefill
        if rec.end_phase is None:  # a decode cut short is no decode time
            attributes[names.VLLM_LATENCY_DECODE] = decode
            attributes[names.VLLM_LATENCY_INFERENCE] = rec.last_token_ts - rec.scheduled_ts
    if rec.end_phase is not None:
        attributes[names.SERVER_END_PHASE] = rec.end_phase
        if rec.scheduled_ts and rec.end_ts:  # in the model from its scheduling to its end
            attributes[names.VLLM_LATENCY_INFERENCE] = max(0.0, rec.end_ts - rec.scheduled_ts)
        if rec.prompt_tokens_computed is not None:
            attributes[names.SERVER_PROMPT_TOKENS_COMPUTED] = rec.prompt_tokens_computed
        if rec.output_tokens_generated is not None:
            attributes[names.SERVER_OUTPUT_TOKENS_GENERATED] = rec.output_tokens_generated
    if rec.error_type is not None:
        attributes[names.ERROR_TYPE] = rec.error_type
    return attributes


def _events(rec: FinishedRequest) -> list[tuple[str, dict[str, Any], int]]:
    """(name, attributes, wall-clock ns) of the request span's preemption and resumption
    events, in order."""
    off = rec.offset_ns
    events: list[tuple[str, dict[str, Any], int]] = []
    for i, (ts, tokens) in enumerate(rec.preemptions):
        events.append(
            (
                names.EVENT_PREEMPTION,
                {
                    names.PREEMPTION_OUTPUT_TOKENS: tokens,
                    names.PREEMPTION_KV_TOKENS_DISCARDED: rec.num_prompt_tokens + tokens,
                },
                unix_ns(ts, off),
            )
        )
        if i < len(rec.resumptions):
            resumed = rec.resumptions[i]
            events.append(
                (
                    names.EVENT_RESUMPTION,
                    {names.PREEMPTION_STALL_US: round((resumed - ts) * 1e6)},
                    unix_ns(resumed, off),
                )
            )
    return events


def _phases(rec: FinishedRequest) -> list[tuple[str, float, float]]:
    """(child span name, start, end) of each phase the request went through (monotonic s). A
    request that did not finish has the phase it was in end when it ended (``end_ts``): the
    queue of a request never scheduled, the prefill of one without a token, else its decode
    (the engine decoded until then)."""
    queued, scheduled, first = rec.queued_ts, rec.scheduled_ts, rec.first_token_ts
    last = rec.last_token_ts
    if rec.end_phase is not None and rec.end_ts:
        cut = rec.end_ts
        if not scheduled:
            return [(names.SPAN_HOOK_QUEUE, queued, max(cut, queued))] if queued else []
        if not first:
            prefill = (names.SPAN_HOOK_PREFILL, scheduled, max(cut, scheduled))
            return ([(names.SPAN_HOOK_QUEUE, queued, scheduled)] if queued else []) + [prefill]
        last = max(cut, last)
    phases = (
        (names.SPAN_HOOK_QUEUE, queued, scheduled),
        (names.SPAN_HOOK_PREFILL, scheduled, first),
        (names.SPAN_HOOK_DECODE, first, last),
    )
    return [(name, start, end) for name, start, end in phases if start and end]


def span_count(rec: FinishedRequest) -> int:
    """How many spans :func:`emit_spans` ends for ``rec``: the server span and its phases."""
    return 1 + len(_phases(rec))


class SpanPlan(NamedTuple):
    """A record's spans as plain data, wall-clock ns: the request span (``start_ns`` … ``status``)
    and its phase spans; both ways of emitting them (:func:`emit_spans` through a tracer,
    ``otelbench_vllm.direct`` straight to a span processor) read it."""

    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any], int]]
    error_type: str | None
    phases: list[tuple[str, int, int]]
    """(child span name, start, end) of each phase."""


def plan_spans(rec: FinishedRequest) -> SpanPlan:
    """The server span and its phase spans of ``rec`` (module docstring: time domains)."""
    off = rec.offset_ns
    arrival_ns = int(rec.arrival_time * 1e9)
    offsets = token_offsets_us(rec.token_timestamps(), arrival_ns, off)
    end_ns = int(rec.iteration_timestamp * 1e9)
    for mono in (rec.last_token_ts, rec.end_ts):
        if mono:
            end_ns = max(end_ns, unix_ns(mono, off))
    return SpanPlan(
        arrival_ns,
        end_ns,
        _attributes(rec, offsets),
        _events(rec),
        rec.error_type,
        [(name, unix_ns(start, off), unix_ns(end, off)) for name, start, end in _phases(rec)],
    )


def parent_context(rec: FinishedRequest) -> Context | None:
    """The client's span as the request span's remote parent (from its ``traceparent``)."""
    return _PROPAGATOR.extract(rec.trace_headers) if rec.trace_headers else None


def emit_spans(tracer: trace.Tracer, rec: FinishedRequest) -> None:
    """Build and end the request's server span (child of the client's span through the trace
    headers), its queue / prefill / decode child spans and its preemption / resumption
    events."""
    plan = plan_spans(rec)
    span = tracer.start_span(
        names.SPAN_HOOK_REQUEST,
        context=parent_context(rec),
        kind=SpanKind.SERVER,
        attributes=plan.attributes,
        start_time=plan.start_ns,
    )
    for name, attributes, timestamp in plan.events:
        span.add_event(name, attributes, timestamp=timestamp)
    if plan.error_type is not None:
        span.set_status(Status(StatusCode.ERROR, plan.error_type))
    in_span = trace.set_span_in_context(span)
    for name, start, end in plan.phases:
        child = tracer.start_span(name, context=in_span, start_time=start)
        child.end(end_time=end)
    span.end(end_time=plan.end_ns)
