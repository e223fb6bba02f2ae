"""Property tests: any YAML/JSON tree as a guardrail configuration gives a configuration or one
:class:`~otelbench.errors.ConfigError` naming the source and the field — never another
exception type (filter settings included: patterns that are not regular expressions, wrongly
typed keyword lists, keys that are not strings)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.guardrails.config import GuardrailConfig, load_config, parse_config
from otelbench.guardrails.registry import available

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_KEYS = ["version", "block_response", "block_status", "refusal_message", "output_window",
         "timeout_ms", "on_error", "input", "output", "type", "name", "models", "keywords",
         "patterns", "case_sensitive", "whole_words", "action", "replacement", "url", "model",
         "categories", "threshold", "system", "api_key", "api_key_env", "headers", "max_chars",
         "kinds"]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(),
    st.text(max_size=6),
    st.sampled_from(["(", "[a-", "*", "\\", "open", "closed", "block", "redact", "email"]),
    st.sampled_from(available()),
)
trees = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(_KEYS) | st.integers(0, 3), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def filter_entries(draw: st.DrawFn) -> dict[Any, Any]:
    entry: dict[Any, Any] = {"type": draw(st.sampled_from(available()))}
    entry.update(draw(st.dictionaries(st.sampled_from(_KEYS), trees, max_size=3)))
    return entry


@st.composite
def configs(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(trees)
    doc: dict[str, Any] = draw(st.dictionaries(st.sampled_from(_KEYS[:7]), trees, max_size=2))
    for stage in ("input", "output"):
        if draw(st.booleans()):
            doc[stage] = draw(st.lists(filter_entries(), max_size=2))
    return doc


@PROPS
@given(doc=configs())
def test_any_tree_is_a_configuration_or_a_config_error(doc: Any) -> None:
    outcome: GuardrailConfig | ConfigError
    try:
        outcome = parse_config(doc, "g.yaml")
    except ConfigError as err:
        outcome = err
    if isinstance(outcome, ConfigError):
        assert str(outcome).startswith("g.yaml: ")
    else:
        assert isinstance(outcome, GuardrailConfig)


@PROPS
@given(text=st.text(max_size=80), suffix=st.sampled_from([".yaml", ".json"]))
def test_any_file_text_is_a_configuration_or_a_config_error(text: str, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"g{suffix}"
        path.write_text(text, encoding="utf-8")
        error = ""
        try:
            load_config(path)
        except ConfigError as err:
            error = str(err)
    assert not error or str(path) in error


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_file_nested_too_deeply_is_a_config_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"g{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(path)


def test_a_bad_filter_setting_is_named() -> None:
    doc = json.loads('{"input": [{"type": "blocklist", "patterns": ["("]}]}')
    with pytest.raises(ConfigError, match=r"^g\.yaml: input\[0\]"):
        parse_config(doc, "g.yaml")
