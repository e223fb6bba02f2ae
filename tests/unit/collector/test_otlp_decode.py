"""OTLP decoding: protobuf and OTLP/JSON requests → store rows, as the exporter writes them."""

from __future__ import annotations

import base64
import gzip
import json
import math
import zlib
from typing import Any

import pytest
from google.protobuf import json_format
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2 as t

from otelbench import semconv
from otelbench.collector.otlp import (
    Encoding,
    MalformedPayload,
    PayloadTooLarge,
    Signal,
    UnsupportedMediaType,
    any_value_as_string,
    decode_metrics,
    decode_traces,
    decompress,
    encode_export_response,
    encode_status,
    encoding_for,
    format_double,
)
from otelbench.store import SpanRow

T0 = 1_700_000_000_123_456_789
TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("b7ad6b7169203331")
PARENT = bytes.fromhex("00f067aa0ba902b7")


def kv(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def ints(*values: int) -> AnyValue:
    return AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=v) for v in values]))


def request(*spans: t.Span, resource: list[KeyValue] | None = None) -> ExportTraceServiceRequest:
    res = resource if resource is not None else [kv("service.name", string_value="svc")]
    return ExportTraceServiceRequest(
        resource_spans=[
            t.ResourceSpans(
                resource=Resource(attributes=res),
                scope_spans=[
                    t.ScopeSpans(
                        scope=InstrumentationScope(name="otelbench", version="0.1.0"),
                        spans=list(spans),
                    )
                ],
            )
        ]
    )


def full_span() -> t.Span:
    return t.Span(
        trace_id=TRACE,
        span_id=SPAN,
        parent_span_id=PARENT,
        trace_state="vendor=1",
        name="chat tiny",
        kind=t.Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 2_500_000,
        attributes=[
            kv("gen_ai.request.model", string_value="tiny"),
            kv("otelbench.request.index", int_value=-7),
            kv("gen_ai.request.temperature", double_value=0.7),
            kv("gen_ai.request.stream", bool_value=True),
            KeyValue(key="otelbench.client.chunk_offsets_us", value=ints(812, 10240, 20511)),
            kv("blob", bytes_value=b"\x00\xffab"),
        ],
        events=[
            t.Span.Event(time_unix_nano=T0 + 10, name="first_token"),
            t.Span.Event(
                time_unix_nano=T0 + 20, name="preempted", attributes=[kv("n", int_value=2)]
            ),
        ],
        links=[
            t.Span.Link(
                trace_id=bytes(range(16)),
                span_id=bytes(range(1, 9)),
                trace_state="a=b",
                attributes=[kv("why", string_value="retry")],
            )
        ],
        status=t.Status(code=t.Status.STATUS_CODE_ERROR, message="upstream 503"),
    )


EXPECTED_FULL = SpanRow(
    timestamp_ns=T0,
    trace_id="0af7651916cd43dd8448eb211c80319c",
    span_id="b7ad6b7169203331",
    parent_span_id="00f067aa0ba902b7",
    trace_state="vendor=1",
    span_name="chat tiny",
    span_kind="Client",  # pdata's SpanKind.String(), as the exporter writes it
    service_name="svc",
    resource_attributes={"service.name": "svc"},
    scope_name="otelbench",
    scope_version="0.1.0",
    span_attributes={
        "gen_ai.request.model": "tiny",
        "otelbench.request.index": "-7",
        "gen_ai.request.temperature": "0.7",
        "gen_ai.request.stream": "true",
        "otelbench.client.chunk_offsets_us": "[812,10240,20511]",
        "blob": "AP9hYg==",
    },
    duration_ns=2_500_000,
    status_code="Error",  # pdata's StatusCode.String()
    status_message="upstream 503",
    events_timestamp_ns=[T0 + 10, T0 + 20],
    events_name=["first_token", "preempted"],
    events_attributes=[{}, {"n": "2"}],
    links_trace_id=["000102030405060708090a0b0c0d0e0f"],
    links_span_id=["0102030405060708"],
    links_trace_state=["a=b"],
    links_attributes=[{"why": "retry"}],
)


def to_otlp_json(message: Any, *, snake_case: bool = False) -> dict[str, Any]:
    """OTLP/JSON of a request: proto3 JSON with hex ids and integer enums (the OTLP spec)."""
    doc = json_format.MessageToDict(
        message, preserving_proto_field_name=snake_case, use_integers_for_enums=True
    )

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in (
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "trace_id",
                    "span_id",
                    "parent_span_id",
                ):
                    node[key] = base64.b64decode(value).hex()
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc)
    return doc


# --------------------------------------------------------------------------------------------
# attribute values
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (100.0, "100"),
        (123456789.125, "123456789.125"),
        (1e20, "100000000000000000000"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (1e-7, "1e-7"),
        (1.2e-10, "1.2e-10"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "json: unsupported value: NaN"),
        (math.inf, "json: unsupported value: +Inf"),
        (-math.inf, "json: unsupported value: -Inf"),
    ],
)
def test_doubles_render_like_go(value: float, text: str) -> None:
    assert format_double(value) == text


def arr(*items: AnyValue) -> AnyValue:
    return AnyValue(array_value=ArrayValue(values=list(items)))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (AnyValue(string_value="héllo <&>"), "héllo <&>"),
        (AnyValue(int_value=-9223372036854775808), "-9223372036854775808"),
        (AnyValue(bool_value=False), "false"),
        (AnyValue(bytes_value=b"\x01\x02\x03\xfe"), "AQID/g=="),
        (AnyValue(), ""),
        (ints(1, 2, 3), "[1,2,3]"),
        (ints(0, -1, 2**63 - 1, -(2**63)), "[0,-1,9223372036854775807,-9223372036854775808]"),
        (arr(), "[]"),
        (arr(AnyValue(string_value="a"), AnyValue(string_value='b"\\')), '["a","b\\"\\\\"]'),
        (
            arr(
                AnyValue(int_value=1),
                AnyValue(string_value="x"),
                AnyValue(bool_value=True),
                AnyValue(),
                AnyValue(double_value=2.0),
                AnyValue(bytes_value=b"\xff"),
            ),
            '[1,"x",true,null,2,"/w=="]',
        ),
        (arr(AnyValue(double_value=0.5), AnyValue(double_value=1e-7)), "[0.5,1e-7]"),
        (arr(AnyValue(double_value=math.nan)), ""),
        (arr(ints(1, 2), arr()), "[[1,2],[]]"),
        (arr(AnyValue(string_value="<\u2028\x01\t>")), '["<\\u2028\\u0001\\t>"]'),
        (
            AnyValue(
                kvlist_value=KeyValueList(
                    values=[kv("b", string_value="x"), kv("a", int_value=1), kv("b", int_value=2)]
                )
            ),
            '{"a":1,"b":2}',
        ),
    ],
)
def test_attribute_values_render_like_pdata_as_string(value: AnyValue, text: str) -> None:
    assert any_value_as_string(value) == text


def test_int_array_with_unknown_fields_in_an_element() -> None:
    # an element carrying an unknown field (number 100) besides its int: value unchanged
    element = AnyValue(int_value=5).SerializeToString() + b"\xa0\x06\x01"
    array_bytes = b"".join(
        b"\x0a" + bytes([len(e)]) + e for e in (AnyValue(int_value=4).SerializeToString(), element)
    )
    value = AnyValue(array_value=ArrayValue.FromString(array_bytes))
    assert any_value_as_string(value) == "[4,5]"


def test_int_array_json_is_castable_by_duckdb() -> None:
    import duckdb

    text = any_value_as_string(ints(*range(-5, 200, 7)))
    [(got,)] = duckdb.execute("SELECT ?::BIGINT[]", [text]).fetchall()
    assert got == list(range(-5, 200, 7))


# --------------------------------------------------------------------------------------------
# traces
# --------------------------------------------------------------------------------------------
def test_protobuf_span_becomes_the_exporters_row() -> None:
    body = request(full_span()).SerializeToString()
    batch = decode_traces(body, Encoding.PROTOBUF)
    assert batch.spans == [EXPECTED_FULL]
    assert (batch.rejected, batch.error_message) == (0, "")


def test_otlp_json_span_becomes_the_same_row() -> None:
    doc = to_otlp_json(request(full_span()))
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == "0af7651916cd43dd8448eb211c80319c"  # hex, per the OTLP spec
    assert span["kind"] == 3
    span["attributes"][1]["value"]["intValue"] = -7  # a number is as good as the string "-7"
    span["unknownField"] = {"ignored": True}
    batch = decode_traces(json.dumps(doc).encode(), Encoding.JSON)
    assert batch.spans == [EXPECTED_FULL]


def test_otlp_json_with_snake_case_names_and_enum_names() -> None:
    doc = to_otlp_json(request(full_span()), snake_case=True)
    span = doc["resource_spans"][0]["scope_spans"][0]["spans"][0]
    span["kind"] = "SPAN_KIND_CLIENT"
    span["trace_id"] = span["trace_id"].upper()  # hex is case-insensitive
    batch = decode_traces(json.dumps(doc).encode(), Encoding.JSON)
    assert batch.spans == [EXPECTED_FULL]


def test_empty_and_zero_ids_are_empty_strings() -> None:
    span = t.Span(trace_id=bytes(16), span_id=SPAN, parent_span_id=bytes(8), name="root")
    [row] = decode_traces(request(span).SerializeToString(), Encoding.PROTOBUF).spans
    assert (row.trace_id, row.span_id, row.parent_span_id) == ("", SPAN.hex(), "")
    [row] = decode_traces(request(t.Span(name="x")).SerializeToString(), Encoding.PROTOBUF).spans
    assert (row.trace_id, row.span_id, row.parent_span_id) == ("", "", "")


@pytest.mark.parametrize(
    ("kind", "name", "constant"),
    [
        (0, "Unspecified", semconv.SPAN_KIND_UNSPECIFIED),
        (1, "Internal", semconv.SPAN_KIND_INTERNAL),
        (2, "Server", semconv.SPAN_KIND_SERVER),
        (3, "Client", semconv.SPAN_KIND_CLIENT),
        (4, "Producer", semconv.SPAN_KIND_PRODUCER),
        (5, "Consumer", semconv.SPAN_KIND_CONSUMER),
        (17, "", ""),
    ],
)
def test_span_kinds_are_pdata_names(kind: int, name: str, constant: str) -> None:
    """pdata's ``SpanKind.String()``, which the exporter writes (collectors/README.md)."""
    span = t.Span(kind=kind)  # type: ignore[arg-type]
    [row] = decode_traces(request(span).SerializeToString(), Encoding.PROTOBUF).spans
    assert row.span_kind == name == constant


@pytest.mark.parametrize(
    ("code", "name", "constant"),
    [
        (0, "Unset", semconv.STATUS_UNSET),
        (1, "Ok", semconv.STATUS_OK),
        (2, "Error", semconv.STATUS_ERROR),
        (9, "", ""),
    ],
)
def test_status_codes_are_pdata_names(code: int, name: str, constant: str) -> None:
    """pdata's ``StatusCode.String()``, which the exporter writes."""
    span = t.Span(status=t.Status(code=code))  # type: ignore[arg-type]
    [row] = decode_traces(request(span).SerializeToString(), Encoding.PROTOBUF).spans
    assert row.status_code == name == constant


def test_a_service_name_of_another_type_is_rendered_as_a_string() -> None:
    """The exporter's ``GetServiceName``: ``AsString`` of any value (before August 2024 it kept
    only a string value for traces)."""
    res = [kv("service.name", int_value=5), kv("host", string_value="h")]
    [row] = decode_traces(
        request(t.Span(), resource=res).SerializeToString(), Encoding.PROTOBUF
    ).spans
    assert row.service_name == "5"
    assert row.resource_attributes == {"service.name": "5", "host": "h"}


def test_duplicate_attribute_keys_keep_the_last() -> None:
    span = t.Span(attributes=[kv("a", int_value=1), kv("a", string_value="two")])
    [row] = decode_traces(request(span).SerializeToString(), Encoding.PROTOBUF).spans
    assert row.span_attributes == {"a": "two"}


@pytest.mark.parametrize(
    ("span", "reason"),
    [
        (t.Span(start_time_unix_nano=T0, end_time_unix_nano=T0 - 1), "ends before it starts"),
        (
            t.Span(start_time_unix_nano=2**63 + 5, end_time_unix_nano=2**63 + 6),
            "after the year 2262",
        ),
        (
            t.Span(events=[t.Span.Event(time_unix_nano=2**64 - 1)]),
            "has an event after the year 2262",
        ),
    ],
)
def test_spans_the_store_cannot_hold_are_rejected_alone(span: t.Span, reason: str) -> None:
    good = t.Span(name="good", start_time_unix_nano=T0, end_time_unix_nano=T0 + 1)
    batch = decode_traces(request(good, span, good).SerializeToString(), Encoding.PROTOBUF)
    assert [r.span_name for r in batch.spans] == ["good", "good"]
    assert batch.rejected == 1
    assert batch.error_message.startswith("1 spans rejected; first: span ")
    assert reason in batch.error_message


@pytest.mark.parametrize(
    "span",
    [
        t.Span(trace_id=b"\x01" * 15),
        t.Span(span_id=b"\x01" * 9),
        t.Span(parent_span_id=b"\x01"),
        t.Span(links=[t.Span.Link(trace_id=b"\x01" * 17)]),
    ],
)
def test_ids_of_the_wrong_length_reject_the_request(span: t.Span) -> None:
    with pytest.raises(MalformedPayload, match="id has"):
        decode_traces(request(span).SerializeToString(), Encoding.PROTOBUF)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x0a\x05\x01", "not a valid protobuf ExportTraceServiceRequest"),
        (b"\xff\xff\xff\xff", "not a valid protobuf"),
    ],
)
def test_malformed_protobuf(body: bytes, message: str) -> None:
    with pytest.raises(MalformedPayload, match=message) as info:
        decode_traces(body, Encoding.PROTOBUF)
    assert info.value.http_status == 400


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"resourceSpans": 5}', "not a valid OTLP/JSON"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz0"}]}]}]}', "not a hex"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "abc"}]}]}]}', "not a hex"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5}]}]}]}', "OTLP/JSON"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": [1]}]}]}]}', "kind field"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "x"}]}]}]}', "OTLP"),
        (b"[" * 100_000, "not valid"),
        (b'{"x": ' + b"1" * 5000 + b"}", "not valid JSON: Exceeds the limit"),
        (rb'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "\ud800"}]}]}]}', "surrogate"),
    ],
)
def test_malformed_json(body: bytes, message: str) -> None:
    with pytest.raises(MalformedPayload, match=message):
        decode_traces(body, Encoding.JSON)


def test_empty_requests_are_valid() -> None:
    assert decode_traces(b"", Encoding.PROTOBUF).spans == []
    assert decode_traces(b"{}", Encoding.JSON).spans == []
    assert decode_metrics(b"", Encoding.PROTOBUF).accepted == 0


# --------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------
def metrics_request() -> ExportMetricsServiceRequest:
    exemplar = m.Exemplar(
        time_unix_nano=T0 + 5, as_int=3, span_id=SPAN, trace_id=TRACE,
        filtered_attributes=[kv("x", string_value="y")],
    )  # fmt: skip
    metrics = [
        m.Metric(
            name="vllm:num_requests_running",
            description="running",
            unit="1",
            gauge=m.Gauge(
                data_points=[
                    m.NumberDataPoint(
                        time_unix_nano=T0, as_int=4, attributes=[kv("m", string_value="t")]
                    )
                ]
            ),
        ),
        m.Metric(
            name="requests",
            unit="{request}",
            sum=m.Sum(
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                is_monotonic=True,
                data_points=[
                    m.NumberDataPoint(
                        start_time_unix_nano=T0 - 100,
                        time_unix_nano=T0,
                        as_double=2.5,
                        exemplars=[exemplar],
                        flags=1,
                    )
                ],
            ),
        ),
        m.Metric(
            name="ttft",
            unit="s",
            histogram=m.Histogram(
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
                data_points=[
                    m.HistogramDataPoint(
                        start_time_unix_nano=T0 - 100,
                        time_unix_nano=T0,
                        count=3,
                        sum=0.6,
                        bucket_counts=[1, 2, 0],
                        explicit_bounds=[0.1, 0.5],
                        min=0.05,
                    ),
                    m.HistogramDataPoint(time_unix_nano=T0, count=0),
                ],
            ),
        ),
        m.Metric(
            name="exp",
            exponential_histogram=m.ExponentialHistogram(
                data_points=[m.ExponentialHistogramDataPoint(), m.ExponentialHistogramDataPoint()]
            ),
        ),
        m.Metric(name="summary", summary=m.Summary(data_points=[m.SummaryDataPoint()])),
        m.Metric(name="empty"),
    ]
    return ExportMetricsServiceRequest(
        resource_metrics=[
            m.ResourceMetrics(
                resource=Resource(attributes=[kv("service.name", string_value="vllm")]),
                schema_url="https://opentelemetry.io/schemas/1.26.0",
                scope_metrics=[
                    m.ScopeMetrics(
                        scope=InstrumentationScope(
                            name="vllm", version="0.32", attributes=[kv("s", bool_value=True)]
                        ),
                        metrics=metrics,
                    )
                ],
            )
        ]
    )


def check_metrics_batch(body: bytes, encoding: Encoding) -> None:
    batch = decode_metrics(body, encoding)
    common = (
        {"service.name": "vllm"},
        "https://opentelemetry.io/schemas/1.26.0",
        "vllm",
        "0.32",
        {"s": "true"},
        0,
        "",
        "vllm",
    )
    [gauge] = batch.gauge
    assert tuple(gauge) == (
        *common, "vllm:num_requests_running", "running", "1", {"m": "t"}, 0, T0, 4.0, 0,
        [], [], [], [], [],
    )  # fmt: skip
    [total] = batch.sum
    assert tuple(total) == (
        *common, "requests", "", "{request}", {}, T0 - 100, T0, 2.5, 1,
        [{"x": "y"}], [T0 + 5], [3.0], [SPAN.hex()], [TRACE.hex()], 2, True,
    )  # fmt: skip
    first, second = batch.histogram
    assert tuple(first) == (
        *common, "ttft", "", "s", {}, T0 - 100, T0, 3, 0.6, [1, 2, 0], [0.1, 0.5],
        [], [], [], [], [], 0, 0.05, None, 1,
    )  # fmt: skip
    assert (second.point_count, second.sum, second.min, second.max) == (0, None, None, None)
    assert batch.accepted == 4
    assert batch.rejected == 3  # 2 exponential histogram points + 1 summary point
    assert "exponential histogram" in batch.error_message


def test_metrics_protobuf() -> None:
    check_metrics_batch(metrics_request().SerializeToString(), Encoding.PROTOBUF)


def test_metrics_otlp_json() -> None:
    doc = to_otlp_json(metrics_request())
    exemplar = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][1]["sum"]["dataPoints"][0][
        "exemplars"
    ][0]
    assert exemplar["spanId"] == SPAN.hex()
    check_metrics_batch(json.dumps(doc).encode(), Encoding.JSON)


# --------------------------------------------------------------------------------------------
# content types, compression, responses
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("header", "encoding"),
    [
        ("application/x-protobuf", Encoding.PROTOBUF),
        ("Application/JSON; charset=utf-8", Encoding.JSON),
        ("application/json", Encoding.JSON),
    ],
)
def test_content_types(header: str, encoding: Encoding) -> None:
    assert encoding_for(header) is encoding


@pytest.mark.parametrize("header", [None, "", "text/plain", "application/protobuf", "json"])
def test_unsupported_content_types(header: str | None) -> None:
    with pytest.raises(UnsupportedMediaType) as info:
        encoding_for(header)
    assert info.value.http_status == 415


PAYLOAD = request(full_span()).SerializeToString()


@pytest.mark.parametrize(
    ("encoded", "header"),
    [
        (PAYLOAD, None),
        (PAYLOAD, "identity"),
        (gzip.compress(PAYLOAD), "gzip"),
        (gzip.compress(PAYLOAD[:100]) + gzip.compress(PAYLOAD[100:]), "GZIP"),
        (zlib.compress(PAYLOAD), "deflate"),
        (zlib.compress(PAYLOAD)[2:-4], "deflate"),  # raw deflate
    ],
)
def test_decompress(encoded: bytes, header: str | None) -> None:
    assert decompress(encoded, header, limit=len(PAYLOAD)) == PAYLOAD


def test_decompress_limits() -> None:
    with pytest.raises(PayloadTooLarge):
        decompress(PAYLOAD, None, limit=len(PAYLOAD) - 1)
    with pytest.raises(PayloadTooLarge):
        decompress(gzip.compress(PAYLOAD), "gzip", limit=len(PAYLOAD) - 1)
    bomb = gzip.compress(bytes(64 << 20), compresslevel=9)  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < 1 << 20
    with pytest.raises(PayloadTooLarge, match="inflates to more than the 1048576-byte limit"):
        decompress(bomb, "gzip", limit=1 << 20)


@pytest.mark.parametrize(
    ("encoded", "header", "message"),
    [
        (gzip.compress(PAYLOAD, mtime=0)[:-10], "gzip", "truncated gzip"),
        (gzip.compress(PAYLOAD, mtime=0)[:5], "gzip", "gzip"),
        (b"", "gzip", "truncated gzip"),
        (b"not gzip at all", "gzip", "corrupt gzip"),
        (gzip.compress(PAYLOAD, mtime=0) + b"trailing", "gzip", "garbage after the gzip stream"),
        (zlib.compress(PAYLOAD)[:-3], "deflate", "deflate"),
    ],
)
def test_decompress_rejects_corrupt_streams(encoded: bytes, header: str, message: str) -> None:
    with pytest.raises(MalformedPayload, match=message):
        decompress(encoded, header, limit=1 << 20)


def test_decompress_rejects_other_encodings() -> None:
    with pytest.raises(UnsupportedMediaType, match="Content-Encoding 'br'"):
        decompress(PAYLOAD, "br", limit=1 << 20)


def test_export_responses() -> None:
    ok = encode_export_response(Signal.TRACES, Encoding.PROTOBUF)
    assert ExportTraceServiceResponse.FromString(ok) == ExportTraceServiceResponse()
    assert encode_export_response(Signal.METRICS, Encoding.JSON) == b"{}"
    partial = encode_export_response(Signal.TRACES, Encoding.JSON, 2, "2 spans rejected")
    assert json.loads(partial) == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": "2 spans rejected"}
    }
    partial = encode_export_response(Signal.METRICS, Encoding.PROTOBUF, 3, "no summaries")
    parsed = ExportMetricsServiceResponse.FromString(partial).partial_success
    assert (parsed.rejected_data_points, parsed.error_message) == (3, "no summaries")


def test_status_bodies() -> None:
    status = status_pb2.Status.FromString(encode_status(3, "bad", Encoding.PROTOBUF))
    assert (status.code, status.message) == (3, "bad")
    assert json.loads(encode_status(8, "big", Encoding.JSON)) == {"code": 8, "message": "big"}


def test_json_int_array_service_name_is_its_json_text() -> None:
    doc = to_otlp_json(
        request(t.Span(name="s"), resource=[KeyValue(key="service.name", value=ints(1))])
    )
    [row] = decode_traces(json.dumps(doc).encode(), Encoding.JSON).spans
    assert row.service_name == "[1]"
    assert row.resource_attributes == {"service.name": "[1]"}
