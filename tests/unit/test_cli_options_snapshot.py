"""Every command's options, as ``--help`` lists them, against a committed snapshot.

``tests/unit/data/cli_options.json`` was generated from the command line before it moved into the
``otelbench.cli`` package (issue 17): for every command and subcommand, each shown parameter's
names, default, type, whether it is required and repeatable. A refactoring of the command line
must leave it unchanged; a deliberate change regenerates it::

    OTELBENCH_WRITE_CLI_SNAPSHOT=1 pytest tests/unit/test_cli_options_snapshot.py
"""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path, PurePath
from typing import Any

import typer

from otelbench.cli import app

SNAPSHOT = Path(__file__).parent / "data" / "cli_options.json"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _param(param: Any) -> dict[str, Any]:
    """What ``--help`` shows of a parameter (typer's own parameter classes: ``bare_type``)."""
    return {
        "opts": sorted(param.opts),
        "secondary_opts": sorted(param.secondary_opts),
        "kind": "argument" if "Argument" in type(param).__name__ else "option",
        "type": str(param.bare_type()),
        "is_flag": bool(getattr(param, "is_flag", False)),
        "required": param.required,
        "multiple": bool(param.multiple),
        "nargs": param.nargs,
        "default": _jsonable(param.default),
        "envvar": _jsonable(param.envvar),
    }


def _options(group: Any, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    shown = [p for p in group.params if not getattr(p, "hidden", False)]
    out[" ".join(("otelbench", *prefix))] = {" ".join(sorted(p.opts)): _param(p) for p in shown}
    for name, command in sorted(getattr(group, "commands", {}).items()):
        out.update(_options(command, (*prefix, name)))
    return out


def current() -> dict[str, Any]:
    """The options of every command of ``otelbench``, by command path and option names."""
    return _options(typer.main.get_command(app))


def test_every_command_keeps_its_options() -> None:
    now = current()
    if os.environ.get("OTELBENCH_WRITE_CLI_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    recorded = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(now) == sorted(recorded)
    for command, options in recorded.items():
        assert now[command] == options, command
