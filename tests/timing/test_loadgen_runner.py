"""The run driver against the scripted SSE server: open-loop isolation, the arrival processes and
their manifest record, request classes and phases on spans, and the generator-bottleneck flag.

Real parts only: ``execute_run`` with the real instrumented client, an SDK tracer provider with
an in-memory exporter, and the scripted server in its own process (its log holds when it really
received every request, on the same CLOCK_MONOTONIC as the client).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otelbench import semconv
from otelbench.client import CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import bursty, load_trace
from otelbench.loadgen.runner import LoadSpec, RunConfig, RunOutcome, execute_run
from otelbench.semconv import REQUEST_PHASE
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.timing  # schedule lag to the ms


def config(server: ScriptedServer, load: LoadSpec, script: dict[str, Any], **kw: Any) -> RunConfig:
    return RunConfig(
        target=server.url,
        model="m",
        load=load,
        seed=kw.pop("seed", 5),
        workload_params={"vocab_size": 1024},
        extra_body={"script": script},
        **kw,
    )


def client_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind == SpanKind.CLIENT]


def run_manifest(exporter: InMemorySpanExporter) -> dict[str, Any]:
    (run,) = [s for s in exporter.get_finished_spans() if s.name == semconv.SPAN_RUN]
    assert run.attributes is not None
    manifest = json.loads(str(run.attributes[semconv.RUN_MANIFEST]))
    assert isinstance(manifest, dict)
    return manifest


def attrs(span: ReadableSpan) -> dict[str, Any]:
    assert span.attributes is not None
    return dict(span.attributes)


async def test_open_loop_slow_responses_never_delay_later_sends(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    # 15 sends 20 ms apart (0.28 s); every response takes 400 ms: all 15 must reach the server
    # before the first response ends, each close to its scheduled time.
    tag = "runner-isolation"
    load = LoadSpec(mode="uniform", requests=15, rate=50.0)
    script = {"n": 2, "ttft_ms": 400.0, "itl_ms": 5.0, "tag": tag}
    out = await execute_run(config(scripted_server, load, script), tracer_provider=tracer_provider)
    assert [r.ok for r in out.results] == [True] * 15
    received = sorted(e["t_recv_ns"] for e in scripted_server.log(tag=tag))
    assert len(received) == 15
    first_end = min(r.submit_mono_ns + (r.end_offset_us or 0) * 1000 for r in out.results)
    assert received[-1] < first_end
    # Scheduled offsets are exact; the lag is small (generous bound: a shared 2-core machine).
    spans = sorted(client_spans(span_exporter), key=lambda s: attrs(s)[semconv.REQUEST_INDEX])
    assert [attrs(s)[semconv.REQUEST_SCHEDULED_OFFSET_US] for s in spans] == [
        i * 20_000 for i in range(15)
    ]
    lags = [attrs(s)[semconv.REQUEST_SCHEDULE_LAG_US] for s in spans]
    assert all(isinstance(v, int) and 0 <= v < 50_000 for v in lags)
    by_index = {rec.index: rec for rec in out.records}
    assert [by_index[i].schedule_lag_us for i in range(15)] == lags
    manifest = out.manifest
    assert manifest["schedule_lag"]["max_ms"] == pytest.approx(max(lags) / 1000, abs=1e-3)
    assert manifest["load"]["arrival"] == {"process": "uniform", "rate": 50.0, "seed": 5}
    assert not any("fell behind" in d for d in manifest["deviations"])


async def test_bursty_run_records_its_process_classes_and_phases(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    load = LoadSpec(mode="bursty", requests=30, rate=100.0, arrival_params={"cv": 2.0})
    cfg = config(scripted_server, load, {"n": 3, "ttft_ms": 2.0, "itl_ms": 1.0}, seed=11)
    out = await execute_run(cfg, tracer_provider=tracer_provider)
    assert len(out.results) == 30
    assert all(r.ok for r in out.results)
    manifest = run_manifest(span_exporter)
    assert manifest == out.manifest
    assert manifest["load"] == {
        "mode": "bursty",
        "requests": 30,
        "rate": 100.0,
        "concurrency": None,
        "arrival_params": {"cv": 2.0},
        "arrival": {
            "process": "bursty",
            "rate": 100.0,
            "seed": 11,
            "cv": 2.0,
            "distribution": "gamma",
            "gamma_shape": 0.25,
        },
        # no collector endpoint to give worker processes: the run is measured here
        "workers": {
            "count": 1,
            "chosen": "one process: this run's caller exports the spans itself",
        },
    }
    assert manifest["request_classes"] == {"default": 30}
    assert manifest["requests_sent"] == 30
    spans = sorted(client_spans(span_exporter), key=lambda s: attrs(s)[semconv.REQUEST_INDEX])
    assert len(spans) == 30
    assert {attrs(s)[semconv.REQUEST_CLASS] for s in spans} == {"default"}
    assert {attrs(s)[REQUEST_PHASE] for s in spans} == {"measure"}
    expected = [int(o * 1e9) // 1000 for o in bursty(rate=100.0, n=30, seed=11, cv=2.0)]
    assert [attrs(s)[semconv.REQUEST_SCHEDULED_OFFSET_US] for s in spans] == expected
    assert sorted(r.index for r in out.records) == list(range(30))
    assert {(r.request_class, r.phase) for r in out.records} == {("default", "measure")}


async def test_trace_replay_follows_the_file(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    trace_file = tmp_path / "arrivals.txt"
    trace_file.write_text("1700000000.0\n1700000000.1\n1700000000.1\n1700000000.4\n")
    load = LoadSpec(
        mode="trace", requests=4, arrival_params={"path": trace_file, "time_scale": 0.5}
    )
    cfg = config(scripted_server, load, {"n": 2, "ttft_ms": 1.0, "itl_ms": 1.0})
    out = await execute_run(cfg, tracer_provider=tracer_provider)
    assert len(out.results) == 4
    spans = sorted(client_spans(span_exporter), key=lambda s: attrs(s)[semconv.REQUEST_INDEX])
    scheduled = [attrs(s)[semconv.REQUEST_SCHEDULED_OFFSET_US] for s in spans]
    assert scheduled == [int(o * 1e9) // 1000 for o in load_trace(trace_file) * 0.5]
    # Unix seconds near 1.7e9 carry ~0.2 µs of float rounding.
    np.testing.assert_allclose(scheduled, [0, 50_000, 50_000, 200_000], atol=1)
    assert out.manifest["load"]["arrival"] == {
        "process": "trace",
        "rate": None,
        "seed": 5,
        "path": str(trace_file),
        "time_scale": 0.5,
        "sha256": hashlib.sha256(trace_file.read_bytes()).hexdigest(),
        "timestamps_in_file": 4,
        "file_duration_s": pytest.approx(0.4),
    }
    assert out.manifest["load"]["arrival_params"] == {"path": str(trace_file), "time_scale": 0.5}


async def test_closed_loop_keeps_its_concurrency(
    scripted_server: ScriptedServer,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    tag = "runner-closed"
    load = LoadSpec(mode="closed_loop", requests=9, concurrency=3)
    script = {"n": 2, "ttft_ms": 60.0, "itl_ms": 1.0, "tag": tag}
    out = await execute_run(config(scripted_server, load, script), tracer_provider=tracer_provider)
    assert len(out.results) == 9
    assert out.manifest["load"]["arrival"] == {"process": "closed_loop", "concurrency": 3}
    assert out.manifest["schedule_lag"] == {
        "p50_ms": None,
        "p99_ms": None,
        "max_ms": None,
        "generator_bottleneck": False,
    }
    # Three waves of three: the server never holds more than 3 requests at once.
    entries = scripted_server.log(tag=tag)
    events = sorted(
        [(e["t_recv_ns"], 1) for e in entries] + [(e["events"][-1][2], -1) for e in entries]
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    assert peak == 3
    for span in client_spans(span_exporter):
        a = attrs(span)
        assert a[REQUEST_PHASE] == "measure"
        assert a[semconv.REQUEST_CLASS] == "default"
        assert semconv.REQUEST_SCHEDULE_LAG_US not in a


async def test_a_generator_that_falls_behind_is_flagged(
    scripted_server: ScriptedServer, tracer_provider: TracerProvider
) -> None:
    # A consumer that blocks the event loop 30 ms per result makes the 5 ms-spaced sends late.
    def slow_consumer(_result: CompletionResult) -> None:
        time.sleep(0.03)

    load = LoadSpec(mode="uniform", requests=30, rate=200.0)
    cfg = config(scripted_server, load, {"n": 1, "ttft_ms": 1.0})
    out: RunOutcome = await execute_run(
        cfg, tracer_provider=tracer_provider, on_result=slow_consumer
    )
    lag = out.manifest["schedule_lag"]
    assert lag["p99_ms"] > 10.0
    assert lag["generator_bottleneck"] is True
    (flag,) = [d for d in out.manifest["deviations"] if "fell behind" in d]
    assert flag.startswith(
        f"load generator fell behind its schedule: P99 send lag {lag['p99_ms']:.1f} ms"
    )


def test_load_spec_validates_arrival_parameters_eagerly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="coefficient of variation"):
        LoadSpec(mode="bursty", requests=3, rate=1.0, arrival_params={"cv": -1})
    with pytest.raises(ConfigError, match="needs --rate > 0"):
        LoadSpec(mode="bursty", requests=3)
    with pytest.raises(ConfigError, match="closed-loop load takes no arrival-process parameters"):
        LoadSpec(mode="closed_loop", requests=3, concurrency=1, arrival_params={"cv": 2})
    bad = tmp_path / "t.txt"
    bad.write_text("0\n1\nsoon\n")
    with pytest.raises(ConfigError, match=r"t\.txt:3: 'soon' is not a number"):
        LoadSpec(mode="trace", requests=3, arrival_params={"path": str(bad)})
    with pytest.raises(ConfigError, match="unknown load mode 'zipf'"):
        LoadSpec(mode="zipf", requests=3, rate=1.0)  # type: ignore[arg-type]
