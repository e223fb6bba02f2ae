"""Command-line metadata of configuration dataclasses: a field's help text, option name and unit.

The procedures' ``Params`` (and the command line's own option dataclasses) declare their fields
with :func:`option`; :mod:`otelbench.cli.options` generates each command's options from them, so
an option is declared once, beside the value it sets. Plain data: no typer here. A field declared
without :func:`option` is not on the command line (e.g. 5.3's ``fractions``).

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
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["METADATA_KEY", "OptionMeta", "common", "nested", "option"]

METADATA_KEY: Final = "otelbench.option"


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
