"""Workloads (draft 4.3, Appendix A), registered by name and generated from a seed.

A workload yields :class:`WorkloadRequest` items: the prompt as token ids (so the input length
is exact for the declared tokenizer whatever the server's detokenizer does), the ``max_tokens``
that controls the output length, and a request class. Every report carries the workload's name,
seed and full specification (:meth:`Workload.spec`), as draft 4.3 requires.

Registered workloads (``make_workload(name, **params)``)::

    synthetic-uniform   A.1  U{128..512} in, U{64..256} out (exactly A.1.4's pseudocode)
    synthetic-skewed    A.2  log-normal in (5.5, 1.0; 32..4096) and out (4.5, 1.2; 16..2048)
    conversation        A.3  synthetic stand-in matching A.3.2's quantiles (``synthetic: true``)
    sharegpt            A.3  conversations from a user-supplied ShareGPT JSON file + a tokenizer
    code-completion     A.4  10 repository contexts (512..1024), 80 % shared, Zipf s=1.5
    long-context        A.5  [document][question] at the target lengths, ``max_context_len`` cap
    mixed-classes       5.6  short and long classes (80/20), A.2 log-normal lengths within each
    file                4.3  a custom workload from a YAML or JSON file (workload_file.py)

Every workload but A.1 is a :class:`ParametricWorkload` or built like one: one
``random.Random(seed)`` stream drawn request after request (so the first ``n`` requests are the
same whatever ``n``), shared content (system prompt, repository contexts) drawn from a second
stream seeded with ``f"{seed}:shared"``, and every token id in ``[0, vocab_size)``.

Example::

    wl = make_workload("synthetic-uniform", seed=42, vocab_size=1024)
    first = wl.requests(10)[0]
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Final, Protocol

from otelbench.errors import ConfigError
from otelbench.model.report import (
    DatasetFilters,
    LengthSpec,
    RequestClassSpec,
    SourceFile,
    WorkloadContent,
    WorkloadSpec,
)

if TYPE_CHECKING:
    from otelbench.loadgen.tokenizers import Tokenizer

__all__ = [
    "A1_VOCAB_SIZE",
    "LENGTH_DISTRIBUTIONS",
    "WORKLOADS",
    "Empirical",
    "Fixed",
    "LengthDistribution",
    "LengthSpec",
    "LogNormal",
    "LongContext",
    "Normal",
    "ParametricWorkload",
    "PrefixSharing",
    "QuantileMatched",
    "RequestClass",
    "RequestClassSpec",
    "ShareGPTConversation",
    "SyntheticUniform",
    "SystemPrompt",
    "Uniform",
    "Workload",
    "WorkloadParameter",
    "WorkloadRequest",
    "WorkloadSpec",
    "check_workload_params",
    "code_completion",
    "conversation",
    "make_workload",
    "mixed_classes",
    "register_workload",
    "synthetic_skewed",
    "workload_from_file",
    "workload_parameters",
]


@dataclass(frozen=True, slots=True)
class WorkloadRequest:
    """One request of a workload: what to send, not how or when."""

    index: int
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float
    request_class: str = "default"
    shared_prefix_len: int = 0
    """How many leading ids are shared with other requests (system prompt, repository context)."""
    prefix_group: str | None = None
    """Which shared prefix those ids are (``"system"``, ``"repo-3"`` …); ``None`` if unshared."""


class Workload(Protocol):
    """A seeded, reproducible source of requests."""

    @property
    def name(self) -> str:
        """The registered workload name, as reported."""
        ...

    @property
    def seed(self) -> int:
        """The seed every request is generated from."""
        ...

    def requests(self, n: int) -> list[WorkloadRequest]:
        """The first ``n`` requests; the same seed always gives the same requests."""
        ...

    def spec(self) -> WorkloadSpec:
        """The full specification (draft 4.3.1 parameters) for the report."""
        ...


WORKLOADS: dict[str, Callable[..., Workload]] = {}


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError
    return value


def _float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError
    return float(value)


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def _none(value: object) -> None:
    if value is not None:
        raise TypeError


def _ints(value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise TypeError
    return tuple(_int(v) for v in value)


def _tokenizer(value: object) -> object:
    if not callable(getattr(value, "encode", None)):
        raise TypeError
    return value


_PARAMETER_TYPES: Mapping[str, Callable[[object], object]] = {
    "int": _int,
    "float": _float,
    "str": _str,
    "None": _none,
    "tuple[int, ...]": _ints,
    "Tokenizer": _tokenizer,
}
"""How a workload parameter's value is checked, by the type its factory declares (one part of an
``X | Y`` annotation); each returns the value (an int for a float as a float, a list of ints as a
tuple) or raises TypeError."""


@dataclass(frozen=True, slots=True)
class WorkloadParameter:
    """One parameter a registered workload accepts, as its factory declares it."""

    name: str
    type: str
    """The annotation as written, e.g. ``int | None``; each part a key of the checks above."""
    required: bool

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    def check(self, value: object) -> object:
        """``value`` as the factory takes it; TypeError if it has none of the declared types."""
        for part in self.type.split(" | "):
            try:
                return _PARAMETER_TYPES[part](value)
            except TypeError:
                continue
        raise TypeError(f"{self.name} must be {self.type}, got {value!r}")


def _declared_parameters(
    name: str, factory: Callable[..., Workload]
) -> tuple[WorkloadParameter, ...]:
    params = []
    for p in inspect.signature(factory).parameters.values():
        annotation = p.annotation if isinstance(p.annotation, str) else p.annotation.__name__
        # (with ``from __future__ import annotations`` every annotation is its source text)
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD and p.kind is not (
            inspect.Parameter.KEYWORD_ONLY
        ):
            raise TypeError(f"workload {name!r}: parameter {p.name} must be a named parameter")
        unknown = [t for t in annotation.split(" | ") if t not in _PARAMETER_TYPES]
        if unknown:
            raise TypeError(f"workload {name!r}: parameter {p.name} has unchecked types {unknown}")
        params.append(WorkloadParameter(p.name, annotation, p.default is inspect.Parameter.empty))
    return tuple(params)


_PARAMETERS: dict[str, tuple[WorkloadParameter, ...]] = {}


def register_workload(name: str) -> Callable[[Callable[..., Workload]], Callable[..., Workload]]:
    """Register a workload factory under ``name``. Every parameter of the factory is a named one
    whose annotation is made of checkable types (``int``, ``float``, ``str``, ``None``,
    ``tuple[int, ...]``, ``Tokenizer``), so a bad value is refused before the factory runs."""

    def wrap(factory: Callable[..., Workload]) -> Callable[..., Workload]:
        _PARAMETERS[name] = _declared_parameters(name, factory)
        WORKLOADS[name] = factory
        return factory

    return wrap


def workload_parameters(name: str) -> tuple[WorkloadParameter, ...]:
    """The parameters the workload registered as ``name`` accepts, in its factory's order;
    an unknown name raises one clear ConfigError.

    >>> [str(p) for p in workload_parameters("mixed-classes")][-1]
    'max_context_len (int | None)'
    """
    try:
        return _PARAMETERS[name]
    except KeyError:
        known = ", ".join(sorted(WORKLOADS))
        raise ConfigError(f"unknown workload {name!r}; known workloads: {known}") from None


def check_workload_params(
    name: str, params: Mapping[str, object], *, complete: bool = True
) -> dict[str, object]:
    """``params`` checked against the parameters of workload ``name`` (and converted: ints to
    floats, lists to tuples where declared): the factory's keyword arguments. Values are
    ``object``: JSON from an option or a file, or a :class:`Tokenizer` the run hands over; each
    is narrowed by its declared type's check. An unknown name, a value of the wrong type and, with
    ``complete``, a missing required parameter raise one ConfigError that lists every parameter
    the workload accepts with its type.

    >>> check_workload_params("synthetic-uniform", {"seed": 1, "vocab_size": 1024})
    {'seed': 1, 'vocab_size': 1024}
    """
    declared = {p.name: p for p in workload_parameters(name)}
    accepted = ", ".join(map(str, declared.values()))
    out: dict[str, object] = {}
    for key, value in params.items():
        if key not in declared:
            raise ConfigError(f"workload {name!r} has no parameter {key!r}; it accepts: {accepted}")
        try:
            out[key] = declared[key].check(value)
        except TypeError as err:
            raise ConfigError(f"workload {name!r}: {err}; it accepts: {accepted}") from None
    missing = [str(p) for p in declared.values() if p.required and p.name not in out]
    if complete and missing:
        raise ConfigError(f"workload {name!r} needs {', '.join(missing)}; it accepts: {accepted}")
    return out


def make_workload(name: str, **params: object) -> Workload:
    """Build the workload registered as ``name``; an unknown name or a bad parameter raises one
    clear ConfigError (:func:`check_workload_params`)."""
    checked = check_workload_params(name, params)
    return WORKLOADS[name](**checked)


A1_VOCAB_SIZE = 100256
"""Draft A.1.4 draws ids from ``randint(0, 100255)`` (a cl100k-sized vocabulary)."""


@register_workload("synthetic-uniform")
@dataclass(frozen=True)
class SyntheticUniform:
    """Synthetic-Uniform, draft Appendix A.1: controlled baseline with minimal variance.

    Input length ~ U{128..512} tokens of random ids from the vocabulary, output length
    ~ U{64..256} tokens controlled by ``max_tokens``, temperature 0.0, no system prompt, no prefix
    sharing, no stop sequences. Generated per A.1.4 with one ``random.Random(seed)`` stream,
    drawing input length, output length, then the input ids, request after request; request
    ``i`` is therefore the same as the i-th request of A.1.4's pseudocode for the same seed and
    vocabulary. ``vocab_size`` defaults to A.1.4's 100,256; a smaller tokenizer (the tiny test
    model has 1,024) must set it, and the report lists that as a deviation.
    """

    seed: int = 42
    vocab_size: int = A1_VOCAB_SIZE
    input_min: int = 128
    input_max: int = 512
    output_min: int = 64
    output_max: int = 256
    name: str = field(default="synthetic-uniform", init=False)

    def __post_init__(self) -> None:
        if self.vocab_size < 2:
            raise ConfigError(f"vocab_size must be >= 2, got {self.vocab_size}")
        if not 0 < self.input_min <= self.input_max:
            raise ConfigError("input lengths must satisfy 0 < input_min <= input_max")
        if not 0 < self.output_min <= self.output_max:
            raise ConfigError("output lengths must satisfy 0 < output_min <= output_max")

    def requests(self, n: int) -> list[WorkloadRequest]:
        rng = random.Random(self.seed)
        out = []
        for i in range(n):
            input_len = rng.randint(self.input_min, self.input_max)
            output_len = rng.randint(self.output_min, self.output_max)
            ids = [rng.randint(0, self.vocab_size - 1) for _ in range(input_len)]
            out.append(WorkloadRequest(i, ids, output_len, 0.0))
        return out

    def spec(self) -> WorkloadSpec:
        return {
            "name": self.name,
            "draft_section": "A.1",
            "seed": self.seed,
            "input": {
                "distribution": "uniform",
                "min": self.input_min,
                "max": self.input_max,
                "mean": (self.input_min + self.input_max) / 2,
                "unit": "tokens",
                "content": "random token ids from the vocabulary",
                "vocab_size": self.vocab_size,
            },
            "output": {
                "distribution": "uniform",
                "min": self.output_min,
                "max": self.output_max,
                "mean": (self.output_min + self.output_max) / 2,
                "unit": "tokens",
                "control": "max_tokens",
            },
            "system_prompt": None,
            "prefix_sharing": None,
            "temperature": 0.0,
            "stop_sequences": None,
        }


# --- length distributions (draft 4.3.1) -------------------------------------------------------


class LengthDistribution(Protocol):
    """A distribution of lengths in tokens, sampled from a caller's ``random.Random``."""

    def sample(self, rng: random.Random) -> int:
        """One length, always within the distribution's floor and cap."""
        ...

    def describe(self) -> LengthSpec:
        """The 4.3.1 description: distribution type, parameters, unit."""
        ...


def _check_bounds(what: str, lo: int, hi: int) -> None:
    if not 0 < lo <= hi:
        raise ConfigError(f"{what}: need 0 < min <= max, got min={lo}, max={hi}")


@dataclass(frozen=True, slots=True)
class Fixed:
    """Always ``value`` tokens."""

    value: int

    def __post_init__(self) -> None:
        if self.value < 1:
            raise ConfigError(f"value must be >= 1, got {self.value}")

    def sample(self, rng: random.Random) -> int:
        return self.value

    def describe(self) -> LengthSpec:
        return {"distribution": "fixed", "value": self.value, "unit": "tokens"}


@dataclass(frozen=True, slots=True)
class Uniform:
    """Uniform over the integers ``min..max`` inclusive (``rng.randint``)."""

    min: int
    max: int

    def __post_init__(self) -> None:
        _check_bounds("uniform", self.min, self.max)

    def sample(self, rng: random.Random) -> int:
        return rng.randint(self.min, self.max)

    def describe(self) -> LengthSpec:
        return {
            "distribution": "uniform",
            "min": self.min,
            "max": self.max,
            "mean": (self.min + self.max) / 2,
            "unit": "tokens",
        }


@dataclass(frozen=True, slots=True)
class Normal:
    """``round(N(mean, std))`` clipped to ``min..max`` (floor and cap, not resampling)."""

    mean: float
    std: float
    min: int = 1
    max: int = 1_000_000

    def __post_init__(self) -> None:
        if not self.std > 0:
            raise ConfigError(f"std must be > 0, got {self.std}")
        _check_bounds("normal", self.min, self.max)

    def sample(self, rng: random.Random) -> int:
        return min(self.max, max(self.min, round(rng.gauss(self.mean, self.std))))

    def describe(self) -> LengthSpec:
        return {
            "distribution": "normal",
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "unit": "tokens",
            "bounds": "clipped (floor and cap)",
        }


@dataclass(frozen=True, slots=True)
class LogNormal:
    """``round(exp(N(mu, sigma)))`` clipped to ``min..max`` (the draft's floor and cap).

    Median ``exp(mu)``; mean ``exp(mu + sigma²/2)`` before clipping.
    """

    mu: float
    sigma: float
    min: int = 1
    max: int = 1_000_000

    def __post_init__(self) -> None:
        if not self.sigma > 0:
            raise ConfigError(f"sigma must be > 0, got {self.sigma}")
        _check_bounds("lognormal", self.min, self.max)

    def sample(self, rng: random.Random) -> int:
        return min(self.max, max(self.min, round(rng.lognormvariate(self.mu, self.sigma))))

    def describe(self) -> LengthSpec:
        return {
            "distribution": "lognormal",
            "mu": self.mu,
            "sigma": self.sigma,
            "min": self.min,
            "max": self.max,
            "median_unclipped": round(math.exp(self.mu), 1),
            "mean_unclipped": round(math.exp(self.mu + self.sigma**2 / 2), 1),
            "unit": "tokens",
            "bounds": "clipped (floor and cap)",
        }


@dataclass(frozen=True, slots=True)
class TruncatedLogNormal(LogNormal):
    """``exp(N(mu, sigma))`` conditioned on ``min..max``: the log-normal's shape within a range
    (inverse-CDF sampling between the range's quantiles, then rounded), not clipped to it.

    Used where the draft asks for Synthetic-Skewed's log-normals (A.2) inside given length
    ranges (5.6.2's request classes).
    """

    def _quantile(self, tokens: float) -> float:
        return NormalDist().cdf((math.log(tokens) - self.mu) / self.sigma)

    def sample(self, rng: random.Random) -> int:
        lo = self._quantile(self.min - 0.5 if self.min > 1 else 0.5)
        hi = self._quantile(self.max + 0.5)
        u = min(max(rng.uniform(lo, hi), 1e-12), 1 - 1e-12)
        x = math.exp(self.mu + self.sigma * NormalDist().inv_cdf(u))
        return min(self.max, max(self.min, round(x)))

    def describe(self) -> LengthSpec:
        return {
            **LogNormal.describe(self),
            "bounds": "truncated (the log-normal conditioned on min..max)",
        }


@dataclass(frozen=True, slots=True)
class Empirical:
    """One of ``values``, with relative ``weights`` (equal if omitted): 4.3.1's histogram."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not self.values or any(v < 1 for v in self.values):
            raise ConfigError("values must be a non-empty list of lengths >= 1")
        if self.weights is not None and (
            len(self.weights) != len(self.values)
            or any(w < 0 for w in self.weights)
            or not sum(self.weights) > 0
        ):
            raise ConfigError("weights must be one non-negative number per value, not all 0")

    def sample(self, rng: random.Random) -> int:
        if self.weights is None:
            return self.values[int(rng.random() * len(self.values))]
        return rng.choices(self.values, weights=self.weights)[0]

    def describe(self) -> LengthSpec:
        return {
            "distribution": "empirical",
            "values": list(self.values),
            "weights": None if self.weights is None else list(self.weights),
            "unit": "tokens",
        }


@dataclass(frozen=True, slots=True)
class QuantileMatched:
    """A piecewise log-normal whose quantiles are exactly the given ones.

    ``z ~ N(0, 1)`` is drawn and ``ln(length)`` is the piecewise-linear interpolation, in ``z``,
    through the points ``(Φ⁻¹(p), ln q_p)``; beyond the first and last point the end segments'
    slopes carry on. So ``P(length <= q_p) = p`` at every given quantile (up to rounding), and
    between them the distribution is log-normal. Clipped to ``min..max``.
    """

    quantiles: tuple[tuple[float, float], ...]
    """``(p, q_p)`` pairs, ``p`` strictly increasing in (0, 1); at least two."""
    min: int = 1
    max: int = 1_000_000

    def __post_init__(self) -> None:
        ps = [p for p, _ in self.quantiles]
        qs = [q for _, q in self.quantiles]
        if len(ps) < 2 or any(not 0 < p < 1 for p in ps) or ps != sorted(set(ps)):
            raise ConfigError("quantiles need >= 2 levels strictly increasing in (0, 1)")
        if any(q <= 0 for q in qs) or qs != sorted(qs):
            raise ConfigError("quantile values must be positive and non-decreasing")
        _check_bounds("quantiles", self.min, self.max)

    def sample(self, rng: random.Random) -> int:
        z = rng.gauss(0.0, 1.0)
        pts = [(NormalDist().inv_cdf(p), math.log(q)) for p, q in self.quantiles]
        if z <= pts[0][0]:
            (z0, y0), (z1, y1) = pts[0], pts[1]
        elif z >= pts[-1][0]:
            (z0, y0), (z1, y1) = pts[-2], pts[-1]
        else:
            k = next(i for i in range(1, len(pts)) if z <= pts[i][0])
            (z0, y0), (z1, y1) = pts[k - 1], pts[k]
        y = y0 + (z - z0) * (y1 - y0) / (z1 - z0)
        return min(self.max, max(self.min, round(math.exp(y))))

    def describe(self) -> LengthSpec:
        return {
            "distribution": "quantile-matched piecewise log-normal",
            "quantiles": {f"p{round(p * 100, 3):g}": q for p, q in self.quantiles},
            "min": self.min,
            "max": self.max,
            "unit": "tokens",
            "bounds": "clipped (floor and cap)",
        }


LENGTH_DISTRIBUTIONS: dict[str, type[Fixed | Uniform | Normal | LogNormal | Empirical]] = {
    "empirical": Empirical,
    "fixed": Fixed,
    "lognormal": LogNormal,
    "normal": Normal,
    "uniform": Uniform,
}
"""The distribution types a workload file may name (draft 4.3.1), by name."""


# --- the parametric workload engine -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestClass:
    """A class of requests (draft 5.6) with its share of the mix and its length distributions."""

    name: str
    ratio: float
    input: LengthDistribution
    output: LengthDistribution
    temperature: float = 0.0

    def describe(self) -> RequestClassSpec:
        return {
            "name": self.name,
            "ratio": self.ratio,
            "input": self.input.describe(),
            "output": {**self.output.describe(), "control": "max_tokens"},
            "temperature": self.temperature,
        }


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """One system prompt of ``tokens`` ids, prepended to a ``share`` of the requests."""

    tokens: int
    share: float = 1.0

    def __post_init__(self) -> None:
        if self.tokens < 1:
            raise ConfigError(f"system prompt tokens must be >= 1, got {self.tokens}")
        if not 0.0 <= self.share <= 1.0:
            raise ConfigError(f"system prompt share must be in [0, 1], got {self.share}")


@dataclass(frozen=True, slots=True)
class PrefixSharing:
    """``prefixes`` shared contexts; a ``ratio`` of requests start with one of them.

    A request shares with probability ``ratio``; a sharing request takes context of rank
    ``k`` (1 = most popular) with probability ``k^-zipf_s / Σ_{j=1..prefixes} j^-zipf_s``
    (a Zipf law truncated to the ``prefixes`` contexts; ``zipf_s = 0`` is uniform). A request
    that does not share gets a fresh context drawn from the same ``length`` distribution, so
    sharing changes what a prefix cache can reuse and not the input lengths.
    """

    prefixes: int
    length: LengthDistribution
    ratio: float
    zipf_s: float = 0.0

    def __post_init__(self) -> None:
        if self.prefixes < 1:
            raise ConfigError(f"prefixes must be >= 1, got {self.prefixes}")
        if not 0.0 <= self.ratio <= 1.0:
            raise ConfigError(f"prefix sharing ratio must be in [0, 1], got {self.ratio}")
        if self.zipf_s < 0:
            raise ConfigError(f"zipf_s must be >= 0, got {self.zipf_s}")

    def weights(self) -> list[float]:
        """The probability of each rank, 1..prefixes, given that a request shares."""
        raw = [k ** (-self.zipf_s) for k in range(1, self.prefixes + 1)]
        total = sum(raw)
        return [w / total for w in raw]


def _ids(rng: random.Random, vocab_size: int, n: int) -> list[int]:
    return [int(rng.random() * vocab_size) for _ in range(n)]


@dataclass(frozen=True)
class ParametricWorkload:
    """A workload described entirely by draft 4.3.1's parameters.

    Per request, from one ``random.Random(seed)`` stream and in this order: the class (only
    if there are several; ``rng.choices`` over the ratios), the input length, the output
    length (``max_tokens``), whether the system prompt is prepended (only if there is one and
    its share is < 1), whether the request shares a context and which (only with prefix
    sharing), a fresh context's length if it does not share, then the ids. The prompt is
    ``[system prompt][context][body]``: the input distribution gives the body's length, and
    the system prompt and context are counted separately (spec ``"counting"``).
    """

    name: str
    seed: int
    vocab_size: int
    classes: tuple[RequestClass, ...]
    draft_section: str = "4.3.1"
    system_prompt: SystemPrompt | None = None
    prefix_sharing: PrefixSharing | None = None
    content: WorkloadContent = field(
        default_factory=lambda: WorkloadContent(domain=None, language=None)
    )
    notes: tuple[str, ...] = ()
    deviations: tuple[str, ...] = ()
    synthetic: bool = True
    source_file: SourceFile | None = None
    """A custom workload's file (draft 4.3), which :meth:`spec` names with ``description``."""
    description: str | None = None
    shared_seed: int | None = None
    """Seed of the shared parts (system prompt, shared contexts); None: ``seed``. Two workloads
    with the same ``shared_seed`` and different ``seed`` share prefixes but not bodies (a warm
    prefix cache without whole-prompt repeats, draft 5.7)."""

    def __post_init__(self) -> None:
        if self.vocab_size < 2:
            raise ConfigError(f"vocab_size must be >= 2, got {self.vocab_size}")
        if not self.classes:
            raise ConfigError("a workload needs at least one request class")
        if any(c.ratio < 0 for c in self.classes) or not sum(c.ratio for c in self.classes) > 0:
            raise ConfigError("class ratios must be >= 0 and not all 0")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ConfigError(f"class names must be unique, got {names}")

    def _shared(self) -> tuple[list[int], list[list[int]]]:
        shared_seed = self.seed if self.shared_seed is None else self.shared_seed
        rng = random.Random(f"{shared_seed}:shared")
        system = _ids(rng, self.vocab_size, self.system_prompt.tokens) if self.system_prompt else []
        contexts = []
        if self.prefix_sharing is not None:
            for _ in range(self.prefix_sharing.prefixes):
                length = self.prefix_sharing.length.sample(rng)
                contexts.append(_ids(rng, self.vocab_size, length))
        return system, contexts

    def requests(self, n: int) -> list[WorkloadRequest]:
        rng = random.Random(self.seed)
        system, contexts = self._shared()
        ratios = [c.ratio for c in self.classes]
        ps = self.prefix_sharing
        ranks = list(range(len(contexts)))
        rank_weights = ps.weights() if ps is not None else []
        out = []
        for i in range(n):
            cls = self.classes[0]
            if len(self.classes) > 1:
                cls = rng.choices(self.classes, weights=ratios)[0]
            input_len = cls.input.sample(rng)
            output_len = cls.output.sample(rng)
            prefix: list[int] = []
            group = None
            if self.system_prompt is not None and (
                self.system_prompt.share >= 1.0 or rng.random() < self.system_prompt.share
            ):
                prefix, group = list(system), "system"
            context: list[int] = []
            if ps is not None:
                if rng.random() < ps.ratio:
                    k = rng.choices(ranks, weights=rank_weights)[0]
                    prefix += contexts[k]
                    group = f"{group}+context-{k + 1}" if group else f"context-{k + 1}"
                else:
                    context = _ids(rng, self.vocab_size, ps.length.sample(rng))
            body = _ids(rng, self.vocab_size, input_len)
            out.append(
                WorkloadRequest(
                    index=i,
                    prompt_token_ids=prefix + context + body,
                    max_tokens=output_len,
                    temperature=cls.temperature,
                    request_class=cls.name,
                    shared_prefix_len=len(prefix),
                    prefix_group=group,
                )
            )
        return out

    def spec(self) -> WorkloadSpec:
        first = self.classes[0]
        single = len(self.classes) == 1
        ps = self.prefix_sharing
        sp = self.system_prompt
        spec: WorkloadSpec = {
            "name": self.name,
            "draft_section": self.draft_section,
            "seed": self.seed,
        }
        if self.shared_seed is not None:
            spec["shared_seed"] = self.shared_seed
        per_class: LengthSpec = {"distribution": "per class"}
        spec.update(
            {
                "synthetic": self.synthetic,
                "input": {
                    **(first.input.describe() if single else per_class),
                    "content": "random token ids from the vocabulary",
                    "vocab_size": self.vocab_size,
                },
                "output": {
                    **(first.output.describe() if single else per_class),
                    "control": "max_tokens",
                },
                "request_classes": [c.describe() for c in self.classes],
                "content": {**self.content},
                "system_prompt": None
                if sp is None
                else {"tokens": sp.tokens, "share": sp.share, "shared_prefix": True},
                "prefix_sharing": None
                if ps is None
                else {
                    "ratio": ps.ratio,
                    "prefixes": ps.prefixes,
                    "length": ps.length.describe(),
                    "selection": f"truncated Zipf over ranks 1..{ps.prefixes}, s={ps.zipf_s}",
                    "rank_probabilities": [round(w, 6) for w in ps.weights()],
                    "unshared_requests": "a fresh context of the same length distribution",
                },
                "counting": (
                    "input distribution = the request body; system prompt and shared context "
                    "are prepended and counted separately (draft 4.4.3); no BOS/EOS added"
                ),
                "temperature": first.temperature if single else "per class",
                "stop_sequences": None,
                "notes": list(self.notes),
                "deviations": list(self.deviations),
            }
        )
        if self.source_file is not None:
            spec.update({"source_file": {**self.source_file}, "description": self.description})
        return spec


# --- Appendix A and 5.6 workloads -------------------------------------------------------------


@register_workload("synthetic-skewed")
def synthetic_skewed(
    seed: int = 42,
    vocab_size: int = A1_VOCAB_SIZE,
    input_mu: float = 5.5,
    input_sigma: float = 1.0,
    input_min: int = 32,
    input_max: int = 4096,
    output_mu: float = 4.5,
    output_sigma: float = 1.2,
    output_min: int = 16,
    output_max: int = 2048,
    temperature: float = 0.0,
) -> ParametricWorkload:
    """Synthetic-Skewed, draft A.2: log-normal input and output lengths with floors and caps.

    Input ``round(lognormvariate(5.5, 1.0))`` clipped to 32..4096 (median ≈ 245, mean ≈ 405);
    output ``round(lognormvariate(4.5, 1.2))`` clipped to 16..2048; random ids, no system
    prompt, no prefix sharing. The draft gives no temperature for A.2: 0.0 as in A.1.

    Example::

        wl = make_workload("synthetic-skewed", seed=1, vocab_size=1024)
    """
    return ParametricWorkload(
        name="synthetic-skewed",
        seed=seed,
        vocab_size=vocab_size,
        draft_section="A.2",
        classes=(
            RequestClass(
                "default",
                1.0,
                LogNormal(input_mu, input_sigma, input_min, input_max),
                LogNormal(output_mu, output_sigma, output_min, output_max),
                temperature,
            ),
        ),
        content={"domain": "none (random token sequences)", "language": None},
        notes=("temperature not given by A.2; 0.0 as in A.1.3",),
    )


A32_INPUT_QUANTILES = ((0.5, 156.0), (0.95, 892.0), (0.99, 2134.0))
"""Draft A.3.2's reference input-length quantiles (P50, P95, P99), tokens."""
A32_OUTPUT_QUANTILES = ((0.5, 234.0), (0.95, 789.0), (0.99, 1567.0))
"""Draft A.3.2's reference output-length quantiles (P50, P95, P99), tokens."""


@register_workload("conversation")
def conversation(
    seed: int = 42,
    vocab_size: int = A1_VOCAB_SIZE,
    system_prompt_tokens: int = 200,
    system_prompt_share: float = 0.5,
    input_min: int = 4,
    input_max: int = 4096,
    output_min: int = 4,
    output_max: int = 2048,
    temperature: float = 0.0,
    shared_seed: int | None = None,
) -> ParametricWorkload:
    """Conversation, draft A.3, as a SYNTHETIC stand-in for ShareGPT (``synthetic: true``).

    Input and output lengths are drawn independently from :class:`QuantileMatched`
    distributions through A.3.2's P50/P95/P99, clipped to 4..4096 and 4..2048 (the clips are
    ours: A.3.2 gives no min or max). 50 % of requests start with one shared 200-token system
    prompt (4.3.2.3), which is counted apart from the A.3.2 input length. Content is random
    ids, not natural language; use ``sharegpt`` with a real dataset file for A.3 itself.

    Example::

        wl = make_workload("conversation", seed=1, vocab_size=1024)
    """
    return ParametricWorkload(
        name="conversation",
        seed=seed,
        vocab_size=vocab_size,
        draft_section="A.3",
        classes=(
            RequestClass(
                "default",
                1.0,
                QuantileMatched(A32_INPUT_QUANTILES, input_min, input_max),
                QuantileMatched(A32_OUTPUT_QUANTILES, output_min, output_max),
                temperature,
            ),
        ),
        system_prompt=SystemPrompt(system_prompt_tokens, system_prompt_share),
        shared_seed=shared_seed,
        content={"domain": "conversation (synthetic stand-in)", "language": None},
        notes=(
            "SYNTHETIC stand-in for ShareGPT (vicuna_cleaned, 2023-04-12): lengths match A.3.2's "
            "P50/P95/P99 by construction, content is random token ids, and input and output "
            "lengths are independent (ShareGPT's are not); use workload 'sharegpt' with the "
            "dataset file for the real A.3 workload",
            "A.3.2 input quantiles apply to the conversation part; the system prompt is extra",
        ),
        deviations=("synthetic stand-in instead of the ShareGPT dataset (A.3.1)",),
    )


@register_workload("code-completion")
def code_completion(
    seed: int = 42,
    vocab_size: int = A1_VOCAB_SIZE,
    contexts: int = 10,
    context_min: int = 512,
    context_max: int = 1024,
    share_ratio: float = 0.8,
    zipf_s: float = 1.5,
    body_mu: float = 5.0,
    body_sigma: float = 0.7,
    body_min: int = 16,
    body_max: int = 1024,
    output_mu: float = 4.0,
    output_sigma: float = 1.5,
    output_min: int = 16,
    output_max: int = 2048,
    temperature: float = 0.0,
    shared_seed: int | None = None,
) -> ParametricWorkload:
    """Code Completion, draft A.4: shared repository contexts, Zipf-distributed.

    10 repository contexts of U{512..1024} ids each. Each request shares one with probability
    0.8; a sharing request takes the context of rank k with probability ∝ k^-1.5 over ranks
    1..10 (A.4.2's "80 % share one of these prefixes; Zipf with s=1.5"); the other 20 % get a
    fresh context of the same length law. After the context comes the completion site, of
    log-normal(5.0, 0.7) length clipped to 16..1024: the draft's "empirical from code
    completion datasets" is not available offline, so this is our stand-in. Output
    log-normal(4.0, 1.5) (4.3.2.4); A.4 gives no floor or cap, so A.2.2's 16..2048 are used.

    Example::

        wl = make_workload("code-completion", seed=1, vocab_size=1024)
    """
    return ParametricWorkload(
        name="code-completion",
        seed=seed,
        vocab_size=vocab_size,
        draft_section="A.4",
        classes=(
            RequestClass(
                "default",
                1.0,
                LogNormal(body_mu, body_sigma, body_min, body_max),
                LogNormal(output_mu, output_sigma, output_min, output_max),
                temperature,
            ),
        ),
        prefix_sharing=PrefixSharing(
            contexts, Uniform(context_min, context_max), share_ratio, zipf_s
        ),
        shared_seed=shared_seed,
        content={"domain": "code (synthetic stand-in)", "language": None},
        notes=(
            "input = [repository context][completion site]; the input distribution above is "
            "the completion site's, the context's is under prefix_sharing.length",
            "The Stack completions are not available offline: content is random token ids and "
            "the completion-site length law is ours",
            "output floor/cap 16..2048 borrowed from A.2.2 (A.4 gives none)",
        ),
        deviations=("synthetic stand-in instead of The Stack (A.4.1)",),
    )


@register_workload("mixed-classes")
def mixed_classes(
    seed: int = 42,
    vocab_size: int = A1_VOCAB_SIZE,
    short_ratio: float = 0.8,
    temperature: float = 0.0,
    lengths: str = "skewed",
    max_context_len: int | None = None,
) -> ParametricWorkload:
    """Two request classes for scheduling fairness, draft 5.6.2 (80 % short, 20 % long).

    ``short``: input 64..256, output 32..128 tokens; ``long``: input 1024..4096, output
    256..1024. 5.6.2 REQUIRES Synthetic-Skewed and defines these classes: with ``lengths``
    ``skewed`` (the default) each class draws its lengths from Synthetic-Skewed's log-normals
    (A.2: input LN(5.5, 1.0), output LN(4.5, 1.2)) conditioned on the class's ranges
    (:class:`TruncatedLogNormal`), and the spec names A.2; ``uniform`` draws them uniformly over
    the ranges (a deviation from 5.6.2's workload). Each request's class is drawn independently
    with the mix ratio and recorded in :attr:`WorkloadRequest.request_class`.
    ``max_context_len`` fits both classes into a smaller context window (a deviation the spec
    lists): each class's output is capped at a quarter of the window and its input at the rest,
    so the long class stays the longer one.

    Example::

        wl = make_workload("mixed-classes", seed=1, vocab_size=1024, short_ratio=0.8)
    """
    if not 0.0 <= short_ratio <= 1.0:
        raise ConfigError(f"short_ratio must be in [0, 1], got {short_ratio}")
    if max_context_len is not None and max_context_len < 16:
        raise ConfigError(f"max_context_len must be >= 16, got {max_context_len}")
    ranges = {"short": ((64, 256), (32, 128)), "long": ((1024, 4096), (256, 1024))}
    deviations = []
    if max_context_len is not None:
        for name, ((in_lo, in_hi), (out_lo, out_hi)) in list(ranges.items()):
            o_hi = min(out_hi, max_context_len // 4)
            i_hi = min(in_hi, max_context_len - o_hi)
            fitted = ((min(in_lo, i_hi), i_hi), (min(out_lo, o_hi), o_hi))
            if fitted != ranges[name]:
                ranges[name] = fitted
                deviations.append(
                    f"{name} class fitted to a {max_context_len}-token context window: input "
                    f"{fitted[0][0]}..{fitted[0][1]}, output {fitted[1][0]}..{fitted[1][1]} "
                    f"tokens (5.6.2: input {in_lo}..{in_hi}, output {out_lo}..{out_hi})"
                )
    if lengths not in MIXED_CLASS_LENGTHS:
        raise ConfigError(
            f"lengths must be one of {', '.join(MIXED_CLASS_LENGTHS)}, got {lengths!r}"
        )
    if lengths == "uniform":
        deviations.append(
            "class lengths uniform over 5.6.2's ranges, not Synthetic-Skewed (4.3.2.2, A.2), "
            "which 5.6.2 REQUIRES"
        )

    def length(mu_sigma: tuple[float, float], bounds: tuple[int, int]) -> LengthDistribution:
        return Uniform(*bounds) if lengths == "uniform" else TruncatedLogNormal(*mu_sigma, *bounds)

    (s_in, s_out), (l_in, l_out) = ranges["short"], ranges["long"]
    a2_in, a2_out = (5.5, 1.0), (4.5, 1.2)
    return ParametricWorkload(
        name="mixed-classes",
        seed=seed,
        vocab_size=vocab_size,
        draft_section="A.2" if lengths == "skewed" else "5.6.2",
        classes=(
            RequestClass(
                "short", short_ratio, length(a2_in, s_in), length(a2_out, s_out), temperature
            ),
            RequestClass(
                "long", 1.0 - short_ratio, length(a2_in, l_in), length(a2_out, l_out), temperature
            ),
        ),
        content={"domain": "none (random token sequences)", "language": None},
        notes=(
            "Synthetic-Skewed's log-normals (A.2) within each of 5.6.2's class ranges"
            if lengths == "skewed"
            else "class lengths are uniform over 5.6.2's ranges",
        ),
        deviations=tuple(deviations),
    )


MIXED_CLASS_LENGTHS: Final = ("skewed", "uniform")
"""How ``mixed-classes`` draws lengths within its classes' ranges."""


A5_TARGET_LENGTHS = (8192, 16384, 32768, 65536, 131072)
"""Draft A.5.1's target input lengths, tokens."""


@register_workload("long-context")
@dataclass(frozen=True)
class LongContext:
    """Long Context, draft A.5: ``[document][question]`` at target lengths, 256 tokens out.

    The target length is uniform over A.5.1's ``[8192, 16384, 32768, 65536, 131072]``
    (``rng.choice``); the document is ``target - 100`` random ids, the question one fixed
    sequence of 100 ids (the same for every request, drawn from ``f"{seed}:question"``);
    ``max_tokens = 256``. ``max_context_len`` (the server's context window, e.g. 2048 for the
    tiny test model) caps each input at ``max_context_len - output_tokens`` so that prompt and
    output fit; every capped target is listed in ``spec()["deviations"]``. Note: 4.3.2.5 says
    Uniform(8192, 32768) but A.5.1, the full specification, lists the five targets; we follow
    A.5.1 and ``target_lengths`` can be set to other values.

    Example::

        wl = make_workload("long-context", seed=1, vocab_size=1024, max_context_len=2048)
    """

    seed: int = 42
    vocab_size: int = A1_VOCAB_SIZE
    target_lengths: tuple[int, ...] = A5_TARGET_LENGTHS
    question_tokens: int = 100
    output_tokens: int = 256
    max_context_len: int | None = None
    temperature: float = 0.0
    name: str = field(default="long-context", init=False)

    def __post_init__(self) -> None:
        if self.vocab_size < 2:
            raise ConfigError(f"vocab_size must be >= 2, got {self.vocab_size}")
        if not self.target_lengths or min(self.target_lengths) <= self.question_tokens:
            raise ConfigError("target_lengths must be non-empty and each > question_tokens")
        if self.output_tokens < 1 or self.question_tokens < 1:
            raise ConfigError("output_tokens and question_tokens must be >= 1")
        if self.max_context_len is not None and self.input_cap <= self.question_tokens:
            raise ConfigError(
                f"max_context_len {self.max_context_len} leaves no room for a document: it must "
                f"exceed output_tokens + question_tokens = "
                f"{self.output_tokens + self.question_tokens}"
            )

    @property
    def input_cap(self) -> int:
        """The longest input sent: ``max_context_len - output_tokens`` (or no cap)."""
        if self.max_context_len is None:
            return max(self.target_lengths)
        return self.max_context_len - self.output_tokens

    def requests(self, n: int) -> list[WorkloadRequest]:
        rng = random.Random(self.seed)
        question = _ids(
            random.Random(f"{self.seed}:question"), self.vocab_size, self.question_tokens
        )
        out = []
        for i in range(n):
            target = min(rng.choice(self.target_lengths), self.input_cap)
            doc = _ids(rng, self.vocab_size, target - self.question_tokens)
            out.append(
                WorkloadRequest(i, doc + question, self.output_tokens, self.temperature, "default")
            )
        return out

    def spec(self) -> WorkloadSpec:
        capped = [t for t in self.target_lengths if t > self.input_cap]
        deviations = []
        if capped:
            deviations.append(
                f"max_context_len={self.max_context_len}: inputs capped at {self.input_cap} "
                f"tokens (max_context_len - {self.output_tokens} output tokens); targets "
                f"{', '.join(map(str, capped))} are sent as {self.input_cap}"
            )
        if tuple(self.target_lengths) != A5_TARGET_LENGTHS:
            deviations.append(f"target lengths {list(self.target_lengths)} instead of A.5.1's")
        return {
            "name": self.name,
            "draft_section": "A.5",
            "seed": self.seed,
            "synthetic": True,
            "input": {
                "distribution": "uniform over target lengths",
                "target_lengths": list(self.target_lengths),
                "effective_lengths": sorted({min(t, self.input_cap) for t in self.target_lengths}),
                "structure": "[document][question]",
                "document": f"target - {self.question_tokens} random token ids",
                "question": f"one fixed sequence of {self.question_tokens} random token ids",
                "unit": "tokens",
                "content": "random token ids from the vocabulary",
                "vocab_size": self.vocab_size,
            },
            "output": {
                "distribution": "fixed",
                "value": self.output_tokens,
                "unit": "tokens",
                "control": "max_tokens",
            },
            "max_context_len": self.max_context_len,
            "content": {"domain": "document + question (synthetic stand-in)", "language": None},
            "system_prompt": None,
            "prefix_sharing": None,
            "temperature": self.temperature,
            "stop_sequences": None,
            "notes": [
                "4.3.2.5 says Uniform(8192, 32768); A.5.1 (the full specification) lists "
                "five target lengths: A.5.1 is followed",
            ],
            "deviations": deviations,
        }


# --- ShareGPT conversations (A.3) -------------------------------------------------------------

_USER_ROLES = frozenset({"human", "user"})
_ASSISTANT_ROLES = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model"})
_SYSTEM_ROLES = frozenset({"system"})


def _quantiles(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {}
    s = sorted(values)
    return {f"p{p}": s[min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1)] for p in (50, 95, 99)}


@register_workload("sharegpt")
class ShareGPTConversation:
    """Conversation, draft A.3, from a ShareGPT-format JSON file the user supplies.

    The file is a JSON list of ``{"conversations": [{"from": ..., "value": ...}, ...]}``
    (other keys ignored). Roles ``human``/``user`` are the user's; ``gpt``, ``assistant``,
    ``chatgpt``, ``bard``, ``bing``, ``model`` the assistant's; ``system`` is kept as context;
    turns with another role are skipped and counted. How turns become requests (``turns``):

    * ``"first"`` (default, as vLLM's ``benchmark_serving``): one request per conversation,
      the prompt is the user turn that the first assistant turn answers, the output length
      (``max_tokens``) is that assistant turn's token count;
    * ``"history"``: one request per assistant turn that follows a user turn; the prompt is
      every turn before it joined with blank lines (no role labels or chat template), the
      output length is that assistant turn's token count.

    Texts become ids with ``tokenizer.encode(text)`` (no special tokens). A.3.1's filter
    (1+ assistant turns) is implied; pairs whose input or output has fewer than ``min_tokens``
    tokens, or more than ``max_input_tokens`` / ``max_output_tokens``, are dropped and counted.
    The kept pairs are shuffled with ``seed`` and request ``i`` is pair ``i mod kept``. As in
    4.3.2.3, ``system_prompt_share`` (50 %) of requests start with one shared
    ``system_prompt_tokens`` (200) random-id system prompt, counted apart from the input.
    ``limit`` keeps only the first ``limit`` conversations after the seeded shuffle.

    Example::

        wl = make_workload("sharegpt", path="sharegpt.json", tokenizer="/models/tiny")
    """

    def __init__(
        self,
        path: str,
        tokenizer: Tokenizer | str,
        seed: int = 42,
        vocab_size: int | None = None,
        turns: str = "first",
        min_tokens: int = 4,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        system_prompt_tokens: int = 200,
        system_prompt_share: float = 0.5,
        temperature: float = 0.0,
        limit: int | None = None,
    ) -> None:
        import hashlib
        import json
        from pathlib import Path

        if isinstance(tokenizer, str):
            from otelbench.loadgen.tokenizers import load_tokenizer

            tokenizer = load_tokenizer(tokenizer)
        if turns not in ("first", "history"):
            raise ConfigError(f"turns must be 'first' or 'history', got {turns!r}")
        vocab = vocab_size if vocab_size is not None else tokenizer.vocab_size
        if vocab is None or vocab < 2:
            raise ConfigError(f"sharegpt: vocab_size is needed (tokenizer {tokenizer.name})")
        self.name = "sharegpt"
        self.seed = seed
        self.path = path
        self.tokenizer = tokenizer
        self.vocab_size = vocab
        self.turns = turns
        self.temperature = temperature
        self.system_prompt = SystemPrompt(system_prompt_tokens, system_prompt_share)
        file = Path(path)
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read ShareGPT file: {exc.strerror}") from None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid JSON: {exc}") from None
        if not isinstance(data, list):
            raise ConfigError(f"{path}: expected a JSON list of conversations")
        self._sha256 = hashlib.sha256(raw).hexdigest()
        order = list(range(len(data)))
        random.Random(f"{seed}:sharegpt").shuffle(order)
        if limit is not None:
            order = order[:limit]
        dropped = {"no_assistant_turn": 0, "too_short": 0, "too_long": 0, "unknown_role": 0}
        pairs: list[tuple[list[int], int]] = []
        for ci in order:
            texts = self._pairs(path, ci, data[ci], dropped)
            if not texts:
                dropped["no_assistant_turn"] += 1
            for prompt, answer in texts:
                ids = tokenizer.encode(prompt)
                out_len = len(tokenizer.encode(answer))
                if len(ids) < min_tokens or out_len < min_tokens:
                    dropped["too_short"] += 1
                elif (max_input_tokens is not None and len(ids) > max_input_tokens) or (
                    max_output_tokens is not None and out_len > max_output_tokens
                ):
                    dropped["too_long"] += 1
                else:
                    pairs.append((ids, out_len))
        if not pairs:
            raise ConfigError(f"{path}: no usable conversation (dropped: {dropped})")
        self._items = pairs
        self._dropped = dropped
        self._conversations = len(data)
        self._filters: DatasetFilters = {
            "min_tokens": min_tokens,
            "max_input_tokens": max_input_tokens,
            "max_output_tokens": max_output_tokens,
            "limit": limit,
        }

    def _pairs(
        self, path: str, ci: int, conv: Any, dropped: dict[str, int]
    ) -> list[tuple[str, str]]:
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            raise ConfigError(f"{path}: [{ci}].conversations: expected a list of turns")
        history: list[str] = []
        pairs: list[tuple[str, str]] = []
        last_user: str | None = None
        for ti, turn in enumerate(turns):
            role = turn.get("from") if isinstance(turn, dict) else None
            value = turn.get("value") if isinstance(turn, dict) else None
            if not isinstance(role, str) or not isinstance(value, str):
                raise ConfigError(
                    f"{path}: [{ci}].conversations[{ti}]: expected {{from: str, value: str}}"
                )
            role = role.lower()
            if role in _ASSISTANT_ROLES:
                if last_user is not None:
                    prompt = last_user if self.turns == "first" else "\n\n".join(history)
                    pairs.append((prompt, value))
                    if self.turns == "first":
                        return pairs
            elif role in _USER_ROLES:
                last_user = value
            elif role not in _SYSTEM_ROLES:
                dropped["unknown_role"] += 1
                continue
            history.append(value)
        return pairs

    def requests(self, n: int) -> list[WorkloadRequest]:
        rng = random.Random(self.seed)
        system = _ids(
            random.Random(f"{self.seed}:shared"), self.vocab_size, self.system_prompt.tokens
        )
        out = []
        for i in range(n):
            ids, out_len = self._items[i % len(self._items)]
            shared = rng.random() < self.system_prompt.share
            prefix = list(system) if shared else []
            out.append(
                WorkloadRequest(
                    i,
                    prefix + ids,
                    out_len,
                    self.temperature,
                    "default",
                    len(prefix),
                    "system" if shared else None,
                )
            )
        return out

    def spec(self) -> WorkloadSpec:
        ins = [len(ids) for ids, _ in self._items]
        outs = [o for _, o in self._items]
        return {
            "name": self.name,
            "draft_section": "A.3",
            "seed": self.seed,
            "synthetic": False,
            "dataset": {
                "format": "ShareGPT JSON",
                "path": self.path,
                "sha256": self._sha256,
                "conversations": self._conversations,
                "turns": self.turns,
                "requests_available": len(self._items),
                "dropped": dict(self._dropped),
                "filters": {**self._filters},
                "selection": "seeded shuffle of the kept pairs; request i = pair i mod kept",
            },
            "tokenizer": self.tokenizer.describe(),
            "input": {
                "distribution": "empirical",
                "quantiles": _quantiles(ins),
                "reference_a32": {"p50": 156, "p95": 892, "p99": 2134},
                "unit": "tokens",
                "content": "user turns (text → ids with the tokenizer, no special tokens)",
                "vocab_size": self.vocab_size,
            },
            "output": {
                "distribution": "empirical",
                "quantiles": _quantiles(outs),
                "reference_a32": {"p50": 234, "p95": 789, "p99": 1567},
                "unit": "tokens",
                "control": "max_tokens",
            },
            "content": {"domain": "conversation", "language": "as in the dataset"},
            "system_prompt": {
                "tokens": self.system_prompt.tokens,
                "share": self.system_prompt.share,
                "shared_prefix": True,
                "content": "random token ids",
            },
            "prefix_sharing": None,
            "counting": "system prompt counted apart from the input; no BOS/EOS added",
            "temperature": self.temperature,
            "stop_sequences": None,
            "notes": [],
            "deviations": [],
        }


@register_workload("file")
def workload_from_file(
    path: str, seed: int | None = None, vocab_size: int | None = None
) -> Workload:
    """A custom workload from a YAML or JSON file (draft 4.3.1); see ``workload_file``.

    ``seed`` and ``vocab_size``, when given, beat the file's values.

    Example::

        wl = make_workload("file", path="workload.yaml", seed=7, vocab_size=1024)
    """
    from otelbench.loadgen.workload_file import load_workload_file

    return load_workload_file(path, seed=seed, vocab_size=vocab_size)
