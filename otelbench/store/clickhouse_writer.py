"""The ClickHouse span writer: the embedded collector's store when ``--store`` is a ClickHouse URL.

::

    with ClickHouseSpanWriter.open("chdb:///var/lib/otelbench/ch") as writer:
        writer.insert_spans(rows)                  # one INSERT; in the table when it returns

:func:`open_span_writer` is what the receiver opens: a DuckDB path gives the embedded
:class:`~otelbench.store.SpanStore`, a ``chdb:///abs/dir[?database=NAME]`` URL (ClickHouse's
engine in-process, chdb-core-lite) or a ``clickhouse[s]://[user[:password]@]host[:port][/db]``
URL (a ClickHouse server through clickhouse-connect) gives a :class:`ClickHouseSpanWriter`.

**What it writes.** ``otel_traces`` exactly as the OpenTelemetry Collector's ClickHouse exporter
creates it (the one DDL, ``otelbench/store/clickhouse_schema.sql``, read by
:func:`otelbench.query.clickhouse.clickhouse_schema`), created if absent in the URL's database
(default ``otel``, created if absent), and the same rows :class:`~otelbench.store.SpanRow` gives
the DuckDB store: attribute maps hold every value as the string the exporter writes (arrays as
JSON text), ``Events``/``Links`` as the Nested columns' parallel arrays. So the query layer, the
reports and dashboards read a store this writer filled exactly as one the exporter filled. It
also keeps ``otelbench_meta`` (``schema_version``, ``created_by``), as the DuckDB store does;
the ClickHouse readers do not need it (an exporter-written database has none), but readers and
this writer refuse a database whose meta says a newer otelbench wrote it
(:func:`otelbench.query.clickhouse.store_meta`).

**Metric points are not stored.** The exporter's ``otel_metrics_*`` tables are out of scope
here: :meth:`ClickHouseSpanWriter.insert_metrics` stores nothing and returns 0; the receiver
answers the exporter with ``partial_success`` (the points counted as rejected, with
:data:`METRICS_NOT_STORED` as the message) and counts them in its statistics, never silently.

**Rows on the wire.** One batch is one ``INSERT … FORMAT JSONEachRow`` (one JSON object per
span; timestamps as exact decimal seconds ``"1700000000.123456789"``, which ClickHouse parses
into ``DateTime64(9)`` with no time zone involved). The same text goes to chdb and, through
``raw_insert``, to a server; measured here, 20,000 spans with the hook scenario's attributes
insert into chdb in about 0.4 s.

**Durability.** A batch is in the table when the INSERT returns (a new MergeTree part on disk).
ClickHouse does not ``fsync`` parts unless the table sets ``fsync_after_insert`` (the exporter's
DDL does not), so a crash of the process loses nothing acknowledged, while a power loss may lose
the newest parts.

**Concurrency.** chdb serves one data directory per process and one process per directory: the
collector process holds the session while it runs, and the store is read after it stops (the
run and the procedures do exactly that). Inserts are serialised by :attr:`lock`.

The server path (``clickhouse://``) cannot be exercised on this machine (no ClickHouse server
installs here); it runs the same SQL and rows as chdb through clickhouse-connect.

Errors (translated once, in :mod:`otelbench.query.clickhouse`)::

    OtelbenchError
    ├── ConfigError            a malformed store URL, a missing driver
    └── StoreError             the store cannot be opened or written
        └── NotAnOtelbenchStore  a database written by a newer otelbench
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Final, Protocol

from otelbench import __version__, semconv
from otelbench.errors import ConfigError, StoreError
from otelbench.store.duckdb_store import SCHEMA_VERSION, SpanStore
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = [
    "METRICS_NOT_STORED",
    "ClickHouseSpanWriter",
    "SpanWriter",
    "open_span_writer",
    "span_to_json",
]

METRICS_NOT_STORED: Final = (
    "metric data points are not stored in a ClickHouse span store (spans only)"
)
"""The ``partial_success`` message for metric points a ClickHouse store does not keep."""

_URL: Final = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_SCHEMES: Final = frozenset({"chdb", "clickhouse", "clickhouses"})


class _Connection(Protocol):
    def query_arrow(self, sql: str, params: Any, source: str) -> Any: ...

    def execute(self, sql: str, source: str) -> None: ...

    def insert_rows(self, table: str, payload: str, source: str) -> None: ...


def _seconds(ns: int) -> str:
    """Integer nanoseconds since the epoch as exact decimal seconds (``DateTime64(9)`` text). The
    whole seconds have at least 10 digits: ClickHouse reads a shorter number before the point as
    a date (``"0.000000000"``, an unset OTLP time, fails the whole INSERT)."""
    whole, frac = divmod(int(ns), 1_000_000_000)
    return f"{whole:010d}.{frac:09d}"


def span_to_json(row: SpanRow) -> str:
    """One span as the JSONEachRow line of the exporter's ``otel_traces`` columns.

    >>> span_to_json(row)  # doctest: +SKIP
    '{"Timestamp": "1700000000.000000001", "TraceId": "…", …}'
    """
    return json.dumps(
        {
            "Timestamp": _seconds(row.timestamp_ns),
            "TraceId": row.trace_id,
            "SpanId": row.span_id,
            "ParentSpanId": row.parent_span_id,
            "TraceState": row.trace_state,
            "SpanName": row.span_name,
            "SpanKind": row.span_kind,
            "ServiceName": row.service_name,
            "ResourceAttributes": row.resource_attributes,
            "ScopeName": row.scope_name,
            "ScopeVersion": row.scope_version,
            "SpanAttributes": row.span_attributes,
            "Duration": row.duration_ns,
            "StatusCode": row.status_code,
            "StatusMessage": row.status_message,
            "Events.Timestamp": [_seconds(t) for t in row.events_timestamp_ns],
            "Events.Name": row.events_name,
            "Events.Attributes": row.events_attributes,
            "Links.TraceId": row.links_trace_id,
            "Links.SpanId": row.links_span_id,
            "Links.TraceState": row.links_trace_state,
            "Links.Attributes": row.links_attributes,
        },
        separators=(",", ":"),
    )


class ClickHouseSpanWriter:
    """Writes span batches into a ClickHouse ``otel_traces`` (chdb or a server); see the module
    docstring. Open it with :meth:`open`; :meth:`close` is idempotent.

    Example::

        with ClickHouseSpanWriter.open("chdb:///tmp/ch") as writer:
            assert writer.insert_spans(rows) == len(rows)
    """

    read_only: Final = False

    def __init__(self, connection: _Connection, database: str, source: str, closer: Any) -> None:
        """Internal: use :meth:`open`."""
        self._connection: _Connection | None = connection
        self._database = database
        self._source = source
        self._closer = closer
        self._lock = threading.Lock()
        self.metric_points_not_stored = 0
        """Metric data points received and not stored (see :data:`METRICS_NOT_STORED`)."""

    @classmethod
    def open(cls, url: str) -> ClickHouseSpanWriter:
        """Connect to the store at ``url`` and create its database, ``otel_traces`` and
        ``otelbench_meta`` if absent (nothing else changes in an existing database)."""
        from otelbench.query import clickhouse as ch

        scheme = url.split("://", 1)[0].lower()
        if scheme == "chdb":
            parsed = ch.ChdbUrl.parse(url)
            session = ch.open_chdb_session(parsed.path)
            connection: _Connection = ch.ChdbConnection(session, parsed.database)
            writer = cls(connection, parsed.database, parsed.display(), session.close)
        else:
            target = ch.ServerUrl.parse(url)
            client = ch.connect_server(target, database="default")
            connection = ch.ServerConnection(client)
            writer = cls(connection, target.database, target.display(), client.close)
        try:
            writer._create(ch.clickhouse_schema())
        except BaseException:
            writer.close()
            raise
        return writer

    def _create(self, traces_ddl: str) -> None:
        from otelbench.query.clickhouse import META_TABLE

        db = self._database
        con = self._conn()
        con.execute(f"CREATE DATABASE IF NOT EXISTS {db}", self._source)
        ddl = traces_ddl.replace(
            f"CREATE TABLE IF NOT EXISTS {semconv.TABLE_TRACES} ",
            f"CREATE TABLE IF NOT EXISTS {db}.{semconv.TABLE_TRACES} ",
        )
        if ddl == traces_ddl:
            raise StoreError("the otel_traces DDL does not start as expected; cannot qualify it")
        con.execute(ddl, self._source)
        if "schema_version" in self.meta():  # checked: not written by a newer otelbench
            return
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {db}.{META_TABLE} (key String, value String) "
            "ENGINE = ReplacingMergeTree ORDER BY key",
            self._source,
        )
        lines = (
            json.dumps({"key": "schema_version", "value": str(SCHEMA_VERSION)}),
            json.dumps({"key": "created_by", "value": f"otelbench {__version__}"}),
        )
        con.insert_rows(f"{db}.{META_TABLE}", "\n".join(lines), self._source)

    # ---------------------------------------------------------------------------- properties
    @property
    def path(self) -> str:
        """The store as messages show it (the URL without its password)."""
        return self._source

    @property
    def lock(self) -> threading.Lock:
        """Held around every statement."""
        return self._lock

    def _conn(self) -> _Connection:
        if self._connection is None:
            raise StoreError(f"span store {self._source} is closed")
        return self._connection

    # ---------------------------------------------------------------------------- reading
    def meta(self) -> dict[str, str]:
        """The ``otelbench_meta`` key/value pairs (``schema_version``, ``created_by``); raises
        :class:`~otelbench.errors.NotAnOtelbenchStore` for a newer otelbench's database."""
        from otelbench.query.clickhouse import store_meta

        with self._lock:
            return store_meta(self._conn(), self._database, self._source)

    def span_count(self) -> int:
        """Number of spans in ``otel_traces``."""
        sql = f"SELECT count() FROM {self._database}.{semconv.TABLE_TRACES}"
        with self._lock:
            table = self._conn().query_arrow(sql, {}, self._source)
        return int(table.column(0)[0].as_py())

    # ---------------------------------------------------------------------------- writing
    def insert_spans(self, rows: Sequence[SpanRow]) -> int:
        """Insert one batch of spans in one INSERT; returns the number inserted. Raises
        :class:`~otelbench.errors.StoreError` when the write fails."""
        if not rows:
            return 0
        try:
            payload = "\n".join(span_to_json(row) for row in rows)
        except (TypeError, ValueError, AttributeError) as err:
            raise StoreError(f"cannot insert {len(rows)} spans: malformed rows ({err})") from err
        with self._lock:
            self._conn().insert_rows(
                f"{self._database}.{semconv.TABLE_TRACES}", payload, self._source
            )
        return len(rows)

    def insert_metrics(
        self,
        gauge: Sequence[GaugeRow] = (),
        sum: Sequence[SumRow] = (),
        histogram: Sequence[HistogramRow] = (),
    ) -> int:
        """Store no metric data points (module docstring): count them and return 0."""
        with self._lock:
            self.metric_points_not_stored += len(gauge) + len(sum) + len(histogram)
        return 0

    # ---------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Close the session or client. Idempotent."""
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                self._closer()

    def __enter__(self) -> ClickHouseSpanWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._connection is None else "read-write"
        return f"ClickHouseSpanWriter({self._source!r}, {state})"


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
    if match.group(1).lower() not in _SCHEMES:
        known = ", ".join(f"{s}://" for s in sorted(_SCHEMES))
        raise ConfigError(f"the collector cannot write a {match.group(1)}:// store; known: {known}")
    return ClickHouseSpanWriter.open(store)
