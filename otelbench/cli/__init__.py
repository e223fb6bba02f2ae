"""The ``otelbench`` command line: a thin layer that builds configuration and calls the library.

Every error otelbench raises on purpose ends in one line on stderr and exit code 1; usage errors
exit 2 (typer's convention). One module per command group, all options in
:mod:`otelbench.cli.options` (the procedures' own in their ``Params``, :mod:`otelbench.options`):

- ``otelbench run``        run a benchmark against a target and write the reports (``run``)
- ``otelbench report DIR`` recompute the reports from the stored spans alone (``report``)
- ``otelbench render REPORT --out DIR``  report.md and report.html from a report.json alone
  (``report``)
- ``otelbench collector``  run the embedded OTLP/HTTP collector standalone (``collector``; also
  ``python -m otelbench.collector``)
- ``otelbench compare``    compare systems from their runs' reports, draft section 6 (``compare``)
- ``otelbench test NAME``  a test procedure of draft section 5 (``test``)
- ``otelbench gateway``    the guardrail gateway (``gateway``)
- ``otelbench watch``, ``otelbench probe``  live metrics and a probe stream (``live``)
- ``otelbench dashboards push``  provision Grafana (``dashboards``)

No module outside this package imports typer.
"""

from __future__ import annotations

import os
import sys

import typer

from otelbench.cli.collector import collector
from otelbench.cli.compare import compare
from otelbench.cli.dashboards import dashboards_app
from otelbench.cli.gateway import gateway
from otelbench.cli.live import probe, watch
from otelbench.cli.report import render, report
from otelbench.cli.run import run
from otelbench.cli.test import test_app
from otelbench.errors import OtelbenchError

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="OpenTelemetry-based benchmarking of LLM serving, by the IETF methodology draft.",
)
app.add_typer(test_app, name="test")
app.command("gateway")(gateway)
app.command("watch")(watch)
app.command("probe")(probe)
app.add_typer(dashboards_app, name="dashboards")
app.command("run")(run)
app.command("report")(report)
app.command("render")(render)
app.command("collector")(collector)
app.command("compare")(compare)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning otelbench errors into one line and exit code 1."""
    try:
        rc = app(args=argv, standalone_mode=False)  # click returns typer.Exit's code here
        sys.exit(rc if isinstance(rc, int) else 0)
    except OtelbenchError as exc:
        typer.echo(f"otelbench: error: {exc}", err=True)
        sys.exit(1)
    except typer.Abort:
        typer.echo("otelbench: aborted", err=True)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors (typer bundles its own click)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            typer.echo(f"otelbench: error: {exc}", err=True)
        sys.exit(int(getattr(exc, "exit_code", 2)))
    except Exception as exc:  # anything unexpected: one line, no traceback
        if os.environ.get("OTELBENCH_DEBUG"):
            raise
        typer.echo(
            f"otelbench: internal error: {type(exc).__name__}: {exc} "
            "(set OTELBENCH_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(70)
