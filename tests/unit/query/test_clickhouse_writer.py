"""The ClickHouse span writer and the counts that run in ClickHouse, on chdb.

The writer is checked against the DuckDB store: the same :class:`~otelbench.store.SpanRow`
values written through each come back identical, column by column, and the reports computed from
both stores are equal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import otelbench
from otelbench import semconv
from otelbench.benchmark import StoreSpanWatch, store_display
from otelbench.errors import ConfigError, NotAnOtelbenchStore
from otelbench.query import extract_run_data, open_store
from otelbench.query.clickhouse import run_target_span_count
from otelbench.report import report_from_data
from otelbench.store import (
    SCHEMA_VERSION,
    ClickHouseSpanWriter,
    SpanRow,
    SpanStore,
    open_span_writer,
)
from tests.unit.query.clickhouse_store import chdb_dir, chdb_session, load_chdb, new_database
from tests.unit.query.spanstore import (
    HOOK_RUN_ID,
    write_hook_scenario,
    write_scenario,
)

_DUCKDB_ROWS = """
SELECT epoch_ns("Timestamp"), "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName",
       "SpanKind", "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion",
       "SpanAttributes", "Duration", "StatusCode", "StatusMessage",
       list_transform("Events.Timestamp", lambda t: epoch_ns(t)), "Events.Name",
       "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState",
       "Links.Attributes"
FROM otel_traces ORDER BY "TraceId", "SpanId"
"""

_CHDB_ROWS = """
SELECT toUnixTimestamp64Nano(Timestamp), TraceId, SpanId, ParentSpanId, TraceState, SpanName,
       SpanKind, ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes,
       Duration, StatusCode, StatusMessage,
       arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp), Events.Name,
       Events.Attributes, Links.TraceId, Links.SpanId, Links.TraceState, Links.Attributes
FROM {db}.otel_traces ORDER BY TraceId, SpanId
"""


_MAPS = {"resource_attributes", "span_attributes"}
_MAP_LISTS = {"events_attributes", "links_attributes"}


def _map(value: Any) -> dict[str, str]:
    """A map as DuckDB (a dict) or Arrow (a list of key/value pairs) gives it, as a dict."""
    pairs = value.items() if isinstance(value, dict) else value
    return {str(k): str(v) for k, v in pairs}


def _span_row(values: Any) -> SpanRow:
    return SpanRow(
        *(
            _map(v) if f in _MAPS else [_map(m) for m in v] if f in _MAP_LISTS else v
            for f, v in zip(SpanRow._fields, values, strict=True)
        )
    )


def duckdb_span_rows(path: Path) -> list[SpanRow]:
    with SpanStore.open(path, read_only=True) as store:
        return [_span_row(row) for row in store.execute(_DUCKDB_ROWS)]


def chdb_span_rows(database: str) -> list[SpanRow]:
    with chdb_session() as session:
        table = session.query(_CHDB_ROWS.format(db=database), "ArrowTable")
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [_span_row(row) for row in zip(*columns, strict=True)]


def write_with_writer(rows: list[SpanRow]) -> tuple[str, str]:
    """A new chdb database filled by the writer in two batches; (database, URL)."""
    database = new_database()
    url = f"chdb://{chdb_dir()}?database={database}"
    with ClickHouseSpanWriter.open(url) as writer:
        half = len(rows) // 2
        assert writer.insert_spans(rows[:half]) == half
        assert writer.insert_spans(rows[half:]) == len(rows) - half
        assert writer.insert_spans([]) == 0
        assert writer.span_count() == len(rows)
        assert writer.meta() == {
            "schema_version": str(SCHEMA_VERSION),
            "created_by": f"otelbench {otelbench.__version__}",
        }
    return database, url


def test_the_writer_stores_exactly_the_rows_the_duckdb_store_holds(tmp_path: Path) -> None:
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    rows = duckdb_span_rows(duck)
    assert len(rows) == 19
    assert any(r.events_name for r in rows)  # the scenario has events with attributes
    database, url = write_with_writer(rows)
    assert chdb_span_rows(database) == rows
    with open_store(duck) as store:
        from_duckdb = report_from_data(extract_run_data(store, HOOK_RUN_ID))
    with open_store(url) as store:
        from_chdb = report_from_data(extract_run_data(store, HOOK_RUN_ID))
    assert from_chdb == from_duckdb
    assert from_chdb["metrics"]["server"]["itl_ms"]["count"] == 6


def test_reopening_a_written_store_keeps_its_rows_and_meta(tmp_path: Path) -> None:
    rows = duckdb_span_rows(write_scenario(tmp_path / "spans.duckdb"))
    database, url = write_with_writer(rows)
    with ClickHouseSpanWriter.open(url) as writer:
        assert writer.span_count() == len(rows)
        assert writer.meta()["schema_version"] == str(SCHEMA_VERSION)
        assert writer.path == f"chdb://{chdb_dir()}?database={database}"
    assert repr(writer).endswith(", closed)")


def test_a_database_written_by_a_newer_otelbench_is_refused() -> None:
    database = new_database()
    with chdb_session() as session:
        session.query(f"CREATE DATABASE {database}")
        session.query(
            f"CREATE TABLE {database}.otelbench_meta (key String, value String) "
            "ENGINE = ReplacingMergeTree ORDER BY key"
        )
        session.query(f"INSERT INTO {database}.otelbench_meta VALUES ('schema_version', '99')")
    with pytest.raises(NotAnOtelbenchStore, match=r"store schema version '99'.*upgrade otelbench"):
        ClickHouseSpanWriter.open(f"chdb://{chdb_dir()}?database={database}")


def test_open_span_writer_opens_a_duckdb_path_and_refuses_other_schemes(tmp_path: Path) -> None:
    with open_span_writer(str(tmp_path / "new.duckdb")) as store:
        assert isinstance(store, SpanStore)
        assert store.span_count() == 0
    with pytest.raises(ConfigError, match=r"cannot write a s3:// store; known: chdb://, "):
        open_span_writer("s3://bucket/spans")


def test_store_display_never_shows_a_password(tmp_path: Path) -> None:
    assert store_display("clickhouses://bench:s3cret@ch:9440/traces") == (
        "clickhouses://bench@ch:9440/traces"
    )
    assert store_display(tmp_path / "spans.duckdb", tmp_path) == "spans.duckdb"
    assert store_display("chdb:///data/ch?database=otel") == "chdb:///data/ch?database=otel"


def test_run_target_span_count_counts_the_targets_spans_of_the_run(tmp_path: Path) -> None:
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    rows = duckdb_span_rows(duck)
    run_traces = {
        r.trace_id
        for r in rows
        if r.span_kind == semconv.SPAN_KIND_CLIENT
        and r.span_attributes.get(semconv.RUN_ID) == HOOK_RUN_ID
    }
    expected = sum(
        1 for r in rows if r.trace_id in run_traces and r.service_name != semconv.SERVICE_CLIENT
    )
    assert expected > 0
    url = load_chdb(duck)
    with open_store(url) as store:
        assert run_target_span_count(store, HOOK_RUN_ID) == expected
        assert run_target_span_count(store, "no-such-run") == 0
    # how a run waits for an external collector's spans: polling the store by run id
    watch = StoreSpanWatch(url)
    watch.poll_s = 0.01
    try:
        assert watch.target_spans(HOOK_RUN_ID) == expected
        started = time.monotonic()
        assert watch.wait_for_target_spans(expected, 5.0, 0.05, run_id=HOOK_RUN_ID) == expected
        assert time.monotonic() - started < 2.0  # all there: it stops after the quiet time
        assert watch.wait_for_target_spans(expected + 1, 0.2, 0.05, run_id=HOOK_RUN_ID) == (
            expected
        )
        with pytest.raises(ConfigError, match="needs the run id"):
            watch.target_spans()
    finally:
        watch.close()


def test_readers_refuse_a_database_written_by_a_newer_otelbench_and_accept_none() -> None:
    newer, exporter_only = new_database(), new_database()
    with chdb_session() as session:
        for database in (newer, exporter_only):
            session.query(f"CREATE DATABASE {database}")
        session.query(
            f"CREATE TABLE {newer}.otelbench_meta (key String, value String) "
            "ENGINE = ReplacingMergeTree ORDER BY key"
        )
        newer_version = SCHEMA_VERSION + 1
        session.query(
            f"INSERT INTO {newer}.otelbench_meta VALUES ('schema_version', '{newer_version}')"
        )
    with (
        pytest.raises(
            NotAnOtelbenchStore, match=rf"store schema version '{newer_version}'.*upgrade otelbench"
        ),
        open_store(f"chdb://{chdb_dir()}?database={newer}"),
    ):
        pass
    with open_store(f"chdb://{chdb_dir()}?database={exporter_only}") as store:
        assert store.source.endswith(f"?database={exporter_only}")
