"""Command-line metadata of configuration dataclasses: a field's help text, option name and unit.

The procedures' ``Params`` (and the command line's own option dataclasses) declare their fields
with :func:`option`; :mod:`otelbench.cli.options` generates each command's options from them, so
an option is declared once, beside the value it sets. Plain data, the type of the values typer
parses (:data:`OptionValue`) and the parsers of those it does not (:func:`key_values`,
:func:`json_object`, :func:`prompt_format`): no typer here. A field declared without
:func:`option` is not on the command line (e.g. 5.3's ``fractions``).

- ``name``: the option's name when it is not the field's (``level_duration`` → ``--level-duration``
  for the field ``level_duration_s``);
- ``scale``: the field holds the option's value divided by it (``--decode-deadline-ms`` → seconds:
  1000; ``--level`` in % → a fraction: 100);
- a ``tuple`` field is a repeatable option; not given, the field keeps its default;
- :func:`nested`: some fields of a nested dataclass are options of their own, with other help;
- :func:`common`: the field takes the value of the command's common option of the same name.

Example::

    @dataclass(frozen=True)
    class TtftParams:
        rate: float | None = option(None, help="Open loop: arrival rate, req/s.")
        level_duration_s: float | None = option(None, help="Seconds per level.",
                                                name="level_duration")
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from otelbench.errors import ConfigError
from otelbench.model.jsonvalue import JsonObject

__all__ = [
    "METADATA_KEY",
    "PROMPT_FORMATS",
    "OptionMeta",
    "OptionValue",
    "OptionValues",
    "common",
    "json_object",
    "key_values",
    "nested",
    "option",
    "prompt_format",
]

METADATA_KEY: Final = "otelbench.option"

OptionValue: TypeAlias = (
    str | int | float | bool | Path | list[str] | list[int] | list[float] | None
)
"""A value typer parsed for an option made from a field: the fields' types (``str``, ``int``,
``float``, ``bool``, ``Path``, each maybe ``None``), a ``list`` of one for a repeatable option.
Not JSON: a ``Path`` is none."""
OptionValues: TypeAlias = dict[str, OptionValue]
"""A command's option values by option name, as typer gives them."""


@dataclasses.dataclass(frozen=True)
class OptionMeta:
    """How a field appears on the command line (module docstring)."""

    help: str = ""
    name: str | None = None
    scale: float | None = None
    nested_help: Mapping[str, str] | None = None
    common: bool = False


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    name: str | None = None,
    scale: float | None = None,
) -> Any:
    """A dataclass field that is a command-line option (no default: a required option)."""
    meta = {METADATA_KEY: OptionMeta(help=help, name=name, scale=scale)}
    return dataclasses.field(default=default, metadata=meta)


def nested(factory: Callable[[], Any], *, help: Mapping[str, str]) -> Any:
    """A nested dataclass field whose fields named in ``help`` are options, with those helps."""
    meta = {METADATA_KEY: OptionMeta(nested_help=dict(help))}
    return dataclasses.field(default_factory=factory, metadata=meta)


def common(default: Any) -> Any:
    """A field set from the command's common option of the same name (e.g. ``workload``)."""
    return dataclasses.field(default=default, metadata={METADATA_KEY: OptionMeta(common=True)})


def key_values(items: list[str], option: str) -> JsonObject:
    """``KEY=VALUE`` strings as a dict; VALUE as JSON when it parses, else the string.

    >>> key_values(["n=3", "path=a.json"], "--workload-param")
    {'n': 3, 'path': 'a.json'}
    """
    out: JsonObject = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def json_object(text: str | None, option: str) -> JsonObject:
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
