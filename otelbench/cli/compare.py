"""``otelbench compare``: compare systems from their runs' reports (draft section 6)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, TextIO

import typer

from otelbench.compare import compare_runs, load_run, parse_run_arguments
from otelbench.errors import ConfigError
from otelbench.render.compare import render_compare_markdown

__all__ = ["compare", "compare_command"]


def compare(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Run directories or report.json files. SYSTEM=PATH names the run's system; "
            "other runs are grouped by --group (default: run.sut.software, run.model, "
            "run.target). The first system is the baseline."
        ),
    ],
    group: Annotated[
        str | None,
        typer.Option(
            help="Group runs into systems by these comma-separated report keys, "
            "e.g. run.sut.hardware or run.model,run.load.rate."
        ),
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option(
            help="SYSTEM=N: a system's GPU count (its name or id A, B, …) for output tokens "
            "per GPU-second (draft 6.2); overrides run.sut.hardware. Repeatable."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Directory for compare.json and compare.md.")
    ] = None,
    confidence: Annotated[
        float, typer.Option(help="Confidence level of the bootstrap intervals.")
    ] = 0.95,
    alpha: Annotated[float, typer.Option(help="Significance level of the tests.")] = 0.05,
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and of a sampled permutation test.")
    ] = 0,
) -> None:
    """Compare systems from the report.json files of their runs (draft section 6)."""
    raise typer.Exit(
        compare_command(
            runs,
            group_by=group,
            gpus=gpus or [],
            out=out,
            confidence=confidence,
            alpha=alpha,
            seed=seed,
        )
    )


def _parse_gpus(items: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        try:
            count = int(value)
        except ValueError:
            count = -1
        if not sep or not name or count < 0:
            raise ConfigError(f"--gpus {item!r}: expected SYSTEM=N with N a GPU count >= 0")
        out[name] = count
    return out


def compare_command(
    runs: Sequence[str],
    *,
    group_by: str | None = None,
    gpus: Sequence[str] = (),
    out: Path | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``otelbench compare``: load the runs, compare, print Markdown, write ``--out`` files.

    ``runs`` are ``[SYSTEM=]PATH`` arguments (a run directory or a ``report.json``);
    ``group_by`` is a comma-separated list of dotted report paths; ``gpus`` are ``SYSTEM=N``
    items. Writes ``OUT/compare.json`` and ``OUT/compare.md`` when ``out`` is given. Returns the
    exit code (0); bad input raises :class:`~otelbench.errors.ConfigError`.

    Example::

        compare_command(["a=out/a1", "a=out/a2", "a=out/a3", "b=out/b1", "b=out/b2",
                         "b=out/b3"], gpus=["b=1"], out=Path("out/compare"))
    """
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if not runs:
        raise ConfigError("no runs to compare: give run directories or report.json files")
    keys = [k.strip() for k in group_by.split(",") if k.strip()] if group_by else None
    if group_by is not None and not keys:
        raise ConfigError("--group: give comma-separated report keys, e.g. run.sut.software")
    loaded = [load_run(path, system=system) for system, path in parse_run_arguments(runs)]
    result = compare_runs(
        loaded,
        group_by=keys,
        gpus=_parse_gpus(gpus),
        confidence=confidence,
        alpha=alpha,
        seed=seed,
    )
    markdown = render_compare_markdown(result)
    stdout.write(markdown)
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "compare.json").write_text(
                json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                encoding="utf-8",
            )
            (out / "compare.md").write_text(markdown, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write the comparison to {out}: {exc}") from None
        stderr.write(f"otelbench: comparison written to {out}/compare.json and {out}/compare.md\n")
    return 0
