"""Parsing shared by the command-line modules (``otelbench.cli``, ``otelbench.procedures.cli``)."""

from __future__ import annotations

import json
from typing import Any

from otelbench.errors import ConfigError

__all__ = ["key_values"]


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
