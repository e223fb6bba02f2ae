"""Number formatting and Markdown cells shared by every renderer, and the checks of open values.

A report reaches the renderers and the judge typed (:mod:`otelbench.model.report`: built here,
or read through :func:`~otelbench.model.load.load_report`, which checks its shape), so they read
it directly. What is left here:

* :func:`number`, :func:`integer`, :func:`nonblank` — a value of that type, else None (a bool is no
  number; NaN and infinities are no number), for the open parts of a report (declarations and
  manifest copies any producer may write);
* :func:`fmt` — a number with fixed decimals and an optional unit, or :data:`NA`;
  :func:`load_text` — ``run.load`` in a few words;
* :func:`markdown_table`, :func:`markdown_cell` — one Markdown table helper for every page.

Usage::

    from otelbench.render.format import fmt

    fmt(report["metrics"]["client"]["ttft_ms"]["p99"], 2, "ms")   # '41.20 ms' or 'n/a'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "NA",
    "NOT_RECORDED",
    "fmt",
    "integer",
    "load_text",
    "markdown_cell",
    "markdown_table",
    "nonblank",
    "number",
]

NA: Final = "n/a"
"""What an absent number prints as."""
NOT_RECORDED: Final = "not recorded"
"""What an absent declaration prints as."""


def number(value: Any) -> float | None:
    """``value`` as a float when it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def integer(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def nonblank(value: Any) -> str | None:
    """``value`` stripped when it is a string with non-blank text, else None."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def fmt(value: Any, digits: int = 2, unit: str = "") -> str:
    """A number with ``digits`` decimals, followed by `` unit`` when given; :data:`NA` when
    ``value`` is no :func:`number`.

    >>> fmt(41.2, 2, "ms"), fmt(3, 0), fmt(None, unit="ms")
    ('41.20 ms', '3', 'n/a')
    """
    v = number(value)
    if v is None:
        return NA
    return f"{v:.{digits}f} {unit}" if unit else f"{v:.{digits}f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: the header, its ``|---|`` rule and one line per row (cells as
    given: :func:`markdown_cell` escapes one).

    >>> markdown_table(["a", "b"], [["1", "2"]])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown_cell(text: Any) -> str:
    """``text`` fit for one Markdown table cell: ``|`` escaped, line breaks as spaces."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def load_text(load: Any) -> str:
    """``run.load`` in a few words: closed-loop concurrency, or open-loop process and rate."""
    if not isinstance(load, Mapping):
        return NOT_RECORDED
    mode = load.get("mode")
    if mode == "closed_loop":
        return f"closed-loop, concurrency {load.get('concurrency')}"
    if load.get("rate") is not None:
        return f"open-loop {mode}, {load.get('rate')} req/s"
    return str(mode) if mode else NOT_RECORDED
