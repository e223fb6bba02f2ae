"""Long-context scaling (draft 5.9.4): per-length TTFT, time per input token, scaling fits.

Pure numpy, no I/O. Definitions:

* **Per-length latency**: TTFT mean, P50 and P95 of the requests of each distinct input length.
* **Prefill scaling** (time per input token): ``TTFT / input_length`` per request; the per-length
  row reports ``ms per 1K tokens = 1e6 · mean(TTFT) / length`` for TTFT in seconds (5.9.5).
* **Scaling exponent**: ``k`` of ``TTFT = C · L^k``, by least squares of ``log TTFT`` on
  ``log L`` over every request; ``R²`` is that of the log-log fit.
* **Linear fit**: ``TTFT = intercept + slope · L`` by least squares over every request; the
  draft reports the slope in µs per input token (5.9.5, "~68 microseconds per input token").

Fits are over individual requests, not per-length means, so each length weighs by its request
count (5.9.2 asks for the same count, at least 20, per length). The draft's "throughput at
length" needs a throughput sweep per length and is not computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from otelbench.arrays import F64
from otelbench.errors import ConfigError
from otelbench.metrics.summary import percentile

__all__ = [
    "LengthRow",
    "LinearFit",
    "LongContextScaling",
    "PowerLawFit",
    "fit_linear",
    "fit_power_law",
    "long_context_scaling",
    "time_per_input_token",
]


def time_per_input_token(ttft: npt.ArrayLike, input_tokens: npt.ArrayLike) -> F64:
    """``TTFT / input_length`` per request (draft 5.9.4); NaN where the length is not positive.

    >>> time_per_input_token([0.5, 1.0], [1000, 0]).tolist()
    [0.0005, nan]
    """
    t = np.asarray(ttft, dtype=np.float64)
    n = np.asarray(input_tokens, dtype=np.float64)
    if t.shape != n.shape:
        raise ValueError("ttft and input_tokens must have the same shape")
    out = np.full(t.shape, np.nan)
    ok = n > 0
    out[ok] = t[ok] / n[ok]
    return out


def _r_squared(y: F64, pred: F64) -> float:
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum((y - pred) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0


def _least_squares_line(x: F64, y: F64) -> tuple[float, float, float]:
    """The least-squares line ``y = slope · x + intercept``: (slope, intercept, R²)."""
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), _r_squared(y, slope * x + intercept)


def _xy(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[F64, F64]:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("lengths and latencies must be 1-D and the same shape")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if np.unique(a).size < 2:
        raise ConfigError("a scaling fit needs at least 2 distinct context lengths")
    return a, b


@dataclass(frozen=True, slots=True)
class PowerLawFit:
    """``TTFT = coefficient · L^exponent``, fitted in log-log space (draft 5.9.4)."""

    exponent: float
    coefficient: float
    r_squared: float
    requests: int


def fit_power_law(input_tokens: npt.ArrayLike, ttft: npt.ArrayLike) -> PowerLawFit:
    """Scaling exponent ``k`` of ``TTFT ∝ L^k`` by log-log least squares (draft 5.9.4).

    Needs positive lengths and TTFTs (NaN pairs are left out) and 2 distinct lengths.

    >>> f = fit_power_law([1000, 2000, 4000], [0.1, 0.4, 1.6])
    >>> round(f.exponent, 9), round(f.r_squared, 9)
    (2.0, 1.0)
    """
    length, t = _xy(input_tokens, ttft)
    if np.any(length <= 0) or np.any(t <= 0):
        raise ValueError("a power-law fit needs positive lengths and latencies")
    k, log_c, r_squared = _least_squares_line(np.log(length), np.log(t))
    return PowerLawFit(
        exponent=k, coefficient=float(np.exp(log_c)), r_squared=r_squared, requests=int(t.size)
    )


@dataclass(frozen=True, slots=True)
class LinearFit:
    """``TTFT = intercept_s + slope_s_per_token · L`` by least squares (draft 5.9.4, 5.9.5)."""

    slope_s_per_token: float
    intercept_s: float
    r_squared: float
    requests: int

    @property
    def slope_us_per_token(self) -> float:
        """The slope in microseconds per input token, the draft's reporting unit (5.9.5)."""
        return self.slope_s_per_token * 1e6


def fit_linear(input_tokens: npt.ArrayLike, ttft_s: npt.ArrayLike) -> LinearFit:
    """Linear least-squares fit of TTFT (seconds) on input length (draft 5.9.4).

    >>> f = fit_linear([1000, 2000, 4000], [0.078, 0.146, 0.282])
    >>> round(f.slope_us_per_token, 6), round(f.intercept_s, 6)
    (68.0, 0.01)
    """
    length, t = _xy(input_tokens, ttft_s)
    slope, intercept, r_squared = _least_squares_line(length, t)
    return LinearFit(
        slope_s_per_token=slope, intercept_s=intercept, r_squared=r_squared, requests=int(t.size)
    )


@dataclass(frozen=True, slots=True)
class LengthRow:
    """TTFT statistics of one context length (draft 5.9.4, Table 12)."""

    input_tokens: int
    count: int
    ttft_mean: float
    ttft_p50: float
    ttft_p95: float
    ms_per_1k_tokens: float


@dataclass(frozen=True, slots=True)
class LongContextScaling:
    """Per-length rows (ascending length) and both scaling fits (draft 5.9.4)."""

    lengths: tuple[LengthRow, ...]
    power_law: PowerLawFit
    linear: LinearFit


def long_context_scaling(input_tokens: npt.ArrayLike, ttft_s: npt.ArrayLike) -> LongContextScaling:
    """Per-length TTFT rows plus power-law and linear fits of TTFT (seconds) on length (5.9.4).

    Requests with a NaN TTFT or length are left out.

    >>> s = long_context_scaling([1024, 1024, 2048, 2048], [0.1, 0.1, 0.2, 0.2])
    >>> [(r.input_tokens, round(r.ms_per_1k_tokens, 3)) for r in s.lengths]
    [(1024, 97.656), (2048, 97.656)]
    """
    length, t = _xy(input_tokens, ttft_s)
    rows = []
    for value in np.unique(length):
        sample = t[length == value]
        mean = float(sample.mean())
        rows.append(
            LengthRow(
                input_tokens=int(value),
                count=int(sample.size),
                ttft_mean=mean,
                ttft_p50=float(percentile(sample, 50) or 0.0),
                ttft_p95=float(percentile(sample, 95) or 0.0),
                ms_per_1k_tokens=1e6 * mean / float(value) if value > 0 else float("nan"),
            )
        )
    return LongContextScaling(
        lengths=tuple(rows), power_law=fit_power_law(length, t), linear=fit_linear(length, t)
    )
