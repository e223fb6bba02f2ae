"""The hooks' exporter process (``OTELBENCH_VLLM_EXPORT=process``, the default): a real child
process (``python -m otelbench_vllm.exporter``) exporting over OTLP/HTTP to otelbench's embedded
receiver, driven with the same plain vLLM-shaped objects as ``test_hook.py``.

The same requests through both export modes give the same spans: the in-process hook's spans are
taken from the SDK's ``InMemorySpanExporter`` and put through the SDK's OTLP encoder and the
receiver's decoder; the exporter process's spans are read back from the receiver's store.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otelbench_vllm.hook import HookStats, RequestHook
from otelbench_vllm.offload import ExporterProcess
from otelbench_vllm.spans import FinishedRequest

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.collector.otlp import Encoding, decode_traces

from .conftest import HOOKS_SRC
from .test_hook import ARRIVAL, MONO0, OFFSET_NS, PARENT_ID, TRACE_ID, drive, event

ATTRS = {semconv.RESOURCE_VLLM_VERSION: "0.32.0+cpu", semconv.RESOURCE_HOOK_SUPPORT: "tested"}


class Span(NamedTuple):
    """A span as the store holds it, its ids replaced by what they point at."""

    request: str
    """``gen_ai.request.id`` of the request it belongs to."""
    name: str
    kind: str
    service: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str]
    events: list[tuple[str, int, dict[str, str]]]
    parent: str
    """The remote parent's span id for a server span, the server span's name for a child."""
    trace_id: str | None
    """The trace id where the client's trace was joined, else None (random)."""


def normalise(rows: list[tuple[Any, ...]]) -> list[Span]:
    """Rows (name, trace id, span id, parent id, kind, service, start ns, duration ns,
    attributes, event names, event ns, event attributes) → :class:`Span`, sorted."""
    by_id = {row[2]: row for row in rows}
    out = []
    for name, tid, _sid, parent, kind, service, start, dur, attrs, ev_n, ev_t, ev_a in rows:
        server = by_id.get(parent)
        if server is None:  # the server span: its parent is the client's (remote) or none
            owner, parent_ref, joined = dict(attrs), parent, (tid if parent else None)
        else:
            owner, parent_ref = dict(server[8]), server[0]
            joined = server[1] if server[3] else None
        out.append(
            Span(
                owner[semconv.VLLM_REQUEST_ID],
                name,
                kind,
                service,
                int(start),
                int(start) + int(dur),
                dict(attrs),
                [(n, int(t), dict(a)) for n, t, a in zip(ev_n, ev_t, ev_a, strict=True)],
                parent_ref,
                joined,
            )
        )
    return sorted(out, key=lambda span: (span.request, span.name))


def stored(receiver: Receiver) -> list[Span]:
    rows = receiver.store.execute(
        f"""
        SELECT "SpanName", "TraceId", "SpanId", "ParentSpanId", "SpanKind", "ServiceName",
               epoch_ns("Timestamp"), "Duration", "SpanAttributes",
               "Events.Name", [epoch_ns(t) for t in "Events.Timestamp"], "Events.Attributes"
        FROM {semconv.TABLE_TRACES}
        """
    )
    return normalise([tuple(r) for r in rows])


def resources(receiver: Receiver) -> list[dict[str, str]]:
    query = f'SELECT DISTINCT "ResourceAttributes" FROM {semconv.TABLE_TRACES}'
    rows = receiver.store.execute(query)
    return [dict(r[0]) for r in rows]


def decoded(exporter: InMemorySpanExporter) -> list[Span]:
    """The in-memory spans through the SDK's OTLP encoder and the receiver's decoder."""
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    rows = decode_traces(body, Encoding.PROTOBUF).spans
    return normalise(
        [
            (r.span_name, r.trace_id, r.span_id, r.parent_span_id, r.span_kind, r.service_name,
             r.timestamp_ns, r.duration_ns, r.span_attributes, r.events_name,
             r.events_timestamp_ns, r.events_attributes)
            for r in rows
        ]
    )  # fmt: skip


def wait_until(ok: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """otelbench's embedded receiver; the exporter process exports to it (it inherits the
    environment)."""
    with Receiver(tmp_path / "spans.duckdb", port=0) as rx:
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{rx.port}/v1/traces"
        )
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        monkeypatch.delenv(semconv.ENV_SPOOL_DIR, raising=False)
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        yield rx


def play(hook: RequestHook) -> int:
    """Five requests of every shape the span knows; the number of spans they give."""
    traced = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    start = [event(1, MONO0 + 0.001), event(2, MONO0 + 0.002)]
    drive(hook, [(MONO0 + 0.010, 1, start), (MONO0 + 0.020, 1, []), (MONO0 + 0.030, 2, [])],
          traced, request_id="cmpl-traced")  # fmt: skip
    drive(hook, [(MONO0 + 0.010, 1, start), (MONO0 + 0.020, 1, []),
                 (MONO0 + 0.090, 1, [event(3, MONO0 + 0.025), event(2, MONO0 + 0.080)]),
                 (MONO0 + 0.200, 1, [event(3, MONO0 + 0.100), event(2, MONO0 + 0.150)])],
          request_id="cmpl-preempted")  # fmt: skip
    drive(hook, [(MONO0 + 0.010, 1, start), (MONO0 + 0.020, 4, [])], request_id="cmpl-think")
    drive(hook, [(MONO0 + 0.010 + 0.001 * i, 1, start if i == 0 else []) for i in range(300)],
          request_id="cmpl-long")  # fmt: skip
    stats = SimpleStats()
    hook.on_finished(ARRIVAL + 0.5, "abort", "cmpl-abort", 16, stats)
    return 4 * 4 + 1


class SimpleStats:
    """A ``RequestStateStats`` of a request that never got a token (no attributes set)."""

    def __init__(self) -> None:
        self.arrival_time = ARRIVAL
        self.queued_ts = self.scheduled_ts = self.first_token_ts = self.last_token_ts = 0.0
        self.first_token_latency = 0.0


def make_hook(**kwargs: Any) -> RequestHook:
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    hook = RequestHook(offset_ns=OFFSET_NS, meter_provider=meters, think_end_token_id=2, **kwargs)
    hook.describe_engine("0.32.0+cpu", "tested")
    return hook


# ----------------------------------------------------------------------------------------------
def test_both_export_modes_give_the_same_spans(receiver: Receiver) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": semconv.SERVICE_VLLM}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    in_process = make_hook(tracer_provider=provider)
    assert in_process.export == "inprocess"
    expected_spans = play(in_process)
    provider.shutdown()

    offloaded = make_hook()
    assert offloaded.export == "process"  # the default
    assert play(offloaded) == expected_spans
    assert offloaded.close(timeout=60.0)
    exporter = offloaded.sink
    assert isinstance(exporter, ExporterProcess)
    assert exporter.pid is not None
    assert exporter.pid != os.getpid()

    want = decoded(memory)
    got = stored(receiver)
    assert len(want) == expected_spans
    assert got == want
    joined = [s for s in got if s.trace_id is not None]
    assert {s.trace_id for s in joined} == {TRACE_ID}
    assert [s.parent for s in joined if s.name == semconv.SPAN_HOOK_REQUEST] == [PARENT_ID]
    [resource] = resources(receiver)
    assert resource["process.pid"] == str(os.getpid())  # the API server's, not the child's
    assert resource["service.name"] == semconv.SERVICE_VLLM
    assert resource[semconv.RESOURCE_VLLM_VERSION] == "0.32.0+cpu"
    assert resource[semconv.RESOURCE_TELEMETRY_DISTRO_NAME] == semconv.HOOKS_DISTRIBUTION
    # the child's counts reached the API server's stats
    stats = offloaded.stats.as_dict()
    assert stats["requests_traced"] == 5
    assert stats["spans_ended"] == stats["spans_exported"] == expected_spans
    assert stats["spans_export_failed"] == stats["records_dropped"] == 0
    assert stats["spans_unaccounted"] == 0
    assert in_process.stats.spans_ended == expected_spans


def test_a_record_is_small_plain_data() -> None:
    """What crosses the pipe: no vLLM object (the child never imports vLLM)."""
    hook = make_hook(tracer_provider=TracerProvider())
    captured: list[FinishedRequest] = []
    hook.sink = type("Capture", (), {"submit": staticmethod(captured.append)})()
    drive(hook, [(MONO0 + 0.010 + 0.02 * i, 1, []) for i in range(64)])
    [record] = captured
    assert len(record.token_ts) == 64 * 8  # array('d') bytes
    assert list(record.token_timestamps()) == [MONO0 + 0.010 + 0.02 * i for i in range(64)]
    plain = (str, int, float, bytes, type(None), list, tuple, dict)
    assert all(isinstance(field, plain) for field in record)


def test_a_full_queue_drops_and_counts_and_every_record_is_accounted_for(
    receiver: Receiver,
) -> None:
    stats = HookStats()
    exporter = ExporterProcess(stats, ATTRS, max_queued=5)
    sent = 200
    record = aborted_record()
    for _ in range(sent):
        exporter.submit(record)  # faster than the writer drains (it waits 20 ms to batch)
    assert exporter.close(timeout=60.0)
    assert stats.records_dropped > 0
    assert stats.spans_exported + stats.records_dropped == sent  # one span per such record
    assert stats.spans_export_failed == 0
    assert receiver.stats().spans_accepted == stats.spans_exported


def aborted_record(request_id: str = "cmpl-x") -> FinishedRequest:
    """A request that finished without a token: one server span, no children."""
    return FinishedRequest(ARRIVAL + 0.5, "abort", request_id, 16, 0, ARRIVAL, 0.0, 0.0, 0.0, 0.0,
                           0.0, None, None, b"", [], [], None, OFFSET_NS)  # fmt: skip


def test_a_killed_exporter_process_is_logged_once_counted_and_restarted(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """Ten records are exported by the first child; it is then stopped (SIGSTOP) so that five
    more sit unread in its pipe, and killed: those five are counted as dropped as soon as it has
    died, before any other record comes, and a second child takes the next five. Killed again,
    with no restart left, the exporter gives up at once and every later record is dropped.

    Each kill is waited for until the exporter has noticed it (``pid`` None), not until the
    child's main thread is a zombie: a SIGKILLed process's other threads can still hold its
    stdin open for a moment, and a write then lands in a pipe that nobody will read (those
    records are counted as dropped too, when the death is noticed)."""
    stats = HookStats()
    exporter = ExporterProcess(stats, ATTRS, max_restarts=1)

    def send(n: int) -> None:
        for _ in range(n):
            exporter.submit(aborted_record())

    def gave_up() -> bool:
        return any("no exporter process" in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.WARNING, logger="vllm.plugins.otelbench"):
        send(10)
        assert wait_until(lambda: stats.spans_exported == 10)
        first = exporter.pid
        assert first is not None
        os.kill(first, signal.SIGSTOP)
        send(5)
        assert wait_until(lambda: exporter.records_sent == 15)
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: exporter.pid is None)  # noticed without another record
        assert (stats.records_dropped, stats.exporter_restarts) == (5, 1)
        assert subprocess_gone(first)
        send(5)
        assert wait_until(lambda: stats.spans_exported == 15)
        second = exporter.pid
        assert second not in (None, first)
        assert stats.records_dropped == 5

        os.kill(second, signal.SIGKILL)  # type: ignore[arg-type]
        assert wait_until(lambda: exporter.pid is None)
        assert gave_up()  # no restart left: given up when the death is noticed
        assert stats.records_dropped == 5  # the second child had reported all five received
        send(5)  # given up: dropped at once
        assert stats.records_dropped == 10
        exporter.close(timeout=30.0)
    warnings = [r for r in caplog.records if "exporter process (pid" in r.getMessage()]
    assert len(warnings) == 1  # logged once
    assert stats.spans_exported == 15
    assert stats.exporter_restarts == 1


def subprocess_gone(pid: int | None) -> bool:
    """True once ``pid`` has exited (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return status == "Z"


API_SERVER = textwrap.dedent(
    """
    import json, os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from otelbench_vllm.hook import RequestHook
    from otelbench_vllm.spans import FinishedRequest
    hook = RequestHook(offset_ns=0)
    n = int(sys.argv[2])
    for i in range(n):
        stats = type("S", (), dict(arrival_time=1.7e9, queued_ts=0.0, scheduled_ts=0.0,
                                   first_token_ts=0.0, last_token_ts=0.0,
                                   first_token_latency=0.0))()
        hook.on_finished(1.7e9 + 0.5, "abort", f"cmpl-{i}", 16, stats)
    print(json.dumps({"child": hook.sink.pid}), flush=True)
    if sys.argv[3] == "kill":
        while hook.sink.records_sent < n:  # every record is in the pipe to the child
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    # else: a normal exit; atexit flushes
    """
)


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_the_exporter_process_flushes_and_exits_with_the_api_server(
    receiver: Receiver, how: str
) -> None:
    """A stand-in API server (a plain Python process with the hook) finishes 50 requests and
    exits normally (``atexit``: the queued records are sent and the child flushes its batch
    processor before the parent is gone), or is SIGKILLed once every record is in the pipe
    (the child reads what is left in the pipe, sees its end, flushes and exits on its own).
    The batch processor's delay is the SDK's default 5 s, so the spans reach the receiver only
    through that flush."""
    done = subprocess.run(
        [sys.executable, "-c", API_SERVER, str(HOOKS_SRC), "50", how],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "5000"},
    )  # fmt: skip
    expected_rc = -signal.SIGKILL if how == "kill" else 0
    assert done.returncode == expected_rc, done.stderr
    child = json.loads(done.stdout.splitlines()[0])["child"]
    assert wait_until(lambda: subprocess_gone(child))
    if how == "exit":  # the parent waited for the child's flush
        assert receiver.stats().spans_accepted == 50
    else:
        assert wait_until(lambda: receiver.stats().spans_accepted == 50)
    assert "Traceback" not in done.stderr


def test_an_exporter_process_that_stops_reading_is_killed_at_close(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that hangs (SIGSTOP) does not hold the API server's exit: ``close`` waits its
    bound, kills it and says so; the five records it never read are lost."""
    stats = HookStats()
    exporter = ExporterProcess(stats, ATTRS)
    for _ in range(10):
        exporter.submit(aborted_record())
    assert wait_until(lambda: stats.spans_exported == 10)
    child = exporter.pid
    assert child is not None
    os.kill(child, signal.SIGSTOP)
    for _ in range(5):
        exporter.submit(aborted_record())
    assert wait_until(lambda: exporter.records_sent == 15)
    with caplog.at_level(logging.WARNING, logger="vllm.plugins.otelbench"):
        assert exporter.close(timeout=2.0) is False
    assert subprocess_gone(child)
    assert "was killed" in caplog.text
    assert stats.spans_exported == 10
