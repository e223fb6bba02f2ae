"""Opening the store the collector writes: the DuckDB file or a ClickHouse store, by its name.

:func:`open_span_writer` is what the receiver opens: a DuckDB path gives the embedded
:class:`~otelbench.store.SpanStore` (:mod:`otelbench.store.duckdb`), a
``chdb:///abs/dir[?database=NAME]`` URL (ClickHouse's engine in-process, chdb-core-lite) or a
``clickhouse[s]://[user[:password]@]host[:port][/db]`` URL (a ClickHouse server through
clickhouse-connect) gives a :class:`~otelbench.store.clickhouse.ClickHouseSpanWriter`.

Example::

    with open_span_writer("chdb:///var/lib/otelbench/ch") as writer:
        writer.insert_spans(rows)
"""

from __future__ import annotations

import os
import re
from typing import Final

from otelbench.errors import ConfigError
from otelbench.store.clickhouse import SCHEMES, ClickHouseSpanWriter
from otelbench.store.duckdb import SpanStore

__all__ = ["SpanWriter", "open_span_writer"]

_URL: Final = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)

SpanWriter = SpanStore | ClickHouseSpanWriter
"""What the receiver writes into: the DuckDB store or a ClickHouse store."""


def open_span_writer(store: str | os.PathLike[str]) -> SpanWriter:
    """The writable store at ``store``: a DuckDB file path, or a ``chdb://``, ``clickhouse://``
    or ``clickhouses://`` URL. Raises :class:`~otelbench.errors.ConfigError` for another scheme.

    >>> with open_span_writer("chdb:///tmp/ch") as writer:  # doctest: +SKIP
    ...     writer.insert_spans(rows)
    """
    if not isinstance(store, str) or (match := _URL.match(store)) is None:
        return SpanStore.open(store)
    if match.group(1).lower() not in SCHEMES:
        known = ", ".join(f"{s}://" for s in sorted(SCHEMES))
        raise ConfigError(f"the collector cannot write a {match.group(1)}:// store; known: {known}")
    return ClickHouseSpanWriter.open(store)
