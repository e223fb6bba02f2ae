"""CPUs of its own for the load generator (``--loadgen-cpus``): the list, its check, the pinning.

Draft 4.2.1 asks the load generator to time to 1 ms or better, and 4.2.5 to keep its schedule;
both fail when the event loop that stamps the chunks waits for a core behind other processes
(:mod:`otelbench.loadgen.health` measures that wait). On a machine whose cores the run shares
with its own collector, a SUT it launched or a server under test, ``--loadgen-cpus 0`` keeps
the measuring event loops on CPU 0 and everything else otelbench starts off it:

::

    the calling process       moves itself (every thread) to the REST of its allowed CPUs
                              before it starts the collector or vLLM: they inherit that mask
    measuring loop K          its thread on CPU ``load[K % len(load)]`` from the measurement's
                              start (the in-process loop: the calling thread, put back on the
                              rest after; a worker process: its main thread, its other threads
                              — the span exporter's — on the rest, set at the worker's start)
    nothing left (REST empty) the rest stays unpinned, and the report says so

One CPU per measuring loop, not the whole list: a thread the kernel moves between CPUs waits on
another run queue and loses its cache, which is lateness the monitor would measure; with more
workers than CPUs they share them round-robin. :func:`default_workers
<otelbench.loadgen.workers.default_workers>` counts the given CPUs, so the default runs one
worker per CPU at most. The loop's thread alone, not its process: the span exporter's thread
encodes its batches in bursts, and on the loop's CPU the woken loop waits on the run queue
behind it. Measured on a 2-CPU machine (200 requests/s through the gateway,
back to back, CPU 0 otherwise idle): the whole process on CPU 0, loop lateness P99 1.13 ms and
1.2 % run-queue wait; the loop's thread alone, 0.83 ms and 0.4 %.

Linux affinity is per thread: ``os.sched_setaffinity(0, …)`` sets the calling thread, and a new
thread or child process inherits its creator's mask. :func:`pin_process` therefore sets every
thread of ``/proc/self/task`` (repeated until no new thread appears).

The list's syntax is taskset's and cpuset's: ``0``, ``0-3``, ``0,2,4-7``.

Example::

    plan = CpuPlan.of(parse_cpus("0"))          # load (0,), rest: the other allowed CPUs
    with away_from(plan):                       # this process on the rest
        collector.start()                       # inherits the rest
        with pin_thread(plan.cpus_of(0)):       # the measuring loop on CPU 0
            ...
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from otelbench.errors import ConfigError
from otelbench.model import report as rt

__all__ = [
    "CpuPlan",
    "away_from",
    "cpu_plan",
    "move_process",
    "parse_cpus",
    "pin_process",
    "pin_thread",
    "read_back",
]

TASKS: Final = Path("/proc/self/task")
"""One directory per thread of this process, named by its thread id (Linux)."""
_ITEM: Final = re.compile(r"(\d+)(?:-(\d+))?")


def parse_cpus(text: str) -> tuple[int, ...]:
    """A taskset/cpuset CPU list as sorted CPU numbers; a malformed or empty list is one
    ConfigError.

    >>> parse_cpus("0,2,4-6")
    (0, 2, 4, 5, 6)
    >>> parse_cpus("3-1")
    Traceback (most recent call last):
    ...
    otelbench.errors.ConfigError: --loadgen-cpus '3-1': the range 3-1 runs backwards
    """
    if not text.strip():
        raise ConfigError("--loadgen-cpus is empty: give CPUs like 0, 0-3 or 0,2,4-7")
    cpus: set[int] = set()
    for item in text.split(","):
        match = _ITEM.fullmatch(item.strip())
        if match is None:
            raise ConfigError(
                f"--loadgen-cpus {text!r}: {item.strip()!r} is not a CPU number or range "
                "(expected a list like 0, 0-3 or 0,2,4-7)"
            )
        first = int(match[1])
        last = first if match[2] is None else int(match[2])
        if last < first:
            raise ConfigError(f"--loadgen-cpus {text!r}: the range {first}-{last} runs backwards")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def cpu_plan(value: str | None) -> CpuPlan | None:
    """``--loadgen-cpus`` ``value`` as a checked :class:`CpuPlan` (made while this process may
    still use every CPU); None when the option is not given.

    >>> cpu_plan(None) is None
    True
    """
    return None if value is None else CpuPlan.of(parse_cpus(value))


def _allowed() -> set[int]:
    """The CPUs this process may run on; a platform without CPU affinity is one ConfigError."""
    if not hasattr(os, "sched_setaffinity") or not hasattr(os, "sched_getaffinity"):
        raise ConfigError(
            "--loadgen-cpus needs CPU affinity (os.sched_setaffinity), which this platform "
            "lacks: run without it"
        )
    return set(os.sched_getaffinity(0))


@dataclass(frozen=True)
class CpuPlan:
    """Where a run's processes go: the measuring event loops on ``load``, the rest of otelbench
    on ``rest`` (the other CPUs this process was allowed; empty: none left, left unpinned)."""

    load: tuple[int, ...]
    rest: tuple[int, ...]

    @classmethod
    def of(cls, cpus: Iterable[int]) -> CpuPlan:
        """The plan for ``--loadgen-cpus`` ``cpus``, checked against this process's allowed
        CPUs (one ConfigError: empty, not allowed, no affinity on this platform)."""
        load = tuple(sorted(set(cpus)))
        if not load:
            raise ConfigError("--loadgen-cpus is empty: give CPUs like 0, 0-3 or 0,2,4-7")
        allowed = _allowed()
        outside = [c for c in load if c not in allowed]
        if outside:
            raise ConfigError(
                f"--loadgen-cpus: CPU {', '.join(map(str, outside))} is not one this process may "
                f"run on (allowed: {_ranges(allowed)})"
            )
        return cls(load, tuple(sorted(allowed - set(load))))

    def cpus_of(self, worker: int) -> tuple[int]:
        """The one CPU the event loop of worker ``worker`` runs on (round-robin over ``load``)."""
        return (self.load[worker % len(self.load)],)

    def describe(self, processes: Mapping[str, int | None]) -> rt.LoadCpus:
        """The report's ``run.load.workers.cpus``: the request, the rest, and the CPUs each of
        ``processes`` (name → pid; None: not started) was found on now."""
        found = {name: read_back(pid) for name, pid in processes.items() if pid is not None}
        return {
            "loadgen": list(self.load),
            "others": list(self.rest) if self.rest else None,
            "processes": {name: cpus for name, cpus in found.items() if cpus is not None},
        }

    def note(self) -> str | None:
        """The report note when no CPU is left for the rest of the run (None otherwise)."""
        if self.rest:
            return None
        return (
            f"--loadgen-cpus {_ranges(self.load)} leaves no other CPU this process may use: the "
            "collector, a launched SUT and the calling process ran unpinned, sharing the load "
            "generator's CPUs"
        )


def _ranges(cpus: Iterable[int]) -> str:
    """``0-3,6``: CPU numbers in the list syntax."""
    out: list[str] = []
    for cpu in sorted(cpus):
        if out and out[-1].rsplit("-", 1)[-1] == str(cpu - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{cpu}"
        else:
            out.append(str(cpu))
    return ",".join(out)


def read_back(pid: int = 0) -> list[int] | None:
    """The CPUs process ``pid`` (0: the calling thread) may run on, sorted; None when it is
    gone or the platform has no affinity."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return None


def _threads() -> set[int]:
    try:
        return {int(p.name) for p in TASKS.iterdir()}
    except OSError:
        return {0}  # no /proc: the calling thread alone


def move_process(cpus: Iterable[int]) -> None:
    """Every thread of this process on ``cpus``; a thread that appears meanwhile (with its
    creator's old mask) is set on the next pass, one that ends is skipped."""
    mask = set(cpus)
    done: set[int] = set()
    while todo := _threads() - done:
        for tid in todo:
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(tid, mask)
        done |= todo


def _masks() -> dict[int, set[int]]:
    """Each thread's CPUs, by thread id."""
    found: dict[int, set[int]] = {}
    for tid in _threads():
        with contextlib.suppress(ProcessLookupError):
            found[tid] = os.sched_getaffinity(tid)
    return found


@contextlib.contextmanager
def pin_process(cpus: Iterable[int]) -> Iterator[None]:
    """Every thread of this process on ``cpus`` inside the block; after, each thread back on
    its own previous CPUs (one started inside: on the calling thread's)."""
    before = _masks()
    own = os.sched_getaffinity(0)
    move_process(cpus)
    try:
        yield
    finally:
        move_process(own)
        for tid, mask in before.items():
            if mask != own:
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(tid, mask)


@contextlib.contextmanager
def pin_thread(cpus: Iterable[int]) -> Iterator[None]:
    """The calling thread alone on ``cpus`` inside the block (a thread it starts meanwhile
    inherits them); back on its previous CPUs after."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def away_from(plan: CpuPlan | None) -> Iterator[None]:
    """This process (every thread) on ``plan.rest`` inside the block, so that what it starts
    there inherits it; nothing without a plan or with no CPU left (:meth:`CpuPlan.note`)."""
    if plan is None or not plan.rest:
        yield
        return
    with pin_process(plan.rest):
        yield
