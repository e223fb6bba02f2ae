"""Appendix A workloads (A.2–A.5) and draft 5.6's request classes: seeded, exact, within spec."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.loadgen.tokenizers import HFTokenizer
from otelbench.loadgen.workloads import (
    WORKLOADS,
    LogNormal,
    QuantileMatched,
    TruncatedLogNormal,
    make_workload,
)
from otelbench.model.conform import conforms
from otelbench.model.report import WorkloadSpec
from tests.unit.loadgen.test_tokenizers import build_tiny_tokenizer

VOCAB = 1024


@pytest.fixture
def tiny_tokenizer(tmp_path: Path) -> HFTokenizer:
    return HFTokenizer(str(build_tiny_tokenizer(tmp_path / "tiny")))


def quantile(values: list[int], p: float) -> float:
    s = sorted(values)
    return float(s[min(len(s) - 1, math.ceil(p * len(s)) - 1)])


def within(value: float, target: float, rel: float) -> bool:
    return abs(value - target) <= rel * target


@pytest.mark.parametrize(
    "name", ["synthetic-skewed", "conversation", "code-completion", "long-context", "mixed-classes"]
)
def test_seeded_reproducible_and_prefix_stable(name: str) -> None:
    params = {"max_context_len": 2048} if name == "long-context" else {}
    a = make_workload(name, seed=5, vocab_size=VOCAB, **params).requests(40)
    b = make_workload(name, seed=5, vocab_size=VOCAB, **params).requests(40)
    c = make_workload(name, seed=6, vocab_size=VOCAB, **params).requests(40)
    short = make_workload(name, seed=5, vocab_size=VOCAB, **params).requests(10)
    assert a == b
    assert a[:10] == short
    assert [r.prompt_token_ids for r in a] != [r.prompt_token_ids for r in c]
    assert [r.index for r in a] == list(range(40))
    assert all(0 <= t < VOCAB for r in a for t in r.prompt_token_ids)
    assert all(isinstance(t, int) for r in a for t in r.prompt_token_ids)


@pytest.mark.parametrize(
    "name", ["synthetic-skewed", "conversation", "code-completion", "long-context", "mixed-classes"]
)
def test_spec_has_the_4_3_1_parameters(name: str) -> None:
    spec = make_workload(name, seed=11, vocab_size=VOCAB).spec()
    assert spec["name"] == name
    assert spec["seed"] == 11
    assert spec["draft_section"] in {"A.2", "A.3", "A.4", "A.5", "5.6.2"}
    assert spec["input"]["vocab_size"] == VOCAB
    assert spec["output"]["control"] == "max_tokens"
    for key in ("content", "system_prompt", "prefix_sharing", "temperature", "deviations"):
        assert key in spec
    json.dumps(spec)  # the report stores it as JSON


def test_registered_names() -> None:
    assert {
        "synthetic-uniform",
        "synthetic-skewed",
        "conversation",
        "sharegpt",
        "code-completion",
        "long-context",
        "mixed-classes",
        "file",
    } <= set(WORKLOADS)


def test_every_workloads_spec_has_the_workload_spec_type(
    tmp_path: Path, tiny_tokenizer: HFTokenizer
) -> None:
    """``spec()`` is what the run manifest records as ``run.workload.spec``: each registered
    workload's, with its own parts (classes, shared seed, dataset, source file …), has the
    keys and value types :class:`WorkloadSpec` declares."""
    custom = tmp_path / "custom.json"
    custom.write_text(
        json.dumps(
            {
                "description": "two classes",
                "domain": "chat",
                "input": {"distribution": "normal", "mean": 300, "std": 50},
                "output": {
                    "distribution": "empirical",
                    "values": [16, 64],
                    "control": "max_tokens",
                },
                "system_prompt": {"tokens": 20},
                "prefix_sharing": {
                    "ratio": 0.5,
                    "prefixes": 2,
                    "length": {"distribution": "fixed", "value": 64},
                },
                "classes": [{"name": "a", "ratio": 0.5}, {"name": "b", "ratio": 0.5}],
            }
        )
    )
    params: dict[str, dict[str, Any]] = {
        "synthetic-uniform": {},
        "synthetic-skewed": {},
        "conversation": {"shared_seed": 3},
        "code-completion": {},
        "long-context": {"max_context_len": 2048},
        "mixed-classes": {},
        "sharegpt": {"path": str(write_sharegpt(tmp_path)), "tokenizer": tiny_tokenizer},
        "file": {"path": str(custom)},
    }
    assert set(params) == set(WORKLOADS)
    for name, extra in params.items():
        spec = make_workload(name, seed=4, vocab_size=VOCAB, **extra).spec()
        assert conforms(json.loads(json.dumps(spec)), WorkloadSpec) == [], name
        assert {"name", "draft_section", "seed"} <= set(spec), name  # every workload's


# --- A.2 -----------------------------------------------------------------------------------


def test_skewed_matches_a2() -> None:
    reqs = make_workload("synthetic-skewed", seed=42, vocab_size=VOCAB).requests(5000)
    ins = [len(r.prompt_token_ids) for r in reqs]
    outs = [r.max_tokens for r in reqs]
    assert min(ins) >= 32
    assert max(ins) <= 4096
    assert min(outs) >= 16
    assert max(outs) <= 2048
    assert ins.count(32) > 0  # the floor is reached (P(X<32) ≈ 2 %), so it is a clip
    assert within(statistics.median(ins), 245, 0.05)  # A.2.1: median ~245
    assert within(statistics.mean(ins), 405, 0.05)  # A.2.1: mean ~405
    assert within(statistics.median(outs), math.exp(4.5), 0.08)  # exp(mu) = 90
    assert within(statistics.mean(outs), 179.4, 0.07)  # E[clip(LN(4.5, 1.2), 16, 2048)]
    assert all(r.temperature == 0.0 for r in reqs)
    assert all(r.shared_prefix_len == 0 for r in reqs)
    spec = make_workload("synthetic-skewed", vocab_size=VOCAB).spec()
    assert spec["input"]["mu"] == 5.5
    assert spec["input"]["sigma"] == 1.0
    assert (spec["input"]["min"], spec["input"]["max"]) == (32, 4096)
    assert (spec["output"]["min"], spec["output"]["max"]) == (16, 2048)
    assert spec["output"]["sigma"] == 1.2


def test_lognormal_caps_and_floors_clip() -> None:
    import random

    dist = LogNormal(5.5, 1.0, 200, 300)
    rng = random.Random(0)
    xs = [dist.sample(rng) for _ in range(2000)]
    assert set(xs) >= {200, 300}
    assert all(200 <= x <= 300 for x in xs)
    with pytest.raises(ConfigError, match="sigma must be > 0"):
        LogNormal(1.0, 0.0)


# --- A.3 -----------------------------------------------------------------------------------


def test_quantile_matched_hits_a32_quantiles() -> None:
    import random

    rng = random.Random(1)
    dist = QuantileMatched(((0.5, 156.0), (0.95, 892.0), (0.99, 2134.0)), 4, 4096)
    xs = [dist.sample(rng) for _ in range(60000)]
    assert within(quantile(xs, 0.50), 156, 0.03)
    assert within(quantile(xs, 0.95), 892, 0.04)
    assert within(quantile(xs, 0.99), 2134, 0.06)


def test_conversation_stand_in_matches_a32_within_tolerance() -> None:
    """Tolerance: P50 ±5 %, P95 ±8 %, P99 ±12 % on 6,000 requests (sampling error of P99)."""
    wl = make_workload("conversation", seed=42, vocab_size=VOCAB)
    reqs = wl.requests(6000)
    body = [len(r.prompt_token_ids) - r.shared_prefix_len for r in reqs]
    outs = [r.max_tokens for r in reqs]
    for values, ref in ((body, (156, 892, 2134)), (outs, (234, 789, 1567))):
        assert within(quantile(values, 0.50), ref[0], 0.05)
        assert within(quantile(values, 0.95), ref[1], 0.08)
        assert within(quantile(values, 0.99), ref[2], 0.12)
    shared = [r for r in reqs if r.prefix_group == "system"]
    assert 0.47 < len(shared) / len(reqs) < 0.53  # 4.3.2.3: 50 % share the system prompt
    assert all(r.shared_prefix_len == 200 for r in shared)
    assert len({tuple(r.prompt_token_ids[:200]) for r in shared}) == 1  # one shared prefix
    assert all(r.shared_prefix_len == 0 and r.prefix_group is None for r in reqs if r not in shared)
    spec = wl.spec()
    assert spec["synthetic"] is True
    assert "SYNTHETIC stand-in" in spec["notes"][0]
    assert spec["system_prompt"] == {"tokens": 200, "share": 0.5, "shared_prefix": True}
    assert spec["input"]["quantiles"] == {"p50": 156.0, "p95": 892.0, "p99": 2134.0}


def write_sharegpt(tmp_path: Path) -> Path:
    data = [
        {
            "id": "a",
            "conversations": [
                {"from": "human", "value": "hello world how are you today"},
                {"from": "gpt", "value": "i am fine thank you and how are you"},
                {"from": "human", "value": "tell me about the world"},
                {"from": "gpt", "value": "the world is big and round"},
            ],
        },
        {"id": "b", "conversations": [{"from": "human", "value": "no answer here at all"}]},
        {
            "id": "c",
            "conversations": [
                {"from": "system", "value": "be nice"},
                {"from": "user", "value": "how big is the world today"},
                {"from": "assistant", "value": "the world is very big today"},
            ],
        },
        {
            "id": "d",
            "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}],
        },
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_sharegpt_first_turns(tmp_path: Path, tiny_tokenizer: HFTokenizer) -> None:
    path = write_sharegpt(tmp_path)
    wl = make_workload(
        "sharegpt", path=str(path), tokenizer=tiny_tokenizer, seed=3, system_prompt_share=0.0
    )
    reqs = wl.requests(4)
    expected = {
        (
            tuple(tiny_tokenizer.encode("hello world how are you today")),
            len(tiny_tokenizer.encode("i am fine thank you and how are you")),
        ),
        (
            tuple(tiny_tokenizer.encode("how big is the world today")),
            len(tiny_tokenizer.encode("the world is very big today")),
        ),
    }
    assert {(tuple(r.prompt_token_ids), r.max_tokens) for r in reqs} == expected
    assert reqs[0].prompt_token_ids == reqs[2].prompt_token_ids  # cycles over 2 kept pairs
    spec = wl.spec()
    assert spec["dataset"]["conversations"] == 4
    assert spec["dataset"]["requests_available"] == 2
    assert spec["dataset"]["dropped"]["no_assistant_turn"] == 1
    assert spec["dataset"]["dropped"]["too_short"] == 1  # "hi" / "yo"
    assert spec["synthetic"] is False
    assert spec["tokenizer"]["vocab_size"] == tiny_tokenizer.vocab_size


def test_sharegpt_history_and_system_prompt(tmp_path: Path, tiny_tokenizer: HFTokenizer) -> None:
    path = write_sharegpt(tmp_path)
    wl = make_workload(
        "sharegpt", path=str(path), tokenizer=tiny_tokenizer, turns="history", seed=1
    )
    reqs = wl.requests(200)
    prompts = {tuple(r.prompt_token_ids[r.shared_prefix_len :]) for r in reqs}
    history = "\n\n".join(
        [
            "hello world how are you today",
            "i am fine thank you and how are you",
            "tell me about the world",
        ]
    )
    assert tuple(tiny_tokenizer.encode(history)) in prompts
    assert tuple(tiny_tokenizer.encode("be nice\n\nhow big is the world today")) in prompts
    assert len(prompts) == 3
    shared = sum(r.shared_prefix_len == 200 for r in reqs)
    assert 70 < shared < 130  # 50 %


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "sharegpt.json: not valid JSON"),
        ('{"a": 1}', "sharegpt.json: expected a JSON list of conversations"),
        ('[{"conversations": 3}]', r"\[0\].conversations: expected a list of turns"),
        ('[{"conversations": [{"from": "human"}]}]', r"\[0\].conversations\[0\]: expected"),
        ('[{"conversations": []}]', "no usable conversation"),
    ],
)
def test_sharegpt_bad_files(
    tmp_path: Path, tiny_tokenizer: HFTokenizer, content: str, message: str
) -> None:
    path = tmp_path / "sharegpt.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        make_workload("sharegpt", path=str(path), tokenizer=tiny_tokenizer)


# --- A.4 -----------------------------------------------------------------------------------


def test_code_completion_prefix_sharing_is_zipf() -> None:
    wl = make_workload("code-completion", seed=42, vocab_size=VOCAB)
    reqs = wl.requests(6000)
    shared = [r for r in reqs if r.prefix_group is not None]
    assert 0.78 < len(shared) / len(reqs) < 0.82  # A.4.2: 80 %
    groups = [r.prefix_group for r in shared]
    weights = [k**-1.5 for k in range(1, 11)]
    for k in (1, 2, 3):
        expected = weights[k - 1] / sum(weights)
        assert abs(groups.count(f"context-{k}") / len(shared) - expected) < 0.02
    assert len(set(groups)) == 10
    contexts: dict[str, tuple[int, ...]] = {}
    for r in shared:
        ids = tuple(r.prompt_token_ids[: r.shared_prefix_len])
        assert 512 <= len(ids) <= 1024
        assert contexts.setdefault(r.prefix_group or "", ids) == ids  # same ids each time
    assert len(set(contexts.values())) == 10
    outs = [r.max_tokens for r in reqs]
    assert min(outs) >= 16
    assert max(outs) <= 2048
    assert within(statistics.median(outs), math.exp(4.0), 0.1)  # log-normal(4.0, 1.5)
    unshared = [r for r in reqs if r.prefix_group is None]
    assert all(r.shared_prefix_len == 0 for r in unshared)
    assert all(len(r.prompt_token_ids) >= 512 + 16 for r in unshared)  # fresh context + body
    spec = wl.spec()
    assert spec["prefix_sharing"]["ratio"] == 0.8
    assert spec["prefix_sharing"]["prefixes"] == 10
    assert spec["prefix_sharing"]["selection"] == "truncated Zipf over ranks 1..10, s=1.5"
    assert abs(sum(spec["prefix_sharing"]["rank_probabilities"]) - 1) < 1e-5
    assert spec["output"]["mu"] == 4.0
    assert spec["output"]["sigma"] == 1.5


# --- A.5 -----------------------------------------------------------------------------------


def test_long_context_targets_and_structure() -> None:
    wl = make_workload("long-context", seed=2, vocab_size=VOCAB)
    reqs = wl.requests(50)
    lengths = {len(r.prompt_token_ids) for r in reqs}
    assert lengths == {8192, 16384, 32768, 65536, 131072}
    assert all(r.max_tokens == 256 for r in reqs)
    questions = {tuple(r.prompt_token_ids[-100:]) for r in reqs}
    assert len(questions) == 1  # one fixed 100-token question
    assert wl.spec()["deviations"] == []


def test_long_context_cap_is_a_recorded_deviation() -> None:
    wl = make_workload("long-context", seed=2, vocab_size=VOCAB, max_context_len=2048)
    reqs = wl.requests(20)
    assert {len(r.prompt_token_ids) for r in reqs} == {2048 - 256}
    assert all(len(r.prompt_token_ids) + r.max_tokens <= 2048 for r in reqs)
    spec = wl.spec()
    assert spec["max_context_len"] == 2048
    assert spec["input"]["effective_lengths"] == [1792]
    assert len(spec["deviations"]) == 1
    assert spec["deviations"][0].startswith("max_context_len=2048: inputs capped at 1792 tokens")
    partial = make_workload("long-context", vocab_size=VOCAB, max_context_len=16384 + 256).spec()
    assert "targets 32768, 65536, 131072 are sent as 16384" in partial["deviations"][0]
    with pytest.raises(ConfigError, match="max_context_len 300 leaves no room"):
        make_workload("long-context", max_context_len=300)


# --- 5.6 -------------------------------------------------------------------------------------


def test_mixed_classes_records_class_and_ratio() -> None:
    reqs = make_workload("mixed-classes", seed=4, vocab_size=VOCAB).requests(3000)
    short = [r for r in reqs if r.request_class == "short"]
    long_ = [r for r in reqs if r.request_class == "long"]
    assert len(short) + len(long_) == len(reqs)
    assert 0.78 < len(short) / len(reqs) < 0.82
    assert all(64 <= len(r.prompt_token_ids) <= 256 and 32 <= r.max_tokens <= 128 for r in short)
    assert all(1024 <= len(r.prompt_token_ids) <= 4096 for r in long_)
    assert all(256 <= r.max_tokens <= 1024 for r in long_)
    half = make_workload("mixed-classes", seed=4, vocab_size=VOCAB, short_ratio=0.5).requests(2000)
    assert 0.46 < sum(r.request_class == "short" for r in half) / 2000 < 0.54
    spec = make_workload("mixed-classes", vocab_size=VOCAB).spec()
    assert [(c["name"], c["ratio"]) for c in spec["request_classes"]] == [
        ("short", 0.8),
        ("long", pytest.approx(0.2)),
    ]
    with pytest.raises(ConfigError, match="short_ratio"):
        make_workload("mixed-classes", short_ratio=1.5)


@pytest.mark.parametrize("name", ["code-completion", "conversation"])
def test_shared_seed_keeps_the_shared_prefixes_and_changes_the_bodies(name: str) -> None:
    """Draft 5.7's warm level: the same shared prefixes as the run seed, new request bodies."""
    first = make_workload(name, seed=7, vocab_size=1024).requests(200)
    warm = make_workload(name, seed=8, vocab_size=1024, shared_seed=7).requests(200)
    other = make_workload(name, seed=8, vocab_size=1024).requests(200)

    def prefixes(reqs: list[Any]) -> set[tuple[int, ...]]:
        return {
            tuple(r.prompt_token_ids[: r.shared_prefix_len]) for r in reqs if r.shared_prefix_len
        }

    assert prefixes(first)
    assert prefixes(warm) <= prefixes(first)
    assert not prefixes(other) & prefixes(first)
    assert not {tuple(r.prompt_token_ids) for r in warm} & {
        tuple(r.prompt_token_ids) for r in first
    }
    assert make_workload(name, seed=8, vocab_size=1024, shared_seed=7).spec()["shared_seed"] == 7


def test_mixed_classes_fit_a_small_context_window_and_say_so() -> None:
    wl = make_workload("mixed-classes", seed=3, vocab_size=1024, max_context_len=512)
    requests = wl.requests(300)
    assert max(len(r.prompt_token_ids) + r.max_tokens for r in requests) <= 512
    short = [len(r.prompt_token_ids) for r in requests if r.request_class == "short"]
    long = [len(r.prompt_token_ids) for r in requests if r.request_class == "long"]
    assert short
    assert long
    assert min(long) > max(short) - 1  # the long class stays the longer one
    (deviation,) = wl.spec()["deviations"]
    assert deviation.startswith("long class fitted to a 512-token context window")
    assert make_workload("mixed-classes", seed=3, vocab_size=1024).spec()["deviations"] == []


def test_mixed_classes_draw_synthetic_skeweds_lognormals_within_each_class() -> None:
    """5.6.2 REQUIRES Synthetic-Skewed and defines the classes' ranges: by default each class's
    lengths follow A.2's log-normals conditioned on its ranges. Within the short input range
    64..256 that log-normal (median e^5.5 ≈ 245) rises towards the top, so the upper half of the
    range holds most requests, unlike a uniform draw; the conditional median is exact."""
    wl = make_workload("mixed-classes", seed=5, vocab_size=VOCAB)
    spec = wl.spec()
    assert spec["draft_section"] == "A.2"
    assert spec["deviations"] == []
    short = [len(r.prompt_token_ids) for r in wl.requests(4000) if r.request_class == "short"]
    assert min(short) >= 64
    assert max(short) <= 256
    normal = statistics.NormalDist()
    lo, hi = (normal.cdf((math.log(x) - 5.5) / 1.0) for x in (63.5, 256.5))
    median = math.exp(5.5 + normal.inv_cdf((lo + hi) / 2))
    assert statistics.median(short) == pytest.approx(median, abs=4)  # ≈ 179, not 160 (uniform)
    uniform = make_workload("mixed-classes", seed=5, vocab_size=VOCAB, lengths="uniform")
    (deviation,) = uniform.spec()["deviations"]
    assert "not Synthetic-Skewed" in deviation
    assert uniform.spec()["draft_section"] == "5.6.2"
    with pytest.raises(ConfigError, match="lengths must be one of skewed, uniform"):
        make_workload("mixed-classes", lengths="pareto")


@given(
    st.floats(3.0, 7.0),
    st.floats(0.3, 2.0),
    st.integers(1, 2000),
    st.integers(0, 3000),
    st.integers(0, 2**32),
)
def test_truncated_lognormal_stays_in_its_range(
    mu: float, sigma: float, low: int, span: int, seed: int
) -> None:
    dist = TruncatedLogNormal(mu, sigma, low, low + span)
    rng = random.Random(seed)
    assert all(low <= dist.sample(rng) <= low + span for _ in range(50))
