"""Opening ClickHouse stores: the exporter's schema in chdb, store URLs and their errors."""

from __future__ import annotations

import re
import socket
from importlib.resources import files
from pathlib import Path

import pytest

from otelbench.errors import ConfigError, NotAnOtelbenchStore, StoreError
from otelbench.query import list_runs, open_store
from otelbench.query.clickhouse import open_clickhouse_server
from otelbench.query.extract import arrow_columns
from otelbench.store.clickhouse import (
    DEFAULT_DATABASE,
    ChdbConnection,
    ServerUrl,
    clickhouse_schema,
)
from tests.unit.query.clickhouse_store import chdb_dir, chdb_session, load_chdb, new_database
from tests.unit.query.spanstore import write_scenario

# The exporter's otel_traces as ClickHouse describes the table it created (system.columns; the
# two ALIAS columns apart: they are computed, not stored, and the DuckDB store has no twin).
EXPORTER_COLUMNS = [
    ("Timestamp", "DateTime64(9)"),
    ("TraceId", "String"),
    ("SpanId", "String"),
    ("ParentSpanId", "String"),
    ("TraceState", "String"),
    ("SpanName", "LowCardinality(String)"),
    ("SpanKind", "LowCardinality(String)"),
    ("ServiceName", "LowCardinality(String)"),
    ("ResourceAttributes", "Map(LowCardinality(String), String)"),
    ("ScopeName", "String"),
    ("ScopeVersion", "String"),
    ("SpanAttributes", "Map(LowCardinality(String), String)"),
    ("Duration", "UInt64"),
    ("StatusCode", "LowCardinality(String)"),
    ("StatusMessage", "String"),
    ("Events.Timestamp", "Array(DateTime64(9))"),
    ("Events.Name", "Array(LowCardinality(String))"),
    ("Events.Attributes", "Array(Map(LowCardinality(String), String))"),
    ("Links.TraceId", "Array(String)"),
    ("Links.SpanId", "Array(String)"),
    ("Links.TraceState", "Array(String)"),
    ("Links.Attributes", "Array(Map(LowCardinality(String), String))"),
]


def test_chdb_creates_the_exporters_table_unchanged(tmp_path: Path) -> None:
    url = load_chdb(write_scenario(tmp_path / "s.duckdb"))
    database = url.rsplit("=", 1)[1]
    with chdb_session() as session:
        conn = ChdbConnection(session, database)
        cols = arrow_columns(
            conn.query_arrow(
                "SELECT name, type, compression_codec, default_kind FROM system.columns "
                "WHERE database = {db:String} AND table = 'otel_traces' ORDER BY position",
                {"db": database},
                "t",
            )
        )
        table = arrow_columns(
            conn.query_arrow(
                "SELECT engine, partition_key, sorting_key, primary_key FROM system.tables "
                "WHERE database = {db:String} AND name = 'otel_traces'",
                {"db": database},
                "t",
            )
        )
        indexes = arrow_columns(
            conn.query_arrow(
                "SELECT name, expr, type_full FROM system.data_skipping_indices "
                "WHERE database = {db:String} AND table = 'otel_traces' ORDER BY name",
                {"db": database},
                "t",
            )
        )
    described = list(
        zip(
            cols["name"].tolist(), cols["type"].tolist(), cols["default_kind"].tolist(), strict=True
        )
    )
    assert [(n, t) for n, t, kind in described if kind != "ALIAS"] == EXPORTER_COLUMNS
    assert [(n, t) for n, t, kind in described if kind == "ALIAS"] == [
        ("ResourceAttributeItems", "Array(String)"),
        ("SpanAttributeItems", "Array(String)"),
    ]
    codecs = dict(zip(cols["name"].tolist(), cols["compression_codec"].tolist(), strict=True))
    assert codecs["Timestamp"] == "CODEC(Delta(8), ZSTD(1))"
    assert codecs["Duration"] == "CODEC(T64, ZSTD(1))"
    assert table["engine"].tolist() == ["MergeTree"]
    assert table["partition_key"].tolist() == ["toDate(Timestamp)"]
    assert table["sorting_key"].tolist() == [
        "ServiceName, SpanName, toDateTime(Timestamp), Timestamp"
    ]
    assert table["primary_key"].tolist() == ["ServiceName, SpanName, toDateTime(Timestamp)"]
    assert list(
        zip(
            indexes["name"].tolist(),
            indexes["expr"].tolist(),
            indexes["type_full"].tolist(),
            strict=True,
        )
    ) == [
        ("idx_duration", "Duration", "minmax"),
        ("idx_lower_span_name", "lower(SpanName)", "tokenbf_v1(32768, 3, 0)"),
        ("idx_res_attr_key", "mapKeys(ResourceAttributes)", "bloom_filter(0.01)"),
        ("idx_res_attr_value", "mapValues(ResourceAttributes)", "bloom_filter(0.01)"),
        ("idx_span_attr_key", "mapKeys(SpanAttributes)", "bloom_filter(0.01)"),
        ("idx_span_attr_value", "mapValues(SpanAttributes)", "bloom_filter(0.01)"),
        ("idx_trace_id", "TraceId", "bloom_filter(0.001)"),
    ]


def test_the_duckdb_store_mirrors_the_exporters_columns() -> None:
    """sql/duckdb/schema.sql has the exporter's column names in the exporter's order."""
    duck = (files("otelbench.store") / "sql" / "duckdb" / "schema.sql").read_text(encoding="utf-8")
    body = duck.split("CREATE TABLE IF NOT EXISTS otel_traces (", 1)[1].split(");", 1)[0]
    names = re.findall(r'^\s*"([^"]+)"', body, flags=re.MULTILINE)
    assert names == [name for name, _ in EXPORTER_COLUMNS]
    assert "ENGINE = MergeTree()" in clickhouse_schema()


def test_copied_rows_keep_every_timestamp_to_the_nanosecond(tmp_path: Path) -> None:
    import duckdb

    duck = write_scenario(tmp_path / "s.duckdb")
    url = load_chdb(duck)
    database = url.rsplit("=", 1)[1]
    con = duckdb.connect(str(duck), read_only=True)
    try:
        expected = con.execute(
            'SELECT "SpanId", epoch_ns("Timestamp"), "Duration", '
            'list_transform("Events.Timestamp", lambda t: epoch_ns(t)) '
            'FROM otel_traces ORDER BY "SpanId"'
        ).fetchall()
    finally:
        con.close()
    with chdb_session() as session:
        got = arrow_columns(
            ChdbConnection(session, database).query_arrow(
                f"SELECT SpanId, toUnixTimestamp64Nano(Timestamp) AS ts, Duration, "
                f"arrayMap(t -> toUnixTimestamp64Nano(t), `Events.Timestamp`) AS ev "
                f"FROM {database}.otel_traces ORDER BY SpanId",
                {},
                "t",
            )
        )
    rows = list(
        zip(
            got["SpanId"].tolist(),
            got["ts"].tolist(),
            got["Duration"].tolist(),
            [e.tolist() for e in got["ev"]],
            strict=True,
        )
    )
    assert rows == [tuple(r) for r in expected]
    assert len(rows) == 12


# --- store URLs ---------------------------------------------------------------------------------


def test_open_store_opens_a_chdb_url(tmp_path: Path) -> None:
    url = load_chdb(write_scenario(tmp_path / "s.duckdb"))
    with open_store(url) as store:
        assert store.dialect.name == "clickhouse"
        assert store.source == f"chdb://{chdb_dir()}?database={url.rsplit('=', 1)[1]}"
        assert [r.run_id for r in list_runs(store)] == ["r0", "r1"]


def test_a_directory_that_is_not_a_chdb_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no chdb store at .*not a ClickHouse data directory"):
        open_store(f"chdb://{tmp_path}").__enter__()
    with pytest.raises(StoreError, match="no chdb store at"):
        open_store(f"chdb://{tmp_path}/missing").__enter__()


def test_a_missing_database_is_not_an_otelbench_store() -> None:
    with chdb_session():
        pass  # the data directory exists from here on
    with (
        pytest.raises(NotAnOtelbenchStore, match="not a store with the ClickHouse exporter"),
        open_store(f"chdb://{chdb_dir()}?database=nope_{new_database()}"),
    ):
        pass


def test_a_database_without_otel_traces_is_not_an_otelbench_store() -> None:
    database = new_database()
    with chdb_session() as session:
        ChdbConnection(session, database).execute(f"CREATE DATABASE {database}")
    expected = (
        r"lacks a table or column the query layer reads \(UNKNOWN_TABLE: Unknown table "
        r"expression identifier .otel_traces.\); it is not"
    )
    with (
        open_store(f"chdb://{chdb_dir()}?database={database}") as store,
        pytest.raises(NotAnOtelbenchStore, match=expected),
    ):
        list_runs(store)


def test_chdb_serves_one_data_directory_per_process(tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "metadata").mkdir(parents=True)
    with (
        chdb_session(),  # the process's directory is open
        pytest.raises(StoreError, match="one data directory per process"),
    ):
        open_store(f"chdb://{other}").__enter__()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("chdb://", "bad chdb store URL"),
        ("chdb:///x?db=otel", r"unknown option\(s\) \['db'\]"),
        ("chdb:///x?database=a;DROP", "bad ClickHouse database name"),
        ("clickhouse://", "bad ClickHouse URL"),
        ("clickhouse://host:99999/otel", "bad port"),
        ("clickhouse://host/x-y", "bad ClickHouse database name"),
        ("mysql://host/db", r"unknown store URL scheme mysql:// .*known: chdb://, clickhouse://"),
    ],
)
def test_bad_store_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url).__enter__()


def test_server_urls_parse_to_clickhouse_connect_arguments() -> None:
    assert ServerUrl.parse("clickhouse://ch.internal") == ServerUrl(
        "ch.internal", 8123, DEFAULT_DATABASE, None, "", secure=False
    )
    parsed = ServerUrl.parse("clickhouses://bench%40ops:p%3Ass@ch.example:9440/traces")
    assert parsed == ServerUrl("ch.example", 9440, "traces", "bench@ops", "p:ss", secure=True)
    assert parsed.display() == "clickhouses://bench@ops@ch.example:9440/traces"
    assert ServerUrl.parse("clickhouses://h/").port == 8443


def test_an_unreachable_clickhouse_server_is_a_store_error() -> None:
    """clickhouse-connect against a loopback port with nothing listening (no server here)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreError) as err:
        open_clickhouse_server(f"clickhouse://127.0.0.1:{port}/otel").__enter__()
    assert str(err.value) == (
        f"cannot connect to ClickHouse at clickhouse://127.0.0.1:{port}/otel: Connection refused"
    )
