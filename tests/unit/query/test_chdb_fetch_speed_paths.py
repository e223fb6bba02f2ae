"""The chdb fetch's fast paths keep their results: Arrow results read in place stay valid after
chdb frees its result, the extraction's settings apply next to a query's own ``SETTINGS``, and
``run_server_requests`` (which joins the chosen span's wide row back) still gives one row per
client span when the store holds a server span twice (an exporter
retry)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otelbench import semconv
from otelbench.query import open_store
from otelbench.query.extract import Columns, ListColumn, QueryRunner
from otelbench.store.clickhouse import ChdbConnection
from tests.unit.query.clickhouse_store import chdb_session, load_chdb
from tests.unit.query.spanstore import HOOK_RUN_ID, write_hook_scenario


@contextmanager
def _chdb_connection(tmp_path: Path) -> Iterator[ChdbConnection]:
    """The chdb connection of a store holding the engine-hook scenario."""
    with open_store(load_chdb(write_hook_scenario(tmp_path / "spans.duckdb"))) as runner:
        assert isinstance(runner.connection, ChdbConnection)
        yield runner.connection


def test_arrow_results_read_in_place_outlive_chdb_results(tmp_path: Path) -> None:
    """A result read in place from chdb's buffer stays valid after later results reuse memory."""
    with _chdb_connection(tmp_path) as conn:
        table = conn.query_arrow(
            "SELECT range(toUInt64(number)) AS a FROM numbers({n:UInt64})", {"n": 500}, "t"
        )
        for _ in range(3):  # reuse the memory a freed result would have held
            conn.query_arrow("SELECT range(toUInt64(400)) AS b FROM numbers(500)", {}, "t")
            gc.collect()
        rows = table.column("a").to_pylist()
    assert rows == [list(range(n)) for n in range(500)]


def test_chdb_queries_run_with_the_extraction_settings_and_their_own(tmp_path: Path) -> None:
    """The extraction's settings are appended to a query that has a SETTINGS clause of its own,
    and both apply."""
    with _chdb_connection(tmp_path) as conn:
        table = conn.query_arrow(
            "SELECT toString(getSetting('query_plan_execute_functions_after_sorting')) AS after,"
            " toString(getSetting('max_threads')) AS threads SETTINGS max_threads = 1",
            {},
            "t",
        )
    assert table.to_pylist() == [{"after": "false", "threads": "1"}]


def _server_queries(runner: QueryRunner) -> dict[str, Any]:
    """The run's server spans."""
    return {"requests": runner.run("run_server_requests", run_id=HOOK_RUN_ID)}


def _as_text(columns: Columns) -> dict[str, str]:
    return {
        name: repr((col.values.tolist(), col.offsets.tolist()))
        if isinstance(col, ListColumn)
        else repr(list(col))
        for name, col in columns.items()
    }


def test_the_server_queries_read_a_duplicated_server_span_once(tmp_path: Path) -> None:
    url = load_chdb(write_hook_scenario(tmp_path / "spans.duckdb"))
    with open_store(url) as runner:
        before = _server_queries(runner)
    database = url.rsplit("database=", 1)[1]
    with chdb_session() as session:
        session.query(
            f"INSERT INTO {database}.otel_traces SELECT * FROM {database}.otel_traces "
            f"WHERE SpanKind = '{semconv.SPAN_KIND_SERVER}'",
            "CSV",
        )
    with open_store(url) as runner:
        after = _server_queries(runner)
    assert len(before["requests"]["span_id"]) == 4
    assert _as_text(after["requests"]) == _as_text(before["requests"])
