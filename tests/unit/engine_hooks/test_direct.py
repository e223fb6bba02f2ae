"""The exporter process's spans straight from the records (``otelbench_vllm.direct``) are the
spans the SDK's tracer builds from them (``emit_spans``), but for the random ids.

Both paths end their spans on a real SDK span processor with an in-memory exporter; each span is
then read as what OTLP carries (name, kind, times, attributes, events, status, resource, scope)
with its ids replaced by their roles (the client's span, the request span, a random trace).
"""

from __future__ import annotations

import array
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otelbench_vllm import names
from otelbench_vllm.direct import DirectSpans, direct_allowed
from otelbench_vllm.spans import FinishedRequest, emit_spans

OFFSET_NS = 1_700_000_000_000_000_000
MONO0 = 1000.0
ARRIVAL = MONO0 + OFFSET_NS / 1e9
TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CLIENT_SPAN_ID = 0x00F067AA0BA902B7


def record(traceparent_flags: str | None = "01", **changes: Any) -> FinishedRequest:
    tokens = array.array("d", [MONO0 + 0.010 + 0.005 * i for i in range(8)]).tobytes()
    headers = (
        {"traceparent": f"00-{TRACE_ID:032x}-{CLIENT_SPAN_ID:016x}-{traceparent_flags}"}
        if traceparent_flags is not None
        else None
    )
    rec = FinishedRequest(
        ARRIVAL + 0.06, "length", "cmpl-3", 16, 4, ARRIVAL, MONO0 + 0.001, MONO0 + 0.002,
        MONO0 + 0.010, MONO0 + 0.045, 0.0102, "cmpl-3-ab", headers, tokens,
        [(MONO0 + 0.020, 3)], [MONO0 + 0.025], None, OFFSET_NS,
    )  # fmt: skip
    return rec._replace(**changes)


RECORDS = {
    "finished, preempted once": record(),
    "no client trace": record(traceparent_flags=None),
    "cancelled in the queue": record(
        end_reason=names.END_REASON_CANCELLED,
        end_phase=names.END_PHASE_QUEUE,
        scheduled_ts=0.0,
        first_token_ts=0.0,
        last_token_ts=0.0,
        token_ts=b"",
        preemptions=[],
        resumptions=[],
        end_ts=MONO0 + 0.3,
        prompt_tokens_computed=0,
        output_tokens_generated=0,
    ),
    "engine error": record(
        end_reason=names.END_REASON_ERROR,
        end_phase="decode",
        error_type="EngineDeadError",
        end_ts=MONO0 + 0.05,
    ),
}
RESOURCE = Resource.create({"service.name": "vllm", "process.pid": 42})


def values(attributes: Any) -> dict[str, Any]:
    """Attribute values as OTLP carries them: a sequence is an array (the tracer keeps a tuple,
    a ``ReadableSpan`` made directly the list it was given; both encode alike)."""
    items = (attributes or {}).items()
    return {k: tuple(v) if isinstance(v, list | tuple) else v for k, v in items}


def as_otlp(spans: tuple[ReadableSpan, ...]) -> list[dict[str, Any]]:
    """Each span as OTLP carries it, ids by role, sorted by name."""
    request = next(s for s in spans if s.name == names.SPAN_HOOK_REQUEST)
    assert request.context is not None
    roles = {CLIENT_SPAN_ID: "client", request.context.span_id: "request"}
    out = []
    for span in spans:
        assert span.context is not None
        assert span.context.trace_id == request.context.trace_id
        out.append(
            {
                "name": span.name,
                "kind": span.kind,
                "trace": "client's" if span.context.trace_id == TRACE_ID else "new",
                "sampled": span.context.trace_flags.sampled,
                "parent": roles.get(span.parent.span_id) if span.parent else None,
                "parent_remote": span.parent.is_remote if span.parent else None,
                "start": span.start_time,
                "end": span.end_time,
                "attributes": values(span.attributes),
                "events": [(e.name, e.timestamp, values(e.attributes)) for e in span.events],
                "status": (span.status.status_code, span.status.description),
                "resource": dict(span.resource.attributes),
                "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
            }
        )
    return sorted(out, key=lambda s: str(s["name"]))


def through_tracer(rec: FinishedRequest) -> tuple[ReadableSpan, ...]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit_spans(provider.get_tracer(names.INSTRUMENTATION_SCOPE_HOOKS), rec)
    provider.shutdown()
    return exporter.get_finished_spans()


def direct(rec: FinishedRequest) -> tuple[ReadableSpan, ...]:
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    for span in DirectSpans(processor, RESOURCE).spans(rec):
        processor.on_end(span)
    return exporter.get_finished_spans()


@pytest.mark.parametrize("rec", RECORDS.values(), ids=RECORDS.keys())
def test_direct_spans_are_the_tracers_spans(rec: FinishedRequest) -> None:
    expected = as_otlp(through_tracer(rec))
    assert as_otlp(direct(rec)) == expected
    assert len(expected) >= 2  # the request span and at least one phase


def test_the_request_span_is_the_clients_child_and_the_phases_its_children() -> None:
    spans = {s["name"]: s for s in as_otlp(direct(record()))}
    assert spans[names.SPAN_HOOK_REQUEST]["parent"] == "client"
    assert spans[names.SPAN_HOOK_REQUEST]["parent_remote"] is True
    assert spans[names.SPAN_HOOK_REQUEST]["trace"] == "client's"
    for phase in (names.SPAN_HOOK_QUEUE, names.SPAN_HOOK_PREFILL, names.SPAN_HOOK_DECODE):
        assert spans[phase]["parent"] == "request"


def test_a_client_trace_that_is_not_sampled_gets_no_span_either_way() -> None:
    rec = record(traceparent_flags="00")
    assert through_tracer(rec) == ()
    assert direct(rec) == ()


def test_only_the_sdks_default_sampler_takes_the_direct_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    assert direct_allowed()
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
    assert direct_allowed()
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    assert not direct_allowed()
