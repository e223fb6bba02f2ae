"""The ClickHouse dialect on chdb gives the same records and the same report as DuckDB, whatever
spelling of kinds and statuses the store holds.

Every scenario is written once as a real DuckDB store (``spanstore``), copied row for row into
chdb in the OTel Collector ClickHouse exporter's ``otel_traces`` schema (``clickhouse_store``),
and extracted through both dialects; the records must be identical field by field (dtypes too)
and ``report_from_data`` must render the same JSON. Each scenario is also held in the other shapes
a store comes in (``tests/fixtures/exporter_rows.py``): chdb rows as the exporter inserts them
today (``Server``, ``Error``), and an old store with the spellings the exporter and otelbench wrote
before August 2024 (``SPAN_KIND_SERVER``, ``STATUS_CODE_ERROR``), as a DuckDB file and copied into
chdb; all give the same records, report and live requests.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import fields
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench import semconv
from otelbench.live.query import extract_window
from otelbench.query import (
    RunData,
    extract_run_data,
    get_dialect,
    list_runs,
    open_store,
)
from otelbench.query.extract import NAME_PARAMETERS, PATTERN_PARAMETERS
from otelbench.report import render_json
from otelbench.report.build import report_from_data
from otelbench.store import SpanStore
from tests.fixtures.exporter_rows import with_legacy_spellings
from tests.unit.query.clickhouse_store import chdb_session, load_chdb, load_chdb_as_exporter
from tests.unit.query.spanstore import (
    HOOK_RUN_ID,
    MANIFEST,
    MS,
    T0_NS,
    SpanWriter,
    preemption,
    resumption,
    span,
    trace,
    write_hook_scenario,
    write_scenario,
)
from tests.unit.report.test_guardrails import write_guarded

HOUR_NS = 3600 * 1000 * MS
"""The live windows' reach on either side of T0 (the windows' default lookback too)."""


def write_mixed(path: Path) -> Path:
    """Run m1 with every corner the SQL handles: warm-up/probe/measure phases, a think phase, a
    span without chunk token counts, a failed request, hook spans with and without offsets or
    preemption counter, a gateway between client and server, and live traffic: root spans (a
    hook span and vLLM's llm_request span of the same request id), a span behind a gateway of no
    otelbench client, and tricky attribute text (quotes, backslashes, tabs, unicode)."""
    s = SpanWriter(path)
    manifest = {**MANIFEST, "id": "m1", "notes": ['it\'s \\ a "note"\twith tab', "ünïcode"]}
    s.run_span("m1", manifest, T0_NS, 3000 * MS)
    phases = [semconv.PHASE_WARMUP, semconv.PHASE_PROBE, semconv.PHASE_MEASURE, None, None, None]
    for i, phase in enumerate(phases, start=1):
        extra: dict[str, Any] = {semconv.REQUEST_PHASE: phase} if phase is not None else {}
        if i == 4:
            extra[semconv.CLIENT_THINK_PHASE] = semconv.THINK_PHASE_ENDED
            extra[semconv.CLIENT_OUTPUT_PHASE_CHUNK] = 1
            extra[semconv.REQUEST_CLASS] = "long 'quoted' \\ class"
        s.client_span(
            run_id="m1",
            trace_id=trace(i),
            span_id=span(i),
            submit_ns=T0_NS + i * 100 * MS,
            end_offset_us=90_000 + i,
            chunk_offsets_us=[10_000 + i, 20_000, 45_000],
            chunk_tokens=None if i == 5 else [1, 2, 1],
            chunk_token_source=None if i == 5 else semconv.CHUNK_TOKENS_FROM_USAGE,
            input_tokens=30 + i,
            output_tokens=None if i == 5 else 4,
            error_type="timeout" if i == 6 else None,
            index=i,
            extra=extra,
        )
    # measured request 3: hook span with preemptions; request 4: behind the gateway, hook span
    # without offsets or counter; request 5: only llm_request; request 6: hook span and a
    # later llm_request (the hook span wins)
    s.hook_span(
        trace_id=trace(3),
        span_id=span(33),
        parent_span_id=span(3),
        start_ns=T0_NS + 301 * MS,
        token_offsets_us=[7_000, 9_500, 9_500, 30_250, 41_000],
        ttft_s="0.007",
        e2e_s="0.05",
        queue_s="0.001",
        prefill_s="0.006",
        decode_s="0.034",
        prompt_tokens=33,
        preemptions=1,
        events=[preemption(T0_NS + 310 * MS, 2, 17), resumption(T0_NS + 320 * MS, 10_750)],
        output_phase_token=1,
    )
    s.span(
        trace_id=trace(4),
        span_id=span(400),
        parent_span_id=span(4),
        name=semconv.SPAN_GATEWAY_REQUEST,
        kind=semconv.SPAN_KIND_SERVER,
        start_ns=T0_NS + 401 * MS,
        duration_ns=80 * MS,
        attributes={},
        service=semconv.SERVICE_GATEWAY,
    )
    s.hook_span(
        trace_id=trace(4),
        span_id=span(44),
        parent_span_id=span(400),
        start_ns=T0_NS + 402 * MS,
        token_offsets_us=None,
        ttft_s="0.01",
        e2e_s="0.07",
        queue_s="2.5e-03",
        prefill_s="0.0075",
        decode_s="0.06",
        prompt_tokens=34,
        preemptions=None,
    )
    s.server_span(
        trace_id=trace(5),
        span_id=span(55),
        parent_span_id=span(5),
        start_ns=T0_NS + 501 * MS,
        ttft_s="0.087568",
        e2e_s="0.137253",
        queue_s="0.002",
        prefill_s="0.009",
        decode_s="0.069",
        prompt_tokens=35,
        completion_tokens=3,
    )
    s.hook_span(
        trace_id=trace(6),
        span_id=span(66),
        parent_span_id=span(6),
        start_ns=T0_NS + 601 * MS,
        token_offsets_us=[5_000],
        ttft_s="0.005",
        e2e_s="0.09",
        queue_s="0.001",
        prefill_s="0.004",
        decode_s="0",
        prompt_tokens=36,
    )
    s.server_span(
        trace_id=trace(6),
        span_id=span(67),
        parent_span_id=span(6),
        start_ns=T0_NS + 602 * MS,
        ttft_s="0.5",
        e2e_s="0.6",
        queue_s="0.1",
        prefill_s="0.4",
        decode_s="0.1",
        prompt_tokens=36,
        completion_tokens=1,
    )
    # live traffic: a root hook span and vLLM's root llm_request span of the same request
    s.hook_span(
        trace_id=trace(70),
        span_id=span(70),
        parent_span_id="",
        start_ns=T0_NS + 2000 * MS,
        token_offsets_us=[1_000, 2_000],
        ttft_s="0.001",
        e2e_s="0.003",
        queue_s="0",
        prefill_s="0.001",
        decode_s="0.001",
        prompt_tokens=8,
        request_id="live-x",
    )
    s.server_span(
        trace_id=trace(71),
        span_id=span(71),
        parent_span_id="",
        start_ns=T0_NS + 1999 * MS,
        ttft_s="0.001",
        e2e_s="0.003",
        queue_s="0",
        prefill_s="0.001",
        decode_s="0.001",
        prompt_tokens=8,
        completion_tokens=2,
        request_id="live-x",
    )
    # live traffic behind a gateway whose parent is not an otelbench client span
    s.span(
        trace_id=trace(80),
        span_id=span(800),
        parent_span_id=span(899),
        name=semconv.SPAN_GATEWAY_REQUEST,
        kind=semconv.SPAN_KIND_SERVER,
        start_ns=T0_NS + 2500 * MS,
        duration_ns=10 * MS,
        attributes={},
        service=semconv.SERVICE_GATEWAY,
    )
    s.server_span(
        trace_id=trace(80),
        span_id=span(81),
        parent_span_id=span(800),
        start_ns=T0_NS + 2501 * MS,
        ttft_s="0.002",
        e2e_s="0.009",
        queue_s="0.0005",
        prefill_s="0.0015",
        decode_s="0.007",
        prompt_tokens=9,
        completion_tokens=4,
        request_id="live-y",
    )
    s.close()
    return path


SCENARIOS: dict[str, Callable[[Path], Path]] = {
    "scenario": write_scenario,
    "scenario-no-server": lambda p: write_scenario(p, with_server=False),
    "hooks": write_hook_scenario,
    "guardrails": write_guarded,
    "guardrails-no-stage-totals": lambda p: write_guarded(p, stage_totals=False),
    "mixed": write_mixed,
}
JSON_SCENARIOS = ("hooks", "guardrails", "mixed")
"""The scenarios also held in the exporter's json mode: between them every attribute value type
otelbench reads (strings with tricky text, integers, doubles, arrays, the hooks' offsets and the
guardrails' stage totals). The json view (``_otel_traces_json.sql``) reads each attribute the
same way whatever the scenario, and each scenario in it costs ~8 s of chdb here; the others
differ from these by missing spans, which the map shapes cover."""


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each scenario as a DuckDB file and as a chdb database with the same rows."""
    out = {}
    for name, write in SCENARIOS.items():
        duck = write(tmp_path_factory.mktemp(name) / "spans.duckdb")
        out[name] = (duck, load_chdb(duck))
    return out


@pytest.fixture(scope="module")
def spellings(stores: dict[str, tuple[Path, str]]) -> dict[str, dict[str, Path | str]]:
    """Each scenario in the other shapes a store may hold it: ``exporter``, chdb rows as the
    collector's ClickHouse exporter inserts them (current spellings, its DDL for this engine);
    ``exporter-json`` (:data:`JSON_SCENARIOS`), as its json mode creates the table and inserts
    them (typed attributes);
    ``legacy-duckdb``, the DuckDB store with the pre-August-2024 spellings; ``legacy-chdb``, that
    copied into chdb."""
    out: dict[str, dict[str, Path | str]] = {}
    for name, (duck, _) in stores.items():
        legacy = with_legacy_spellings(duck, duck.with_name("legacy.duckdb"))
        out[name] = {"exporter": load_chdb_as_exporter(duck)}
        if name in JSON_SCENARIOS:
            out[name]["exporter-json"] = load_chdb_as_exporter(duck, json_schema=True)
        out[name] |= {"legacy-duckdb": legacy, "legacy-chdb": load_chdb(legacy)}
    return out


def assert_same_records(a: object, b: object, where: str) -> None:
    assert type(a) is type(b)
    for f in fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), (where, f.name)
            assert x.dtype == y.dtype, (where, f.name, x.dtype, y.dtype)
            np.testing.assert_array_equal(x, y, err_msg=f"{where}.{f.name}")
        else:
            assert x == y, (where, f.name, x, y)


def assert_same_run_data(a: RunData, b: RunData) -> None:
    assert a.run == b.run
    assert_same_records(a.client, b.client, "client")
    assert_same_records(a.server, b.server, "server")
    assert_same_records(a.guardrails, b.guardrails, "guardrails")
    assert a.server_sources == b.server_sources


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_both_dialects_extract_the_same_records_and_report(
    stores: dict[str, tuple[Path, str]],
    spellings: dict[str, dict[str, Path | str]],
    name: str,
) -> None:
    """DuckDB against chdb, and against every other shape of the same store (``spellings``):
    the same runs, records, report.json text and live requests."""
    duck, url = stores[name]
    with ExitStack() as stack:
        d = stack.enter_context(open_store(duck))
        others = {"chdb": stack.enter_context(open_store(url))}
        for shape, store in spellings[name].items():
            others[shape] = stack.enter_context(open_store(store))
        assert d.dialect.name == "duckdb"
        assert others["chdb"].dialect.name == others["exporter"].dialect.name == "clickhouse"
        runs = list_runs(d)
        assert runs
        for shape, c in others.items():
            assert list_runs(c) == runs, shape
            for run in runs:
                a = extract_run_data(d, run.run_id)
                b = extract_run_data(c, run.run_id)
                assert_same_run_data(a, b)
                assert render_json(report_from_data(a)) == render_json(report_from_data(b)), shape
            wide = (T0_NS - HOUR_NS, T0_NS + HOUR_NS)
            windows = [wide, (T0_NS, T0_NS + 2000 * MS), (T0_NS + 2000 * MS, T0_NS + HOUR_NS)]
            for start, end in windows:
                live_d = extract_window(d, start_unix_ns=start, end_unix_ns=end)
                live_c = extract_window(c, start_unix_ns=start, end_unix_ns=end)
                where = f"{shape} window[{start}, {end})"
                assert_same_records(live_d.requests, live_c.requests, where)
                assert live_d.source == live_c.source, where
                assert live_d.request_class == live_c.request_class, where
                assert live_d.ok.tolist() == live_c.ok.tolist(), where


def test_the_shapes_hold_each_spelling(
    stores: dict[str, tuple[Path, str]], spellings: dict[str, dict[str, Path | str]]
) -> None:
    """So that the comparison above compares spellings: the exporter's rows and otelbench's own
    stores hold the current ones, the old stores the old ones, and the requests are there."""
    duck, url = stores["mixed"]
    shapes = spellings["mixed"]
    current = {
        (semconv.SPAN_KIND_CLIENT, semconv.STATUS_ERROR),
        (semconv.SPAN_KIND_CLIENT, semconv.STATUS_UNSET),
        (semconv.SPAN_KIND_INTERNAL, semconv.STATUS_UNSET),
        (semconv.SPAN_KIND_SERVER, semconv.STATUS_UNSET),
    }
    legacy = {
        (semconv.SPAN_KIND_CLIENT_LEGACY, semconv.STATUS_ERROR_LEGACY),
        (semconv.SPAN_KIND_CLIENT_LEGACY, semconv.STATUS_UNSET_LEGACY),
        (semconv.SPAN_KIND_INTERNAL_LEGACY, semconv.STATUS_UNSET_LEGACY),
        (semconv.SPAN_KIND_SERVER_LEGACY, semconv.STATUS_UNSET_LEGACY),
    }
    for shape, store, expected in (
        ("duckdb", duck, current),
        ("chdb", url, current),
        ("exporter", shapes["exporter"], current),
        ("legacy-duckdb", shapes["legacy-duckdb"], legacy),
        ("legacy-chdb", shapes["legacy-chdb"], legacy),
    ):
        assert _kinds_and_statuses(store) == expected, shape
    with open_store(shapes["legacy-chdb"]) as c:
        data = extract_run_data(c, "m1")
    assert data.client.ok.tolist() == [True, True, True, False]  # STATUS_CODE_ERROR read as Error
    assert data.server.span_id == (span(33), span(44), span(55), span(66))


def _kinds_and_statuses(store: Path | str) -> set[tuple[str, str]]:
    """The (SpanKind, StatusCode) pairs a store holds."""
    sql = 'SELECT DISTINCT "SpanKind", "StatusCode" FROM otel_traces'
    if isinstance(store, Path):
        with SpanStore.open(store, read_only=True) as duck:
            return {(str(k), str(s)) for k, s in duck.execute(sql)}
    database = store.rsplit("database=", 1)[1]
    with chdb_session() as session:
        text = session.query(sql.replace("otel_traces", f"{database}.otel_traces"), "TSV")
    return {(k, s) for k, s in (line.split("\t") for line in text.bytes().decode().splitlines())}


def test_the_comparison_sees_real_data(stores: dict[str, tuple[Path, str]]) -> None:
    """Hand-checked values through chdb, so two equally wrong dialects cannot pass."""
    _, url = stores["mixed"]
    with open_store(url) as c:
        data = extract_run_data(c, "m1")
        window = extract_window(c, start_unix_ns=T0_NS - HOUR_NS, end_unix_ns=T0_NS + HOUR_NS)
    assert data.run.manifest["notes"] == ['it\'s \\ a "note"\twith tab', "ünïcode"]
    assert data.client.span_id == (span(3), span(4), span(5), span(6))
    assert data.client.request_class[1] == "long 'quoted' \\ class"
    assert data.client.think_phase == (None, semconv.THINK_PHASE_ENDED, None, None)
    assert data.client.chunk_tokens.tolist() == [1, 2, 1] * 2 + [1, 1, 1] + [1, 2, 1]
    assert data.client.chunk_token_source[2] == semconv.CHUNK_TOKENS_ONE_PER_CHUNK
    assert np.isnan(data.client.output_tokens[2])
    assert data.client.ok.tolist() == [True, True, True, False]
    assert data.client.error_type == (None, None, None, "timeout")
    assert data.client.finish_reasons == (("length",), ("length",), ("length",), ())
    s = data.server
    assert s.span_id == (span(33), span(44), span(55), span(66))
    assert s.parent_span_id == (span(3), span(4), span(5), span(6))
    assert s.client_index.tolist() == [0, 1, 2, 3]
    assert s.token_offsets(0).tolist() == [7_000, 9_500, 9_500, 30_250, 41_000]
    assert s.token_offsets(1).tolist() == []
    assert s.stalls(0).tolist() == [10_750]
    assert s.kv_tokens_discarded[0] == 17.0
    assert s.preemption_events.tolist()[:2] == [1.0, 0.0]
    assert np.isnan(s.preemptions[1])
    assert np.isnan(s.preemption_events[2])
    assert s.queue_s[1] == 0.0025
    # decimal text parsed with correct rounding (ClickHouse's default parser gives
    # 0.08756800000000001 and 0.13725300000000001 here)
    assert s.ttft_s[2] == 0.087568
    assert s.e2e_s[2] == 0.137253
    assert s.output_phase_token[0] == 1.0
    # live: the root hook span wins over llm_request of the same request id; the span behind a
    # gateway of no otelbench client is live too
    live = window.mask(semconv.SOURCE_LIVE)
    assert np.array(window.requests.span_id)[live].tolist() == [span(70), span(81)]
    assert window.requests.client_index.tolist() == [-1] * len(window)


# --- the SQL files ------------------------------------------------------------------------------

VALUE_PARAMETERS = {"run_id"}
# run_target_span_count binds semconv.SERVICE_CLIENT itself (otelbench.query.clickhouse)
CLICKHOUSE_VALUE_PARAMETERS = {"service_client"}
CLICKHOUSE_ONLY = {"run_target_span_count.sql"}


def _sql_names(dialect: str) -> list[str]:
    """The dialect's named queries (``_NAME.sql`` files are fragments they include)."""
    sql_dir = files("otelbench.query") / "sql" / dialect
    return sorted(p.name for p in sql_dir.iterdir() if p.name.endswith(".sql") and p.name[0] != "_")


def test_every_named_query_exists_in_clickhouse_with_semconv_parameters_only() -> None:
    import otelbench.query.clickhouse  # noqa: F401  (registers the dialect)

    names = _sql_names("clickhouse")
    assert set(_sql_names("duckdb")) <= set(names)
    assert set(names) - set(_sql_names("duckdb")) == CLICKHOUSE_ONLY
    dialect = get_dialect("clickhouse")
    for name in names:
        text = re.sub(r"--[^\n]*", "", dialect.sql(name.removesuffix(".sql")))
        params = set(dialect.parameters.findall(text))
        known = NAME_PARAMETERS.keys() | PATTERN_PARAMETERS.keys() | VALUE_PARAMETERS
        assert params <= known | CLICKHOUSE_VALUE_PARAMETERS, name
        assert "$" not in text, name
        assert "gen_ai." not in text, name
        assert "otelbench." not in text, name
        # one ClickHouse type per parameter name
        typed = set(re.findall(r"\{([A-Za-z_]\w*):([^}]+)\}", text))
        assert len({p for p, _ in typed}) == len(typed), (name, typed)


def test_a_clickhouse_only_query_on_duckdb_is_a_store_error(
    stores: dict[str, tuple[Path, str]],
) -> None:
    from otelbench.errors import StoreError
    from otelbench.query.clickhouse import run_target_span_count

    with (
        open_store(stores["hooks"][0]) as d,
        pytest.raises(StoreError, match="no duckdb SQL for query 'run_target_span_count'"),
    ):
        run_target_span_count(d, HOOK_RUN_ID)


def test_parameters_reach_chdb_unchanged() -> None:
    """The TSV escaping of ``{name:Type}`` values: every tricky string survives the round trip."""
    from otelbench.query.extract import arrow_columns
    from otelbench.store.clickhouse import ChdbConnection, escape_parameter
    from tests.unit.query.clickhouse_store import chdb_session

    values = ["plain", "it's", 'a "q"', "back\\slash", "tab\there", "new\nline", "cr\rx", "ü€", ""]
    with chdb_session() as session:
        conn = ChdbConnection(session, "default")
        for v in values:
            cols = arrow_columns(
                conn.query_arrow("SELECT {v:String} AS v, length({v:String}) AS n", {"v": v}, "t")
            )
            assert cols["v"].tolist() == [v]
            assert cols["n"].tolist() == [len(v.encode())]
        cols = arrow_columns(
            conn.query_arrow(
                "SELECT {n:Nullable(Int64)} IS NULL AS a, {i:Nullable(Int64)} AS i, "
                "{l:Array(Float64)} AS l, {s:Array(String)} AS s",
                {"n": None, "i": -7, "l": [0.5, 0.999], "s": ["a'b", "c\\d"]},
                "t",
            )
        )
    assert cols["a"].tolist() == [1]
    assert cols["i"].tolist() == [-7]
    assert cols["l"][0].tolist() == [0.5, 0.999]
    assert cols["s"][0].tolist() == ["a'b", "c\\d"]
    assert escape_parameter(None) == "\\N"


def _as_lists(column: object) -> list[object]:
    """A fetched column as Python lists: list columns row by row (object array or the flat
    ListColumn the dialects' fetch gives)."""
    from otelbench.query.extract import ListColumn

    if isinstance(column, ListColumn):
        return [row.tolist() for row in column]
    rows = np.ma.asarray(column).tolist()
    return [row.tolist() if isinstance(row, np.ndarray) else row for row in rows]


def test_clickhouse_connect_binds_every_query_as_chdb_runs_it(
    stores: dict[str, tuple[Path, str]],
) -> None:
    """The server path's query building, without a server: clickhouse-connect's own binding of
    each named query (the HTTP ``param_*`` values it would send) run on chdb gives the same
    columns as our binding."""
    from clickhouse_connect.driver.binding import bind_query

    from otelbench.query.extract import arrow_columns
    from otelbench.store.clickhouse import ChdbConnection

    rows: dict[str, int] = {}
    for store, run_id in (("mixed", "m1"), ("guardrails", "r1"), ("hooks", HOOK_RUN_ID)):
        with open_store(stores[store][1]) as runner:
            dialect = runner.dialect
            conn = runner.connection
            assert isinstance(conn, ChdbConnection)
            values: dict[str, object] = {
                "run_id": run_id,
                "service_client": semconv.SERVICE_CLIENT,
            }
            for name in _sql_names("clickhouse"):
                query = name.removesuffix(".sql")
                sql = dialect.sql(query)
                wanted = set(dialect.parameters.findall(re.sub(r"--[^\n]*", "", sql)))
                params = {k: {**NAME_PARAMETERS, **PATTERN_PARAMETERS, **values}[k] for k in wanted}
                bound_sql, http_params = bind_query(sql, params)
                assert bound_sql == sql  # server-side binding: the text is sent unchanged
                assert set(http_params) == {f"param_{k}" for k in params}
                server_side = {k.removeprefix("param_"): v for k, v in http_params.items()}
                theirs = arrow_columns(conn.session.query(sql, "ArrowTable", params=server_side))
                ours = runner.run(query, **{k: v for k, v in values.items() if k in wanted})
                assert theirs.keys() == ours.keys(), query
                rows[query] = rows.get(query, 0) + len(next(iter(ours.values())))
                for col in ours:
                    assert repr(_as_lists(theirs[col])) == repr(_as_lists(ours[col])), (query, col)
    assert len(rows) == len(_sql_names("clickhouse")) == 7
    assert all(n > 0 for n in rows.values()), rows
