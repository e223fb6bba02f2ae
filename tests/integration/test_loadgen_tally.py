"""A run that keeps no records (``otelbench run``: ``keep_records=False``) keeps its tally: every
measured request counted, its failures by type, its schedule lag; the spans carry the rest.

Real parts: the scripted SSE server, the embedded collector in its own process writing a DuckDB
store, two load-generator worker processes exporting their spans to it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import pytest

from otelbench import semconv, telemetry
from otelbench.benchmark import EmbeddedCollector
from otelbench.loadgen.runner import ExportSpec, LoadSpec, RunConfig, RunOutcome, execute_run
from otelbench.loadgen.warmup import WarmupSpec
from otelbench.spool import SpoolStats
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

REQUESTS = 30


def run(server: ScriptedServer, out: Path, script: dict[str, object]) -> tuple[RunOutcome, Path]:
    config = RunConfig(
        target=server.url,
        model="m",
        load=LoadSpec(mode="uniform", requests=REQUESTS, rate=60.0),
        workload_params={"vocab_size": 1024, "input_max": 160, "output_max": 80},
        extra_body={"script": script},
        warmup=WarmupSpec(cold_start=True),
        workers=2,
    )
    store = out / "spans.duckdb"
    with EmbeddedCollector(store) as endpoint:
        provider = telemetry.make_tracer_provider(
            endpoint, run_id=config.run_id, spool_dir=out / "spool", spool_stats=SpoolStats()
        )
        outcome = asyncio.run(
            execute_run(
                config,
                tracer_provider=provider,
                export=ExportSpec(endpoint, out / "spool"),
                keep_records=False,
            )
        )
        assert telemetry.shutdown(provider)
    return outcome, store


def stored_lags(store: Path) -> list[int]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            f'SELECT "SpanAttributes" FROM {semconv.TABLE_TRACES} WHERE "SpanKind" = ?',
            [semconv.SPAN_KIND_CLIENT],
        ).fetchall()
    return [int(dict(r[0])[semconv.REQUEST_SCHEDULE_LAG_US]) for r in rows]


def test_a_run_without_records_counts_every_request_and_its_lag(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    outcome, store = run(scripted_server, tmp_path, {"n": 4, "ttft_ms": 2.0, "itl_ms": 2.0})
    assert outcome.records == []
    assert outcome.results == []
    tally = outcome.tally
    assert tally.sent == REQUESTS
    assert tally.failed == {}
    # the lags the tally kept are the ones the two workers put on the spans they sent
    assert sorted(tally.schedule_lags_us) == sorted(stored_lags(store))
    assert outcome.manifest["requests_sent"] == REQUESTS
    worst_ms = max(tally.schedule_lags_us) / 1000
    assert outcome.manifest["schedule_lag"]["max_ms"] == pytest.approx(worst_ms)
    assert [w["worker"] for w in outcome.manifest["client_health"]["workers"]] == [0, 1]


def test_a_run_without_records_counts_its_failures_by_type(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    outcome, _ = run(scripted_server, tmp_path, {"name": "error_500"})
    assert outcome.records == []
    assert outcome.tally.sent == REQUESTS
    assert outcome.tally.failed == {"500": REQUESTS}
