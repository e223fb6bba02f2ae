"""The ``gateway`` typer command (registered in otelbench.cli by ``app.command()(gateway)``):
every bad input ends in one line and exit code 1, before anything listens."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from otelbench.cli.gateway import gateway


def app() -> typer.Typer:
    a = typer.Typer()
    a.command()(gateway)
    a.command("noop")(lambda: None)  # two commands: typer keeps the sub-command name
    return a


def test_bad_config_file_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "g.yaml"
    cfg.write_text("output: [{type: pii, kinds: [ssn]}]")
    r = CliRunner().invoke(
        app(), ["gateway", "--upstream", "http://127.0.0.1:1", "--config", str(cfg)]
    )
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert lines == [f"otelbench: error: {cfg}: output[0].kinds[0]: 'ssn' is not one of "
                     "card, email, phone"]  # fmt: skip


def test_bad_upstream_url_is_one_line() -> None:
    r = CliRunner().invoke(app(), ["gateway", "--upstream", "localhost:8000"])
    assert r.exit_code == 1
    assert r.output.strip() == (
        "otelbench: error: bad upstream URL 'localhost:8000': want http://host:port"
    )


def test_help_lists_the_options() -> None:
    r = CliRunner().invoke(app(), ["gateway", "--help"])
    assert r.exit_code == 0
    for option in ("--upstream", "--config", "--port", "--api-key", "--read-timeout"):
        assert option in r.output
