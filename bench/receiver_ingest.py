"""Ingest rate of the embedded collector: OTLP/HTTP batches of LLM-like spans, sent at full speed.

The collector runs as its own process (``python -m otelbench.collector``, exactly as the load
generator starts it); this script is the client, in a separate process. Every span carries what a
client span carries, including two 128-element integer arrays (chunk arrival offsets and chunk
token counts). Batches are encoded by the OpenTelemetry SDK's own OTLP encoder before the clock
starts, so the client costs little and the collector is the bottleneck; ``--connections`` keep-alive
connections post them back to back for ``--seconds``. Each 200 means the batch was committed
(fsync'd) into the store.

Scenarios: 512 spans per request (the SDK's default ``max_export_batch_size``) as protobuf, the
same gzip-compressed, and 8 spans per request (per-request overhead).

Reported per scenario: spans/s and batches/s acknowledged, request latency p50/p99 as the client
saw it, the collector's CPU time per span, and its RSS at start and end (and peak). At the end the
collector is stopped with SIGTERM and the store is reopened to check that it holds every
acknowledged span.

    .venv/bin/python bench/receiver_ingest.py   # ~90 s, writes bench/results/receiver_ingest.json
    .venv/bin/python bench/receiver_ingest.py --seconds 5 --scenarios protobuf-512
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from otelbench import semconv  # noqa: E402
from otelbench.store import SpanStore  # noqa: E402

ARRAY_LEN = 128
DISTINCT_SPANS = 4096  # encoded once, then sent round and round
SCENARIOS: dict[str, tuple[bool, int]] = {  # name: (gzip, spans per request)
    "protobuf-512": (False, 512),
    "gzip-512": (True, 512),
    "protobuf-8": (False, 8),
}


def make_batches(n_batches: int, batch_size: int, seed: int) -> list[bytes]:
    """``n_batches`` serialized ExportTraceServiceRequests of ``batch_size`` client spans each."""
    rng = np.random.default_rng(seed)
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": semconv.SERVICE_CLIENT}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, "0.1.0")
    bodies = []
    index = 0
    for _ in range(n_batches):
        memory.clear()
        for _ in range(batch_size):
            itl = rng.integers(5_000, 25_000, ARRAY_LEN)
            offsets = (150_000 + np.cumsum(itl)).tolist()
            with tracer.start_as_current_span("chat tiny", kind=trace.SpanKind.CLIENT) as span:
                span.set_attribute(semconv.GEN_AI_OPERATION_NAME, semconv.OPERATION_CHAT)
                span.set_attribute(semconv.GEN_AI_REQUEST_MODEL, "tiny")
                span.set_attribute(semconv.GEN_AI_REQUEST_MAX_TOKENS, ARRAY_LEN)
                span.set_attribute(semconv.GEN_AI_REQUEST_TEMPERATURE, 0.0)
                span.set_attribute(semconv.GEN_AI_USAGE_INPUT_TOKENS, 256)
                span.set_attribute(semconv.GEN_AI_USAGE_OUTPUT_TOKENS, ARRAY_LEN)
                span.set_attribute(semconv.GEN_AI_RESPONSE_FINISH_REASONS, ["length"])
                span.set_attribute(semconv.RUN_ID, "bench")
                span.set_attribute(semconv.REQUEST_INDEX, index)
                span.set_attribute(semconv.CLIENT_TTFT_US, offsets[0])
                span.set_attribute(semconv.CLIENT_END_OFFSET_US, offsets[-1])
                span.set_attribute(semconv.CLIENT_CHUNK_OFFSETS_US, offsets)
                span.set_attribute(semconv.CLIENT_CHUNK_TOKENS, [1] * ARRAY_LEN)
                span.set_attribute(
                    semconv.CLIENT_CHUNK_TOKEN_SOURCE, semconv.CHUNK_TOKENS_FROM_USAGE
                )
            index += 1
        bodies.append(encode_spans(memory.get_finished_spans()).SerializeToString())
    provider.shutdown()
    return bodies


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS/VmHWM (KiB) and utime+stime (clock ticks) of a process, from /proc."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    out["cpu_ticks"] = int(fields[11]) + int(fields[12])  # utime, stime
    return out


@dataclass
class Sender:
    port: int
    bodies: list[bytes]
    headers: dict[str, str]
    spans_per_batch: int
    stop_at: float
    latencies: list[float]
    acked_batches: int = 0
    failures: int = 0

    def run(self, offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        i = offset
        try:
            while time.perf_counter() < self.stop_at:
                body = self.bodies[i % len(self.bodies)]
                i += 1
                t0 = time.perf_counter()
                conn.request("POST", "/v1/traces", body=body, headers=self.headers)
                response = conn.getresponse()
                response.read()
                elapsed = time.perf_counter() - t0
                if response.status == 200:
                    self.latencies.append(elapsed)
                    self.acked_batches += 1
                else:
                    self.failures += 1
        finally:
            conn.close()


def run_scenario(name: str, seconds: float, connections: int) -> dict[str, Any]:
    use_gzip, batch_size = SCENARIOS[name]
    t = time.perf_counter()
    raw_bodies = make_batches(max(8, DISTINCT_SPANS // batch_size), batch_size, seed=7)
    print(
        f"{name}: encoded {len(raw_bodies)} batches x {batch_size} spans "
        f"({np.mean([len(b) for b in raw_bodies]) / 1024:.0f} KiB each) "
        f"in {time.perf_counter() - t:.1f} s; sending for {seconds:.0f} s ...",
        flush=True,
    )
    bodies = [gzip.compress(b, compresslevel=1) for b in raw_bodies] if use_gzip else raw_bodies
    headers = {"Content-Type": "application/x-protobuf"}
    if use_gzip:
        headers["Content-Encoding"] = "gzip"
    with tempfile.TemporaryDirectory(prefix="otelbench-ingest-") as tmp:
        store_path = Path(tmp) / "spans.duckdb"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "otelbench.collector",
                "--store",
                str(store_path),
                "--port",
                "0",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        time.sleep(0.5)
        at_start = proc_status(proc.pid)
        stop_at = time.perf_counter() + seconds
        senders = [
            Sender(ready["port"], bodies, headers, batch_size, stop_at, [])
            for _ in range(connections)
        ]
        threads = [threading.Thread(target=s.run, args=(k * 7,)) for k, s in enumerate(senders)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t0
        at_end = proc_status(proc.pid)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        stopped = json.loads(out.strip().splitlines()[-1])
        with SpanStore.open(store_path, read_only=True) as store:
            stored = store.span_count()
        file_bytes = store_path.stat().st_size
    latencies = np.array([x for s in senders for x in s.latencies])
    batches = sum(s.acked_batches for s in senders)
    spans = batches * batch_size
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_s = (at_end["cpu_ticks"] - at_start["cpu_ticks"]) / ticks
    return {
        "scenario": name,
        "seconds": round(elapsed, 2),
        "connections": connections,
        "spans_per_batch": batch_size,
        "request_bytes_mean": int(np.mean([len(b) for b in bodies])),
        "batches_acked": batches,
        "spans_acked": spans,
        "failed_requests": sum(s.failures for s in senders),
        "spans_per_s": round(spans / elapsed, 1),
        "batches_per_s": round(batches / elapsed, 2),
        "latency_p50_ms": round(float(np.percentile(latencies, 50)) * 1e3, 2),
        "latency_p99_ms": round(float(np.percentile(latencies, 99)) * 1e3, 2),
        "collector_cpu_s": round(cpu_s, 2),
        "collector_cpu_us_per_span": round(cpu_s / spans * 1e6, 1) if spans else None,
        "collector_rss_start_mib": round(at_start["VmRSS"] / 1024, 1),
        "collector_rss_end_mib": round(at_end["VmRSS"] / 1024, 1),
        "collector_rss_peak_mib": round(at_end["VmHWM"] / 1024, 1),
        "collector_reported_spans": stopped["spans"],
        "collector_rejected": stopped["rejected"],
        "store_spans_after_reopen": stored,
        "store_file_mib": round(file_bytes / 2**20, 1),
        "all_acknowledged_spans_stored": stored == spans == stopped["spans"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "receiver_ingest.json"
    )
    args = parser.parse_args(argv)

    results = [run_scenario(name, args.seconds, args.connections) for name in args.scenarios]

    columns = [
        ("scenario", "scenario", "{}"),
        ("spans/req", "spans_per_batch", "{}"),
        ("spans/s", "spans_per_s", "{:.0f}"),
        ("batches/s", "batches_per_s", "{:.2f}"),
        ("p50 ms", "latency_p50_ms", "{:.1f}"),
        ("p99 ms", "latency_p99_ms", "{:.1f}"),
        ("cpu µs/span", "collector_cpu_us_per_span", "{:.0f}"),
        ("RSS start MiB", "collector_rss_start_mib", "{:.0f}"),
        ("RSS end MiB", "collector_rss_end_mib", "{:.0f}"),
        ("RSS peak MiB", "collector_rss_peak_mib", "{:.0f}"),
        ("all stored", "all_acknowledged_spans_stored", "{}"),
    ]
    cells = [[title for title, _, _ in columns]] + [
        [fmt.format(r[key]) for _, key, fmt in columns] for r in results
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))

    report = {
        "benchmark": "receiver_ingest",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "duckdb": duckdb.__version__,
            "platform": platform.platform(),
        },
        "workload": {
            "span": "client span: 14 attributes incl. two int arrays",
            "int_array_len": ARRAY_LEN,
            "distinct_spans_cycled": DISTINCT_SPANS,
            "connections": args.connections,
            "seconds_per_scenario": args.seconds,
        },
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["results"], indent=None))
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")
    return 0 if all(r["all_acknowledged_spans_stored"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
