"""Running the configured filters: timeouts, fail-open/closed, the output window, spans, metrics.

:class:`Guardrails` is what the ASGI middleware (and so the gateway) holds: it runs the input
filters on a request's texts (:meth:`Guardrails.run_input`) and opens an :class:`OutputSession`
per response that the streamed text deltas go through.

**Timeouts and failures** (draft 5.10: a guardrail's cost is measured, its failure must not crash
the server). Every invocation runs under its filter's ``timeout_ms``: a coroutine ``check`` under
``asyncio.timeout``; a plain ``check`` in a worker thread under ``asyncio.wait_for`` (a hung
thread is left behind, the request goes on), unless the filter is ``inline``, when it runs in the
event loop and a result that came later than the timeout counts as a timeout. A timeout, an
exception, or a malformed verdict is decided by the filter's ``on_error``: ``open`` allows,
``closed`` blocks with the rule ``timeout`` / ``error``. The span records which
(``otelbench.guardrail.error``), and the request path never sees the exception.

**Output window.** With ``output_window = W`` (characters) each choice's text is held back by at
most W characters: on every SSE event the filters see the held-back text plus the new delta;
everything but the last W characters (after any redaction) is released with the event, the rest
waits for the next event, and the final event (a ``finish_reason``, ``[DONE]``, or the end of the
body) releases all. So a match of up to W + 1 characters that spans chunk boundaries is caught,
and nothing is held longer than W characters. ``W = 0`` filters every chunk on its own, holding
nothing back.

**Spans.** One ``otelbench.guardrail.filter`` span per filter and stage of a request (see
``semconv``): the input span times the one invocation; the output span runs from the first to
the last invocation and carries their count, the summed busy time and the per-event busy time.
Spans are created after the fact with explicit start and end times, so nothing is held open.

Example::

    g = Guardrails(load_config("guardrails.yaml"), tracer_provider=provider)
    outcome = await g.run_input(["user text"], model="tiny", parent=None)
    if outcome.blocked is None:
        session = g.output_session("tiny", parent=None)
        released = await session.feed(0, "delta text", final=False)
        session.finish()
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from otelbench import __version__, semconv
from otelbench.guardrails.base import Action, Stage, Verdict
from otelbench.guardrails.config import FilterSpec, GuardrailConfig

__all__ = ["BLOCKED", "Blocked", "Guardrails", "InputOutcome", "OutputSession"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Blocked:
    """Which filter refused, and by which rule."""

    stage: Stage
    filter: str
    rule: str


@dataclass
class InputOutcome:
    texts: list[str]
    redacted: bool = False
    blocked: Blocked | None = None


@dataclass
class _Invocation:
    verdict: Verdict
    error: str | None
    start_unix_ns: int
    duration_ns: int


class _Blocked:
    """The sentinel :meth:`OutputSession.feed` returns when the output was refused."""

    def __repr__(self) -> str:
        return "BLOCKED"


BLOCKED = _Blocked()


class Guardrails:
    """The configured filters with their telemetry; shared by every request of a server."""

    def __init__(
        self,
        config: GuardrailConfig,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        max_threads: int = 4,
    ) -> None:
        self.config = config
        if tracer_provider is None:
            tracer_provider = trace.NoOpTracerProvider()
        self._tracer = trace.get_tracer(
            semconv.INSTRUMENTATION_SCOPE_GUARDRAILS, __version__, tracer_provider=tracer_provider
        )
        if meter_provider is None:
            meter_provider = metrics.NoOpMeterProvider()
        meter = metrics.get_meter(
            semconv.INSTRUMENTATION_SCOPE_GUARDRAILS, __version__, meter_provider=meter_provider
        )
        self._duration = meter.create_histogram(
            semconv.METRIC_GUARDRAIL_FILTER_DURATION, unit="s", description="guardrail filter time"
        )
        self._refusals = meter.create_counter(
            semconv.METRIC_GUARDRAIL_REFUSALS,
            unit="{request}",
            description="requests refused by a guardrail",
        )
        self._added = meter.create_histogram(
            semconv.METRIC_GUARDRAIL_OUTPUT_ADDED,
            unit="s",
            description="time the output filters held one SSE body message",
        )
        self._max_threads = max_threads
        self._executor: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ which filters
    def input_filters(self, model: str | None) -> list[FilterSpec]:
        return [s for s in self.config.input if s.applies_to(model)]

    def output_filters(self, model: str | None) -> list[FilterSpec]:
        return [s for s in self.config.output if s.applies_to(model)]

    @property
    def model_scoped(self) -> bool:
        """True when some filter applies to some models only (the request body must be read)."""
        return any(s.models is not None for s in self.config.filters)

    # ------------------------------------------------------------------ one invocation
    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self._max_threads, thread_name_prefix="otelbench-guardrail"
            )
        return self._executor

    async def invoke(self, spec: FilterSpec, texts: Sequence[str], stage: Stage) -> _Invocation:
        """Run one filter once under its timeout; never raises (except cancellation)."""
        start_unix = time.time_ns()
        t0 = time.perf_counter_ns()
        error: str | None = None
        result: Any = None
        check = spec.filter.check
        try:
            if inspect.iscoroutinefunction(check):
                async with asyncio.timeout(spec.timeout_s):
                    result = await check(texts, stage)
            elif spec.filter.inline:
                result = check(texts, stage)
                if inspect.isawaitable(result):
                    async with asyncio.timeout(spec.timeout_s):
                        result = await result
                elif time.perf_counter_ns() - t0 > spec.timeout_s * 1e9:
                    error = "timeout"
            else:
                loop = asyncio.get_running_loop()
                fut = loop.run_in_executor(self._threads(), check, texts, stage)
                result = await asyncio.wait_for(fut, spec.timeout_s)
                if inspect.isawaitable(result):
                    async with asyncio.timeout(spec.timeout_s):
                        result = await result
        except TimeoutError:
            error = "timeout"
        except Exception as exc:  # noqa: BLE001 - a filter's bug never reaches the request path
            error = type(exc).__name__
            _log.warning("guardrail filter %r raised %s: %s", spec.name, error, exc)
        duration = time.perf_counter_ns() - t0
        if error is None and not _valid(result, texts):
            error = "bad_verdict"
            _log.warning("guardrail filter %r returned %r, not a valid Verdict", spec.name, result)
        if error is not None:
            verdict = (
                Verdict.ALLOW
                if spec.on_error == "open"
                else Verdict.block("timeout" if error == "timeout" else "error")
            )
        else:
            verdict = result
        try:
            self._duration.record(
                duration / 1e9,
                {
                    semconv.GUARDRAIL_STAGE: stage.value,
                    semconv.GUARDRAIL_FILTER_NAME: spec.name,
                    semconv.GUARDRAIL_DECISION: verdict.action.value,
                },
            )
        except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
            _log.debug("guardrail metric failed", exc_info=True)
        return _Invocation(verdict, error, start_unix, duration)

    def refused(self, blocked: Blocked) -> None:
        try:
            self._refusals.add(
                1,
                {
                    semconv.GUARDRAIL_STAGE: blocked.stage.value,
                    semconv.GUARDRAIL_FILTER_NAME: blocked.filter,
                },
            )
        except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
            _log.debug("guardrail metric failed", exc_info=True)

    def record_added(self, seconds: float) -> None:
        try:
            self._added.record(seconds)
        except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
            _log.debug("guardrail metric failed", exc_info=True)

    def emit_span(
        self,
        spec: FilterSpec,
        parent: Context | None,
        start_unix_ns: int,
        end_unix_ns: int,
        attributes: dict[str, AttributeValue],
        error: str | None,
    ) -> None:
        """One finished filter span (created after the fact); never raises."""
        try:
            span = self._tracer.start_span(
                semconv.SPAN_GUARDRAIL_FILTER, context=parent, start_time=start_unix_ns
            )
            if span.is_recording():
                attributes[semconv.GUARDRAIL_FILTER_NAME] = spec.name
                attributes[semconv.GUARDRAIL_FILTER_TYPE] = spec.type
                attributes[semconv.GUARDRAIL_STAGE] = spec.stage.value
                attributes[semconv.GUARDRAIL_ON_ERROR] = spec.on_error
                if error is not None:
                    attributes[semconv.GUARDRAIL_ERROR] = error
                    span.set_status(trace.Status(trace.StatusCode.ERROR, error))
                span.set_attributes(attributes)
            span.end(end_time=end_unix_ns)
        except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
            _log.debug("guardrail span failed", exc_info=True)

    # ------------------------------------------------------------------ input stage
    async def run_input(
        self, texts: list[str], model: str | None, parent: Context | None
    ) -> InputOutcome:
        """Run the input filters in order; each sees the texts after the previous redactions."""
        outcome = InputOutcome(texts)
        for spec in self.input_filters(model):
            inv = await self.invoke(spec, outcome.texts, Stage.INPUT)
            v = inv.verdict
            attrs: dict[str, AttributeValue] = {
                semconv.GUARDRAIL_DECISION: v.action.value,
                semconv.GUARDRAIL_INVOCATIONS: 1,
                semconv.GUARDRAIL_BUSY_US: inv.duration_ns // 1000,
            }
            if v.rule is not None:
                attrs[semconv.GUARDRAIL_RULE] = v.rule
            if v.action is Action.REDACT:
                attrs[semconv.GUARDRAIL_REDACTIONS] = v.redactions
            self.emit_span(
                spec, parent, inv.start_unix_ns, inv.start_unix_ns + inv.duration_ns, attrs,
                inv.error,
            )  # fmt: skip
            if v.action is Action.BLOCK:
                outcome.blocked = Blocked(Stage.INPUT, spec.name, v.rule or "block")
                self.refused(outcome.blocked)
                return outcome
            if v.action is Action.REDACT and v.texts is not None:
                outcome.texts = list(v.texts)
                outcome.redacted = True
        return outcome

    # ------------------------------------------------------------------ output stage
    def output_session(self, model: str | None, parent: Context | None) -> OutputSession | None:
        """A session for one response, or None when no output filter applies to ``model``."""
        specs = self.output_filters(model)
        if not specs:
            return None
        return OutputSession(self, specs, self.config.output_window, parent)

    async def aclose(self) -> None:
        for spec in self.config.filters:
            try:
                await spec.filter.aclose()
            except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
                _log.debug("closing guardrail filter %r failed", spec.name, exc_info=True)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _valid(result: Any, texts: Sequence[str]) -> bool:
    if not isinstance(result, Verdict):
        return False
    if result.action is Action.REDACT:
        return result.texts is not None and len(result.texts) == len(texts)
    return True


@dataclass
class _FilterStats:
    spec: FilterSpec
    invocations: int = 0
    busy_ns: int = 0
    chunk_busy_us: list[int] = field(default_factory=list)
    start_unix_ns: int = 0
    end_unix_ns: int = 0
    decision: Action = Action.ALLOW
    rule: str | None = None
    error: str | None = None


class OutputSession:
    """The output filters of one response: feed it each choice's text deltas, in order."""

    def __init__(
        self,
        guardrails: Guardrails,
        specs: Sequence[FilterSpec],
        window: int,
        parent: Context | None,
    ) -> None:
        self._g = guardrails
        self._stats = [_FilterStats(s) for s in specs]
        self.window = window
        self.parent = parent
        self._pending: dict[int, str] = {}
        self.blocked: Blocked | None = None
        self._finished = False

    def pending(self) -> dict[int, str]:
        """Held-back text per choice index (non-empty only)."""
        return {i: t for i, t in self._pending.items() if t}

    async def feed(self, index: int, delta: str, final: bool) -> str | _Blocked:
        """Filter choice ``index``'s held-back text plus ``delta``; return what to release now
        (``BLOCKED`` when a filter refused). ``final`` releases everything."""
        if self.blocked is not None:
            return BLOCKED
        text = self._pending.get(index, "") + delta
        if not text:
            return ""
        busy = [0] * len(self._stats)
        try:
            return await self._feed(index, text, final, busy)
        finally:
            for st, ns in zip(self._stats, busy, strict=True):
                if ns:
                    st.chunk_busy_us.append(ns // 1000)

    async def _feed(self, index: int, text: str, final: bool, busy: list[int]) -> str | _Blocked:
        out = await self._pipeline(text, busy)
        w = self.window
        if isinstance(out, _Blocked):
            self._pending.pop(index, None)
            return out
        if final or w == 0:
            self._pending[index] = ""
            return out
        if len(text) <= w:
            self._pending[index] = text  # the original: it is scanned again with what follows
            return ""
        cut = len(text) - w
        if out == text:
            self._pending[index] = text[cut:]
            return text[:cut]
        # A redaction: release the head's own redaction if no match straddles the cut, i.e. if
        # the whole text filters to (head filtered) + (tail filtered). If one does, move the cut
        # back (at most one more window) to where none straddles it; failing that, release only
        # the text before the first change.
        first = next((i for i, (a, b) in enumerate(zip(text, out, strict=False)) if a != b), 0)
        for at in (cut, *range(cut - 1, max(first, cut - w) - 1, -1)):
            head = await self._pipeline(text[:at], busy)
            tail = await self._pipeline(text[at:], busy)
            if isinstance(head, _Blocked) or isinstance(tail, _Blocked):
                self._pending.pop(index, None)
                return BLOCKED
            if head + tail == out:
                self._pending[index] = text[at:]
                return head
        self._pending[index] = text[first:]
        return text[:first]

    async def _pipeline(self, text: str, busy: list[int]) -> str | _Blocked:
        """Every output filter in order on ``text``; the redacted text, or BLOCKED."""
        for i, st in enumerate(self._stats):
            inv = await self._g.invoke(st.spec, (text,), Stage.OUTPUT)
            if st.invocations == 0:
                st.start_unix_ns = inv.start_unix_ns
            st.invocations += 1
            st.busy_ns += inv.duration_ns
            busy[i] += inv.duration_ns
            st.end_unix_ns = inv.start_unix_ns + inv.duration_ns
            if inv.error is not None and st.error is None:
                st.error = inv.error
            v = inv.verdict
            if v.stronger_than(st.decision):
                st.decision = v.action
                st.rule = v.rule
            elif st.rule is None and v.rule is not None:
                st.rule = v.rule
            if v.action is Action.BLOCK:
                self.blocked = Blocked(Stage.OUTPUT, st.spec.name, v.rule or "block")
                self._g.refused(self.blocked)
                return BLOCKED
            if v.action is Action.REDACT and v.texts:
                text = v.texts[0]
        return text

    def finish(self, added_us: list[int] | None = None) -> None:
        """Emit the output spans (once); call when the response ended, however it ended.
        ``added_us``: what the whole output stage added to each SSE body message (µs)."""
        if self._finished:
            return
        self._finished = True
        for st in self._stats:
            if st.invocations == 0:
                continue
            attrs: dict[str, AttributeValue] = {
                semconv.GUARDRAIL_DECISION: st.decision.value,
                semconv.GUARDRAIL_INVOCATIONS: st.invocations,
                semconv.GUARDRAIL_BUSY_US: st.busy_ns // 1000,
                semconv.GUARDRAIL_CHUNK_BUSY_US: st.chunk_busy_us,
                semconv.GUARDRAIL_WINDOW_CHARS: self.window,
            }
            if added_us:
                attrs[semconv.GUARDRAIL_OUTPUT_ADDED_US] = added_us
            if st.rule is not None:
                attrs[semconv.GUARDRAIL_RULE] = st.rule
            self._g.emit_span(
                st.spec, self.parent, st.start_unix_ns, st.end_unix_ns, attrs, st.error
            )
