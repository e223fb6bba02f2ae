"""Safe reading and number formatting of report dicts, shared by every renderer.

A ``report.json`` (``docs/report-schema.md``) read back from disk may come from an older
otelbench and lack any key, so renderers and checks read it through these few functions only:

* :func:`dig` — the value at a path of keys, or a default when any step is absent or not a
  mapping; :func:`mapping` — a value that must be a mapping, else ``{}``;
* :func:`number`, :func:`integer`, :func:`nonblank` — a value of that type, else None (a bool is no
  number; NaN and infinities are no number);
* :func:`fmt` — a number with fixed decimals and an optional unit, or :data:`NA`;
  :func:`load_text` — ``run.load`` in a few words.

Usage::

    from otelbench.report.access import dig, fmt

    fmt(dig(report, "metrics", "client", "ttft_ms", "p99"), 2, "ms")   # '41.20 ms' or 'n/a'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "NA",
    "NOT_RECORDED",
    "dig",
    "fmt",
    "integer",
    "load_text",
    "mapping",
    "markdown_cell",
    "markdown_table",
    "nonblank",
    "number",
]

NA: Final = "n/a"
"""What an absent number prints as."""
NOT_RECORDED: Final = "not recorded"
"""What an absent declaration prints as."""


def dig(obj: Any, *keys: str, default: Any = None) -> Any:
    """The value at ``obj[keys[0]][keys[1]]…``; ``default`` when a step is absent or its parent
    is not a mapping.

    >>> dig({"a": {"b": 1}}, "a", "b"), dig({"a": 1}, "a", "b"), dig({}, "a", default=0)
    (1, None, 0)
    """
    for key in keys:
        if not isinstance(obj, Mapping) or key not in obj:
            return default
        obj = obj[key]
    return obj


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


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
