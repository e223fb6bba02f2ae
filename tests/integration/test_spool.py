"""The span spool: framing, bound and exact drop count, torn records, replay order and restart.

A real embedded receiver on a loopback port is the collector; it is stopped and started again on
the same port and store to play an outage.
"""

from __future__ import annotations

import gzip
import http.server
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import telemetry
from otelbench.collector import Receiver
from otelbench.collector.access import RateLimit
from otelbench.errors import ConfigError
from otelbench.spool import (
    RECORD_HEADER,
    FastSpanExporter,
    Spool,
    SpoolBusyError,
    SpoolingSpanExporter,
    SpoolStats,
    encode_batch,
)

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _spans(n: int, name: str = "op") -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "spool-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for i in range(n):
        tracer.start_span(f"{name}-{i}").end()
    return list(memory.get_finished_spans())


def _payload(spans: list[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializePartialToString()


def _stored_names(store: Path) -> list[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute('SELECT "SpanName" FROM otel_traces ORDER BY "Timestamp"').fetchall()
    return [r[0] for r in rows]


def _wait(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def port() -> int:
    return _free_port()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "spans.duckdb"


@pytest.fixture
def stats() -> SpoolStats:
    return SpoolStats()


@pytest.fixture
def exporter(tmp_path: Path, port: int, stats: SpoolStats) -> Iterator[SpoolingSpanExporter]:
    made = SpoolingSpanExporter(
        f"http://127.0.0.1:{port}/v1/traces", tmp_path / "spool", timeout_s=2.0, stats=stats
    )
    yield made
    made.shutdown()


def test_record_framing_round_trips_and_counts_spans(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s")
    first, second = _payload(_spans(3)), _payload(_spans(5))
    assert spool.append(first, 3)
    assert spool.append(second, 5)
    assert spool.size_bytes == 2 * RECORD_HEADER.size + len(first) + len(second)
    one = spool.next_record()
    assert one is not None
    assert (one.spans, one.payload) == (3, first)
    spool.ack(one)
    two = spool.next_record()
    assert two is not None
    assert (two.spans, two.payload) == (5, second)
    spool.ack(two)
    assert spool.next_record() is None
    assert spool.is_empty()
    assert spool.size_bytes == 0
    assert list((tmp_path / "s").glob("segment-*")) == []
    spool.close()


def test_bound_drops_whole_batches_and_counts_exact_spans(tmp_path: Path) -> None:
    stats = SpoolStats()
    # Nothing listens on this port: every batch goes to the spool until the bound.
    exporter = SpoolingSpanExporter(
        f"http://127.0.0.1:{_free_port()}/v1/traces",
        tmp_path / "spool",
        max_bytes=4096,
        stats=stats,
        timeout_s=1.0,
    )
    try:
        batches = [_spans(k) for k in (7, 11, 13, 17, 19, 23, 29)]
        results = [exporter.export(b) for b in batches]
        sizes = [RECORD_HEADER.size + len(_payload(b)) for b in batches]
        fits, used = [], 0
        for size in sizes:
            fits.append(used + size <= 4096)
            used += size if fits[-1] else 0
        assert fits.count(False) >= 2  # the test exercises the bound
        counts = stats.as_dict()
        assert counts["spans_dropped"] == sum(
            len(b) for b, ok in zip(batches, fits, strict=True) if not ok
        )
        assert counts["spans_spooled"] == sum(
            len(b) for b, ok in zip(batches, fits, strict=True) if ok
        )
        assert counts["spans_sent"] == 0
        assert [r.name for r in results] == ["SUCCESS" if ok else "FAILURE" for ok in fits]
        assert exporter.spool.size_bytes == used <= 4096
    finally:
        exporter.shutdown()


def test_outage_spools_and_replays_oldest_first(
    exporter: SpoolingSpanExporter, stats: SpoolStats, port: int, store: Path
) -> None:
    with Receiver(store, port=port):
        assert exporter.export(_spans(2, "live")).name == "SUCCESS"
    for k in range(4):  # the collector is down
        assert exporter.export(_spans(3, f"down{k}")).name == "SUCCESS"
    assert stats.as_dict()["spans_spooled"] == 12
    assert not exporter.spool.is_empty()
    with Receiver(store, port=port) as receiver:
        assert exporter.force_flush(10_000)
        _wait(lambda: receiver.stats().spans_accepted == 12)
        # Once the spool is empty, batches go straight to the collector again.
        assert exporter.export(_spans(1, "after")).name == "SUCCESS"
    counts = stats.as_dict()
    assert counts == {
        "spans_sent": 3,
        "spans_spooled": 12,
        "spans_replayed": 12,
        "spans_dropped": 0,
        "spans_rejected": 0,
        "records_torn": 0,
    }
    names = _stored_names(store)
    assert names[:2] == ["live-0", "live-1"]
    assert [n.split("-")[0] for n in names[2:14]] == [
        f"down{k}" for k in range(4) for _ in range(3)
    ]
    assert names[14:] == ["after-0"]
    assert list(exporter.spool.directory.glob("segment-*")) == []


def test_spool_left_by_a_crash_is_replayed_and_torn_tail_is_counted(
    tmp_path: Path, port: int, store: Path
) -> None:
    directory = tmp_path / "spool"
    # A process spools three batches, starts a fourth and is killed in the middle of its write.
    child = f"""
import os
from pathlib import Path
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from otelbench.spool import RECORD_HEADER, Spool
memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
for k in range(3):
    for i in range(4):
        provider.get_tracer("t").start_span(f"before{{k}}-{{i}}").end()
spool = Spool(Path({str(directory)!r}))
spans = list(memory.get_finished_spans())
for k in range(3):
    assert spool.append(encode_spans(spans[4 * k : 4 * k + 4]).SerializePartialToString(), 4)
segment = next(Path({str(directory)!r}).glob("segment-*.otlp"))
torn = RECORD_HEADER.pack(b"OBSP", 1000, 9, 0) + b"x"
os.write(os.open(segment, os.O_WRONLY | os.O_APPEND), torn)
os.kill(os.getpid(), 9)
"""
    proc = subprocess.run([sys.executable, "-c", child], check=False, timeout=60)
    assert proc.returncode == -9
    stats = SpoolStats()
    with Receiver(store, port=port) as receiver:
        exporter = SpoolingSpanExporter(
            f"http://127.0.0.1:{port}/v1/traces", directory, stats=stats, timeout_s=2.0
        )
        try:
            assert exporter.force_flush(10_000)
            _wait(lambda: receiver.stats().spans_accepted == 12)
        finally:
            exporter.shutdown()
    assert stats.as_dict()["spans_replayed"] == 12
    assert stats.as_dict()["records_torn"] == 1
    assert [n.split("-")[0] for n in _stored_names(store)] == [
        f"before{k}" for k in range(3) for _ in range(4)
    ]
    assert list(directory.glob("segment-*")) == []


def test_corrupt_payload_is_never_replayed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s", stats=(stats := SpoolStats()))
    good, bad = _payload(_spans(2)), _payload(_spans(2))
    spool.append(good, 2)
    spool.append(bad, 2)
    spool.close()
    segment = next((tmp_path / "s").glob("segment-*.otlp"))
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # flip a bit in the last record's payload: its CRC no longer matches
    segment.write_bytes(bytes(data))
    reopened = Spool(tmp_path / "s", stats=stats)
    record = reopened.next_record()
    assert record is not None
    assert record.payload == good
    reopened.ack(record)
    assert reopened.next_record() is None
    assert stats.as_dict()["records_torn"] == 1
    reopened.close()


def test_acknowledged_offset_survives_restart(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s")
    payloads = [_payload(_spans(1, f"p{k}")) for k in range(3)]
    for p in payloads:
        spool.append(p, 1)
    first = spool.next_record()
    assert first is not None
    spool.ack(first)
    spool.close()
    reopened = Spool(tmp_path / "s")
    record = reopened.next_record()
    assert record is not None
    assert record.payload == payloads[1]
    reopened.close()


def test_one_process_per_spool_directory(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s")
    with pytest.raises(SpoolBusyError, match="in use by another process"):
        Spool(tmp_path / "s")
    spool.close()


def test_rejected_batch_is_counted_not_spooled(tmp_path: Path, port: int, store: Path) -> None:
    stats = SpoolStats()
    exporter = SpoolingSpanExporter(
        f"http://127.0.0.1:{port}/wrong/path", tmp_path / "spool", stats=stats, timeout_s=2.0
    )
    try:
        with Receiver(store, port=port):  # answers 404: never worth retrying
            assert exporter.export(_spans(5)).name == "FAILURE"
    finally:
        exporter.shutdown()
    assert stats.as_dict()["spans_rejected"] == 5
    assert stats.as_dict()["spans_spooled"] == 0
    assert exporter.spool.is_empty()


def test_framing_header_layout() -> None:
    assert RECORD_HEADER.size == 16
    assert RECORD_HEADER.format == struct.Struct("<4sIII").format


def test_rate_limited_batches_are_spooled_and_delivered(
    exporter: SpoolingSpanExporter, stats: SpoolStats, port: int, store: Path
) -> None:
    # One request a second, one at a time: the second batch at once is answered 429.
    with Receiver(store, port=port, rate_limit=RateLimit(per_s=1, burst=1)) as receiver:
        assert exporter.export(_spans(2, "first")).name == "SUCCESS"
        assert exporter.export(_spans(3, "limited")).name == "SUCCESS"
        assert stats.as_dict()["spans_spooled"] == 3
        assert exporter.force_flush(10_000)
        _wait(lambda: receiver.stats().spans_accepted == 5)
        assert set(receiver.stats().rejected) == {"rate_limited"}  # retried after each 429
    assert stats.as_dict()["spans_replayed"] == 3
    assert _stored_names(store) == ["first-0", "first-1", "limited-0", "limited-1", "limited-2"]


def test_an_unusable_spool_directory_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match=r"^cannot spool spans in .*/file/spool: "):
        telemetry.make_tracer_provider(
            f"http://127.0.0.1:{_free_port()}", spool_dir=blocker / "spool"
        )


def test_from_env_sends_the_receivers_bearer_token(
    tmp_path: Path, port: int, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard OTEL_EXPORTER_OTLP_HEADERS reach a token-protected receiver through the
    spool (docs/security.md); without them the receiver's 401 is counted as rejected spans."""
    url = f"http://127.0.0.1:{port}/v1/traces"
    with Receiver(store, port=port, auth_token="s3cret") as receiver:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret")
        with_token = SpoolingSpanExporter.from_env(url, tmp_path / "a", stats=SpoolStats())
        assert with_token.export(_spans(2, "kept")).name == "SUCCESS"
        with_token.shutdown()
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS")
        refused = SpoolStats()
        without = SpoolingSpanExporter.from_env(url, tmp_path / "b", stats=refused)
        assert without.export(_spans(3, "refused")).name == "FAILURE"
        without.shutdown()
        assert receiver.stats().rejected == {"unauthorized": 1}
    assert refused.as_dict()["spans_rejected"] == 3
    assert _stored_names(store) == ["kept-0", "kept-1"]


class _CapturingCollector:
    """A plain HTTP server that keeps each request's headers and body and answers 200: what an
    exporter put on the wire, which the real receiver decodes without saying how it came."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        captured = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                captured.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("setting", "decode"),
    [("gzip", gzip.decompress), ("deflate", zlib.decompress)],
)
def test_from_env_compresses_the_body_as_the_sdk_exporter_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, decode: Callable[[bytes], bytes]
) -> None:
    """OTEL_EXPORTER_OTLP_COMPRESSION (the traces-specific variable first) is honoured: the
    body is the batch's protobuf, compressed, with the matching Content-Encoding."""
    collector = _CapturingCollector()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", f" {setting.upper()} ")
        exporter = SpoolingSpanExporter.from_env(collector.url, tmp_path / "s", stats=SpoolStats())
        spans = _spans(20, "zipped")
        assert exporter.export(spans).name == "SUCCESS"
        exporter.shutdown()
    finally:
        collector.close()
    [(headers, body)] = collector.requests
    assert headers["content-encoding"] == setting
    assert headers["content-type"] == "application/x-protobuf"
    assert decode(body) == _payload(spans)
    assert len(body) < len(_payload(spans))


def test_compressed_batches_are_spooled_and_replayed_to_the_receiver(
    tmp_path: Path, port: int, store: Path
) -> None:
    """The spool keeps the protobuf as it is; each attempt, live or replayed, is compressed, and
    the real receiver stores what it decodes."""
    stats = SpoolStats()
    exporter = SpoolingSpanExporter(
        f"http://127.0.0.1:{port}/v1/traces", tmp_path / "spool", timeout_s=2.0,
        compression="gzip", stats=stats,
    )  # fmt: skip
    try:
        with Receiver(store, port=port):
            assert exporter.export(_spans(2, "live")).name == "SUCCESS"
        assert exporter.export(_spans(3, "down")).name == "SUCCESS"  # collector down: spooled
        with Receiver(store, port=port) as receiver:
            assert exporter.force_flush(10_000)
            _wait(lambda: receiver.stats().spans_accepted == 3)
            assert receiver.stats().rejected == {}
    finally:
        exporter.shutdown()
    assert (stats.as_dict()["spans_sent"], stats.as_dict()["spans_replayed"]) == (2, 3)
    assert _stored_names(store) == ["live-0", "live-1", "down-0", "down-1", "down-2"]


def test_an_unknown_compression_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")
    with pytest.raises(ConfigError, match=r"OTLP compression must be one of none, gzip, deflate"):
        telemetry.make_tracer_provider(f"http://127.0.0.1:{_free_port()}", spool_dir=tmp_path / "s")


# ----------------------------------------------------------------------------------------------
# FastSpanExporter: the same encoder and sender, no spool (the engine hooks without one)
# ----------------------------------------------------------------------------------------------
def test_fast_exporter_delivers_a_batch_byte_for_byte_as_the_sdk_encodes_it(
    port: int, store: Path
) -> None:
    spans = _spans(5, "fast")
    with Receiver(store, port=port):
        exporter = FastSpanExporter(f"http://127.0.0.1:{port}/v1/traces")
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
    assert sorted(_stored_names(store)) == sorted(s.name for s in spans)
    assert encode_batch(spans) == _payload(spans)


@pytest.mark.parametrize(("status", "tries"), [(503, 3), (429, 3), (400, 1), (404, 1)])
def test_fast_exporter_retries_what_is_worth_it_and_fails_the_rest(status: int, tries: int) -> None:
    """A 429 or 5xx is tried again (three tries), another 4xx never; either way the batch fails
    once the tries are spent, and nothing raises."""
    collector = _CapturingCollector(status)
    spans = _spans(2)
    try:
        exporter = FastSpanExporter(collector.url, attempts=3)
        assert exporter.export(spans) is SpanExportResult.FAILURE
        exporter.shutdown()
    finally:
        collector.close()
    assert [body for _, body in collector.requests] == [encode_batch(spans)] * tries


def test_fast_exporter_fails_a_batch_nobody_takes(port: int) -> None:
    exporter = FastSpanExporter(f"http://127.0.0.1:{port}/v1/traces", attempts=2)
    assert exporter.export(_spans(2)) is SpanExportResult.FAILURE
    exporter.shutdown()
