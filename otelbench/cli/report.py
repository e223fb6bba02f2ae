"""``otelbench report DIR``: recompute a run's reports from the stored spans alone."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from otelbench.errors import ConfigError

__all__ = ["report", "wait_for_shards"]

POLL_S = 10.0
"""How often :func:`wait_for_shards` reads the store."""


def wait_for_shards(store: str | Path, run_id: str, timeout_s: float) -> str:
    """Wait up to ``timeout_s`` until run ``run_id`` has every shard's run span in ``store``
    (its shards declare how many); what was found, in a line. A run from one host is complete
    once its run span is there."""
    from otelbench.query import open_store
    from otelbench.query.extract import list_runs

    deadline = time.monotonic() + timeout_s
    found = "no run span yet"
    while True:
        with open_store(store) as runner:
            runs = [r for r in list_runs(runner) if r.run_id == run_id]
        if runs:
            manifest = runs[-1].manifest
            count = int(manifest.get("shard_count") or 1)
            ended = len(manifest.get("shards") or [None])
            found = f"run {run_id}: {ended} of {count} shard(s) ended"
            if ended >= count:
                return found
        if time.monotonic() + POLL_S > deadline:
            return f"{found} after {timeout_s:g} s; reporting what is stored"
        time.sleep(POLL_S)


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
    wait: Annotated[
        float,
        typer.Option(
            help="Seconds to wait, for a run sent from several hosts (--run-id), until every "
            "shard's run span is in the store (a shard that never ends is then named missing)."
        ),
    ] = 0.0,
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
    if wait > 0:
        if run_id is None:
            raise ConfigError("--wait waits for one run's shards: give its --run-id")
        typer.echo(f"otelbench: {wait_for_shards(target, run_id, wait)}", err=True)
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


def render(
    report_path: Annotated[
        Path,
        typer.Argument(
            metavar="REPORT", help="A report.json, or a run directory holding one.", exists=True
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Where to write report.md and report.html (not the report's own directory, "
            "whose report.html has the per-request plots)."
        ),
    ],
) -> None:
    """Render report.md and report.html from a report.json alone, without the span store.

    The report is read through the one way in (checked against its types, an older schema
    version upgraded) and rendered; nothing is recomputed. The figures that need per-request
    data say so: `otelbench report` redraws them from the store.
    """
    from otelbench.model.load import load_report, report_file
    from otelbench.render import write_report_pages

    source = report_file(report_path)
    if out.resolve() == source.parent.resolve():
        raise ConfigError(
            f"--out {out} holds the report.json rendered from: write the pages elsewhere "
            "(otelbench report redraws them there with the per-request plots)"
        )
    report = load_report(source)
    out.mkdir(parents=True, exist_ok=True)
    typer.echo(write_report_pages(report, out))
