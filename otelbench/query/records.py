"""The typed record set the query layer hands to the metrics: timestamps, durations and counts.

Records are **column-oriented** (one numpy array per field, one entry per request), so a run of a
million requests is one array per field, not a million objects. Conventions:

* integer columns that are always present (span start, duration) are ``int64``;
* numeric attributes that may be absent are ``float64`` with **NaN for absent** (token counts
  included: they are exact in float64 up to 2**53);
* string columns are tuples with ``None`` for absent;
* per-chunk arrays of all requests are concatenated (``chunk_offset_us``, ``chunk_tokens``) and
  ``chunk_bounds`` (``n + 1`` entries) delimits each request's chunks — the
  :class:`otelbench.metrics.Ragged` layout.

``rejected_attributes`` counts, per attribute name, the stored values the query layer could not
parse (a token count that is not an integer, offsets that are not a JSON integer array): each
was read as absent, and the count is how the report shows it (``data_quality``).

Units and clock domains are in the field names: ``*_unix_ns`` wall clock; ``*_us``/``*_offset_us``
client monotonic microseconds since T_submit; server latencies ``*_s`` are seconds as vLLM
writes them (engine monotonic clock); server ``token_offset_us`` are engine microseconds since the
request's arrival (the engine hooks' Option C timeline).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.arrays import F64, I64
from otelbench.model.conform import conforms
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.manifest import RunManifest

__all__ = [
    "ClientRequests",
    "GuardrailSpans",
    "RunData",
    "RunInfo",
    "ServerRequests",
    "ServerSource",
    "run_manifest",
    "upgrade_manifest",
]


def _check_lengths(record: Any, ragged: Mapping[str, tuple[str, ...]]) -> None:
    """Every field holds one entry per span, except the ragged groups: ``bounds field → the
    fields it slices`` (a CSR layout: span ``i``'s entries are ``values[bounds[i]:bounds[i+1]]``)
    and ``rejected_attributes``."""
    name = type(record).__name__
    n = len(record)
    skip = {"rejected_attributes", *ragged, *(v for values in ragged.values() for v in values)}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name not in skip and value is not None and len(value) != n:
            raise ValueError(f"{name}.{f.name} has {len(value)} entries, not {n}")
    for bounds_name, value_names in ragged.items():
        bounds = getattr(record, bounds_name)
        if bounds.shape != (n + 1,) or bounds[0] != 0 or np.any(np.diff(bounds) < 0):
            raise ValueError(f"{name}.{bounds_name} must have n+1 non-decreasing entries from 0")
        for value_name in value_names:
            if bounds[-1] != getattr(record, value_name).size:
                raise ValueError(f"{name}.{bounds_name}[-1] must equal len({value_name})")


def _ragged(bounds: I64, values: I64, i: int) -> I64:
    """Span ``i``'s slice of a ragged field."""
    return values[int(bounds[i]) : int(bounds[i + 1])]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One benchmark run: its id, its manifest (the run span's, :func:`run_manifest`) and its
    run span's timing."""

    run_id: str
    manifest: RunManifest
    span_start_unix_ns: int
    span_duration_ns: int


_BOTTLENECK_DEVIATION: Final = "load generator fell behind its schedule"
"""How the load generator's bottleneck deviation began before the manifest carried the flag."""


def upgrade_manifest(manifest: JsonObject) -> JsonObject:
    """A stored run manifest (parsed JSON) in today's shape, for manifests written by earlier
    otelbench versions; read once, where the store's manifests are parsed (:func:`run_manifest`).

    * ``schedule_lag.generator_bottleneck`` (draft 4.2.5): earlier manifests carried the
      bottleneck only as a deviation's prose; the flag is read from it.

    >>> lag = {"p50_ms": 0.5, "p99_ms": 12.0, "max_ms": 14.0}
    >>> upgrade_manifest({"schedule_lag": lag, "deviations": [
    ...     "load generator fell behind its schedule: P99 send lag 12.0 ms"]})["schedule_lag"]
    {'p50_ms': 0.5, 'p99_ms': 12.0, 'max_ms': 14.0, 'generator_bottleneck': True}
    """
    lag = manifest.get("schedule_lag")
    if isinstance(lag, dict) and "generator_bottleneck" not in lag:
        deviations = manifest.get("deviations")
        flagged = isinstance(deviations, list) and any(
            str(d).startswith(_BOTTLENECK_DEVIATION) for d in deviations
        )
        manifest = {**manifest, "schedule_lag": {**lag, "generator_bottleneck": flagged}}
    return manifest


MANIFEST_PROBLEMS_SHOWN: Final = 5
"""How many of a manifest's departures from :class:`RunManifest` its error lists."""


def run_manifest(text: str | None) -> RunManifest:
    """A run span's stored manifest (its JSON text; None or empty: none) as a
    :class:`~otelbench.model.manifest.RunManifest`: parsed, upgraded (:func:`upgrade_manifest`),
    then checked against the type (a key it does not declare is kept: a newer otelbench's).
    Raises ValueError for text that is not a JSON object, and for a manifest of another shape,
    naming its departures (the first :data:`MANIFEST_PROBLEMS_SHOWN`, by path).

    >>> run_manifest('{"id": 7, "notes": []}')
    Traceback (most recent call last):
    ...
    ValueError: not an otelbench run manifest: $.id: expected str, got int
    """
    try:
        manifest = json.loads(text) if text else {}
    except json.JSONDecodeError as err:
        raise ValueError(f"the manifest is not valid JSON ({err})") from err
    if not isinstance(manifest, dict):
        raise ValueError("the manifest is not a JSON object")
    upgraded = upgrade_manifest(manifest)
    problems = conforms(upgraded, RunManifest, unknown_keys=True)
    if problems:
        shown = "; ".join(problems[:MANIFEST_PROBLEMS_SHOWN])
        more = len(problems) - MANIFEST_PROBLEMS_SHOWN
        raise ValueError(
            f"not an otelbench run manifest: {shown}" + (f" (and {more} more)" if more > 0 else "")
        )
    return cast(RunManifest, upgraded)  # checked just above


@dataclass(frozen=True, slots=True, eq=False)
class ClientRequests:
    """The client spans of one run, one entry per request, ordered by (T_submit, TraceId, SpanId).

    ``ok`` is true when the span's status is not ``Error`` and it has no ``error.type``.
    ``ttft_us`` is the time to the first *content* token (NaN when no content arrived);
    ``end_offset_us`` is T_submit → last byte. ``chunk_token_source`` says how the per-chunk
    token counts were obtained (``usage`` or ``one_per_chunk``; ``one_per_chunk`` is also assumed
    when a span has chunk offsets but no chunk token counts).
    """

    trace_id: tuple[str, ...]
    span_id: tuple[str, ...]
    submit_unix_ns: I64
    duration_ns: I64
    ok: npt.NDArray[np.bool_]
    error_type: tuple[str | None, ...]
    request_index: F64
    request_class: tuple[str | None, ...]
    think_phase: tuple[str | None, ...]
    """``ended`` / ``unterminated`` for a reasoning model's think phase; None: no think phase."""
    output_phase_chunk: F64
    """Index of the first output-phase chunk after an ended think phase (NaN otherwise)."""
    schedule_lag_us: F64
    ttft_us: F64
    first_event_offset_us: F64
    end_offset_us: F64
    input_tokens: F64
    output_tokens: F64
    finish_reasons: tuple[tuple[str, ...], ...]
    chunk_token_source: tuple[str | None, ...]
    chunk_bounds: I64
    chunk_offset_us: I64
    chunk_tokens: I64
    rejected_attributes: Mapping[str, int] = field(default_factory=dict)
    """Attribute name → values left unparsed (read as absent), over these spans."""
    prompt_tokens_sent: F64 | None = None
    """Prompt tokens the load generator sent (``otelbench.request.prompt_tokens``; NaN: not
    recorded; None: not read)."""
    max_tokens: F64 | None = None
    """The request's ``max_tokens`` (``gen_ai.request.max_tokens``; NaN: not sent; None: not
    read)."""

    def __post_init__(self) -> None:
        _check_lengths(self, {"chunk_bounds": ("chunk_offset_us", "chunk_tokens")})

    def __len__(self) -> int:
        return len(self.span_id)

    def chunks(self, i: int) -> tuple[I64, I64]:
        """Request ``i``'s content-chunk arrival offsets (µs since T_submit) and token counts."""
        bounds = self.chunk_bounds
        return _ragged(bounds, self.chunk_offset_us, i), _ragged(bounds, self.chunk_tokens, i)

    def end_unix_ns(self) -> I64:
        """Response end on the wall clock: ``T_submit + end_offset_us`` (span ``Duration`` when
        the end offset is absent)."""
        end_offset_ns = np.where(
            np.isfinite(self.end_offset_us), self.end_offset_us * 1000.0, self.duration_ns
        )
        return self.submit_unix_ns + np.rint(end_offset_ns).astype(np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class ServerRequests:
    """Server spans, one entry per span, ordered by (start, TraceId, SpanId).

    A server span is the engine hooks' ``otelbench.vllm.request`` span (``span_name`` is
    :data:`otelbench.semconv.SPAN_HOOK_REQUEST`) or vLLM's own ``llm_request`` span; a run's
    client span keeps the hook span when it has both. ``client_index`` is the position in the
    run's :class:`ClientRequests` of the client span that is this span's parent, or -1 for a span
    without an otelbench client parent (live traffic). Latencies are the ``gen_ai.latency.*``
    values in seconds; NaN when absent.

    Hook-only fields (NaN, or empty groups, for an ``llm_request`` span):

    * ``token_offset_us`` grouped by ``token_bounds`` (``n + 1`` entries, the
      :class:`otelbench.metrics.Ragged` layout): µs from the request's arrival in the engine to
      the engine step that produced each output token (tokens of one step share a time);
    * ``preemptions``: the span's ``otelbench.server.preemptions`` count;
      ``preemption_events``: its preemption span events; ``kv_tokens_discarded``: the sum of
      their ``otelbench.preemption.kv_tokens_discarded``;
    * ``stall_us`` grouped by ``stall_bounds``: each resumption event's
      ``otelbench.preemption.stall_us``;
    * ``preemption_offset_us`` grouped by ``preemption_bounds``: µs from the span's start (the
      request's arrival in the engine) to each preemption event, the engine's own time of the
      preemption (the hooks convert the engine core's monotonic step time to the span's clock);
      both None where the records were built without event times;
    * ``end_reason``: ``otelbench.server.end_reason`` as stored (``finished``, ``cancelled``,
      ``aborted`` or ``error``; None where absent: spans written before the hooks knew
      cancellations, and vLLM's own spans); ``end_phase``: ``otelbench.server.end_phase``,
      set on the spans of requests that did not finish; ``prompt_tokens_computed`` and
      ``output_tokens_generated``: the engine core's account of the work done on such a request
      (NaN where absent). The four are None (all absent) where the records were built without
      them. :meth:`end_reasons` reads every span's end reason, :meth:`cut` which spans the hooks
      marked as requests that did not finish.
    """

    trace_id: tuple[str, ...]
    span_id: tuple[str, ...]
    parent_span_id: tuple[str, ...]
    client_index: I64
    start_unix_ns: I64
    duration_ns: I64
    request_id: tuple[str | None, ...]
    ttft_s: F64
    e2e_s: F64
    queue_s: F64
    prefill_s: F64
    decode_s: F64
    inference_s: F64
    prompt_tokens: F64
    completion_tokens: F64
    span_name: tuple[str, ...]
    finish_reason: tuple[str | None, ...]
    cache_read_tokens: F64
    preemptions: F64
    preemption_events: F64
    kv_tokens_discarded: F64
    output_phase_token: F64
    """Hook spans of a reasoning model (think-end token id configured): index in the token
    offsets of the first output-phase token; NaN otherwise."""
    token_bounds: I64
    token_offset_us: I64
    stall_bounds: I64
    stall_us: I64
    rejected_attributes: Mapping[str, int] = field(default_factory=dict)
    """Attribute name → values left unparsed (read as absent), over these spans and their
    events."""
    preemption_bounds: I64 | None = None
    preemption_offset_us: I64 | None = None
    end_reason: tuple[str | None, ...] | None = None
    end_phase: tuple[str | None, ...] | None = None
    prompt_tokens_computed: F64 | None = None
    output_tokens_generated: F64 | None = None

    def __post_init__(self) -> None:
        ragged = {"token_bounds": ("token_offset_us",), "stall_bounds": ("stall_us",)}
        if (self.preemption_bounds is None) != (self.preemption_offset_us is None):
            raise ValueError("preemption_bounds and preemption_offset_us go together")
        if self.preemption_bounds is not None:
            ragged["preemption_bounds"] = ("preemption_offset_us",)
        _check_lengths(self, ragged)

    def __len__(self) -> int:
        return len(self.span_id)

    def is_hook(self) -> npt.NDArray[np.bool_]:
        """True for the engine hooks' spans, False for vLLM's ``llm_request`` spans."""
        return np.fromiter(
            map(semconv.SPAN_HOOK_REQUEST.__eq__, self.span_name),
            dtype=np.bool_,
            count=len(self.span_name),
        )

    def end_reasons(self) -> tuple[str, ...]:
        """Every span's end reason (:data:`otelbench.semconv.END_REASONS`): the stored
        ``otelbench.server.end_reason``; where it is absent (a span written before the hooks knew
        cancellations, or vLLM's own span), ``aborted`` / ``error`` for the finish reason
        ``abort`` / ``error``, else ``finished`` (``otelbench.semconv.SERVER_END_REASON``)."""
        stored = self.end_reason or (None,) * len(self)
        return tuple(
            reason or _LEGACY_END_REASONS.get(_one_word(finish), semconv.END_REASON_FINISHED)
            for reason, finish in zip(stored, self.finish_reason, strict=True)
        )

    def cut(self) -> npt.NDArray[np.bool_]:
        """True for the spans the hooks marked as requests that did not finish: an end reason
        other than ``finished``, or an end phase. Their timing stops where the request was cut
        (no decode time, ``time_in_model_inference`` up to the cut), so the latency summaries
        leave them out; a span without the marking (older hooks, vLLM's own spans) is timed as
        before, whatever its finish reason."""
        reasons = self.end_reason or (None,) * len(self)
        phases = self.end_phase or (None,) * len(self)
        return np.fromiter(
            (
                (r is not None and r != semconv.END_REASON_FINISHED) or p is not None
                for r, p in zip(reasons, phases, strict=True)
            ),
            dtype=np.bool_,
            count=len(self),
        )

    def engine_work(self) -> tuple[F64, F64]:
        """Per span, the prompt tokens the engine processed and the output tokens it generated:
        for a span :meth:`cut` short, the engine core's account (``prompt_tokens_computed``,
        ``output_tokens_generated``; NaN where it did not reach the hooks); for the others, which
        went through vLLM's finished path, their prompt and completion tokens."""
        cut = self.cut()
        absent = np.full(len(self), np.nan)
        computed = absent if self.prompt_tokens_computed is None else self.prompt_tokens_computed
        generated = absent if self.output_tokens_generated is None else self.output_tokens_generated
        return (
            np.where(cut, computed, self.prompt_tokens),
            np.where(cut, generated, self.completion_tokens),
        )

    def token_offsets(self, i: int) -> I64:
        """Span ``i``'s per-token offsets (µs since arrival; empty without hook offsets)."""
        return _ragged(self.token_bounds, self.token_offset_us, i)

    def stalls(self, i: int) -> I64:
        """Span ``i``'s resumption stalls (µs from each preemption to its resumption)."""
        return _ragged(self.stall_bounds, self.stall_us, i)

    def preemption_offsets(self, i: int) -> I64 | None:
        """Span ``i``'s preemption times (µs since its start); None without event times."""
        if self.preemption_bounds is None or self.preemption_offset_us is None:
            return None
        return _ragged(self.preemption_bounds, self.preemption_offset_us, i)

    @classmethod
    def empty(cls) -> ServerRequests:
        """No server span."""
        none: tuple[str | None, ...] = ()
        i64 = np.empty(0, dtype=np.int64)
        f64 = np.empty(0, dtype=np.float64)
        return cls(
            (), (), (), i64, i64, i64, none, f64, f64, f64, f64, f64, f64, f64, f64, (), none,
            f64, f64, f64, f64, f64, np.zeros(1, dtype=np.int64), i64,
            np.zeros(1, dtype=np.int64), i64,
        )  # fmt: skip


_LEGACY_END_REASONS: Final[Mapping[str, str]] = {
    "abort": semconv.END_REASON_ABORTED,
    "error": semconv.END_REASON_ERROR,
}
"""vLLM finish reasons that mean the request did not finish, for spans without an end reason."""


def _one_word(finish_reason: str | None) -> str:
    """A finish reason as one word: ``abort`` as the hooks write it, or vLLM's own span's
    one-element JSON list (``["abort"]``)."""
    return (finish_reason or "").strip().strip("[]").strip().strip('"')


@dataclass(frozen=True, slots=True, eq=False)
class GuardrailSpans:
    """Guardrail filter spans of a run's measured requests, one entry per filter, request and
    stage, ordered by (start, TraceId, SpanId) (otelbench.guardrails; draft 4.8, 5.10).

    ``client_index`` is the position in the run's :class:`ClientRequests` of the request whose
    trace the span is in. An input span times one invocation (``duration_ns`` ≈ ``busy_us``);
    an output span runs from the filter's first to its last invocation on the stream and sums
    them up: ``busy_us`` over all, ``chunk_busy_us`` (grouped by ``chunk_bounds``) per SSE event.
    The ``resource_*`` fields disclose the configuration the span was produced under (4.8.1).
    """

    trace_id: tuple[str, ...]
    span_id: tuple[str, ...]
    client_index: I64
    start_unix_ns: I64
    duration_ns: I64
    filter_name: tuple[str | None, ...]
    filter_type: tuple[str | None, ...]
    stage: tuple[str | None, ...]
    decision: tuple[str | None, ...]
    rule: tuple[str | None, ...]
    error: tuple[str | None, ...]
    invocations: F64
    busy_us: F64
    resource_input_filters: tuple[str | None, ...]
    resource_output_filters: tuple[str | None, ...]
    resource_config_sha256: tuple[str | None, ...]
    resource_block_response: tuple[str | None, ...]
    service_name: tuple[str | None, ...]
    chunk_bounds: I64
    chunk_busy_us: I64
    added_bounds: I64
    output_added_us: I64
    """Output spans, grouped by ``added_bounds``: µs the whole output stage (every output
    filter, SSE parsing and re-encoding) held each SSE event; the same on every output span of
    a response."""
    rejected_attributes: Mapping[str, int] = field(default_factory=dict)
    """Attribute name → values left unparsed (read as absent), over these spans."""

    def __post_init__(self) -> None:
        _check_lengths(
            self, {"chunk_bounds": ("chunk_busy_us",), "added_bounds": ("output_added_us",)}
        )

    def __len__(self) -> int:
        return len(self.span_id)

    def chunk_busy(self, i: int) -> I64:
        """Span ``i``'s per-event busy times, µs (empty for an input span)."""
        return _ragged(self.chunk_bounds, self.chunk_busy_us, i)

    def output_added(self, i: int) -> I64:
        """Span ``i``'s output-stage time per SSE event, µs (empty for an input span)."""
        return _ragged(self.added_bounds, self.output_added_us, i)

    @classmethod
    def empty(cls) -> GuardrailSpans:
        """No guardrail span (a target without otelbench guardrails)."""
        none: tuple[str | None, ...] = ()
        i64 = np.empty(0, dtype=np.int64)
        f64 = np.empty(0, dtype=np.float64)
        return cls(
            (), (), i64, i64, i64, none, none, none, none, none, none, f64, f64,
            none, none, none, none, none, np.zeros(1, dtype=np.int64), i64,
            np.zeros(1, dtype=np.int64), i64,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ServerSource:
    """Server spans of a run that one producer wrote: the span name (the engine hooks'
    ``otelbench.vllm.request`` or vLLM's own ``llm_request``) and, for the hooks, the resource's
    vLLM version, hooks version and support level (empty strings where the resource has none)."""

    span_name: str
    vllm_version: str
    hooks_version: str
    support: str
    spans: int


@dataclass(frozen=True, slots=True)
class PhaseRequests:
    """A run's client spans of one request phase (``warmup``, ``probe``, ``measure``): how many,
    how many succeeded, their output and cached prompt tokens (successful ones, from the spans'
    usage), the first submit and the last end (Unix ns), and how many ended after the first
    measured request was submitted (draft 4.5.1: a warm-up still in flight at the start)."""

    phase: str
    requests: int
    succeeded: int
    output_tokens: int
    cached_tokens: int
    first_submit_unix_ns: int
    last_end_unix_ns: int
    ended_after_start: int


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class RunData:
    """Everything a run report needs: the run, its client requests, their server children and
    the guardrail filter spans in their traces, and what produced the server spans."""

    run: RunInfo
    client: ClientRequests
    server: ServerRequests
    guardrails: GuardrailSpans = field(default_factory=GuardrailSpans.empty)
    server_sources: tuple[ServerSource, ...] = ()
    phases: tuple[PhaseRequests, ...] = ()
    """The run's client spans by request phase (query ``run_phases``)."""

    def phase(self, name: str) -> PhaseRequests | None:
        """The requests of phase ``name``, or None when the run sent none."""
        return next((p for p in self.phases if p.phase == name), None)

    def rejected_attributes(self) -> dict[str, int]:
        """Attribute name → stored values of this run's spans the query layer could not parse
        (each read as absent), over client, server and guardrail spans; sorted by name."""
        total: Counter[str] = Counter()
        for records in (self.client, self.server, self.guardrails):
            total.update(records.rejected_attributes)
        return dict(sorted(total.items()))
