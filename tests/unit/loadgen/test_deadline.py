"""The open-loop scheduler's wake-up (otelbench.loadgen.deadline): never early, never spinning."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

import pytest

from otelbench.loadgen import deadline
from otelbench.loadgen.deadline import DeadlineTimer


async def _wake_times(timer: DeadlineTimer, gaps_ns: list[int]) -> list[tuple[int, int]]:
    """(deadline, perf_counter_ns() on return) for deadlines ``gaps_ns`` apart."""
    out = []
    t = time.perf_counter_ns()
    for gap in gaps_ns:
        t += gap
        await timer.sleep_until(t)
        out.append((t, time.perf_counter_ns()))
    return out


def test_a_timerfd_is_used_where_there_is_one() -> None:
    """otelbench runs on Linux (its timing reads /proc and SO_TIMESTAMPNS); elsewhere, the spin."""

    async def main() -> bool:
        timer = DeadlineTimer()
        try:
            return timer.precise
        finally:
            timer.close()

    assert asyncio.run(main()) is sys.platform.startswith("linux")


@pytest.mark.parametrize("precise", [True, False], ids=["timerfd", "spin"])
def test_never_wakes_before_the_deadline(precise: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not precise:
        monkeypatch.setattr(deadline, "_libc", lambda: None)

    async def main() -> list[tuple[int, int]]:
        timer = DeadlineTimer()
        assert timer.precise is (precise and sys.platform.startswith("linux"))
        try:
            # sub-millisecond gaps too: the ones epoll's millisecond timeout cannot express
            return await _wake_times(timer, [300_000, 1_700_000, 50_000, 2_500_000, 0, 900_000])
        finally:
            timer.close()

    for wanted, woke in asyncio.run(main()):
        assert woke >= wanted


def test_a_past_deadline_returns_at_once() -> None:
    async def main() -> None:
        timer = DeadlineTimer()
        try:
            await asyncio.wait_for(timer.sleep_until(time.perf_counter_ns() - 10**9), 1.0)
        finally:
            timer.close()

    asyncio.run(main())


def test_waiting_costs_no_more_cpu_than_the_event_loop_sleeping() -> None:
    """Waiting in 2 ms steps costs about what ``asyncio.sleep`` costs for the same steps (one
    wake-up each), measured in turns so that both see the same load: no busy-spinning. The spin
    fallback burns the last 1 ms of each step, several times a sleeping wake-up's CPU."""

    async def sleep_until(deadline_ns: int) -> None:
        await asyncio.sleep(max(0, deadline_ns - time.perf_counter_ns()) / 1e9)

    async def cpu(wait: Callable[[int], Awaitable[None]]) -> float:
        t, cpu0 = time.perf_counter_ns(), time.process_time()
        for _ in range(50):
            t += 2_000_000
            await wait(t)
        return time.process_time() - cpu0

    async def main() -> tuple[float, float]:
        timer = DeadlineTimer()
        try:
            timed = slept = 0.0
            for _ in range(4):
                timed += await cpu(timer.sleep_until)
                slept += await cpu(sleep_until)
            return timed, slept
        finally:
            timer.close()

    timed, slept = asyncio.run(main())
    assert timed < 2 * slept, (timed, slept)


def test_other_tasks_run_while_waiting_and_a_cancelled_wait_leaves_it_usable() -> None:
    async def main() -> tuple[int, list[tuple[int, int]]]:
        timer = DeadlineTimer()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        side = asyncio.create_task(ticker())
        try:
            waiting = asyncio.create_task(timer.sleep_until(time.perf_counter_ns() + 10**9))
            await asyncio.sleep(0.02)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            woke = await _wake_times(timer, [5_000_000, 5_000_000])
            return ticks, woke
        finally:
            side.cancel()
            timer.close()

    ticks, woke = asyncio.run(main())
    assert ticks >= 5
    assert all(w >= d for d, w in woke)
