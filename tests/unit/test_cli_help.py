"""Every command's ``--help`` renders: help texts are Rich markup, and a stray ``[...]`` in one
breaks that command's help with a MarkupError (it happened)."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from otelbench.cli import app


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under a (Typer's) click group."""
    out: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        out.append(path)
        if hasattr(command, "commands"):
            out += _commands(command, path)
    return out


def test_every_command_renders_its_help() -> None:
    commands = _commands(typer.main.get_command(app))
    assert ("test", "ttft") in commands
    assert ("dashboards", "push") in commands
    runner = CliRunner()
    for path in [(), *commands]:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output, result.exception)
        assert "Usage" in result.output, path
