"""Property tests: any YAML or JSON tree in a workload file gives a workload or one
:class:`~otelbench.errors.ConfigError` naming the file (and, for a bad field, the field) —
never another exception type."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.loadgen.workload_file import load_workload_file

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_KEYS = ["name", "description", "seed", "vocab_size", "domain", "language", "temperature",
         "input", "output", "system_prompt", "prefix_sharing", "classes", "distribution",
         "value", "min", "max", "mu", "sigma", "mean", "std", "values", "weights", "control",
         "tokens", "share", "ratio", "prefixes", "length", "zipf_s", "fixed", "uniform",
         "lognormal", "normal", "empirical", "max_tokens"]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(),
    st.text(max_size=6),
    st.sampled_from(_KEYS),
)
trees = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=25,
)
# A valid file whose fields are then replaced, so validation reaches the nested checks.
_VALID: dict[str, Any] = {
    "name": "w",
    "input": {"distribution": "uniform", "min": 8, "max": 16},
    "output": {"distribution": "fixed", "value": 4},
    "system_prompt": {"tokens": 4, "share": 0.5},
    "prefix_sharing": {
        "ratio": 0.5,
        "prefixes": 2,
        "length": {"distribution": "fixed", "value": 8},
    },
    "classes": [{"name": "a", "ratio": 1.0}],
}


@st.composite
def documents(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(trees)
    doc = json.loads(json.dumps(_VALID))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(doc)))
        target = doc[key]
        if isinstance(target, dict) and target and draw(st.booleans()):
            target[draw(st.sampled_from(sorted(target)))] = draw(trees)
        else:
            doc[key] = draw(trees)
    return doc


def _load(text: str | bytes, suffix: str) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"w{suffix}"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        try:
            return load_workload_file(path, vocab_size=64)
        except ConfigError as err:
            error = err
    assert str(error).startswith(str(path) + ": ")
    return error


@PROPS
@given(doc=documents(), as_json=st.booleans())
def test_any_tree_is_a_workload_or_a_config_error(doc: Any, as_json: bool) -> None:
    if as_json:
        text = json.dumps(doc, allow_nan=True)
        outcome = _load(text, ".json")
    else:
        outcome = _load(yaml.safe_dump(doc, allow_unicode=True), ".yaml")
    if isinstance(outcome, ConfigError):
        return
    reqs = outcome.requests(3)  # a workload that loads also generates
    assert len(reqs) == 3


@PROPS
@given(
    text=st.text(max_size=80) | st.binary(max_size=80), suffix=st.sampled_from([".yaml", ".json"])
)
def test_any_text_is_a_workload_or_a_config_error(text: str | bytes, suffix: str) -> None:
    outcome = _load(text, suffix)
    assert outcome is not None


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_document_nested_too_deeply_is_a_config_error(suffix: str) -> None:
    outcome = _load("[" * 100_000 + "]" * 100_000, suffix)
    assert isinstance(outcome, ConfigError)
    assert re.search(r"not valid (JSON|YAML)|nested", str(outcome))


def test_a_bad_nested_field_is_named() -> None:
    doc = json.loads(json.dumps(_VALID))
    doc["prefix_sharing"]["length"]["value"] = "many"
    outcome = _load(json.dumps(doc), ".json")
    assert isinstance(outcome, ConfigError)
    assert "prefix_sharing.length.value" in str(outcome)
