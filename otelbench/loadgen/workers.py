"""Several load-generating processes for one run: each its own event loop, connections and spans.

One Python process times every chunk of every stream on one core; past about 64 streams at
83 chunks/s each (5k chunks/s) its event loop falls behind and the timing with it
(:mod:`otelbench.loadgen.health` measures that). A run with ``workers`` > 1 spreads its measured
load over that many worker processes (:func:`otelbench.loadgen.share.split_load`: the open-loop
schedule is the seed's whatever the count; closed-loop streams are split), each with its own
event loop, HTTP connections, health monitor and span exporter to the run's collector (its own
spool directory, ``SPOOL/worker-K``). The calling process keeps the run span, the warm-up and its
probes (draft 4.5; they run while the workers start), and merges what the workers send back.

::

    caller                                   worker K (forkserver child)
    start workers ─────── plan (share) ─────► import, exporter, client → "ready"
    warm-up (draft 4.5)                       …
    all ready: t0 = now + START_MARGIN ─ t0 ─► open loop at t0 + offsets / closed loop
    records, on_result ◄──── record ───────── each request as it completes
    health, spool counts ◄── done ─────────── flush spans; loop lateness and CPU

Start method: ``forkserver`` (one server process imports otelbench once, each worker is forked
from it: no copy of the caller's threads or heap), ``spawn`` where there is none. Every process
reads CLOCK_MONOTONIC (``time.perf_counter_ns``), system-wide on Linux, so one ``t0`` serves all.

:func:`default_workers` picks the count when none is given: enough workers for the offered load
at :data:`STREAMS_PER_WORKER` streams (closed loop) or :data:`CHUNKS_PER_WORKER_S` chunks/s
(open loop: rate × mean output tokens) each, no more than the cores this process may use less
one (left to the embedded collector's ingest and the calling process), or than the CPUs of
``--loadgen-cpus`` when they are given: worker K's event loop then runs on the K-th of them
(round-robin) and its other threads on the CPUs left (:mod:`otelbench.loadgen.affinity`), as the
worker sets them at its start.

Example::

    pool = WorkerPool(config, shares, ExportSpec("http://127.0.0.1:4318", Path("out/spool")))
    pool.start()
    ...                                       # warm-up
    healths = await pool.measure(on_record)   # list[WorkerHealth]
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from otelbench import semconv, telemetry
from otelbench.client import AsyncLLMClient
from otelbench.errors import ConfigError, OtelbenchError, WorkerError
from otelbench.loadgen.affinity import CpuPlan, move_process, read_back
from otelbench.loadgen.health import LoopMonitor, WorkerHealth
from otelbench.loadgen.share import (
    RequestRecord,
    SendConfig,
    Sender,
    Share,
    measure_share,
    steady_heap,
    timing_process,
)
from otelbench.loadgen.workloads import WorkloadRequest
from otelbench.spool import SpoolStats

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

__all__ = [
    "CHUNKS_PER_WORKER_S",
    "STREAMS_PER_WORKER",
    "ExportSpec",
    "WorkerPool",
    "default_workers",
]

STREAMS_PER_WORKER: Final = 64
"""Closed loop: streams per worker by default. Measured (issue table, 16-core host, 83 chunks/s a
stream): one process keeps its TTFT error P99 under 1 ms up to 64 streams, not at 128."""
CHUNKS_PER_WORKER_S: Final = 4000.0
"""Open loop: offered chunks/s per worker by default (64 streams × 83 chunks/s, with margin)."""
START_MARGIN_NS: Final = 50_000_000
"""``t0`` is set this far after the last worker said it is ready, so that each has the time to
receive it before its first send."""
READY_TIMEOUT_S: Final = 120.0
STOP_GRACE_S: Final = 30.0
INTERRUPT_GRACE_S: Final = 5.0


@dataclass(frozen=True)
class ExportSpec:
    """Where worker processes export their spans: the collector's OTLP/HTTP base endpoint and
    the run's spool directory (each worker spools in ``spool_dir/worker-K``; None: no spool)."""

    endpoint: str
    spool_dir: Path | None = None


def default_workers(
    concurrency: int | None,
    items: Sequence[WorkloadRequest],
    offsets_s: Sequence[float] | None,
    loadgen_cpus: int | None = None,
) -> tuple[int, str]:
    """The worker count for a run that names none, and why (stated in the report): closed loop
    (``offsets_s`` None) from its ``concurrency``, open loop from the chunk rate its ``items``
    offer at their send offsets; at most one per ``--loadgen-cpus`` CPU when that many are
    given (``loadgen_cpus``), else one per core but one."""
    if loadgen_cpus is not None:
        spare, limit = loadgen_cpus, f"at most {loadgen_cpus} (one per --loadgen-cpus CPU)"
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        cores = cores or os.cpu_count() or 1
        spare = max(1, cores - 1)  # one core for the collector's ingest and this process
        limit = f"at most {spare} (one core of {cores} left to the collector)"
    if offsets_s is None:
        streams = concurrency or 1
        need = math.ceil(streams / STREAMS_PER_WORKER)
        why = f"{streams} closed-loop streams at {STREAMS_PER_WORKER} per worker"
    else:
        span_s = float(offsets_s[-1]) if len(offsets_s) else 0.0
        chunks = sum(item.max_tokens for item in items)
        rate = chunks / span_s if span_s > 0 else 0.0
        need = max(1, math.ceil(rate / CHUNKS_PER_WORKER_S))
        why = f"{rate:,.0f} offered chunks/s at {CHUNKS_PER_WORKER_S:,.0f} per worker"
    count = max(1, min(need, spare))
    return count, f"default: {why}, {limit}"


def _context() -> BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["otelbench.loadgen.runner"])
        return ctx
    return multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class _Plan:
    config: SendConfig
    share: Share
    export: ExportSpec
    loop_cpus: tuple[int, ...] | None
    """``--loadgen-cpus``: the CPU of the worker's event loop (its main thread); None: none."""
    other_cpus: tuple[int, ...] | None
    """The CPUs the worker takes at its start, for every thread but its loop's (a forkserver
    child inherits the server's mask, which may be an earlier run's): the rest of
    ``--loadgen-cpus`` where some is left, else the caller's own."""


@dataclass
class _Worker:
    index: int
    process: Any
    conn: Connection
    ready: asyncio.Future[None] | None = None
    done: asyncio.Future[None] | None = None
    health: WorkerHealth | None = None
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None


class WorkerPool:
    """The worker processes of one run (see the module docstring); used once."""

    def __init__(
        self,
        config: SendConfig,
        shares: list[Share],
        export: ExportSpec,
        cpus: CpuPlan | None = None,
    ) -> None:
        self.config = config
        self.shares = shares
        self.export = export
        self.cpus = cpus
        self.start_method = ""
        self._workers: list[_Worker] = []
        self._on_record: Callable[[RequestRecord], None] = lambda _record: None

    def start(self) -> None:
        """Start every worker process; they get ready while the caller goes on."""
        ctx = _context()
        self.start_method = ctx.get_start_method()
        others = tuple(read_back() or ())
        if self.cpus is not None and self.cpus.rest:
            others = self.cpus.rest
        for share in self.shares:
            parent, child = ctx.Pipe()
            loop = None if self.cpus is None else self.cpus.cpus_of(share.worker)
            plan = _Plan(self.config, share, self.export, loop, others or None)
            process = ctx.Process(  # type: ignore[attr-defined]
                target=worker_main, args=(plan, child), daemon=True
            )
            process.start()
            child.close()
            self._workers.append(_Worker(share.worker, process, parent))

    async def measure(
        self, on_record: Callable[[RequestRecord], None], t0: int | None = None
    ) -> tuple[int, list[WorkerHealth]]:
        """Wait for every worker, give them one ``t0`` (the given one, a shard's agreed start,
        else :data:`START_MARGIN_NS` after the last is ready), pass each record to ``on_record``
        as it comes; returns ``t0`` and the health of every worker that finished (the span
        export counts in :attr:`counts`, why any other failed in :attr:`failures`). Raises
        :class:`~otelbench.errors.WorkerError` when none could run."""
        loop = asyncio.get_running_loop()
        self._on_record = on_record
        for w in self._workers:
            w.ready, w.done = loop.create_future(), loop.create_future()
            loop.add_reader(w.conn.fileno(), self._receive, w)
        try:
            ready = asyncio.gather(*(w.ready for w in self._workers if w.ready))
            try:
                await asyncio.wait_for(ready, READY_TIMEOUT_S)
            except TimeoutError:
                raise WorkerError(
                    f"the load-generator workers did not start within {READY_TIMEOUT_S:g} s"
                ) from None
            if t0 is None:
                t0 = time.perf_counter_ns() + START_MARGIN_NS
            for w in self._workers:
                if w.error is None:
                    w.conn.send(t0)
            await asyncio.gather(*(w.done for w in self._workers if w.done))
        finally:
            for w in self._workers:
                loop.remove_reader(w.conn.fileno())
        healths = [w.health for w in self._workers if w.health is not None]
        if not healths:
            raise WorkerError("; ".join(self.failures) or "no load-generator worker reported")
        return t0, healths

    @property
    def failures(self) -> list[str]:
        """Why each worker that did not finish its share failed, one line each."""
        return [
            f"load-generator worker {w.index} failed: {w.error}" for w in self._workers if w.error
        ]

    @property
    def counts(self) -> dict[str, int]:
        """The workers' span export counts, summed (``otelbench.spool`` counters)."""
        total: dict[str, int] = {}
        for w in self._workers:
            for name, n in w.counts.items():
                total[name] = total.get(name, 0) + n
        return total

    def _receive(self, w: _Worker) -> None:
        """The reader callback of a worker's pipe: one message."""
        self._take(w, *_recv(w))
        if w.health is not None or w.error is not None:
            asyncio.get_running_loop().remove_reader(w.conn.fileno())

    def _take(self, w: _Worker, kind: str, payload: Any) -> None:
        if kind == "record":
            self._on_record(payload)
        elif kind == "ready":
            _resolve(w.ready)
        else:
            if kind == "done":
                w.health, w.counts = payload
            else:
                w.error = str(payload)
            _resolve(w.ready)
            _resolve(w.done)

    @property
    def healths(self) -> list[WorkerHealth]:
        """The health of every worker that has reported it."""
        return [w.health for w in self._workers if w.health is not None]

    def close(self) -> None:
        """Stop the workers and release their pipes. A worker still running (the run was
        interrupted: Ctrl-C reaches the workers too, and they stop, flush their spans and report)
        has :data:`INTERRUPT_GRACE_S` to send what it has; its records and health are taken."""
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        for w in self._workers:
            while w.health is None and w.error is None and w.ready is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not w.conn.poll(left):
                    break
                self._take(w, *_recv(w))
        for w in self._workers:
            w.process.join(timeout=STOP_GRACE_S if w.health is not None else 0.1)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(timeout=STOP_GRACE_S)
            w.conn.close()


def _recv(w: _Worker) -> tuple[str, Any]:
    try:
        kind, payload = w.conn.recv()
    except (EOFError, OSError):
        return "failed", f"exited with code {w.process.exitcode} without reporting"
    return kind, payload


def _resolve(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


# ------------------------------------------------------------------------------------------
# the worker process
# ------------------------------------------------------------------------------------------


def worker_main(plan: _Plan, conn: Connection) -> None:
    """A worker process's entry point: run ``plan``'s share, report through ``conn``."""
    try:
        asyncio.run(_work(plan, conn))
    except KeyboardInterrupt:
        pass  # what was measured is reported by _work's finally
    except (OtelbenchError, OSError, EOFError) as exc:
        with contextlib.suppress(OSError):
            conn.send(("failed", str(exc)))
    finally:
        conn.close()


async def _work(plan: _Plan, conn: Connection) -> None:
    config, share, export = plan.config, plan.share, plan.export
    steady_heap()
    if plan.other_cpus is not None:  # before the exporter's thread starts: it inherits them
        move_process(plan.other_cpus)
    stats = SpoolStats()
    spool = None if export.spool_dir is None else export.spool_dir / f"worker-{share.worker}"
    try:
        provider = telemetry.make_tracer_provider(
            export.endpoint,
            run_id=config.run_id,
            service_name=semconv.SERVICE_CLIENT,
            spool_dir=spool,
            spool_stats=stats,
        )
    except ConfigError as exc:
        conn.send(("failed", str(exc)))
        return
    client = AsyncLLMClient(config.target, tracer_provider=provider, timeout=config.timeout_s)
    sender = Sender(
        config, client, worker=share.worker, on_record=lambda r: conn.send(("record", r))
    )
    if plan.loop_cpus is not None:  # this thread, the event loop's, on its CPU from now on
        os.sched_setaffinity(0, plan.loop_cpus)
    monitor = LoopMonitor(share.worker)
    health = monitor.health
    try:
        with timing_process():
            conn.send(("ready", None))
            t0 = conn.recv()
            if plan.loop_cpus is not None:
                health.cpus = read_back()
            monitor.start()
            try:
                await measure_share(sender, share, t0)
            finally:
                health = monitor.stop()
    finally:
        await client.aclose()
        telemetry.shutdown(provider)
        conn.send(("done", (health, stats.as_dict())))
