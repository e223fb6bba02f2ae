"""The span exporter's direct protobuf encoder (``otelbench.spool.encode_batch``) gives the very
bytes of the SDK's ``encode_spans(spans).SerializePartialToString()``: for the load generator's
client spans (their per-chunk arrays of offsets and token counts) and for any batch of SDK spans
with attributes of every type, events, links, statuses, remote parents, several resources and
instrumentation scopes (property test). What the direct encoder does not take (an integer beyond
int64, a string that is not UTF-8, a mapping value) goes through the SDK's encoder, with the
SDK's outcome. Equal bytes decode to equal messages: the collector stores the same spans.

Spans come from the real SDK (a tracer provider with an in-memory exporter)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from otelbench import semconv
from otelbench.spool import _request, _varint, encode_batch

PROPS = settings(max_examples=200, deadline=None)


def _sdk_bytes(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializePartialToString()


class _CountingIds(IdGenerator):
    """Deterministic ids (the SDK's random ones would draw from ``random`` inside a strategy)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def generate_span_id(self) -> int:
        return next(self._next)

    def generate_trace_id(self) -> int:
        return (next(self._next) << 64) | 0xABC


def _provider(resource: dict[str, Any]) -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(resource), id_generator=_CountingIds(), shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def _client_span(provider: TracerProvider, n: int, offset0: int) -> None:
    """A span as the instrumented client ends one streamed request (``transport._end_span``)."""
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, "1.2.3")
    span = tracer.start_span(
        "text_completion m",
        kind=SpanKind.CLIENT,
        attributes={semconv.GEN_AI_OPERATION_NAME: "text_completion", semconv.SERVER_PORT: 80},
        start_time=1_700_000_000_000_000_000,
    )
    offsets = [offset0 + 12_000 * i + (i * 37) % 500 for i in range(n)]
    span.set_attributes(
        {
            semconv.RUN_ID: "run-1",
            semconv.REQUEST_INDEX: 7,
            semconv.CLIENT_SUBMIT_MONO_NS: 123_456_789_012_345,
            semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: offsets[0] / 1e6,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: ["length"],
            semconv.GEN_AI_REQUEST_STREAM: True,
            semconv.CLIENT_CHUNK_OFFSETS_US: offsets,
            semconv.CLIENT_CHUNK_TOKENS: [1 + (i % 3 == 0) for i in range(n)],
            semconv.CLIENT_CHUNKS_TOTAL: n + 2,
        }
    )
    span.end(end_time=1_700_000_000_000_000_000 + 1000 * (offsets[-1] + 5))


@pytest.mark.parametrize(
    ("n", "offset0"),
    [(1, 0), (64, 60_000), (200, 1_500_000), (3, 2**21 - 1), (5, 2**28 + 3), (2, 2**40)],
)
def test_client_spans_encode_to_the_sdk_bytes(n: int, offset0: int) -> None:
    provider, memory = _provider({"service.name": "otelbench-client", semconv.RUN_ID: "run-1"})
    for _ in range(3):
        _client_span(provider, n, offset0)
    spans = memory.get_finished_spans()
    assert encode_batch(spans) == _sdk_bytes(spans)


@pytest.mark.parametrize(
    "v",
    [0, 1, 127, 128, 300, 2**14 - 1, 2**14, 2**21 - 1, 2**21, 2**28, 2**63 - 1, -1, -(2**63)],
)
def test_varint(v: int) -> None:
    u = v % 2**64
    expected = bytearray()
    while True:
        expected.append((u & 0x7F) | (0x80 if u > 0x7F else 0))
        u >>= 7
        if not u:
            break
    assert _varint(v) == bytes(expected)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-3, 2**22),
    st.floats(),
    st.text(max_size=6),
    st.binary(max_size=4),
)
_values = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=6),
    st.lists(st.integers(0, 2**30), max_size=40),
    st.lists(st.lists(st.integers(-5, 300), max_size=3), max_size=3),
)
_names = st.text(max_size=8)
_odd_values = st.one_of(
    st.integers(2**63, 2**70),  # beyond int64
    st.integers(-(2**70), -(2**63) - 1),
    st.just("\ud800"),  # a lone surrogate: not UTF-8
    st.lists(st.just("\udfff"), min_size=1, max_size=2),
    st.dictionaries(st.text(min_size=1, max_size=3), _scalars, max_size=2),
)
_ids = st.integers(1, 2**64 - 1)


@st.composite
def _spans(
    draw: st.DrawFn,
    values: st.SearchStrategy[Any] = _values,
    names: st.SearchStrategy[str] = _names,
) -> list[ReadableSpan]:
    """Spans from up to two providers (resources) and tracers (scopes), in any mix, with
    attribute values drawn from ``values`` and span names from ``names``."""
    _attributes = st.dictionaries(st.text(min_size=1, max_size=5), values, max_size=6)
    providers = [
        _provider({"service.name": name, **draw(_attributes)})
        for name in draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2))
    ]
    for _ in range(draw(st.integers(1, 5))):
        provider, _memory = draw(st.sampled_from(providers))
        tracer = provider.get_tracer(
            draw(st.sampled_from(["s1", "s2"])),
            draw(st.sampled_from([None, "0.1"])),
            schema_url=draw(st.sampled_from([None, "https://opentelemetry.io/schemas/1.0"])),
            attributes=draw(st.none() | _attributes),
        )
        parent = None
        if draw(st.booleans()):
            remote = SpanContext(
                draw(_ids),
                draw(_ids),
                is_remote=draw(st.booleans()),
                trace_flags=TraceFlags(1),
                trace_state=TraceState([("k", "v")]) if draw(st.booleans()) else None,
            )
            parent = set_span_in_context(NonRecordingSpan(remote))
        links = [
            Link(SpanContext(draw(_ids), draw(_ids), is_remote=True), draw(_attributes))
            for _ in range(draw(st.integers(0, 2)))
        ]
        span = tracer.start_span(
            draw(names),
            context=parent,
            kind=draw(st.sampled_from(list(SpanKind))),
            attributes=draw(_attributes),
            links=links,
            start_time=draw(st.integers(0, 2**63)),
        )
        for _ in range(draw(st.integers(0, 2))):
            span.add_event(
                draw(st.text(max_size=5)), draw(_attributes), timestamp=draw(st.integers(0, 2**62))
            )
        status = draw(st.sampled_from(list(StatusCode)))
        description = draw(st.none() | st.text(max_size=5))
        span.set_status(Status(status, description if status is StatusCode.ERROR else None))
        span.end(end_time=draw(st.integers(0, 2**63)))
    return [s for _, memory in providers for s in memory.get_finished_spans()]


@PROPS
@given(_spans())
def test_any_batch_encodes_directly_to_the_sdk_bytes(spans: list[ReadableSpan]) -> None:
    """Values of the types the SDK takes, spans of every shape: no fallback needed."""
    assert _request(spans) == _sdk_bytes(spans)


@PROPS
@given(_spans(st.one_of(_values, _odd_values), _names | st.just("\udc00")))
def test_what_the_direct_encoder_declines_has_the_sdk_outcome(spans: list[ReadableSpan]) -> None:
    """With values the direct encoder declines, the batch's bytes, or the error, are the SDK's
    (it drops an attribute it cannot encode, and fails a batch whose span name is not UTF-8)."""
    try:
        expected = _sdk_bytes(spans)
    except Exception as exc:  # noqa: BLE001 - then encode_batch fails the same way
        with pytest.raises(type(exc)):
            encode_batch(spans)
        return
    assert encode_batch(spans) == expected
