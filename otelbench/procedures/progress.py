"""The procedure's progress line on stderr: levels done, the level's requests, rate, ETA.

One line per event that matters (a level starts, a level ends, a status message) and, within a
level, at most one line every ``interval_s`` as requests complete. Cheap per request: a counter
and a clock read. Requests in flight are shown for a closed loop (its concurrency, while the
level runs); an open loop's in-flight count is not observable from completions alone.

Example::

    progress = ProcedureProgress("5.3", planned_levels=12, write=print)
    session = ProcedureSession(out, config, on_level_start=progress.level_started,
                               on_result=progress.result, on_status=progress.status)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from otelbench.procedures.session import Level

__all__ = ["ProcedureProgress"]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


class ProcedureProgress:
    """Progress of one procedure (see the module docstring)."""

    def __init__(
        self,
        section: str,
        planned_levels: int | None = None,
        *,
        interval_s: float = 2.0,
        write: Callable[[str], None] = _stderr,
    ) -> None:
        self.section = section
        self.planned_levels = planned_levels
        self.interval_s = interval_s
        self.write = write
        self.levels_done = 0
        self._level: Level | None = None
        self._done = 0
        self._failed = 0
        self._level_started = 0.0
        self._last_line = 0.0
        self._durations: list[float] = []

    def status(self, message: str) -> None:
        self.write(f"otelbench [{self.section}]: {message}")

    def _levels_text(self, index: int) -> str:
        total = f"/{self.planned_levels}" if self.planned_levels else ""
        return f"level {index}{total}"

    def _eta(self) -> str:
        if not self.planned_levels or not self._durations:
            return ""
        mean = sum(self._durations) / len(self._durations)
        left = max(0, self.planned_levels - self.levels_done)
        return f", ETA ~{_duration(mean * left)}"

    def level_started(self, level: Level) -> None:
        if self._level is not None:
            self._level_finished()
        self._level = level
        self._done = self._failed = 0
        self._level_started = self._last_line = time.monotonic()
        load = level.load
        rate = (
            f"concurrency {load.concurrency}"
            if load.mode == "closed_loop"
            else f"{load.rate:.3g} req/s {load.mode}"
        )
        self.write(
            f"otelbench [{self.section}]: {self._levels_text(level.index)} ({level.label}): "
            f"{load.requests} requests at {rate}{' after warm-up' if level.warmed else ''}"
            f"{self._eta()}"
        )

    def result(self, result: Any) -> None:
        self._done += 1
        self._failed += 0 if getattr(result, "ok", True) else 1
        level = self._level
        now = time.monotonic()
        if level is None or now - self._last_line < self.interval_s:
            return
        self._last_line = now
        elapsed = now - self._level_started
        rate = self._done / elapsed if elapsed > 0 else 0.0
        left = level.load.requests - self._done
        in_flight = (
            f", {min(level.load.concurrency or 0, left)} in flight"
            if level.load.mode == "closed_loop"
            else ""
        )
        eta = f", level ETA ~{_duration(left / rate)}" if rate > 0 else ""
        self.write(
            f"otelbench [{self.section}]: {self._levels_text(level.index)}: "
            f"{self._done}/{level.load.requests} done ({self._failed} failed){in_flight}, "
            f"{rate:.2f} req/s completed{eta}"
        )

    def _level_finished(self) -> None:
        self.levels_done += 1
        self._durations.append(time.monotonic() - self._level_started)
        self._level = None

    def finished(self) -> None:
        """The last level ended."""
        if self._level is not None:
            self._level_finished()
        self.write(f"otelbench [{self.section}]: {self.levels_done} level(s) done")
