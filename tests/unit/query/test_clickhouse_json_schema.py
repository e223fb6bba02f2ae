"""The ClickHouse exporter's json mode: ``otel_traces`` with ``JSON`` attribute columns
(``traces_json_table.sql``, ``tests/fixtures/exporter_rows.py``), detected from
``system.columns`` and read through the one relation that presents it as the Map schema; any
other schema is refused with one message naming the two otelbench reads. The report numbers on
the JSON store equal the Map store's (every scenario: ``test_clickhouse_extract.py``, byte for
byte: ``tests/integration/test_clickhouse_report.py``); here, the pieces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from otelbench import semconv
from otelbench.collector.otlp import Encoding, decode_traces
from otelbench.errors import NotAnOtelbenchStore
from otelbench.query import extract_run_data, list_runs, open_store
from otelbench.query.clickhouse import traces_relation
from otelbench.query.extract import arrow_columns, read_traces_from
from otelbench.report import render_json, report_from_data
from otelbench.store import ClickHouseSpanWriter
from otelbench.store.clickhouse import (
    TRACES_SCHEMAS,
    ChdbConnection,
    traces_schema,
)
from tests.fixtures.exporter_rows import (
    TRACES_JSON_TABLE,
    create_exporter_table,
    exporter_json_ddl,
    request_from_store,
)
from tests.unit.query.clickhouse_store import (
    chdb_dir,
    chdb_session,
    load_chdb,
    load_chdb_as_exporter,
    new_database,
)
from tests.unit.query.spanstore import HOOK_RUN_ID, write_hook_scenario

JSON_COLUMNS = [
    ("ResourceAttributes", "JSON"),
    ("SpanAttributes", "JSON"),
    ("Events.Attributes", "Array(JSON)"),
    ("Links.Attributes", "Array(JSON)"),
]


def database_of(url: str) -> str:
    return url.rsplit("=", 1)[1]


@pytest.fixture(scope="module")
def hook_stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The hook scenario as DuckDB, and in chdb in the exporter's Map and JSON schemas."""
    duck = write_hook_scenario(tmp_path_factory.mktemp("hooks") / "spans.duckdb")
    return duck, load_chdb_as_exporter(duck), load_chdb_as_exporter(duck, json_schema=True)


def test_the_json_table_is_the_exporters(hook_stores: tuple[Path, str, str]) -> None:
    database = database_of(hook_stores[2])
    assert exporter_json_ddl(database).startswith(
        f'CREATE TABLE IF NOT EXISTS "{database}"."otel_traces"  (\n    Timestamp DateTime64(9)'
    )
    assert TRACES_JSON_TABLE.count("%s") == 5
    with chdb_session() as session:
        cols = arrow_columns(
            ChdbConnection(session, database).query_arrow(
                "SELECT name, type FROM system.columns WHERE database = {db:String} "
                "AND table = 'otel_traces' AND name LIKE '%Attributes' ORDER BY position",
                {"db": database},
                "t",
            )
        )
    assert list(zip(cols["name"].tolist(), cols["type"].tolist(), strict=True)) == JSON_COLUMNS


def test_the_json_rows_hold_typed_values(hook_stores: tuple[Path, str, str]) -> None:
    """So that the comparison with the Map schema compares typed JSON, not strings: what the
    hooks and the client send as ints, doubles and arrays is stored with those types."""
    database = database_of(hook_stores[2])
    with chdb_session() as session:
        cols = arrow_columns(
            ChdbConnection(session, database).query_arrow(
                "SELECT groupUniqArrayArray(arrayMap(p -> concat(p.1, ' ', p.2), "
                "CAST(JSONAllPathsWithTypes(SpanAttributes), 'Array(Tuple(String, String))'))) "
                f"AS typed FROM {database}.otel_traces",
                {},
                "t",
            ),
            flat_lists=False,
        )
    typed = set(cols["typed"][0])
    assert f"{semconv.SERVER_TOKEN_OFFSETS_US} Array(Nullable(Int64))" in typed
    assert f"{semconv.CLIENT_CHUNK_OFFSETS_US} Array(Nullable(Int64))" in typed
    assert f"{semconv.VLLM_LATENCY_TTFT} Float64" in typed
    assert f"{semconv.VLLM_USAGE_COMPLETION_TOKENS} Int64" in typed
    assert f"{semconv.GEN_AI_RESPONSE_FINISH_REASONS} Array(Nullable(String))" in typed


def test_each_schema_is_detected_and_read(hook_stores: tuple[Path, str, str]) -> None:
    duck, map_url, json_url = hook_stores
    with chdb_session() as session:
        for url, schema in ((map_url, "map"), (json_url, "json"), (load_chdb(duck), "map")):
            database = database_of(url)
            assert traces_schema(ChdbConnection(session, database), database, "t") == schema
    with open_store(duck) as d, open_store(map_url) as m, open_store(json_url) as j:
        assert m.traces is None
        assert j.traces is not None
        assert j.traces == traces_relation("json")
        read = read_traces_from("SELECT 1 -- FROM otel_traces\nFROM otel_traces AS s", j.traces)
        assert read.startswith("SELECT 1 -- FROM (SELECT Timestamp, TraceId,")
        assert read.count("\n") == 1  # the relation stays whole inside a comment
        assert read.endswith(" FROM otel_traces AS t) AS s")
        assert list_runs(j) == list_runs(m) == list_runs(d)
        a, b = extract_run_data(m, HOOK_RUN_ID), extract_run_data(j, HOOK_RUN_ID)
    # hand-checked values through the JSON store (write_hook_scenario's first hook request)
    assert b.server.token_offsets(0).tolist() == a.server.token_offsets(0).tolist()
    assert b.server.token_offsets(0).size > 0
    np.testing.assert_array_equal(b.server.ttft_s, a.server.ttft_s)
    np.testing.assert_array_equal(b.client.chunk_offset_us, a.client.chunk_offset_us)
    assert b.client.chunk_offset_us.size > 0
    assert b.client.finish_reasons == a.client.finish_reasons
    assert {r for f in b.client.finish_reasons for r in f} == {"length"}
    assert b.client.rejected_attributes == a.client.rejected_attributes
    assert b.server.rejected_attributes == a.server.rejected_attributes


def test_a_database_without_otel_traces_has_no_schema() -> None:
    database = new_database()
    with chdb_session() as session:
        connection = ChdbConnection(session, database)
        connection.execute(f"CREATE DATABASE {database}")
        assert traces_schema(connection, database, "t") is None


@pytest.mark.parametrize(
    ("attributes", "found"),
    [
        ("SpanAttributes String", "SpanAttributes String"),
        ("SpanAttributes JSON", "SpanAttributes JSON"),  # JSON beside Map columns
    ],
)
def test_another_schema_is_refused_naming_the_two_it_reads(attributes: str, found: str) -> None:
    database = new_database()
    with chdb_session() as session:
        connection = ChdbConnection(session, database)
        connection.execute(f"CREATE DATABASE {database}")
        connection.execute(
            f"CREATE TABLE {database}.otel_traces (Timestamp DateTime64(9), "
            f"ResourceAttributes Map(String, String), {attributes}, "
            "Events Nested(Name String, Attributes Map(String, String)), "
            "Links Nested(TraceId String, Attributes Map(String, String))) "
            "ENGINE = MergeTree ORDER BY Timestamp"
        )
    url = f"chdb://{chdb_dir()}?database={database}"
    with pytest.raises(NotAnOtelbenchStore) as info, open_store(url):
        pass
    message = str(info.value)
    assert message == (
        f"{url}: otel_traces has "
        f"ResourceAttributes Map(String, String), {found}, "
        "Events.Attributes Array(Map(String, String)), "
        "Links.Attributes Array(Map(String, String)): not a schema of the collector's ClickHouse "
        "exporter; otelbench reads otel_traces with "
        f"{TRACES_SCHEMAS['map']}; or {TRACES_SCHEMAS['json']}"
    )
    assert "traces_table.sql" in message
    assert "traces_json_table.sql" in message


def test_otelbench_rows_in_a_json_table_give_the_same_report(
    hook_stores: tuple[Path, str, str],
) -> None:
    """otelbench's ClickHouse writer (the collector's, every value a string) into a table the
    exporter's json mode created: it inserts there, and the store reads as the DuckDB one."""
    duck = hook_stores[0]
    database = new_database()
    with chdb_session() as session:
        create_exporter_table(ChdbConnection(session, database), database, json_schema=True)
    batch = decode_traces(request_from_store(duck).SerializeToString(), Encoding.PROTOBUF)
    url = f"chdb://{chdb_dir()}?database={database}"
    with ClickHouseSpanWriter.open(url) as writer:
        assert writer.insert_spans(batch.spans) == len(batch.spans) > 0
    with open_store(duck) as d, open_store(url) as j:
        assert j.traces is not None
        a, b = extract_run_data(d, HOOK_RUN_ID), extract_run_data(j, HOOK_RUN_ID)
    assert render_json(report_from_data(a)) == render_json(report_from_data(b))
