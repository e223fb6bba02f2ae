"""Drives one benchmark run: workload × arrival schedule → instrumented client → spans.

Open loop (draft 4.2.3, 4.2.5): every send time is precomputed from the seed before the first
request leaves; one scheduler coroutine sleeps until each send time and starts the request as its
own task, never waiting for a response, so a slow response cannot delay a later send. The
**schedule lag** (actual send − scheduled send, monotonic clock) of every request is recorded on
its span and summarised in the manifest; a large lag means the generator, not the server, was the
bottleneck, and the run is flagged.

Closed loop (draft 4.2.4): ``concurrency`` workers each send their next request as soon as the
previous one completes, until the request count is reached.

Example::

    config = RunConfig(target="http://127.0.0.1:8000", model="tiny",
                       load=LoadSpec(mode="poisson", requests=100, rate=4.0), seed=1)
    outcome = asyncio.run(execute_run(config, tracer_provider=provider))
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from otelbench import __version__, semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import ARRIVALS
from otelbench.loadgen.workloads import A1_VOCAB_SIZE, WorkloadRequest, make_workload

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["LoadSpec", "RunConfig", "RunOutcome", "execute_run"]

LoadMode = Literal["poisson", "uniform", "closed_loop"]

GIL_SWITCH_INTERVAL_S = 0.00025
GENERATOR_BOTTLENECK_P99_LAG_MS = 10.0
"""A run whose P99 schedule lag exceeds this is flagged: the generator could not keep time."""


@dataclass(frozen=True)
class LoadSpec:
    """How requests arrive: an open-loop arrival process at ``rate``, or closed loop."""

    mode: LoadMode
    requests: int
    rate: float | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ConfigError(f"--requests must be >= 1, got {self.requests}")
        if self.mode == "closed_loop":
            if self.concurrency is None or self.concurrency < 1:
                raise ConfigError("closed-loop load needs --concurrency >= 1")
        elif self.mode in ARRIVALS:
            if self.rate is None or not self.rate > 0:
                raise ConfigError(f"open-loop {self.mode} load needs --rate > 0")
        else:
            known = ", ".join([*sorted(ARRIVALS), "closed_loop"])
            raise ConfigError(f"unknown load mode {self.mode!r}; known: {known}")


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; it is recorded, whole, in the run manifest."""

    target: str
    model: str
    load: LoadSpec
    seed: int = 42
    workload: str = "synthetic-uniform"
    workload_params: dict[str, Any] = field(default_factory=dict)
    api: Literal["completions"] = "completions"
    ignore_eos: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Merged into every request body (server-specific parameters)."""
    sut: dict[str, Any] = field(default_factory=dict)
    """The system under test as declared or detected: ``boundary`` (draft 4.1: Model Engine,
    Application Gateway or Compound System), ``software``, ``hardware``."""
    timeout_s: float = 600.0
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass
class RunOutcome:
    """What the run measured, in memory; the same facts are on the exported spans."""

    run_id: str
    manifest: dict[str, Any]
    results: list[CompletionResult] = field(default_factory=list)


def _lag_summary(lags_us: list[int]) -> dict[str, float | None]:
    if not lags_us:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    a = np.asarray(lags_us, dtype=np.float64) / 1000.0
    return {
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "max_ms": float(a.max()),
    }


def _manifest(config: RunConfig, workload_spec: dict[str, Any]) -> dict[str, Any]:
    deviations = ["no warm-up procedure was run before measurement (draft 4.5)"]
    vocab = workload_spec.get("input", {}).get("vocab_size")
    if config.workload == "synthetic-uniform" and vocab != A1_VOCAB_SIZE:
        deviations.append(
            f"prompt token ids drawn from a vocabulary of {vocab} ids, not A.1.4's {A1_VOCAB_SIZE}"
        )
    return {
        "id": config.run_id,
        "target": config.target,
        "model": config.model,
        "api": config.api,
        "workload": {"name": config.workload, "seed": config.seed, "spec": workload_spec},
        "seed": config.seed,
        "load": asdict(config.load),
        "otelbench_version": __version__,
        "sut": config.sut,
        "request_options": {
            "ignore_eos": config.ignore_eos,
            "stream": True,
            "extra_body": config.extra_body,
        },
        "warmup": None,
        "deviations": deviations,
        "notes": [],
    }


async def execute_run(
    config: RunConfig,
    *,
    tracer_provider: TracerProvider | None = None,
    on_result: Callable[[CompletionResult], None] | None = None,
) -> RunOutcome:
    """Run the load described by ``config``; returns every request's result.

    Per-request failures are results, not exceptions. The run span (``otelbench.run``) carries
    the manifest and is ended even when the run is cancelled, so a partial run is still reported.
    """
    from opentelemetry import trace

    params = {"seed": config.seed, **config.workload_params}
    workload = make_workload(config.workload, **params)
    items = workload.requests(config.load.requests)
    manifest = _manifest(config, workload.spec())
    outcome = RunOutcome(config.run_id, manifest)
    lags_us: list[int] = []
    extra_body = {**config.extra_body, **({"ignore_eos": True} if config.ignore_eos else {})}

    tracer = trace.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__, tracer_provider)
    run_span = tracer.start_span(
        semconv.SPAN_RUN,
        kind=trace.SpanKind.INTERNAL,
        attributes={semconv.RUN_ID: config.run_id, semconv.WORKLOAD_NAME: config.workload},
    )
    client = AsyncLLMClient(
        config.target, tracer_provider=tracer_provider, timeout=config.timeout_s
    )
    # The span exporter's thread encodes protobuf while streams arrive; with CPython's default
    # 5 ms GIL switch interval it could hold the event loop off a chunk for that long. A 0.25 ms
    # interval bounds that delay well under the draft's 1 ms resolution (4.2.1).
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    # A full garbage collection of a large heap takes tens of ms and stops every stream's timing;
    # collect once now and freeze what exists, so only the run's own young objects are scanned.
    gc.collect()
    gc.freeze()
    started_unix = time.time()
    t0 = time.perf_counter_ns()

    async def send(item: WorkloadRequest, scheduled_ns: int | None) -> None:
        attributes: dict[str, str | int | float | bool] = {
            semconv.RUN_ID: config.run_id,
            semconv.WORKLOAD_NAME: config.workload,
            semconv.REQUEST_INDEX: item.index,
            semconv.REQUEST_CLASS: item.request_class,
        }
        if scheduled_ns is not None:
            lag_us = (time.perf_counter_ns() - scheduled_ns) // 1000
            lags_us.append(lag_us)
            attributes[semconv.REQUEST_SCHEDULED_OFFSET_US] = (scheduled_ns - t0) // 1000
            attributes[semconv.REQUEST_SCHEDULE_LAG_US] = lag_us
        request = CompletionRequest(
            api=config.api,
            model=config.model,
            prompt=item.prompt_token_ids,
            max_tokens=item.max_tokens,
            temperature=item.temperature,
            extra_body=extra_body,
            attributes=attributes,
        )
        result = await client.complete(request)
        outcome.results.append(result)
        if on_result is not None:
            on_result(result)

    try:
        if config.load.mode == "closed_loop":
            queue = iter(items)

            async def worker() -> None:
                for item in queue:
                    await send(item, None)

            assert config.load.concurrency is not None
            await asyncio.gather(*(worker() for _ in range(config.load.concurrency)))
        else:
            assert config.load.rate is not None
            offsets_s = ARRIVALS[config.load.mode](
                rate=config.load.rate, n=len(items), seed=config.seed
            )
            tasks: set[asyncio.Task[None]] = set()
            for item, offset_s in zip(items, offsets_s, strict=True):
                scheduled_ns = t0 + int(offset_s * 1e9)
                delay_ns = scheduled_ns - time.perf_counter_ns()
                if delay_ns > 0:
                    await asyncio.sleep(delay_ns / 1e9)
                task = asyncio.create_task(send(item, scheduled_ns))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
    finally:
        finished_unix = time.time()
        lag = _lag_summary(lags_us)
        manifest.update(
            started_unix=started_unix,
            finished_unix=finished_unix,
            duration_s=(time.perf_counter_ns() - t0) / 1e9,
            requests_sent=len(outcome.results),
            schedule_lag=lag,
        )
        if lag["p99_ms"] is not None and lag["p99_ms"] > GENERATOR_BOTTLENECK_P99_LAG_MS:
            manifest["deviations"].append(
                f"load generator fell behind its schedule: P99 send lag {lag['p99_ms']:.1f} ms "
                f"(> {GENERATOR_BOTTLENECK_P99_LAG_MS:g} ms); the generator, not the target, "
                "may have limited the offered load (draft 4.2.5)"
            )
        run_span.set_attribute(semconv.RUN_MANIFEST, json.dumps(manifest, sort_keys=True))
        run_span.end()
        await client.aclose()
        sys.setswitchinterval(switch_interval)
        gc.unfreeze()
    return outcome
