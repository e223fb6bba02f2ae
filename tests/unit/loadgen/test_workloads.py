"""Synthetic-Uniform (draft A.1) is exactly A.1.4's generator for the same seed."""

from __future__ import annotations

import random

import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.workloads import WORKLOADS, SyntheticUniform, make_workload


def a14_reference(n_requests: int, seed: int, vocab_size: int) -> list[dict[str, object]]:
    """The draft's A.1.4 pseudocode, verbatim except for the vocabulary bound."""
    rng = random.Random(seed)
    requests = []
    for _ in range(n_requests):
        input_len = rng.randint(128, 512)
        output_len = rng.randint(64, 256)
        input_tokens = [rng.randint(0, vocab_size - 1) for _ in range(input_len)]
        requests.append({"input_tokens": input_tokens, "max_tokens": output_len})
    return requests


@pytest.mark.parametrize("vocab_size", [100256, 1024])
def test_matches_a14_pseudocode(vocab_size: int) -> None:
    ours = SyntheticUniform(seed=42, vocab_size=vocab_size).requests(50)
    ref = a14_reference(50, 42, vocab_size)
    assert [r.prompt_token_ids for r in ours] == [r["input_tokens"] for r in ref]
    assert [r.max_tokens for r in ours] == [r["max_tokens"] for r in ref]
    assert [r.index for r in ours] == list(range(50))
    assert all(r.temperature == 0.0 for r in ours)


def test_lengths_and_ids_in_range() -> None:
    reqs = SyntheticUniform(seed=3, vocab_size=1024).requests(500)
    assert all(128 <= len(r.prompt_token_ids) <= 512 for r in reqs)
    assert all(64 <= r.max_tokens <= 256 for r in reqs)
    assert all(0 <= t < 1024 for r in reqs for t in r.prompt_token_ids)
    mean_in = sum(len(r.prompt_token_ids) for r in reqs) / len(reqs)
    assert 300 < mean_in < 340  # A.1.1: mean 320


def test_spec_is_complete() -> None:
    spec = SyntheticUniform(seed=9, vocab_size=1024).spec()
    assert spec["seed"] == 9
    assert spec["input"]["min"] == 128
    assert spec["input"]["max"] == 512
    assert spec["input"]["vocab_size"] == 1024
    assert spec["output"]["control"] == "max_tokens"
    assert spec["temperature"] == 0.0


def test_unknown_workload_names_the_known_ones() -> None:
    assert "synthetic-uniform" in WORKLOADS
    known = (
        "code-completion, conversation, file, long-context, mixed-classes, sharegpt, "
        "synthetic-skewed, synthetic-uniform"
    )
    with pytest.raises(ConfigError, match=f"unknown workload 'nope'; known workloads: {known}$"):
        make_workload("nope")


def test_bad_vocab_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="vocab_size"):
        SyntheticUniform(vocab_size=1)
