"""SUT configurations from the command line (``--config`` / ``--launch``, draft 5.7 and 5.10)."""

from __future__ import annotations

import pytest

from otelbench.errors import ConfigError
from otelbench.procedures.configurations import SutConfiguration, parse_configurations


def test_urls_launchers_and_commands_are_told_apart() -> None:
    configs = parse_configurations(
        [
            "disabled=vllm-cpu --no-enable-prefix-caching --block-size 32",
            "enabled=http://127.0.0.1:8001",
            "plain=http://10.0.0.2:8000",
        ],
        ["enabled=vllm serve m --port 8001 --enable-prefix-caching"],
    )
    by = {c.label: c for c in configs}
    assert by["disabled"].vllm_args == ("--no-enable-prefix-caching", "--block-size", "32")
    assert by["disabled"].url is None
    assert by["disabled"].restarted
    assert by["enabled"].url == "http://127.0.0.1:8001"
    assert by["enabled"].command == "vllm serve m --port 8001 --enable-prefix-caching"
    assert by["enabled"].restarted
    assert by["plain"].command is None
    assert not by["plain"].restarted
    assert by["enabled"].describe()["kind"] == "command"
    assert by["disabled"].describe()["kind"] == "vllm-cpu"
    assert by["plain"].describe()["kind"] == "url"


def test_bare_vllm_cpu_is_the_launcher_without_extra_arguments() -> None:
    (config,) = parse_configurations(["base=vllm-cpu"], [])
    assert config.vllm_args == ()


@pytest.mark.parametrize(
    ("configs", "launches", "message"),
    [
        (["nolabel"], [], "--config wants LABEL=VALUE"),
        (["a="], [], "--config wants LABEL=VALUE"),
        (["a=http://x:1", "a=http://y:1"], [], "given twice"),
        (["a=http://x:1"], ["b=serve"], "without a --config"),
        (["a=vllm-cpu"], ["a=serve"], "launched by otelbench"),
        (["a b=http://x:1"], [], "configuration label"),
    ],
)
def test_bad_entries_get_one_clear_error(
    configs: list[str], launches: list[str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_configurations(configs, launches)


def test_a_configuration_needs_exactly_one_way_to_reach_the_target() -> None:
    with pytest.raises(ConfigError, match="one of them"):
        SutConfiguration("x")
    with pytest.raises(ConfigError, match="one of them"):
        SutConfiguration("x", url="http://a:1", vllm_args=())
