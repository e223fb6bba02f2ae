"""The test run's memory watchdog: a test whose process grows past a bound fails, named, with the
stack of the moment, before the kernel's OOM killer ends the whole worker.

A pytest-xdist worker of the quick tier once grew to 23.7 GB and was OOM-killed; nothing said
which test grew it. This plugin (registered by ``tests/conftest.py``; ``-p tests.memory_watchdog``
elsewhere) runs in every process that runs tests — each pytest-xdist worker, and the one process
of the timing and vLLM tiers (not the xdist controller, which runs none) — a daemon thread that
reads, every :data:`INTERVAL_S`, the resident set size of

* this process (``/proc/self/statm``), and
* each of its descendants, one by one (children found through ``/proc/<pid>/task/*/children``,
  or the ppid field of every ``/proc/<pid>/stat`` where the kernel has no ``children`` file):
  the load generator's worker processes (children of the forkserver, itself a child of this
  process), embedded collectors, scripted servers, vLLM. Each process is held to the bound on
  its own; they are not summed (a vLLM tier process has several servers of 1-3 GB each beside
  it).

**Above the bound** (default :data:`DEFAULT_LIMIT`, per process; ``OTELBENCH_TEST_RSS_LIMIT`` sets
it: ``512MiB``, ``6GiB``, bytes, or ``off``) the watchdog takes the main thread's Python stack
(``sys._current_frames``; the other threads' innermost frames; the top allocation sites when
``tracemalloc`` is tracing), and, while a test's setup, call or teardown runs, sends the main thread
``SIGUSR2``, whose handler raises :class:`MemoryBoundExceeded` where the main thread is (a
``BaseException``: an ``except Exception`` in the code under test does not swallow it; a blocking
system call is interrupted). The test's report is made *failed* with its node id, the RSS of every
process watched and that stack, whatever the test did with the exception. Once per test phase.
Outside a test (collection, a session fixture's teardown) the report goes to stderr and the
session's exit status is made 1.

**Hard stop.** A process still growing at :data:`HARD_FACTOR` × the bound (a C loop the signal
cannot interrupt, or a test that caught the exception and went on) is stopped: a descendant is
sent SIGKILL; this process writes the report and every thread's stack to stderr (``faulthandler``),
kills its descendants and exits with status :data:`HARD_EXIT_STATUS` (pytest-xdist then reports
the test it was running as crashed) — before the kernel picks a process of its own choosing.

**Cost.** A sample reads one ``statm`` for this process and, per descendant, its ``children`` and
``statm`` files: ~25 µs with none, ~0.1 ms with a few, four times a second (measured in
``tests/unit/test_memory_watchdog.py``'s docstring); below 0.05 % of a core, and the GIL held
only between reads.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import re
import signal
import sys
import threading
import time
import traceback
import tracemalloc
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Final

import pytest

from tests.fixtures.procfs import (
    children_files_exist,
    cmdline,
    comm,
    descendants,
    parent_tree,
    rss_bytes,
)

__all__ = [
    "DEFAULT_LIMIT",
    "ENV_LIMIT",
    "HARD_FACTOR",
    "INTERVAL_S",
    "MemoryBoundExceeded",
    "MemoryWatchdog",
    "parse_limit",
]

ENV_LIMIT: Final = "OTELBENCH_TEST_RSS_LIMIT"
DEFAULT_LIMIT: Final = 4 << 30
"""4 GiB per process: ~20 times what the largest test process of the quick tier reaches, under a
fifth of this 24 GiB machine (three test runs may share it)."""
INTERVAL_S: Final = 0.25
"""Between samples. A runaway allocation grows at most a few GB/s here: at 0.25 s it is caught
well before 1.5 × a 4 GiB bound."""
HARD_FACTOR: Final = 1.5
STEP_DIVISOR: Final = 4
"""After a breach, a later test is blamed once the process has grown by another bound / 4 (and
at once when it fell back under the bound in between): the memory a failed test leaves behind
is its own failure, not the next test's."""
HARD_EXIT_STATUS: Final = 70
SIGNAL: Final = signal.SIGUSR2
_UNITS: Final = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class MemoryBoundExceeded(BaseException):
    """Raised in the main thread when a watched process's RSS passed the bound."""


def parse_limit(text: str | None) -> int | None:
    """The bound in bytes from ``OTELBENCH_TEST_RSS_LIMIT``'s value; None: off.

    >>> parse_limit("512MiB"), parse_limit("6G"), parse_limit("1000"), parse_limit("off")
    (536870912, 6442450944, 1000, None)
    """
    if text is None or not text.strip():
        return DEFAULT_LIMIT
    text = text.strip().lower()
    if text in ("off", "0", "none"):
        return None
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?", text)
    if match is None:
        raise pytest.UsageError(
            f"{ENV_LIMIT}={text!r}: give bytes, or a size like 512MiB or 6GiB, or 'off'"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def _runner_dirs() -> tuple[str, ...]:
    """The directories of pytest's, pluggy's and pytest-xdist's own code (and execnet's)."""
    dirs = []
    for name in ("_pytest", "pluggy", "pytest", "xdist", "execnet", "runpy"):
        with contextlib.suppress(ImportError):
            file = getattr(importlib.import_module(name), "__file__", None)
            if file:
                path = Path(file).resolve()
                dirs.append(str(path if name == "runpy" else path.parent))
    return tuple(dirs)


_RUNNER: Final = _runner_dirs()


def _trim(frames: traceback.StackSummary) -> traceback.StackSummary:
    """The stack without the runner's frames below the test's (pytest, pluggy, xdist)."""
    for i, frame in enumerate(frames):
        if not (frame.filename.startswith(_RUNNER) or frame.filename.startswith("<")):
            return traceback.StackSummary.from_list(frames[i:])
    return frames


@dataclass
class Breach:
    """One bound passed: where, by which process, and what the main thread was doing."""

    where: str
    pid: int
    rss: int
    limit: int
    sizes: dict[int, int]
    stack: str
    command: str = ""
    notes: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)
    """Each descendant's command name (``/proc/<pid>/comm``) at the breach."""

    def __post_init__(self) -> None:
        if not self.names:
            self.names = {p: comm(p) for p in self.sizes if p != os.getpid()}

    def text(self) -> str:
        own = self.pid == os.getpid()
        who = "this test process" if own else f"its descendant {self.command!r}"
        lines = [
            f"memory watchdog: {self.where}: RSS of {who} (pid {self.pid}) {_gib(self.rss)} "
            f"passed the bound {_gib(self.limit)} per process ({ENV_LIMIT})",
            "processes watched: "
            + "; ".join(
                f"pid {p} ({'this' if p == os.getpid() else self.names.get(p, '?')}) {_gib(n)}"
                for p, n in self.sizes.items()
            ),
            "the main thread's stack at that moment (most recent call last):",
            self.stack.rstrip(),
            *self.notes,
        ]
        return "\n".join(lines)


def _main_stack() -> tuple[str, list[str]]:
    """The main thread's stack, and one line per other thread (its innermost frame)."""
    frames: dict[int, FrameType] = sys._current_frames()
    main_id = threading.main_thread().ident
    main = frames.get(main_id) if main_id is not None else None
    stack = (
        "".join(_trim(traceback.extract_stack(main)).format())
        if main is not None
        else "(not found)\n"
    )
    names = {t.ident: t.name for t in threading.enumerate()}
    others = []
    for ident, frame in frames.items():
        if ident in (main_id, threading.get_ident()):
            continue
        code = frame.f_code
        others.append(
            f"  thread {names.get(ident, ident)}: {code.co_filename}:{frame.f_lineno} "
            f"in {code.co_name}"
        )
    return stack, others


def _top_allocations(limit: int = 10) -> list[str]:
    if not tracemalloc.is_tracing():
        return []
    stats = tracemalloc.take_snapshot().statistics("lineno")[:limit]
    return ["top allocation sites (tracemalloc):", *(f"  {s}" for s in stats)]


class MemoryWatchdog:
    """The sampler thread and the pytest hooks that turn a breach into a failed test."""

    def __init__(
        self, limit: int, interval_s: float = INTERVAL_S, capture: Any | None = None
    ) -> None:
        self.limit = limit
        self.interval_s = interval_s
        self.children_files = children_files_exist()
        self.where: str | None = None
        """``<node id> (<phase>)`` while a test phase runs in the main thread; None between."""
        self.breaches: dict[str, Breach] = {}
        """Per test phase (``where``): the first breach during it."""
        self.outside: list[Breach] = []
        """Breaches between test phases, not yet charged to a test."""
        self.samples = 0
        self.sample_s = 0.0
        self._capture = capture
        """pytest's capture manager: the hard stop's report goes past the captured stderr."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="otelbench-memory-watchdog", daemon=True
        )
        self._armed: dict[int, int] = {}
        """Per pid, the RSS above which its next breach is: the bound, or after a breach (the
        memory stays: a failed test's traceback holds its frames) that RSS plus a step, until
        the process is back under the bound."""
        self._pending: str | None = None
        """The phase the main thread is to raise in (set before the signal is sent)."""
        self._previous_handler: Callable[[int, FrameType | None], Any] | int | None = None

    # -- the thread ------------------------------------------------------------------------
    def start(self) -> None:
        self._previous_handler = signal.signal(SIGNAL, self._raise)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(SIGNAL, self._previous_handler)

    def _raise(self, _signum: int, _frame: FrameType | None) -> None:
        """SIGUSR2's handler, in the main thread: raise while the phase that passed the bound
        still runs (the signal may land just after it ended: then its report fails it alone).
        No lock here: the main thread may hold it when the handler runs."""
        __tracebackhide__ = True
        pending, where = self._pending, self.where
        if pending is None or pending != where:
            return
        self._pending = None
        breach = self.breaches.get(pending)
        summary = breach.text().splitlines()[0] if breach is not None else "memory watchdog"
        raise MemoryBoundExceeded(summary)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            started = time.perf_counter()
            sizes = self.sample()
            self.sample_s += time.perf_counter() - started
            self.samples += 1
            for pid, n in sizes.items():
                if n <= self.limit:
                    self._armed.pop(pid, None)  # back under the bound: armed again
            over = {pid: n for pid, n in sizes.items() if n > self._armed.get(pid, self.limit)}
            worst = max(sizes, key=sizes.__getitem__)
            if sizes[worst] > HARD_FACTOR * self.limit:
                self._hard_stop(sizes, worst)
            elif over:
                self._breach(sizes, over)

    def sample(self) -> dict[int, int]:
        """RSS of this process and of each descendant, by pid (this one first)."""
        me = os.getpid()
        sizes = {me: rss_bytes() or 0}
        if self.children_files:
            kids = descendants(me)
        elif self.samples % 8 == 0:  # a scan of every process's stat costs more: every 2 s
            kids = descendants(me, parent_tree())
        else:
            kids = []
        for pid in kids:
            n = rss_bytes(pid)
            if n is not None:
                sizes[pid] = n
        return sizes

    def _record(self, sizes: dict[int, int], pid: int, what: str = "") -> Breach | None:
        """The breach of ``pid`` in the running phase, unless that phase has one already."""
        with self._lock:
            where = self.where
            if where is not None and where in self.breaches:
                return None
            stack, others = _main_stack()
            breach = Breach(
                (where or "outside any test phase") + what,
                pid,
                sizes[pid],
                self.limit,
                dict(sizes),
                stack,
                command=cmdline(pid),
                notes=(["other threads:", *others] if others else []) + _top_allocations(),
            )
            if where is None:
                self.outside.append(breach)
            else:
                self.breaches[where] = breach
        return breach

    def _breach(self, sizes: dict[int, int], over: dict[int, int]) -> None:
        for pid, n in over.items():  # a later test is blamed only for growth of its own
            self._armed[pid] = n + self.limit // STEP_DIVISOR
        pid = max(over, key=over.__getitem__)
        breach = self._record(sizes, pid)
        if breach is not None and self.where is not None:
            self._interrupt(self.where)

    def _interrupt(self, where: str) -> None:
        main = threading.main_thread().ident
        if main is not None:
            self._pending = where
            signal.pthread_kill(main, SIGNAL)

    def _hard_stop(self, sizes: dict[int, int], pid: int) -> None:
        """A process past HARD_FACTOR × the bound: a descendant is killed (the test fails); this
        process reports to the real stderr and exits."""
        what = f" (hard stop at {HARD_FACTOR:g} x the bound)"
        if pid != os.getpid():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            self._armed.pop(pid, None)
            breach = self._record(sizes, pid, what)
            if breach is not None:
                breach.notes.append(f"memory watchdog: sent SIGKILL to pid {pid}")
                if self.where is not None:
                    self._interrupt(self.where)
            return
        stack, _ = _main_stack()
        breach = Breach(
            (self.where or "outside any test phase") + what,
            pid,
            sizes[pid],
            self.limit,
            dict(sizes),
            stack,
            command=cmdline(pid),
        )
        if self._capture is not None:
            with contextlib.suppress(Exception):  # the report matters more
                self._capture.suspend_global_capture(in_=False)
        sys.stderr.write(breach.text() + "\nmemory watchdog: every thread's stack:\n")
        sys.stderr.flush()
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            faulthandler.dump_traceback(all_threads=True)
        for kid in sizes:
            if kid != os.getpid():
                with contextlib.suppress(OSError):
                    os.kill(kid, signal.SIGKILL)
        os._exit(HARD_EXIT_STATUS)

    # -- pytest hooks ----------------------------------------------------------------------
    @contextlib.contextmanager
    def _phase(self, item: pytest.Item, when: str) -> Iterator[None]:
        with self._lock:
            self.where = f"{item.nodeid} ({when})"
        try:
            yield
        finally:
            with self._lock:
                self.where = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "setup"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "call"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._phase(item, "teardown"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A phase that passed the bound fails, whatever became of the exception; a breach
        between phases fails the next test's setup, saying so."""
        report = yield
        with self._lock:
            texts = [b.text() for b in self.outside] if call.when == "setup" else []
            if texts:
                texts.insert(0, "memory watchdog: before this test (between test phases):")
                self.outside.clear()
            breach = self.breaches.get(f"{item.nodeid} ({call.when})")
        if breach is not None:
            texts.append(breach.text())
        if texts:
            report.outcome = "failed"
            longrepr = str(report.longrepr) + "\n\n" if report.longrepr else ""
            report.longrepr = longrepr + "\n".join(texts)
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A breach no test was charged with (the session's end): on the terminal, and the
        session fails."""
        with self._lock:
            left, self.outside = self.outside, []
        if not left:
            return
        capture = self._capture
        if capture is not None:
            capture.suspend_global_capture(in_=False)
        for breach in left:
            sys.stderr.write(breach.text() + "\n")
        sys.stderr.flush()
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


_KEY: Final = "otelbench-memory-watchdog"


def pytest_configure(config: pytest.Config) -> None:
    """Start the watchdog in a process that runs tests (not pytest-xdist's controller)."""
    controller = not hasattr(config, "workerinput") and bool(
        getattr(config.option, "numprocesses", None)
    )
    limit = parse_limit(os.environ.get(ENV_LIMIT))
    if controller or limit is None or config.pluginmanager.has_plugin(_KEY):
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signals go to the main thread only (pytester's in-process runs)
    watchdog = MemoryWatchdog(limit, capture=config.pluginmanager.get_plugin("capturemanager"))
    config.pluginmanager.register(watchdog, _KEY)
    watchdog.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    watchdog = config.pluginmanager.get_plugin(_KEY)
    if isinstance(watchdog, MemoryWatchdog):
        watchdog.stop()
        config.pluginmanager.unregister(watchdog, _KEY)
