"""Warm-up (draft 4.5) through ``execute_run`` against the scripted SSE server.

Real parts only: the runner, the instrumented client, an SDK tracer provider with an in-memory
exporter, and the scripted server in its own process. Every request of a run is a span; the
``otelbench.request.phase`` attribute says which phase sent it.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otelbench import semconv
from otelbench.client import CompletionResult
from otelbench.loadgen.runner import LoadSpec, RunConfig, execute_run
from otelbench.loadgen.warmup import WARMUP_SEED_OFFSET, WarmupSpec
from otelbench.semconv import REQUEST_PHASE
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

# 8 content chunks of one token each, ~100 ms end to end: a probe latency with room for noise.
SCRIPT = {"n": 8, "ttft_ms": 30.0, "itl_ms": 10.0}


def config(
    server: ScriptedServer, warmup: WarmupSpec | None, script: dict[str, Any] | None = None
) -> RunConfig:
    return RunConfig(
        target=server.url,
        model="m",
        load=LoadSpec(mode="poisson", requests=6, rate=50.0),
        seed=9,
        workload_params={"vocab_size": 1024},
        extra_body={"script": script or SCRIPT},
        warmup=warmup,
    )


def spans_by_phase(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        if span.kind == SpanKind.CLIENT:
            assert span.attributes is not None
            out.setdefault(str(span.attributes[REQUEST_PHASE]), []).append(span)
    return out


def start(span: ReadableSpan) -> int:
    assert span.start_time is not None
    return span.start_time


def end(span: ReadableSpan) -> int:
    assert span.end_time is not None
    return span.end_time


async def test_scaled_down_warmup_runs_drains_probes_and_is_recorded(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    spec = WarmupSpec(min_requests=10, min_output_tokens=120, probes=3, concurrency=4)
    seen: list[CompletionResult] = []
    out = await execute_run(
        config(scripted_server, spec), tracer_provider=tracer_provider, on_result=seen.append
    )
    w = out.manifest["warmup"]
    # Both floors: 10 requests and 120 tokens → at least 15 requests of 8 tokens (at most 3 more
    # in flight when the floor is reached, at concurrency 4).
    assert 15 <= w["requests"] <= 18
    assert w["output_tokens"] == 8 * w["requests"]
    assert w["failed"] == 0
    assert w["mode"] == "warm"
    assert w["concurrency"] == 4
    assert w["seed"] == 9 + WARMUP_SEED_OFFSET
    assert w["drained"] is True
    assert w["floors"]["min_requests"] == 10
    assert w["floors"]["min_output_tokens"] == 120
    assert w["probe"]["k"] == 3
    assert w["probe"]["threshold"] == 0.10
    assert w["stabilized"] is True
    assert len(w["rounds"]) == 1
    after = w["probe_after"]
    assert after == w["rounds"][0]["probe_after"]
    for probe_set in (w["probe_before"], after):
        assert probe_set["probes"] == probe_set["ok"] == 3
        assert len(probe_set["latency_ms"]) == 3
        assert 90.0 < probe_set["median_latency_ms"] < 200.0
        assert 25.0 < probe_set["median_ttft_ms"] < 100.0
    assert after["variation"] < 0.10
    assert after["stabilized"] is True
    assert w["duration_s"] > 0
    (scaled,) = w["deviations"]
    assert scaled.startswith("warm-up scaled down to at least 10 requests and 120 output tokens")
    assert scaled in out.manifest["deviations"]
    assert not any("no warm-up" in d for d in out.manifest["deviations"])
    assert out.manifest["cold_start"] is False

    # Spans: every request of every phase is traced, marked with its phase.
    phases = spans_by_phase(span_exporter)
    assert sorted(phases) == ["measure", "probe", "warmup"]
    assert len(phases["warmup"]) == w["requests"]
    assert len(phases["probe"]) == 6
    assert len(phases["measure"]) == 6
    probes = sorted(phases["probe"], key=start)
    before, post = probes[:3], probes[3:]
    # Probes go one at a time; the warm-up drains before the post-warm-up probes, and the
    # measurement starts after the last probe.
    for a, b in itertools.pairwise(probes):
        assert end(a) <= start(b)
    assert max(end(s) for s in before) <= min(start(s) for s in phases["warmup"])
    assert max(end(s) for s in phases["warmup"]) <= min(start(s) for s in post)
    assert max(end(s) for s in post) <= min(start(s) for s in phases["measure"])
    # Measured requests only in results, on_result and the schedule; records hold everything.
    assert len(out.results) == len(seen) == 6
    assert out.manifest["requests_sent"] == 6
    assert sorted(r.phase for r in out.records) == sorted(
        ["measure"] * 6 + ["probe"] * 6 + ["warmup"] * w["requests"]
    )
    assert out.warmup is not None
    assert out.warmup.to_manifest() == w
    for span in phases["measure"]:
        assert span.attributes is not None
        assert semconv.REQUEST_SCHEDULE_LAG_US in span.attributes
    for span in phases["warmup"] + phases["probe"]:
        assert span.attributes is not None
        assert semconv.REQUEST_SCHEDULE_LAG_US not in span.attributes
        assert span.attributes[semconv.RUN_ID] == out.run_id


async def test_unstable_latency_runs_more_rounds_and_is_a_deviation(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    # A zero threshold can never be met (real timings always vary a little).
    spec = WarmupSpec(
        min_requests=4, min_output_tokens=0, probes=2, concurrency=2, threshold=0.0, max_rounds=2
    )
    out = await execute_run(config(scripted_server, spec), tracer_provider=tracer_provider)
    w = out.manifest["warmup"]
    assert w["stabilized"] is False
    assert len(w["rounds"]) == 2
    assert all(4 <= r["requests"] <= 5 for r in w["rounds"])
    assert w["requests"] == sum(r["requests"] for r in w["rounds"])
    variation = w["probe_after"]["variation"]
    unstable = (
        f"latency had not stabilized after 2 warm-up round(s): probe variation "
        f"{variation:.1%}, threshold 0% (draft 4.5.2)"
    )
    assert unstable in w["deviations"]
    assert unstable in out.manifest["deviations"]
    assert len(spans_by_phase(span_exporter)["probe"]) == 2 * 3


async def test_failing_target_stops_the_warmup_with_a_deviation(
    scripted_server: ScriptedServer, tracer_provider: TracerProvider
) -> None:
    spec = WarmupSpec(min_requests=40, min_output_tokens=0, probes=2, concurrency=2, max_rounds=1)
    out = await execute_run(
        config(scripted_server, spec, {"status": 500}), tracer_provider=tracer_provider
    )
    w = out.manifest["warmup"]
    assert w["failed"] == w["requests"]
    assert 10 <= w["requests"] <= 11
    assert w["stabilized"] is False
    assert w["probe_after"]["ok"] == 0
    assert w["probe_after"]["variation"] is None
    stopped = [d for d in w["deviations"] if "stopped after" in d]
    assert stopped == [
        "warm-up round 1 stopped after 10 of 10 warm-up requests failed, short of its floors "
        "(40 requests, 0 output tokens)"
    ]
    assert any("probe variation unknown" in d for d in w["deviations"])
    assert all(not r.ok for r in out.results)


async def test_cold_start_skips_warmup_and_says_so(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    out = await execute_run(
        config(scripted_server, WarmupSpec(cold_start=True)), tracer_provider=tracer_provider
    )
    assert out.manifest["warmup"] == {
        "mode": "cold_start",
        "skipped": True,
        "reason": "cold start measurement: warm-up skipped (draft 4.5.3)",
        "deviations": [],
    }
    assert out.manifest["cold_start"] is True
    assert out.manifest["notes"] == ["cold start measurement: warm-up skipped (draft 4.5.3)"]
    assert not any("warm-up" in d for d in out.manifest["deviations"])
    assert list(spans_by_phase(span_exporter)) == ["measure"]
    assert len(out.records) == 6


async def test_without_warmup_the_run_is_unchanged(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    out = await execute_run(config(scripted_server, None), tracer_provider=tracer_provider)
    assert out.manifest["warmup"] is None
    assert out.warmup is None
    assert out.manifest["cold_start"] is False
    assert (
        "no warm-up procedure was run before measurement (draft 4.5)"
        in (out.manifest["deviations"])
    )
    assert list(spans_by_phase(span_exporter)) == ["measure"]
