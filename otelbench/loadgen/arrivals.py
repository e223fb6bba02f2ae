"""Arrival processes for open-loop load (draft 4.2.3), registered by name.

An arrival process turns ``(rate, n, seed)`` into a precomputed schedule: the send offset, in
seconds from the start of the run, of every request. The schedule is fixed before the first
request leaves, so no response can move a later send (draft 4.2.5), and the same seed gives the
same schedule on every machine.

Example::

    offsets = ARRIVALS["poisson"](rate=4.0, n=1000, seed=42)   # seconds, non-decreasing
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from otelbench.errors import ConfigError

__all__ = ["ARRIVALS", "ArrivalProcess", "poisson", "register_arrival", "uniform"]

ArrivalProcess = Callable[..., npt.NDArray[np.float64]]
ARRIVALS: dict[str, ArrivalProcess] = {}


def register_arrival(name: str) -> Callable[[ArrivalProcess], ArrivalProcess]:
    """Register an arrival process under ``name``."""

    def wrap(fn: ArrivalProcess) -> ArrivalProcess:
        ARRIVALS[name] = fn
        return fn

    return wrap


def _check(rate: float, n: int) -> None:
    if not rate > 0:
        raise ConfigError(f"arrival rate must be > 0 requests/s, got {rate}")
    if n < 0:
        raise ConfigError(f"request count must be >= 0, got {n}")


@register_arrival("poisson")
def poisson(*, rate: float, n: int, seed: int) -> npt.NDArray[np.float64]:
    """Poisson arrivals: i.i.d. exponential inter-arrival gaps with mean ``1/rate`` (draft 4.2.3).

    The first request is sent at offset 0; offset k is the sum of the first k gaps.
    """
    _check(rate, n)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=max(n - 1, 0))
    return np.concatenate([[0.0], np.cumsum(gaps)])[:n]


@register_arrival("uniform")
def uniform(*, rate: float, n: int, seed: int) -> npt.NDArray[np.float64]:
    """Uniform (constant-rate) arrivals: a request every ``1/rate`` seconds; ``seed`` is unused."""
    _check(rate, n)
    return np.arange(n, dtype=np.float64) / rate
