"""The chdb fetch's fast paths keep their results: Arrow results read in place stay valid after
chdb frees its result, the extraction's settings apply next to a query's own ``SETTINGS``, and
``run_server_requests`` (which joins the chosen span's wide row back) still gives one row per
client span when the store holds a server span twice (an exporter retry)."""

from __future__ import annotations

import gc
from pathlib import Path

from otelbench import semconv
from otelbench.query import open_store
from otelbench.query.clickhouse import ChdbConnection
from otelbench.query.extract import Columns, ListColumn
from tests.unit.query.clickhouse_store import chdb_session, load_chdb
from tests.unit.query.spanstore import HOOK_RUN_ID, write_hook_scenario


def test_arrow_results_read_in_place_outlive_chdb_results(tmp_path: Path) -> None:
    url = load_chdb(write_hook_scenario(tmp_path / "spans.duckdb"))
    with open_store(url) as runner:
        conn = runner.connection
        assert isinstance(conn, ChdbConnection)
        table = conn.query_arrow(
            "SELECT range(toUInt64(number)) AS a FROM numbers({n:UInt64})", {"n": 500}, "t"
        )
        for _ in range(3):  # reuse the memory a freed result would have held
            conn.query_arrow("SELECT range(toUInt64(400)) AS b FROM numbers(500)", {}, "t")
            gc.collect()
        rows = table.column("a").to_pylist()
    assert rows == [list(range(n)) for n in range(500)]


def test_chdb_queries_run_with_the_extraction_settings_and_their_own(tmp_path: Path) -> None:
    url = load_chdb(write_hook_scenario(tmp_path / "spans.duckdb"))
    with open_store(url) as runner:
        conn = runner.connection
        assert isinstance(conn, ChdbConnection)
        table = conn.query_arrow(
            "SELECT toString(getSetting('query_plan_execute_functions_after_sorting')) AS after,"
            " toString(getSetting('max_threads')) AS threads SETTINGS max_threads = 1",
            {},
            "t",
        )
    assert table.to_pylist() == [{"after": "false", "threads": "1"}]


def _as_text(columns: Columns) -> dict[str, str]:
    return {
        name: repr((col.values.tolist(), col.offsets.tolist()))
        if isinstance(col, ListColumn)
        else repr(list(col))
        for name, col in columns.items()
    }


def test_run_server_requests_reads_a_duplicated_server_span_once(tmp_path: Path) -> None:
    url = load_chdb(write_hook_scenario(tmp_path / "spans.duckdb"))
    with open_store(url) as runner:
        before = runner.run("run_server_requests", run_id=HOOK_RUN_ID)
    database = url.rsplit("database=", 1)[1]
    with chdb_session() as session:
        session.query(
            f"INSERT INTO {database}.otel_traces SELECT * FROM {database}.otel_traces "
            f"WHERE SpanKind = '{semconv.SPAN_KIND_SERVER}'",
            "CSV",
        )
    with open_store(url) as runner:
        after = runner.run("run_server_requests", run_id=HOOK_RUN_ID)
    assert len(before["span_id"]) == 4
    assert _as_text(after) == _as_text(before)
