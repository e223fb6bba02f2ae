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

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.arrays import F64
from otelbench.errors import ConfigError

__all__ = [
    "MAX_EXACT_PERMUTATIONS",
    "PERMUTATION_RESAMPLES",
    "BootstrapCI",
    "PermutationTest",
    "WelchTest",
    "bootstrap_ci",
    "permutation_test",
    "regularized_incomplete_beta",
    "student_t_cdf",
    "student_t_two_sided_p",
    "welch_t_test",
]


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
    if x.size < draft.COMPARISON_MIN_RUNS:
        raise ConfigError(
            f"a confidence interval needs at least {draft.COMPARISON_MIN_RUNS} independent runs, "
            f"got {x.size}: repeat the run"
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


MAX_EXACT_PERMUTATIONS: Final = 100_000
"""Up to this many splits the permutation test enumerates all of them (exact p-value)."""

PERMUTATION_RESAMPLES: Final = 20_000
"""Random splits of the Monte Carlo permutation test beyond :data:`MAX_EXACT_PERMUTATIONS`."""


# ---------------------------------------------------------------------------------------------
# Statistics: Student's t distribution, Welch's t-test, permutation test (pure, no I/O)
# ---------------------------------------------------------------------------------------------

_BETACF_MAX_ITERATIONS: Final = 10_000
_BETACF_EPS: Final = 1e-15
_TINY: Final = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes
    6.4): I_x(a, b) = x^a (1-x)^b / (a B(a, b)) · 1/(1 + d₁/(1 + d₂/(1 + …))) with
    d_{2m+1} = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and d_{2m} = m(b−m)x / ((a+2m−1)(a+2m)).
    It converges quickly for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _BETACF_MAX_ITERATIONS + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _BETACF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b})")


def _ibeta(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) given x and y = 1 − x, each computed without cancellation by the caller."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, y) / b


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b), 0 ≤ x ≤ 1.

    Evaluated by its continued fraction (modified Lentz), using the symmetry
    I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly. The accuracy is about
    1e-14 for a, b up to tens; for large a + b the prefactor's log-gamma terms limit it to
    about 1e-16 · ln Γ(a + b) (4e-12 at a = b = 5000).

    >>> round(regularized_incomplete_beta(0.3, 1.0, 1.0), 12)  # I_x(1, 1) = x
    0.3
    >>> round(regularized_incomplete_beta(0.5, 3.0, 3.0), 12)  # symmetric: 1/2 at the centre
    0.5
    """
    if not (a > 0.0 and b > 0.0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"a and b must be finite and > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be within [0, 1], got {x}")
    return _ibeta(a, b, x, 1.0 - x)


def _check_df(df: float) -> None:
    if not (df > 0.0 and math.isfinite(df)):
        raise ValueError(f"degrees of freedom must be finite and > 0, got {df}")


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with ``df`` (> 0, not necessarily integer) degrees of freedom.

    P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2), the regularized incomplete beta function.

    >>> round(student_t_two_sided_p(12.706204736, 1), 6)  # the 97.5 % quantile of t(1)
    0.05
    """
    _check_df(df)
    if math.isnan(t):
        raise ValueError("t must not be NaN")
    if math.isinf(t):
        return 0.0
    t2 = t * t
    return min(1.0, _ibeta(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2)))


def student_t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` (> 0, not necessarily integer) degrees of freedom.

    >>> student_t_cdf(0.0, 3.0), round(student_t_cdf(1.0, 1.0), 12)  # t(1) is Cauchy: 3/4
    (0.5, 0.75)
    """
    tail = student_t_two_sided_p(t, df) / 2.0
    return tail if t < 0 else 1.0 - tail


@dataclass(frozen=True, slots=True)
class WelchTest:
    """Welch's unequal-variances t-test of mean(x) − mean(y) (two-sided).

    ``t`` is None when both samples have zero variance and different means (the statistic is
    infinite; ``p`` is 0 then); ``df`` is None when both variances are zero.
    """

    t: float | None
    df: float | None
    p: float
    mean_difference: float
    standard_error: float


def _two_samples(x: npt.ArrayLike, y: npt.ArrayLike, min_size: int, test: str) -> tuple[F64, F64]:
    """``x`` and ``y`` as finite 1-D float arrays of at least ``min_size`` values each."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("samples must be 1-D arrays")
    if a.size < min_size or b.size < min_size:
        plural = "s" if min_size > 1 else ""
        raise ValueError(f"{test} needs at least {min_size} value{plural} per sample")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("samples must be finite")
    return a, b


def welch_t_test(x: npt.ArrayLike, y: npt.ArrayLike) -> WelchTest:
    """Welch's t-test of H₀: mean(x) = mean(y), two-sided, without assuming equal variances.

    With sample variances sₓ², s_y² (ddof = 1) and sizes nₓ, n_y:
    SE² = sₓ²/nₓ + s_y²/n_y, t = (x̄ − ȳ) / SE, and the Welch–Satterthwaite degrees of freedom
    ν = SE⁴ / ((sₓ²/nₓ)²/(nₓ−1) + (s_y²/n_y)²/(n_y−1)); p = P(|T_ν| ≥ |t|)
    (:func:`student_t_two_sided_p`). Needs at least 2 values per sample.

    >>> w = welch_t_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    >>> round(w.t, 6), w.df, round(w.p, 6)
    (-3.674235, 4.0, 0.021312)
    """
    a, b = _two_samples(x, y, 2, "Welch's t-test")
    va = float(np.var(a, ddof=1)) / a.size
    vb = float(np.var(b, ddof=1)) / b.size
    diff = float(np.mean(a) - np.mean(b))
    se2 = va + vb
    se = math.sqrt(se2)
    if se2 == 0.0:
        if diff == 0.0:
            return WelchTest(t=0.0, df=None, p=1.0, mean_difference=0.0, standard_error=0.0)
        return WelchTest(t=None, df=None, p=0.0, mean_difference=diff, standard_error=0.0)
    df = se2 * se2 / (va * va / (a.size - 1) + vb * vb / (b.size - 1))
    t = diff / se
    return WelchTest(
        t=t, df=df, p=student_t_two_sided_p(t, df), mean_difference=diff, standard_error=se
    )


@dataclass(frozen=True, slots=True)
class PermutationTest:
    """A two-sided permutation test of the difference of means."""

    p: float
    exact: bool
    permutations: int
    """Splits evaluated: all C(nₓ+n_y, nₓ) when exact, else the random resamples."""
    min_p: float
    """The smallest p-value this test can give with these sample sizes (exact test)."""


def permutation_test(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    max_exact: int = MAX_EXACT_PERMUTATIONS,
    resamples: int = PERMUTATION_RESAMPLES,
    seed: int = 0,
) -> PermutationTest:
    """Two-sided permutation test of H₀: x and y come from one distribution; statistic
    |mean(x) − mean(y)|.

    Pool the nₓ + n_y values; over every split into groups of nₓ and n_y (all
    C(nₓ+n_y, nₓ) of them when that is at most ``max_exact``: **exact**), p is the fraction of
    splits whose statistic is at least the observed one (the observed split counts). Beyond
    ``max_exact``, ``resamples`` random splits (``numpy.random.default_rng(seed)``) give
    p = (1 + hits) / (1 + resamples). Assumption-free, but coarse for few runs: with 3 + 3 runs
    the smallest possible p is 2/20 = 0.1.

    >>> permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    PermutationTest(p=0.1, exact=True, permutations=20, min_p=0.1)
    """
    a, b = _two_samples(x, y, 1, "the permutation test")
    pooled = np.concatenate([a, b])
    n, na = pooled.size, a.size
    total = pooled.sum()
    observed = abs(a.mean() - b.mean())
    # Tolerance for splits whose statistic equals the observed one up to rounding.
    tol = 1e-9 * max(1.0, float(np.max(np.abs(pooled))))
    splits = math.comb(n, na)
    # The two groups of a split swap roles in another split only when na == n - na, so the
    # smallest exact p is 2/splits then, 1/splits otherwise.
    min_p = (2.0 if 2 * na == n else 1.0) / splits
    if splits <= max_exact:
        idx = np.fromiter(
            itertools.chain.from_iterable(itertools.combinations(range(n), na)),
            dtype=np.intp,
            count=splits * na,
        ).reshape(splits, na)
        sums_a = pooled[idx].sum(axis=1)
        stats = np.abs(sums_a / na - (total - sums_a) / (n - na))
        hits = int(np.count_nonzero(stats >= observed - tol))
        return PermutationTest(p=hits / splits, exact=True, permutations=splits, min_p=min_p)
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((resamples, n)), axis=1)[:, :na]
    sums_a = pooled[order].sum(axis=1)
    stats = np.abs(sums_a / na - (total - sums_a) / (n - na))
    hits = int(np.count_nonzero(stats >= observed - tol))
    return PermutationTest(
        p=(1 + hits) / (1 + resamples),
        exact=False,
        permutations=resamples,
        min_p=1.0 / (1 + resamples),
    )
