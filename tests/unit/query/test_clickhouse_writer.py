"""The ClickHouse span writer and the aggregations that run in ClickHouse, on chdb.

The writer is checked against the DuckDB store: the same :class:`~otelbench.store.SpanRow`
values written through each come back identical, column by column, and the reports computed from
both stores are equal. The database-side ITL aggregations are checked against the report's
Python figures on the same spans: counts, minima, maxima and percentiles are equal; means and
standard deviations are sums taken in another order, equal within float rounding (relative
1e-12).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import otelbench
from otelbench import semconv
from otelbench.benchmark import StoreSpanWatch, store_display
from otelbench.errors import ConfigError, NotAnOtelbenchStore
from otelbench.query import extract_run_data, open_store
from otelbench.query.clickhouse import (
    client_itl_per_request,
    client_itl_summary,
    run_target_span_count,
    server_itl_per_request,
    server_itl_summary,
)
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
    MANIFEST,
    MS,
    RUN_ID,
    T0_NS,
    SpanWriter,
    span,
    trace,
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


def flat(figures: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def assert_close(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Equal keys; floats equal within relative 1e-12, everything else exactly."""
    g, w = flat(got), flat(want)
    assert g.keys() == w.keys()
    for key, value in w.items():
        if isinstance(value, float) and isinstance(g[key], float):
            assert math.isclose(g[key], value, rel_tol=1e-12, abs_tol=0.0), key
        else:
            assert g[key] == value, key


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


@pytest.mark.parametrize(
    ("writer", "run_id", "has_server"),
    [(write_hook_scenario, HOOK_RUN_ID, True), (write_scenario, RUN_ID, False)],
)
def test_database_itl_aggregations_equal_the_reports_figures(
    tmp_path: Path, writer: Any, run_id: str, has_server: bool
) -> None:
    duck = writer(tmp_path / "spans.duckdb")
    with open_store(duck) as store:
        metrics = report_from_data(extract_run_data(store, run_id))["metrics"]
    with open_store(load_chdb(duck)) as store:
        figures = {
            "client": {
                "itl_ms": client_itl_summary(store, run_id).to_dict(),
                "itl_per_request": client_itl_per_request(store, run_id),
            },
            "server": {
                "itl_ms": server_itl_summary(store, run_id).to_dict(),
                "itl_per_request": server_itl_per_request(store, run_id),
            },
        }
    assert figures["client"]["itl_ms"]["count"] > 0
    assert_close(
        figures["client"], {k: metrics["client"][k] for k in ("itl_ms", "itl_per_request")}
    )
    if has_server:
        assert_close(
            figures["server"], {k: metrics["server"][k] for k in ("itl_ms", "itl_per_request")}
        )
    else:  # no hook spans: nothing to aggregate, and the report has no server ITL either
        assert "itl_ms" not in (metrics.get("server") or {})
        assert figures["server"]["itl_ms"]["count"] == 0
        assert figures["server"]["itl_per_request"]["jitter_ms"] == {
            "count": 0,
            "p50": None,
            "p95": None,
            "p99": None,
        }
    json.dumps(figures)  # report-ready: plain JSON values


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


def test_client_itl_in_the_database_matches_the_report_on_random_chunks(tmp_path: Path) -> None:
    """80 requests with random chunk offsets and token counts (0 to 3 per chunk, seeded), some
    failed: the database's Option B figures equal the report's."""
    rng = np.random.default_rng(5)
    s = SpanWriter(tmp_path / "s.duckdb")
    s.run_span("rnd", MANIFEST, T0_NS, 60_000 * MS)
    for i in range(1, 81):
        n = int(rng.integers(1, 40))
        offsets = np.cumsum(rng.integers(0, 30_000, size=n)) + 10_000
        s.client_span(
            run_id="rnd", trace_id=trace(i), span_id=span(i), submit_ns=T0_NS + i * MS,
            end_offset_us=int(offsets[-1]) + 1000, chunk_offsets_us=offsets.tolist(),
            chunk_tokens=rng.integers(0, 4, size=n).tolist(), index=i,
            error_type="timeout" if i % 9 == 0 else None,
        )  # fmt: skip
    s.close()
    with open_store(tmp_path / "s.duckdb") as store:
        client = report_from_data(extract_run_data(store, "rnd"))["metrics"]["client"]
    with open_store(load_chdb(tmp_path / "s.duckdb")) as store:
        got = {
            "itl_ms": client_itl_summary(store, "rnd").to_dict(),
            "itl_per_request": client_itl_per_request(store, "rnd"),
        }
    assert got["itl_ms"]["count"] > 500
    assert_close(got, {k: client[k] for k in ("itl_ms", "itl_per_request")})
