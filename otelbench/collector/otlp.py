"""Decode OTLP/HTTP export requests into span-store rows: pure functions, bytes in, rows out.

::

    encoding = encoding_for(headers.get("Content-Type"))       # Encoding.PROTOBUF or Encoding.JSON
    body = decompress(raw, headers.get("Content-Encoding"), limit=64 << 20)
    batch = decode_traces(body, encoding)                       # TraceBatch(spans=[SpanRow, ...])
    reply = encode_export_response(Signal.TRACES, encoding, batch.rejected, batch.error_message)

Errors (every one is an :class:`OTLPDecodeError`, a :class:`~otelbench.errors.CollectorError`, and
carries the HTTP status the OTLP/HTTP spec asks for)::

    OTLPDecodeError           .http_status, .reason (a short counter key)
    ├── MalformedPayload      400: not protobuf / not OTLP JSON / bad ids / corrupt or cut gzip
    ├── PayloadTooLarge       413: the body, or what it inflates to, is over the limit
    └── UnsupportedMediaType  415: a Content-Type or Content-Encoding this receiver does not speak

**Encodings.** Protobuf (``application/x-protobuf``) and OTLP/JSON (``application/json``), each
optionally ``gzip`` or ``deflate`` compressed. OTLP/JSON differs from the plain protobuf JSON
mapping in that trace and span ids are hex strings, not base64; field names may be lowerCamelCase
or the proto's snake_case, enums may be integers (or names), 64-bit integers strings or numbers,
and unknown fields are ignored.

**Rows** are built the way the OpenTelemetry Collector contrib ClickHouse exporter builds them
(``exporter/clickhouseexporter/exporter_traces.go``; ``internal/coreinternal/traceutil``; pdata
``SpanKind.String``, ``StatusCode.String``, ``Value.AsString``; ``collectors/README.md`` names the
version read):

* ``Timestamp`` = span start (ns), ``Duration`` = end − start (ns);
* ids are lowercase hex, ``''`` for an empty (or all-zero) id;
* ``SpanKind``/``StatusCode`` are pdata's names (``Client``, ``Error``: :data:`semconv.SPAN_KINDS
  <otelbench.semconv.SPAN_KINDS>`, :data:`~otelbench.semconv.STATUS_CODES`), as the exporter has
  written them since August 2024 (before, it wrote the proto enum names ``SPAN_KIND_CLIENT``,
  ``STATUS_CODE_ERROR``, which the query layer still reads), ``''`` for a value outside the enum;
* ``ScopeName``/``ScopeVersion`` are the instrumentation scope's name and version;
* ``ServiceName`` is the resource's ``service.name`` rendered as a string, whatever its type, as
  the exporter's ``internal.GetServiceName`` does (``Value.AsString``; releases before the
  August 2024 change kept only a string value for traces);
* every attribute value is a string, rendered by :func:`any_value_as_string`.

**Rejected, not failed.** A span the store cannot hold — it ends before it starts, or a time is past
the year 2262 (``TIMESTAMP_NS`` is a signed 64-bit count of nanoseconds) — is left out and counted;
the rest of the request is stored and the response carries ``partial_success`` with the count and
the first reason. Exponential histograms and summaries are reported the same way: valid OTLP that
this store does not keep. A malformed request (bad protobuf or JSON, an id of the wrong length) is
rejected as a whole, as the Collector does.
"""

from __future__ import annotations

import base64
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from typing import Any, Final, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsPartialSuccess,
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import Exemplar

from otelbench import semconv
from otelbench.errors import CollectorError
from otelbench.model.jsonvalue import JsonObject, JsonValue
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = [
    "Encoding",
    "MalformedPayload",
    "MetricBatch",
    "OTLPDecodeError",
    "PayloadTooLarge",
    "Signal",
    "TraceBatch",
    "UnsupportedMediaType",
    "any_value_as_string",
    "decode_metrics",
    "decode_traces",
    "decompress",
    "encode_export_response",
    "encode_status",
    "encoding_for",
    "format_double",
]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------
class OTLPDecodeError(CollectorError):
    """A request body this receiver cannot accept. ``http_status`` is the answer to send."""

    http_status = 400
    reason = "malformed"
    """A short key for the receiver's rejection counters."""


class MalformedPayload(OTLPDecodeError):
    """Not a valid OTLP export request in the declared encoding (HTTP 400)."""


class PayloadTooLarge(OTLPDecodeError):
    """The body, or what it decompresses to, is over the size limit (HTTP 413)."""

    http_status = 413
    reason = "too_large"


class UnsupportedMediaType(OTLPDecodeError):
    """A Content-Type or Content-Encoding this receiver does not accept (HTTP 415)."""

    http_status = 415
    reason = "unsupported_media_type"


# --------------------------------------------------------------------------------------------
# Signals, encodings, compression
# --------------------------------------------------------------------------------------------
class Signal(Enum):
    """An OTLP signal this receiver accepts; the value is its OTLP/HTTP path."""

    TRACES = "/v1/traces"
    METRICS = "/v1/metrics"


class Encoding(Enum):
    """An OTLP/HTTP body encoding; the value is its media type."""

    PROTOBUF = "application/x-protobuf"
    JSON = "application/json"


_MEDIA_TYPES: Final = {e.value: e for e in Encoding}


def encoding_for(content_type: str | None) -> Encoding:
    """The encoding a ``Content-Type`` header names (parameters such as ``charset`` are ignored).

    Example::

        encoding_for("application/json; charset=utf-8")   # Encoding.JSON
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    try:
        return _MEDIA_TYPES[media]
    except KeyError:
        shown = repr(media) if media else "none"
        raise UnsupportedMediaType(
            f"unsupported Content-Type {shown}; send application/x-protobuf or application/json"
        ) from None


def decompress(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """Undo ``Content-Encoding`` (none, identity, gzip, deflate), producing at most ``limit`` bytes.

    Raises :class:`PayloadTooLarge` when the body or its decompressed form is over ``limit`` (a gzip
    bomb stops after ``limit`` + 1 bytes of output), :class:`MalformedPayload` for a corrupt or
    truncated stream, :class:`UnsupportedMediaType` for another encoding.
    """
    name = (content_encoding or "identity").strip().lower()
    if name in ("identity", ""):
        if len(body) > limit:
            raise PayloadTooLarge(
                f"request body of {len(body)} bytes is over the {limit}-byte limit"
            )
        return body
    if name in ("gzip", "x-gzip"):
        return _inflate(body, limit, gzip=True)
    if name == "deflate":
        return _inflate(body, limit, gzip=False)
    raise UnsupportedMediaType(
        f"unsupported Content-Encoding {name!r}; send gzip, deflate or no compression"
    )


_GZIP_MAGIC: Final = b"\x1f\x8b"


def _inflate(data: bytes, limit: int, *, gzip: bool) -> bytes:
    label = "gzip" if gzip else "deflate"
    out: list[bytes] = []
    total = 0
    while True:
        if gzip:
            wbits = 31
        else:  # RFC 9110 "deflate" is zlib-wrapped; accept raw deflate too, as browsers do
            zlib_header = (
                len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0
            )
            wbits = 15 if zlib_header else -15
        inflater = zlib.decompressobj(wbits=wbits)
        pending = data
        try:
            while True:
                piece = inflater.decompress(pending, limit + 1 - total)
                total += len(piece)
                if total > limit:
                    raise PayloadTooLarge(
                        f"{label} body inflates to more than the {limit}-byte limit"
                    )
                out.append(piece)
                pending = inflater.unconsumed_tail
                if inflater.eof or not pending:
                    break
        except zlib.error as err:
            raise MalformedPayload(f"corrupt {label} body: {err}") from None
        if not inflater.eof:
            raise MalformedPayload(f"truncated {label} body")
        rest = inflater.unused_data
        if not rest:
            return b"".join(out)
        if gzip and rest[:2] == _GZIP_MAGIC:
            data = rest  # a further gzip member (RFC 1952 allows several)
            continue
        raise MalformedPayload(f"{len(rest)} bytes of garbage after the {label} stream")


# --------------------------------------------------------------------------------------------
# Attribute values as strings (pdata Value.AsString, the exporter's rendering)
# --------------------------------------------------------------------------------------------
class _Unrepresentable(Exception):
    """NaN or ±Inf inside an array or kvlist: Go's json.Marshal fails and AsString gives ''."""


def format_double(value: float) -> str:
    """A double as pdata's ``AsString`` renders it: ES6 number-to-string, like Go's encoding/json.

    Shortest round-trip digits; plain notation for 1e-6 ≤ |x| < 1e21 (``100``, ``0.25``,
    ``-0``), exponent notation outside it (``1e+21``, ``1.5e-7``). NaN and ±Inf become
    ``"json: unsupported value: NaN"`` (``+Inf``, ``-Inf``), as the exporter writes them.

    Example::

        format_double(3.0), format_double(0.1), format_double(1e21)   # ('3', '0.1', '1e+21')
    """
    if not math.isfinite(value):
        go = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        return "json: unsupported value: " + go
    return _es6_number(value)


def _es6_number(value: float) -> str:
    sign, digits_t, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)  # finite
    digits = "".join(map(str, digits_t)).lstrip("0") or "0"
    if digits == "0":
        return "-0" if sign else "0"
    # repr digits are the shortest round-trip ones; drop trailing zeros into the exponent
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    minus = "-" if sign else ""
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        exp10 = exponent + len(digits) - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp_sign = "-" if exp10 < 0 else "+"
        # Go writes at least two exponent digits, then the encoder trims "e-0X" to "e-X"
        exp_text = f"{abs(exp10):02d}"
        if exp_sign == "-" and exp_text[0] == "0":
            exp_text = exp_text[1:]
        return f"{minus}{mantissa}e{exp_sign}{exp_text}"
    if exponent >= 0:
        return minus + digits + "0" * exponent
    point = len(digits) + exponent
    if point > 0:
        return minus + digits[:point] + "." + digits[point:]
    return minus + "0." + "0" * (-point) + digits


def _json_string(text: str) -> str:
    # Python's escaping equals Go's encoding/json with HTML escaping off (as pdata marshals),
    # except that Go also escapes U+2028 and U+2029 unconditionally.
    out = json.dumps(text, ensure_ascii=False)
    if "\u2028" in out or "\u2029" in out:
        out = out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return out


def _go_json(raw: object) -> str:
    """JSON of a pdata ``AsRaw()`` value as Go's encoding/json writes it (maps sorted by key)."""
    if raw is None:
        return "null"
    if raw is True:
        return "true"
    if raw is False:
        return "false"
    if isinstance(raw, str):
        return _json_string(raw)
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _Unrepresentable
        return _es6_number(raw)
    if isinstance(raw, bytes):
        return '"' + base64.b64encode(raw).decode("ascii") + '"'
    if isinstance(raw, list):
        return "[" + ",".join([_go_json(item) for item in raw]) + "]"
    if isinstance(raw, dict):
        return "{" + ",".join([_json_string(k) + ":" + _go_json(raw[k]) for k in sorted(raw)]) + "}"
    raise TypeError(f"not a pdata raw value: {type(raw).__name__}")


def _raw(value: AnyValue) -> object:
    """pdata ``Value.AsRaw()``: the Python value an AnyValue holds (None when it holds none)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [_raw(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _raw(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value
    return None


# Canonical protobuf of an ArrayValue whose every element is an int_value: repeated
# [0x0a len 0x18 varint]. The message was parsed (and is re-serialised canonically) by upb, so a
# full match proves every element is an int: any other oneof member has another tag after
# "0x0a len", and unknown fields inside an element cannot start with 0x0a (field 1 is known).
_INT_ARRAY_WIRE: Final = re.compile(rb"(?:\x0a[\x02-\x0b]\x18[\x80-\xff]{0,9}[\x00-\x7f])*")


def _array_as_string(array: ArrayValue) -> str:
    values = array.values
    if values and _INT_ARRAY_WIRE.fullmatch(array.SerializeToString()):
        return "[" + ",".join([str(item.int_value) for item in values]) + "]"
    try:
        return _go_json([_raw(item) for item in values])
    except _Unrepresentable:
        return ""


def any_value_as_string(value: AnyValue) -> str:
    """An attribute value as the ClickHouse exporter stores it (pdata ``Value.AsString``).

    string as is; int in decimal; double by :func:`format_double`; bool ``true``/``false``; bytes
    base64 (standard alphabet, padded); array and kvlist as compact JSON (``[812,10240]``,
    ``["a","b"]``, ``{"k":1}`` with keys sorted, bytes inside as base64 strings, an empty value
    as ``null``; ``''`` if the array holds a NaN or ±Inf, which Go's JSON encoder refuses); an
    empty value as ``''``. JSON strings are escaped as Go's encoding/json does with HTML
    escaping off (pdata's current behaviour; releases before 2024 also escaped ``<>&``).

    Example::

        any_value_as_string(AnyValue(double_value=2.5))   # '2.5'
    """
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return str(value.int_value)
    if kind == "array_value":
        return _array_as_string(value.array_value)
    if kind == "double_value":
        return format_double(value.double_value)
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "kvlist_value":
        try:
            return _go_json({kv.key: _raw(kv.value) for kv in value.kvlist_value.values})
        except _Unrepresentable:
            return ""
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return ""


def _attributes(kvs: Iterable[KeyValue]) -> dict[str, str]:
    # a later duplicate key wins, as in the exporter's Go map
    return {kv.key: any_value_as_string(kv.value) for kv in kvs}


def _service_name(kvs: Iterable[KeyValue]) -> str:
    """The resource's ``service.name`` as a string (``''`` without one), as the exporter's
    ``GetServiceName`` gives it: pdata ``Map.Get`` (the first entry with the key), then
    ``AsString``."""
    for kv in kvs:
        if kv.key == "service.name":
            if kv.value.WhichOneof("value") == "string_value":
                return kv.value.string_value
            return any_value_as_string(kv.value)
    return ""


# --------------------------------------------------------------------------------------------
# ids and times
# --------------------------------------------------------------------------------------------
_TRACE_ID_LEN: Final = 16
_SPAN_ID_LEN: Final = 8
_ZERO_TRACE_ID: Final = bytes(_TRACE_ID_LEN)
_ZERO_SPAN_ID: Final = bytes(_SPAN_ID_LEN)
_MAX_STORABLE_NS: Final = 2**63 - 2
"""TIMESTAMP_NS is a signed 64-bit count; DuckDB reserves the top value for 'infinity'."""


def _id_hex(raw: bytes, zero: bytes, what: str) -> str:
    """A ``what`` id (``trace`` or ``span``) as hex; ``''`` when absent or all zeros (invalid in
    OTLP), as the exporter's ``TraceID.String()`` gives. ``zero`` is the id's all-zero value."""
    if len(raw) != len(zero):
        if not raw:
            return ""
        raise MalformedPayload(
            f"a {what} id has {len(raw)} bytes; OTLP {what} ids have {len(zero)}"
        )
    return "" if raw == zero else raw.hex()


def _trace_id(raw: bytes) -> str:
    return _id_hex(raw, _ZERO_TRACE_ID, "trace")


def _span_id(raw: bytes) -> str:
    return _id_hex(raw, _ZERO_SPAN_ID, "span")


_SPAN_KINDS: Final = semconv.SPAN_KINDS
_STATUS_CODES: Final = semconv.STATUS_CODES


def _enum_name(names: tuple[str, ...], number: int) -> str:
    """``names[number]``, or ``''`` outside the enum (as pdata's ``String()`` gives)."""
    return names[number] if 0 <= number < len(names) else ""


# --------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TraceBatch:
    """The spans of one export request, ready for :meth:`SpanStore.insert_spans`.

    ``rejected`` spans were valid OTLP that the store cannot hold; ``error_message`` says why
    (the first reason), for the response's ``partial_success``.
    """

    spans: list[SpanRow]
    rejected: int = 0
    error_message: str = ""

    @property
    def accepted(self) -> int:
        """Number of spans to store."""
        return len(self.spans)


@dataclass(frozen=True, slots=True)
class MetricBatch:
    """The data points of one export request, ready for :meth:`SpanStore.insert_metrics`."""

    gauge: list[GaugeRow] = field(default_factory=list)
    sum: list[SumRow] = field(default_factory=list)
    histogram: list[HistogramRow] = field(default_factory=list)
    rejected: int = 0
    error_message: str = ""

    @property
    def accepted(self) -> int:
        """Number of data points to store."""
        return len(self.gauge) + len(self.sum) + len(self.histogram)


class _Rejections:
    """Counts rejected items and keeps the first reason."""

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.count = 0
        self.first = ""

    def add(self, reason: str, n: int = 1) -> None:
        if n <= 0:
            return
        self.count += n
        if not self.first:
            self.first = reason

    def message(self, unit: str) -> str:
        if not self.count:
            return ""
        return f"{self.count} {unit} rejected; first: {self.first}"


# --------------------------------------------------------------------------------------------
# Parsing (protobuf or OTLP/JSON) into the request message
# --------------------------------------------------------------------------------------------
_M = TypeVar("_M", bound=Message)

_HEX: Final = re.compile(r"[0-9a-fA-F]*")


def _parse(
    body: bytes, encoding: Encoding, message: _M, fix_ids: Callable[[JsonObject], None]
) -> _M:
    if encoding is Encoding.PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as err:
            raise MalformedPayload(f"not a valid protobuf {_name(message)}: {err}") from None
        return message
    try:
        document = json.loads(body.decode("utf-8-sig"))
    except ValueError as err:  # bad UTF-8, bad JSON, or an integer of more than 4300 digits
        raise MalformedPayload(f"not valid JSON: {_first_line(err)}") from None
    except RecursionError:
        raise MalformedPayload("not valid OTLP/JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise MalformedPayload(f"not an OTLP/JSON {_name(message)}: the body is not a JSON object")
    fix_ids(document)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, AttributeError, RecursionError) as err:
        raise MalformedPayload(
            f"not a valid OTLP/JSON {_name(message)}: {_first_line(err)}"
        ) from None
    return message


def _name(message: Message) -> str:
    return message.DESCRIPTOR.name


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _items(obj: JsonValue, *names: str) -> Iterator[JsonObject]:
    """The JSON objects in the list under any of ``names`` (camelCase or snake_case)."""
    if not isinstance(obj, dict):
        return
    for name in names:
        items = obj.get(name)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    yield item


def _hex_ids_to_base64(obj: JsonObject, *names: str) -> None:
    for name in names:
        value = obj.get(name)
        if isinstance(value, str):
            if len(value) % 2 or not _HEX.fullmatch(value):
                raise MalformedPayload(f"OTLP/JSON {name} {value[:40]!r} is not a hex string")
            obj[name] = base64.b64encode(bytes.fromhex(value)).decode("ascii")


_JSON_INT64: Final = re.compile(r"-?(?:0|[1-9][0-9]{0,18})")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _json_int(item: JsonValue) -> int | None:
    """The value of an OTLP/JSON ``{"intValue": …}`` array element, None if it is anything else."""
    if not isinstance(item, dict) or len(item) != 1:
        return None
    raw = item.get("intValue", item.get("int_value"))
    if isinstance(raw, str) and _JSON_INT64.fullmatch(raw):
        raw = int(raw)
    elif not isinstance(raw, int) or isinstance(raw, bool):
        return None
    return raw if _INT64_MIN <= raw <= _INT64_MAX else None


def _collapse_int_arrays(attributes: JsonValue) -> None:
    """Replace each all-int ``arrayValue`` by the string the store keeps for it.

    The store keeps only ``any_value_as_string`` of a value, so ``{"stringValue": "[1,2]"}``
    yields the very row ``{"arrayValue": {"values": [{"intValue": "1"}, …]}}`` does, while the
    protobuf JSON parser, which costs about 10 µs per array element, never sees the elements.
    ``service.name`` is left alone (a non-string service name means an empty ServiceName).
    """
    if not isinstance(attributes, list):
        return
    for kv in attributes:
        if not isinstance(kv, dict) or kv.get("key") == "service.name":
            continue
        value = kv.get("value")
        if not isinstance(value, dict) or len(value) != 1:
            continue
        array = value.get("arrayValue", value.get("array_value"))
        if not isinstance(array, dict) or set(array) - {"values"}:
            continue
        items = array.get("values", [])
        if not isinstance(items, list):
            continue
        numbers = [_json_int(item) for item in items]
        if None not in numbers:
            kv["value"] = {"stringValue": "[" + ",".join(map(str, numbers)) + "]"}


def _fix_trace_ids(document: JsonObject) -> None:
    for rs in _items(document, "resourceSpans", "resource_spans"):
        resource = rs.get("resource")
        if isinstance(resource, dict):
            _collapse_int_arrays(resource.get("attributes"))
        for ss in _items(rs, "scopeSpans", "scope_spans"):
            for span in _items(ss, "spans"):
                _hex_ids_to_base64(
                    span,
                    "traceId",
                    "trace_id",
                    "spanId",
                    "span_id",
                    "parentSpanId",
                    "parent_span_id",
                )
                _collapse_int_arrays(span.get("attributes"))
                for event in _items(span, "events"):
                    _collapse_int_arrays(event.get("attributes"))
                for link in _items(span, "links"):
                    _hex_ids_to_base64(link, "traceId", "trace_id", "spanId", "span_id")
                    _collapse_int_arrays(link.get("attributes"))


_METRIC_DATA_FIELDS: Final = (
    "gauge",
    "sum",
    "histogram",
    "exponentialHistogram",
    "exponential_histogram",
    "summary",
)


def _fix_metric_ids(document: JsonObject) -> None:
    for rm in _items(document, "resourceMetrics", "resource_metrics"):
        for sm in _items(rm, "scopeMetrics", "scope_metrics"):
            for metric in _items(sm, "metrics"):
                for data_field in _METRIC_DATA_FIELDS:
                    for point in _items(metric.get(data_field), "dataPoints", "data_points"):
                        for exemplar in _items(point, "exemplars"):
                            _hex_ids_to_base64(exemplar, "traceId", "trace_id", "spanId", "span_id")


# --------------------------------------------------------------------------------------------
# Traces
# --------------------------------------------------------------------------------------------
def decode_traces(body: bytes, encoding: Encoding) -> TraceBatch:
    """Decode an ``ExportTraceServiceRequest`` (already decompressed) into ``otel_traces`` rows.

    Raises :class:`MalformedPayload` for anything that is not a valid request.

    Example::

        batch = decode_traces(request.SerializeToString(), Encoding.PROTOBUF)
        store.insert_spans(batch.spans)
    """
    request = _parse(body, encoding, ExportTraceServiceRequest(), _fix_trace_ids)
    rows: list[SpanRow] = []
    rejections = _Rejections()
    append = rows.append
    for resource_spans in request.resource_spans:
        resource_kvs = resource_spans.resource.attributes
        resource_attributes = _attributes(resource_kvs)
        service_name = _service_name(resource_kvs)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_name = scope.name
            scope_version = scope.version
            for span in scope_spans.spans:
                start = span.start_time_unix_nano
                end = span.end_time_unix_nano
                trace_id = _trace_id(span.trace_id)
                span_id = _span_id(span.span_id)
                parent_span_id = _span_id(span.parent_span_id)
                events = span.events
                links = span.links
                link_trace_ids = [_trace_id(link.trace_id) for link in links]
                link_span_ids = [_span_id(link.span_id) for link in links]
                if start > _MAX_STORABLE_NS or end > _MAX_STORABLE_NS:
                    rejections.add(f"span {span_id or '?'} has a time after the year 2262")
                    continue
                if end < start:
                    rejections.add(f"span {span_id or '?'} ends before it starts")
                    continue
                event_times = [event.time_unix_nano for event in events]
                if event_times and max(event_times) > _MAX_STORABLE_NS:
                    rejections.add(f"span {span_id or '?'} has an event after the year 2262")
                    continue
                status = span.status
                append(
                    SpanRow(
                        start,
                        trace_id,
                        span_id,
                        parent_span_id,
                        span.trace_state,
                        span.name,
                        _enum_name(_SPAN_KINDS, span.kind),
                        service_name,
                        resource_attributes,
                        scope_name,
                        scope_version,
                        _attributes(span.attributes),
                        end - start,
                        _enum_name(_STATUS_CODES, status.code),
                        status.message,
                        event_times,
                        [event.name for event in events],
                        [_attributes(event.attributes) for event in events],
                        link_trace_ids,
                        link_span_ids,
                        [link.trace_state for link in links],
                        [_attributes(link.attributes) for link in links],
                    )
                )
    return TraceBatch(rows, rejections.count, rejections.message("spans"))


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------
def _number(point: Any) -> float:
    kind = point.WhichOneof("value")
    if kind == "as_double":
        return float(point.as_double)
    if kind == "as_int":
        return float(point.as_int)
    return 0.0


_ExemplarColumns = tuple[list[dict[str, str]], list[int], list[float], list[str], list[str]]
"""An exemplar list as the ``Exemplars.*`` columns: filtered attributes, time, value, span and
trace id."""


def _exemplars(exemplars: Iterable[Exemplar]) -> _ExemplarColumns:
    attrs: list[dict[str, str]] = []
    times: list[int] = []
    values: list[float] = []
    span_ids: list[str] = []
    trace_ids: list[str] = []
    for exemplar in exemplars:
        attrs.append(_attributes(exemplar.filtered_attributes))
        times.append(exemplar.time_unix_nano)
        values.append(_number(exemplar))
        span_ids.append(_span_id(exemplar.span_id))
        trace_ids.append(_trace_id(exemplar.trace_id))
    return attrs, times, values, span_ids, trace_ids


def decode_metrics(body: bytes, encoding: Encoding) -> MetricBatch:
    """Decode an ``ExportMetricsServiceRequest`` into gauge, sum and histogram rows.

    Exponential histograms and summaries are counted as rejected (``partial_success``).

    Example::

        batch = decode_metrics(body, Encoding.JSON)
        store.insert_metrics(batch.gauge, batch.sum, batch.histogram)
    """
    request = _parse(body, encoding, ExportMetricsServiceRequest(), _fix_metric_ids)
    gauges: list[GaugeRow] = []
    sums: list[SumRow] = []
    histograms: list[HistogramRow] = []
    rejections = _Rejections()
    for resource_metrics in request.resource_metrics:
        resource_kvs = resource_metrics.resource.attributes
        resource_attributes = _attributes(resource_kvs)
        resource_schema_url = resource_metrics.schema_url
        service_name = _service_name(resource_kvs)
        for scope_metrics in resource_metrics.scope_metrics:
            scope = scope_metrics.scope
            common = (
                resource_attributes,
                resource_schema_url,
                scope.name,
                scope.version,
                _attributes(scope.attributes),
                scope.dropped_attributes_count,
                scope_metrics.schema_url,
                service_name,
            )
            for metric in scope_metrics.metrics:
                head = (*common, metric.name, metric.description, metric.unit)
                data = metric.WhichOneof("data")
                if data == "gauge":
                    for point in _storable(metric.gauge.data_points, metric.name, rejections):
                        gauges.append(GaugeRow(*head, *_number_point(point)))
                elif data == "sum":
                    temporality = metric.sum.aggregation_temporality
                    monotonic = metric.sum.is_monotonic
                    for point in _storable(metric.sum.data_points, metric.name, rejections):
                        sums.append(SumRow(*head, *_number_point(point), temporality, monotonic))
                elif data == "histogram":
                    temporality = metric.histogram.aggregation_temporality
                    for hpoint in _storable(metric.histogram.data_points, metric.name, rejections):
                        histograms.append(
                            HistogramRow(
                                *head,
                                _attributes(hpoint.attributes),
                                hpoint.start_time_unix_nano,
                                hpoint.time_unix_nano,
                                hpoint.count,
                                hpoint.sum if hpoint.HasField("sum") else None,
                                list(hpoint.bucket_counts),
                                list(hpoint.explicit_bounds),
                                *_exemplars(hpoint.exemplars),
                                hpoint.flags,
                                hpoint.min if hpoint.HasField("min") else None,
                                hpoint.max if hpoint.HasField("max") else None,
                                temporality,
                            )
                        )
                elif data in _NOT_STORED:
                    rejections.add(
                        f"{metric.name!r} is {_NOT_STORED[data]}; those are not stored",
                        len(getattr(metric, data).data_points),
                    )
    return MetricBatch(
        gauges, sums, histograms, rejections.count, rejections.message("data points")
    )


_NOT_STORED: Final = {
    "exponential_histogram": "an exponential histogram",
    "summary": "a summary",
}
"""The metric data kinds the store has no table for, as a rejection names them."""


def _storable(points: Iterable[Any], metric_name: str, rejections: _Rejections) -> Iterator[Any]:
    """The data points of ``metric_name`` whose times (their exemplars' too) the store can hold;
    each other one is counted as rejected."""
    for point in points:
        latest = max(
            point.start_time_unix_nano,
            point.time_unix_nano,
            *(exemplar.time_unix_nano for exemplar in point.exemplars),
        )
        if latest > _MAX_STORABLE_NS:
            rejections.add(f"a data point of {metric_name!r} has a time after the year 2262")
        else:
            yield point


def _number_point(point: Any) -> tuple[dict[str, str], int, int, float, int, *_ExemplarColumns]:
    """The columns of a gauge's or a sum's data point, after the metric's own: attributes, start
    and time, value, flags and the exemplars (``GaugeRow`` from ``attributes`` to
    ``exemplars_trace_id``)."""
    return (
        _attributes(point.attributes),
        point.start_time_unix_nano,
        point.time_unix_nano,
        _number(point),
        point.flags,
        *_exemplars(point.exemplars),
    )


# --------------------------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------------------------
def encode_export_response(
    signal: Signal, encoding: Encoding, rejected: int = 0, error_message: str = ""
) -> bytes:
    """The body of a 200 answer: an ``Export*ServiceResponse`` in the request's encoding.

    With ``rejected`` > 0 it carries ``partial_success`` (rejected spans or data points).

    Example::

        encode_export_response(Signal.TRACES, Encoding.JSON)   # b'{}'
    """
    response: Message
    if signal is Signal.TRACES:
        response = ExportTraceServiceResponse()
        if rejected or error_message:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected, error_message=error_message)
            )
    else:
        response = ExportMetricsServiceResponse()
        if rejected or error_message:
            response.partial_success.CopyFrom(
                ExportMetricsPartialSuccess(
                    rejected_data_points=rejected, error_message=error_message
                )
            )
    if encoding is Encoding.PROTOBUF:
        return response.SerializeToString()
    return json.dumps(json_format.MessageToDict(response), separators=(",", ":")).encode("utf-8")


def encode_status(code: int, message: str, encoding: Encoding) -> bytes:
    """The body of an error answer: a ``google.rpc.Status`` in the request's encoding.

    ``code`` is the gRPC status code (3 INVALID_ARGUMENT, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE…).

    Example::

        encode_status(3, "bad JSON", Encoding.JSON)   # b'{"code":3,"message":"bad JSON"}'
    """
    if encoding is Encoding.PROTOBUF:
        data: bytes = status_pb2.Status(code=code, message=message).SerializeToString()
        return data
    return json.dumps({"code": code, "message": message}, separators=(",", ":")).encode("utf-8")
