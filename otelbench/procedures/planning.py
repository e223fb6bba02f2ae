"""Planning a procedure's load levels, and the search for the largest passing level: pure, no I/O.

* :func:`fraction_levels` — load levels as fractions of a reference rate (5.3.3 step 2: 10 %,
  20 %, … 120 % of the estimated capacity; 5.4.2: 25/50/75/90 % of saturation).
* :func:`open_loop_requests` — the request count that keeps an open-loop level running for its
  duration at its rate (``ceil(rate × duration)``, at least a floor).
* :class:`MaxSearch` — the largest value in ``[lo, hi]`` at which a (presumed monotone)
  system passes, by bracketing then bisection: draft 5.2.3 step 4 (binary search on the arrival
  rate) and 5.5.3 step 4 (binary search on concurrency). The caller measures; the search only
  says which value to try next (:meth:`MaxSearch.next_value`) and learns each verdict
  (:meth:`MaxSearch.record`).

**The search, as defined here.** Before any verdict it proposes ``start``. While only passes are
known it grows: ``min(best_pass × growth, hi)`` (``start`` first if it is above the best pass and
untried); a pass at ``hi`` ends it (``capped``). While only failures are known it shrinks:
``max(worst_fail / growth, lo)``; a failure at ``lo`` ends it with no passing value. With a pass
below a failure it bisects, ``(pass + fail) / 2`` (integers: floored, strictly between), until
``fail − pass <= max(abs_tolerance, rel_tolerance × pass)`` (integers: until adjacent at least).
It also ends after ``max_steps`` verdicts (``exhausted``). A pass above a known failure (the
system is not monotone, e.g. noise) is recorded in ``non_monotone`` and moves the failure bound
above it: the newest evidence wins.

The ``Params`` blocks of the procedures that search or sweep open-loop levels (their fields are
options of the command, in the block's place: :data:`RATE_RANGE_OPTIONS`,
:data:`OPEN_LOOP_OPTIONS`; a procedure's ``parameters`` name them flat:
:meth:`~otelbench.procedures.base.LevelSizes.sized_parameters`):

* :class:`RateRange` — a rate search's range (5.2, the fluidity search);
* :class:`OpenLoopLevels` — the levels' and the capacity probe's sizes and the arrival process
  (5.2, 5.3, 5.10, the fluidity search).

Example::

    search = MaxSearch(start=8, lo=1, hi=512, integer=True)
    while (c := search.next_value()) is not None:
        search.record(c, run_level(c).passed)
    print(search.best, search.first_fail, search.capped)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final

from otelbench.errors import ConfigError
from otelbench.options import METADATA_KEY, OptionMeta, option

__all__ = [
    "OPEN_LOOP_OPTIONS",
    "RATE_RANGE_OPTIONS",
    "SWEEP_FRACTIONS",
    "MaxSearch",
    "OpenLoopLevels",
    "RateRange",
    "SearchStep",
    "fraction_levels",
    "open_loop_requests",
    "search_max",
    "shared_option",
]

SWEEP_FRACTIONS: Final = tuple(round(0.1 * k, 1) for k in range(1, 13))
"""Draft 5.3.3 step 2: 10 %, 20 %, …, 100 %, 110 %, 120 % of the estimated capacity."""


def fraction_levels(reference: float, fractions: Sequence[float] = SWEEP_FRACTIONS) -> list[float]:
    """``reference × f`` for each fraction, which must be positive and strictly ascending.

    >>> fraction_levels(10.0, (0.1, 0.5, 1.2))
    [1.0, 5.0, 12.0]
    """
    if not (math.isfinite(reference) and reference > 0):
        raise ConfigError(f"the reference rate must be a positive number, got {reference}")
    if not fractions or any(f <= 0 for f in fractions):
        raise ConfigError("load fractions must be positive")
    if any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ConfigError("load fractions must be strictly ascending")
    return [reference * f for f in fractions]


RATE_GROWTH: Final = 1.5
"""The rate searches' bracketing factor (5.2, the fluidity search)."""


def rate_bounds(
    capacity_rps: float,
    *,
    min_rps: float | None,
    max_rps: float | None,
    rate_step: float | None,
    resolution: float,
) -> dict[str, float]:
    """A rate search's range and step around a capacity estimate, each unless given: from 10 %
    to 200 % of it, in steps of ``resolution`` × it.

    >>> rate_bounds(10.0, min_rps=None, max_rps=30.0, rate_step=None, resolution=0.05)
    {'min_rps': 1.0, 'max_rps': 30.0, 'rate_step': 0.5}
    """
    return {
        "min_rps": min_rps or 0.1 * capacity_rps,
        "max_rps": max_rps or 2.0 * capacity_rps,
        "rate_step": rate_step or resolution * capacity_rps,
    }


def open_loop_requests(rate: float, duration_s: float, min_requests: int = 1) -> int:
    """Requests an open-loop level at ``rate`` sends over ``duration_s``: ``ceil(rate × d)``,
    at least ``min_requests``.

    >>> open_loop_requests(2.5, 60.0), open_loop_requests(0.2, 3.0, min_requests=6)
    (150, 6)
    """
    if not (rate > 0 and duration_s >= 0):
        raise ConfigError("a level needs a rate > 0 and a duration >= 0")
    return max(int(min_requests), math.ceil(rate * duration_s - 1e-9))


@dataclass(frozen=True, slots=True)
class SearchStep:
    """One verdict the search learned."""

    value: float
    passed: bool


@dataclass
class MaxSearch:
    """Bracket-then-bisect search for the largest passing value (see the module docstring)."""

    start: float
    lo: float
    hi: float
    integer: bool = False
    growth: float = 2.0
    abs_tolerance: float = 0.0
    rel_tolerance: float = 0.0
    max_steps: int = 30
    steps: list[SearchStep] = field(default_factory=list)
    best: float | None = None
    """The largest passing value below every failure, once known."""
    first_fail: float | None = None
    """The smallest failing value above ``best``, once known."""
    non_monotone: list[SearchStep] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (0 < self.lo <= self.start <= self.hi) or not math.isfinite(self.hi):
            raise ConfigError(
                f"the search needs 0 < lo <= start <= hi, got lo={self.lo}, start={self.start}, "
                f"hi={self.hi}"
            )
        if self.growth <= 1:
            raise ConfigError("the search's growth factor must be > 1")
        if self.max_steps < 1:
            raise ConfigError("the search needs max_steps >= 1")
        if self.integer:
            self.start, self.lo, self.hi = (
                float(round(self.start)),
                float(math.ceil(self.lo)),
                float(math.floor(self.hi)),
            )

    # ------------------------------------------------------------------ state
    @property
    def tried(self) -> set[float]:
        return {s.value for s in self.steps}

    @property
    def capped(self) -> bool:
        """The upper bound itself passed: the true maximum may lie above ``hi``."""
        return self.best is not None and self.best >= self.hi

    @property
    def exhausted(self) -> bool:
        """The search stopped at ``max_steps`` before it converged."""
        return len(self.steps) >= self.max_steps and not self._converged()

    def _tolerance(self) -> float:
        tol = max(self.abs_tolerance, self.rel_tolerance * (self.best or 0.0))
        return max(tol, 1.0) if self.integer else tol

    def _converged(self) -> bool:
        if self.best is None:
            return self.first_fail is not None and self.first_fail <= self.lo
        if self.first_fail is None:
            return self.best >= self.hi
        return self.first_fail - self.best <= self._tolerance()

    def non_monotone_note(self, unit: str) -> str | None:
        """The report's note on the verdicts that went against the bracket (each value followed
        by ``unit``); None when there were none."""
        if not self.non_monotone:
            return None
        steps = ", ".join(
            f"{s.value:.3g} {unit} {'passed' if s.passed else 'failed'}" for s in self.non_monotone
        )
        return (
            f"the system was not monotone in rate: {steps} against the bracket so far (noise); "
            "the newest verdict was kept"
        )

    # ------------------------------------------------------------------ protocol
    def record(self, value: float, passed: bool) -> None:
        """Learn that the system passed (or failed) at ``value``."""
        step = SearchStep(float(value), bool(passed))
        self.steps.append(step)
        if passed:
            if self.first_fail is not None and value >= self.first_fail:
                self.non_monotone.append(step)
                self.first_fail = None
                failures = [s.value for s in self.steps if not s.passed and s.value > value]
                self.first_fail = min(failures) if failures else None
            if self.best is None or value > self.best:
                self.best = float(value)
        else:
            if self.best is not None and value <= self.best:
                self.non_monotone.append(step)
                passes = [s.value for s in self.steps if s.passed and s.value < value]
                self.best = max(passes) if passes else None
            if self.first_fail is None or value < self.first_fail:
                self.first_fail = float(value)

    def next_value(self) -> float | None:
        """The next value to measure, or None when the search is over."""
        if len(self.steps) >= self.max_steps or self._converged():
            return None
        if not self.steps:
            return self.start
        if self.first_fail is None:
            assert self.best is not None
            if self.start > self.best and self.start not in self.tried:
                return self.start
            return self._fresh(min(self.best * self.growth, self.hi), up=True)
        if self.best is None:
            return self._fresh(max(self.first_fail / self.growth, self.lo), up=False)
        mid = (self.best + self.first_fail) / 2.0
        if self.integer:
            mid = float(math.floor(mid))
            if not self.best < mid < self.first_fail:
                return None
        return mid

    def _fresh(self, value: float, *, up: bool) -> float | None:
        if self.integer:
            value = float(math.ceil(value) if up else math.floor(value))
            if up and self.best is not None and value <= self.best:
                value = self.best + 1
            if not up and self.first_fail is not None and value >= self.first_fail:
                value = self.first_fail - 1
            value = min(max(value, self.lo), self.hi)
        return None if value in self.tried else value


def search_max(
    passes: Callable[[float], bool],
    search: MaxSearch,
) -> MaxSearch:
    """Drive ``search`` with a synchronous verdict function (tests, simulations); returns it.

    >>> s = search_max(lambda c: c <= 40, MaxSearch(start=8, lo=1, hi=512, integer=True))
    >>> s.best, s.first_fail
    (40.0, 41.0)
    """
    while (value := search.next_value()) is not None:
        search.record(value, passes(value))
    return search


# ------------------------------------------------------------------------------------------
# The options several procedures' Params share (their command-line help: otelbench.options)
# ------------------------------------------------------------------------------------------

_SHARED_OPTIONS: Final[dict[str, tuple[Any, str, str | None]]] = {
    "arrival": ("poisson", "Open-loop arrival process (poisson, uniform, …).", None),
    "capacity_rps": (
        None,
        "Estimated capacity, req/s (default: a closed-loop probe measures it).",
        None,
    ),
    "min_rps": (None, "Lowest rate of the search (default 10% of capacity).", None),
    "max_rps": (None, "Highest rate of the search (default 200% of capacity).", None),
    "rate_step": (None, "Search resolution, req/s (default: profile × capacity).", None),
    "level_duration_s": (
        None,
        "Seconds per load level (default: the profile's).",
        "level_duration",
    ),
    "min_level_requests": (None, "Fewest requests per level (default: the profile's).", None),
    "probe_concurrency": (None, "Capacity probe's concurrency (default: the profile's).", None),
    "probe_requests": (None, "Capacity probe's requests (default: the profile's).", None),
    "slo_ttft_p99_ms": (None, "SLO: TTFT P99 limit, ms.", None),
    "slo_tpot_p99_ms": (None, "SLO: TPOT P99 limit, ms.", None),
}


def shared_option(field_name: str) -> Any:
    """The field ``field_name`` that several procedures' ``Params`` have, as an option.

    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class P:
    ...     arrival: str = shared_option("arrival")
    >>> P().arrival
    'poisson'
    """
    default, help_text, name = _SHARED_OPTIONS[field_name]
    return option(default, help=help_text, name=name)


@dataclass(frozen=True)
class RateRange:
    """The range of a rate search (5.2.3 step 4, the fluidity search) around the capacity
    estimate: each bound > 0 when given, ``min_rps`` <= ``max_rps``; None derives it from the
    capacity (:meth:`bounds`).

    >>> RateRange(min_rps=4.0, max_rps=2.0)
    Traceback (most recent call last):
    otelbench.errors.ConfigError: --min-rps must not exceed --max-rps
    """

    capacity_rps: float | None = shared_option("capacity_rps")
    min_rps: float | None = shared_option("min_rps")
    max_rps: float | None = shared_option("max_rps")
    rate_step: float | None = shared_option("rate_step")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and not value > 0:
                raise ConfigError(f"--{f.name.replace('_', '-')} must be > 0")
        if self.min_rps is not None and self.max_rps is not None and self.min_rps > self.max_rps:
            raise ConfigError("--min-rps must not exceed --max-rps")

    def bounds(self, capacity_rps: float, resolution: float) -> dict[str, float]:
        """The search's ``min_rps``, ``max_rps`` and ``rate_step`` around ``capacity_rps``
        (:func:`rate_bounds`)."""
        return rate_bounds(
            capacity_rps,
            min_rps=self.min_rps,
            max_rps=self.max_rps,
            rate_step=self.rate_step,
            resolution=resolution,
        )


@dataclass(frozen=True)
class OpenLoopLevels:
    """The sizes of an open-loop search or sweep's levels and of its closed-loop capacity probe
    (None: the profile's), and the levels' arrival process, which must have a rate (5.2.3,
    5.3.2, 5.10.3; the fluidity search)."""

    level_duration_s: float | None = shared_option("level_duration_s")
    min_level_requests: int | None = shared_option("min_level_requests")
    probe_concurrency: int | None = shared_option("probe_concurrency")
    probe_requests: int | None = shared_option("probe_requests")
    arrival: str = shared_option("arrival")

    def __post_init__(self) -> None:
        if self.arrival in ("closed_loop", "trace"):
            raise ConfigError(
                f"--arrival {self.arrival}: the levels run open-loop at a rate "
                "(poisson, uniform, …)"
            )


def _own_helps(cls: type[Any]) -> dict[str, str]:
    """Every field of the option dataclass ``cls``: its option name → its own help."""
    metas: list[tuple[str, OptionMeta]] = [(f.name, f.metadata[METADATA_KEY]) for f in fields(cls)]
    return {meta.name or name: meta.help for name, meta in metas}


RATE_RANGE_OPTIONS: Final = _own_helps(RateRange)
"""``nested(RateRange, help=RATE_RANGE_OPTIONS)``: a ``Params`` field whose block's fields are
all options of the command, with their own help, in the block's place."""
OPEN_LOOP_OPTIONS: Final = _own_helps(OpenLoopLevels)
"""``nested(OpenLoopLevels, help=OPEN_LOOP_OPTIONS)``: as :data:`RATE_RANGE_OPTIONS`."""
