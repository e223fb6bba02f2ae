"""The API server's side of the hooks' exporter process: a bounded queue, a writer thread, a pipe.

vLLM's API server is one Python process whose CPU (one GIL) bounds vLLM's throughput at high
concurrency; building four spans per request, encoding them as OTLP protobuf and sending them over
HTTP there cost it about 0.3 ms of CPU per 64-token request on this project's 2-core VM
(``bench/hook_hot_path.py``: +372 µs per request in-process, +57 µs with this process). With
``OTELBENCH_VLLM_EXPORT=process`` (the default) that work runs in a child process of the API
server instead, ``python -m otelbench_vllm.exporter`` (:mod:`otelbench_vllm.exporter`), started with
``subprocess.Popen`` and the API server's own interpreter (not ``multiprocessing``, whose spawn
would re-import vLLM's ``__main__`` and torch in the child). The API server keeps only:

- per finished request, on vLLM's output-processing thread (:meth:`ExporterProcess.submit`): one
  ``deque.append`` of the request's :class:`~otelbench_vllm.spans.FinishedRequest` record. The
  queue is bounded (:data:`MAX_QUEUED_RECORDS`): when it is full the record is dropped and
  counted (``HookStats.records_dropped``), never waited for;
- a daemon writer thread that wakes when records arrive, lets them gather for
  :data:`BATCH_DELAY_S`, pickles them in batches and writes each batch as one frame (a 4-byte
  little-endian length, then the pickle) to the child's stdin. A child that reads slowly blocks
  this thread on the pipe, not the engine: the queue then fills and drops;
- a daemon reader thread that reads the child's stdout: one JSON line per second with the
  child's counts (:data:`CHILD_FIELDS`: spans exported, failed, spool counts …), added to
  the API server's :class:`~otelbench_vllm.hook.HookStats` as differences, so that the
  ``otelbench_hook_spans_*`` metrics on vLLM's ``/metrics`` keep counting.

The first frame carries the child's configuration: the resource attributes and the API server's
pid (the spans' ``process.pid``). The child reads the same ``OTEL_*`` and ``OTELBENCH_SPOOL_*``
variables, inherited, and so exports and spools exactly as the API server did: one spool slot per
child, so one per API server.

Lifecycle: the child starts on the first finished request. If it dies, that is logged once, the
records it had not yet reported received plus those in the failed write are counted as dropped,
and it is started again, at most :data:`MAX_RESTARTS` times, when the next record comes. A death
is noticed when its stdout ends, not only at the next write: a write can land in the pipe of a
child that is still dying (SIGKILL makes its main thread a zombie while its other threads still
hold the pipe open), and those records are counted as dropped then, not whenever the next
request finishes; after that every record is dropped
and counted. At interpreter exit (``atexit``), :meth:`ExporterProcess.close` sends what is
queued, closes the child's stdin and waits up to :data:`EXIT_WAIT_S` for the child to flush its
batch span processor and exit (then kills it). The child exits when its stdin closes, whoever
closes it (the API server's exit, or its death), so it never outlives vLLM by more than its final
export; it ignores SIGINT and SIGTERM, which reach it when a terminal or a service manager
signals the whole process group, so that the API server's exit, not the signal, ends it after
its last batch.

Time domains are untouched: the record carries the API server's monotonic→unix offset.

Example::

    exporter = ExporterProcess(stats, resource_attributes)
    exporter.submit(record)        # on the engine's thread; never blocks
    exporter.close(timeout=10.0)   # at exit (also registered with atexit)
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import site
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otelbench_vllm.hook import HookStats
    from otelbench_vllm.spans import FinishedRequest

__all__ = [
    "BATCH_DELAY_S",
    "CHILD_FIELDS",
    "EXIT_WAIT_S",
    "MAX_BATCH",
    "MAX_QUEUED_RECORDS",
    "MAX_RESTARTS",
    "ExporterProcess",
    "read_frames",
    "write_frame",
]

_log = logging.getLogger("vllm.plugins.otelbench")

MAX_QUEUED_RECORDS = 4096
"""Records waiting for the writer thread at most (about 0.7 kB each at 64 tokens, 8 kB at 1,000):
at 200 finished requests/s, 20 s of a stalled exporter process."""
MAX_BATCH = 512
"""Records per frame at most."""
BATCH_DELAY_S = 0.02
"""How long the writer lets records gather after the first one arrives (batches of many records
are cheaper to pickle and write; 20 ms is nothing beside the batch span processor's delay)."""
MAX_RESTARTS = 3
"""Times a dead exporter process is started again before the hooks give up on it."""
EXIT_WAIT_S = 10.0
"""How long the API server waits at exit for the exporter process to flush and exit."""

CHILD_FIELDS: tuple[str, ...] = (
    "spans_exported",
    "spans_export_failed",
    "export_errors",
    "hook_errors",
    "spans_sent",
    "spans_spooled",
    "spans_replayed",
    "spans_dropped",
    "spans_rejected",
    "records_torn",
)
"""The ``HookStats`` counts the exporter process keeps and reports (the API server adds them).
``spans_ended`` is not one: the API server counts it as each request finishes, so that spans in
the queue, the pipe or a dead child stay ``spans_unaccounted`` (ended, neither exported nor
failed), as spans in or dropped from a batch processor's queue do in-process."""

_HEADER = struct.Struct("<I")
_MODULE = "otelbench_vllm.exporter"


def write_frame(out: IO[bytes], payload: bytes) -> None:
    """One frame: the payload's length (4 bytes, little-endian), then the payload; flushed."""
    out.write(_HEADER.pack(len(payload)) + payload)
    out.flush()


def read_frames(stream: IO[bytes]) -> Iterator[bytes]:
    """The payloads of the frames on ``stream``, until it ends (a frame cut short ends it too)."""
    while True:
        header = stream.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        payload = stream.read(size)
        if len(payload) < size:
            return
        yield payload


def _child_environment() -> dict[str, str]:
    """The API server's environment, plus this package's directory on ``PYTHONPATH`` where the
    interpreter would not find it by itself (a source checkout rather than an install)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent.parent)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages()}
    if here not in installed:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


class _Child:
    """One exporter process, its reader thread, and what it last reported."""

    def __init__(
        self, config: Mapping[str, Any], stats: HookStats, on_exit: Callable[[], None]
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", _MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_child_environment(),
        )
        self.sent = 0
        self.seen: dict[str, int] = {}
        self._stats = stats
        self._on_exit = on_exit
        self.exited = threading.Event()
        """Set when its stdout ended: every thread of it has exited (its pipes are closed)."""
        assert self.proc.stdin is not None
        self.stdin: IO[bytes] = self.proc.stdin
        write_frame(self.stdin, pickle.dumps(dict(config), protocol=pickle.HIGHEST_PROTOCOL))
        self.reader = threading.Thread(
            target=self._read, name="otelbench-exporter-reader", daemon=True
        )
        self.reader.start()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        with stdout:
            for line in stdout:
                try:
                    report = json.loads(line)
                except ValueError:
                    continue
                for field in CHILD_FIELDS:
                    delta = int(report.get(field, 0)) - self.seen.get(field, 0)
                    if delta:
                        self._stats.add(field, delta)
                self.seen = {k: int(v) for k, v in report.items()}
        self.exited.set()
        self._on_exit()

    def send(self, batch: list[FinishedRequest]) -> None:
        write_frame(self.stdin, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
        self.sent += len(batch)

    def unreported(self) -> int:
        """Records sent that the child had not reported received (call once it has exited)."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        self.reader.join(timeout=1.0)
        return max(0, self.sent - self.seen.get("records_received", 0))

    def finish(self, timeout: float) -> bool:
        """Close its stdin and wait up to ``timeout`` s for it to exit; True if it did."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return False
        self.reader.join(timeout=1.0)
        return True


class ExporterProcess:
    """The API server's handle on the exporter process (module docstring); the ``process``
    export sink of :class:`otelbench_vllm.hook.RequestHook`."""

    def __init__(
        self,
        stats: HookStats,
        resource_attributes: Mapping[str, str],
        *,
        max_queued: int = MAX_QUEUED_RECORDS,
        max_restarts: int = MAX_RESTARTS,
    ) -> None:
        self.stats = stats
        self._config = {"resource": dict(resource_attributes), "pid": os.getpid()}
        self._queue: deque[FinishedRequest] = deque()
        self._max_queued = max_queued
        self._max_restarts = max_restarts
        self._wake = threading.Event()
        self._child: _Child | None = None
        self._writer: threading.Thread | None = None
        self._writer_lock = threading.Lock()
        self._closing = False
        self._gave_up = False
        self._warned = False

    @property
    def records_sent(self) -> int:
        """Records written to the running exporter process so far."""
        return self._child.sent if self._child is not None else 0

    @property
    def pid(self) -> int | None:
        """The running exporter process's pid (None before the first finished request)."""
        return self._child.proc.pid if self._child is not None else None

    # ------------------------------------------------------------------ engine thread
    def submit(self, record: FinishedRequest) -> None:
        """Queue one record for the exporter process; drop it (counted) when the queue is full,
        after the process was given up on, or once closing."""
        queue = self._queue
        if len(queue) >= self._max_queued or self._gave_up or self._closing:
            self.stats.add("records_dropped")
            return
        queue.append(record)
        if self._writer is None:
            self._start_writer()
        if not self._wake.is_set():
            self._wake.set()

    def _start_writer(self) -> None:
        with self._writer_lock:
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._run, name="otelbench-exporter-writer", daemon=True
                )
                self._writer.start()
                atexit.register(self.close)

    # ------------------------------------------------------------------ writer thread
    def _run(self) -> None:
        queue = self._queue
        while True:
            self._wake.wait()
            if not self._closing:
                time.sleep(BATCH_DELAY_S)
            self._wake.clear()
            while queue:
                batch = [queue.popleft() for _ in range(min(len(queue), MAX_BATCH))]
                self._send(batch)
            child = self._child
            if child is not None and child.exited.is_set():
                self._lost(child, 0)  # died between batches: count what it never received now
            if self._closing:
                return

    def _send(self, batch: list[FinishedRequest]) -> None:
        child = self._live_child()
        if child is None:
            self.stats.add("records_dropped", len(batch))
            return
        try:
            child.send(batch)
        except (OSError, ValueError):  # a closed or broken pipe: the child is gone
            self._lost(child, len(batch))

    def _live_child(self) -> _Child | None:
        """The running child; started (again) when there is none, up to the restart bound."""
        child = self._child
        if child is not None and (child.exited.is_set() or child.proc.poll() is not None):
            self._lost(child, 0)
            child = None
        if child is None and not self._gave_up:
            child = self._spawn()
        return child

    def _spawn(self) -> _Child | None:
        try:
            self._child = _Child(self._config, self.stats, on_exit=self._wake.set)
        except Exception as exc:  # noqa: BLE001 - no exporter process: records are dropped
            self._give_up(f"cannot start the exporter process ({type(exc).__name__}: {exc})")
            return None
        return self._child

    def _lost(self, child: _Child, in_flight: int) -> None:
        """The child died: count what it never built, log once, allow a bounded restart."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.proc.wait(timeout=1.0)
        self.stats.add("records_dropped", in_flight + child.unreported())
        if not self._warned:
            self._warned = True
            _log.warning(
                "otelbench hooks: the exporter process (pid %d) exited with %s; its unexported "
                "requests are counted in records_dropped; starting another (at most %d times; "
                "logged once)",
                child.proc.pid,
                child.proc.returncode,
                self._max_restarts,
            )
        if self.stats.exporter_restarts >= self._max_restarts:
            self._give_up(f"it died {self.stats.exporter_restarts + 1} times")
        else:
            self.stats.add("exporter_restarts")
        self._child = None  # last: ``pid`` None tells that the death is fully accounted

    def _give_up(self, reason: str) -> None:
        self._gave_up = True
        _log.error(
            "otelbench hooks: no exporter process: %s; spans are no longer built (every finished "
            "request is counted in records_dropped)",
            reason,
        )

    # ------------------------------------------------------------------ exit
    def close(self, timeout: float = EXIT_WAIT_S) -> bool:
        """Send what is queued, close the exporter process's stdin and wait for it to export
        and exit, at most ``timeout`` s in all; then it is killed (and what it had not
        exported is lost). True when it exited by itself; idempotent."""
        deadline = time.monotonic() + timeout
        self._closing = True
        writer = self._writer
        if writer is not None:
            self._wake.set()
            writer.join(timeout=max(0.0, deadline - time.monotonic()))
        child = self._child
        if writer is not None and writer.is_alive() and child is not None:
            child.proc.kill()  # it stopped reading: the writer is stuck on the full pipe
            writer.join(timeout=1.0)
        left = len(self._queue)
        if left:
            self._queue.clear()
            self.stats.add("records_dropped", left)
        child = self._child
        if child is None or child.finish(deadline - time.monotonic()):
            return True
        child.proc.kill()
        _log.warning(
            "otelbench hooks: the exporter process (pid %d) was still exporting after %.0f s "
            "and was killed",
            child.proc.pid,
            timeout,
        )
        child.finish(1.0)
        return False
