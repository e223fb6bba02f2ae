"""Per-request bookkeeping in vLLM's frontend and the server span built when a request finishes.

This module knows vLLM's data only by shape (duck typing): an engine-core output has
``request_id``, ``new_token_ids`` and ``trace_headers``; an engine-core event has ``type`` and a
``time.monotonic()`` ``timestamp``; vLLM's per-request ``RequestStateStats`` has
``arrival_time`` (wall clock) and ``queued_ts``/``scheduled_ts``/``first_token_ts``/
``last_token_ts`` (monotonic) and ``first_token_latency``. The one module that touches vLLM
itself is :mod:`otelbench_vllm._vllm_internals`, which calls :class:`RequestHook` from its
wrappers. It depends on ``opentelemetry-api`` only; the SDK is wired in
:mod:`otelbench_vllm.export` (or pass ``tracer_provider=``).

Cost model:

- per step and request (the hot path): one attribute lookup and one ``list.append`` of the step's
  float timestamp per new token (``extend`` when a step brings several); no span, no dict, no
  allocation beyond the list's amortised growth;
- with a think-end token id set (``OTELBENCH_VLLM_THINK_END_TOKEN_ID``, a reasoning model's
  ``</think>``): one membership test of the step's new token ids until that token is seen, which
  records the index of the first output-phase token (``otelbench.server.output_phase_token``);
- per preemption / resumption: one tuple or float appended;
- per finished request: the request is packed into a :class:`~otelbench_vllm.spans.
  FinishedRequest` (a tuple of its ids, trace headers, counts, timestamps and the token
  timestamps as ``array('d')`` bytes) and handed to the export sink, and the request's metrics
  are recorded (:mod:`otelbench_vllm.metrics`: seven histogram records).

The export sink is chosen by ``OTELBENCH_VLLM_EXPORT`` (:data:`EXPORT_SINKS`):

- ``process`` (the default): the record goes to a bounded queue, and the hooks' exporter process
  (:mod:`otelbench_vllm.offload`) builds the spans and exports them: span building, protobuf
  encoding and the HTTP transport leave vLLM's API server process, whose CPU (one GIL) is what
  bounds vLLM's throughput at high concurrency. The API server's cost per finished request is
  the packing, one deque append and its share of pickling the batch to a pipe;
- ``inprocess``: the span, its three child spans and events are built in the API server and
  handed to the tracer provider (a batch span processor encodes and exports them from its own
  thread, in the same process). Also what a hook given a ``tracer_provider`` does.

Both sinks build the spans with the same function from the same record
(:func:`otelbench_vllm.spans.emit_spans`).

The per-request state lives in an attribute of vLLM's ``RequestStateStats`` object, so it goes
away with the request even when the request is aborted and never finishes through the stats.

Example (plain objects shaped like vLLM's)::

    hook = RequestHook(tracer_provider=provider)
    hook.on_output(output, timestamp=1234.5, req_stats=stats)   # every step
    hook.on_finished(iteration_timestamp, "length", "cmpl-1-0", 16, stats, num_cached_tokens=0)
"""

from __future__ import annotations

import array
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.metrics import MeterProvider

from otelbench_vllm import names
from otelbench_vllm.aborts import EngineFacts, FactsReceiver, channel_dir
from otelbench_vllm.metrics import HookMetrics
from otelbench_vllm.spans import (
    FinishedRequest,
    emit_spans,
    phase_durations,
    span_count,
    token_offsets_us,
)

__all__ = [
    "ACCOUNT_WAIT_S",
    "DEFAULT_EXPORT",
    "ENDED_ATTR",
    "EVENT_PREEMPTED",
    "EVENT_QUEUED",
    "EVENT_SCHEDULED",
    "EXPORT_SINKS",
    "STATE_ATTR",
    "ExportSink",
    "HookStats",
    "RequestHook",
    "RequestTrace",
    "export_mode_from_env",
    "mono_to_unix_offset_ns",
    "think_end_token_id_from_env",
    "token_offsets_us",
]

_log = logging.getLogger("vllm.plugins.otelbench")

EVENT_QUEUED = 1
EVENT_SCHEDULED = 2
EVENT_PREEMPTED = 3
"""``vllm.v1.engine.EngineCoreEventType`` values (checked against vLLM at load)."""

STATE_ATTR = "_otelbench_trace"
"""Attribute of vLLM's ``RequestStateStats`` that holds the request's :class:`RequestTrace`."""


def mono_to_unix_offset_ns(tries: int = 3) -> int:
    """``time.time_ns() - time.monotonic_ns()`` at one instant: the wall clock read between two
    monotonic reads, against their midpoint, and of ``tries`` such readings the one with the
    narrowest bracket (the error is at most half of it: a few hundred ns). Two reads back to back
    are off by however long the thread was preempted between them: by 27–452 µs in 7 of 965
    readings on this project's 2-core VM under load.

    ``CLOCK_MONOTONIC`` is host-wide on Linux, so the offset converts the engine core's
    ``time.monotonic()`` timestamps, taken in another process, to wall-clock time; it is read
    again for every finished request (:meth:`RequestHook.current_offset_ns`).
    """
    best_width, best = 0, 0
    for k in range(tries):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if k == 0 or after - before < best_width:
            best_width, best = after - before, wall - (before + after) // 2
    return best


def think_end_token_id_from_env() -> int | None:
    """``$OTELBENCH_VLLM_THINK_END_TOKEN_ID`` as an int; None when unset or not an integer."""
    raw = os.environ.get(names.ENV_VLLM_THINK_END_TOKEN_ID, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        _log.warning(
            "otelbench hooks: %s=%r is not a token id; think phases are not marked",
            names.ENV_VLLM_THINK_END_TOKEN_ID,
            raw,
        )
        return None


class RequestTrace:
    """What the hook collects about one request between its first output and its finish."""

    __slots__ = (
        "_preempted",
        "engine_request_id",
        "output_phase_token",
        "preemptions",
        "resumptions",
        "token_ts",
        "trace_headers",
    )

    def __init__(
        self, engine_request_id: str | None = None, trace_headers: Mapping[str, str] | None = None
    ) -> None:
        self.engine_request_id = engine_request_id
        self.trace_headers = trace_headers
        self.token_ts: list[float] = []
        """The step timestamp (engine core, ``time.monotonic()`` seconds) of every output token."""
        self.preemptions: list[tuple[float, int]] = []
        """(monotonic timestamp, output tokens generated before it) per PREEMPTED event."""
        self.resumptions: list[float] = []
        """Monotonic timestamp of the first SCHEDULED event after each PREEMPTED event."""
        self.output_phase_token: int | None = None
        """Index in ``token_ts`` of the first token after the think-end token, once seen."""
        self._preempted = False

    def on_event(self, event_type: int, timestamp: float) -> None:
        if event_type == EVENT_PREEMPTED:
            self.preemptions.append((timestamp, len(self.token_ts)))
            self._preempted = True
        elif event_type == EVENT_SCHEDULED and self._preempted:
            self.resumptions.append(timestamp)
            self._preempted = False


ENDED_ATTR = "_otelbench_ended"
"""Attribute of vLLM's ``RequestStateStats`` set once the request's span was ended as cancelled or
failed (so a request is never ended twice)."""

ACCOUNT_WAIT_S = 5.0
"""How long a cancelled request's span waits for the engine core's account of it (the engine core
takes the abort between two steps; a long prefill step on a GPU can take a second or more)."""

_FINISH_ABORT = "abort"
_FINISH_END_REASONS = {_FINISH_ABORT: names.END_REASON_ABORTED, "error": names.END_REASON_ERROR}
"""vLLM finish reasons (``FinishReason``'s ``str``) that end a request without finishing it."""


def _frontend_phase(state: RequestTrace) -> str:
    """Where a request was, as far as the frontend can tell: ``decode`` once a token came."""
    return names.END_PHASE_DECODE if state.token_ts else names.END_PHASE_UNKNOWN


class _Cut:
    """A request ended before it finished, between its end in the frontend and its span."""

    __slots__ = (
        "cached_tokens",
        "deadline",
        "end_mono",
        "end_wall",
        "prompt_tokens",
        "request_id",
        "state",
        "stats",
    )

    def __init__(
        self,
        state: RequestTrace,
        stats: Any,
        request_id: str | None,
        prompt_tokens: int,
        cached_tokens: int,
        end_wall: float,
        end_mono: float,
    ) -> None:
        self.state = state
        self.stats = stats
        self.request_id = request_id
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = cached_tokens
        self.end_wall = end_wall
        self.end_mono = end_mono
        self.deadline = end_mono


def _claim(rs: Any, wall: float, mono: float) -> _Cut | None:
    """A frontend ``RequestState`` ended outside vLLM's finish path, claimed once: marked ended
    on its stats (None when it has no stats or was ended already), with its trace state (its
    engine request id filled in)."""
    req_stats = rs.stats
    if req_stats is None or req_stats.__dict__.get(ENDED_ATTR):
        return None
    req_stats.__dict__[ENDED_ATTR] = True
    state: RequestTrace | None = req_stats.__dict__.pop(STATE_ATTR, None)
    if state is None:
        state = RequestTrace()
    if state.engine_request_id is None:
        state.engine_request_id = str(rs.request_id)
    return _Cut(
        state,
        req_stats,
        getattr(rs, "external_req_id", rs.request_id),
        int(rs.prompt_len or 0),
        int(rs.num_cached_tokens or 0),
        wall,
        mono,
    )


class HookStats:
    """The hook's own health, counted in the frontend process (read it with :meth:`as_dict`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests_traced = 0
        self.spans_exported = 0
        self.spans_export_failed = 0
        self.export_errors = 0
        self.hook_errors = 0
        self.spans_ended = 0
        """Every span the hooks ended (server and child spans), counted in the API server as each
        request finishes: handed to the span processor, or to the exporter process's queue."""
        # With a span spool (``OTELBENCH_SPOOL_DIR``), counted by ``otelbench.spool``:
        self.spans_sent = 0
        """Delivered to the collector at the first attempt."""
        self.spans_spooled = 0
        """Written to the spool because the collector could not take them."""
        self.spans_replayed = 0
        """Sent from the spool once the collector answered again."""
        self.spans_dropped = 0
        """Lost because the spool was full (its bound)."""
        self.spans_rejected = 0
        """Refused by the collector for good (an HTTP 4xx other than 429)."""
        self.records_torn = 0
        """Records of a crashed process's spool that could not be read back."""
        # With the exporter process (``OTELBENCH_VLLM_EXPORT=process``), counted in the API server:
        self.records_dropped = 0
        """Finished requests whose spans were never built: the queue to the exporter process was
        full, or that process died (or could not be started) before building them."""
        self.exporter_restarts = 0
        """Times the exporter process was started again after it died."""
        # Requests that did not finish (counted in the API server as their spans are ended):
        self.requests_cancelled = 0
        """Aborted by vLLM's frontend (client disconnect, a failed request task)."""
        self.requests_failed = 0
        """Ended by an engine error (finish reason ``error``, or the engine died)."""
        self.abort_accounts_missing = 0
        """Cancelled requests whose engine-core account did not arrive in time (or at all): their
        spans carry what the frontend saw (``otelbench_vllm.aborts``)."""

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    @property
    def spans_unaccounted(self) -> int:
        """Ended but neither exported nor failed: queued, or dropped by a full processor queue."""
        return self.spans_ended - self.spans_exported - self.spans_export_failed

    def as_dict(self) -> dict[str, int]:
        return {
            "requests_traced": self.requests_traced,
            "spans_ended": self.spans_ended,
            "spans_exported": self.spans_exported,
            "spans_export_failed": self.spans_export_failed,
            "spans_unaccounted": self.spans_unaccounted,
            "export_errors": self.export_errors,
            "hook_errors": self.hook_errors,
            "spans_sent": self.spans_sent,
            "spans_spooled": self.spans_spooled,
            "spans_replayed": self.spans_replayed,
            "spans_dropped": self.spans_dropped,
            "spans_rejected": self.spans_rejected,
            "records_torn": self.records_torn,
            "records_dropped": self.records_dropped,
            "exporter_restarts": self.exporter_restarts,
            "requests_cancelled": self.requests_cancelled,
            "requests_failed": self.requests_failed,
            "abort_accounts_missing": self.abort_accounts_missing,
        }


class _Output(Protocol):
    request_id: str
    new_token_ids: Sequence[int]
    trace_headers: Mapping[str, str] | None


class _Event(Protocol):
    type: int
    timestamp: float


def _hooks_version() -> str:
    from otelbench_vllm import __version__

    return __version__


class ExportSink(Protocol):
    """Where :meth:`RequestHook.on_finished` hands each finished request's record."""

    def submit(self, record: FinishedRequest) -> None: ...

    def close(self, timeout: float = ...) -> bool:
        """Send what is pending and wait for its export (at most ``timeout`` s); True if done."""
        ...


class _InProcess:
    """The ``inprocess`` sink: the spans are built in this process, on the calling thread, and
    exported by ``provider``'s span processor."""

    def __init__(
        self, provider: trace.TracerProvider, tracer: trace.Tracer, stats: HookStats
    ) -> None:
        self._provider = provider
        self._tracer = tracer
        self._stats = stats

    def submit(self, record: FinishedRequest) -> None:
        emit_spans(self._tracer, record)

    def close(self, timeout: float = 10.0) -> bool:
        """Flush the provider's span processors (the SDK's; the API's provider has none)."""
        flush = getattr(self._provider, "force_flush", None)
        return bool(flush(int(timeout * 1000))) if flush is not None else True


def _in_process_sink(hook: RequestHook) -> ExportSink:
    return _InProcess(hook.tracer_provider(), hook.tracer(), hook.stats)


def _process_sink(hook: RequestHook) -> ExportSink:
    from otelbench_vllm.offload import ExporterProcess

    return ExporterProcess(hook.stats, hook.resource_attributes)


EXPORT_SINKS: dict[str, Callable[[RequestHook], ExportSink]] = {
    "process": _process_sink,
    "inprocess": _in_process_sink,
}
"""``OTELBENCH_VLLM_EXPORT`` value → the sink it selects (module docstring)."""

DEFAULT_EXPORT = "process"


def export_mode_from_env() -> str:
    """``$OTELBENCH_VLLM_EXPORT`` (a key of :data:`EXPORT_SINKS`); :data:`DEFAULT_EXPORT` when
    unset, and when it is not one of them (with a warning)."""
    raw = os.environ.get(names.ENV_VLLM_EXPORT, "").strip().lower()
    if not raw:
        return DEFAULT_EXPORT
    if raw not in EXPORT_SINKS:
        _log.warning(
            "otelbench hooks: %s=%r is none of %s; using %s",
            names.ENV_VLLM_EXPORT,
            raw,
            ", ".join(EXPORT_SINKS),
            DEFAULT_EXPORT,
        )
        return DEFAULT_EXPORT
    return raw


class RequestHook:
    """Collects per-request timing from vLLM's stats updates and emits the spans at finish.

    ``tracer_provider`` defaults to the one :func:`otelbench_vllm.export.make_tracer_provider`
    builds from the standard ``OTEL_*`` variables, created on the first finished request (so a
    process that never finishes a request never starts an export thread); ``meter_provider``
    likewise defaults to :func:`otelbench_vllm.export.make_meter_provider` (Prometheus on
    prometheus_client's default registry, plus OTLP/HTTP when a metrics endpoint is set).

    ``export`` is the sink (:data:`EXPORT_SINKS`): by default ``inprocess`` when a
    ``tracer_provider`` is given, else :func:`export_mode_from_env`. The sink is made on the
    first finished request (:attr:`sink`).
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        stats: HookStats | None = None,
        offset_ns: int | None = None,
        meter_provider: MeterProvider | None = None,
        think_end_token_id: int | None = None,
        export: str | None = None,
    ) -> None:
        if export is None:
            export = "inprocess" if tracer_provider is not None else export_mode_from_env()
        if export not in EXPORT_SINKS:
            raise ValueError(f"export: one of {', '.join(EXPORT_SINKS)}, not {export!r}")
        self.export = export
        self.sink: ExportSink | None = None
        """Made on the first finished request."""
        self.stats = stats if stats is not None else HookStats()
        self.think_end_token_id = think_end_token_id
        """A reasoning model's think-end token (module docstring); None: phases not marked."""
        self.offset_ns = offset_ns
        """A fixed monotonic → wall-clock offset (tests); None: read when each record is made
        (:meth:`current_offset_ns`)."""
        self._provider = tracer_provider
        self._tracer: trace.Tracer | None = None
        self._meter_provider = meter_provider
        self._metrics: HookMetrics | None = None
        self.resource_attributes: dict[str, str] = {
            names.RESOURCE_TELEMETRY_DISTRO_NAME: names.HOOKS_DISTRIBUTION,
            names.RESOURCE_TELEMETRY_DISTRO_VERSION: _hooks_version(),
        }
        """Put on the resource of the providers this hook makes (not on given ones)."""
        self.support = "untested"
        """How well the running vLLM is known (``_vllm_internals.support_level``)."""
        self.trace_headers_need_tracer = False
        """True when the running vLLM passes trace headers on only with its own tracer on (every
        release so far), and that tracer is off: a request without them is worth one warning."""
        self._warned_no_trace_headers = False
        self._sink_lock = threading.Lock()
        self.account_wait_s = ACCOUNT_WAIT_S
        """How long a cancelled request waits for the engine core's account of it."""
        self._cut_lock = threading.Lock()
        self._waiting: dict[str, _Cut] = {}
        """Cancelled requests waiting for the engine core's account, by engine request id."""
        self._receiver: FactsReceiver | None = None
        self._no_channel = False

    def describe_engine(self, vllm_version: str, support: str) -> None:
        """Record the running vLLM's version and its support level (resource attributes)."""
        self.support = support
        self.resource_attributes[names.RESOURCE_VLLM_VERSION] = vllm_version
        self.resource_attributes[names.RESOURCE_HOOK_SUPPORT] = support

    def _warn_no_trace_headers(self) -> None:
        self._warned_no_trace_headers = True
        _log.warning(
            "otelbench hooks: a request finished without the client's trace context: vLLM %s "
            "passes the traceparent header to the engine only when its own tracer is on; start "
            "it with --otlp-traces-endpoint (any OTLP endpoint, e.g. the hooks' collector) so "
            "that server spans join the client's trace (logged once)",
            self.resource_attributes.get(names.RESOURCE_VLLM_VERSION, "?"),
        )

    # ------------------------------------------------------------------ hot path
    @staticmethod
    def _state(req_stats: Any, output: _Output | None) -> RequestTrace:
        state: RequestTrace | None = req_stats.__dict__.get(STATE_ATTR)
        if state is None:
            state = RequestTrace(
                output.request_id if output is not None else None,
                output.trace_headers if output is not None else None,
            )
            setattr(req_stats, STATE_ATTR, state)
        return state

    def on_output(self, output: _Output, timestamp: float, req_stats: Any) -> None:
        """One engine-core output of one request (once per step): its tokens' timestamp."""
        state: RequestTrace | None = req_stats.__dict__.get(STATE_ATTR)
        if state is None or state.engine_request_id is None:
            state = self._state(req_stats, output)
            state.engine_request_id = output.request_id
            state.trace_headers = output.trace_headers
        new = output.new_token_ids
        n = len(new)
        if n == 1:
            state.token_ts.append(timestamp)
        elif n > 1:
            state.token_ts.extend([timestamp] * n)
        end = self.think_end_token_id
        if end is not None and state.output_phase_token is None and end in new:
            state.output_phase_token = len(state.token_ts) - n + list(new).index(end) + 1

    def on_events(self, events: Iterable[_Event], req_stats: Any) -> None:
        """A request's QUEUED / SCHEDULED / PREEMPTED events (vLLM delivers them in order)."""
        state = self._state(req_stats, None)
        for event in events:
            state.on_event(event.type, event.timestamp)

    # ------------------------------------------------------------------ finish
    def tracer_provider(self) -> trace.TracerProvider:
        """The ``inprocess`` sink's provider: the one given, else made on first use."""
        if self._provider is None:
            from otelbench_vllm.export import make_tracer_provider

            self._provider = make_tracer_provider(self.stats, self.resource_attributes)
        return self._provider

    def tracer(self) -> trace.Tracer:
        """The ``inprocess`` sink's tracer, on :meth:`tracer_provider`."""
        if self._tracer is None:
            self._tracer = self.tracer_provider().get_tracer(names.INSTRUMENTATION_SCOPE_HOOKS)
        return self._tracer

    def _get_metrics(self) -> HookMetrics:
        if self._metrics is None:
            if self._meter_provider is None:
                from otelbench_vllm.export import make_meter_provider

                self._meter_provider = make_meter_provider(attributes=self.resource_attributes)
            self._metrics = HookMetrics(self._meter_provider, self.stats)
        return self._metrics

    def _record(
        self,
        iteration_timestamp: float,
        finish_reason: object,
        request_id: str | None,
        num_prompt_tokens: int,
        req_stats: Any,
        num_cached_tokens: int,
        state: RequestTrace,
        **ended: Any,
    ) -> FinishedRequest:
        """The request's record; ``ended``: :class:`FinishedRequest`'s fields of a request that did
        not finish (``end_reason``, ``end_phase`` ...), and ``queued_ts`` / ``scheduled_ts`` where
        they come from the engine core's account instead of ``req_stats``."""
        headers = state.trace_headers
        queued_ts = ended.pop("queued_ts", req_stats.queued_ts)
        scheduled_ts = ended.pop("scheduled_ts", req_stats.scheduled_ts)
        return FinishedRequest(
            iteration_timestamp,
            str(finish_reason),
            request_id,
            num_prompt_tokens,
            num_cached_tokens,
            req_stats.arrival_time,
            queued_ts,
            scheduled_ts,
            req_stats.first_token_ts,
            req_stats.last_token_ts,
            req_stats.first_token_latency,
            state.engine_request_id,
            dict(headers) if headers else None,
            array.array("d", state.token_ts).tobytes(),
            state.preemptions,
            state.resumptions,
            state.output_phase_token,
            self.current_offset_ns(),
            **ended,
        )

    def current_offset_ns(self) -> int:
        """The offset that puts the engine core's monotonic times on the wall clock now: the
        fixed one if given, else read afresh. Read once per record, not once per process: the
        wall clock is slewed and stepped (NTP, a VM paused or migrated) while the monotonic
        clock is not, so an offset read at start-up drifts over a server's life (a vLLM tier run
        once saw a queue span start 14 ms before its request's arrival with an offset read
        minutes before)."""
        return self.offset_ns if self.offset_ns is not None else mono_to_unix_offset_ns()

    def on_finished(
        self,
        iteration_timestamp: float,
        finish_reason: object,
        request_id: str | None,
        num_prompt_tokens: int,
        req_stats: Any,
        num_cached_tokens: int = 0,
    ) -> None:
        """The request finished in the engine (``iteration_timestamp``: vLLM's wall-clock time of
        the step's stats): hand its record to the export sink, which emits its server span, child
        spans and events, and record its metrics. vLLM's finish reasons ``abort`` (the engine
        core aborted it itself) and ``error`` end it as ``aborted`` / ``error``, with
        ``error.type``."""
        state: RequestTrace | None = req_stats.__dict__.pop(STATE_ATTR, None)
        if state is None:
            state = RequestTrace()
        if (
            state.trace_headers is None
            and self.trace_headers_need_tracer
            and not self._warned_no_trace_headers
        ):
            self._warn_no_trace_headers()
        reason = str(finish_reason)
        ended: dict[str, Any] = {}
        end_reason = _FINISH_END_REASONS.get(reason)
        if end_reason is not None:
            ended = {
                "end_reason": end_reason,
                "end_phase": _frontend_phase(state),
                "error_type": reason,
                "end_ts": state.token_ts[-1] if state.token_ts else 0.0,
            }
        record = self._record(
            iteration_timestamp,
            reason,
            request_id,
            num_prompt_tokens,
            req_stats,
            num_cached_tokens,
            state,
            **ended,
        )
        self._submit(record, state.token_ts)

    def _submit(self, record: FinishedRequest, token_ts: Sequence[float]) -> None:
        """Hand ``record`` to the export sink (made on first use) and record its metrics."""
        sink = self.sink
        if sink is None:
            with self._sink_lock:
                if self.sink is None:
                    self.sink = EXPORT_SINKS[self.export](self)
                sink = self.sink
        self.stats.add("spans_ended", span_count(record))
        sink.submit(record)
        self.stats.add("requests_traced")
        if record.end_reason == names.END_REASON_CANCELLED:
            self.stats.add("requests_cancelled")
        elif record.end_reason == names.END_REASON_ERROR:
            self.stats.add("requests_failed")
        queue_s, prefill_s, decode_s = phase_durations(record)
        self._get_metrics().record_finished(
            ttft=record.first_token_latency if record.first_token_ts else None,
            e2e=record.iteration_timestamp - record.arrival_time,
            queue=queue_s,
            prefill=prefill_s,
            decode=decode_s,
            token_ts=token_ts,
            preemptions=len(record.preemptions),
            end_reason=record.end_reason,
            end_phase=record.end_phase,
        )

    # ------------------------------------------------------------------ requests cut short
    def on_aborted(self, request_states: Iterable[Any]) -> None:
        """vLLM's frontend aborted these requests (``OutputProcessor.abort_requests``: the client
        disconnected, or the request's task failed); each is a frontend ``RequestState``
        (``request_id``, ``external_req_id``, ``prompt_len``, ``num_cached_tokens``, ``stats``).

        Each waits, at most :attr:`account_wait_s`, for the engine core's account of it
        (:meth:`on_engine_facts`, through :mod:`otelbench_vllm.aborts`), which says where it was
        and carries the events and trace headers the frontend never received; then its span is
        ended with end reason ``cancelled``. Without the channel, at once."""
        wall, mono = time.time(), time.monotonic()
        cut = [c for rs in request_states if (c := _claim(rs, wall, mono)) is not None]
        if not cut:
            return
        if self._abort_channel() is None:
            for c in cut:
                self._end_cut(c, None)
            return
        deadline = mono + self.account_wait_s
        with self._cut_lock:
            for c in cut:
                c.deadline = deadline
                self._waiting[c.state.engine_request_id or ""] = c

    def on_engine_facts(self, facts: Iterable[EngineFacts]) -> None:
        """The engine core's account of requests it aborted: end the spans of those waiting."""
        matched = []
        with self._cut_lock:
            for f in facts:
                c = self._waiting.pop(f.engine_request_id, None)
                if c is not None:
                    matched.append((c, f))
        for c, f in matched:
            self._end_cut(c, f)

    def expire(self, now: float | None = None) -> None:
        """End the spans of cut requests whose engine account did not come within
        :attr:`account_wait_s` (``now``: ``time.monotonic()``), with what the frontend saw."""
        now = time.monotonic() if now is None else now
        with self._cut_lock:
            late = [k for k, c in self._waiting.items() if c.deadline <= now]
            gone = [self._waiting.pop(k) for k in late]
        for c in gone:
            self.stats.add("abort_accounts_missing")
            self._end_cut(c, None)

    def on_engine_error(self, request_states: Iterable[Any], error: BaseException) -> None:
        """The engine failed (``OutputProcessor.propagate_error``: the engine core died, or the
        output handler failed): end every request still in the frontend, end reason ``error``,
        ``error.type`` the exception's class."""
        wall, mono = time.time(), time.monotonic()
        kind = type(error).__name__
        for rs in request_states:
            c = _claim(rs, wall, mono)
            if c is not None:
                self._end_cut(c, None, end_reason=names.END_REASON_ERROR, error_type=kind)

    def _end_cut(
        self,
        cut: _Cut,
        facts: EngineFacts | None,
        end_reason: str = names.END_REASON_CANCELLED,
        error_type: str | None = None,
    ) -> None:
        state, req_stats = cut.state, cut.stats
        queued_ts, scheduled_ts = req_stats.queued_ts, req_stats.scheduled_ts
        if facts is not None:
            for event_type, ts in facts.events:
                if event_type == EVENT_QUEUED and not queued_ts:
                    queued_ts = ts
                elif event_type == EVENT_SCHEDULED and not scheduled_ts:
                    scheduled_ts = ts
                state.on_event(event_type, ts)
            if state.trace_headers is None and facts.trace_headers:
                state.trace_headers = facts.trace_headers
            phase = facts.phase
            end_ts = facts.abort_ts
            prompt_done: int | None = min(facts.num_computed_tokens, facts.num_prompt_tokens)
            generated: int | None = facts.num_output_tokens
        else:
            phase = _frontend_phase(state)
            end_ts = cut.end_mono
            seen = len(state.token_ts)
            prompt_done = cut.prompt_tokens if seen else None
            generated = seen if seen else None
        record = self._record(
            cut.end_wall,
            _FINISH_ABORT,
            cut.request_id,
            cut.prompt_tokens,
            req_stats,
            cut.cached_tokens,
            state,
            queued_ts=queued_ts,
            scheduled_ts=scheduled_ts,
            end_reason=end_reason,
            end_phase=phase,
            error_type=error_type,
            end_ts=end_ts,
            prompt_tokens_computed=prompt_done,
            output_tokens_generated=generated,
        )
        self._submit(record, state.token_ts)

    def _abort_channel(self) -> FactsReceiver | None:
        """This API server's end of the abort channel, made on first use; None when there is
        none (no channel directory: the engine core's account cannot come)."""
        if self._receiver is None and not self._no_channel:
            directory = channel_dir()
            if directory is None:
                self._no_channel = True
                return None
            try:
                self._receiver = FactsReceiver(directory, self.on_engine_facts, self.expire)
            except OSError as exc:
                self._no_channel = True
                _log.warning(
                    "otelbench hooks: no abort channel (%s): cancelled requests' spans carry "
                    "what the frontend saw",
                    exc,
                )
        return self._receiver

    def close(self, timeout: float = 10.0) -> bool:
        """Export what is pending (the exporter process: send it, let it flush and exit; at most
        ``timeout`` s), cut requests still waiting for their engine account included. True when
        done; the exporter process also does this at interpreter exit."""
        if self._receiver is not None:
            self._receiver.close()
        self.expire(now=float("inf"))
        return self.sink.close(timeout) if self.sink is not None else True
