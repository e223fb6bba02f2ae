"""The manifest ``execute_run`` writes on its run span is a whole RunManifest (otelbench.model).

The runs go to a target that refuses every connection: each request fails at once, as a result,
and the run still ends its run span with the manifest (what the store reads back and checks,
:func:`otelbench.query.records.run_manifest`).
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv
from otelbench.loadgen.runner import LoadSpec, RunConfig, execute_run
from otelbench.loadgen.shard import Shard
from otelbench.loadgen.warmup import WarmupSpec
from otelbench.model.conform import conforms
from otelbench.model.manifest import RunManifest
from otelbench.query.records import run_manifest

SHARD_ONLY = {"shard", "clock"}
"""Keys only a shard's manifest has."""
JOINED_ONLY = {"shard_count", "shards"}
"""Keys only the store's join of a run's shards adds."""


def refusing_target() -> str:
    """A loopback URL where nothing listens (a port just given up by the kernel)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("load", "extra"),
    [
        (LoadSpec(mode="poisson", requests=6, rate=500.0), {"warmup": WarmupSpec(max_rounds=1)}),
        (LoadSpec(mode="bursty", requests=4, rate=500.0, arrival_params={"cv": 2.0}), {}),
        (
            LoadSpec(mode="closed_loop", requests=4, concurrency=2),
            {"warmup": WarmupSpec(cold_start=True)},
        ),
        (LoadSpec(mode="uniform", requests=4, rate=500.0), {"shard": "1/2"}),
    ],
    ids=["poisson-warm", "bursty", "closed-loop-cold-start", "shard"],
)
async def test_the_manifest_execute_run_writes_is_a_whole_run_manifest(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    load: LoadSpec,
    extra: dict[str, Any],
) -> None:
    sharded = "shard" in extra
    if sharded:
        extra = {**extra, "shard": Shard(1, 2, start_at_unix=time.time() + 0.2)}
    config = RunConfig(
        target=refusing_target(),
        model="m",
        load=load,
        workload_params={"vocab_size": 1024},
        timeout_s=5.0,
        **extra,
    )
    await execute_run(config, tracer_provider=tracer_provider)
    (run,) = [s for s in span_exporter.get_finished_spans() if s.name == semconv.SPAN_RUN]
    manifest = json.loads(str((run.attributes or {})[semconv.RUN_MANIFEST]))
    assert conforms(manifest, RunManifest) == []
    expected = set(RunManifest.__annotations__) - JOINED_ONLY - (set() if sharded else SHARD_ONLY)
    assert set(manifest) == expected
    assert run_manifest(json.dumps(manifest)) == manifest  # the store takes it as written
