"""SpanStore: creating, recognising, writing (atomically, durably) and reading a span store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

from otelbench import __version__, semconv
from otelbench.errors import NotAnOtelbenchStore, StoreError
from otelbench.store import SCHEMA_VERSION, GaugeRow, HistogramRow, SpanRow, SpanStore, SumRow
from tests.fixtures.exporter_rows import INSERT_COLUMNS

T0 = 1_700_000_000_123_456_789


def span_row(i: int = 0, **changes: Any) -> SpanRow:
    row = SpanRow(
        timestamp_ns=T0 + i,
        trace_id=f"{i:032x}",
        span_id=f"{i + 1:016x}",
        parent_span_id="",
        trace_state="k=v",
        span_name="chat tiny",
        span_kind=semconv.SPAN_KIND_CLIENT,
        service_name="otelbench-client",
        resource_attributes={"service.name": "otelbench-client", "host.name": "h"},
        scope_name="otelbench",
        scope_version="0.1.0",
        span_attributes={"offsets": "[812,10240,20511]", "model": "tiny", "i": str(i)},
        duration_ns=1_500_000,
        status_code=semconv.STATUS_ERROR,
        status_message="boom",
        events_timestamp_ns=[T0 + 10, T0 + 20],
        events_name=["first_token", "preempted"],
        events_attributes=[{}, {"reason": "kv"}],
        links_trace_id=["ab" * 16],
        links_span_id=["cd" * 8],
        links_trace_state=[""],
        links_attributes=[{"link.kind": "retry"}],
    )
    return row._replace(**changes)


def test_new_store_has_the_exporter_tables_and_our_meta(tmp_path: Path) -> None:
    with SpanStore.open(tmp_path / "s.duckdb") as store:
        assert store.meta() == {
            "schema_version": str(SCHEMA_VERSION),
            "created_by": f"otelbench {__version__}",
        }
        cols = store.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'otel_traces' "
            "ORDER BY column_index"
        )
        assert [c for (c,) in cols] == list(INSERT_COLUMNS)
        tables = {t for (t,) in store.execute("SELECT table_name FROM duckdb_tables()")}
        assert {
            "otel_traces",
            "otel_metrics_gauge",
            "otel_metrics_sum",
            "otel_metrics_histogram",
            "otelbench_meta",
        } <= tables
        assert store.span_count() == 0
        assert store.metric_point_count() == 0


def test_spans_round_trip_exactly(tmp_path: Path) -> None:
    rows = [span_row(i) for i in range(3)]
    with SpanStore.open(tmp_path / "s.duckdb") as store:
        assert store.insert_spans(rows) == 3
    with SpanStore.open(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.span_count() == 3
        got = store.execute(
            'SELECT epoch_ns("Timestamp"), "TraceId", "SpanId", "ParentSpanId", "TraceState", '
            '"SpanName", "SpanKind", "ServiceName", "ResourceAttributes", "ScopeName", '
            '"ScopeVersion", "SpanAttributes", "Duration", "StatusCode", "StatusMessage", '
            'list_transform("Events.Timestamp", lambda t: epoch_ns(t)), "Events.Name", '
            '"Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState", '
            '"Links.Attributes" FROM otel_traces ORDER BY "Timestamp"'
        )
        assert [SpanRow(*r) for r in got] == rows
        [(offsets,)] = store.execute(
            """SELECT "SpanAttributes"['offsets']::BIGINT[] FROM otel_traces WHERE "SpanId" = ?""",
            [rows[0].span_id],
        )
        assert offsets == [812, 10240, 20511]


def test_metrics_round_trip(tmp_path: Path) -> None:
    common: tuple[Any, ...] = ({"service.name": "vllm"}, "", "vllm", "0.32", {}, 0, "", "vllm")
    gauge = GaugeRow(
        *common, "g", "a gauge", "1", {"k": "v"}, T0, T0 + 1, 2.5, 0, [], [], [], [], []
    )
    total = SumRow(
        *common, "c", "a counter", "{request}", {}, T0, T0 + 2, 7.0, 1,
        [{"x": "1"}], [T0 + 1], [3.0], ["cd" * 8], ["ab" * 16], 2, True,
    )  # fmt: skip
    hist = HistogramRow(
        *common, "h", "a histogram", "s", {}, T0, T0 + 3, 4, None, [1, 2, 1], [0.1, 0.5],
        [], [], [], [], [], 0, 0.01, None, 2,
    )  # fmt: skip
    with SpanStore.open(tmp_path / "m.duckdb") as store:
        assert store.insert_metrics([gauge], [total], [hist]) == 3
        assert store.metric_point_count() == 3
        [g] = store.execute(
            'SELECT "MetricName", "Value", "Attributes", epoch_ns("TimeUnix") '
            "FROM otel_metrics_gauge"
        )
        assert g == ("g", 2.5, {"k": "v"}, T0 + 1)
        [s] = store.execute(
            'SELECT "Value", "AggregationTemporality", "IsMonotonic", '
            '"Exemplars.FilteredAttributes", "Exemplars.Value", "Exemplars.SpanId", '
            '"Exemplars.TraceId" FROM otel_metrics_sum'
        )
        assert s == (7.0, 2, True, [{"x": "1"}], [3.0], ["cd" * 8], ["ab" * 16])
        [h] = store.execute(
            'SELECT "Count", "Sum", "BucketCounts", "ExplicitBounds", "Min", "Max" '
            "FROM otel_metrics_histogram"
        )
        assert h == (4, None, [1, 2, 1], [0.1, 0.5], 0.01, None)


def test_a_failed_batch_inserts_nothing(tmp_path: Path) -> None:
    with SpanStore.open(tmp_path / "s.duckdb") as store:
        store.insert_spans([span_row(0)])
        bad = [span_row(1), span_row(2, duration_ns=-5)]  # Duration is UBIGINT
        with pytest.raises(StoreError, match="cannot write 2 spans"):
            store.insert_spans(bad)
        assert store.span_count() == 1
        store.insert_spans([span_row(3)])  # the connection is usable after the rollback
        assert store.span_count() == 2


def test_duplicate_attribute_keys_cannot_reach_the_store(tmp_path: Path) -> None:
    # rows carry dicts, so keys are unique by construction; DuckDB would reject duplicates
    with SpanStore.open(tmp_path / "s.duckdb") as store:
        store.insert_spans([span_row(0, span_attributes={"a": "1", "b": "2"})])
        [(m,)] = store.execute('SELECT "SpanAttributes" FROM otel_traces')
        assert m == {"a": "1", "b": "2"}


def test_read_only_store_refuses_writes(tmp_path: Path) -> None:
    SpanStore.open(tmp_path / "s.duckdb").close()
    with (
        SpanStore.open(tmp_path / "s.duckdb", read_only=True) as store,
        pytest.raises(StoreError, match="read-only"),
    ):
        store.insert_spans([span_row()])


def test_missing_store_read_only_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as info:
        SpanStore.open(tmp_path / "nope.duckdb", read_only=True)
    assert not isinstance(info.value, NotAnOtelbenchStore)


def test_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open span store") as info:
        SpanStore.open(tmp_path / "no" / "such" / "dir" / "s.duckdb")
    assert not isinstance(info.value, NotAnOtelbenchStore)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is an empty file, not an otelbench store"),
        (b"SQLite format 3\x00" + bytes(200), "is not a DuckDB database"),
        (b"hello world\n" * 100, "is not a DuckDB database"),
    ],
)
def test_files_that_are_not_duckdb(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(NotAnOtelbenchStore, match=message) as info:
            SpanStore.open(path, read_only=read_only)
        assert "\n" not in str(info.value)
    assert path.read_bytes() == content  # untouched


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(NotAnOtelbenchStore, match="is a directory"):
        SpanStore.open(tmp_path)


def test_duckdb_file_without_meta_is_not_ours(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    with pytest.raises(NotAnOtelbenchStore, match="DuckDB database but not an otelbench store"):
        SpanStore.open(path)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("t",)]
    con.close()


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (str(SCHEMA_VERSION + 1), f"newer otelbench .*version {SCHEMA_VERSION + 1}"),
        ("banana", "unreadable otelbench schema version"),
    ],
)
def test_newer_or_garbled_schema_version(tmp_path: Path, version: str, message: str) -> None:
    path = tmp_path / "s.duckdb"
    SpanStore.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE otelbench_meta SET value = ? WHERE key = 'schema_version'", [version])
    con.close()
    with pytest.raises(NotAnOtelbenchStore, match=message):
        SpanStore.open(path, read_only=True)


def test_store_held_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    SpanStore.open(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from otelbench.store import SpanStore
                store = SpanStore.open({str(path)!r})
                print("open", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreError, match="in use by another process") as info:
            SpanStore.open(path, read_only=True)
        assert not isinstance(info.value, NotAnOtelbenchStore)
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0


def test_committed_batches_survive_a_crash(tmp_path: Path) -> None:
    """A process that inserts and dies without closing (os._exit) loses no committed batch."""
    path = tmp_path / "s.duckdb"
    code = textwrap.dedent(
        f"""
        import os
        from otelbench.store import SpanStore
        from tests.unit.store.test_span_store import span_row
        store = SpanStore.open({str(path)!r})
        for i in range(5):
            store.insert_spans([span_row(10 * i + j) for j in range(10)])
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])
    assert Path(str(path) + ".wal").exists()  # nothing was checkpointed: the WAL holds it all
    with SpanStore.open(path, read_only=True) as store:
        assert store.span_count() == 50
        [(ids,)] = store.execute('SELECT list("SpanId" ORDER BY "SpanId") FROM otel_traces')
        assert ids == sorted(f"{i + 1:016x}" for i in range(50))


def test_close_is_idempotent_and_final(tmp_path: Path) -> None:
    store = SpanStore.open(tmp_path / "s.duckdb")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.span_count()
    assert "closed" in repr(store)


def test_bad_sql_is_a_store_error(tmp_path: Path) -> None:
    with (
        SpanStore.open(tmp_path / "s.duckdb") as store,
        pytest.raises(StoreError, match="query on span store"),
    ):
        store.execute("SELECT nope FROM otel_traces")
