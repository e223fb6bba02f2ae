"""Every ClickHouse panel query (and the ``run`` variable's query) of the committed dashboards runs
on chdb over spans as the collector's ClickHouse exporter writes them and returns the rows worked
out by hand below; an old store (the spellings of kinds and statuses before August 2024) and
otelbench's own rows give every query the same rows.

The queries are read from the committed JSON (``dashboards/json``) and expanded as the ClickHouse
plugin and Grafana would (:mod:`otelbench.dashboards.macros`): ``$__timeFilter_ms(Timestamp)``
with the range [T0 - 1 h, T0 + 1 h], ``$__timeInterval`` with a 1-hour interval, ``run`` = ``mid``
(``${run:singlequote}`` -> ``'mid'``), ``slo_ttft_ms`` = 300, ``slo_tpot_ms`` = 50.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelbench import semconv
from otelbench.dashboards.macros import expand_clickhouse
from otelbench.dashboards.names import DATASOURCE_CLICKHOUSE
from otelbench.dashboards.push import for_traces_schema
from otelbench.store.clickhouse import ChdbConnection
from tests.fixtures.exporter_rows import with_legacy_spellings
from tests.unit.query.clickhouse_store import chdb_session, load_chdb, load_chdb_as_exporter
from tests.unit.query.spanstore import MANIFEST, MS, T0_NS, SpanWriter, span, trace

REPO = Path(__file__).resolve().parents[2]
JSON_DIR = REPO / "dashboards" / "json"
VARIABLES = {"run": "mid", "slo_ttft_ms": "300", "slo_tpot_ms": "50"}
T0_MS = T0_NS // MS

# run id -> (offered rate, duration s, deviations, [(ttft ms, end ms, ok)])
RUNS: dict[str, tuple[float, float, list[str], list[tuple[int, int, bool]]]] = {
    "lo": (1.0, 2.0, [], [(100, 300, True), (200, 400, True)]),
    "mid": (2.0, 1.0, ["no warm-up"], [(150, 500, True), (250, 500, True)]),
    "hi": (4.0, 1.0, [], [(300, 1000, True), (400, 1000, True), (500, 2000, True), (0, 50, False)]),
}


def _write_spans(path: Path) -> Path:
    store = SpanWriter(path)
    n = 0
    for k, (run_id, (rate, duration_s, deviations, requests)) in enumerate(RUNS.items()):
        start = T0_NS + k * 10_000 * MS
        manifest = {
            **MANIFEST,
            "id": run_id,
            "load": {
                "mode": "poisson",
                "requests": len(requests),
                "rate": rate,
                "concurrency": None,
            },
            "duration_s": duration_s,
            "deviations": deviations,
        }
        store.run_span(run_id, manifest, start, int(duration_s * 1000) * MS)
        for ttft_ms, end_ms, ok in requests:
            n += 1
            offsets = [ttft_ms * 1000 + j * 20_000 for j in range(3)] if ok else None
            store.client_span(
                run_id=run_id,
                trace_id=trace(n),
                span_id=span(n),
                submit_ns=start + n * MS,
                end_offset_us=end_ms * 1000,
                chunk_offsets_us=offsets,
                chunk_tokens=[1, 1, 1] if ok else None,
                input_tokens=10,
                output_tokens=3 if ok else None,
                error_type=None if ok else "504",
                index=n,
            )
    # Serving: requests 1 and 2 (run lo) reached vLLM with the hooks; request 1 also has vLLM's
    # own llm_request span (the hook span must win) and guardrail filter spans in its trace.
    for n, offsets, e2e, queue in (
        (1, [100_000, 120_000, 160_000, 1_260_000], "1.3", "0.02"),
        (2, [50_000, 60_000], "0.3", "0.01"),
    ):
        store.hook_span(
            trace_id=trace(n),
            span_id=span(100 + n),
            parent_span_id=span(n),
            start_ns=T0_NS + n * MS + MS,
            token_offsets_us=offsets,
            ttft_s=str(offsets[0] / 1e6),
            e2e_s=e2e,
            queue_s=queue,
            prefill_s="0.08",
            decode_s=str((offsets[-1] - offsets[0]) / 1e6),
            prompt_tokens=10,
            preemptions=1 if n == 1 else 0,
        )
    # Requests the engine did not finish (hook spans as the hooks end them): request 3 (run mid)
    # cancelled in decode after 2 tokens (engine account: 10 prompt, 3 output tokens, 0.25 s in
    # the engine), request 4 cancelled in the queue, request 8 (hi, failed 504) an engine error
    # in prefill (6 prompt tokens processed, 0.125 s); none is in the anatomy's means or gaps.
    for n, end, offsets, computed, generated, inference in (
        (3, ("cancelled", "decode"), [30_000, 40_000], 10, 3, "0.25"),
        (4, ("cancelled", "queue"), [], 0, 0, None),
        (8, ("error", "prefill"), [], 6, 0, "0.125"),
    ):
        extra: dict[str, object] = {
            semconv.SERVER_END_REASON: end[0],
            semconv.SERVER_END_PHASE: end[1],
            semconv.SERVER_PROMPT_TOKENS_COMPUTED: computed,
            semconv.SERVER_OUTPUT_TOKENS_GENERATED: generated,
        }
        if inference is not None:
            extra[semconv.VLLM_LATENCY_INFERENCE] = inference
        store.hook_span(
            trace_id=trace(n),
            span_id=span(100 + n),
            parent_span_id=span(n),
            start_ns=T0_NS + 10_000 * MS + n * MS + MS,
            token_offsets_us=offsets,
            ttft_s="0.03",
            e2e_s="0.5",
            queue_s="0.4",
            prefill_s="0.02",
            decode_s=None,
            prompt_tokens=10,
            finish_reason="abort" if end[0] == "cancelled" else "error",
            extra=extra,
            status=semconv.STATUS_ERROR if end[0] == "error" else semconv.STATUS_UNSET,
        )
    store.server_span(
        trace_id=trace(1),
        span_id=span(201),
        parent_span_id=span(1),
        start_ns=T0_NS + 2 * MS,
        ttft_s="0.5",
        e2e_s="9.0",
        queue_s="5.0",
        prefill_s="0.5",
        decode_s="3.5",
        prompt_tokens=10,
        completion_tokens=4,
    )
    for stage, name, busy_us, decision in (
        (semconv.GUARDRAIL_STAGE_INPUT, "blocklist", 2000, semconv.DECISION_ALLOW),
        (semconv.GUARDRAIL_STAGE_OUTPUT, "pii", 3000, semconv.DECISION_REDACT),
    ):
        store.span(
            trace_id=trace(1),
            span_id=span(300 + busy_us),
            parent_span_id=span(1),
            name=semconv.SPAN_GUARDRAIL_FILTER,
            kind=semconv.SPAN_KIND_INTERNAL,
            start_ns=T0_NS + 2 * MS,
            duration_ns=busy_us * 1000,
            service=semconv.SERVICE_GUARDRAILS,
            attributes={
                semconv.GUARDRAIL_STAGE: stage,
                semconv.GUARDRAIL_FILTER_NAME: name,
                semconv.GUARDRAIL_FILTER_TYPE: name,
                semconv.GUARDRAIL_DECISION: decision,
                semconv.GUARDRAIL_INVOCATIONS: 1 if stage == "input" else 3,
                semconv.GUARDRAIL_BUSY_US: busy_us,
            },
        )
    store.close()
    return path


def _sql_queries(schema: str = "map") -> dict[str, str]:
    """Every ClickHouse SQL of the committed dashboards, as ``otelbench dashboards push
    --traces-schema SCHEMA`` pushes them: "<dashboard>/<panel title>" -> rawSql (variables:
    "<dashboard>/$<name>")."""
    out: dict[str, str] = {}
    for path in sorted(JSON_DIR.glob("*.json")):
        model = for_traces_schema(json.loads(path.read_text(encoding="utf-8")), schema)
        for panel in model["panels"]:
            for target in panel.get("targets", []):
                if target["datasource"]["uid"] == DATASOURCE_CLICKHOUSE:
                    out[f"{path.stem}/{panel['title']}/{target['refId']}"] = target["rawSql"]
        for variable in model.get("templating", {}).get("list", []):
            if variable.get("datasource", {}).get("uid") == DATASOURCE_CLICKHOUSE:
                out[f"{path.stem}/${variable['name']}"] = variable["query"]["rawSql"]
    return out


SQL = _sql_queries()
SQL_JSON = _sql_queries("json")


def _run_queries(url: str, queries: dict[str, str] = SQL) -> dict[str, list[dict[str, Any]]]:
    """Every query's rows (as dicts) on the chdb store at ``url``."""
    database = url.rsplit("database=", 1)[1]
    results: dict[str, list[dict[str, Any]]] = {}
    with chdb_session() as session:
        connection = ChdbConnection(session, database)
        session.query(f"USE {database}", "CSV")
        for key, raw in queries.items():
            sql = expand_clickhouse(
                raw,
                from_ms=T0_MS - 3_600_000,
                to_ms=T0_MS + 3_600_000,
                interval_s=3600,
                variables=VARIABLES,
            )
            results[key] = connection.query_arrow(sql, {}, key).to_pylist()
    return results


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The spans as chdb stores of each shape: ``copy``, otelbench's rows copied from the DuckDB
    store; ``exporter``, inserted as the collector's ClickHouse exporter inserts them (its DDL and
    values, ``tests/fixtures/exporter_rows.py``); ``exporter-json``, as its json mode creates the
    table and inserts them (typed attributes); ``legacy``, with the kind and status spellings
    written before August 2024 (``SPAN_KIND_SERVER``, ``STATUS_CODE_ERROR``)."""
    duck = _write_spans(tmp_path_factory.mktemp("dash") / "spans.duckdb")
    legacy = with_legacy_spellings(duck, duck.with_name("legacy.duckdb"))
    return {
        "copy": load_chdb(duck),
        "exporter": load_chdb_as_exporter(duck),
        "exporter-json": load_chdb_as_exporter(duck, json_schema=True),
        "legacy": load_chdb(legacy),
    }


@pytest.fixture(scope="module")
def chdb_rows(shapes: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Every query's rows (as dicts), run once on the exporter-shaped chdb store."""
    return _run_queries(shapes["exporter"])


def test_every_query_returns_the_same_rows_from_each_shape_of_store(
    shapes: dict[str, str], chdb_rows: dict[str, list[dict[str, Any]]]
) -> None:
    """An old store (pre-August-2024 spellings) and otelbench's own rows give every panel the
    rows the exporter's rows give (the slowest requests' status in the current spelling), and so
    does a table of the exporter's json mode, read as the pushed queries read it."""
    for shape in ("copy", "legacy"):
        rows = _run_queries(shapes[shape])
        for key in SQL:
            assert rows[key] == chdb_rows[key], (shape, key)
    # the json mode's table, through the queries as push --traces-schema json sends them
    assert SQL_JSON.keys() == SQL.keys()
    assert all(SQL_JSON[key] != SQL[key] for key in SQL if "FROM otel_traces" in SQL[key])
    rows = _run_queries(shapes["exporter-json"], SQL_JSON)
    for key in SQL:
        assert rows[key] == chdb_rows[key], ("exporter-json", key)
    assert {r["status"] for r in chdb_rows["request-anatomy/Slowest requests/A"]} == {
        semconv.STATUS_UNSET,
        semconv.STATUS_ERROR,  # request 8's engine error, whichever spelling the store holds
    }


def test_the_dashboards_have_the_expected_sql_queries() -> None:
    assert sorted(SQL) == [
        "benchmark-runs/$run",
        "benchmark-runs/Capacity under the SLO/A",
        "benchmark-runs/Knee (max throughput / p99 latency)/A",
        "benchmark-runs/Run ${run}: TTFT and end-to-end latency per request/A",
        "benchmark-runs/Runs compared: load, throughput, latency, verdicts/A",
        "benchmark-runs/Throughput-latency curve (one point per run)/A",
        "request-anatomy/Engine work nobody read, by end reason and phase/A",
        "request-anatomy/Guardrail filters/A",
        "request-anatomy/Per-token stalls (gap between output-token steps, ms)/A",
        "request-anatomy/Request anatomy: mean seconds per request by phase/A",
        "request-anatomy/Requests the engine did not finish, per interval/A",
        "request-anatomy/Slowest requests/A",
    ]


@pytest.mark.parametrize("key", sorted(SQL))
def test_every_sql_query_returns_rows(chdb_rows: dict[str, list[dict[str, Any]]], key: str) -> None:
    assert chdb_rows[key], f"{key} returned no row"


def test_run_variable_lists_runs_newest_first(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    assert chdb_rows["benchmark-runs/$run"] == [{"run_id": r} for r in ("hi", "mid", "lo")]


def test_runs_table_compares_runs(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    rows = chdb_rows["benchmark-runs/Runs compared: load, throughput, latency, verdicts/A"]
    got = {
        r["run_id"]: (
            r["offered_rps"],
            r["requests"],
            r["errors"],
            r["throughput_rps"],
            r["output_tps"],
            r["ttft_p99_ms"],
            pytest.approx(r["tpot_p99_ms"]),
            r["slo"],
            r["methodology"],
        )
        for r in rows
    }
    assert [r["run_id"] for r in rows] == ["lo", "mid", "hi"]
    assert got == {
        "lo": (1.0, 2, 0, 1.0, 3.0, 200.0, 20.0, "pass", "compliant"),
        "mid": (2.0, 2, 0, 2.0, 6.0, 250.0, 20.0, "pass", "1 deviation(s)"),
        "hi": (4.0, 4, 1, 3.0, 9.0, 500.0, 20.0, "fail", "compliant"),
    }


def test_curve_knee_and_capacity(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    curve = chdb_rows["benchmark-runs/Throughput-latency curve (one point per run)/A"]
    assert [(p["throughput_rps"], p["ttft_p99_ms"]) for p in curve] == [
        (1.0, 200.0),
        (2.0, 250.0),
        (3.0, 500.0),
    ]
    # power = throughput / p99 e2e: lo 1/0.4, mid 2/0.5, hi 3/2.0 -> the knee is mid
    assert chdb_rows["benchmark-runs/Knee (max throughput / p99 latency)/A"] == [
        {"knee_run": "mid", "knee_rps": 2.0}
    ]
    # SLO p99 TTFT <= 300 ms, no failure: lo and mid meet it (hi has a failed request)
    assert chdb_rows["benchmark-runs/Capacity under the SLO/A"] == [
        {"capacity_rps": 2.0, "capacity_run": "mid"}
    ]


def test_one_runs_requests(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    rows = chdb_rows["benchmark-runs/Run ${run}: TTFT and end-to-end latency per request/A"]
    assert [(r["ttft_ms"], r["e2e_ms"]) for r in rows] == [(150.0, 500.0), (250.0, 500.0)]


def test_anatomy_prefers_hook_spans_and_adds_guardrails(
    chdb_rows: dict[str, list[dict[str, Any]]],
) -> None:
    (row,) = chdb_rows["request-anatomy/Request anatomy: mean seconds per request by phase/A"]
    assert row["queue"] == pytest.approx(0.015)  # hook spans 0.02, 0.01 (llm_request's 5.0 not)
    assert row["prefill"] == pytest.approx(0.08)
    assert row["decode"] == pytest.approx((1.16 + 0.01) / 2)
    # trace 1: input 2 ms, output 3 ms; trace 2 has no guardrail (0)
    assert row["guardrail_input"] == pytest.approx(0.001)
    assert row["guardrail_output"] == pytest.approx(0.0015)


def test_slowest_requests_carry_trace_ids(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    rows = chdb_rows["request-anatomy/Slowest requests/A"]
    assert [
        (r["trace_id"], r["span"], r["e2e"], r["preemptions"], r["end_reason"]) for r in rows
    ] == [
        (trace(1), semconv.SPAN_HOOK_REQUEST, 1.3, 1, "finished"),
        (trace(3), semconv.SPAN_HOOK_REQUEST, 0.5, 0, "cancelled"),
        (trace(4), semconv.SPAN_HOOK_REQUEST, 0.5, 0, "cancelled"),
        (trace(8), semconv.SPAN_HOOK_REQUEST, 0.5, 0, "error"),
        (trace(2), semconv.SPAN_HOOK_REQUEST, 0.3, 0, "finished"),
    ]
    assert rows[0]["guardrail"] == pytest.approx(0.005)
    assert rows[1]["decode"] is None  # cut in decode: no decode time


def test_requests_the_engine_did_not_finish(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    (row,) = chdb_rows["request-anatomy/Requests the engine did not finish, per interval/A"]
    assert {k: v for k, v in row.items() if k != "time"} == {
        "cancelled": 2, "aborted": 0, "error": 1,
    }  # fmt: skip
    rows = chdb_rows["request-anatomy/Engine work nobody read, by end reason and phase/A"]
    assert [
        (r["end_reason"], r["end_phase"], r["requests"], r["prompt_tokens_processed"],
         r["output_tokens_generated"], r["engine_request_s"])
        for r in rows
    ] == [
        ("cancelled", "decode", 1, 10, 3, 0.25),
        ("cancelled", "queue", 1, 0, 0, 0.0),
        ("error", "prefill", 1, 6, 0, 0.125),
    ]  # fmt: skip


def test_token_gap_heatmap_buckets(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    (row,) = chdb_rows["request-anatomy/Per-token stalls (gap between output-token steps, ms)/A"]
    counts = {k: v for k, v in row.items() if k != "time"}
    # request 1: gaps 20, 40, 1100 ms; request 2: 10 ms
    assert counts == {
        "5": 0, "10": 1, "25": 1, "50": 1, "100": 0, "250": 0, "1000": 0, "+Inf": 1,
    }  # fmt: skip


def test_guardrail_table(chdb_rows: dict[str, list[dict[str, Any]]]) -> None:
    rows = chdb_rows["request-anatomy/Guardrail filters/A"]
    assert [
        (r["stage"], r["filter"], r["invocations"], r["busy_p50_ms"], r["blocked"], r["redacted"])
        for r in rows
    ] == [("input", "blocklist", 1, 2.0, 0, 0), ("output", "pii", 3, 3.0, 0, 1)]
