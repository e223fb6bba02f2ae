"""One run from its shards' run spans (otelbench.query.shards): what the joined manifest keeps,
and that the store lists a sharded run once (a real DuckDB store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otelbench.query import open_store
from otelbench.query.extract import list_runs
from otelbench.query.shards import LATE_START_MS, join_shards
from tests.unit.query.spanstore import SpanWriter

START = 1_790_000_000.0


WARMUP = {
    "mode": "cold_start",
    "skipped": True,
    "reason": "cold start measurement: warm-up skipped (draft 4.5.3)",
    "deviations": [],
}


def health(lateness_p99_ms: float) -> dict[str, Any]:
    """A shard's ``client_health`` whose loop lateness P99 is ``lateness_p99_ms``."""
    lateness = {"count": 1000, "p50": 0.01, "p99": lateness_p99_ms, "max": lateness_p99_ms}
    reads = {"count": 10, "p50": 0.001, "p99": 0.002, "max": 0.003}
    cpu = {
        "user_s": 1.0,
        "system_s": 0.5,
        "wall_s": 30.0,
        "utilization": 0.05,
        "involuntary_context_switches": 3,
        "runqueue_wait_s": None,
        "runqueue_wait_share": None,
        "host_steal_share": None,
    }
    worker = {"worker": 0, "pid": 4242, "loop_lateness_ms": lateness, "read_delay_ms": reads}
    return {
        "method": "timerfd",
        "period_ms": 1.0,
        "limit_ms": 1.0,
        "loop_lateness_ms": lateness,
        "read_delay_ms": reads,
        "workers": [{**worker, "cpu": cpu}],
    }


def shard_manifest(index: int, count: int = 4, **kw: Any) -> dict[str, Any]:
    """Shard ``index``'s manifest (a whole :class:`~otelbench.model.manifest.RunManifest`'s keys
    that the join reads); ``kw`` overrides top-level keys."""
    p99 = kw.pop("lag_p99_ms", 1.0 + index)
    lateness = kw.pop("lateness_p99_ms", 0.1 * (index + 1))
    manifest: dict[str, Any] = {
        "id": "r",
        "target": "http://10.0.0.9:8000",
        "load": {
            "mode": "poisson",
            "requests": 46,
            "rate": 40.0,
            "concurrency": None,
            "workers": {"count": 1, "chosen": "--workers"},
        },
        "warmup": WARMUP if index == 0 else None,
        "deviations": ["common"] + ([f"own {index}"] if index else []),
        "notes": ["the warm-up (draft 4.5) ran on shard 0"] if index else [],
        "requests_sent": 10 + index,
        "started_unix": START + 0.001 * index,
        "finished_unix": START + 30 + index,
        "duration_s": 30.0 + index,
        "schedule_lag": {
            "p50_ms": 0.1,
            "p99_ms": p99,
            "max_ms": p99 + 1.0,
            "generator_bottleneck": False,
        },
        "client_health": health(lateness),
        "shard": {
            "index": index,
            "count": count,
            "host": f"host-{index}",
            "start_at_unix": START,
            "start_late_ms": kw.pop("late_ms", 0.0),
        },
        "clock": {
            "method": "none measured",
            "accuracy_ms": None,
            "within_limit": None,
            "kernel": None,
            "measured": None,
        },
    }
    return {**manifest, **kw}


def test_the_joined_manifest_sums_the_sends_and_keeps_the_worst_shard() -> None:
    shards = [shard_manifest(i) for i in (3, 0, 1, 2)]
    shards[2]["schedule_lag"]["generator_bottleneck"] = True  # shard 1 fell behind
    joined = join_shards(shards)
    assert joined["requests_sent"] == 10 + 11 + 12 + 13
    assert joined["warmup"] == WARMUP  # shard 0's: the warm-up shard's
    assert (joined["started_unix"], joined["finished_unix"]) == (START, START + 33)
    assert joined["duration_s"] == 33.0
    assert joined["schedule_lag"] == {
        "p50_ms": 0.1,
        "p99_ms": 4.0,
        "max_ms": 5.0,
        "generator_bottleneck": True,
    }
    assert joined["client_health"]["loop_lateness_ms"]["p99"] == 0.4
    assert joined["shard_count"] == 4
    assert [s["index"] for s in joined["shards"]] == [0, 1, 2, 3]
    assert [s["host"] for s in joined["shards"]] == ["host-0", "host-1", "host-2", "host-3"]
    assert joined["shards"][1]["schedule_lag"]["generator_bottleneck"] is True
    assert "shard" not in joined
    assert "clock" not in joined
    assert joined["deviations"] == ["common", "shard 1: own 1", "shard 2: own 2", "shard 3: own 3"]
    assert joined["notes"] == ["shards 1, 2, 3: the warm-up (draft 4.5) ran on shard 0"]


def test_a_missing_or_late_shard_is_named() -> None:
    joined = join_shards(
        [shard_manifest(1), shard_manifest(2, late_ms=LATE_START_MS + 4.2), shard_manifest(3)]
    )
    assert joined["warmup"] is None  # the warm-up shard is missing: the lowest shard's manifest
    assert [s["index"] for s in joined["shards"]] == [1, 2, 3]
    missing = [d for d in joined["deviations"] if d.startswith("shard 0 of 4: no run span")]
    assert len(missing) == 1
    assert "started 5.2 ms after the agreed start" in " ".join(joined["deviations"])
    assert not any("shard 1 of 4 started" in d for d in joined["deviations"])


def test_the_store_lists_a_sharded_run_once_beside_an_unsharded_one(tmp_path: Path) -> None:
    path = tmp_path / "spans.duckdb"
    writer = SpanWriter(path)
    try:
        writer.run_span("solo", {"id": "solo", "requests_sent": 5}, 1_000, 10)
        for i, (start, duration) in enumerate([(5_000, 100), (5_010, 200), (4_990, 50)]):
            writer.run_span("many", shard_manifest(i, count=3), start, duration, shard=i)
    finally:
        writer.close()
    with open_store(path) as runner:
        runs = list_runs(runner)
    assert [r.run_id for r in runs] == ["solo", "many"]
    many = runs[1]
    assert (many.span_start_unix_ns, many.span_duration_ns) == (4_990, 5_210 - 4_990)
    assert many.manifest["requests_sent"] == 10 + 11 + 12
    assert many.manifest["shard_count"] == 3
    assert runs[0].manifest == {"id": "solo", "requests_sent": 5}
