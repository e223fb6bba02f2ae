"""Custom workloads from YAML/JSON files (draft 4.3.1): built exactly, or one clear error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.workload_file import load_workload_file
from otelbench.loadgen.workloads import make_workload

GOOD = """
name: my-chat
description: two classes with a shared system prompt
seed: 7
vocab_size: 512
domain: conversation
language: English
temperature: 0.0
input: {distribution: lognormal, mu: 5.0, sigma: 0.5, min: 32, max: 1024}
output: {distribution: uniform, min: 16, max: 64, control: max_tokens}
system_prompt: {tokens: 50, share: 1.0}
classes:
  - {name: short, ratio: 0.75}
  - {name: long, ratio: 0.25, input: {distribution: fixed, value: 900}, temperature: 0.7}
"""


def write(tmp_path: Path, text: str, name: str = "workload.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_good_yaml_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    wl = make_workload("file", path=str(path))
    reqs = wl.requests(800)
    assert wl.seed == 7
    assert all(0 <= t < 512 for r in reqs for t in r.prompt_token_ids)
    long_ = [r for r in reqs if r.request_class == "long"]
    short = [r for r in reqs if r.request_class == "short"]
    assert 0.21 < len(long_) / 800 < 0.29
    assert all(len(r.prompt_token_ids) == 50 + 900 and r.temperature == 0.7 for r in long_)
    assert all(82 <= len(r.prompt_token_ids) <= 50 + 1024 for r in short)
    assert all(r.temperature == 0.0 and 16 <= r.max_tokens <= 64 for r in short)
    assert all(r.shared_prefix_len == 50 and r.prefix_group == "system" for r in reqs)
    assert len({tuple(r.prompt_token_ids[:50]) for r in reqs}) == 1
    spec = wl.spec()
    assert spec["name"] == "my-chat"
    assert spec["seed"] == 7
    assert spec["content"] == {"domain": "conversation", "language": "English"}
    assert spec["system_prompt"] == {"tokens": 50, "share": 1.0, "shared_prefix": True}
    assert spec["request_classes"][1]["input"] == {
        "distribution": "fixed",
        "value": 900,
        "unit": "tokens",
    }
    assert spec["source_file"]["path"] == str(path)
    assert len(spec["source_file"]["sha256"]) == 64


def test_arguments_beat_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    a = load_workload_file(path, seed=8, vocab_size=64)
    assert a.seed == 8
    assert a.vocab_size == 64
    assert a.requests(5) != load_workload_file(path).requests(5)
    assert a.requests(5) == load_workload_file(path, seed=8, vocab_size=64).requests(5)


def test_json_file_with_prefix_sharing(tmp_path: Path) -> None:
    doc = {
        "input": {"distribution": "normal", "mean": 100, "std": 10, "min": 50, "max": 150},
        "output": {"distribution": "empirical", "values": [8, 16], "weights": [3, 1]},
        "prefix_sharing": {
            "ratio": 0.5,
            "prefixes": 3,
            "length": {"distribution": "fixed", "value": 40},
            "zipf_s": 1.0,
        },
    }
    path = write(tmp_path, json.dumps(doc), "custom.json")
    wl = load_workload_file(path, vocab_size=100)
    reqs = wl.requests(2000)
    assert wl.name == "file:custom"
    assert wl.seed == 42
    assert all(40 + 50 <= len(r.prompt_token_ids) <= 40 + 150 for r in reqs)  # context + body
    assert 135 < sum(len(r.prompt_token_ids) for r in reqs) / 2000 < 145  # 40 + mean 100
    shared = [r for r in reqs if r.prefix_group is not None]
    assert 0.45 < len(shared) / 2000 < 0.55
    assert {r.prefix_group for r in shared} == {"context-1", "context-2", "context-3"}
    assert 0.70 < sum(r.max_tokens == 8 for r in reqs) / 2000 < 0.80


OUT = "output: {distribution: fixed, value: 3}\n"

BAD_CASES = [
    (
        "input: {distribution: gauss, mean: 1}\n" + OUT,
        "workload.yaml: input.distribution: unknown 'gauss'; known: "
        "empirical, fixed, lognormal, normal, uniform",
    ),
    ("output: {distribution: fixed, value: 3}\n", "workload.yaml: input: missing"),
    (
        "input: {distribution: uniform, min: 10}\n" + OUT,
        "workload.yaml: input.max: missing",
    ),
    (
        "input: {distribution: uniform, min: 10, max: big}\n" + OUT,
        "workload.yaml: input.max: expected an integer, got 'big'",
    ),
    (
        "input: {distribution: uniform, min: 10, max: 5}\n" + OUT,
        "workload.yaml: input: uniform: need 0 < min <= max, got min=10, max=5",
    ),
    (
        "input: {distribution: lognormal, mu: 5, sigma: -1}\n" + OUT,
        "workload.yaml: input: sigma must be > 0, got -1.0",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3, "
        "control: stop}\n",
        "workload.yaml: output.control: only 'max_tokens' is supported, got 'stop'",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3}\n"
        "temprature: 0.5\n",
        "workload.yaml: temprature: unknown field; known: classes, description, domain, ",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3}\n"
        "classes: [{name: a, ratio: 0.5}, {name: b, ratio: 0.4}]\n",
        "workload.yaml: classes: ratios sum to 0.9; they must sum to 1",
    ),
    (
        "output: {distribution: fixed, value: 3}\nclasses: [{name: a, ratio: 1.0}]\n",
        "workload.yaml: classes[0].input: missing, and there is no top-level input",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3}\n"
        "classes: [{name: a, ratio: 0.5}, {name: a, ratio: 0.5}]\n",
        "workload.yaml: classes[1].name: duplicate class name 'a'",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3}\n"
        "system_prompt: {tokens: 10, share: 2}\n",
        "workload.yaml: system_prompt.share: must be between 0 and 1, got 2",
    ),
    (
        "input: {distribution: fixed, value: 3}\noutput: {distribution: fixed, value: 3}\n"
        "prefix_sharing: {ratio: 0.5, prefixes: 2, length: {distribution: uniform, min: x}}\n",
        "workload.yaml: prefix_sharing.length.max: missing",
    ),
    (
        "input: {distribution: empirical, values: [1, two]}\n" + OUT,
        "workload.yaml: input.values[1]: expected an integer, got 'two'",
    ),
    ("- just a list\n", "workload.yaml: (top level): expected a mapping, got list"),
    ("input: {distribution: [\n", "workload.yaml: not valid YAML: line 2, column 1: "),
]


@pytest.mark.parametrize(("text", "message"), BAD_CASES)
def test_bad_files_give_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        make_workload("file", path=str(path))
    assert str(info.value).startswith(str(path))
    assert str(info.value).removeprefix(str(tmp_path) + "/").startswith(message)
    assert "\n" not in str(info.value)


def test_bad_json_and_missing_and_wrong_suffix(tmp_path: Path) -> None:
    bad = write(tmp_path, '{"input": ', "w.json")
    with pytest.raises(ConfigError, match=re.escape(f"{bad}: not valid JSON: line 1, column 11")):
        load_workload_file(bad)
    with pytest.raises(ConfigError, match="cannot read workload file"):
        load_workload_file(tmp_path / "absent.yaml")
    txt = write(tmp_path, "x", "w.txt")
    with pytest.raises(ConfigError, match=r"unknown workload file type '\.txt'"):
        load_workload_file(txt)
