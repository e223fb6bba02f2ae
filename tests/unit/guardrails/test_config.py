"""The configuration file: a good one loads into typed settings; a bad one gets ONE clear error
naming the file and the field. Also the registry (built-ins, entry points)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.guardrails.base import Stage
from otelbench.guardrails.config import (
    DEFAULT_REFUSAL,
    config_from_env,
    load_config,
    parse_config,
)
from otelbench.guardrails.filters import BlocklistFilter, PiiFilter
from otelbench.guardrails.registry import available, filter_class

GOOD = """
block_response: completion
block_status: 451
output_window: 24
timeout_ms: 200
on_error: open
input:
  - type: max_input_length
    max_chars: 100
  - type: blocklist
    name: words
    keywords: [forbidden]
    on_error: closed
    timeout_ms: 5
output:
  - type: pii
    kinds: [email]
    models: [tiny]
"""


def write(tmp_path: Path, text: str, name: str = "g.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_good_yaml_loads(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert [(s.type, s.name, s.stage) for s in cfg.filters] == [
        ("max_input_length", "max_input_length", Stage.INPUT),
        ("blocklist", "words", Stage.INPUT),
        ("pii", "pii", Stage.OUTPUT),
    ]
    mil, words, pii = cfg.filters
    assert (mil.timeout_s, mil.on_error) == (0.2, "open")  # file defaults
    assert (words.timeout_s, words.on_error) == (0.005, "closed")  # per-filter overrides
    assert isinstance(words.filter, BlocklistFilter)
    assert isinstance(pii.filter, PiiFilter)
    assert pii.models == frozenset({"tiny"})
    assert pii.applies_to("tiny")
    assert not pii.applies_to("other")
    assert not pii.applies_to(None)
    assert (cfg.block_response, cfg.block_status, cfg.output_window) == ("completion", 451, 24)
    assert len(cfg.sha256) == 64
    attrs = cfg.resource_attributes()
    assert attrs[semconv.RESOURCE_GUARDRAIL_INPUT_ENABLED] is True
    assert attrs[semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS] == ["pii"]
    assert attrs[semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS] == ["max_input_length", "words"]
    assert attrs[semconv.RESOURCE_GUARDRAIL_SYSTEMS] == [
        "max_input_length:max_input_length",
        "blocklist:words",
        "pii:pii",
    ]


def test_json_and_empty_files(tmp_path: Path) -> None:
    p = tmp_path / "g.json"
    p.write_text(json.dumps({"input": [{"type": "pii", "action": "block"}]}))
    cfg = load_config(p)
    assert cfg.input[0].filter.check(["a@b.io"], Stage.INPUT).action.value == "block"
    empty = load_config(write(tmp_path, ""))
    assert (empty.filters, empty.refusal_message) == ((), DEFAULT_REFUSAL)
    assert empty.resource_attributes()[semconv.RESOURCE_GUARDRAIL_OUTPUT_ENABLED] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("inptu: []", "inptu: unknown field"),
        ("block_response: maybe", "block_response: want one of error, completion, got 'maybe'"),
        ("block_status: 200", "block_status: want an HTTP status 400..599, got 200"),
        ("output_window: -1", "output_window: want an integer ≥ 0"),
        ("timeout_ms: fast", "timeout_ms: want a number > 0, got 'fast'"),
        ("on_error: maybe", "on_error: want one of open, closed"),
        ("input: {type: pii}", "input: want a list of filters"),
        ("input: [pii]", "input[0]: want a mapping with at least 'type'"),
        ("input: [{name: x}]", "input[0].type: missing"),
        ("input: [{type: nope}]", "input[0].type: unknown filter type 'nope' (known: blocklist"),
        ("output: [{type: max_input_length, max_chars: 3}]",
         "output[0].type: 'max_input_length' is not an output filter"),
        ("input: [{type: pii, kinds: [email], kind: x}]", "input[0].kind: unknown field"),
        ("input: [{type: max_input_length}]",
         "input[0].max_chars: missing (required by filter type 'max_input_length')"),
        ("input: [{type: blocklist, patterns: ['(']}]",
         "input[0].patterns[0]: not a regular expression"),
        ("input: [{type: pii, timeout_ms: 0}]", "input[0].timeout_ms: want a number > 0, got 0"),
        ("input: [{type: pii, on_error: shut}]", "input[0].on_error: want one of open, closed"),
        ("input: [{type: pii, models: tiny}]", "input[0].models: want a list of model names"),
        ("output: [{type: pii}, {type: pii}]", "output[1].name: 'pii' is used twice"),
        ("output: [{type: classifier, url: ftp://x}]",
         "output[0].url: want an http:// or https:// URL"),
        ("version: 2", "version: only version 1 is known"),
        ("- a\n- b", "want a mapping at the top level, got list"),
        ("input: [\n  {type: pii", "not valid YAML: line 2"),
    ],
)  # fmt: skip
def test_bad_file_one_error_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text_of = str(info.value)
    assert text_of.startswith(f"{path}: ")
    assert message in text_of
    assert "\n" not in text_of


def test_unreadable_file_and_env(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read guardrail configuration"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=f"^{semconv.ENV_GUARDRAILS_CONFIG} is not set"):
        config_from_env({})
    p = write(tmp_path, "input: [{type: pii}]")
    assert config_from_env({semconv.ENV_GUARDRAILS_CONFIG: str(p)}).input[0].name == "pii"


def test_bad_json_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "g.json"
    p.write_text("{")
    with pytest.raises(ConfigError, match=r"g\.json: not valid JSON"):
        load_config(p)


def test_parse_config_in_code() -> None:
    cfg = parse_config({"output": [{"type": "pii"}]}, source="inline")
    assert cfg.source == "inline"
    assert cfg.output[0].stage is Stage.OUTPUT
    with pytest.raises(ConfigError, match=r"^inline: output\[0\]\.kinds"):
        parse_config({"output": [{"type": "pii", "kinds": []}]}, source="inline")


def test_registry_builtins_and_entry_point(tmp_path: Path) -> None:
    assert {"blocklist", "classifier", "max_input_length", "pii"} <= set(available())
    assert filter_class("pii") is PiiFilter
    # A real third-party distribution on sys.path, found through its entry point metadata.
    pkg = tmp_path / "thirdparty_guard"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from otelbench.guardrails.base import GuardrailFilter, Verdict\n"
        "class Upper(GuardrailFilter):\n"
        "    type_name = 'upper'\n"
        "    inline = True\n"
        "    def check(self, texts, stage):\n"
        "        return Verdict.block('upper') if any(t.isupper() for t in texts) "
        "else Verdict.ALLOW\n"
        "class NotAFilter:\n"
        "    pass\n"
    )
    dist = tmp_path / "thirdparty_guard-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-guard\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{semconv.ENTRY_POINT_GROUP_GUARDRAILS}]\n"
        "upper = thirdparty_guard:Upper\n"
        "broken = thirdparty_guard:NotAFilter\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        assert "upper" in available()
        cls = filter_class("upper")
        assert cls.__name__ == "Upper"
        cfg = parse_config({"input": [{"type": "upper"}]})
        assert cfg.input[0].filter.check(["LOUD"], Stage.INPUT).rule == "upper"
        with pytest.raises(ConfigError, match="is not a GuardrailFilter subclass"):
            filter_class("broken")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("thirdparty_guard", None)
