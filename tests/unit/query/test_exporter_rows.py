"""The data contract: otelbench's spellings and rows are the ClickHouse exporter's, value for value.

``tests/fixtures/exporter_rows.py`` inserts spans into chdb as the OpenTelemetry Collector's
ClickHouse exporter does (its DDL, its values, read from its source: ``collectors/README.md``).
Here the same OTLP request goes through the exporter fixture and through otelbench's own path
(the receiver's :func:`~otelbench.collector.otlp.decode_traces`, then the ClickHouse span writer)
into two databases of one chdb, and every column of every row must be equal; and the spellings
:mod:`otelbench.semconv` writes and reads must be pdata's and the older exporter's.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otelbench import semconv
from otelbench.collector.otlp import Encoding, decode_traces
from otelbench.query.extract import arrow_columns
from otelbench.store import ClickHouseSpanWriter
from otelbench.store.clickhouse import ChdbConnection
from tests.fixtures.exporter_rows import (
    INSERT_COLUMNS,
    LEGACY_SPAN_KINDS,
    LEGACY_STATUS_CODES,
    PDATA_SPAN_KINDS,
    PDATA_STATUS_CODES,
    create_exporter_table,
    exporter_ddl,
    insert_like_exporter,
)
from tests.unit.query.clickhouse_store import chdb_dir, chdb_session, new_database
from tests.unit.query.spanstore import T0_NS

MS = 1_000_000


def test_otelbench_writes_pdata_spellings_and_reads_the_older_ones_too() -> None:
    assert semconv.SPAN_KINDS == PDATA_SPAN_KINDS
    assert semconv.STATUS_CODES == PDATA_STATUS_CODES
    kinds = (
        semconv.SPAN_KIND_UNSPECIFIED_SPELLINGS,
        semconv.SPAN_KIND_INTERNAL_SPELLINGS,
        semconv.SPAN_KIND_SERVER_SPELLINGS,
        semconv.SPAN_KIND_CLIENT_SPELLINGS,
        semconv.SPAN_KIND_PRODUCER_SPELLINGS,
        semconv.SPAN_KIND_CONSUMER_SPELLINGS,
    )
    statuses = (
        semconv.STATUS_UNSET_SPELLINGS,
        semconv.STATUS_OK_SPELLINGS,
        semconv.STATUS_ERROR_SPELLINGS,
    )
    assert kinds == tuple(zip(PDATA_SPAN_KINDS, LEGACY_SPAN_KINDS, strict=True))
    assert statuses == tuple(zip(PDATA_STATUS_CODES, LEGACY_STATUS_CODES, strict=True))
    assert semconv.SPAN_KIND_SERVER == "Server"
    assert semconv.SPAN_KIND_SERVER_LEGACY == "SPAN_KIND_SERVER"
    assert semconv.STATUS_ERROR == "Error"
    assert semconv.STATUS_ERROR_LEGACY == "STATUS_CODE_ERROR"
    legacy = LEGACY_SPAN_KINDS + LEGACY_STATUS_CODES
    current = dict(zip(legacy, PDATA_SPAN_KINDS + PDATA_STATUS_CODES, strict=True))
    assert current == semconv.CURRENT_SPELLING


def _kv(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def _span(kind: int) -> Span:
    """Span ``kind`` (6: outside the enum): status ``kind % 4`` (3: outside), ``kind % 3``
    events, a link on the CLIENT span, a trace state on the SERVER span, no parent on kind 0."""
    ints = AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=v) for v in (7, 9500)]))
    start = T0_NS + kind * MS
    events = [
        Span.Event(time_unix_nano=start + 5 + e, name=f"ev{e}", attributes=[_kv("n", int_value=e)])
        for e in range(kind % 3)
    ]
    links = [
        Span.Link(
            trace_id=bytes([2] * 16),
            span_id=bytes([3] * 8),
            trace_state="l=1",
            attributes=[_kv("why", string_value="retry")],
        )
    ]
    status = Status(code=kind % 4, message="bad" if kind % 4 == 2 else "")  # type: ignore[arg-type]
    return Span(
        trace_id=bytes([1] * 16),
        span_id=bytes([kind + 1] * 8),
        parent_span_id=bytes([9] * 8) if kind else b"",
        trace_state="vendor=1" if kind == 2 else "",
        name=f"span-{kind}",
        kind=kind,  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=start + 1_234_567,
        attributes=[
            _kv("i", int_value=-7),
            _kv("d", double_value=0.1),
            _kv("b", bool_value=True),
            KeyValue(key="a", value=ints),
        ],
        status=status,
        events=events,
        links=links if kind == 3 else [],
    )


def _request() -> ExportTraceServiceRequest:
    """Two resources (one whose service.name is an int), two scopes, every kind and status, an
    unknown kind and status, events, links, a trace state, a root span and a zero parent id."""
    spans = [_span(kind) for kind in range(7)]
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[_kv("service.name", string_value="vllm")]),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name="otelbench.vllm", version="0.1.0"),
                        spans=spans[:4],
                    ),
                    ScopeSpans(scope=InstrumentationScope(name="bare"), spans=spans[4:]),
                ],
            ),
            ResourceSpans(
                resource=Resource(attributes=[_kv("service.name", int_value=5)]),
                scope_spans=[ScopeSpans(spans=[Span(trace_id=bytes(16), name="no ids")])],
            ),
        ]
    )


_SELECT = (
    "SELECT {columns} FROM {database}.otel_traces ORDER BY SpanName, SpanId SETTINGS "
    "output_format_arrow_low_cardinality_as_dictionary = 0"
)


def _rows(database: str) -> list[dict[str, Any]]:
    with chdb_session() as session:
        conn = ChdbConnection(session, database)
        columns = ", ".join(f"toString(`{c}`) AS `{c}`" for c in INSERT_COLUMNS)
        table = conn.query_arrow(_SELECT.format(columns=columns, database=database), {}, "t")
    cols = arrow_columns(table)
    n = len(cols["SpanName"])
    return [{c: cols[c][i] for c in INSERT_COLUMNS} for i in range(n)]


@pytest.fixture(scope="module")
def exporter_and_otelbench() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The request's rows as the exporter inserts them, and as otelbench's receiver stores them."""
    request = _request()
    exporter_db, otelbench_db = new_database(), new_database()
    with chdb_session() as session:
        connection = ChdbConnection(session, exporter_db)
        create_exporter_table(connection, exporter_db)
        assert insert_like_exporter(connection, exporter_db, request) == 8
    batch = decode_traces(request.SerializeToString(), Encoding.PROTOBUF)
    assert batch.rejected == 0
    with ClickHouseSpanWriter.open(f"chdb://{chdb_dir()}?database={otelbench_db}") as writer:
        assert writer.insert_spans(batch.spans) == 8
    return _rows(exporter_db), _rows(otelbench_db)


def test_otelbench_stores_the_exporters_rows_value_for_value(
    exporter_and_otelbench: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    exporter, ours = exporter_and_otelbench
    assert len(exporter) == len(ours) == 8
    for theirs, mine in zip(exporter, ours, strict=True):
        for column in INSERT_COLUMNS:
            assert mine[column] == theirs[column], (theirs["SpanName"], column)


def test_the_exporters_rows_hold_what_its_source_says(
    exporter_and_otelbench: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """Hand-checked: kinds and statuses as pdata's String(), Duration in ns, scope columns,
    Nested events and links, hex ids ('' for absent or all-zero ones), ServiceName AsString."""
    rows = {row["SpanName"]: row for row in exporter_and_otelbench[0]}
    assert [rows[f"span-{k}"]["SpanKind"] for k in range(7)] == [
        "Unspecified", "Internal", "Server", "Client", "Producer", "Consumer", "",
    ]  # fmt: skip
    assert [rows[f"span-{k}"]["StatusCode"] for k in range(7)] == [
        "Unset", "Ok", "Error", "", "Unset", "Ok", "Error",
    ]  # fmt: skip
    server = rows["span-2"]
    assert server["Duration"] == "1234567"
    assert server["StatusMessage"] == "bad"
    assert server["TraceState"] == "vendor=1"
    assert (server["ScopeName"], server["ScopeVersion"]) == ("otelbench.vllm", "0.1.0")
    assert (rows["span-4"]["ScopeName"], rows["span-4"]["ScopeVersion"]) == ("bare", "")
    assert server["ServiceName"] == "vllm"
    assert server["ParentSpanId"] == "09" * 8
    assert rows["span-0"]["ParentSpanId"] == ""
    assert server["SpanAttributes"] == "{'i':'-7','d':'0.1','b':'true','a':'[7,9500]'}"
    assert server["Events.Name"] == "['ev0','ev1']"
    assert server["Events.Attributes"] == "[{'n':'0'},{'n':'1'}]"
    assert server["Events.Timestamp"] == (
        "['2023-11-14 22:13:20.002000005','2023-11-14 22:13:20.002000006']"
    )
    client = rows["span-3"]
    assert client["Links.TraceId"] == f"['{'02' * 16}']"
    assert client["Links.SpanId"] == f"['{'03' * 8}']"
    assert client["Links.TraceState"] == "['l=1']"
    assert client["Links.Attributes"] == "[{'why':'retry'}]"
    assert rows["span-0"]["Links.TraceId"] == "[]"
    bare = rows["no ids"]
    assert (bare["TraceId"], bare["SpanId"], bare["ServiceName"]) == ("", "", "5")
    assert bare["ResourceAttributes"] == "{'service.name':'5'}"


def test_the_exporter_creates_text_indexes_on_clickhouse_26_2_and_later() -> None:
    """``createTraceTables`` picks the template's branch by the server's version; the columns are
    the same either way, so the queries read both alike."""
    old, new = (
        [line for line in exporter_ddl("otel", version).splitlines() if not line.startswith("--")]
        for version in ((26, 1), (26, 2))
    )
    assert old[0] == new[0] == "CREATE TABLE IF NOT EXISTS otel.otel_traces ("
    assert "    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1," in old
    assert not any("TYPE text(" in line for line in old)
    assert "    INDEX idx_span_attr_items SpanAttributeItems TYPE text(tokenizer = 'array')," in new
    assert not any("bloom_filter" in line for line in new)
    assert [line for line in old if "INDEX" not in line] == [
        line for line in new if "INDEX" not in line
    ]
