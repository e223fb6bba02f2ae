"""How well the arrivals a load generator actually sent fit a Poisson process (draft 5.1.2.2).

A Poisson process at rate λ has independent exponential gaps of mean 1/λ: their coefficient of
variation is 1, and their empirical distribution function stays close to ``1 − exp(−λ t)``. The
fit is judged on the gaps between the send times the run recorded (T_submit of every measured
request, sorted), not on the arrival process the run was configured with:

* ``cv`` — std / mean of the gaps (1 for exponential gaps, 0 for a uniform schedule, above 1 for
  bursts);
* the one-sample Kolmogorov–Smirnov statistic against the exponential ``F(t) = 1 − exp(−λ t)``
  at the *declared* rate λ, and its p-value from the Kolmogorov distribution with Stephens'
  small-sample correction, ``P(K > (√n + 0.12 + 0.11/√n) D)``.

Within a timing tolerance ``δ`` (the load generator's timing resolution, draft 4.2.1: 1 ms),
a gap is only known to ±δ, so the empirical CDF ``F_n`` is compared with the band between
``F(t − δ)`` and ``F(t + δ)``: ``D = sup_t max(F_n(t) − F(t + δ), F(t − δ) − F_n(t), 0)``. With
δ = 0 this is the KS statistic; a band only makes it smaller, so the p-value from the Kolmogorov
distribution stays conservative (a Poisson sender timed within δ is rejected at most as often as
the significance level). The coefficient of variation's tolerance widens alike: ``3/√n`` by
chance, plus ``2 (δ λ)²`` that timing errors within δ can add.

Usage::

    fit = exponential_fit(submit_unix_ns, rate=8.0, tolerance_s=0.001)
    fit.ks_p_value >= 0.01 and abs(fit.cv - 1) <= fit.cv_tolerance
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["CV_SIGMAS", "ExponentialFit", "exponential_fit", "kolmogorov_sf"]

CV_SIGMAS: Final = 3.0
"""How many standard errors (≈ 1/√n for exponential gaps) the gaps' coefficient of variation may
stray from 1 (:attr:`ExponentialFit.cv_tolerance`)."""


@dataclass(frozen=True)
class ExponentialFit:
    """The gaps' sample size, measured rate (gaps per second), coefficient of variation, and the
    KS statistic and p-value against the exponential at the declared rate."""

    gaps: int
    rate_per_s: float
    cv: float
    ks_statistic: float
    ks_p_value: float
    rate: float
    """The rate tested against (per second)."""
    tolerance_s: float = 0.0
    """The timing tolerance δ the fit allowed (module docstring)."""

    @property
    def cv_tolerance(self) -> float:
        """How far ``cv`` may lie from 1: ``CV_SIGMAS / √n`` by chance, plus ``2 (δ λ)²``."""
        return CV_SIGMAS / math.sqrt(self.gaps) + 2.0 * (self.tolerance_s * self.rate) ** 2


def kolmogorov_sf(x: float) -> float:
    """``P(K > x)`` for the Kolmogorov distribution: ``2 Σ (−1)^(k−1) exp(−2 k² x²)``."""
    if x <= 0.0:
        return 1.0
    if x < 0.2:  # the alternating series converges slowly there; the value is 1 to 1e-12
        return 1.0
    total = 0.0
    for k in range(1, 101):
        term = math.exp(-2.0 * k * k * x * x)
        total += term if k % 2 else -term
        if term < 1e-16:
            break
    return min(1.0, max(0.0, 2.0 * total))


def exponential_fit(
    send_ns: npt.ArrayLike, rate: float, tolerance_s: float = 0.0
) -> ExponentialFit | None:
    """The fit of the gaps between ``send_ns`` (send times in ns, any order) to exponential gaps
    at ``rate`` per second, each gap known to ± ``tolerance_s``; None for fewer than two gaps or
    a rate that is not positive."""
    times = np.sort(np.asarray(send_ns, dtype=np.int64))
    gaps_s = np.diff(times).astype(np.float64) / 1e9
    n = int(gaps_s.size)
    if n < 2 or not rate > 0:
        return None
    mean = float(gaps_s.mean())
    cv = float(gaps_s.std() / mean) if mean > 0 else math.inf
    x = np.sort(gaps_s)
    above = -np.expm1(-rate * (x + tolerance_s))
    below = -np.expm1(-rate * np.maximum(x - tolerance_s, 0.0))
    upper = np.arange(1, n + 1, dtype=np.float64) / n - above
    lower = below - np.arange(0, n, dtype=np.float64) / n
    d = max(float(upper.max()), float(lower.max()), 0.0)
    root = math.sqrt(n)
    p = kolmogorov_sf((root + 0.12 + 0.11 / root) * d)
    span = float(times[-1] - times[0]) / 1e9
    return ExponentialFit(n, n / span if span > 0 else math.inf, cv, d, p, rate, tolerance_s)
