"""Sustained ingest into the embedded collector: engine-hook requests at its maximum rate, for long.

The collector runs as its own process (``python -m otelbench.collector``); this script is the
client. A *request* is what the engine hooks export for one finished request
(``engine_hooks/otelbench_vllm/hook.py``): a SERVER span ``otelbench.request`` with vLLM's
latency and usage attributes and the engine-side offset of every output token
(``--tokens`` of them, default 128, as an int array), and its three phase spans (queue,
prefill, decode). Batches of ``--requests-per-batch`` requests (4 spans each) are encoded once,
from a pool of distinct random token schedules, and sent round and round over ``--connections``
keep-alive connections back to back for ``--minutes``; each send gets fresh trace and span ids
(patched into the encoded bytes), so ids never repeat and the store holds what a real run would.

Every ``--sample-s`` the collector's RSS (``/proc/PID/status``) and the spans acknowledged so far
are sampled; every ``--snapshot-every-s`` a reader in this process opens the store read-only,
which goes through the collector's snapshot endpoint (``POST /otelbench/snapshot``): the time it
takes is recorded against the store's size. At the end the collector is stopped with SIGTERM
(it checkpoints), the store is reopened and counted, and the bytes stored per span and per
request are read off the file.

Reported: spans/s, requests/s and token offsets/s acknowledged; RSS at start, minimum, maximum
and end, and its slope (least squares, MiB per minute) over the whole run and over its second
half; snapshot time against store size; bytes per span and per request; whether every
acknowledged span is in the store.

    .venv/bin/python bench/receiver_sustained.py     # 10 min: bench/results/receiver_sustained.json
    .venv/bin/python bench/receiver_sustained.py --minutes 0.5 --out /tmp/sustained.json
"""

from __future__ import annotations

import argparse
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
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2 as c
from opentelemetry.proto.resource.v1 import resource_pb2 as r
from opentelemetry.proto.trace.v1 import trace_pb2 as t

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import machine, write_result  # noqa: E402
from otelbench import semconv  # noqa: E402
from otelbench.store import SpanStore  # noqa: E402

TRACE_MARK = b"\xc3\x5a\x7e\x11\x96\x2d\xe4\x08"  # first half of every trace id in a template
SPAN_MARK = b"\x5a\xc3\x11\x7e"  # first half of every span id in a template
SPANS_PER_REQUEST = 4  # the server span and its queue, prefill and decode spans
PHASES = (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE)
T0 = 1_790_000_000_000_000_000


def _kv(key: str, value: Any) -> c.KeyValue:
    if isinstance(value, bool):
        return c.KeyValue(key=key, value=c.AnyValue(bool_value=value))
    if isinstance(value, int):
        return c.KeyValue(key=key, value=c.AnyValue(int_value=value))
    if isinstance(value, float):
        return c.KeyValue(key=key, value=c.AnyValue(double_value=value))
    if isinstance(value, list):
        ints = [c.AnyValue(int_value=v) for v in value]
        return c.KeyValue(key=key, value=c.AnyValue(array_value=c.ArrayValue(values=ints)))
    return c.KeyValue(key=key, value=c.AnyValue(string_value=str(value)))


def request_spans(index: int, tokens: int, rng: np.random.Generator) -> list[t.Span]:
    """One request as the engine hooks export it: server span + three phase spans."""
    trace_id = TRACE_MARK + index.to_bytes(8, "big")
    server_id = SPAN_MARK + (index * SPANS_PER_REQUEST).to_bytes(4, "big")
    queue_us, prefill_us = int(rng.integers(100, 5_000)), int(rng.integers(5_000, 80_000))
    itl = rng.integers(8_000, 40_000, tokens)
    offsets = (queue_us + prefill_us + np.cumsum(itl) - itl[0]).tolist()
    start = T0 + index * 1_000_000
    e2e_us = offsets[-1] + 500
    attributes = {
        semconv.VLLM_REQUEST_ID: f"cmpl-{index:012x}",
        semconv.VLLM_RESPONSE_FINISH_REASON: "length",
        semconv.VLLM_USAGE_PROMPT_TOKENS: int(rng.integers(64, 2048)),
        semconv.VLLM_USAGE_COMPLETION_TOKENS: tokens,
        semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 0,
        semconv.VLLM_LATENCY_E2E: e2e_us / 1e6,
        semconv.SERVER_TOKEN_OFFSETS_US: offsets,
        semconv.SERVER_PREEMPTIONS: 0,
        semconv.SERVER_MONO_TO_UNIX_OFFSET_NS: 1_789_000_000_123_456_789,
        semconv.VLLM_LATENCY_TTFT: (queue_us + prefill_us) / 1e6,
        semconv.VLLM_LATENCY_QUEUE: queue_us / 1e6,
        semconv.VLLM_LATENCY_PREFILL: prefill_us / 1e6,
        semconv.VLLM_LATENCY_DECODE: (offsets[-1] - offsets[0]) / 1e6,
        semconv.VLLM_LATENCY_INFERENCE: (offsets[-1] - queue_us) / 1e6,
    }
    server = t.Span(
        trace_id=trace_id,
        span_id=server_id,
        name=semconv.SPAN_HOOK_REQUEST,
        kind=t.Span.SPAN_KIND_SERVER,
        start_time_unix_nano=start,
        end_time_unix_nano=start + e2e_us * 1000,
        attributes=[_kv(k, v) for k, v in attributes.items()],
    )
    bounds = (0, queue_us, queue_us + prefill_us, offsets[-1])
    phases = [
        t.Span(
            trace_id=trace_id,
            span_id=SPAN_MARK + (index * SPANS_PER_REQUEST + k + 1).to_bytes(4, "big"),
            parent_span_id=server_id,
            name=name,
            kind=t.Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start + bounds[k] * 1000,
            end_time_unix_nano=start + bounds[k + 1] * 1000,
        )
        for k, name in enumerate(PHASES)
    ]
    return [server, *phases]


def make_templates(n_batches: int, per_batch: int, tokens: int, seed: int) -> list[bytes]:
    """Encoded ExportTraceServiceRequests; ids carry :data:`TRACE_MARK` / :data:`SPAN_MARK`."""
    rng = np.random.default_rng(seed)
    resource = r.Resource(
        attributes=[
            _kv("service.name", "vllm"),
            _kv("service.version", "0.32.0"),
            _kv("host.name", "bench"),
        ]
    )
    scope = c.InstrumentationScope(name=semconv.INSTRUMENTATION_SCOPE_HOOKS, version="0.1.0")
    bodies = []
    for b in range(n_batches):
        spans = [s for i in range(per_batch) for s in request_spans(b * per_batch + i, tokens, rng)]
        request = ExportTraceServiceRequest(
            resource_spans=[
                t.ResourceSpans(
                    resource=resource, scope_spans=[t.ScopeSpans(scope=scope, spans=spans)]
                )
            ]
        )
        body = request.SerializeToString()
        assert body.count(TRACE_MARK) == per_batch * SPANS_PER_REQUEST
        assert body.count(SPAN_MARK) == per_batch * (2 * SPANS_PER_REQUEST - 1)
        bodies.append(body)
    return bodies


def fresh_ids(template: bytes, send: int) -> bytes:
    """``template`` with every trace and span id made unique to this send."""
    salt = (send + 1).to_bytes(8, "big")
    return template.replace(TRACE_MARK, salt).replace(SPAN_MARK, salt[4:])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


@dataclass
class Counters:
    lock: threading.Lock
    sends: int = 0
    acked_batches: int = 0
    failures: int = 0

    def next_send(self) -> int:
        with self.lock:
            self.sends += 1
            return self.sends


def sender(port: int, templates: list[bytes], counters: Counters, stop_at: float) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/x-protobuf"}
    try:
        while time.monotonic() < stop_at:
            send = counters.next_send()
            body = fresh_ids(templates[send % len(templates)], send)
            conn.request("POST", "/v1/traces", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            with counters.lock:
                if response.status == 200:
                    counters.acked_batches += 1
                else:
                    counters.failures += 1
    finally:
        conn.close()


def slope_mib_per_min(samples: list[dict[str, float]]) -> float | None:
    if len(samples) < 3:
        return None
    x = np.array([s["t_s"] for s in samples]) / 60.0
    y = np.array([s["rss_mib"] for s in samples])
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    t = time.monotonic()
    templates = make_templates(args.distinct_batches, args.requests_per_batch, args.tokens, seed=11)
    spans_per_batch = args.requests_per_batch * SPANS_PER_REQUEST
    print(
        f"encoded {len(templates)} distinct batches of {args.requests_per_batch} requests "
        f"({spans_per_batch} spans, {np.mean([len(b) for b in templates]) / 1024:.0f} KiB) in "
        f"{time.monotonic() - t:.1f} s; sending for {args.minutes:g} min ...",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="otelbench-sustained-", dir=args.tmp_dir) as tmp:
        store_path = Path(tmp) / "spans.duckdb"
        log = (Path(tmp) / "collector.log").open("w")
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
            stderr=log,  # a file: a pipe nobody reads for minutes could block the collector
            text=True,
        )
        assert proc.stdout is not None
        port = json.loads(proc.stdout.readline())["port"]
        counters = Counters(threading.Lock())
        samples: list[dict[str, float]] = []
        snapshots: list[dict[str, float]] = []
        t0 = time.monotonic()
        stop_at = t0 + args.minutes * 60.0
        threads = [
            threading.Thread(target=sender, args=(port, templates, counters, stop_at))
            for _ in range(args.connections)
        ]
        for th in threads:
            th.start()
        next_snapshot = t0 + args.snapshot_every_s
        while (now := time.monotonic()) < stop_at:
            with counters.lock:
                acked = counters.acked_batches
            samples.append(
                {
                    "t_s": round(now - t0, 2),
                    "rss_mib": round(rss_kib(proc.pid) / 1024, 1),
                    "spans_acked": acked * spans_per_batch,
                }
            )
            if args.snapshot_every_s > 0 and now >= next_snapshot:
                snapshots.append(take_snapshot(store_path))
                next_snapshot = now + args.snapshot_every_s
            time.sleep(max(0.0, min(args.sample_s, stop_at - time.monotonic())))
        for th in threads:
            th.join()
        elapsed = time.monotonic() - t0
        samples.append(
            {
                "t_s": round(elapsed, 2),
                "rss_mib": round(rss_kib(proc.pid) / 1024, 1),
                "spans_acked": counters.acked_batches * spans_per_batch,
            }
        )
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=600)
        log.close()
        stopped = json.loads(out.strip().splitlines()[-1])
        with SpanStore.open(store_path, read_only=True) as store:
            stored = store.span_count()
            [(offsets_stored,)] = store.execute(
                'SELECT sum(len("SpanAttributes"[$k]::BIGINT[])) FROM otel_traces '
                'WHERE "SpanName" = $n',
                {"k": semconv.SERVER_TOKEN_OFFSETS_US, "n": semconv.SPAN_HOOK_REQUEST},
            )
        file_bytes = store_path.stat().st_size
        wal_left = Path(f"{store_path}.wal").exists()
    spans = counters.acked_batches * spans_per_batch
    requests = spans // SPANS_PER_REQUEST
    rss = [s["rss_mib"] for s in samples]
    half = [s for s in samples if s["t_s"] >= elapsed / 2]
    return {
        "minutes": round(elapsed / 60.0, 2),
        "connections": args.connections,
        "tokens_per_request": args.tokens,
        "requests_per_batch": args.requests_per_batch,
        "spans_per_batch": spans_per_batch,
        "request_bytes_mean": int(np.mean([len(b) for b in templates])),
        "batches_acked": counters.acked_batches,
        "failed_requests": counters.failures,
        "spans_acked": spans,
        "requests_acked": requests,
        "spans_per_s": round(spans / elapsed, 1),
        "requests_per_s": round(requests / elapsed, 1),
        "token_offsets_per_s": round(requests * args.tokens / elapsed, 1),
        "rss_start_mib": rss[0],
        "rss_min_mib": min(rss),
        "rss_max_mib": max(rss),
        "rss_end_mib": rss[-1],
        "rss_slope_mib_per_min": slope_mib_per_min(samples),
        "rss_slope_second_half_mib_per_min": slope_mib_per_min(half),
        "snapshots": snapshots,
        "store_file_mib": round(file_bytes / 2**20, 1),
        "bytes_per_span": round(file_bytes / stored, 1) if stored else None,
        "bytes_per_request": round(file_bytes / (stored / SPANS_PER_REQUEST), 1)
        if stored
        else None,
        "wal_left_after_stop": wal_left,
        "collector_reported_spans": stopped["spans"],
        "store_spans_after_reopen": stored,
        "token_offsets_stored": int(offsets_stored or 0),
        "all_acknowledged_spans_stored": stored == spans == stopped["spans"],
        "rss_samples": samples,
    }


def take_snapshot(store_path: Path) -> dict[str, float]:
    """Open the store read-only beside the collector (through its snapshot endpoint)."""
    t = time.monotonic()
    with SpanStore.open(store_path, read_only=True) as store:
        opened_s = time.monotonic() - t
        assert store.snapshot_taken_unix_ns is not None
        spans = store.span_count()
    return {
        "store_mib": round(store_path.stat().st_size / 2**20, 1),
        "spans": spans,
        "snapshot_and_open_s": round(opened_s, 3),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        ("minutes", f"{result['minutes']:.2f}"),
        ("spans/s", f"{result['spans_per_s']:.0f}"),
        ("requests/s", f"{result['requests_per_s']:.0f}"),
        ("token offsets/s", f"{result['token_offsets_per_s']:.0f}"),
        ("RSS start / min / max / end MiB",
         f"{result['rss_start_mib']:.0f} / {result['rss_min_mib']:.0f} / "
         f"{result['rss_max_mib']:.0f} / {result['rss_end_mib']:.0f}"),
        ("RSS slope MiB/min (all, 2nd half)",
         f"{result['rss_slope_mib_per_min']} / {result['rss_slope_second_half_mib_per_min']}"),
        ("store MiB", f"{result['store_file_mib']:.1f}"),
        ("bytes per span / per request",
         f"{result['bytes_per_span']} / {result['bytes_per_request']}"),
        ("failed requests", str(result["failed_requests"])),
        ("all acknowledged spans stored", str(result["all_acknowledged_spans_stored"])),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    if result["snapshots"]:
        print("\nsnapshot (POST /otelbench/snapshot + open) vs store size")
        print(f"{'store MiB':>10}  {'spans':>10}  {'seconds':>8}  {'load 1m':>7}")
        for s in result["snapshots"]:
            print(
                f"{s['store_mib']:>10.1f}  {s['spans']:>10}  {s['snapshot_and_open_s']:>8.3f}  "
                f"{s['load_avg_1m']:>7.2f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128, help="token offsets per request")
    parser.add_argument("--requests-per-batch", type=int, default=128)
    parser.add_argument("--distinct-batches", type=int, default=64)
    parser.add_argument("--sample-s", type=float, default=5.0, help="RSS sampling interval")
    parser.add_argument("--snapshot-every-s", type=float, default=60.0, help="0: no snapshots")
    parser.add_argument("--tmp-dir", type=Path, default=None, help="where the store is written")
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "receiver_sustained.json"
    )
    args = parser.parse_args(argv)

    result = run(args)
    print_table(result)
    report = {
        "benchmark": "receiver_sustained",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(duckdb=duckdb.__version__),
        "workload": {
            "request": "engine-hook server span (14 attributes, token offsets as an int array) "
            "+ queue, prefill and decode spans",
            "tokens_per_request": args.tokens,
            "requests_per_batch": args.requests_per_batch,
            "distinct_batches_cycled": args.distinct_batches,
            "connections": args.connections,
            "minutes": args.minutes,
        },
        "result": result,
    }
    write_result(args.out, report)
    return 0 if result["all_acknowledged_spans_stored"] else 1


if __name__ == "__main__":
    sys.exit(main())
