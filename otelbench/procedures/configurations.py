"""SUT configurations: the settings a comparing procedure runs the same workload under.

Draft 5.7 (prefix cache disabled vs enabled) and 5.10 (guardrails off, input, output, full)
compare configurations of one target, and the target must be restarted between them (5.7.3
steps 1 and 4). A :class:`SutConfiguration` says how to reach the target in one configuration:

* ``vllm_args``: the built-in vLLM on CPU (``--sut vllm-cpu``), launched with these extra
  ``vllm serve`` arguments — restarted for the configuration;
* ``command`` + ``url``: a shell command that starts the target, which then serves at ``url``
  (:class:`~otelbench.sut.CommandServer`) — restarted for the configuration;
* ``url`` alone: a target already running in that configuration — not restarted (procedures
  say so in their deviations when it matters).

On the command line (``otelbench test prefix-cache`` …)::

    --config disabled=vllm-cpu --no-enable-prefix-caching      built-in launcher + arguments
    --config enabled=http://127.0.0.1:8001                     a running target
    --config enabled=http://127.0.0.1:8001 --launch 'enabled=vllm serve m --port 8001'
                                                               a command that starts it

Example::

    configs = parse_configurations(["off=vllm-cpu --no-enable-prefix-caching",
                                    "on=http://127.0.0.1:8001"], [])
    configs[0].vllm_args      # ('--no-enable-prefix-caching',)
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from otelbench.errors import ConfigError
from otelbench.model.procedure import SutConfigurationDescription

__all__ = ["VLLM_CPU", "SutConfiguration", "parse_configurations"]

VLLM_CPU: Final = "vllm-cpu"
"""The ``--config LABEL=vllm-cpu [ARGS]`` keyword for the built-in launcher."""


@dataclass(frozen=True)
class SutConfiguration:
    """How to reach the target in one configuration (module docstring); ``label`` names it."""

    label: str
    url: str | None = None
    command: str | None = None
    vllm_args: tuple[str, ...] | None = None
    description: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment added to a launched server's (vLLM launcher or command)."""

    def __post_init__(self) -> None:
        if not self.label or not self.label.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(
                f"configuration label {self.label!r}: use letters, digits, '-' or '_'"
            )
        if (self.vllm_args is None) == (self.url is None):
            raise ConfigError(
                f"configuration {self.label!r}: give a URL or '{VLLM_CPU} [ARGS]' (one of them)"
            )
        if self.command is not None and self.url is None:
            raise ConfigError(
                f"configuration {self.label!r}: a --launch command needs the URL it serves at"
            )

    @property
    def restarted(self) -> bool:
        """Started afresh for this configuration (launcher or command), not a running target."""
        return self.vllm_args is not None or self.command is not None

    def describe(self) -> SutConfigurationDescription:
        """For the report's configuration section."""
        kind: Literal["vllm-cpu", "command", "url"] = (
            "vllm-cpu" if self.vllm_args is not None else "command" if self.command else "url"
        )
        return {
            "label": self.label,
            "kind": kind,
            "url": self.url,
            "command": self.command,
            "vllm_args": None if self.vllm_args is None else list(self.vllm_args),
            "restarted": self.restarted,
            "description": self.description,
            "env": dict(self.env),
        }


def _split_pair(text: str, option: str) -> tuple[str, str]:
    label, sep, value = text.partition("=")
    if not sep or not label.strip() or not value.strip():
        raise ConfigError(f"{option} wants LABEL=VALUE, got {text!r}")
    return label.strip(), value.strip()


def parse_configurations(configs: Sequence[str], launches: Sequence[str]) -> list[SutConfiguration]:
    """``--config LABEL=URL|vllm-cpu [ARGS]`` and ``--launch LABEL=COMMAND`` (module docstring).

    Raises :class:`ConfigError` for a malformed entry, a duplicate label, or a ``--launch``
    whose label has no ``--config``.
    """
    out: dict[str, SutConfiguration] = {}
    commands = dict(_split_pair(text, "--launch") for text in launches)
    for text in configs:
        label, value = _split_pair(text, "--config")
        if label in out:
            raise ConfigError(f"--config {label!r} is given twice")
        try:
            words = shlex.split(value)
        except ValueError as exc:  # unbalanced quotes, a trailing backslash
            raise ConfigError(f"--config {label!r}: {exc}: {value!r}") from None
        if words and words[0] == VLLM_CPU:
            if label in commands:
                raise ConfigError(f"--launch {label!r}: '{VLLM_CPU}' is launched by otelbench")
            out[label] = SutConfiguration(label, vllm_args=tuple(words[1:]))
        else:
            out[label] = SutConfiguration(label, url=value, command=commands.get(label))
    unknown = sorted(set(commands) - set(out))
    if unknown:
        raise ConfigError(f"--launch for {unknown} without a --config of that label")
    return list(out.values())
