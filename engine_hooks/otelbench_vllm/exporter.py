"""The hooks' exporter process: ``python -m otelbench_vllm.exporter``, a child of vLLM's API server.

Started by :class:`otelbench_vllm.offload.ExporterProcess` (whose docstring has the protocol and
the lifecycle). It reads frames from stdin: the first is its configuration (the hooks' resource
attributes and the API server's pid), each further one a pickled batch of
:class:`~otelbench_vllm.spans.FinishedRequest` records, for which it builds the very spans the
API server would build in-process (:func:`otelbench_vllm.spans.emit_spans`, draft 4.6.3 Option
C) and exports them through the hooks' own span processor
(:func:`otelbench_vllm.export.make_span_processor`: OTLP/HTTP from the inherited ``OTEL_*``
variables, the span spool slot under ``OTELBENCH_SPOOL_DIR``, ``process.pid`` the API server's).
The spans go straight from each record to that processor (:mod:`otelbench_vllm.direct`), not
through a tracer, unless ``OTEL_TRACES_SAMPLER`` asks for a sampler other than the SDK's default.
The process runs at a lower CPU priority than vLLM's (:data:`DEFAULT_NICE`).
Every :data:`REPORT_INTERVAL_S` it writes one JSON line to stdout: its ``HookStats`` counts and
``records_received``. When stdin ends it shuts the provider down (exporting what its batch
processor holds), writes a last report and exits 0.

stdout carries only those reports: anything else printed in this process goes to stderr, which
is the API server's (so vLLM's log). The process imports neither vLLM nor torch.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO

from opentelemetry.sdk.trace import TracerProvider

from otelbench_vllm import names
from otelbench_vllm.direct import DirectSpans, direct_allowed
from otelbench_vllm.export import make_resource, make_span_processor
from otelbench_vllm.hook import HookStats
from otelbench_vllm.offload import read_frames
from otelbench_vllm.spans import FinishedRequest, emit_spans

__all__ = ["DEFAULT_NICE", "REPORT_INTERVAL_S", "main"]

REPORT_INTERVAL_S = 1.0

_log = logging.getLogger("vllm.plugins.otelbench")


class _Reporter:
    """Writes the counts as one JSON line every :data:`REPORT_INTERVAL_S` and at :meth:`stop`."""

    def __init__(self, stats: HookStats, out: IO[str]) -> None:
        self.stats = stats
        self.received = 0
        self._out = out
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otelbench-report", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(REPORT_INTERVAL_S):
            self.report()

    def report(self) -> None:
        """One report; none once the API server stopped reading (it died: nobody to tell)."""
        line = json.dumps({**self.stats.as_dict(), "records_received": self.received})
        with self._lock:
            if self._out.closed:
                return
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except OSError:
                with contextlib.suppress(OSError):
                    self._out.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.report()


def _take_stdout() -> IO[str]:
    """The reports' channel (the real stdout); ``sys.stdout`` and fd 1 become stderr."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _serve(
    frames: Iterator[bytes], emit: Callable[[FinishedRequest], None], reporter: _Reporter
) -> None:
    """Build and end the spans of every record of every batch until the frames end."""
    stats = reporter.stats
    failed = False
    for frame in frames:
        batch: list[FinishedRequest] = pickle.loads(frame)
        for record in batch:
            try:
                emit(record)
            except Exception:  # noqa: BLE001 - one bad record never stops the others
                stats.add("hook_errors")
                if not failed:
                    failed = True
                    _log.exception("otelbench hooks: building a span failed (logged once; counted)")
        reporter.received += len(batch)


def main() -> int:
    """Run until stdin ends (module docstring); the exit status is 0."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="%(levelname)s %(asctime)s [otelbench exporter, pid %(process)d] %(message)s",
    )
    _log.setLevel(logging.INFO)
    out = _take_stdout()
    frames = read_frames(sys.stdin.buffer)
    first = next(frames, None)
    config = pickle.loads(first) if first is not None else {}
    _lower_priority()
    stats = HookStats()
    resource = make_resource(config.get("resource"), pid=config.get("pid"))
    processor = make_span_processor(stats)
    if direct_allowed():
        direct = DirectSpans(processor, resource)
        on_end = processor.on_end

        def emit(record: FinishedRequest) -> None:
            for span in direct.spans(record):
                on_end(span)

    else:  # a sampler of the user's: the SDK's tracer decides
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(processor)
        tracer = provider.get_tracer(names.INSTRUMENTATION_SCOPE_HOOKS)

        def emit(record: FinishedRequest) -> None:
            emit_spans(tracer, record)

    reporter = _Reporter(stats, out)
    _serve(frames, emit, reporter)
    processor.shutdown()  # type: ignore[no-untyped-call]
    reporter.stop()
    return 0


DEFAULT_NICE = 10
"""How much lower than the API server's the exporter process's CPU priority is
(``OTELBENCH_VLLM_EXPORTER_NICE``): on a host whose cores vLLM keeps busy, building and sending
spans waits for them, and the engine is not slowed by its telemetry; the batch processor's queue
(bounded, ``OTEL_BSP_MAX_QUEUE_SIZE``) absorbs the wait."""


def _lower_priority() -> None:
    raw = os.environ.get(names.ENV_VLLM_EXPORTER_NICE, "").strip()
    try:
        increment = int(raw) if raw else DEFAULT_NICE
    except ValueError:
        _log.warning("otelbench hooks: %s=%r is not an integer", names.ENV_VLLM_EXPORTER_NICE, raw)
        increment = DEFAULT_NICE
    if increment > 0:
        with contextlib.suppress(OSError):
            os.nice(increment)


if __name__ == "__main__":
    sys.exit(main())
