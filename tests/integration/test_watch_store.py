"""Retention of the embedded store under continuous operation, and the bytes a request costs.

A week of traffic is simulated in compressed time: each round is one "hour" of requests
written as the engine hooks write them (a server span with 100 per-token offsets and its three
phase child spans), then the watcher's retention runs with the clock at that hour. The file must
stop growing once the retention period is full.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from otelbench import semconv
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.live.window import WindowConfig
from otelbench.store import SpanStore
from otelbench.store.rows import SpanRow

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
HOUR = 3600 * 10**9
OUTPUT_TOKENS = 100


def request_rows(rng: random.Random, hour: int, i: int) -> list[SpanRow]:
    """One request as the engine hooks export it (attribute set of engine_hooks/hook.py)."""
    start = T0 + hour * HOUR + i * 10_000_000
    ttft_us = rng.randint(20_000, 200_000)
    offsets = [ttft_us]
    for _ in range(OUTPUT_TOKENS - 1):
        offsets.append(offsets[-1] + rng.randint(15_000, 40_000))
    trace_id = f"{rng.getrandbits(128):032x}"
    span_id = f"{rng.getrandbits(64):016x}"
    e2e = offsets[-1] / 1e6 + 0.001
    attrs = {
        semconv.VLLM_REQUEST_ID: f"cmpl-{rng.getrandbits(64):016x}-0",
        semconv.VLLM_RESPONSE_FINISH_REASON: "length",
        semconv.VLLM_USAGE_PROMPT_TOKENS: str(rng.randint(50, 500)),
        semconv.VLLM_USAGE_COMPLETION_TOKENS: str(OUTPUT_TOKENS),
        semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: "0",
        semconv.VLLM_LATENCY_E2E: repr(e2e),
        semconv.SERVER_TOKEN_OFFSETS_US: json.dumps(offsets, separators=(",", ":")),
        semconv.SERVER_PREEMPTIONS: "0",
        semconv.SERVER_MONO_TO_UNIX_OFFSET_NS: "1763900000123456789",
        semconv.SERVER_ENGINE_REQUEST_ID: f"cmpl-{rng.getrandbits(64):016x}-0-abcd1234",
        semconv.VLLM_LATENCY_TTFT: repr(ttft_us / 1e6),
        semconv.VLLM_LATENCY_QUEUE: repr(rng.random() / 100),
        semconv.VLLM_LATENCY_PREFILL: repr(rng.random() / 10),
        semconv.VLLM_LATENCY_DECODE: repr((offsets[-1] - offsets[0]) / 1e6),
        semconv.VLLM_LATENCY_INFERENCE: repr(e2e - 0.01),
    }
    resource = {"service.name": semconv.SERVICE_VLLM, "telemetry.sdk.language": "python"}

    def row(name: str, sid: str, parent: str, kind: str, a: dict[str, str], d: int) -> SpanRow:
        return SpanRow(
            start, trace_id, sid, parent, "", name, kind, semconv.SERVICE_VLLM, resource,
            semconv.INSTRUMENTATION_SCOPE_HOOKS, "0.1.0", a, d, semconv.STATUS_UNSET, "",
            [], [], [], [], [], [], [],
        )  # fmt: skip

    rows = [row(semconv.SPAN_HOOK_REQUEST, span_id, "", semconv.SPAN_KIND_SERVER, attrs, 10**9)]
    for name in (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE):
        child = f"{rng.getrandbits(64):016x}"
        rows.append(row(name, child, span_id, semconv.SPAN_KIND_INTERNAL, {}, 10**8))
    return rows


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}.wal")) if p.exists())


def test_retention_keeps_a_week_of_continuous_operation_bounded(tmp_path: Path) -> None:
    """7 days × 24 "hours" would be 168 rounds; the file's size must settle once 6 hours are
    kept, so 36 rounds show it (each round: 200 requests, 800 spans)."""
    rng = random.Random(7)
    path = tmp_path / "live.duckdb"
    sizes: list[int] = []
    counts: list[int] = []
    deleted_total = 0
    with SpanStore.open(path) as store:
        config = WatchConfig(window=WindowConfig(window_s=300.0), retention_s=6 * 3600.0)
        watcher = Watcher(store, config)
        for hour in range(36):
            rows = [r for i in range(200) for r in request_rows(rng, hour, i)]
            store.insert_spans(rows)
            deleted_total += watcher.apply_retention(now_unix_ns=T0 + (hour + 1) * HOUR)
            sizes.append(size(path))
            counts.append(store.span_count())
    assert counts[-1] == 6 * 800  # the last 6 hours
    assert deleted_total == 30 * 800
    steady = max(sizes[8:16])
    assert max(sizes[16:]) <= steady * 1.1, sizes  # no growth after the retention filled up
    assert sizes[-1] < 0.5 * 36 * (sizes[0]), sizes  # far below keeping everything


def test_bytes_stored_per_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On-disk bytes per request (server span with 100 token offsets + 3 child spans) after a
    checkpoint: the number the retention period is sized by."""
    rng = random.Random(11)
    path = tmp_path / "bytes.duckdb"
    with SpanStore.open(path) as store:
        store.execute("CHECKPOINT")
        empty = size(path)
        n = 5000
        for start in range(0, n, 500):
            store.insert_spans(
                [r for i in range(start, start + 500) for r in request_rows(rng, 0, i)]
            )
        store.execute("CHECKPOINT")
        per_request = (size(path) - empty) / n
    with capsys.disabled():
        what = f"4 spans, {OUTPUT_TOKENS} output tokens"
        print(f"\nbytes stored per request ({what}): {per_request:.0f}")
    assert 100 < per_request < 2000
