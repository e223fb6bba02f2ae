"""The load generator's own health: how late its event loop runs, and how much CPU it uses.

A client timestamp is only as good as the event loop that takes it: a chunk that arrives while the
loop is busy (parsing other streams, exporting spans, garbage collection) or while the process
waits for a core is stamped when the loop gets to it, not when it arrived. Draft 4.2.1 asks for
1 ms timing resolution or better; a loop that runs more than 1 ms late breaks that whatever the
clock's resolution. So every load-generating process measures its own lateness through the
measurement (report ``run.client_health``; the timing-resolution compliance check reads it):

* **Loop lateness**: a timer armed every :data:`PERIOD_NS` at absolute deadlines on
  ``CLOCK_MONOTONIC`` (the timerfd of :class:`otelbench.loadgen.deadline.DeadlineTimer`, the same
  wake-up path as a socket becoming readable: epoll → reader callback → the waiting task). The
  lateness of a tick is when the waiting task runs minus the deadline. A tick missed because the
  loop was blocked is not dropped: every deadline passed during the block is a sample with its
  own lateness (the correction for coordinated omission), so a 20 ms stall weighs as ten 2 ms
  ticks of 20, 18, … 2 ms, as it weighs on the chunks that arrived meanwhile. The ticks are
  counted, a second's worth at a time, into a log-linear histogram of a fixed size
  (:data:`LATENESS_SUB_BITS`: percentiles within 0.05 %, half a µs at 1 ms; the count and the
  maximum exact), so a worker's memory does not grow with the length of the run (the samples
  themselves were 8 bytes a tick: 14 MiB an hour).
* **CPU**: ``resource.getrusage(RUSAGE_SELF)`` at the start and the end of the measurement (user
  and system seconds of every thread of the process, the span exporter's included), the wall time
  between, their ratio (1.0 = one core busy all the time), and the involuntary context switches
  (times the kernel took the core away), and, where Linux keeps scheduler statistics
  (``/proc/thread-self/schedstat``), how long the event loop's thread was ready to run but waited
  for a core (run-queue wait): lateness with a high run-queue wait and a low CPU share comes from
  other processes holding the cores, not from the load generator's own work. On a virtual
  machine the host may also take the CPUs away (steal, ``/proc/stat``): the share of the
  machine's CPU time stolen over the measurement is recorded too.

* **Read delay**: how long each read's data waited in the kernel before the loop read it (the
  read's time minus the kernel's receive time, :mod:`otelbench.client.readdelay`): the lateness
  the chunks themselves met, where the timer's ticks sample it.
* **The clock itself** (:func:`measure_clock`): the resolution the clock reports
  (``time.get_clock_info("perf_counter")`` and ``time.clock_getres(CLOCK_MONOTONIC)``) and how
  long one read of it takes, measured by reading it back to back: a timestamp can be no finer
  than either.
* **Garbage collection** (:class:`GcPauses`): every CPython collection during the measurement and
  how long it held the GIL (``gc.callbacks``), so that lateness of the load generator's own
  making can be told from a busy host.

Clock domain: ``time.perf_counter_ns()`` (CLOCK_MONOTONIC, ns); summaries in ms.

Example::

    monitor = LoopMonitor()
    monitor.start()
    ...  # the measurement, on the same event loop
    health = monitor.stop()          # WorkerHealth
    summary = client_health([health])
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np

from otelbench import draft
from otelbench.client.readdelay import READ_DELAYS, DelayHistogram
from otelbench.loadgen.deadline import DeadlineTimer
from otelbench.model import report as rt

__all__ = [
    "CLOCK_READS",
    "LATENESS_SUB_BITS",
    "PERIOD_NS",
    "GcPauses",
    "LoopMonitor",
    "WorkerHealth",
    "client_health",
    "measure_clock",
]

PERIOD_NS: Final = 2_000_000
"""The lateness timer's period: 500 ticks/s, about 0.5 % of a core."""
SCHEDSTAT: Final = Path("/proc/thread-self/schedstat")
"""The calling thread's CPU time, run-queue wait (ns) and time slices (Linux)."""
PROC_STAT: Final = Path("/proc/stat")
"""The machine's CPU time by state; the 8th field of its ``cpu`` line is steal (a VM's CPU time
that the host gave to something else)."""
FOLD_TICKS: Final = 500
"""Every this many ticks (a second) the pending ticks and reads' delays are folded into their
histograms."""
LATENESS_SUB_BITS: Final = 10
"""The lateness histogram's resolution: 1,024 buckets per power of two, each within 0.1 % of its
values, so a percentile is within 0.05 % (at 1 ms, half a µs; below 1 µs exact): 384 KiB of
counts per worker, whatever the length of the run."""
METHOD_TIMERFD: Final = (
    "a timerfd on CLOCK_MONOTONIC armed every 2 ms at absolute deadlines, its expiry served by "
    "the event loop like a readable socket; lateness = when the waiting task ran − the deadline, "
    "every deadline passed while the loop was blocked counted with its own lateness; CPU from "
    "getrusage(RUSAGE_SELF) over the measurement, the loop thread's run-queue wait from "
    "/proc/thread-self/schedstat, the host's steal from /proc/stat; read delay = a read's time "
    "minus the kernel's receive time of its data (SO_TIMESTAMPNS)"
)
CLOCK_READS: Final = 2_000
"""Back-to-back reads of the clock by :func:`measure_clock` (about 0.2 ms)."""
CLOCK_NAME: Final = "time.perf_counter_ns (CLOCK_MONOTONIC)"
"""The clock every client timestamp and offset is taken with."""
METHOD_SLEEP: Final = (
    "asyncio.sleep every 2 ms (no timerfd: lateness includes epoll's rounding up to 1 ms); "
    "CPU from getrusage(RUSAGE_SELF) over the measurement"
)


@dataclass
class GcPauses:
    """CPython's garbage collections in one process, and how long each stopped it: while one
    runs (in whichever thread allocated), it holds the GIL, so the event loop cannot stamp a
    chunk. Counted from ``gc.callbacks`` between :meth:`watch` and :meth:`unwatch`; a fixed
    size however long the run. A full collection's pause grows with the objects alive (e.g.
    thousands of requests in flight when the target falls behind)."""

    collections: int = 0
    full: int = 0
    """Collections of the oldest generation (2)."""
    over_limit: int = 0
    """Pauses longer than :data:`otelbench.draft.TIMING_RESOLUTION_MS` (draft 4.2.1's 1 ms)."""
    total_ns: int = 0
    max_ns: int = 0
    _started_ns: int = field(default=0, repr=False)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._started_ns = now
            return
        if not self._started_ns:
            return  # watched from the middle of a collection
        pause = now - self._started_ns
        self._started_ns = 0
        self.collections += 1
        self.full += info.get("generation") == 2
        self.over_limit += pause > draft.TIMING_RESOLUTION_MS * 1e6
        self.total_ns += pause
        self.max_ns = max(self.max_ns, pause)

    def watch(self) -> None:
        """Count every collection from now on."""
        gc.callbacks.append(self._callback)

    def unwatch(self) -> None:
        """Stop counting (idempotent)."""
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._callback)

    def merge(self, other: GcPauses) -> None:
        """Add ``other``'s counts (another process's) to these."""
        self.collections += other.collections
        self.full += other.full
        self.over_limit += other.over_limit
        self.total_ns += other.total_ns
        self.max_ns = max(self.max_ns, other.max_ns)

    def summary(self) -> rt.GcPauses:
        """``{collections, full, over_limit, total_ms, max_ms}`` (docs/report-schema.md)."""
        return {
            "collections": self.collections,
            "full": self.full,
            "over_limit": self.over_limit,
            "total_ms": round(self.total_ns / 1e6, 3),
            "max_ms": round(self.max_ns / 1e6, 3),
        }


@dataclass
class WorkerHealth:
    """One load-generating process's measurement of itself (picklable: workers send it back)."""

    worker: int
    pid: int
    method: str
    lateness: DelayHistogram = field(default_factory=lambda: DelayHistogram(LATENESS_SUB_BITS))
    """The loop's lateness at every tick, ns."""
    read_delays: DelayHistogram = field(default_factory=DelayHistogram)
    user_s: float = 0.0
    system_s: float = 0.0
    wall_s: float = 0.0
    involuntary_switches: int = 0
    runqueue_wait_s: float | None = None
    host_steal_share: float | None = None
    cpus: list[int] | None = None
    """With ``--loadgen-cpus``: the CPUs this process was allowed at the measurement's start,
    as ``os.sched_getaffinity(0)`` read them back (:mod:`otelbench.loadgen.affinity`)."""
    clock: rt.ClientClock | None = None
    """:func:`measure_clock` at the measurement's start (None: not measured)."""
    gc: GcPauses | None = None
    """The process's garbage collections during the measurement (None: not watched)."""

    def summary(self) -> rt.WorkerHealth:
        """This worker's entry of ``run.client_health.workers``."""
        cpu_s = self.user_s + self.system_s
        out: rt.WorkerHealth = {
            "worker": self.worker,
            "pid": self.pid,
            "cpus": self.cpus,
            "loop_lateness_ms": self.lateness.summary_ms(),
            "read_delay_ms": self.read_delays.summary_ms(),
            "cpu": {
                "user_s": round(self.user_s, 6),
                "system_s": round(self.system_s, 6),
                "wall_s": round(self.wall_s, 6),
                "utilization": round(cpu_s / self.wall_s, 4) if self.wall_s > 0 else None,
                "involuntary_context_switches": self.involuntary_switches,
                "runqueue_wait_s": _round(self.runqueue_wait_s),
                "runqueue_wait_share": _round(
                    self.runqueue_wait_s / self.wall_s
                    if self.runqueue_wait_s is not None and self.wall_s > 0
                    else None
                ),
                "host_steal_share": _round(self.host_steal_share),
            },
        }
        if self.cpus is None:  # pinned workers only
            del out["cpus"]
        if self.gc is not None:
            out["gc_pauses"] = self.gc.summary()
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _runqueue_wait_ns() -> int | None:
    """Nanoseconds this thread has waited on a run queue (ready, not running); None where the
    kernel keeps no scheduler statistics."""
    try:
        return int(SCHEDSTAT.read_bytes().split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _steal_ticks() -> tuple[int, int] | None:
    """The machine's (steal, all) CPU time in clock ticks so far, summed over its CPUs
    (``/proc/stat``); None where there is none."""
    try:
        fields = [int(x) for x in PROC_STAT.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (fields[7], sum(fields)) if len(fields) == 8 else None


def measure_clock(reads: int = CLOCK_READS) -> rt.ClientClock:
    """The client clock as this process finds it: its reported resolution
    (``time.get_clock_info``, and ``clock_getres`` where the platform has it), its
    implementation, and the delay between back-to-back reads over ``reads`` reads (ns:
    ``{count, p50, p99, max}``), the finest step a timestamp can resolve."""
    info = time.get_clock_info("perf_counter")
    try:
        getres: float | None = time.clock_getres(time.CLOCK_MONOTONIC) * 1e9
    except (AttributeError, OSError):
        getres = None
    stamps = array("q", bytes(8 * reads))
    read = time.perf_counter_ns
    for i in range(reads):
        stamps[i] = read()
    steps = np.diff(np.frombuffer(stamps, dtype=np.int64)).astype(np.float64)
    return {
        "clock": CLOCK_NAME,
        "implementation": info.implementation,
        "resolution_ns": info.resolution * 1e9,
        "clock_getres_ns": getres,
        "read_delay_ns": {
            "count": int(steps.size),
            "p50": float(np.percentile(steps, 50)),
            "p99": float(np.percentile(steps, 99)),
            "max": float(steps.max()),
        },
    }


def _worst_clock(workers: list[WorkerHealth]) -> rt.ClientClock | None:
    """The coarsest clock of ``workers`` (largest resolution, then slowest read P50)."""
    clocks = [w.clock for w in workers if w.clock is not None]
    if not clocks:
        return None
    return max(
        clocks,
        key=lambda c: (
            max(c["resolution_ns"], c["clock_getres_ns"] or 0.0),
            c["read_delay_ns"]["p50"],
        ),
    )


def client_health(workers: list[WorkerHealth]) -> rt.ClientHealth:
    """The report's ``run.client_health``: the coarsest of the workers' clocks, loop lateness
    over every worker's ticks together, and each worker's own lateness and CPU
    (docs/report-schema.md)."""
    ticks = DelayHistogram(LATENESS_SUB_BITS)
    reads = DelayHistogram()
    for w in workers:
        ticks.merge(w.lateness)
        reads.merge(w.read_delays)
    methods = sorted({w.method for w in workers})
    clock = _worst_clock(workers)
    watched = [w.gc for w in workers if w.gc is not None]
    pauses = GcPauses()
    for g in watched:
        pauses.merge(g)
    out: rt.ClientHealth = {
        "method": "; ".join(methods),
        "period_ms": PERIOD_NS / 1e6,
        "limit_ms": draft.TIMING_RESOLUTION_MS,
        "loop_lateness_ms": ticks.summary_ms(),
        "read_delay_ms": reads.summary_ms(),
        "workers": [w.summary() for w in sorted(workers, key=lambda w: w.worker)],
    }
    if clock is not None:
        out["clock"] = clock
    if watched:
        out["gc_pauses"] = pauses.summary()
    return out


class LoopMonitor:
    """Samples the running event loop's lateness and the process's CPU until :meth:`stop`.

    Create it before the schedule's ``t0`` (it measures the clock then, which takes tens of ms
    the first time), start it inside the loop to watch; ``worker`` is the process's worker index.
    """

    def __init__(self, worker: int = 0) -> None:
        self.health = WorkerHealth(worker, os.getpid(), METHOD_TIMERFD)
        self.health.clock = measure_clock()
        self._task: asyncio.Task[None] | None = None
        self._usage: resource.struct_rusage | None = None
        self._t0 = 0
        self._waited_ns: int | None = None
        self._steal: tuple[int, int] | None = None
        self._pending = array("q")
        """Ticks' lateness (ns) not yet counted into ``health.lateness``."""

    def start(self) -> None:
        """Start sampling (from the loop's own thread)."""
        self._usage = resource.getrusage(resource.RUSAGE_SELF)
        self._waited_ns = _runqueue_wait_ns()
        self._steal = _steal_ticks()
        READ_DELAYS.start()
        self.health.gc = GcPauses()
        self.health.gc.watch()
        self._t0 = time.perf_counter_ns()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        timer = DeadlineTimer()
        if not timer.precise:
            timer.close()
            self.health.method = METHOD_SLEEP
        deadline = time.perf_counter_ns() + PERIOD_NS
        try:
            while True:
                if timer.precise:
                    await timer.sleep_until(deadline)
                else:
                    await asyncio.sleep(max(0, deadline - time.perf_counter_ns()) / 1e9)
                now = time.perf_counter_ns()
                samples = self._pending
                while deadline <= now:
                    samples.append(now - deadline)
                    deadline += PERIOD_NS
                if len(samples) >= FOLD_TICKS:
                    self._fold()
                    READ_DELAYS.fold()
        finally:
            timer.close()

    def _fold(self) -> None:
        self.health.lateness.add(self._pending)
        self._pending = array("q")

    def stop(self) -> WorkerHealth:
        """Stop sampling and return what was measured (the timer task ends at its next turn)."""
        end = resource.getrusage(resource.RUSAGE_SELF)
        waited_ns = _runqueue_wait_ns()
        steal = _steal_ticks()
        self.health.read_delays = READ_DELAYS.stop()
        if self.health.gc is not None:
            self.health.gc.unwatch()
        self._fold()
        wall_ns = time.perf_counter_ns() - self._t0
        if self._task is not None:
            self._task.cancel()
            self._task = None
        start = self._usage
        if start is not None:
            self.health.user_s = end.ru_utime - start.ru_utime
            self.health.system_s = end.ru_stime - start.ru_stime
            self.health.involuntary_switches = end.ru_nivcsw - start.ru_nivcsw
            self.health.wall_s = wall_ns / 1e9
        if waited_ns is not None and self._waited_ns is not None:
            self.health.runqueue_wait_s = (waited_ns - self._waited_ns) / 1e9
        if steal is not None and self._steal is not None and steal[1] > self._steal[1]:
            self.health.host_steal_share = (steal[0] - self._steal[0]) / (steal[1] - self._steal[1])
        return self.health
