"""Confidence intervals over independent runs (draft 6.3): seeded percentile bootstrap.

Pure numpy, no I/O. Definition: given one value of a metric per independent run
(``n >= 3``, draft 6.3 "at least 3"), draw ``resamples`` samples of ``n`` run values with
replacement (numpy ``default_rng(seed)``), compute the statistic of each, and take the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles of those statistics (linear
interpolation, as :mod:`otelbench.metrics.summary`) as the interval. The estimate is the
statistic of the runs themselves.

With few runs the bootstrap distribution is coarse (3 runs have only 10 distinct resamples) and
the percentile interval under-covers; it is still the honest, assumption-free summary the draft
asks for, and ``n_runs`` is reported beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench.errors import ConfigError

__all__ = ["MIN_RUNS", "BootstrapCI", "bootstrap_ci"]

F64 = npt.NDArray[np.float64]

MIN_RUNS: Final = 3
"""The draft's minimum number of independent runs for a comparative claim (6.3)."""


@dataclass(frozen=True, slots=True)
class BootstrapCI:
    """A percentile-bootstrap confidence interval of a statistic over runs (draft 6.3)."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_runs: int
    resamples: int
    seed: int


def _mean(x: F64) -> float:
    return float(np.mean(x))


def bootstrap_ci(
    run_values: npt.ArrayLike,
    statistic: Callable[[F64], float] = _mean,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> BootstrapCI:
    """Percentile bootstrap interval of ``statistic`` (default: the mean) over runs (draft 6.3).

    Raises :class:`~otelbench.errors.ConfigError` for fewer than 3 runs.

    >>> ci = bootstrap_ci([1.0, 2.0, 3.0], confidence=0.8, resamples=20_000)
    >>> ci.estimate, round(ci.low, 6), round(ci.high, 6)
    (2.0, 1.333333, 2.666667)
    """
    x = np.asarray(run_values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("run values must be a 1-D array, one value per run")
    if x.size < MIN_RUNS:
        raise ConfigError(
            f"a confidence interval needs at least {MIN_RUNS} independent runs, got {x.size}: "
            "repeat the run"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("run values must be finite")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be within (0, 1)")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    samples = x[idx]
    stats = np.fromiter((statistic(row) for row in samples), dtype=np.float64, count=resamples)
    alpha = 1.0 - confidence
    low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)], method="linear")
    return BootstrapCI(
        estimate=float(statistic(x)),
        low=float(low),
        high=float(high),
        confidence=confidence,
        n_runs=int(x.size),
        resamples=resamples,
        seed=seed,
    )
