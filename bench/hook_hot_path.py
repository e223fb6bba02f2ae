"""What the vLLM engine hooks cost vLLM's API server process, and on the wire, measured in-process.

No vLLM here: the hooks' wrappers (``otelbench_vllm._vllm_internals``, the exact functions that
replace ``IterationStats.update_from_*``) are built around no-op originals and called with plain
objects shaped like vLLM 0.32's, exactly as ``OutputProcessor.process_outputs`` calls them. The
baseline calls the same no-op originals without the wrappers, in the same run, alternating; the
difference is what the hooks add to the API server process (this benchmark's process stands in
for it).

- **Per token**: ``--requests`` requests decoded step by step (one token per request per step,
  all requests in every step, as vLLM batches them), ``--tokens`` steps. Cost per token =
  (wrapped − baseline) / (requests × tokens) of the engine thread's time; it includes each
  request's first call, which creates its state.
- **Per request, both export modes side by side**: ``--cpu-requests`` requests of
  ``--cpu-tokens`` tokens each, decoded, given their engine events (QUEUED + SCHEDULED) and
  finished, then exported to a real collector (otelbench's, ``python -m otelbench.collector``, a
  process of its own) with the hooks' real providers (``otelbench_vllm.export``: OTLP/HTTP, the
  SDK's default ``OTEL_BSP_*`` settings), and the metrics recorded (a ``MeterProvider`` with an
  in-memory reader, never collected during the timing). Modes: ``baseline`` (no hooks),
  ``inprocess`` (``OTELBENCH_VLLM_EXPORT=inprocess``: spans built, encoded and sent in this
  process) and ``process`` (the default: records handed to the hooks' exporter process). The
  measure is this process's CPU time, all threads (``time.process_time_ns``, i.e.
  ``CLOCK_PROCESS_CPUTIME_ID``), from the first token to the export's end (in-process: the batch
  processor flushed; process: every record written to the exporter process and its spans
  reported exported), per request, minus the baseline's: robust on a busy machine, since another
  process's load does not add to it. Also reported: the engine thread's wall time per finish
  (``update_from_finished_request``), and the exporter process's own CPU per request
  (``/proc/PID/task/*/sched``), which moved off the API server but still runs on the host.
- **Bytes per output token on the wire**: the OTLP protobuf (``ExportTraceServiceRequest``, as
  the OTLP/HTTP exporter sends it, uncompressed: its default) of one finished server span with N
  tokens, minus the same message with the ``otelbench.server.token_offsets_us`` attribute
  emptied, divided by N; for N in 64 / 256 / 1024 and several inter-token patterns (TTFT 100 ms
  before the first token). The gzip column is the same difference with gzip (level 6) applied
  to each message.

Every timing is the median of ``--repeats`` alternating runs (garbage collector on, as in the
engine). Targets: ≤ 1 µs per token, ≤ 8 bytes per token (aim: 4); per request, the API server's
added CPU ≲ 1 % of its own per-request CPU (about 0.1 ms at 64 tokens on a GPU host), for
throughput with the hooks ≥ 0.99 of without where that process is the bottleneck.

Usage: ``.venv/bin/python bench/hook_hot_path.py [--requests 64] [--tokens 256] [--repeats 7]
[--cpu-requests 256] [--cpu-tokens 64] [--out bench/results/hook_hot_path.json]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "engine_hooks"))
sys.path.insert(0, str(ROOT))

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from otelbench_vllm import _vllm_internals, names  # noqa: E402
from otelbench_vllm.hook import RequestHook  # noqa: E402
from otelbench_vllm.offload import ExporterProcess  # noqa: E402

from otelbench.benchmark import EmbeddedCollector  # noqa: E402

TARGET_US_PER_TOKEN = 1.0
TARGET_BYTES_PER_TOKEN = 8.0
OFFSET_NS = 1_700_000_000_000_000_000  # wall clock = monotonic + 1.7e9 s
MONO0 = 1000.0
PROMPT_TOKENS = 32


class DropExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def noop(*_args: Any) -> None:
    return None


def request_stats(arrival_mono: float) -> SimpleNamespace:
    """A ``RequestStateStats`` look-alike (``arrival_time`` wall clock, ``*_ts`` monotonic)."""
    return SimpleNamespace(
        arrival_time=arrival_mono + OFFSET_NS / 1e9,
        queued_ts=arrival_mono + 0.001,
        scheduled_ts=arrival_mono + 0.002,
        first_token_ts=0.0,
        last_token_ts=0.0,
        first_token_latency=0.0,
    )


def make_hook(processor: Any) -> tuple[RequestHook, TracerProvider, MeterProvider]:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    meters = MeterProvider(
        metric_readers=[InMemoryMetricReader()], exemplar_filter=AlwaysOffExemplarFilter()
    )  # as otelbench_vllm.export configures it
    hook = RequestHook(tracer_provider=provider, offset_ns=OFFSET_NS, meter_provider=meters)
    return hook, provider, meters


# ----------------------------------------------------------------------------------------------
# Hot path: update_from_output per token; update_from_events + finish per request
# ----------------------------------------------------------------------------------------------
def decode_run(
    update_from_output: Callable[..., Any], n_requests: int, n_tokens: int
) -> tuple[int, list[SimpleNamespace]]:
    """ns to decode ``n_requests`` × ``n_tokens`` (one token per request per step)."""
    iteration = SimpleNamespace(iteration_timestamp=0.0)
    outputs = [
        SimpleNamespace(request_id=f"cmpl-{i}-0-abcd", new_token_ids=[7], trace_headers=None)
        for i in range(n_requests)
    ]
    stats = [request_stats(MONO0) for _ in range(n_requests)]
    pairs = list(zip(outputs, stats, strict=True))
    ts = MONO0 + 0.1
    t0 = time.perf_counter_ns()
    for _ in range(n_tokens):
        for out, st in pairs:
            update_from_output(iteration, out, ts, False, st, None, None)
        ts += 0.02
    elapsed = time.perf_counter_ns() - t0
    for st in stats:
        st.first_token_ts, st.last_token_ts = MONO0 + 0.1, ts - 0.02
        st.first_token_latency = 0.1
    return elapsed, stats


def finish_run(
    update_from_events: Callable[..., Any],
    update_from_finished: Callable[..., Any],
    stats: list[SimpleNamespace],
) -> int:
    """ns for each request's events (QUEUED, SCHEDULED) and its finish."""
    iteration = SimpleNamespace(iteration_timestamp=stats[0].last_token_ts + OFFSET_NS / 1e9)
    events = [
        SimpleNamespace(type=1, timestamp=MONO0 + 0.001),
        SimpleNamespace(type=2, timestamp=MONO0 + 0.002),
    ]
    t0 = time.perf_counter_ns()
    for i, st in enumerate(stats):
        update_from_events(iteration, f"cmpl-{i}-0-abcd", events, True, st, None, None)
        update_from_finished(iteration, "length", f"cmpl-{i}", PROMPT_TOKENS, None, st, 0)
    return time.perf_counter_ns() - t0


def hot_path(n_requests: int, n_tokens: int, repeats: int) -> dict[str, Any]:
    """The engine thread's time per output token, hooks against baseline."""
    processor = BatchSpanProcessor(DropExporter(), max_queue_size=1 << 16)
    hook, provider, meters = make_hook(processor)
    wrapped = _vllm_internals._wrappers(NOOPS, hook)  # the very functions install() installs
    decode_run(wrapped["update_from_output"], 4, 8)  # warm-up
    base_tok, hook_tok = [], []
    for _ in range(repeats):
        ns, _st = decode_run(noop, n_requests, n_tokens)
        base_tok.append(ns / (n_requests * n_tokens))
        ns, _st = decode_run(wrapped["update_from_output"], n_requests, n_tokens)
        hook_tok.append(ns / (n_requests * n_tokens))
    if hook.stats.hook_errors:
        raise SystemExit(f"the hook counted {hook.stats.hook_errors} errors")
    provider.shutdown()
    meters.shutdown()
    us = statistics.median
    per_token = (us(hook_tok) - us(base_tok)) / 1e3
    return {
        "requests": n_requests,
        "tokens_per_request": n_tokens,
        "repeats": repeats,
        "per_token_us": {
            "baseline": us(base_tok) / 1e3,
            "hooks": us(hook_tok) / 1e3,
            "added": per_token,
        },
        "target_us_per_token": TARGET_US_PER_TOKEN,
        "meets_target": per_token <= TARGET_US_PER_TOKEN,
    }


NOOPS: dict[str, Callable[..., Any]] = {
    "update_from_output": noop,
    "update_from_events": noop,
    "update_from_finished_request": noop,
}
CPU_MODES = ("baseline", "inprocess", "process")


def proc_cpu_ns(pid: int | None) -> int:
    """CPU time of process ``pid`` so far, ns: the sum over its live threads of
    ``se.sum_exec_runtime`` in ``/proc/PID/task/TID/sched`` (ms with µs resolution, unlike
    ``stat``'s 10 ms clock ticks; the exporter process's threads live as long as it does).
    0 when there is none."""
    if pid is None:
        return 0
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "sched").read_text().splitlines():
                if line.startswith("se.sum_exec_runtime"):
                    total += float(line.rsplit(":", 1)[1])
        except (OSError, ValueError):
            continue  # the thread ended while we looked
    return round(total * 1e6)


class Mode:
    """One way of running the requests: its wrappers, and how to wait for its export."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.hook: RequestHook | None = None
        self.functions = NOOPS
        if name != "baseline":
            meters = MeterProvider(
                metric_readers=[InMemoryMetricReader()], exemplar_filter=AlwaysOffExemplarFilter()
            )
            self.hook = RequestHook(offset_ns=OFFSET_NS, meter_provider=meters, export=name)
            self.functions = _vllm_internals._wrappers(NOOPS, self.hook)

    @property
    def exporter(self) -> ExporterProcess | None:
        sink = self.hook.sink if self.hook is not None else None
        return sink if isinstance(sink, ExporterProcess) else None

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until every span ended so far is exported (the export's CPU is in the run)."""
        hook = self.hook
        if hook is None:
            return
        if self.name == "inprocess":
            hook.close()  # flushes the batch span processor
        deadline = time.monotonic() + timeout
        stats = hook.stats
        while stats.requests_traced * 4 > stats.spans_exported + stats.spans_export_failed:
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"{self.name}: spans not exported in {timeout} s: {stats.as_dict()}"
                )
            time.sleep(0.02)

    def run(self, n_requests: int, n_tokens: int) -> tuple[int, int, int]:
        """(this process's CPU ns, engine-thread finish ns, exporter process CPU ns)."""
        f = self.functions
        child = self.exporter.pid if self.exporter is not None else None
        child0, cpu0 = proc_cpu_ns(child), time.process_time_ns()
        _, stats = decode_run(f["update_from_output"], n_requests, n_tokens)
        finish = finish_run(f["update_from_events"], f["update_from_finished_request"], stats)
        self.settle()
        cpu = time.process_time_ns() - cpu0
        return cpu, finish, proc_cpu_ns(child) - child0


def api_server_cpu(n_requests: int, n_tokens: int, repeats: int) -> dict[str, Any]:
    """Per finished request: this process's CPU (all threads) in each mode (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        collector = EmbeddedCollector(Path(tmp) / "spans.duckdb")
        endpoint = collector.start()
        os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = endpoint + "/v1/traces"
        for key in [k for k in os.environ if k.startswith("OTEL_BSP_")] + [names.ENV_SPOOL_DIR]:
            os.environ.pop(key, None)  # the SDK's defaults, as users run it
        try:
            modes = [Mode(name) for name in CPU_MODES]
            for mode in modes:  # warm-up: providers, the exporter process, its imports
                mode.run(16, 8)
            samples: dict[str, list[tuple[int, int, int]]] = {m.name: [] for m in modes}
            for r in range(repeats):
                for k in range(len(modes)):  # rotate the order each repeat
                    mode = modes[(r + k) % len(modes)]
                    samples[mode.name].append(mode.run(n_requests, n_tokens))
            for mode in modes:
                if mode.hook is not None:
                    if mode.hook.stats.hook_errors:
                        raise SystemExit(f"{mode.name}: {mode.hook.stats.hook_errors} hook errors")
                    mode.hook.close()
            hook_stats = {m.name: m.hook.stats.as_dict() for m in modes if m.hook is not None}
        finally:
            spans = collector.stop()
    med = statistics.median
    out: dict[str, Any] = {"requests": n_requests, "tokens_per_request": n_tokens}
    base = med(c for c, _, _ in samples["baseline"]) / n_requests / 1e3
    for name, runs in samples.items():
        cpu_us = med(c for c, _, _ in runs) / n_requests / 1e3
        out[name] = {
            "cpu_us_per_request": cpu_us,
            "added_cpu_us_per_request": cpu_us - base,
            "engine_thread_finish_us": med(f for _, f, _ in runs) / n_requests / 1e3,
            "exporter_process_cpu_us_per_request": med(x for _, _, x in runs) / n_requests / 1e3,
            "runs_cpu_us_per_request": [c / n_requests / 1e3 for c, _, _ in runs],
        }
    out["hook_stats"] = hook_stats
    out["collector"] = spans
    return out


# ----------------------------------------------------------------------------------------------
# Bytes per output token on the wire
# ----------------------------------------------------------------------------------------------
def itl_patterns(rng: random.Random) -> dict[str, Callable[[int], list[float]]]:
    """Name -> (N -> the N tokens' step timestamps, monotonic seconds)."""

    def steps(gaps: Callable[[int], float], per_step: int = 1) -> Callable[[int], list[float]]:
        def make(n: int) -> list[float]:
            out: list[float] = []
            t = MONO0 + 0.1  # TTFT 100 ms
            while len(out) < n:
                out.extend([t] * min(per_step, n - len(out)))
                t += gaps(len(out))
            return out

        return make

    return {
        "constant 5 ms": steps(lambda _i: 0.005),
        "constant 30 ms": steps(lambda _i: 0.030),
        "jittered 20 ms (lognormal)": steps(lambda _i: rng.lognormvariate(-3.9, 0.5)),
        "30 ms + 2 s stall every 100": steps(lambda i: 2.0 if i % 100 == 0 else 0.030),
        "3 tokens per step, 25 ms": steps(lambda _i: 0.025, per_step=3),
    }


def server_span(token_ts: list[float]) -> ReadableSpan:
    exporter = InMemorySpanExporter()
    hook, provider, meters = make_hook(SimpleSpanProcessor(exporter))
    stats = request_stats(MONO0)
    out = SimpleNamespace(
        request_id="cmpl-8f3a2c1e9b7d4e6f-0-abcd1234",
        new_token_ids=[7],
        trace_headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    )
    for ts in token_ts:
        hook.on_output(out, ts, stats)
    if token_ts:
        stats.first_token_ts, stats.last_token_ts = token_ts[0], token_ts[-1]
        stats.first_token_latency = token_ts[0] - MONO0
    end = (token_ts[-1] if token_ts else MONO0 + 0.1) + OFFSET_NS / 1e9 + 0.0003
    hook.on_finished(end, "length", "cmpl-8f3a2c1e9b7d4e6f", PROMPT_TOKENS, stats, 0)
    provider.shutdown()
    meters.shutdown()
    [span] = [s for s in exporter.get_finished_spans() if s.name == names.SPAN_HOOK_REQUEST]
    return span


def wire_sizes(span: ReadableSpan) -> tuple[int, int, int, int]:
    """(bytes, bytes without the offsets' values, and the same two gzipped) of the span's
    ``ExportTraceServiceRequest``."""
    message = encode_spans([span])
    full = message.SerializeToString()
    [proto_span] = message.resource_spans[0].scope_spans[0].spans
    [kv] = [a for a in proto_span.attributes if a.key == names.SERVER_TOKEN_OFFSETS_US]
    del kv.value.array_value.values[:]
    empty = message.SerializeToString()
    return len(full), len(empty), len(gzip.compress(full, 6)), len(gzip.compress(empty, 6))


def bytes_per_token(lengths: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for name, make in itl_patterns(random.Random(42)).items():
        for n in lengths:
            token_ts = make(n)
            full, empty, full_gz, empty_gz = wire_sizes(server_span(token_ts))
            offsets_max = round((token_ts[-1] - MONO0) * 1e6)
            rows.append(
                {
                    "pattern": name,
                    "tokens": n,
                    "span_bytes": full,
                    "span_bytes_without_offsets": empty,
                    "bytes_per_token": (full - empty) / n,
                    "gzip_bytes_per_token": (full_gz - empty_gz) / n,
                    "last_offset_us": offsets_max,
                }
            )
    return rows


# ----------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cpu-requests", type=int, default=256)
    parser.add_argument("--cpu-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/hook_hot_path.json")
    args = parser.parse_args()

    hot = hot_path(args.requests, args.tokens, args.repeats)
    cpu = api_server_cpu(args.cpu_requests, args.cpu_tokens, args.repeats)
    wire = bytes_per_token((64, 256, 1024))
    worst = max(r["bytes_per_token"] for r in wire)

    pt = hot["per_token_us"]
    print(
        f"engine thread per token ({hot['requests']} requests × {hot['tokens_per_request']} "
        f"tokens, median of {hot['repeats']} alternating runs)"
    )
    print(f"{'':24} {'baseline':>10} {'hooks':>10} {'added':>10}")
    print(f"{'per token (µs)':24} {pt['baseline']:10.3f} {pt['hooks']:10.3f} {pt['added']:10.3f}")
    print(f"target ≤ {TARGET_US_PER_TOKEN} µs/token: {'met' if hot['meets_target'] else 'MISSED'}")
    print()
    print(
        f"API server process CPU per finished request, all threads ({cpu['requests']} requests "
        f"× {cpu['tokens_per_request']} tokens, exported to a collector process, median of "
        f"{args.repeats} rotating runs)"
    )
    print(f"{'mode':10} {'CPU µs':>9} {'added µs':>9} {'finish µs':>10} {'exporter proc. µs':>18}")
    for name in CPU_MODES:
        m = cpu[name]
        print(
            f"{name:10} {m['cpu_us_per_request']:9.1f} {m['added_cpu_us_per_request']:9.1f} "
            f"{m['engine_thread_finish_us']:10.1f} {m['exporter_process_cpu_us_per_request']:18.1f}"
        )
    print("(finish: the engine thread's wall time in update_from_finished_request)")
    print()
    print("server span on the wire (OTLP protobuf, uncompressed), bytes per output token")
    print(f"{'ITL pattern':30} {'N':>5} {'span B':>8} {'B/token':>8} {'gzip B/token':>13}")
    for r in wire:
        print(
            f"{r['pattern']:30} {r['tokens']:5d} {r['span_bytes']:8d} "
            f"{r['bytes_per_token']:8.2f} {r['gzip_bytes_per_token']:13.2f}"
        )
    print(
        f"target ≤ {TARGET_BYTES_PER_TOKEN} B/token: "
        f"{'met' if worst <= TARGET_BYTES_PER_TOKEN else 'MISSED'} (worst {worst:.2f})"
    )

    result = {
        "benchmark": "hook_hot_path",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "loadavg_1m": os.getloadavg()[0],
        },
        "hot_path": hot,
        "api_server_cpu": cpu,
        "wire": {
            "rows": wire,
            "worst_bytes_per_token": worst,
            "target_bytes_per_token": TARGET_BYTES_PER_TOKEN,
            "meets_target": worst <= TARGET_BYTES_PER_TOKEN,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
