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

``llm-requests`` measures what one LLM request costs the store (issue 8): ``--llm-requests``
distinct requests, each its five spans as the SDK encodes them — the client span (chunk offsets
and chunk token counts, ``--tokens`` each), the engine hooks' server span
(``otelbench.vllm.request``, child of the client span, with vLLM's latency and usage keys and
``--tokens`` per-token offsets) and its queue, prefill and decode spans — in batches of 100
requests, every batch sent once (no repeats: repeated rows would compress better than a real
run's). It reports spans/s and requests/s, and the bytes stored per request: the DuckDB file
after the collector's stop (it checkpoints) minus an empty store's file, and of the file's used
blocks alone (``pragma_database_size``: a file grown by many commits keeps free blocks that later
writes reuse); and the same rows copied into chdb (ClickHouse in-process, the exporter's
``otel_traces`` MergeTree), read from ``system.parts`` (``bytes_on_disk`` of the active parts
after ``OPTIMIZE … FINAL``); each divided by the requests.

Reported per scenario: spans/s and batches/s acknowledged, request latency p50/p99 as the client
saw it, the collector's CPU time per span, and its RSS at start and end (and peak). At the end the
collector is stopped with SIGTERM and the store is reopened to check that it holds every
acknowledged span.

    .venv/bin/python bench/receiver_ingest.py   # ~90 s, writes bench/results/receiver_ingest.json
    .venv/bin/python bench/receiver_ingest.py --seconds 5 --scenarios protobuf-512
    .venv/bin/python bench/receiver_ingest.py --scenarios llm-requests --llm-requests 4000
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
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

from bench.common import machine, write_result  # noqa: E402
from otelbench import semconv  # noqa: E402
from otelbench.store import SpanStore  # noqa: E402

ARRAY_LEN = 128
DISTINCT_SPANS = 4096  # encoded once, then sent round and round
SCENARIOS: dict[str, tuple[bool, int]] = {  # name: (gzip, spans per request)
    "protobuf-512": (False, 512),
    "gzip-512": (True, 512),
    "protobuf-8": (False, 8),
}
LLM_REQUESTS = "llm-requests"
SPANS_PER_LLM_REQUEST = 5  # client span, server span, queue, prefill and decode spans
LLM_REQUESTS_PER_BATCH = 100
T0_NS = 1_790_000_000_000_000_000


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


def make_llm_batches(n_requests: int, tokens: int, seed: int) -> list[bytes]:
    """Serialized ExportTraceServiceRequests of :data:`LLM_REQUESTS_PER_BATCH` LLM requests,
    five spans each (module docstring), every id distinct, encoded by the SDK's OTLP encoder."""
    rng = np.random.default_rng(seed)
    memory = InMemorySpanExporter()
    providers = [
        TracerProvider(resource=Resource.create({"service.name": service}))
        for service in (semconv.SERVICE_CLIENT, semconv.SERVICE_VLLM)
    ]
    for provider in providers:
        provider.add_span_processor(SimpleSpanProcessor(memory))
    client_tracer = providers[0].get_tracer(semconv.INSTRUMENTATION_SCOPE, "0.1.0")
    hook_tracer = providers[1].get_tracer(semconv.INSTRUMENTATION_SCOPE_HOOKS, "0.1.0")
    bodies = []
    for first in range(0, n_requests, LLM_REQUESTS_PER_BATCH):
        memory.clear()
        for index in range(first, min(first + LLM_REQUESTS_PER_BATCH, n_requests)):
            llm_request_spans(client_tracer, hook_tracer, index, tokens, rng)
        bodies.append(encode_spans(memory.get_finished_spans()).SerializeToString())
    for provider in providers:
        provider.shutdown()
    return bodies


def llm_request_spans(
    client_tracer: trace.Tracer,
    hook_tracer: trace.Tracer,
    index: int,
    tokens: int,
    rng: np.random.Generator,
) -> None:
    """One LLM request's five spans, with the attributes the client and the engine hooks set."""
    submit = T0_NS + index * 10_000_000
    queue_us, prefill_us = int(rng.integers(100, 5_000)), int(rng.integers(5_000, 80_000))
    itl = rng.integers(8_000, 40_000, tokens)
    server_offsets = (queue_us + prefill_us + np.cumsum(itl) - itl[0]).tolist()
    client_offsets = [v + 2_000 for v in server_offsets]
    end_us = client_offsets[-1] + 1_000
    client = client_tracer.start_span(
        "text_completion tiny", kind=trace.SpanKind.CLIENT, start_time=submit
    )
    client.set_attributes(
        {
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_TEXT_COMPLETION,
            semconv.GEN_AI_REQUEST_MODEL: "tiny",
            semconv.GEN_AI_REQUEST_MAX_TOKENS: tokens,
            semconv.GEN_AI_USAGE_INPUT_TOKENS: 256,
            semconv.GEN_AI_USAGE_OUTPUT_TOKENS: tokens,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: ["length"],
            semconv.RUN_ID: "bench",
            semconv.REQUEST_INDEX: index,
            semconv.REQUEST_CLASS: "default",
            semconv.CLIENT_TTFT_US: client_offsets[0],
            semconv.CLIENT_FIRST_EVENT_OFFSET_US: client_offsets[0],
            semconv.CLIENT_END_OFFSET_US: end_us,
            semconv.CLIENT_CHUNK_OFFSETS_US: client_offsets,
            semconv.CLIENT_CHUNK_TOKENS: [1] * tokens,
            semconv.CLIENT_CHUNK_TOKEN_SOURCE: semconv.CHUNK_TOKENS_FROM_USAGE,
        }
    )
    arrival = submit + 1_000_000
    e2e_us = server_offsets[-1] + 500
    server = hook_tracer.start_span(
        semconv.SPAN_HOOK_REQUEST,
        context=trace.set_span_in_context(client),
        kind=trace.SpanKind.SERVER,
        start_time=arrival,
        attributes={
            semconv.VLLM_REQUEST_ID: f"cmpl-{index:012x}",
            semconv.VLLM_RESPONSE_FINISH_REASON: "length",
            semconv.VLLM_USAGE_PROMPT_TOKENS: 256,
            semconv.VLLM_USAGE_COMPLETION_TOKENS: tokens,
            semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 0,
            semconv.VLLM_LATENCY_TTFT: server_offsets[0] / 1e6,
            semconv.VLLM_LATENCY_E2E: e2e_us / 1e6,
            semconv.VLLM_LATENCY_QUEUE: queue_us / 1e6,
            semconv.VLLM_LATENCY_PREFILL: prefill_us / 1e6,
            semconv.VLLM_LATENCY_DECODE: (server_offsets[-1] - server_offsets[0]) / 1e6,
            semconv.VLLM_LATENCY_INFERENCE: (server_offsets[-1] - queue_us) / 1e6,
            semconv.SERVER_TOKEN_OFFSETS_US: server_offsets,
            semconv.SERVER_PREEMPTIONS: 0,
            semconv.SERVER_MONO_TO_UNIX_OFFSET_NS: 1_789_000_000_123_456_789,
        },
    )
    bounds = (0, queue_us, queue_us + prefill_us, server_offsets[-1])
    in_server = trace.set_span_in_context(server)
    phases = (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE)
    for k, name in enumerate(phases):
        phase = hook_tracer.start_span(
            name, context=in_server, start_time=arrival + bounds[k] * 1000
        )
        phase.end(end_time=arrival + bounds[k + 1] * 1000)
    server.end(end_time=arrival + e2e_us * 1000)
    client.end(end_time=submit + end_us * 1000)


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


def start_collector(store_path: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``python -m otelbench.collector`` on port 0, as the load generator starts it; returns the
    process and its ready line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(store_path), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    time.sleep(0.5)
    return proc, ready


def stop_collector(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """SIGTERM (the collector checkpoints its store and exits); returns its final stats line."""
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    stopped: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return stopped


def send_once(port: int, bodies: list[bytes], connections: int) -> tuple[float, int, int]:
    """Every body POSTed once, over ``connections`` keep-alive connections taking the next
    unsent body in turn; returns (seconds, acknowledged bodies, failed ones)."""
    lock = threading.Lock()
    pending = list(reversed(bodies))
    counts = {"acked": 0, "failed": 0}
    headers = {"Content-Type": "application/x-protobuf"}

    def run() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            while True:
                with lock:
                    if not pending:
                        return
                    body = pending.pop()
                conn.request("POST", "/v1/traces", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                with lock:
                    counts["acked" if response.status == 200 else "failed"] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=run) for _ in range(connections)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - start, counts["acked"], counts["failed"]


def used_and_free_bytes(store: SpanStore) -> tuple[int, int]:
    """Bytes of the store file's blocks in use and free (``pragma_database_size``): a file that
    grew through many commits keeps free blocks that later writes reuse."""
    block, used, free = store.connection.execute(
        "SELECT block_size, used_blocks, free_blocks FROM pragma_database_size()"
    ).fetchone() or (0, 0, 0)
    return int(block) * int(used), int(block) * int(free)


def empty_store_bytes(tmp: Path) -> int:
    """File size of a new, checkpointed store holding no span (the fixed part of a store)."""
    path = tmp / "empty.duckdb"
    with SpanStore.open(path) as store:
        store.connection.execute("CHECKPOINT")
    return path.stat().st_size


def chdb_bytes(store_path: Path, tmp: Path) -> tuple[int, int]:
    """The DuckDB store's spans copied into chdb's ``otel_traces`` (MergeTree), merged into one
    part per partition: (spans copied, bytes on disk of the table's active parts)."""
    import chdb

    from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb

    session = chdb.session.Session(str(tmp / "ch"))
    try:
        copied = copy_duckdb_to_chdb(store_path, ChdbConnection(session, "otel"), database="otel")
        session.query("OPTIMIZE TABLE otel.otel_traces FINAL")
        on_disk = session.query(
            "SELECT sum(bytes_on_disk) FROM system.parts "
            "WHERE database = 'otel' AND table = 'otel_traces' AND active",
            "CSV",
        )
        return copied, int(str(on_disk).strip())
    finally:
        session.close()


def run_llm_requests(n_requests: int, tokens: int, connections: int) -> dict[str, Any]:
    """The ``llm-requests`` scenario (module docstring)."""
    t = time.perf_counter()
    bodies = make_llm_batches(n_requests, tokens, seed=7)
    spans = n_requests * SPANS_PER_LLM_REQUEST
    print(
        f"{LLM_REQUESTS}: encoded {n_requests} requests ({spans} spans) in {len(bodies)} "
        f"batches ({np.mean([len(b) for b in bodies]) / 1024:.0f} KiB each) in "
        f"{time.perf_counter() - t:.1f} s; sending each once ...",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="otelbench-ingest-") as tmp_dir:
        tmp = Path(tmp_dir)
        store_path = tmp / "spans.duckdb"
        proc, ready = start_collector(store_path)
        at_start = proc_status(proc.pid)
        elapsed, acked, failed = send_once(ready["port"], bodies, connections)
        at_end = proc_status(proc.pid)
        stopped = stop_collector(proc)
        with SpanStore.open(store_path, read_only=True) as store:
            stored = store.span_count()
            used_bytes, free_bytes = used_and_free_bytes(store)
        file_bytes = store_path.stat().st_size
        empty_bytes = empty_store_bytes(tmp)
        copied, ch_bytes = chdb_bytes(store_path, tmp)
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_s = (at_end["cpu_ticks"] - at_start["cpu_ticks"]) / ticks
    wire = sum(len(b) for b in bodies)
    return {
        "scenario": LLM_REQUESTS,
        "seconds": round(elapsed, 2),
        "connections": connections,
        "requests": n_requests,
        "tokens_per_request": tokens,
        "spans_per_request": SPANS_PER_LLM_REQUEST,
        "spans_per_batch": LLM_REQUESTS_PER_BATCH * SPANS_PER_LLM_REQUEST,
        "batches_acked": acked,
        "failed_requests": failed,
        "spans_per_s": round(spans / elapsed, 1),
        "llm_requests_per_s": round(n_requests / elapsed, 1),
        "token_offsets_per_s": round(2 * tokens * n_requests / elapsed, 1),
        "collector_cpu_s": round(cpu_s, 2),
        "collector_cpu_us_per_span": round(cpu_s / spans * 1e6, 1),
        "collector_rss_peak_mib": round(at_end["VmHWM"] / 1024, 1),
        "collector_reported_spans": stopped["spans"],
        "collector_rejected": stopped["rejected"],
        "store_spans_after_reopen": stored,
        "wire_bytes_per_request": round(wire / n_requests),
        "duckdb_file_bytes": file_bytes,
        "duckdb_empty_store_bytes": empty_bytes,
        "duckdb_used_block_bytes": used_bytes,
        "duckdb_free_block_bytes": free_bytes,
        "duckdb_bytes_per_request": round((file_bytes - empty_bytes) / n_requests),
        "duckdb_used_bytes_per_request": round(used_bytes / n_requests),
        "chdb_spans_copied": copied,
        "chdb_bytes_on_disk": ch_bytes,
        "chdb_bytes_per_request": round(ch_bytes / n_requests),
        "all_acknowledged_spans_stored": failed == 0 and stored == spans == stopped["spans"],
    }


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
        proc, ready = start_collector(store_path)
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
        stopped = stop_collector(proc)
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
    names = [*SCENARIOS, LLM_REQUESTS]
    parser.add_argument("--scenarios", nargs="+", default=names, choices=names)
    parser.add_argument("--llm-requests", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=100, help="output tokens per LLM request")
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "receiver_ingest.json"
    )
    args = parser.parse_args(argv)

    results = [
        run_scenario(name, args.seconds, args.connections)
        for name in args.scenarios
        if name != LLM_REQUESTS
    ]
    llm = (
        run_llm_requests(args.llm_requests, args.tokens, args.connections)
        if LLM_REQUESTS in args.scenarios
        else None
    )

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
    for k, row in enumerate(cells if results else []):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    if llm is not None:
        print(
            f"{LLM_REQUESTS}: {llm['requests']} requests × {SPANS_PER_LLM_REQUEST} spans, "
            f"{llm['tokens_per_request']} tokens: {llm['spans_per_s']:.0f} spans/s = "
            f"{llm['llm_requests_per_s']:.0f} requests/s "
            f"({llm['collector_cpu_us_per_span']:.0f} µs collector CPU per span); stored per "
            f"request: DuckDB {llm['duckdb_bytes_per_request']} B of file "
            f"({llm['duckdb_used_bytes_per_request']} B in used blocks), chdb "
            f"{llm['chdb_bytes_per_request']} B (on the wire {llm['wire_bytes_per_request']} B); "
            f"all stored: {llm['all_acknowledged_spans_stored']}"
        )
        results.append(llm)

    report = {
        "benchmark": "receiver_ingest",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(duckdb=duckdb.__version__),
        "llm_request": {
            "spans": "client span (chunk offsets and chunk tokens), engine-hook server span "
            "(per-token offsets), its queue, prefill and decode spans",
            "tokens": args.tokens,
            "requests": args.llm_requests,
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
    print(json.dumps(report["results"], indent=None))
    write_result(args.out, report)
    return 0 if all(r["all_acknowledged_spans_stored"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
