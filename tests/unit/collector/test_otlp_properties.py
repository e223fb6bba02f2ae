"""Property tests: no input crashes the decoder; the int-array fast path equals the general one."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1 import trace_pb2 as t

from otelbench.collector.otlp import (
    Encoding,
    OTLPDecodeError,
    any_value_as_string,
    decode_metrics,
    decode_traces,
    decompress,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

decoders = st.sampled_from([decode_traces, decode_metrics])
encodings = st.sampled_from(list(Encoding))


@FAST
@given(body=st.binary(max_size=512), decode=decoders, encoding=encodings)
def test_random_bytes_never_crash_the_decoder(body: bytes, decode: Any, encoding: Encoding) -> None:
    with contextlib.suppress(OTLPDecodeError):
        decode(body, encoding)


def _mutations(payload: bytes) -> st.SearchStrategy[bytes]:
    """A valid request with bytes flipped, cut or inserted: deep inside the protobuf structure."""
    positions = st.integers(min_value=0, max_value=len(payload))
    flip = st.tuples(positions, st.integers(0, 255)).map(
        lambda pv: payload[: pv[0]] + bytes([pv[1]]) + payload[pv[0] + 1 :]
    )
    cut = positions.map(lambda p: payload[:p])
    insert = st.tuples(positions, st.binary(min_size=1, max_size=8)).map(
        lambda pb: payload[: pb[0]] + pb[1] + payload[pb[0] :]
    )
    return st.one_of(flip, cut, insert)


def _valid_request() -> bytes:
    span = t.Span(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        name="s",
        start_time_unix_nano=10,
        end_time_unix_nano=20,
        attributes=[
            KeyValue(
                key="a",
                value=AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=300)] * 3)),
            ),
            KeyValue(
                key="k",
                value=AnyValue(
                    kvlist_value=KeyValueList(
                        values=[KeyValue(key="x", value=AnyValue(double_value=1.5))]
                    )
                ),
            ),
        ],
        events=[t.Span.Event(time_unix_nano=15, name="e")],
        links=[t.Span.Link(trace_id=bytes(range(16)), span_id=bytes(range(8)))],
    )
    return ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(scope_spans=[t.ScopeSpans(spans=[span])])]
    ).SerializeToString()


VALID = _valid_request()


@FAST
@given(body=_mutations(VALID))
def test_mutated_protobuf_never_crashes(body: bytes) -> None:
    with contextlib.suppress(OTLPDecodeError):
        decode_traces(body, Encoding.PROTOBUF)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "1", "-1", "1e3"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "name",
                    "kind",
                    "attributes",
                    "key",
                    "value",
                    "intValue",
                    "stringValue",
                    "arrayValue",
                    "values",
                    "events",
                    "links",
                    "startTimeUnixNano",
                    "status",
                    "resourceMetrics",
                    "scopeMetrics",
                    "metrics",
                    "gauge",
                    "sum",
                    "dataPoints",
                    "exemplars",
                    "asInt",
                    "resource_spans",
                    "scope_spans",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@FAST
@given(doc=json_values, decode=decoders)
def test_random_json_documents_never_crash(doc: Any, decode: Any) -> None:
    try:
        body = json.dumps(doc).encode()
    except ValueError:
        return
    with contextlib.suppress(OTLPDecodeError):
        decode(body, Encoding.JSON)


@FAST
@given(
    body=st.binary(max_size=256),
    header=st.sampled_from(["gzip", "deflate", None, "x"]),
    gzipped=st.booleans(),
)
def test_decompress_only_raises_decode_errors(
    body: bytes, header: str | None, gzipped: bool
) -> None:
    data = gzip.compress(body)[: len(body)] if gzipped else body
    with contextlib.suppress(OTLPDecodeError):
        decompress(data, header, limit=1024)


scalar_values = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda i: AnyValue(int_value=i)),
    st.text(max_size=5).map(lambda s: AnyValue(string_value=s)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda d: AnyValue(double_value=d)),
    st.just(AnyValue()),
)


def _python(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@FAST
@given(
    int_values=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=40),
    intruder=st.none() | st.tuples(st.integers(min_value=0), scalar_values),
)
def test_int_array_fast_path_agrees_with_json(
    int_values: list[int], intruder: tuple[int, AnyValue] | None
) -> None:
    items = [AnyValue(int_value=v) for v in int_values]
    if intruder is not None:  # sometimes one element of another kind
        position, other = intruder
        items.insert(position % (len(items) + 1), other)
    value = AnyValue(array_value=ArrayValue(values=items))
    reparsed = AnyValue.FromString(value.SerializeToString())
    text = any_value_as_string(reparsed)
    expected = [_python(item) for item in items]
    parsed = json.loads(text)
    assert len(parsed) == len(expected)
    for got, want in zip(parsed, expected, strict=True):
        if isinstance(want, float):  # Go writes 4.35e16 as 43541797200675820: the same double
            assert float(got) == want
        else:
            assert got == want
            assert type(got) is type(want)
    if all(isinstance(x, int) and not isinstance(x, bool) for x in expected):
        assert text == "[" + ",".join(map(str, expected)) + "]"


@FAST
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_doubles_round_trip_through_their_text(value: float) -> None:
    text = any_value_as_string(AnyValue(double_value=value))
    assert float(text) == value
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, value)


array_elements = st.lists(
    st.one_of(
        st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda i: ("int", i)),
        st.sampled_from([("str", "x"), ("bool", True), ("double", 2.5), ("empty", None)]),
    ),
    max_size=12,
)


def _json_element(kind: str, value: Any, as_string: bool, snake: bool) -> dict[str, Any]:
    if kind == "int":
        return {"int_value" if snake else "intValue": str(value) if as_string else value}
    if kind == "empty":
        return {}
    key = {"str": "stringValue", "bool": "boolValue", "double": "doubleValue"}[kind]
    return {key: value}


def _proto_element(kind: str, value: Any) -> AnyValue:
    if kind == "empty":
        return AnyValue()
    field = {
        "int": "int_value",
        "str": "string_value",
        "bool": "bool_value",
        "double": "double_value",
    }
    return AnyValue(**{field[kind]: value})


@FAST
@given(elements=array_elements, as_string=st.booleans(), snake=st.booleans())
def test_json_arrays_give_the_same_rows_as_protobuf(
    elements: list[tuple[str, Any]], as_string: bool, snake: bool
) -> None:
    span = t.Span(
        name="s",
        attributes=[
            KeyValue(
                key="a",
                value=AnyValue(
                    array_value=ArrayValue(values=[_proto_element(k, v) for k, v in elements])
                ),
            )
        ],
    )
    request = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(scope_spans=[t.ScopeSpans(spans=[span])])]
    )
    array_key = "array_value" if snake else "arrayValue"
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "name": "s",
                                "attributes": [
                                    {
                                        "key": "a",
                                        "value": {
                                            array_key: {
                                                "values": [
                                                    _json_element(k, v, as_string, snake)
                                                    for k, v in elements
                                                ]
                                            }
                                        },
                                    }
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    from_json = decode_traces(json.dumps(doc).encode(), Encoding.JSON).spans
    from_protobuf = decode_traces(request.SerializeToString(), Encoding.PROTOBUF).spans
    assert from_json == from_protobuf
