"""A run's client spans survive a collector outage; a full spool drops an exact, reported count.

Real parts: the scripted SSE server (target), ``python -m otelbench.collector`` in a child
process writing a DuckDB file (SIGKILLed and started again on the same port and store, as a
crash would leave it), the load generator with :func:`otelbench.telemetry.make_tracer_provider`
spooling to disk, and the reports written from the store.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import duckdb
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv, telemetry
from otelbench.benchmark import record_client_telemetry, write_reports
from otelbench.loadgen.runner import LoadSpec, RunConfig, RunOutcome, execute_run
from otelbench.spool import SpoolingSpanExporter, SpoolStats
from tests.fixtures.collector_process import free_port, start_collector, stop_collector
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

REQUESTS = 40


def run_config(target: str) -> RunConfig:
    return RunConfig(
        target=target,
        model="m",
        load=LoadSpec(mode="uniform", requests=REQUESTS, rate=20.0),
        workload_params={"vocab_size": 1024, "input_max": 160, "output_max": 80},
    )


def stored_span_ids(store: Path) -> set[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(f'SELECT DISTINCT "SpanId" FROM {semconv.TABLE_TRACES}').fetchall()
    return {r[0] for r in rows}


def test_client_spans_survive_a_collector_crash_mid_run(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    port, store = free_port(), tmp_path / "spans.duckdb"
    collector = start_collector(store, port)
    config = run_config(scripted_server.url)
    stats = SpoolStats()
    ended = InMemorySpanExporter()
    provider = telemetry.make_tracer_provider(
        f"http://127.0.0.1:{port}",
        run_id=config.run_id,
        spool_dir=tmp_path / "spool",
        spool_stats=stats,
    )
    provider.add_span_processor(SimpleSpanProcessor(ended))
    outcome: list[RunOutcome] = []
    run = threading.Thread(
        target=lambda: outcome.append(asyncio.run(execute_run(config, tracer_provider=provider)))
    )
    try:
        run.start()
        time.sleep(0.3)
        os.killpg(collector.pid, signal.SIGKILL)
        collector.communicate(timeout=10)
        # the batch processor exports every 0.5 s: its batches are spooled while nothing listens
        # (waited for, not slept for: on a busy machine the first export can come later)
        deadline = time.monotonic() + 10.0
        while stats.as_dict()["spans_spooled"] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stats.as_dict()["spans_spooled"] > 0
        collector = start_collector(store, port)
        run.join(timeout=60)
        assert telemetry.shutdown(provider, timeout_ms=20_000)
    finally:
        stop_collector(collector)
    assert len(outcome[0].results) == REQUESTS
    counts = stats.as_dict()
    assert counts["spans_replayed"] == counts["spans_spooled"] > 0
    assert counts["spans_dropped"] == counts["spans_rejected"] == 0
    sent = {f"{s.context.span_id:016x}" for s in ended.get_finished_spans()}
    assert len(sent) == REQUESTS + 1  # every request's client span and the run span
    assert stored_span_ids(store) == sent
    assert not (tmp_path / "spool").exists()  # drained and removed

    record_client_telemetry(tmp_path, config.run_id, counts)
    report, markdown = write_reports(tmp_path, store, config.run_id)
    assert report["run"]["client_telemetry"] == counts
    assert report["run"]["requests"]["total"] == REQUESTS
    assert "## Client span export" in markdown
    assert f"| spans_replayed | {counts['spans_replayed']} |" in markdown


def test_full_spool_drops_exactly_the_spans_that_are_missing(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    port, store = free_port(), tmp_path / "spans.duckdb"
    config = run_config(scripted_server.url)
    stats = SpoolStats()
    ended = InMemorySpanExporter()
    # The collector is down for the whole run; the spool holds only part of its spans.
    provider = telemetry.make_tracer_provider(
        f"http://127.0.0.1:{port}",
        run_id=config.run_id,
        spool_dir=tmp_path / "spool",
        spool_max_bytes=40_000,
        spool_stats=stats,
    )
    provider.add_span_processor(SimpleSpanProcessor(ended))
    asyncio.run(execute_run(config, tracer_provider=provider))
    flushed = telemetry.shutdown(provider, timeout_ms=300)
    counts = stats.as_dict()
    assert not flushed  # what the spool holds could not be delivered
    assert counts["spans_dropped"] > 0
    assert counts["spans_spooled"] > 0
    assert counts["spans_spooled"] + counts["spans_dropped"] == REQUESTS + 1

    # The next start on the same spool directory delivers what the spool kept.
    collector = start_collector(store, port)
    try:
        replay = SpoolStats()
        exporter = SpoolingSpanExporter(
            f"http://127.0.0.1:{port}/v1/traces", tmp_path / "spool", stats=replay
        )
        assert exporter.force_flush(20_000)
        exporter.shutdown()
    finally:
        stop_collector(collector)
    assert replay.as_dict()["spans_replayed"] == counts["spans_spooled"]
    assert len(ended.get_finished_spans()) - len(stored_span_ids(store)) == counts["spans_dropped"]
