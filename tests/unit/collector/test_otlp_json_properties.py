"""Property tests: OTLP/JSON documents with wrongly typed fields anywhere (an id that is a number,
attributes that are a string, a kind that is a list, values nested too deeply) decode or raise
:class:`~otelbench.collector.otlp.MalformedPayload` (the receiver's 400, counted as
``malformed``) — never another exception. test_otlp_properties.py does the same for random and
mutated bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.collector.otlp import (
    Encoding,
    MalformedPayload,
    OTLPDecodeError,
    decode_metrics,
    decode_traces,
)

PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(["00", "0102030405060708", "ff" * 16, "1", "NaN", "Infinity", "-1"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


def _attribute() -> dict[str, Any]:
    return {"key": "k", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"intValue": 2}]}}}


def _span_document() -> dict[str, Any]:
    span = {
        "traceId": "0102030405060708090a0b0c0d0e0f10",
        "spanId": "0102030405060708",
        "parentSpanId": "",
        "name": "s",
        "kind": 2,
        "startTimeUnixNano": "10",
        "endTimeUnixNano": "20",
        "attributes": [_attribute(), {"key": "s", "value": {"stringValue": "x"}}],
        "events": [{"timeUnixNano": "15", "name": "e", "attributes": [_attribute()]}],
        "links": [{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708"}],
        "status": {"code": 2, "message": "m"},
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"intValue": 3}}]},
                "scopeSpans": [{"scope": {"name": "n", "version": "v"}, "spans": [span]}],
            }
        ]
    }


def _metric_document() -> dict[str, Any]:
    point = {"timeUnixNano": "20", "startTimeUnixNano": "10", "asDouble": 1.5, "attributes": []}
    return {
        "resourceMetrics": [
            {
                "scopeMetrics": [
                    {
                        "metrics": [
                            {"name": "g", "gauge": {"dataPoints": [point]}},
                            {"name": "h", "histogram": {"dataPoints": [{
                                **point, "count": "2", "sum": 3.0, "bucketCounts": ["1", "1"],
                                "explicitBounds": [1.0],
                                "exemplars": [{"traceId": "ff" * 16, "spanId": "ff" * 8}],
                            }]}},
                        ]
                    }
                ]
            }
        ]
    }  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


@st.composite
def mangled(draw: st.DrawFn, build: Any) -> bytes:
    """A valid document with one to three fields replaced by any JSON value."""
    doc = build()
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        doc = _replace(doc, path, draw(json_values))
    return json.dumps(doc).encode()


def _decode(decode: Any, body: bytes) -> Any:
    """The batch, or the decode error (any other exception propagates and fails the test)."""
    try:
        return decode(body, Encoding.JSON)
    except OTLPDecodeError as err:
        return err


@PROPS
@given(body=mangled(_span_document))
def test_wrongly_typed_trace_json_is_decoded_or_malformed(body: bytes) -> None:
    outcome = _decode(decode_traces, body)
    if isinstance(outcome, OTLPDecodeError):
        assert isinstance(outcome, MalformedPayload)
        assert (outcome.http_status, outcome.reason) == (400, "malformed")
        return
    for row in outcome.spans:  # what was accepted is a storable row
        assert len(row.trace_id) in (0, 32)
        assert len(row.span_id) in (0, 16)
        assert row.trace_id == row.trace_id.lower()
        assert all(isinstance(v, str) for v in row.span_attributes.values())


@PROPS
@given(body=mangled(_metric_document))
def test_wrongly_typed_metric_json_is_decoded_or_malformed(body: bytes) -> None:
    outcome = _decode(decode_metrics, body)
    if isinstance(outcome, OTLPDecodeError):
        assert isinstance(outcome, MalformedPayload)
        assert outcome.http_status == 400


def test_json_nested_deeper_than_the_parser_allows_is_malformed() -> None:
    deep = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for decode in (decode_traces, decode_metrics):
        with pytest.raises(MalformedPayload, match="nested too deeply"):
            decode(deep, Encoding.JSON)
