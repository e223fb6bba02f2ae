"""Drives one benchmark run: workload × arrival schedule → instrumented client → spans.

Open loop (draft 4.2.3, 4.2.5): every send time is precomputed from the seed before the first
request leaves; one scheduler coroutine sleeps until each send time and starts the request as its
own task, never waiting for a response, so a slow response cannot delay a later send (the
wake-up at each send time: :mod:`otelbench.loadgen.deadline`). The
**schedule lag** (actual send − scheduled send, monotonic clock) of every request is recorded on
its span and summarised in the manifest; a large lag means the generator, not the server, was the
bottleneck, and the run is flagged.

Closed loop (draft 4.2.4): ``concurrency`` streams each send their next request as soon as the
previous one completes, until the request count is reached.

Worker processes: the measured load is split into shares (:mod:`otelbench.loadgen.share`), one
per load-generating process. With one (the default where the caller gives no collector endpoint
to export to, ``export``), the share runs on this process's event loop; with more
(``RunConfig.workers``, or :func:`otelbench.loadgen.workers.default_workers`' choice), in worker
processes (:mod:`otelbench.loadgen.workers`) that keep the same schedule from one ``t0``. Each
load-generating process measures its event loop's lateness and its CPU
(:mod:`otelbench.loadgen.health`): the manifest's ``client_health``, which the report's
timing-resolution check (draft 4.2.1) reads; ``load.workers`` says how many and why.

Arrival processes (``poisson``, ``uniform``, ``bursty``, ``trace``) are registered in
:mod:`otelbench.loadgen.arrivals`; their parameters go in ``LoadSpec.arrival_params`` and the
manifest records them, with defaults filled in, under ``load.arrival``.

Shards (:mod:`otelbench.loadgen.shard`): with ``RunConfig.shard`` this host sends one shard of
the run's schedule from the agreed wall-clock start; its manifest carries ``shard`` (index, host,
how late it started) and ``clock`` (its clock evidence, draft 4.7.2), and the warm-up runs on one
shard only.

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
import contextlib
import gc
import inspect
import json
import time
import uuid
from array import array
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import numpy as np

from otelbench import __version__, semconv
from otelbench.client import AsyncLLMClient, CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.affinity import CpuPlan, pin_thread, read_back
from otelbench.loadgen.arrivals import (
    ARRIVALS,
    arrival_needs_rate,
    arrival_parameters,
    arrival_schedule,
)
from otelbench.loadgen.clocksync import clock_evidence
from otelbench.loadgen.health import LoopMonitor, WorkerHealth, client_health
from otelbench.loadgen.shard import Shard, agreed_t0, shard_part
from otelbench.loadgen.share import (
    RequestRecord,
    Sender,
    Share,
    measure_share,
    split_load,
    timing_process,
)
from otelbench.loadgen.tokenizers import Tokenizer, load_tokenizer
from otelbench.loadgen.warmup import (
    DEFAULT_CONCURRENCY,
    WARMUP_SEED_OFFSET,
    WarmupOutcome,
    WarmupSpec,
    run_warmup,
)
from otelbench.loadgen.workers import START_MARGIN_NS, ExportSpec, WorkerPool, default_workers
from otelbench.loadgen.workloads import (
    A1_VOCAB_SIZE,
    WORKLOADS,
    WorkloadRequest,
    check_workload_params,
    make_workload,
)
from otelbench.model import report as rt
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.manifest import RunManifest, SendLag
from otelbench.model.sut import SutDeclaration
from otelbench.spool import SpoolStats

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = [
    "ExportSpec",
    "LoadSpec",
    "RequestRecord",
    "RunConfig",
    "RunOutcome",
    "RunTally",
    "check_workload",
    "execute_run",
]

LoadMode = Literal["poisson", "uniform", "bursty", "trace", "closed_loop"]

GENERATOR_BOTTLENECK_P99_LAG_MS: Final = 10.0
"""A run whose P99 schedule lag exceeds this is flagged (the manifest's
``schedule_lag.generator_bottleneck``, draft 4.2.5): the generator could not keep time."""


@dataclass(frozen=True)
class LoadSpec:
    """How requests arrive: an open-loop arrival process at ``rate``, or closed loop.

    ``arrival_params`` are the arrival process's own parameters (``bursty``: ``cv``; ``trace``:
    ``path``, ``time_scale``; ``trace`` needs no ``rate``), JSON as the run manifest records
    them (a ``Path`` given for ``path`` is kept as its string). The schedule is built once here
    to check them (a bad trace file fails now, not mid-run).

    Example::

        LoadSpec(mode="bursty", requests=200, rate=10.0, arrival_params={"cv": 3.0})
        LoadSpec(mode="trace", requests=500, arrival_params={"path": "arrivals.txt"})
        LoadSpec(mode="closed_loop", requests=200, concurrency=8)
    """

    mode: LoadMode
    requests: int
    rate: float | None = None
    concurrency: int | None = None
    arrival_params: JsonObject = field(default_factory=dict)

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
    workload_params: JsonObject = field(default_factory=dict)
    api: Literal["completions"] = "completions"
    ignore_eos: bool = False
    extra_body: JsonObject = field(default_factory=dict)
    """Merged into every request body (server-specific parameters)."""
    sut: SutDeclaration = field(default_factory=SutDeclaration)
    """The system under test as declared or detected (:class:`SutDeclaration`): ``boundary``
    (draft 4.1: Model Engine, Application Gateway or Compound System), ``software``,
    ``hardware`` …"""
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
    workers: int | None = None
    """Load-generating worker processes for the measured load
    (:mod:`otelbench.loadgen.workers`); None: :func:`default_workers` chooses from the cores
    and the load. More than one needs the collector endpoint (``execute_run``'s ``export``)."""
    loadgen_cpus: CpuPlan | None = None
    """``--loadgen-cpus``: the CPUs the measuring event loops run on, one each, and the rest for
    everything else the run starts (:mod:`otelbench.loadgen.affinity`; checked when made, while
    this process may still use every CPU). None: nothing is pinned."""
    shard: Shard | None = None
    """``--shard I/N``: this host sends shard *I* of *N* of the run's schedule from the agreed
    start (:mod:`otelbench.loadgen.shard`); None: the whole run, from now."""
    clock_reference: str | None = None
    """``--clock-reference HOST[:PORT]``: an SNTP server a sharded run measures its wall-clock
    offset from (draft 4.7.2, :mod:`otelbench.loadgen.clocksync`)."""

    @property
    def shard_index(self) -> int | None:
        """This host's shard (a request span's ``otelbench.loadgen.shard``); None unsharded."""
        return None if self.shard is None else self.shard.index

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.workers}")


@dataclass
class RunTally:
    """What a run counts of its measured requests whatever it keeps of their records: how many
    were sent, which failed (by ``error.type``), and every schedule lag (8 bytes a request)."""

    sent: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    schedule_lags_us: array[int] = field(default_factory=lambda: array("q"))

    def add(self, record: RequestRecord) -> None:
        """Count one measured request's record."""
        self.sent += 1
        if not record.result.ok:
            self.failed[record.result.error_type or "error"] += 1
        if record.schedule_lag_us is not None:
            self.schedule_lags_us.append(record.schedule_lag_us)


@dataclass
class RunOutcome:
    """What the run measured, in memory; the same facts are on the exported spans.

    ``results`` holds the measured requests' results only (completion order); ``records`` every
    request the run sent, warm-up and probe requests included; ``warmup`` the warm-up outcome;
    ``tally`` the counts of the measured requests. Without ``keep_records`` (``execute_run``'s
    ``keep_records=False``: ``otelbench run``, whose report comes from the store) ``results`` and
    ``records`` stay empty and the tally is all the run keeps of each request, so a long run's
    memory does not grow with its requests' chunk times.
    """

    # The lists stay out of repr(): asyncio.run formats its main task's repr, result included,
    # when it restores the SIGINT handler: about 0.2 s of CPU per 4,000 requests, at the end.
    run_id: str
    manifest: RunManifest = field(repr=False)
    results: list[CompletionResult] = field(default_factory=list, repr=False)
    records: list[RequestRecord] = field(default_factory=list, repr=False)
    warmup: WarmupOutcome | None = field(default=None, repr=False)
    tally: RunTally = field(default_factory=RunTally, repr=False)
    keep_records: bool = field(default=True, repr=False)

    def add(self, record: RequestRecord) -> None:
        """One request's record, as it completes: counted, and kept if the run keeps them."""
        measured = record.phase == semconv.PHASE_MEASURE
        if measured:
            self.tally.add(record)
        if self.keep_records:
            self.records.append(record)
            if measured:
                self.results.append(record.result)


def _lag_summary(lags_us: array[int]) -> SendLag:
    """The manifest's ``schedule_lag`` of these send lags (µs), flagged when its P99 is over
    :data:`GENERATOR_BOTTLENECK_P99_LAG_MS` (draft 4.2.5)."""
    if not lags_us:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None, "generator_bottleneck": False}
    a = np.asarray(lags_us, dtype=np.float64) / 1000.0
    p99 = float(np.percentile(a, 99))
    return {
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": p99,
        "max_ms": float(a.max()),
        "generator_bottleneck": p99 > GENERATOR_BOTTLENECK_P99_LAG_MS,
    }


def _arrival(load: LoadSpec, seed: int) -> rt.ArrivalSpec:
    if load.mode == "closed_loop":
        return {"process": "closed_loop", "concurrency": load.concurrency}
    return arrival_parameters(load.mode, rate=load.rate, seed=seed, params=load.arrival_params)


def _tokenizer(config: RunConfig) -> Tokenizer | None:
    if config.tokenizer is None:
        return None
    if config.tokenizer == "server":
        return load_tokenizer(config.target, model=config.model)
    return load_tokenizer(config.tokenizer, model=config.model)


def _tokenizer_declaration(tokenizer: Tokenizer | None, vocab: object) -> rt.Tokenizer:
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
    workload_spec: rt.WorkloadSpec,
    items: list[WorkloadRequest],
    tokenizer: Tokenizer | None = None,
) -> RunManifest:
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
        "load": {
            "mode": config.load.mode,
            "requests": config.load.requests,
            "rate": config.load.rate,
            "concurrency": config.load.concurrency,
            "arrival_params": dict(config.load.arrival_params),
            "arrival": _arrival(config.load, config.seed),
        },
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
    export: ExportSpec | None = None,
    spool_stats: SpoolStats | None = None,
    neighbours: Mapping[str, int | None] | None = None,
    keep_records: bool = True,
) -> RunOutcome:
    """Run the load described by ``config``; returns every request's result.

    Per-request failures are results, not exceptions. The run span (``otelbench.run``) carries
    the manifest and is ended even when the run is cancelled, so a partial run is still reported.
    With ``config.warmup`` set, the warm-up (draft 4.5) runs first on the same client and its
    outcome is the manifest's ``warmup`` entry; ``on_result`` sees measured requests only.

    With more than one worker (``config.workers``, or :func:`default_workers`' choice when it is
    None and ``export`` is given) the measured load runs in worker processes
    (:mod:`otelbench.loadgen.workers`) that export their spans as ``export`` says; their span
    export counts are added to ``spool_stats``. Without ``export`` the run has one worker, this
    process. Each worker's loop lateness and CPU are the manifest's ``client_health``.

    With ``config.loadgen_cpus`` the measuring event loops run on those CPUs, one each
    (:mod:`otelbench.loadgen.affinity`; this thread, when it measures, for the measurement
    only), and ``load.workers.cpus`` records the plan and the CPUs of the ``neighbours`` (name →
    pid: the processes the caller started for the run, e.g. the collector) as read back now.

    ``keep_records=False``: the outcome keeps its tally of the measured requests, not their
    records (:class:`RunOutcome`), for callers that read the results from the spans.
    """
    from opentelemetry import trace

    # The workload's keyword arguments: its JSON parameters and, for one built from text, the
    # run's tokenizer (checked by the workload's declared parameter types).
    params: dict[str, object] = {"seed": config.seed, **config.workload_params}
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

    def prompt_of(item: WorkloadRequest) -> str | list[int]:
        if tokenizer is None or config.prompt_format != "text":
            return item.prompt_token_ids
        return tokenizer.decode(item.prompt_token_ids)

    # Measured prompts are decoded to text before the schedule starts, not on its clock.
    # Warm-up and probe items, not measured, are decoded as they are sent.
    prompts = [prompt_of(item) for item in items]
    offsets_s = (
        None
        if config.load.mode == "closed_loop"
        else [
            float(x)
            for x in arrival_schedule(
                config.load.mode,
                rate=config.load.rate,
                n=len(items),
                seed=config.seed,
                params=config.load.arrival_params,
            )
        ]
    )
    concurrency = config.load.concurrency
    shard = config.shard
    if shard is not None:  # this host's part of the one schedule, then its workers' parts
        part = shard_part(items, prompts, offsets_s, concurrency, shard)
        items, prompts, offsets_s, concurrency = (
            part.items,
            part.prompts,
            part.offsets_s,
            part.concurrency,
        )
        manifest["clock"] = clock_evidence(config.clock_reference)
    workers, chosen = _workers(config, items, offsets_s, concurrency, export)
    shares = split_load(items, prompts, offsets_s, concurrency, workers)
    load_workers: rt.LoadWorkers = {"count": workers, "chosen": chosen}
    manifest["load"]["workers"] = load_workers
    plan = config.loadgen_cpus
    if plan is not None:
        load_workers["cpus"] = plan.describe(neighbours or {})
        manifest["notes"].extend(filter(None, [plan.note()]))

    warmup = config.warmup if shard is None or shard.warms_up else None
    if warmup is None and config.warmup is not None:
        manifest["notes"].append(f"the warm-up (draft 4.5) ran on shard {semconv.WARMUP_SHARD}")
    outcome = RunOutcome(config.run_id, manifest, keep_records=keep_records)
    tracer = trace.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__, tracer_provider)
    run_span = tracer.start_span(
        semconv.SPAN_RUN,
        kind=trace.SpanKind.INTERNAL,
        attributes={
            semconv.RUN_ID: config.run_id,
            semconv.WORKLOAD_NAME: config.workload,
            **({} if shard is None else {semconv.LOADGEN_SHARD: shard.index}),
        },
    )
    client = AsyncLLMClient(
        config.target, tracer_provider=tracer_provider, timeout=config.timeout_s
    )
    sender = Sender(config, client, on_record=outcome.add)
    pool = None
    if workers > 1:
        assert export is not None
        pool = WorkerPool(config, shares, export, plan)
        load_workers["start_method"] = "(not started)"
    healths: list[WorkerHealth] = []
    t0 = time.perf_counter_ns()
    started_unix = time.time()
    try:
        with timing_process():
            if pool is not None:
                pool.start()  # the workers start while this process warms the target up
                load_workers["start_method"] = pool.start_method
            if warmup is not None:
                warm_workload = make_workload(
                    config.workload, **{**params, "seed": config.seed + WARMUP_SEED_OFFSET}
                )
                outcome.warmup = await run_warmup(
                    warmup,
                    warm_workload,
                    lambda item, phase: sender.send(item, prompt_of(item), phase),
                    concurrency=config.load.concurrency or DEFAULT_CONCURRENCY,
                )
                manifest["warmup"] = outcome.warmup.to_manifest()
                manifest["deviations"].extend(outcome.warmup.deviations)
                # The warm-up's garbage is collected now, not during the measurement.
                gc.unfreeze()
                gc.collect()
                gc.freeze()
            with _pinned_here(plan if pool is None else None):
                # the monitor measures the clock when made: before t0
                monitor = LoopMonitor(shares[0].worker) if pool is None else None
                started_unix = time.time()
                t0 = time.perf_counter_ns()
                if shard is not None:
                    t0, started_unix = await _agreed_start(shard, manifest)
                if pool is None:
                    assert monitor is not None
                    healths = [await _measure_here(sender, shares[0], t0, monitor, on_result, plan)]
                else:
                    start = t0 if shard is not None else None
                    t0, healths = await pool.measure(_collect(outcome, on_result), start)
    finally:
        finished_unix = time.time()
        if pool is not None:
            pool.close()
            healths = healths or pool.healths
            manifest["deviations"].extend(pool.failures)
            for name, n in pool.counts.items():
                if spool_stats is not None:
                    spool_stats.add(name, n)
        _finish_manifest(config, outcome, healths, t0, started_unix, finished_unix)
        run_span.set_attribute(semconv.RUN_MANIFEST, json.dumps(manifest, sort_keys=True))
        run_span.end()
        await client.aclose()
    return outcome


async def _agreed_start(shard: Shard, manifest: RunManifest) -> tuple[int, float]:
    """The agreed start as this host's ``t0`` (monotonic) and wall-clock time, waited for until
    :data:`~otelbench.loadgen.workers.START_MARGIN_NS` before it (the measuring loops then wait
    for their own deadlines). A host late for it keeps the agreed ``t0``: its sends show the
    lag, and the manifest's ``shard.start_late_ms`` says by how much."""
    assert shard.start_at_unix is not None
    t0, late_ns = agreed_t0(shard.start_at_unix)
    manifest["shard"] = shard.manifest(late_ns)
    wait_ns = -late_ns - START_MARGIN_NS
    if wait_ns > 0:
        await asyncio.sleep(wait_ns / 1e9)
    return t0, shard.start_at_unix


def _workers(
    config: RunConfig,
    items: list[WorkloadRequest],
    offsets_s: list[float] | None,
    concurrency: int | None,
    export: ExportSpec | None,
) -> tuple[int, str]:
    """How many worker processes measure the run (this host's part of it: ``items``,
    ``offsets_s`` or ``concurrency`` streams), and why."""
    if config.workers is not None:
        if config.workers > 1 and export is None:
            raise ConfigError(
                "several load-generator workers export their own spans: this run has no "
                "collector endpoint to give them"
            )
        streams = concurrency
        if offsets_s is None and streams is not None and config.workers > streams:
            # a procedure's closed-loop levels start at a few streams: one worker per stream
            return streams, f"--workers {config.workers}, at most one per closed-loop stream"
        return config.workers, "--workers"
    if export is None:
        return 1, "one process: this run's caller exports the spans itself"
    plan = config.loadgen_cpus
    cpus = None if plan is None else len(plan.load)
    return default_workers(concurrency, items, offsets_s, cpus)


def _pinned_here(plan: CpuPlan | None) -> contextlib.AbstractContextManager[None]:
    """With ``--loadgen-cpus``: this thread, the event loop's, on worker 0's CPU while it
    measures (the span exporter's thread stays on the other CPUs)."""
    return contextlib.nullcontext() if plan is None else pin_thread(plan.cpus_of(0))


async def _measure_here(
    sender: Sender,
    share: Share,
    t0: int,
    monitor: LoopMonitor,
    on_result: Callable[[CompletionResult], None] | None,
    plan: CpuPlan | None = None,
) -> WorkerHealth:
    """One worker: the measured load on this process's own loop, its health monitored by
    ``monitor`` (made before ``t0``; and, pinned, the CPUs it found itself on)."""
    if plan is not None:
        monitor.health.cpus = read_back()
    monitor.start()
    try:
        await measure_share(sender, share, t0, on_result)
    finally:
        health = monitor.stop()
    return health


def _collect(
    outcome: RunOutcome, on_result: Callable[[CompletionResult], None] | None
) -> Callable[[RequestRecord], None]:
    """A worker's record, as it arrives, into the outcome (and to ``on_result`` if measured)."""

    def take(record: RequestRecord) -> None:
        outcome.add(record)
        if on_result is not None and record.phase == semconv.PHASE_MEASURE:
            on_result(record.result)

    return take


def _finish_manifest(
    config: RunConfig,
    outcome: RunOutcome,
    healths: list[WorkerHealth],
    t0: int,
    started_unix: float,
    finished_unix: float,
) -> None:
    """The manifest's timing, schedule lag and client health, once the load has ended."""
    manifest = outcome.manifest
    warms_up = config.shard is None or config.shard.warms_up
    if config.warmup is not None and warms_up and manifest["warmup"] is None:
        manifest["warmup"] = {"mode": "warm", "interrupted": True}
        manifest["deviations"].append("the run was interrupted during its warm-up")
    lag = _lag_summary(outcome.tally.schedule_lags_us)
    p99 = lag["p99_ms"]
    bottleneck = lag["generator_bottleneck"]
    manifest["started_unix"] = started_unix
    manifest["finished_unix"] = finished_unix
    manifest["duration_s"] = (time.perf_counter_ns() - t0) / 1e9
    manifest["requests_sent"] = outcome.tally.sent
    manifest["schedule_lag"] = lag
    manifest["client_health"] = client_health(healths) if healths else None
    if bottleneck:
        manifest["deviations"].append(
            f"load generator fell behind its schedule: P99 send lag {p99:.1f} ms "
            f"(> {GENERATOR_BOTTLENECK_P99_LAG_MS:g} ms); the generator, not the target, "
            "may have limited the offered load (draft 4.2.5)"
        )
