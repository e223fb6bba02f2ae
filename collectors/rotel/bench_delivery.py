"""What rotel in front of the embedded receiver costs: span throughput and delivery latency.

Both paths end in the same embedded receiver (``EmbeddedCollector``: its own process, a DuckDB
store); the only difference is rotel in between::

    direct:  sender ──OTLP/HTTP──► receiver
    rotel:   sender ──OTLP/HTTP──► rotel ──OTLP/HTTP (gzip)──► receiver

Throughput: ``--requests`` pre-encoded OTLP/HTTP protobuf requests of ``--spans`` LLM-like spans
(12 attributes, a 100-element offsets array, 2 events) sent by ``--senders`` threads; the clock
stops when the receiver has stored them all (``GET /otelbench/stats``). Latency: one span at a
time, from the POST to it being stored, median of ``--probes``. rotel runs with its default
batch timeout (200 ms) and with 10 ms. Prints a table and writes JSON::

    .venv/bin/python collectors/rotel/bench_delivery.py --out /tmp/rotel-bench.json

Ratios measured in one run are the result; absolute rates on a shared 2-core machine are noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv
from otelbench.benchmark import EmbeddedCollector
from otelbench.collector.rotel import RotelCollector

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def payload(spans: int) -> bytes:
    """One ExportTraceServiceRequest of ``spans`` server-like spans."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    for i in range(spans):
        with tracer.start_as_current_span(semconv.SPAN_HOOK_REQUEST) as span:
            span.set_attribute(semconv.GEN_AI_REQUEST_MODEL, "tiny")
            span.set_attribute(semconv.GEN_AI_OPERATION_NAME, "text_completion")
            span.set_attribute(semconv.REQUEST_INDEX, i)
            span.set_attribute(semconv.RUN_ID, "bench")
            span.set_attribute(semconv.GEN_AI_USAGE_INPUT_TOKENS, 128)
            span.set_attribute(semconv.GEN_AI_USAGE_OUTPUT_TOKENS, 100)
            span.set_attribute(semconv.VLLM_LATENCY_TTFT, 0.05)
            span.set_attribute(semconv.VLLM_LATENCY_QUEUE, 0.001)
            span.set_attribute(semconv.VLLM_LATENCY_PREFILL, 0.04)
            span.set_attribute(semconv.VLLM_LATENCY_DECODE, 1.5)
            span.set_attribute(semconv.VLLM_LATENCY_INFERENCE, 1.54)
            span.set_attribute(semconv.CLIENT_CHUNK_OFFSETS_US, list(range(0, 1_500_000, 15_000)))
            span.add_event("first_token")
            span.add_event("last_token")
    provider.shutdown()
    return bytes(encode_spans(memory.get_finished_spans()).SerializeToString())


def stored(receiver: EmbeddedCollector) -> int:
    return int(receiver.live_stats().get("spans_accepted", 0))


def wait_stored(receiver: EmbeddedCollector, count: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while stored(receiver) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {stored(receiver)} of {count} spans stored in {timeout} s")
        time.sleep(0.002)


def throughput(
    url: str, receiver: EmbeddedCollector, body: bytes, spans: int, requests: int, senders: int
) -> float:
    """Spans per second from the first POST until the receiver has stored them all."""
    base = stored(receiver)
    per_sender = [requests // senders + (i < requests % senders) for i in range(senders)]

    def send(n: int) -> None:
        with httpx.Client(timeout=60.0, trust_env=False) as client:
            for _ in range(n):
                client.post(url, content=body, headers=PROTOBUF).raise_for_status()

    threads = [threading.Thread(target=send, args=(n,)) for n in per_sender]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_stored(receiver, base + spans * requests)
    return spans * requests / (time.perf_counter() - t0)


def latency_ms(url: str, receiver: EmbeddedCollector, body: bytes, probes: int) -> float:
    """Median milliseconds from POSTing one span to the receiver having stored it."""
    samples = []
    with httpx.Client(timeout=60.0, trust_env=False) as client:
        for _ in range(probes):
            base = stored(receiver)
            t0 = time.perf_counter()
            client.post(url, content=body, headers=PROTOBUF).raise_for_status()
            wait_stored(receiver, base + 1)
            samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=500, help="spans per request")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--probes", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    big, one = payload(args.spans), payload(1)
    results: dict[str, Any] = {
        "spans_per_request": args.spans,
        "requests": args.requests,
        "senders": args.senders,
        "request_bytes": len(big),
    }
    with tempfile.TemporaryDirectory(prefix="rotel-bench-") as tmp:
        receiver = EmbeddedCollector(Path(tmp) / "spans.duckdb")
        endpoint = receiver.start()
        try:
            rows = []
            direct = endpoint + "/v1/traces"
            latency_ms(direct, receiver, one, 3)  # warm up DuckDB and the connection
            rows.append(
                (
                    "direct",
                    throughput(direct, receiver, big, args.spans, args.requests, args.senders),
                    latency_ms(direct, receiver, one, args.probes),
                )
            )
            for batch_timeout_s in (0.2, 0.01):
                with RotelCollector(
                    endpoint,
                    batch_timeout_s=batch_timeout_s,
                    niceness=0,
                    log_path=Path(tmp) / f"rotel-{batch_timeout_s}.log",
                ) as rotel:
                    url = rotel.http_traces_endpoint
                    latency_ms(url, receiver, one, 2)
                    rows.append(
                        (
                            f"rotel (batch {batch_timeout_s * 1000:.0f} ms)",
                            throughput(url, receiver, big, args.spans, args.requests, args.senders),
                            latency_ms(url, receiver, one, args.probes),
                        )
                    )
        finally:
            receiver.stop()
    base_rate = rows[0][1]
    print(f"{'path':<24} {'spans/s':>10} {'vs direct':>10} {'latency p50 ms':>15}")
    for name, rate, lat in rows:
        print(f"{name:<24} {rate:>10.0f} {rate / base_rate:>10.2f} {lat:>15.1f}")
    results["paths"] = [
        {"path": name, "spans_per_s": round(rate), "ratio_vs_direct": round(rate / base_rate, 3),
         "latency_p50_ms": round(lat, 2)}
        for name, rate, lat in rows
    ]  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
