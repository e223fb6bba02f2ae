"""Drives one benchmark run: workload × arrival schedule → instrumented client → spans.

Open loop (draft 4.2.3, 4.2.5): every send time is precomputed from the seed before the first
request leaves; one scheduler coroutine sleeps until each send time and starts the request as its
own task, never waiting for a response, so a slow response cannot delay a later send (the
wake-up at each send time: :mod:`otelbench.loadgen.deadline`). The
**schedule lag** (actual send − scheduled send, monotonic clock) of every request is recorded on
its span and summarised in the manifest; a large lag means the generator, not the server, was the
bottleneck, and the run is flagged.

Closed loop (draft 4.2.4): ``concurrency`` workers each send their next request as soon as the
previous one completes, until the request count is reached.

Arrival processes (``poisson``, ``uniform``, ``bursty``, ``trace``) are registered in
:mod:`otelbench.loadgen.arrivals`; their parameters go in ``LoadSpec.arrival_params`` and the
manifest records them, with defaults filled in, under ``load.arrival``.

Warm-up (draft 4.5): with ``RunConfig.warmup`` set, :func:`otelbench.loadgen.warmup.run_warmup`
runs on the same client before the measurement starts (see there); its outcome is the manifest's
``warmup`` entry. Every request's span carries its class (``otelbench.request.class``) and its
phase (``otelbench.request.phase``: ``warmup``, ``probe`` or ``measure``).

Example::

    config = RunConfig(target="http://127.0.0.1:8000", model="tiny",
                       load=LoadSpec(mode="bursty", requests=100, rate=4.0,
                                     arrival_params={"cv": 2.0}),
                       seed=1, warmup=WarmupSpec())
    outcome = asyncio.run(execute_run(config, tracer_provider=provider))
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from otelbench import __version__, semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import (
    ARRIVALS,
    arrival_needs_rate,
    arrival_parameters,
    arrival_schedule,
)
from otelbench.loadgen.deadline import DeadlineTimer
from otelbench.loadgen.tokenizers import Tokenizer, load_tokenizer
from otelbench.loadgen.warmup import (
    DEFAULT_CONCURRENCY,
    WARMUP_SEED_OFFSET,
    WarmupOutcome,
    WarmupSpec,
    run_warmup,
)
from otelbench.loadgen.workloads import (
    A1_VOCAB_SIZE,
    WORKLOADS,
    WorkloadRequest,
    check_workload_params,
    make_workload,
)

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["LoadSpec", "RequestRecord", "RunConfig", "RunOutcome", "check_workload", "execute_run"]

LoadMode = Literal["poisson", "uniform", "bursty", "trace", "closed_loop"]

GIL_SWITCH_INTERVAL_S = 0.00025
GENERATOR_BOTTLENECK_P99_LAG_MS = 10.0
"""A run whose P99 schedule lag exceeds this is flagged: the generator could not keep time."""


@dataclass(frozen=True)
class LoadSpec:
    """How requests arrive: an open-loop arrival process at ``rate``, or closed loop.

    ``arrival_params`` are the arrival process's own parameters (``bursty``: ``cv``; ``trace``:
    ``path``, ``time_scale``; ``trace`` needs no ``rate``). The schedule is built once here to
    check them (a bad trace file fails now, not mid-run).

    Example::

        LoadSpec(mode="bursty", requests=200, rate=10.0, arrival_params={"cv": 3.0})
        LoadSpec(mode="trace", requests=500, arrival_params={"path": "arrivals.txt"})
        LoadSpec(mode="closed_loop", requests=200, concurrency=8)
    """

    mode: LoadMode
    requests: int
    rate: float | None = None
    concurrency: int | None = None
    arrival_params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ConfigError(f"--requests must be >= 1, got {self.requests}")
        params = {k: str(v) if isinstance(v, Path) else v for k, v in self.arrival_params.items()}
        object.__setattr__(self, "arrival_params", params)
        if self.mode == "closed_loop":
            if self.concurrency is None or self.concurrency < 1:
                raise ConfigError("closed-loop load needs --concurrency >= 1")
            if params:
                raise ConfigError("closed-loop load takes no arrival-process parameters")
        elif self.mode in ARRIVALS:
            if arrival_needs_rate(self.mode) and (self.rate is None or not self.rate > 0):
                raise ConfigError(f"open-loop {self.mode} load needs --rate > 0")
            arrival_schedule(self.mode, rate=self.rate, n=self.requests, seed=0, params=params)
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
    tokenizer: str | None = None
    """Draft 4.4: ``cl100k_base`` (Option B), a local tokenizer path or ``server`` (the target's
    ``/tokenize``; Option A). Workloads built from text (``sharegpt``) tokenize with it, and the
    report declares it. None: prompts are token ids of the target's own vocabulary (Option A)."""
    prompt_format: Literal["token_ids", "text"] = "token_ids"
    """How prompts are sent: ``token_ids`` (``prompt`` as a list of ids, token-exact; the
    default) or ``text``, the ids decoded by the declared ``tokenizer`` (needed where the path
    to the engine reads text, e.g. guardrail filters, draft 5.10; a server may re-tokenize the
    text to a slightly different count, and its usage reports what it counted)."""
    warmup: WarmupSpec | None = None
    """Draft 4.5 warm-up before measurement (:class:`WarmupSpec`); None (the default) runs
    none and the manifest lists that as a deviation; ``WarmupSpec(cold_start=True)`` declares a
    cold-start measurement (4.5.3)."""


@dataclass(frozen=True)
class RequestRecord:
    """One sent request as the runner saw it: which, in which phase, when, and its result."""

    index: int
    request_class: str
    phase: str
    scheduled_offset_us: int | None
    schedule_lag_us: int | None
    result: CompletionResult


@dataclass
class RunOutcome:
    """What the run measured, in memory; the same facts are on the exported spans.

    ``results`` holds the measured requests' results only (completion order); ``records`` every
    request the run sent, warm-up and probe requests included; ``warmup`` the warm-up outcome.
    """

    # The lists stay out of repr(): asyncio.run formats its main task's repr, result included,
    # when it restores the SIGINT handler: about 0.2 s of CPU per 4,000 requests, at the end.
    run_id: str
    manifest: dict[str, Any] = field(repr=False)
    results: list[CompletionResult] = field(default_factory=list, repr=False)
    records: list[RequestRecord] = field(default_factory=list, repr=False)
    warmup: WarmupOutcome | None = field(default=None, repr=False)


def _lag_summary(lags_us: list[int]) -> dict[str, float | None]:
    if not lags_us:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    a = np.asarray(lags_us, dtype=np.float64) / 1000.0
    return {
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "max_ms": float(a.max()),
    }


def _arrival(load: LoadSpec, seed: int) -> dict[str, Any]:
    if load.mode == "closed_loop":
        return {"process": "closed_loop", "concurrency": load.concurrency}
    return arrival_parameters(load.mode, rate=load.rate, seed=seed, params=load.arrival_params)


def _tokenizer(config: RunConfig) -> Tokenizer | None:
    if config.tokenizer is None:
        return None
    if config.tokenizer == "server":
        return load_tokenizer(config.target, model=config.model)
    return load_tokenizer(config.tokenizer, model=config.model)


def _tokenizer_declaration(tokenizer: Tokenizer | None, vocab: object) -> dict[str, Any]:
    """Draft 4.4.3: which tokenizer the token counts are in."""
    if tokenizer is not None:
        return tokenizer.describe()
    return {
        "option": "A (native)",
        "name": "the target's own tokenizer",
        "source": "prompts are sent as token ids"
        + (f" drawn from a vocabulary of {vocab}" if vocab else "")
        + "; input and output counts are the target's usage figures",
    }


def _manifest(
    config: RunConfig,
    workload_spec: dict[str, Any],
    items: list[WorkloadRequest],
    tokenizer: Tokenizer | None = None,
) -> dict[str, Any]:
    deviations = []
    notes = []
    if config.warmup is None:
        deviations.append("no warm-up procedure was run before measurement (draft 4.5)")
    elif config.warmup.cold_start:
        notes.append("cold start measurement: warm-up skipped (draft 4.5.3)")
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
        "tokenizer": _tokenizer_declaration(tokenizer, vocab),
        "load": {**asdict(config.load), "arrival": _arrival(config.load, config.seed)},
        "request_classes": dict(sorted(Counter(i.request_class for i in items).items())),
        "otelbench_version": __version__,
        "sut": config.sut,
        "request_options": {
            "prompt_format": config.prompt_format,
            "ignore_eos": config.ignore_eos,
            "stream": True,
            "extra_body": config.extra_body,
        },
        "warmup": None,
        "cold_start": config.warmup is not None and config.warmup.cold_start,
        "deviations": deviations,
        "notes": notes,
    }


def _takes_tokenizer(workload: str) -> bool:
    factory = WORKLOADS.get(workload)
    return factory is not None and "tokenizer" in inspect.signature(factory).parameters


def check_workload(config: RunConfig) -> None:
    """Fail early on a bad workload, before anything starts: build it as :func:`execute_run`
    will, or, for a workload the run hands its tokenizer (loaded then, from the target for
    ``server``), check its parameters' names and types and that a tokenizer is declared. Raises
    one ConfigError that lists the parameters the workload accepts."""
    params = {"seed": config.seed, **config.workload_params}
    if "tokenizer" not in params and _takes_tokenizer(config.workload):
        check_workload_params(config.workload, params, complete=config.tokenizer is None)
    else:
        make_workload(config.workload, **params)


async def execute_run(
    config: RunConfig,
    *,
    tracer_provider: TracerProvider | None = None,
    on_result: Callable[[CompletionResult], None] | None = None,
) -> RunOutcome:
    """Run the load described by ``config``; returns every request's result.

    Per-request failures are results, not exceptions. The run span (``otelbench.run``) carries
    the manifest and is ended even when the run is cancelled, so a partial run is still reported.
    With ``config.warmup`` set, the warm-up (draft 4.5) runs first on the same client and its
    outcome is the manifest's ``warmup`` entry; ``on_result`` sees measured requests only.
    """
    from opentelemetry import trace

    params = {"seed": config.seed, **config.workload_params}
    tokenizer = _tokenizer(config)
    if config.prompt_format == "text" and tokenizer is None:
        raise ConfigError(
            "prompt_format 'text' decodes the prompts' token ids: declare a tokenizer "
            "(a tokenizer.json, 'server' or cl100k_base)"
        )
    if tokenizer is not None and "tokenizer" not in params and _takes_tokenizer(config.workload):
        params["tokenizer"] = tokenizer
    workload = make_workload(config.workload, **params)
    items = workload.requests(config.load.requests)
    manifest = _manifest(config, workload.spec(), items, tokenizer)
    # Measured prompts are decoded to text before the schedule starts, not on its clock, and
    # looked up by the item's identity (``items`` keeps every one alive for the run; hashing a
    # long id list per send would be on the clock). Warm-up and probe items, not measured, are
    # decoded as they are sent.
    texts: dict[int, str] = {}
    if tokenizer is not None and config.prompt_format == "text":
        texts = {id(item): tokenizer.decode(item.prompt_token_ids) for item in items}

    def prompt_of(item: WorkloadRequest) -> str | list[int]:
        if tokenizer is None or config.prompt_format != "text":
            return item.prompt_token_ids
        text = texts.get(id(item))
        return tokenizer.decode(item.prompt_token_ids) if text is None else text

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
    offsets_s = (
        None
        if config.load.mode == "closed_loop"
        else arrival_schedule(
            config.load.mode,
            rate=config.load.rate,
            n=len(items),
            seed=config.seed,
            params=config.load.arrival_params,
        )
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
    t0 = time.perf_counter_ns()

    async def request(
        item: WorkloadRequest, phase: str, scheduled_ns: int | None = None
    ) -> CompletionResult:
        attributes: dict[str, str | int | float | bool] = {
            semconv.RUN_ID: config.run_id,
            semconv.WORKLOAD_NAME: config.workload,
            semconv.REQUEST_INDEX: item.index,
            semconv.REQUEST_CLASS: item.request_class,
            semconv.REQUEST_PHASE: phase,
        }
        offset_us = lag_us = None
        if scheduled_ns is not None:
            lag_us = (time.perf_counter_ns() - scheduled_ns) // 1000
            lags_us.append(lag_us)
            offset_us = (scheduled_ns - t0) // 1000
            attributes[semconv.REQUEST_SCHEDULED_OFFSET_US] = offset_us
            attributes[semconv.REQUEST_SCHEDULE_LAG_US] = lag_us
        req = CompletionRequest(
            api=config.api,
            model=config.model,
            prompt=prompt_of(item),
            max_tokens=item.max_tokens,
            temperature=item.temperature,
            extra_body=extra_body,
            attributes=attributes,
        )
        result = await client.complete(req)
        outcome.records.append(
            RequestRecord(item.index, item.request_class, phase, offset_us, lag_us, result)
        )
        return result

    async def send(item: WorkloadRequest, scheduled_ns: int | None) -> None:
        result = await request(item, semconv.PHASE_MEASURE, scheduled_ns)
        outcome.results.append(result)
        if on_result is not None:
            on_result(result)

    started_unix = time.time()
    try:
        if config.warmup is not None:
            warm_workload = make_workload(
                config.workload, **{**params, "seed": config.seed + WARMUP_SEED_OFFSET}
            )
            outcome.warmup = await run_warmup(
                config.warmup,
                warm_workload,
                request,
                concurrency=config.load.concurrency or DEFAULT_CONCURRENCY,
            )
            manifest["warmup"] = outcome.warmup.to_manifest()
            manifest["deviations"].extend(outcome.warmup.deviations)
            # The warm-up's garbage is collected now, not during the measurement.
            gc.unfreeze()
            gc.collect()
            gc.freeze()
        started_unix = time.time()
        t0 = time.perf_counter_ns()
        if offsets_s is None:
            queue = iter(items)

            async def worker() -> None:
                for item in queue:
                    await send(item, None)

            assert config.load.concurrency is not None
            await asyncio.gather(*(worker() for _ in range(config.load.concurrency)))
        else:
            tasks: set[asyncio.Task[None]] = set()
            timer = DeadlineTimer()
            try:
                for item, offset_s in zip(items, offsets_s, strict=True):
                    scheduled_ns = t0 + int(offset_s * 1e9)
                    await timer.sleep_until(scheduled_ns)
                    task = asyncio.create_task(send(item, scheduled_ns))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            finally:
                timer.close()
            if tasks:
                await asyncio.gather(*tasks)
    finally:
        finished_unix = time.time()
        if config.warmup is not None and manifest["warmup"] is None:
            manifest["warmup"] = {"mode": "warm", "interrupted": True}
            manifest["deviations"].append("the run was interrupted during its warm-up")
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
