"""``otelbench report DIR``: recompute a run's reports from the stored spans alone."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from otelbench.errors import ConfigError

__all__ = ["report"]


def report(
    directory: Annotated[Path, typer.Argument(help="A run directory written by `otelbench run`.")],
    store: Annotated[
        str | None,
        typer.Option(
            help="Span store: a DuckDB file (default: DIRECTORY/spans.duckdb), "
            "chdb:///abs/dir (ClickHouse in-process; ?database=NAME picks a database) or "
            "clickhouse://user:password@host:port/database (a ClickHouse server; "
            "clickhouses:// for TLS)."
        ),
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="Which run (default: the latest).")] = None,
) -> None:
    """Recompute report.json, report.md and report.html from the stored spans alone.

    A DuckDB store that a running collector writes is read from a snapshot the collector takes
    (otelbench/store/duckdb.py); stderr says when it was taken.
    """
    from otelbench.benchmark import write_reports
    from otelbench.query.extract import is_store_url
    from otelbench.store.duckdb import snapshot_if_written, snapshot_note

    target: str | Path
    if store is not None and is_store_url(store):
        target = store
    else:
        target = Path(store) if store is not None else directory / "spans.duckdb"
        if not target.exists():
            raise ConfigError(f"no span store at {target}")
    directory.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_if_written(target) if isinstance(target, Path) else None
    try:
        _, markdown = write_reports(directory, snapshot.path if snapshot else target, run_id)
    finally:
        if snapshot is not None:
            snapshot.path.unlink(missing_ok=True)
    typer.echo(markdown)
    if snapshot is not None:
        note = snapshot_note(snapshot.taken_unix_ns)
        typer.echo(f"otelbench: {target} is being written by its collector: {note}", err=True)
