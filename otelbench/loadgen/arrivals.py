"""Arrival processes for open-loop load (draft 4.2.3), registered by name.

An arrival process turns ``(rate, n, seed, **params)`` into a precomputed schedule: the send
offset, in seconds from the start of the run, of every request. The schedule is fixed before the
first request leaves, so no response can move a later send (draft 4.2.5), and the same seed (or
the same trace file) gives the same schedule on every machine.

========  ==============================================================  ====================
name      inter-arrival gaps                                              parameters
========  ==============================================================  ====================
poisson   i.i.d. exponential, mean ``1/rate`` (CV 1)                      ``rate``
uniform   constant ``1/rate``                                             ``rate``
bursty    i.i.d. gamma, mean ``1/rate``, coefficient of variation ``cv``  ``rate``, ``cv=3``
trace     replayed from a file of timestamps                              ``path``, ``time_scale``
========  ==============================================================  ====================

Example::

    offsets = ARRIVALS["poisson"](rate=4.0, n=1000, seed=42)   # seconds, non-decreasing
    offsets = arrival_schedule("bursty", rate=4.0, n=1000, seed=42, params={"cv": 2.0})
    arrival_parameters("bursty", rate=4.0, seed=1, params={})
    # ArrivalSpec: {"process": "bursty", "rate": 4.0, "seed": 1, "cv": 3.0, "gamma_shape": …}
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from otelbench.errors import ConfigError, registered
from otelbench.model.jsonvalue import JsonValue
from otelbench.model.report import ArrivalFacts, ArrivalSpec

__all__ = [
    "ARRIVALS",
    "ArrivalFacts",
    "ArrivalProcess",
    "ArrivalSpec",
    "arrival_needs_rate",
    "arrival_parameters",
    "arrival_schedule",
    "bursty",
    "load_trace",
    "poisson",
    "register_arrival",
    "trace",
    "uniform",
]

ArrivalProcess = Callable[..., npt.NDArray[np.float64]]
ARRIVALS: dict[str, ArrivalProcess] = {}


@dataclass(frozen=True)
class _Info:
    needs_rate: bool
    describe: Callable[[ArrivalSpec], ArrivalFacts]


_INFO: dict[str, _Info] = {}


def _no_description(arrival: ArrivalSpec) -> ArrivalFacts:
    return {}


def register_arrival(
    name: str,
    *,
    needs_rate: bool = True,
    describe: Callable[[ArrivalSpec], ArrivalFacts] = _no_description,
) -> Callable[[ArrivalProcess], ArrivalProcess]:
    """Register an arrival process under ``name``.

    ``needs_rate``: whether the process needs ``rate`` (a replayed trace does not);
    ``describe(arrival)`` adds facts for the run manifest (e.g. a trace file's digest) from the
    process's :class:`ArrivalSpec`, its parameters bound.
    """

    def wrap(fn: ArrivalProcess) -> ArrivalProcess:
        ARRIVALS[name] = fn
        _INFO[name] = _Info(needs_rate, describe)
        return fn

    return wrap


def _check(rate: float, n: int) -> None:
    if not rate > 0:
        raise ConfigError(f"arrival rate must be > 0 requests/s, got {rate}")
    if n < 0:
        raise ConfigError(f"request count must be >= 0, got {n}")


def _from_gaps(gaps: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.float64]:
    return np.concatenate([[0.0], np.cumsum(gaps)])[:n]


@register_arrival("poisson")
def poisson(*, rate: float, n: int, seed: int) -> npt.NDArray[np.float64]:
    """Poisson arrivals: i.i.d. exponential inter-arrival gaps with mean ``1/rate`` (draft 4.2.3).

    The first request is sent at offset 0; offset k is the sum of the first k gaps.
    """
    _check(rate, n)
    rng = np.random.default_rng(seed)
    return _from_gaps(rng.exponential(1.0 / rate, size=max(n - 1, 0)), n)


@register_arrival("uniform")
def uniform(*, rate: float, n: int, seed: int) -> npt.NDArray[np.float64]:
    """Uniform (constant-rate) arrivals: a request every ``1/rate`` seconds; ``seed`` is unused."""
    _check(rate, n)
    return np.arange(n, dtype=np.float64) / rate


def _describe_bursty(arrival: ArrivalSpec) -> ArrivalFacts:
    cv = float(arrival["cv"])
    return {"distribution": "gamma", "gamma_shape": 1.0 / cv**2}


@register_arrival("bursty", describe=_describe_bursty)
def bursty(*, rate: float, n: int, seed: int, cv: float = 3.0) -> npt.NDArray[np.float64]:
    """Bursty arrivals (draft 4.2.3's "bursty pattern"): i.i.d. gamma inter-arrival gaps with
    mean ``1/rate`` and coefficient of variation ``cv`` (standard deviation / mean of the gaps).

    Gamma shape ``k = 1/cv²``, scale ``1/(rate·k)``. ``cv = 1`` is exactly Poisson's exponential
    gap; ``cv > 1`` clusters requests into bursts of near-simultaneous sends separated by long
    quiet gaps (with the default ``cv = 3`` half the gaps are under 1 % of the mean), at the
    same long-run mean rate; ``cv < 1`` is more regular than Poisson, approaching uniform as
    ``cv → 0``. The first request is sent at offset 0.
    """
    _check(rate, n)
    if not (math.isfinite(cv) and cv > 0):
        raise ConfigError(f"bursty arrivals need a coefficient of variation cv > 0, got {cv}")
    shape = 1.0 / cv**2
    rng = np.random.default_rng(seed)
    return _from_gaps(rng.gamma(shape, 1.0 / (rate * shape), size=max(n - 1, 0)), n)


def load_trace(path: str | Path) -> npt.NDArray[np.float64]:
    """Read a trace of request send times (seconds), normalised to start at 0.

    The file holds either a JSON list of numbers or one number per line (blank lines and lines
    starting with ``#`` are skipped). Times may be absolute (e.g. Unix seconds) or relative; they
    must be finite, non-negative and non-decreasing. Every bad input raises one
    :class:`ConfigError` naming the file and the line (or list element).

    Example::

        offsets = load_trace("arrivals.txt")   # e.g. "1700000000.0\\n1700000000.25\\n" → [0, 0.25]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read arrival trace {p}: {exc}") from None
    values: list[tuple[str, object]] = []  # (where, raw value)
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        if not isinstance(data, list):
            raise ConfigError(f"{p}: expected a JSON list of timestamps (seconds)")
        values = [(f"{p}: element {i} of the JSON list", v) for i, v in enumerate(data)]
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            s = line.strip()
            if s and not s.startswith("#"):
                values.append((f"{p}:{lineno}", s))
    if not values:
        raise ConfigError(f"arrival trace {p} holds no timestamps")
    out = np.empty(len(values), dtype=np.float64)
    for i, (where, raw) in enumerate(values):
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise ConfigError(f"{where}: {raw!r} is not a number of seconds")
        try:
            t = float(raw)
        except ValueError:
            raise ConfigError(f"{where}: {raw!r} is not a number of seconds") from None
        if not math.isfinite(t):
            raise ConfigError(f"{where}: {raw!r} is not a finite number of seconds")
        if t < 0:
            raise ConfigError(f"{where}: negative timestamp {raw!r}")
        if i and t < out[i - 1]:
            raise ConfigError(
                f"{where}: timestamp {raw!r} is earlier than the one before it "
                f"({values[i - 1][0]}: {values[i - 1][1]!r}); timestamps must be non-decreasing"
            )
        out[i] = t
    out -= out[0]
    return out


def _describe_trace(arrival: ArrivalSpec) -> ArrivalFacts:
    p = Path(arrival["path"])
    offsets = load_trace(p)
    return {
        "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
        "timestamps_in_file": len(offsets),
        "file_duration_s": float(offsets[-1]),
    }


@register_arrival("trace", needs_rate=False, describe=_describe_trace)
def trace(
    *,
    rate: float | None = None,
    n: int,
    seed: int,
    path: str | Path,
    time_scale: float = 1.0,
) -> npt.NDArray[np.float64]:
    """Replay send times from a trace file (see :func:`load_trace`): the first ``n`` timestamps.

    Offsets are the file's times minus the first, multiplied by ``time_scale`` (0.5 replays
    twice as fast). Alternatively ``rate`` rescales the first ``n`` offsets to that mean rate,
    ``(n - 1) / last offset`` requests/s (not both). ``seed`` is unused. A file with fewer than
    ``n`` timestamps is a :class:`ConfigError`.
    """
    if n < 0:
        raise ConfigError(f"request count must be >= 0, got {n}")
    if not (math.isfinite(time_scale) and time_scale > 0):
        raise ConfigError(f"trace time_scale must be > 0, got {time_scale}")
    offsets = load_trace(path)
    if len(offsets) < n:
        raise ConfigError(
            f"arrival trace {path} holds {len(offsets)} timestamps; the run needs {n} "
            f"(ask for at most {len(offsets)} requests)"
        )
    offsets = offsets[:n]
    if rate is not None:
        if time_scale != 1.0:
            raise ConfigError("give a trace either a rate or a time_scale, not both")
        if not rate > 0:
            raise ConfigError(f"arrival rate must be > 0 requests/s, got {rate}")
        if n < 2 or offsets[-1] == 0:
            raise ConfigError(
                f"arrival trace {path}: cannot rescale {n} timestamps spanning 0 s to a rate"
            )
        factor = (n - 1) / rate / float(offsets[-1])
    else:
        factor = time_scale
    scaled: npt.NDArray[np.float64] = offsets * factor
    return scaled


def _known(name: str) -> _Info:
    return registered(_INFO, name, "arrival process")


def arrival_needs_rate(name: str) -> bool:
    """Whether the arrival process ``name`` needs a rate (``trace`` does not)."""
    return _known(name).needs_rate


def _bind(name: str, params: Mapping[str, JsonValue]) -> dict[str, object]:
    """``params`` checked against the process's signature, with its defaults filled in: the
    process's keyword arguments (a default is whatever the process declares, so the values are
    ``object``; the process checks them)."""
    sig = inspect.signature(ARRIVALS[name])
    reserved = {"rate", "n", "seed"}
    allowed = {k: p for k, p in sig.parameters.items() if k not in reserved}
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        known = ", ".join(allowed) or "none"
        raise ConfigError(
            f"arrival process {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {known}"
        )
    out: dict[str, object] = {}
    for key, p in allowed.items():
        if key in params:
            out[key] = params[key]
        elif p.default is inspect.Parameter.empty:
            raise ConfigError(f"arrival process {name!r} needs the parameter {key!r}")
        else:
            out[key] = p.default
    return out


def arrival_schedule(
    name: str,
    *,
    rate: float | None,
    n: int,
    seed: int,
    params: Mapping[str, JsonValue] | None = None,
) -> npt.NDArray[np.float64]:
    """The send offsets (s) of ``n`` requests from the registered process ``name``.

    ``params`` are the process's own parameters (``cv``, ``path`` …); unknown or missing ones
    raise :class:`ConfigError`.
    """
    info = _known(name)
    bound = _bind(name, params or {})
    if info.needs_rate and rate is None:
        raise ConfigError(f"open-loop {name} load needs --rate > 0")
    with_rate = {"rate": rate} if rate is not None or info.needs_rate else {}
    try:
        return ARRIVALS[name](n=n, seed=seed, **with_rate, **bound)
    except (TypeError, ValueError) as exc:  # e.g. cv="x": a bad value, not a bug
        raise ConfigError(f"bad parameters for arrival process {name!r}: {exc}") from None


def arrival_parameters(
    name: str, *, rate: float | None, seed: int, params: Mapping[str, JsonValue] | None = None
) -> ArrivalSpec:
    """Everything that defines the schedule, for the run manifest: the process, its rate and
    seed, every parameter with defaults filled in, and what the process adds (gamma shape, a
    trace file's SHA-256 …).

    Example::

        arrival_parameters("bursty", rate=4.0, seed=1, params={"cv": 2.0})
        # {"process": "bursty", "rate": 4.0, "seed": 1, "cv": 2.0,
        #  "distribution": "gamma", "gamma_shape": 0.25}
    """
    info = _known(name)
    bound = _bind(name, params or {})
    bound = {k: (str(v) if isinstance(v, Path) else v) for k, v in bound.items()}
    # The keys are the process's parameters, as its signature names them (ArrivalSpec's, for
    # the processes registered here); their values are the caller's, checked by the schedule.
    arrival = cast(ArrivalSpec, {"process": name, "rate": rate, "seed": seed, **bound})
    return {**arrival, **info.describe(arrival)}
