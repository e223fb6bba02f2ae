"""The real rotel binary in front of the embedded receiver: every span arrives, value for value.

OTel SDK exporters (OTLP/HTTP protobuf and OTLP/gRPC) → rotel (``rotel-agent`` from the rotel
wheel) → its ``otlp`` exporter, HTTP protobuf + gzip → :class:`Receiver` → DuckDB. The rows are
compared with what the SDK recorded, exactly as ``test_receiver_roundtrip`` compares the
receiver's own (same ``SELECT_ROWS`` and ``expected_row``), so nothing rotel adds, drops or
rewrites goes unnoticed.

Outages: the receiver is stopped while rotel holds spans, and restarted on the same port and
store. What rotel recovers and what it loses is asserted, and the recovery delay is printed
(``pytest -s``; collectors/README.md quotes the figures).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.collector.rotel import RotelCollector, rotel_binary
from otelbench.errors import CollectorError, ConfigError
from otelbench.sut.process import free_port
from tests.integration.test_receiver_roundtrip import SELECT_ROWS, expected_row, make_spans

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"


def _rotel(receiver_port: int, log: Path, **kwargs: Any) -> RotelCollector:
    """rotel forwarding to the receiver on ``receiver_port``; short batches for quick tests."""
    kwargs.setdefault("batch_timeout_s", 0.05)
    return RotelCollector(f"http://{HOST}:{receiver_port}", log_path=log, niceness=0, **kwargs)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    with Receiver(tmp_path / "spans.duckdb", port=0) as r:
        yield r
    assert r.stats().rejected == {}


@pytest.fixture
def rotel(receiver: Receiver, tmp_path: Path) -> Iterator[RotelCollector]:
    with _rotel(receiver.port, tmp_path / "rotel.log") as collector:
        yield collector
    assert not collector.processes(), "rotel left processes behind"


def wait_for_spans(receiver: Receiver, count: int, timeout: float = 15.0) -> float:
    """Seconds until the receiver has stored ``count`` spans (fails the test at ``timeout``)."""
    t0 = time.monotonic()
    while receiver.stats().spans_accepted < count:
        if time.monotonic() - t0 > timeout:
            pytest.fail(f"{receiver.stats().spans_accepted} of {count} spans after {timeout} s")
        time.sleep(0.005)
    return time.monotonic() - t0


def send(
    exporter: SpanExporter, service: str, spans: Callable[[TracerProvider], None]
) -> list[ReadableSpan]:
    """Make ``spans`` with an SDK provider exporting to ``exporter``; the spans as recorded."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans(provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


def named_spans(prefix: str, count: int) -> Callable[[TracerProvider], None]:
    def make(provider: TracerProvider) -> None:
        tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
        for i in range(count):
            with tracer.start_as_current_span(f"{prefix}{i}") as span:
                span.set_attribute(semconv.REQUEST_INDEX, i)

    return make


def stored_names(receiver: Receiver) -> set[str]:
    return {name for (name,) in receiver.store.execute('SELECT "SpanName" FROM otel_traces')}


def by_span_id(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted(spans, key=lambda s: f"{s.context.span_id:016x}")


# ----------------------------------------------------------------------------------------------
# Every span, exactly
# ----------------------------------------------------------------------------------------------
def test_spans_sent_over_http_and_grpc_arrive_exactly(
    receiver: Receiver, rotel: RotelCollector
) -> None:
    """The round-trip test's spans (int arrays of 150 offsets, events with attributes, a link,
    an error status, parent/child) through rotel by both protocols: every row as sent."""
    over_http = send(HttpSpanExporter(endpoint=rotel.http_traces_endpoint), "via-http", make_spans)
    over_grpc = send(
        GrpcSpanExporter(endpoint=rotel.grpc_endpoint, insecure=True), "via-grpc", make_spans
    )
    assert len(over_http) == len(over_grpc) == 3
    wait_for_spans(receiver, 6)
    rows = receiver.store.execute(SELECT_ROWS)
    assert rows == [expected_row(s) for s in by_span_id(over_http + over_grpc)]
    assert receiver.stats().spans_by_service == {"via-grpc": 3, "via-http": 3}


def test_many_batched_spans_all_arrive(receiver: Receiver, rotel: RotelCollector) -> None:
    """2 × 1,000 spans from BatchSpanProcessors, 4 events each: the same trace and span ids,
    attributes and events in the store, none lost and none duplicated."""
    sent: list[ReadableSpan] = []
    exporters: list[SpanExporter] = [
        HttpSpanExporter(endpoint=rotel.http_traces_endpoint),
        GrpcSpanExporter(endpoint=rotel.grpc_endpoint, insecure=True),
    ]
    for exporter in exporters:
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "batched"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=256))
        tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
        for i in range(1000):
            with tracer.start_as_current_span("req", kind=trace.SpanKind.SERVER) as span:
                span.set_attribute(semconv.REQUEST_INDEX, i)
                span.set_attribute(semconv.CLIENT_CHUNK_OFFSETS_US, [i, i + 1, i + 2])
                for e in range(4):
                    span.add_event(f"token{e}", {"i": e})
        provider.shutdown()
        sent += memory.get_finished_spans()
    wait_for_spans(receiver, 2000)
    rows = receiver.store.execute(
        """SELECT "TraceId", "SpanId", "SpanAttributes", "Events.Name", "Events.Attributes"
           FROM otel_traces ORDER BY "SpanId" """
    )
    expected = [
        (
            f"{s.context.trace_id:032x}",
            f"{s.context.span_id:016x}",
            {
                semconv.REQUEST_INDEX: str(s.attributes[semconv.REQUEST_INDEX]),
                semconv.CLIENT_CHUNK_OFFSETS_US: str(
                    list(s.attributes[semconv.CLIENT_CHUNK_OFFSETS_US])
                ).replace(" ", ""),
            },
            ["token0", "token1", "token2", "token3"],
            [{"i": str(e)} for e in range(4)],
        )
        for s in by_span_id(sent)
    ]
    assert len(rows) == 2000
    assert rows == expected


def test_metrics_pass_through(receiver: Receiver, rotel: RotelCollector) -> None:
    """A counter and a histogram over OTLP/HTTP to rotel reach the receiver's metric tables."""
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{rotel.base_url}/v1/metrics"),
        export_interval_millis=60_000,
    )
    provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "metered"})
    )
    meter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE)
    meter.create_counter("rotel.test.requests").add(7)
    meter.create_histogram("rotel.test.ttft", unit="s").record(0.25)
    provider.shutdown()  # exports once
    deadline = time.monotonic() + 15
    while receiver.stats().metric_points_accepted < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert receiver.stats().metric_points_accepted == 2
    assert receiver.store.execute('SELECT "MetricName", "Value" FROM otel_metrics_sum') == [
        ("rotel.test.requests", 7.0)
    ]
    assert receiver.store.execute(
        'SELECT "MetricName", "Count", "Sum" FROM otel_metrics_histogram'
    ) == [("rotel.test.ttft", 1, 0.25)]


# ----------------------------------------------------------------------------------------------
# The receiver goes away
# ----------------------------------------------------------------------------------------------
def test_outage_shorter_than_retry_limit_loses_nothing(tmp_path: Path) -> None:
    """Receiver down 2 s, rotel retrying for up to 30 s: the spans it accepted meanwhile are
    stored once the receiver is back (within one back-off step), and nothing is duplicated."""
    port = free_port(HOST)
    store = tmp_path / "spans.duckdb"
    receiver = Receiver(store, port=port).start()
    rotel = _rotel(
        port,
        tmp_path / "rotel.log",
        retry_initial_backoff_s=0.1,
        retry_max_backoff_s=0.5,
        retry_max_elapsed_s=30.0,
    ).start()
    try:
        http = rotel.http_traces_endpoint
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("before", 20))
        wait_for_spans(receiver, 20)
        receiver.stop()

        t_down = time.monotonic()
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("during", 20))
        accepted_in = time.monotonic() - t_down  # rotel answered the exporter at once
        time.sleep(2.0)

        receiver = Receiver(store, port=port).start()
        recovered_in = wait_for_spans(receiver, 20)
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("after", 20))
        wait_for_spans(receiver, 40)
        print(
            f"\nrotel outage 2.0 s: 20 spans accepted by rotel in {accepted_in * 1000:.0f} ms "
            f"while the receiver was down, stored {recovered_in * 1000:.0f} ms after its restart"
        )
        assert accepted_in < 2.0
        assert recovered_in < 5.0  # one back-off step (≤ 0.5 s) plus the export, generously
    finally:
        rotel.stop()
        receiver.stop()
    with Receiver(store, port=0) as reopened:
        names = [n for (n,) in reopened.store.execute('SELECT "SpanName" FROM otel_traces')]
    expected = {f"{tag}{i}" for tag in ("before", "during", "after") for i in range(20)}
    assert sorted(names) == sorted(expected)  # all 60, each once
    assert "dropping data" not in "\n".join(rotel.log_tail(200))


def test_outage_longer_than_retry_limit_drops_the_held_batch(tmp_path: Path) -> None:
    """Receiver down 3 s with a 1 s retry limit: rotel drops the batch it held (and says so in
    its log), and goes on delivering what comes after."""
    port = free_port(HOST)
    store = tmp_path / "spans.duckdb"
    receiver = Receiver(store, port=port).start()
    rotel = _rotel(
        port,
        tmp_path / "rotel.log",
        retry_initial_backoff_s=0.1,
        retry_max_backoff_s=0.5,
        retry_max_elapsed_s=1.0,
    ).start()
    try:
        http = rotel.http_traces_endpoint
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("before", 10))
        wait_for_spans(receiver, 10)
        receiver.stop()
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("during", 10))
        time.sleep(3.0)
        receiver = Receiver(store, port=port).start()
        send(HttpSpanExporter(endpoint=http), "svc", named_spans("after", 10))
        wait_for_spans(receiver, 10)
        time.sleep(1.0)  # a late "during" batch would have arrived by now
        names = stored_names(receiver)
    finally:
        rotel.stop()
        receiver.stop()
    assert names == {f"{tag}{i}" for tag in ("before", "after") for i in range(10)}
    assert any("dropping data" in line for line in rotel.log_tail(200))


def test_rotel_stopped_while_receiver_down_loses_what_it_held(tmp_path: Path) -> None:
    """rotel's queue is in memory: stopped (SIGTERM) while the receiver is down, it retries
    for its shutdown grace (about 3 s) and exits; the spans it held are not in the store."""
    port = free_port(HOST)
    store = tmp_path / "spans.duckdb"
    receiver = Receiver(store, port=port).start()
    rotel = _rotel(
        port,
        tmp_path / "rotel.log",
        retry_initial_backoff_s=0.1,
        retry_max_backoff_s=0.5,
        retry_max_elapsed_s=30.0,
    ).start()
    try:
        send(HttpSpanExporter(endpoint=rotel.http_traces_endpoint), "svc", named_spans("a", 10))
        wait_for_spans(receiver, 10)
        receiver.stop()
        send(HttpSpanExporter(endpoint=rotel.http_traces_endpoint), "svc", named_spans("b", 10))
        t0 = time.monotonic()
        rotel.stop()
        stop_s = time.monotonic() - t0
    finally:
        rotel.stop()
        receiver.stop()
    print(f"\nrotel stopped with the receiver down: exited after {stop_s:.1f} s")
    assert not rotel.running
    with Receiver(store, port=0) as reopened:
        assert stored_names(reopened) == {f"a{i}" for i in range(10)}


# ----------------------------------------------------------------------------------------------
# The committed shell snippet: collectors/rotel/run-rotel.sh with collectors/rotel/rotel.env
# ----------------------------------------------------------------------------------------------
SCRIPT = Path(__file__).resolve().parents[2] / "collectors" / "rotel" / "run-rotel.sh"


class ScriptedRotel(RotelCollector):
    """run-rotel.sh as documented: the env file's settings, only the addresses overridden."""

    def command(self) -> list[str]:
        return [str(SCRIPT)]

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEL_")}
        env.update(
            ROTEL_OTLP_GRPC_ENDPOINT=f"{self.host}:{self.grpc_port}",
            ROTEL_OTLP_HTTP_ENDPOINT=f"{self.host}:{self.http_port}",
            ROTEL_OTLP_EXPORTER_ENDPOINT=self.exporter_endpoint,
            ROTEL_PID_FILE=f"{self.log_path}.pid",
            PYTHON=sys.executable,
        )
        return env


def test_run_script_with_the_env_file_forwards_spans(receiver: Receiver, tmp_path: Path) -> None:
    with ScriptedRotel(
        f"http://{HOST}:{receiver.port}", log_path=tmp_path / "script.log", niceness=0
    ) as collector:
        sent = send(
            GrpcSpanExporter(endpoint=collector.grpc_endpoint, insecure=True), "sh", make_spans
        )
        wait_for_spans(receiver, 3)
    assert receiver.store.execute(SELECT_ROWS) == [expected_row(s) for s in by_span_id(sent)]
    log = "\n".join(collector.log_tail(50))
    assert "OTLP Receiver for logs disabled" in log  # the env file's setting took effect


# ----------------------------------------------------------------------------------------------
# The launcher
# ----------------------------------------------------------------------------------------------
def test_launcher_endpoints_readiness_and_clean_stop(tmp_path: Path) -> None:
    """Both receivers listen once start() returns; stop() leaves no process and frees the
    ports; a second start() of the same object is refused."""
    collector = _rotel(free_port(HOST), tmp_path / "rotel.log").start()
    try:
        assert collector.running
        assert collector.startup_seconds is not None
        assert collector.http_traces_endpoint == f"http://{HOST}:{collector.http_port}/v1/traces"
        assert collector.grpc_endpoint == f"http://{HOST}:{collector.grpc_port}"
        assert collector.rotel_env()["ROTEL_OTLP_EXPORTER_PROTOCOL"] == "http"
        assert httpx.get(collector.base_url + "/", trust_env=False).status_code == 404
        with pytest.raises(ConfigError, match="already started"):
            collector.start()
    finally:
        collector.stop()
    assert not collector.running
    assert not collector.processes()
    with pytest.raises(httpx.ConnectError):
        httpx.get(collector.base_url + "/", trust_env=False)


def test_port_taken_is_a_one_line_error(tmp_path: Path) -> None:
    with Receiver(tmp_path / "spans.duckdb", port=0) as receiver:
        collector = RotelCollector(
            f"http://{HOST}:{receiver.port}", http_port=receiver.port, log_path=tmp_path / "r.log"
        )
        with pytest.raises(ConfigError, match=r"cannot serve rotel's OTLP/HTTP receiver on "):
            collector.start()


def test_a_binary_that_exits_at_once_is_a_collector_error(tmp_path: Path) -> None:
    """A rotel-agent that exits while starting: one CollectorError naming the exit code."""
    collector = RotelCollector(
        "http://127.0.0.1:9", binary="/bin/false", log_path=tmp_path / "r.log", niceness=0
    )
    with pytest.raises(CollectorError, match="rotel exited with code 1 while starting"):
        collector.start(timeout=10)
    assert not collector.processes()


def test_bad_arguments_are_config_errors(tmp_path: Path) -> None:
    assert rotel_binary().name == "rotel-agent"
    with pytest.raises(ConfigError, match="without /v1"):
        RotelCollector("http://127.0.0.1:4318/v1/traces")
    with pytest.raises(ConfigError, match="must be http"):
        RotelCollector("127.0.0.1:4318")
    with pytest.raises(ConfigError, match="no executable rotel-agent"):
        RotelCollector("http://127.0.0.1:4318", binary=tmp_path / "missing")
    with pytest.raises(ConfigError, match="batch_timeout_s must be positive"):
        RotelCollector("http://127.0.0.1:4318", batch_timeout_s=0)


def test_collector_command_with_rotel_stores_what_rotel_received(tmp_path: Path) -> None:
    """`otelbench collector --rotel`: rotel on the public ports, the receiver behind it; on
    SIGTERM rotel stops (flushing) before the receiver, so every span it accepted is stored."""
    import signal
    import subprocess

    import duckdb

    store = tmp_path / "spans.duckdb"
    http_port, grpc_port = free_port(HOST), free_port(HOST)
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.cli", "collector", "--store", str(store),
         "--port", str(http_port), "--rotel", "--grpc-port", str(grpc_port)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        lines = "".join(proc.stderr.readline() for _ in range(2))
        assert "receiver on" in lines
        assert f"rotel on http://{HOST}:{http_port}" in lines
        grpc = GrpcSpanExporter(endpoint=f"http://{HOST}:{grpc_port}", insecure=True)
        sent = send(grpc, "via-cli", named_spans("cli-", 25))
        sent += send(
            HttpSpanExporter(endpoint=f"http://{HOST}:{http_port}/v1/traces"),
            "via-cli",
            named_spans("cli-http-", 25),
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    with duckdb.connect(str(store), read_only=True) as con:
        names = {n for (n,) in con.execute('SELECT "SpanName" FROM otel_traces').fetchall()}
    assert names == {s.name for s in sent}
    assert len(names) == 50
