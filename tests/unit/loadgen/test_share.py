"""How a run's measured load is split over worker processes (otelbench.loadgen.share), and how
a worker measures its own event loop's lateness and CPU (otelbench.loadgen.health)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import draft
from otelbench.loadgen.health import PERIOD_NS, LoopMonitor, client_health
from otelbench.loadgen.share import split_load
from otelbench.loadgen.workers import CHUNKS_PER_WORKER_S, STREAMS_PER_WORKER, default_workers
from otelbench.loadgen.workloads import WorkloadRequest


def items(n: int, max_tokens: int = 64) -> list[WorkloadRequest]:
    return [WorkloadRequest(i, [i], max_tokens, 0.0) for i in range(n)]


@settings(deadline=None, max_examples=60)
@given(n=st.integers(1, 200), workers=st.integers(1, 8))
def test_open_loop_keeps_every_request_and_send_time_whatever_the_workers(
    n: int, workers: int
) -> None:
    reqs = items(n)
    offsets = [i * 0.013 for i in range(n)]
    shares = split_load(reqs, [r.prompt_token_ids for r in reqs], offsets, None, workers)
    assert [s.worker for s in shares] == list(range(workers))
    sent = {
        item.index: (offset, prompt)
        for s in shares
        for item, offset, prompt in zip(s.items, s.offsets_s or [], s.prompts, strict=True)
    }
    assert sent == {i: (offsets[i], [i]) for i in range(n)}
    for s in shares:
        assert [item.index % workers for item in s.items] == [s.worker] * len(s)
        assert s.offsets_s == sorted(s.offsets_s or [])
        assert s.concurrency is None


@settings(deadline=None, max_examples=60)
@given(n=st.integers(1, 300), concurrency=st.integers(1, 64), workers=st.integers(1, 8))
def test_closed_loop_splits_the_streams_and_the_requests_in_proportion(
    n: int, concurrency: int, workers: int
) -> None:
    workers = min(workers, concurrency)
    reqs = items(n)
    shares = split_load(reqs, [r.prompt_token_ids for r in reqs], None, concurrency, workers)
    assert sum(s.concurrency or 0 for s in shares) == concurrency
    assert sorted(i.index for s in shares for i in s.items) == list(range(n))
    for s in shares:
        assert s.offsets_s is None
        # stream k belongs to worker k mod N, request i to the worker of stream i mod C
        assert s.concurrency == len(range(s.worker, concurrency, workers))
        assert all((i.index % concurrency) % workers == s.worker for i in s.items)


def test_default_workers_follow_the_load_up_to_the_cores() -> None:
    count, why = default_workers(1, items(10), None)
    assert count == 1
    assert why.startswith("default: 1 closed-loop streams")
    wanted = 3 * STREAMS_PER_WORKER
    count, why = default_workers(wanted, items(10), None)
    spare = max(1, len(os.sched_getaffinity(0)) - 1)
    assert count == min(3, spare)
    assert f"at most {spare} (one core of" in why
    # open loop: 10 requests of 64 tokens over 0.1 s = 6,400 chunks/s offered
    count, why = default_workers(None, items(11), [i * 0.01 for i in range(11)])
    assert f"{CHUNKS_PER_WORKER_S:,.0f} per worker" in why
    assert count == min(2, spare)


async def _blocked_loop(block_s: float) -> LoopMonitor:
    monitor = LoopMonitor(worker=3)
    monitor.start()
    await asyncio.sleep(0.05)
    time.sleep(block_s)  # noqa: ASYNC251 - the loop cannot serve its timer meanwhile
    await asyncio.sleep(0.05)
    monitor.stop()
    return monitor


def test_a_blocked_loop_counts_every_deadline_it_missed() -> None:
    monitor = asyncio.run(_blocked_loop(0.04))
    health = monitor.health
    assert health.worker == 3
    # 40 ms blocked at a 2 ms period: about 20 deadlines passed during the block, each a sample
    # with its own lateness (40, 38, … ms), not one sample of 40 ms
    late = health.lateness.count_at_least(10_000_000)
    assert late >= (40_000_000 - 10_000_000) // PERIOD_NS - 1
    assert health.lateness.max_ns >= 40_000_000 - PERIOD_NS
    assert health.wall_s >= 0.14
    # time.sleep blocks the loop without using the CPU: less CPU than wall time
    assert 0 <= health.user_s + health.system_s < health.wall_s


def test_client_health_pools_the_workers_ticks() -> None:
    a = asyncio.run(_blocked_loop(0.0)).health
    b = asyncio.run(_blocked_loop(0.03)).health
    summary = client_health([b, a])
    assert summary["limit_ms"] == draft.TIMING_RESOLUTION_MS
    assert summary["period_ms"] == PERIOD_NS / 1e6
    assert [w["worker"] for w in summary["workers"]] == [3, 3]
    assert summary["loop_lateness_ms"]["count"] == a.lateness.count + b.lateness.count > 0
    assert summary["loop_lateness_ms"]["max"] == pytest.approx(
        max(a.lateness.max_ns, b.lateness.max_ns) / 1e6, abs=1e-4
    )
    assert summary["read_delay_ms"] == {"count": 0, "p50": None, "p99": None, "max": None}
    cpu = summary["workers"][0]["cpu"]
    assert set(cpu) == {
        "user_s",
        "system_s",
        "wall_s",
        "utilization",
        "involuntary_context_switches",
        "runqueue_wait_s",
        "runqueue_wait_share",
        "host_steal_share",
    }


async def _collecting_loop(objects: int) -> LoopMonitor:
    """A loop whose process runs a full collection over ``objects`` cyclic objects alive."""
    monitor = LoopMonitor(worker=0)
    monitor.start()
    alive = [[] for _ in range(objects)]
    for item in alive:
        item.append(item)  # a cycle each: tracked, and traversed by every full collection
    await asyncio.sleep(0.01)
    gc.collect()
    await asyncio.sleep(0.01)
    monitor.stop()
    del alive
    return monitor


def test_the_monitor_counts_its_processs_garbage_collections_and_their_pauses() -> None:
    """Real collections, from ``gc.callbacks``: one forced full collection over a million live
    objects pauses the process for milliseconds, which the health names; after ``stop`` no
    collection is counted."""
    health = asyncio.run(_collecting_loop(1_000_000)).health
    assert health.gc is not None
    counted = health.gc.summary()
    assert counted["collections"] >= 1
    assert counted["full"] >= 1
    assert counted["max_ms"] > 0
    assert counted["total_ms"] >= counted["max_ms"]
    assert counted["over_limit"] <= counted["collections"]
    gc.collect()
    assert health.gc.summary() == counted  # unwatched at stop
    summary = client_health([health, asyncio.run(_collecting_loop(10)).health])
    assert summary["gc_pauses"]["collections"] == sum(
        w["gc_pauses"]["collections"] for w in summary["workers"]
    )
    assert summary["gc_pauses"]["max_ms"] >= counted["max_ms"]


HEAP_PROBE = """
import ctypes, sys
from otelbench.loadgen.share import steady_heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
steady = sys.argv[1] == "steady" and steady_heap()
big = bytearray(4 << 20)  # a mapped 4 MiB buffer, freed: glibc raises its threshold to it
del big
before = libc.mallinfo2().hblkhd
kept = [bytearray(200_000) for _ in range(64)]  # large buffers: mapped, or a heap grown?
print(steady, libc.mallinfo2().hblkhd - before)
"""


@pytest.mark.parametrize("mode", ["steady", "default"])
def test_steady_heap_maps_large_buffers_for_the_whole_run(mode: str) -> None:
    """glibc raises its mmap threshold to every mapped buffer freed, so later large buffers come
    from the heap and fragment it over a long run; ``steady_heap`` fixes the threshold."""
    proc = subprocess.run(
        [sys.executable, "-c", HEAP_PROBE, mode],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    steady, mapped = proc.stdout.split()
    if mode == "steady":
        assert steady == "True"
        assert int(mapped) >= 48 * 200_000  # their own mappings, once the heap's slack is used
    else:
        assert int(mapped) == 0  # glibc's own threshold, raised: all from the heap
