"""Nothing lost: the collector is killed for 60 s in the middle of a run against the real vLLM.

The vLLM is the session's ``spooling_vllm_server`` (tests/vllm/conftest.py: the hooks spool under
``OTELBENCH_SPOOL_DIR``); the session's receiver lends it the port the server exports to. The
collector is otelbench's, as ``otelbench run`` starts it (``python -m otelbench.collector``, a
child process writing a DuckDB file of the test's own) on that port; it is SIGKILLed two seconds
into an open-loop run and started again, on the same port and store file, 60 s later. The load
generator exports through its span spool (``otelbench.telemetry`` with ``spool_dir``), the engine
hooks through theirs. After the collector is back, every client span the run sent and every span
the hooks ended for it must be in the store, once per span id.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from otelbench import semconv, telemetry
from otelbench.loadgen.runner import LoadSpec, RunConfig, RunOutcome, execute_run
from otelbench.spool import SpoolStats
from tests.fixtures.collector_process import start_collector, stop_collector
from tests.vllm.conftest import SpanSink, SpoolingServer

pytestmark = pytest.mark.vllm

OUTAGE_S = 60.0
KILL_AT_S = 2.0
RATE = 1.0
REQUESTS = 66  # about 66 s of open-loop load: 2 s before the outage, 60 s in it, 4 s after
HOOK_SPANS_PER_REQUEST = 4  # the server span and its queue, prefill and decode spans
HEALTH_ENDED = semconv.METRIC_HOOK_SPANS_ENDED.replace(".", "_") + "_total"
HEALTH_DROPPED = semconv.METRIC_HOOK_SPANS_DROPPED.replace(".", "_") + "_total"
HEALTH_UNACCOUNTED = semconv.METRIC_HOOK_SPANS_UNACCOUNTED.replace(".", "_")
"""Spans ended but neither delivered, spooled nor failed yet (still in the exporter's batch)."""


def hook_health(base_url: str) -> dict[str, float]:
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    found = dict.fromkeys((HEALTH_ENDED, HEALTH_DROPPED, HEALTH_UNACCOUNTED), 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if not line.startswith("#") and name in found:
            found[name] += float(line.rsplit(" ", 1)[1])
    return found


def test_collector_killed_for_60_s_mid_run_loses_no_span(
    spooling_vllm_server: SpoolingServer,
    otlp_receiver: SpanSink,
    tmp_path: Path,
    vllm_measurements: dict[str, Any],
) -> None:
    server, hook_spool = spooling_vllm_server.server, spooling_vllm_server.spool
    store = tmp_path / "spans.duckdb"
    stats = SpoolStats()
    config = RunConfig(
        target=server.base_url,
        model="tiny",
        load=LoadSpec(mode="uniform", requests=REQUESTS, rate=RATE),
        workload_params={
            "vocab_size": 1024,
            "input_min": 16,
            "input_max": 32,
            "output_min": 4,
            "output_max": 8,
        },
        ignore_eos=True,
    )
    outcome: list[RunOutcome] = []
    # the session's receiver lends its port (the server exports there) to this test's collector
    with otlp_receiver.lent() as port:
        collector = start_collector(store, port)
        try:
            ended_before = hook_health(server.base_url)[HEALTH_ENDED]
            provider = telemetry.make_tracer_provider(
                f"http://127.0.0.1:{port}",
                run_id=config.run_id,
                spool_dir=tmp_path / "client-spool",
                spool_stats=stats,
            )
            run = threading.Thread(
                target=lambda: outcome.append(
                    asyncio.run(execute_run(config, tracer_provider=provider))
                )
            )
            started = time.monotonic()
            run.start()
            time.sleep(KILL_AT_S)
            os.killpg(collector.pid, signal.SIGKILL)  # a crash: no graceful stop
            collector.communicate(timeout=10)
            during = stats.as_dict()
            time.sleep(max(0.0, started + KILL_AT_S + OUTAGE_S - time.monotonic()))
            spooled_in_outage = stats.as_dict()["spans_spooled"] - during["spans_spooled"]
            collector = start_collector(store, port)
            run.join(timeout=120)
            assert not run.is_alive()
            assert telemetry.shutdown(provider, timeout_ms=30_000)
            # The hooks' spool drains on its own (back-off at most 2 s); wait for every span
            # ended to have left the exporter's batch (the server keeps running: nothing
            # flushes it at a stop) and the spool.
            deadline = time.monotonic() + 30
            expected = ended_before + REQUESTS * HOOK_SPANS_PER_REQUEST
            while True:
                now = hook_health(server.base_url)
                drained = not any(hook_spool.rglob("segment-*"))
                done = now[HEALTH_ENDED] >= expected and now[HEALTH_UNACCOUNTED] == 0
                if (done and drained) or time.monotonic() > deadline:
                    break
                time.sleep(0.25)
            health = hook_health(server.base_url)
            run_and_drain_s = time.monotonic() - started
            hook_spool_left = sorted(p.name for p in hook_spool.rglob("segment-*"))
        finally:
            stop_collector(collector)

    assert outcome, "the run did not finish"
    results = outcome[0].results
    assert len(results) == REQUESTS
    assert all(r.ok for r in results), {r.error_type for r in results if not r.ok}
    assert spooled_in_outage > 0  # the outage did hit the client's export
    counts = stats.as_dict()
    assert counts["spans_replayed"] == counts["spans_spooled"] > 0, counts
    assert counts["spans_dropped"] == counts["spans_rejected"] == 0, counts
    assert health[HEALTH_DROPPED] == 0
    assert hook_spool_left == []

    with duckdb.connect(str(store), read_only=True) as con:
        client = con.execute(
            f'SELECT "TraceId", count(DISTINCT "SpanId") FROM {semconv.TABLE_TRACES} '
            f'WHERE "ServiceName" = ? AND "ResourceAttributes"[?] = ? AND "SpanName" != ? '
            f'GROUP BY "TraceId"',
            [semconv.SERVICE_CLIENT, semconv.RUN_ID, config.run_id, semconv.SPAN_RUN],
        ).fetchall()
        # The hooks' spans only: vLLM's own ``llm_request`` spans (same service) have no spool.
        server_spans = con.execute(
            f'SELECT "TraceId", count(DISTINCT "SpanId") FROM {semconv.TABLE_TRACES} '
            f'WHERE "ServiceName" = ? AND "ScopeName" = ? GROUP BY "TraceId"',
            [semconv.SERVICE_VLLM, semconv.INSTRUMENTATION_SCOPE_HOOKS],
        ).fetchall()
        run_spans = con.execute(
            f'SELECT count(DISTINCT "SpanId") FROM {semconv.TABLE_TRACES} WHERE "SpanName" = ? '
            f'AND "SpanAttributes"[?] = ?',
            [semconv.SPAN_RUN, semconv.RUN_ID, config.run_id],
        ).fetchone()
    # Every client span of the run: one per request, each in its own trace.
    assert len(client) == REQUESTS
    assert all(n == 1 for _, n in client)
    assert run_spans == (1,)
    # Every span the hooks ended for the run (the server served this run only meanwhile) is
    # stored, once; and each client request's trace holds its 4 server spans.
    assert health[HEALTH_ENDED] - ended_before == REQUESTS * HOOK_SPANS_PER_REQUEST
    run_traces = {trace_id for trace_id, _ in client}
    assert sum(n for t, n in server_spans if t in run_traces) == REQUESTS * HOOK_SPANS_PER_REQUEST
    by_trace = dict(server_spans)
    assert all(by_trace.get(trace_id) == HOOK_SPANS_PER_REQUEST for trace_id, _ in client)
    vllm_measurements["spool_outage_60s"] = {
        "release": spooling_vllm_server.version,
        "run_outage_and_drain_s": round(run_and_drain_s, 1),
        "client": counts,
        "hook_spans_ended": health[HEALTH_ENDED] - ended_before,
        "loadavg_1m": os.getloadavg()[0],
    }
