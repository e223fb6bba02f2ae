"""Parsing shared by the command-line modules (``otelbench.cli``, ``otelbench.procedures.cli``)."""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from otelbench.errors import ConfigError

__all__ = ["PROMPT_FORMATS", "declared_sut", "json_object", "key_values", "prompt_format"]


def key_values(items: list[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a dict; VALUE as JSON when it parses, else the string.

    >>> key_values(["n=3", "path=a.json"], "--workload-param")
    {'n': 3, 'path': 'a.json'}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def json_object(text: str | None, option: str) -> dict[str, Any]:
    """The JSON object an option gives (``{}`` when not given); anything else is a ConfigError.

    >>> json_object('{"top_k": 5}', "--extra-body")
    {'top_k': 5}
    """
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object")
    return value


def declared_sut(
    boundary: str | None, hardware: str | None, software: str | None
) -> dict[str, str]:
    """The SUT as the user declared it (``--sut-boundary``/``-hardware``/``-software``)."""
    pairs = (("boundary", boundary), ("hardware", hardware), ("software", software))
    return {key: value for key, value in pairs if value}


PROMPT_FORMATS: Final = ("token_ids", "text")


def prompt_format(value: str) -> Literal["token_ids", "text"]:
    """``--prompt-format``: ``token_ids`` or ``text`` (RunConfig.prompt_format).

    >>> prompt_format("text")
    'text'
    """
    if value == "token_ids":
        return "token_ids"
    if value == "text":
        return "text"
    raise ConfigError(f"--prompt-format must be one of {', '.join(PROMPT_FORMATS)}, got {value!r}")
