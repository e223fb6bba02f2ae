"""What the span spool costs on the export thread, and that the request path does not see it.

Batches of 512 client-shaped spans (each with a 200-entry chunk-offset array, like the load
generator's) are exported, in this process, by:

0. the spool's own work apart: encoding the batch (every OTLP exporter does it) and the framed
   ``write`` of the encoded bytes, with and without ``fsync``;
1. ``OTLPSpanExporter`` (the SDK's) to a real embedded collector (``python -m
   otelbench.collector``, its own process) — the baseline;
2. :class:`otelbench.spool.SpoolingSpanExporter` to the same receiver (collector up: one attempt,
   nothing touches disk);
3. the spooling exporter with the collector down and the spool non-empty (encode + one framed
   ``write``), with ``fsync_each_record`` off (the default) and on;
4. the replay of those records to the receiver once it is back (per batch, until the spool is
   empty).

Then the request path: ``span.end()`` (the only thing the load generator's request path does with
telemetry) is timed while a ``BatchSpanProcessor`` + spooling exporter runs with the collector up,
and again with it down (the exporter thread spooling), 20,000 spans each, to show that the
median and P99 of ``end()`` do not move.

Ratios in one run are what to read; absolute times on a shared 2-core machine are noise (the
1-minute load average is recorded beside every number).

Usage: ``.venv/bin/python bench/spool_cost.py [--batches N] [--out FILE.json]`` (default
``bench/results/spool_cost.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from otelbench.spool import Spool, SpoolingSpanExporter, SpoolStats  # noqa: E402

BATCH = 512


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def collector(store: Path, port: int) -> Iterator[None]:
    """``python -m otelbench.collector`` in its own process (its decoding and inserts do not
    share this process's GIL with the exporter being measured)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(store), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["event"] == "ready"
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def make_batch(seed: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    offsets = [812 + 997 * i for i in range(200)]
    for i in range(BATCH):
        span = tracer.start_span("text_completion tiny")
        span.set_attribute("otelbench.request.index", seed * BATCH + i)
        span.set_attribute("otelbench.client.chunk_offsets_us", offsets)
        span.end()
    return list(memory.get_finished_spans())


def time_us(fn: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1000


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median_us": round(statistics.median(ordered), 1),
        "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
    }


def disk_costs(batches: list[list[ReadableSpan]], work: Path) -> dict[str, Any]:
    """The spool's own part of an export: encoding (which every OTLP exporter does) apart from
    the framed write, with and without ``fsync``."""
    payloads = [encode_spans(b).SerializePartialToString() for b in batches]
    out: dict[str, Any] = {
        "encode_only": summary(
            [time_us(lambda b=b: encode_spans(b).SerializePartialToString()) for b in batches]
        )
    }
    for fsync in (False, True):
        spool = Spool(work / f"disk-{fsync}", fsync_each_record=fsync)
        key = "spool_write_fsync_each_record" if fsync else "spool_write"
        out[key] = summary([time_us(lambda p=p, s=spool: s.append(p, BATCH)) for p in payloads])
        out[key]["bytes_per_span"] = round(spool.size_bytes / (len(payloads) * BATCH), 1)
        spool.close()
    return out


def export_costs(batches: list[list[ReadableSpan]], work: Path) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/traces"
    out: dict[str, Any] = disk_costs(batches, work)
    with collector(work / "spans.duckdb", port):
        sdk = OTLPSpanExporter(endpoint=url, timeout=10)
        spool = SpoolingSpanExporter(url, work / "spool-up", stats=SpoolStats())
        # Interleaved, batch by batch, so that both see the same store size and machine load.
        sdk_us, spool_us = [], []
        for b in batches:
            sdk_us.append(time_us(lambda b=b: sdk.export(b)))
            spool_us.append(time_us(lambda b=b: spool.export(b)))
        out["sdk_exporter_collector_up"] = summary(sdk_us)
        out["spool_exporter_collector_up"] = summary(spool_us)
        sdk.shutdown()
        spool.shutdown()
    for fsync in (False, True):
        stats = SpoolStats()
        down = SpoolingSpanExporter(
            url, work / f"spool-down-{fsync}", stats=stats, fsync_each_record=fsync
        )
        down.export(batches[0])  # the collector is down: this one tries, fails and spools
        key = "spool_append_fsync_each_record" if fsync else "spool_append"
        out[key] = summary([time_us(lambda b=b, d=down: d.export(b)) for b in batches])
        out[key]["bytes_per_batch"] = down.spool.size_bytes // (len(batches) + 1)
        if not fsync:
            with collector(work / "spans.duckdb", port):
                started = time.perf_counter_ns()
                assert down.force_flush(600_000)
                elapsed_us = (time.perf_counter_ns() - started) / 1000
            replayed = stats.as_dict()["spans_replayed"]
            out["replay"] = {
                "batches": len(batches) + 1,
                "per_batch_us": round(elapsed_us / (len(batches) + 1), 1),
                "spans_replayed": replayed,
            }
        down.shutdown()
    return out


def request_path(work: Path, spans: int) -> dict[str, Any]:
    """``span.end()`` with the exporter thread sending, then spooling."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/traces"
    out: dict[str, Any] = {}
    offsets = [812 + 997 * i for i in range(200)]
    for label, up in (("collector_up", True), ("collector_down_spooling", False)):
        stack = contextlib.ExitStack()
        if up:
            stack.enter_context(collector(work / f"rp-{label}.duckdb", port))
        stats = SpoolStats()
        provider = TracerProvider()
        provider.add_span_processor(
            BatchSpanProcessor(
                SpoolingSpanExporter(url, work / f"rp-spool-{label}", stats=stats),
                max_queue_size=65536,
                max_export_batch_size=512,
                schedule_delay_millis=50,
            )
        )
        tracer = provider.get_tracer("bench")
        samples = []
        for i in range(spans):
            span = tracer.start_span("text_completion tiny")
            span.set_attribute("otelbench.request.index", i)
            span.set_attribute("otelbench.client.chunk_offsets_us", offsets)
            samples.append(time_us(span.end))
            if i % 64 == 0:
                time.sleep(0.001)  # let the exporter thread run between requests
        provider.force_flush()
        out[label] = {**summary(samples), **stats.as_dict()}
        provider.shutdown()
        stack.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "spool_cost.json")
    args = parser.parse_args()
    batches = [make_batch(k) for k in range(args.batches)]
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()[0]
        export = export_costs(batches, Path(tmp))
        path = request_path(Path(tmp), args.spans)
        load_after = os.getloadavg()[0]
    result = {
        "batch_spans": BATCH,
        "export_thread_per_batch": export,
        "request_path_span_end": path,
        "loadavg_1m": [load_before, load_after],
    }
    print(f"{'export thread, per batch of 512 spans':<44} {'median µs':>10} {'p99 µs':>10}")
    for key, row in export.items():
        if "median_us" in row:
            print(f"{key:<44} {row['median_us']:>10} {row['p99_us']:>10}")
    print(f"{'replay from spool, per batch':<44} {export['replay']['per_batch_us']:>10}")
    print(f"\n{'request path: span.end()':<44} {'median µs':>10} {'p99 µs':>10}")
    for key, row in path.items():
        print(f"{key:<44} {row['median_us']:>10} {row['p99_us']:>10}")
    print(f"\nload average (1 min) before/after: {load_before:.2f} / {load_after:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
