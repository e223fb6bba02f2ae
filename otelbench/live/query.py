"""The live package's queries: the server spans of a window, by source; store size; retention.

The SQL is in ``otelbench/live/sql/<dialect>/<name>.sql`` (the query layer's layout) —
``duckdb`` for the embedded store, ``clickhouse`` for ``otel_traces`` exactly as the OpenTelemetry
Collector's ClickHouse exporter creates it (chdb or a ClickHouse server) — with every span,
attribute and kind name bound from :mod:`otelbench.semconv`, as in :mod:`otelbench.query`.
``-- @include`` lines expand from the query layer's fragments of the same dialect (the
server-span record's columns are written once per dialect, in
``otelbench/query/sql/<dialect>/_server_span_columns.sql``), and the queries run through the
query layer's one runner (:meth:`~otelbench.query.QueryRunner.run` with
``sql_package="otelbench.live"``: one parameter check, one error translation), so both dialects
return the same columns and :func:`extract_window` the same :class:`LiveWindow`
(``tests/integration/test_watch_clickhouse.py`` holds them equal).

A store is an open :class:`~otelbench.store.SpanStore` (the DuckDB file, possibly shared with
the receiver's threads: queries hold its lock) or a :class:`~otelbench.query.QueryRunner` from
:func:`~otelbench.query.open_store` (a DuckDB file opened read-only, ``chdb:///dir`` or
``clickhouse://…``), used by one thread at a time. Retention (:func:`delete_older_than`) exists
for the DuckDB store only: a ClickHouse table expires rows with its own TTL.

Example::

    with open_store("chdb:///var/lib/otelbench/ch") as store:
        window = extract_window(store, start_unix_ns=t0, end_unix_ns=t1)
        print(window.sources(), store_bytes(store))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.query.extract import (
    NAME_PARAMETERS,
    PATTERN_PARAMETERS,
    Columns,
    QueryRunner,
    server_requests_from_columns,
)
from otelbench.query.records import ServerRequests
from otelbench.store import SpanStore

__all__ = [
    "DEFAULT_LOOKBACK_NS",
    "LIVE_PARAMETERS",
    "SQL_PACKAGE",
    "LiveStore",
    "LiveWindow",
    "delete_older_than",
    "extract_window",
    "store_bytes",
]

SQL_PACKAGE: Final = "otelbench.live"
"""The package whose ``sql/<dialect>/`` directories hold the live queries."""

DEFAULT_LOOKBACK_NS: Final = 3600 * 10**9
"""Server spans that started more than this before a window are not looked at (1 h)."""

LIVE_PARAMETERS: Final[Mapping[str, str]] = {
    **NAME_PARAMETERS,
    **PATTERN_PARAMETERS,
    "attr_probe_stream": semconv.PROBE_STREAM,
    "source_live": semconv.SOURCE_LIVE,
    "source_probe": semconv.SOURCE_PROBE,
    "source_benchmark": semconv.SOURCE_BENCHMARK,
}
"""The names the live SQL binds: the query layer's (and its attribute patterns) plus the probe
tag and the source values."""


LiveStore = SpanStore | QueryRunner
"""What the live queries read: an open DuckDB store, or a query runner of any dialect."""


@dataclass(frozen=True, slots=True, eq=False)
class LiveWindow:
    """The server spans that ended within one window, one per request, with their source.

    ``requests`` is the query layer's record (``client_index`` is -1 throughout); ``source``
    is :data:`~otelbench.semconv.SOURCE_LIVE`, ``SOURCE_PROBE`` or ``SOURCE_BENCHMARK``;
    ``request_class`` the class attribute's value (None without it); ``ok`` false for a span
    with status Error.
    """

    start_unix_ns: int
    end_unix_ns: int
    requests: ServerRequests
    source: tuple[str, ...]
    request_class: tuple[str | None, ...]
    ok: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        n = len(self.requests)
        if not (len(self.source) == len(self.request_class) == self.ok.size == n):
            raise ValueError("source, request_class and ok need one entry per request")
        if self.end_unix_ns <= self.start_unix_ns:
            raise ValueError("a window must end after it starts")

    @property
    def window_s(self) -> float:
        """The window's length in seconds."""
        return (self.end_unix_ns - self.start_unix_ns) / 1e9

    def sources(self) -> tuple[str, ...]:
        """The sources present, sorted."""
        return tuple(sorted(set(self.source)))

    def mask(self, source: str) -> npt.NDArray[np.bool_]:
        """True for the requests of ``source``."""
        return np.fromiter((s == source for s in self.source), dtype=np.bool_, count=len(self))

    def __len__(self) -> int:
        return len(self.requests)


def _run(store: LiveStore, name: str, values: Mapping[str, object]) -> Columns:
    runner = QueryRunner.for_store(store) if isinstance(store, SpanStore) else store
    return runner.run(name, sql_package=SQL_PACKAGE, **{**LIVE_PARAMETERS, **values})


def extract_window(
    store: LiveStore,
    *,
    start_unix_ns: int,
    end_unix_ns: int,
    class_attribute: str = semconv.REQUEST_CLASS,
    lookback_ns: int = DEFAULT_LOOKBACK_NS,
) -> LiveWindow:
    """The server spans that ended within ``[start_unix_ns, end_unix_ns)``, with their source.

    ``class_attribute`` is looked up on the server span, its resource, then its client (or
    parent) span (``sql/<dialect>/window_server_requests.sql``).
    """
    cols = _run(
        store,
        "window_server_requests",
        {
            "start_unix_ns": int(start_unix_ns),
            "end_unix_ns": int(end_unix_ns),
            "lookback_ns": int(lookback_ns),
            "class_attribute": class_attribute,
        },
    )
    n = len(cols["span_id"])
    requests = server_requests_from_columns(cols, np.full(n, -1, dtype=np.int64))
    source = tuple(str(s) for s in np.asarray(cols["source"]))
    classes: Any = np.ma.asarray(cols["class_value"])
    mask = np.ma.getmaskarray(classes)
    request_class = tuple(
        None if m else str(v) for v, m in zip(np.ma.getdata(classes), mask, strict=True)
    )
    ok = np.asarray(np.ma.filled(np.ma.asarray(cols["ok"]), True), dtype=np.bool_)
    return LiveWindow(int(start_unix_ns), int(end_unix_ns), requests, source, request_class, ok)


def store_bytes(store: LiveStore) -> int:
    """The bytes the store holds on disk: the DuckDB file and its WAL; for ClickHouse the
    active parts of ``otel_traces`` in the store's database (``system.parts``)."""
    if isinstance(store, SpanStore) or store.dialect.name == "duckdb":
        path = store.path if isinstance(store, SpanStore) else Path(store.source)
        return sum(p.stat().st_size for p in (path, Path(f"{path}.wal")) if p.exists())
    cols = _run(store, "store_bytes", {"table_traces": semconv.TABLE_TRACES})
    return int(np.asarray(cols["bytes"])[0])


def delete_older_than(store: SpanStore, cutoff_unix_ns: int) -> int:
    """Delete every span that started, and every metric point taken, before ``cutoff_unix_ns``;
    then checkpoint so DuckDB reuses the freed blocks. Returns the spans deleted."""
    with store.lock:
        [(n,)] = store.execute(
            f'SELECT count(*) FROM {semconv.TABLE_TRACES} WHERE "Timestamp" < make_timestamp_ns(?)',
            [int(cutoff_unix_ns)],
        )
        if n:
            store.execute(
                f'DELETE FROM {semconv.TABLE_TRACES} WHERE "Timestamp" < make_timestamp_ns(?)',
                [int(cutoff_unix_ns)],
            )
        for table in (
            semconv.TABLE_METRICS_GAUGE,
            semconv.TABLE_METRICS_SUM,
            semconv.TABLE_METRICS_HISTOGRAM,
        ):
            store.execute(
                f'DELETE FROM {table} WHERE "TimeUnix" < make_timestamp_ns(?)',
                [int(cutoff_unix_ns)],
            )
        store.execute("CHECKPOINT")
    return int(n)
