"""The embedded span store: one DuckDB file holding the OTel Collector ClickHouse exporter's tables.

::

    with SpanStore.open("run.duckdb") as store:          # creates the file if it is new
        store.insert_spans(rows)                          # one transaction, durable on return
    with SpanStore.open("run.duckdb", read_only=True) as store:
        store.execute('SELECT count(*) FROM otel_traces WHERE "SpanKind" = $k', {"k": kind})

**What a file must be.** A store is a DuckDB database holding ``otelbench_meta`` with
``schema_version`` (:data:`SCHEMA_VERSION`) and ``created_by``. Opening anything else — a file that
is not DuckDB, a DuckDB database without that table, or a store written by a newer schema version —
raises :class:`~otelbench.errors.NotAnOtelbenchStore`; every other failure (a locked file, a
missing directory, a failed write) raises :class:`~otelbench.errors.StoreError`. Both carry one
line that says what to do.

**Durability.** :meth:`SpanStore.insert_spans` and :meth:`SpanStore.insert_metrics` write one batch
in one transaction and return after ``COMMIT``. DuckDB 2.0 appends the transaction to the
write-ahead log and calls ``fdatasync`` on it before ``COMMIT`` returns (verified with ``strace``
on this DuckDB: one ``write`` + ``fdatasync`` of ``<file>.wal`` per commit), so a batch that was
acknowledged survives a crash of the process and of the machine. One gap that DuckDB leaves: when
it creates a fresh ``.wal`` file (the first commit after a checkpoint) it does not ``fsync`` the
directory, so after a *power loss* (not a process crash) the newest batches may depend on the file
system having persisted the directory entry (ext4 and xfs with default options do, on journal
commit).

**Concurrency.** DuckDB lets one process open a file for writing, or any number of processes read
only. A :class:`SpanStore` serialises its own calls with a lock, so one store may be shared by the
receiver's threads; code that uses :attr:`SpanStore.connection` directly while another thread
inserts must take :attr:`SpanStore.lock` itself (or use :meth:`SpanStore.execute`).

**Bulk insert.** A batch travels as one list per column bound to ``INSERT ... SELECT unnest(...)``
(``sql/insert_*.sql``); maps travel as parallel key and value lists. Measured on this machine for
512 spans with 14 attributes (two of them 150-element int arrays): ``executemany`` could not bind
maps at all (DuckDB 2.0 raises an internal error for dict parameters), a JSON document parsed by
``from_json`` took 93 ms per batch, a registered dict of numpy object arrays 104 ms, and the
column-list ``unnest`` 44 ms (most of it DuckDB converting the Python values). Durability costs
about as much again: the same INSERT into an in-memory temporary table takes half the time of one
into the file (WAL write, ``fdatasync``, the checkpoint every 16 MiB of WAL). A batch also has a
fixed cost of about 10 ms (binding the 26-parameter statement, the commit), which matters only for
small batches (``bench/receiver_ingest.py``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import duckdb

from otelbench import __version__, semconv
from otelbench.errors import NotAnOtelbenchStore, StoreError
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = ["SCHEMA_VERSION", "SpanStore"]

SCHEMA_VERSION: Final = 1
"""The store layout this otelbench writes and reads (``otelbench_meta.schema_version``)."""

_META_TABLE: Final = "otelbench_meta"
_DUCKDB_MAGIC: Final = b"DUCK"
_DUCKDB_MAGIC_OFFSET: Final = 8  # DuckDB's main header: 8-byte checksum, then "DUCK"


def _sql(name: str) -> str:
    return resources.files("otelbench.store").joinpath(name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Rows → bound parameters (one list per column; maps as parallel key/value lists)
# --------------------------------------------------------------------------------------------
_SCALAR, _MAP, _MAPS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Table:
    """An insert statement and how to turn rows of ``row_type`` into its parameters."""

    name: str
    sql_file: str
    fields: tuple[str, ...]
    maps: frozenset[str] = frozenset()
    map_lists: frozenset[str] = frozenset()

    def params(self, rows: Sequence[tuple[Any, ...]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for name, column in zip(self.fields, zip(*rows, strict=True), strict=True):
            if name in self.maps:
                out[name + "_k"] = [list(m) for m in column]
                out[name + "_v"] = [list(m.values()) for m in column]
            elif name in self.map_lists:
                out[name + "_k"] = [[list(m) for m in ms] for ms in column]
                out[name + "_v"] = [[list(m.values()) for m in ms] for ms in column]
            else:
                out[name] = list(column)
        return out


_METRIC_MAPS: Final = frozenset({"resource_attributes", "scope_attributes", "attributes"})
_TRACES: Final = _Table(
    semconv.TABLE_TRACES,
    "sql/insert_traces.sql",
    SpanRow._fields,
    maps=frozenset({"resource_attributes", "span_attributes"}),
    map_lists=frozenset({"events_attributes", "links_attributes"}),
)
_GAUGE: Final = _Table(
    semconv.TABLE_METRICS_GAUGE,
    "sql/insert_metrics_gauge.sql",
    GaugeRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)
_SUM: Final = _Table(
    semconv.TABLE_METRICS_SUM,
    "sql/insert_metrics_sum.sql",
    SumRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)
_HISTOGRAM: Final = _Table(
    semconv.TABLE_METRICS_HISTOGRAM,
    "sql/insert_metrics_histogram.sql",
    HistogramRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class SpanStore:
    """A DuckDB file with ``otel_traces``, the ``otel_metrics_*`` tables and ``otelbench_meta``.

    Open it with :meth:`open`; it is a context manager and :meth:`close` is idempotent.

    Example::

        with SpanStore.open(tmp_path / "spans.duckdb") as store:
            store.insert_spans(rows)
            assert store.span_count() == len(rows)
    """

    def __init__(
        self, connection: duckdb.DuckDBPyConnection, path: Path, *, read_only: bool
    ) -> None:
        """Internal: use :meth:`SpanStore.open`."""
        self._con: duckdb.DuckDBPyConnection | None = connection
        self._path = path
        self._read_only = read_only
        self._lock = threading.RLock()
        self._statements: dict[str, str] = {}

    # ---------------------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, read_only: bool = False) -> SpanStore:
        """Open the store at ``path``; create it (file, tables, meta) when it does not exist.

        ``read_only=True`` never creates or changes anything, and may run beside other readers
        (not beside a writer: DuckDB locks the file). Raises
        :class:`~otelbench.errors.NotAnOtelbenchStore` for a file that is not an otelbench store
        (or is a newer one), :class:`~otelbench.errors.StoreError` for anything else.

        Example::

            store = SpanStore.open("run.duckdb", read_only=True)
        """
        p = Path(path)
        exists = p.exists()
        if exists:
            _check_is_duckdb_file(p)
        elif read_only:
            raise StoreError(f"no span store at {p}: the file does not exist")
        try:
            con = duckdb.connect(str(p), read_only=read_only)
        except duckdb.Error as err:
            raise _open_error(p, err) from err
        try:
            if exists:
                _check_meta(con, p)
            if not read_only:
                _apply_schema(con, p, new=not exists)
        except BaseException:
            con.close()
            raise
        return cls(con, p, read_only=read_only)

    # ---------------------------------------------------------------------------- properties
    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only."""
        return self._read_only

    @property
    def lock(self) -> threading.RLock:
        """The lock every method of this store holds while it uses the connection."""
        return self._lock

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection (hold :attr:`lock` while another thread may insert)."""
        if self._con is None:
            raise StoreError(f"span store {self._path} is closed")
        return self._con

    # ---------------------------------------------------------------------------- reading
    def execute(
        self, sql: str, params: Sequence[object] | Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one SQL statement with bound parameters and return all rows.

        Example::

            [(n,)] = store.execute("SELECT count(*) FROM otel_traces WHERE len(SpanId) = ?", [16])
        """
        with self._lock:
            con = self.connection
            try:
                return con.execute(sql, params).fetchall()
            except duckdb.Error as err:
                raise StoreError(
                    f"query on span store {self._path} failed: {_first_line(err)}"
                ) from err

    def span_count(self) -> int:
        """Number of spans in ``otel_traces``."""
        [(n,)] = self.execute(f"SELECT count(*) FROM {semconv.TABLE_TRACES}")
        return int(n)

    def metric_point_count(self) -> int:
        """Number of data points in the gauge, sum and histogram tables together."""
        tables = (
            semconv.TABLE_METRICS_GAUGE,
            semconv.TABLE_METRICS_SUM,
            semconv.TABLE_METRICS_HISTOGRAM,
        )
        union = " UNION ALL ".join(f"SELECT count(*) AS n FROM {t}" for t in tables)
        [(n,)] = self.execute(f"SELECT sum(n) FROM ({union})")
        return int(n)

    def meta(self) -> dict[str, str]:
        """The ``otelbench_meta`` key/value pairs (``schema_version``, ``created_by``)."""
        return {
            str(k): str(v) for k, v in self.execute(f'SELECT "key", "value" FROM {_META_TABLE}')
        }

    # ---------------------------------------------------------------------------- writing
    def insert_spans(self, rows: Sequence[SpanRow]) -> int:
        """Insert one batch of spans in one transaction; durable when this returns.

        Returns the number of rows inserted. Raises :class:`~otelbench.errors.StoreError` (and
        inserts nothing) when the write fails.
        """
        if rows:
            self._write([(_TRACES, rows)], f"{len(rows)} spans")
        return len(rows)

    def insert_metrics(
        self,
        gauge: Sequence[GaugeRow] = (),
        sum: Sequence[SumRow] = (),
        histogram: Sequence[HistogramRow] = (),
    ) -> int:
        """Insert one batch of metric data points in one transaction; durable when this returns.

        Returns the number of data points inserted.
        """
        batches = [(t, r) for t, r in ((_GAUGE, gauge), (_SUM, sum), (_HISTOGRAM, histogram)) if r]
        n = len(gauge) + len(sum) + len(histogram)
        if batches:
            self._write(batches, f"{n} metric data points")
        return n

    def _write(
        self, batches: Sequence[tuple[_Table, Sequence[tuple[Any, ...]]]], what: str
    ) -> None:
        with self._lock:
            con = self.connection
            if self._read_only:
                raise StoreError(f"span store {self._path} is open read-only; cannot insert {what}")
            try:
                statements = [(self._statement(t), t.params(rows)) for t, rows in batches]
            except (TypeError, ValueError, AttributeError) as err:
                raise StoreError(
                    f"cannot insert {what}: malformed rows ({_first_line(err)})"
                ) from err
            try:
                con.execute("BEGIN TRANSACTION")
                for sql, params in statements:
                    con.execute(sql, params)
                con.execute("COMMIT")
            except (duckdb.Error, TypeError, ValueError, OverflowError) as err:
                _rollback_quietly(con)
                raise StoreError(
                    f"cannot write {what} to span store {self._path}: {_first_line(err)}"
                ) from err

    def _statement(self, table: _Table) -> str:
        sql = self._statements.get(table.sql_file)
        if sql is None:
            sql = self._statements[table.sql_file] = _sql(table.sql_file)
        return sql

    # ---------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Close the connection (DuckDB checkpoints the WAL into the file). Idempotent."""
        with self._lock:
            con, self._con = self._con, None
            if con is not None:
                try:
                    con.close()
                except duckdb.Error as err:
                    raise StoreError(
                        f"cannot close span store {self._path}: {_first_line(err)}"
                    ) from err

    def __enter__(self) -> SpanStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = (
            "closed" if self._con is None else ("read-only" if self._read_only else "read-write")
        )
        return f"SpanStore({str(self._path)!r}, {state})"


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _check_is_duckdb_file(p: Path) -> None:
    if p.is_dir():
        raise NotAnOtelbenchStore(f"{p} is a directory, not an otelbench store (give a file path)")
    try:
        with p.open("rb") as f:
            head = f.read(_DUCKDB_MAGIC_OFFSET + len(_DUCKDB_MAGIC))
    except OSError as err:
        raise StoreError(f"cannot read {p}: {err.strerror or err}") from err
    if head[_DUCKDB_MAGIC_OFFSET:] != _DUCKDB_MAGIC:
        what = "an empty file" if not head else "not a DuckDB database"
        raise NotAnOtelbenchStore(
            f"{p} is {what}, not an otelbench store; choose a new path for the store"
        )


def _open_error(p: Path, err: duckdb.Error) -> StoreError:
    msg = _first_line(err)
    if "lock" in msg.lower():
        return StoreError(
            f"span store {p} is in use by another process ({msg}); stop that process "
            "(e.g. the collector) or read the store after it has finished"
        )
    return StoreError(f"cannot open span store {p}: {msg}")


def _check_meta(con: duckdb.DuckDBPyConnection, p: Path) -> None:
    try:
        [(has_meta,)] = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
            [_META_TABLE],
        ).fetchall()
        rows = (
            con.execute(
                f'SELECT "value" FROM {_META_TABLE} WHERE "key" = \'schema_version\''
            ).fetchall()
            if has_meta
            else []
        )
    except duckdb.Error as err:
        raise StoreError(f"cannot read span store {p}: {_first_line(err)}") from err
    if not has_meta or not rows:
        raise NotAnOtelbenchStore(
            f"{p} is a DuckDB database but not an otelbench store (it has no {_META_TABLE} "
            "schema_version); choose a new path for the store"
        )
    raw = rows[0][0]
    try:
        version = int(raw)
    except (TypeError, ValueError):
        raise NotAnOtelbenchStore(
            f"{p} has an unreadable otelbench schema version {raw!r}; it is not a store this "
            "otelbench can read"
        ) from None
    if version > SCHEMA_VERSION:
        raise NotAnOtelbenchStore(
            f"{p} was written by a newer otelbench (store schema version {version}; this otelbench "
            f"{__version__} reads version {SCHEMA_VERSION}); upgrade otelbench to read it"
        )
    if version < 1:
        raise NotAnOtelbenchStore(f"{p} has an invalid otelbench schema version {version}")


def _apply_schema(con: duckdb.DuckDBPyConnection, p: Path, *, new: bool) -> None:
    try:
        con.execute("BEGIN TRANSACTION")
        con.execute(_sql("schema.sql"))
        if new:
            con.executemany(
                f'INSERT INTO {_META_TABLE} ("key", "value") VALUES (?, ?)',
                [
                    ["schema_version", str(SCHEMA_VERSION)],
                    ["created_by", f"otelbench {__version__}"],
                ],
            )
        con.execute("COMMIT")
    except duckdb.Error as err:
        _rollback_quietly(con)
        raise StoreError(f"cannot create the tables of span store {p}: {_first_line(err)}") from err


def _rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):  # no transaction is open when BEGIN itself failed
        con.execute("ROLLBACK")
