"""Waking the event loop at a send time to the microsecond, without spinning.

The open-loop scheduler (draft 4.2.3, 4.2.5) must start each request at its precomputed send time;
the draft's timing resolution is 1 ms or better (4.2.1). asyncio cannot do that by sleeping: its
selector waits in epoll with a timeout in whole milliseconds, rounded up, so ``asyncio.sleep``
wakes up to 1 ms late.

On Linux, :class:`DeadlineTimer` arms a timerfd on ``CLOCK_MONOTONIC`` — the clock of
``time.perf_counter_ns`` there, so a deadline from ``perf_counter_ns`` is used as it is — at the
absolute deadline. The descriptor is registered with the event loop, so epoll wakes when the
kernel's high-resolution timer expires, however long its own timeout; meanwhile the loop serves
every stream as usual. The cost is one wake-up per send. Measured against the spin below
(``bench/loadgen_limits.py``, interleaved): the same P99 send lag, a later median (0.07–0.34 ms
against 0.02–0.09 ms: an idle core takes longer to wake), 40 % less client CPU at 800 sends/s.

Elsewhere (no timerfd), it falls back to sleeping until 1 ms before the deadline and then yielding
to the event loop (``asyncio.sleep(0)``, streams keep being read) until the deadline: exact too,
but that spin costs up to 1 ms of CPU per send.

Clock domain: ``time.perf_counter_ns()`` (monotonic, ns).

Example::

    timer = DeadlineTimer()
    try:
        await timer.sleep_until(time.perf_counter_ns() + 2_500_000)  # 2.5 ms from now
    finally:
        timer.close()
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import sys
import time

__all__ = ["SPIN_NS", "DeadlineTimer"]

SPIN_NS = 1_000_000
"""Without a timerfd: how long before the deadline the sleep ends and the yielding spin begins
(epoll's 1 ms granularity)."""

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> ctypes.CDLL | None:
    """glibc's timerfd functions, or None where there are none (not Linux, or no libc found)."""
    if not sys.platform.startswith("linux"):
        return None
    if time.get_clock_info("perf_counter").implementation != "clock_gettime(CLOCK_MONOTONIC)":
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.timerfd_settime.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(_Itimerspec),
            ctypes.c_void_p,
        ]
    except (OSError, AttributeError):
        return None
    return libc


class DeadlineTimer:
    """Sleeps until a ``perf_counter_ns`` deadline on the running event loop (one waiter at a time).

    Create it inside the loop that will wait on it; :meth:`close` releases the descriptor.
    ``precise`` says whether a timerfd is used (True) or the yielding spin (False).
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._libc = _libc()
        self._fd = -1
        self._waiter: asyncio.Future[None] | None = None
        if self._libc is not None:
            fd = self._libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
            if fd >= 0:
                self._fd = fd
                self._loop.add_reader(fd, self._expired)

    @property
    def precise(self) -> bool:
        return self._fd >= 0

    async def sleep_until(self, deadline_ns: int) -> None:
        """Return at ``deadline_ns`` (``time.perf_counter_ns()``) or just after; at once if past."""
        if deadline_ns <= time.perf_counter_ns():
            return
        if self._fd < 0:
            await _spin_until(deadline_ns)
            return
        assert self._libc is not None
        spec = _Itimerspec(
            _Timespec(0, 0), _Timespec(deadline_ns // 1_000_000_000, deadline_ns % 1_000_000_000)
        )
        if self._libc.timerfd_settime(self._fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None):
            await _spin_until(deadline_ns)  # cannot happen with a valid fd; stay exact anyway
            return
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _expired(self) -> None:
        try:
            os.read(self._fd, 8)  # the expiration count; reading re-arms readiness
        except BlockingIOError:
            return
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1


async def _spin_until(deadline_ns: int) -> None:
    delay_ns = deadline_ns - time.perf_counter_ns()
    if delay_ns > SPIN_NS:
        await asyncio.sleep((delay_ns - SPIN_NS) / 1e9)
    # A deliberate spin: no event can say "the clock reached deadline_ns" sooner than epoll's 1 ms.
    while time.perf_counter_ns() < deadline_ns:  # noqa: ASYNC110
        await asyncio.sleep(0)
