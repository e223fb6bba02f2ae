"""The exporter process's spans, built straight from the records: no tracer in between.

:func:`otelbench_vllm.spans.emit_spans` goes through the SDK's tracer: per span a sampler
decision, an id generator, locks, bounded attribute copies and the processor's ``on_start`` and
``on_end``, about 70 µs a span here. The exporter process (:mod:`otelbench_vllm.exporter`) has
nothing to trace but finished requests, so :class:`DirectSpans` turns each record's
:class:`~otelbench_vllm.spans.SpanPlan` into the very ``ReadableSpan`` objects the tracer would
end — same names, kinds, times, attributes, events, status, resource and scope, the request span
a child of the client's span, the phase spans its children — and hands them to the span
processor's ``on_end``, as the tracer does. Sampling is the SDK's default,
``parentbased_always_on``: a client span whose ``traceparent`` says it is not sampled gets no
server span; a configured ``OTEL_TRACES_SAMPLER`` other than that default sends every record
through the tracer instead (:func:`direct_allowed`).

Ids are random like the SDK's ``RandomIdGenerator`` (``random.getrandbits``): a trace id of
128 bits where no client trace came, a span id of 64 bits per span.

Depends on the OpenTelemetry SDK (which the exporter process has); never imported by the API
server.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otelbench_vllm import names
from otelbench_vllm.spans import FinishedRequest, parent_context, plan_spans

__all__ = ["DirectSpans", "direct_allowed"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)
_DEFAULT_SAMPLERS = frozenset({"", "parentbased_always_on"})


def direct_allowed() -> bool:
    """True when the SDK would sample as :class:`DirectSpans` does: ``OTEL_TRACES_SAMPLER``
    unset or ``parentbased_always_on`` (the SDK's default)."""
    return os.environ.get("OTEL_TRACES_SAMPLER", "").strip().lower() in _DEFAULT_SAMPLERS


class DirectSpans:
    """Ends each record's spans on ``processor`` (module docstring)."""

    def __init__(self, processor: SpanProcessor, resource: Resource) -> None:
        self._processor = processor
        self._resource = resource
        self._scope = InstrumentationScope(names.INSTRUMENTATION_SCOPE_HOOKS)

    def spans(self, rec: FinishedRequest) -> list[ReadableSpan]:
        """The request span and its phase spans of ``rec``, in the order a tracer ends them
        (phases first); empty when the client's trace is not sampled."""
        plan = plan_spans(rec)
        parent: SpanContext | None = None
        context = parent_context(rec)
        if context is not None:
            found = trace.get_current_span(context).get_span_context()
            if found.is_valid:
                if not found.trace_flags.sampled:
                    return []
                parent = found
        trace_id = parent.trace_id if parent is not None else random.getrandbits(128)
        state = parent.trace_state if parent is not None else None
        request = SpanContext(trace_id, random.getrandbits(64), False, _SAMPLED, state)
        out = [
            ReadableSpan(
                name,
                SpanContext(trace_id, random.getrandbits(64), False, _SAMPLED, state),
                parent=request,
                resource=self._resource,
                kind=SpanKind.INTERNAL,
                start_time=start,
                end_time=end,
                instrumentation_scope=self._scope,
            )
            for name, start, end in plan.phases
        ]
        status = _UNSET if plan.error_type is None else Status(StatusCode.ERROR, plan.error_type)
        out.append(
            ReadableSpan(
                names.SPAN_HOOK_REQUEST,
                request,
                parent=parent,
                resource=self._resource,
                attributes=plan.attributes,
                events=[Event(n, a, timestamp=t) for n, a, t in plan.events],
                kind=SpanKind.SERVER,
                status=status,
                start_time=plan.start_ns,
                end_time=plan.end_ns,
                instrumentation_scope=self._scope,
            )
        )
        return out

    def end(self, records: Iterable[FinishedRequest]) -> int:
        """End every record's spans on the processor; the number of spans ended."""
        ended = 0
        on_end = self._processor.on_end
        for rec in records:
            for span in self.spans(rec):
                on_end(span)
                ended += 1
        return ended
