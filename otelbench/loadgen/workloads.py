"""Workloads (draft 4.3, Appendix A), registered by name and generated from a seed.

A workload yields :class:`WorkloadRequest` items: the prompt as token ids (so the input length
is exact for the declared tokenizer whatever the server's detokenizer does), the ``max_tokens``
that controls the output length, and a request class. Every report carries the workload's name,
seed and full specification (:meth:`Workload.spec`), as draft 4.3 requires.

Example::

    wl = make_workload("synthetic-uniform", seed=42, vocab_size=1024)
    first = wl.requests(10)[0]
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from otelbench.errors import ConfigError

__all__ = [
    "WORKLOADS",
    "SyntheticUniform",
    "Workload",
    "WorkloadRequest",
    "make_workload",
]


@dataclass(frozen=True, slots=True)
class WorkloadRequest:
    """One request of a workload: what to send, not how or when."""

    index: int
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float
    request_class: str = "default"


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

    def spec(self) -> dict[str, Any]:
        """The full specification (draft 4.3.1 parameters) for the report."""
        ...


WORKLOADS: dict[str, Callable[..., Workload]] = {}


def register_workload(name: str) -> Callable[[Callable[..., Workload]], Callable[..., Workload]]:
    """Register a workload factory under ``name``."""

    def wrap(factory: Callable[..., Workload]) -> Callable[..., Workload]:
        WORKLOADS[name] = factory
        return factory

    return wrap


def make_workload(name: str, **params: Any) -> Workload:
    """Build the workload registered as ``name``; unknown names raise one clear ConfigError."""
    try:
        factory = WORKLOADS[name]
    except KeyError:
        known = ", ".join(sorted(WORKLOADS))
        raise ConfigError(f"unknown workload {name!r}; known workloads: {known}") from None
    return factory(**params)


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
    name: str = "synthetic-uniform"

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

    def spec(self) -> dict[str, Any]:
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
