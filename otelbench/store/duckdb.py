"""The span store's DuckDB engine: one file holding the OTel Collector ClickHouse exporter's tables.

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

**Reading while a collector writes** (issue 8). DuckDB refuses a reader beside the writer, so the
writer makes the copies readers read. A writer that can serve snapshots announces it in a file
beside the store, ``<store>.writer.json`` (:meth:`SpanStore.announce_writer`: its pid, the URL
of its snapshot endpoint and the bearer token that endpoint wants; mode 0600, removed on close).
:meth:`SpanStore.open` with ``read_only=True``, on finding the file locked by the announced
process, posts to that URL; the writer, under the store's lock, checkpoints the WAL into the file
and copies the file (:meth:`SpanStore.snapshot`) to ``.<store>.snapshot-*.duckdb`` beside it,
and answers its path. The reader opens the copy read-only and unlinks it at once (its open file
survives the unlink, and nothing is left behind if the reader dies), and
:attr:`SpanStore.snapshot_taken_unix_ns` says when it was taken: every batch acknowledged before
then is in it, nothing after. A copy of the file beats DuckDB's ``COPY FROM DATABASE`` into a new
file by an order of magnitude (measured on a 64 MB database: checkpoint 15 ms + copy 0.18 s,
against 1.7 s), and ingest waits only that long: ``bench/receiver_sustained.py`` measured
0.4–0.5 s for a 130–300 MB store and 0.7–1.5 s for 500–960 MB, request and open included.
The copy reads a descriptor the writer holds from open to close: DuckDB's lock is a POSIX
``fcntl`` lock, which a process loses when it closes *any* descriptor of the file, so a plain
file copy would unlock the store (``tests/integration/test_store_read_while_writing.py`` caught
exactly that). A writer that opens the store removes the copies a killed writer left.
Keeping the token in the 0600 announcement gives nothing away: whoever can read it is the
writer's user, who can read and write the store anyway.

**Memory.** DuckDB's buffer pool keeps the blocks it writes until it reaches its memory limit,
80 % of RAM by default, so a collector ingesting for hours would grow towards most of the
machine's memory: ``bench/receiver_sustained.py`` measured its RSS rising by 76 MiB per minute
for 10 minutes (75 → 945 MiB, about the store's size) at 7,800 spans/s. A writer therefore opens
with :data:`WRITER_MEMORY_LIMIT` (512 MiB): blocks already on disk are simply dropped from the
pool. With it the same 10 minutes (a 1 GB store) held the RSS between 300 and 630 MiB after the
first two minutes, ending at 400 MiB (slope over the second half -1.5 MiB/min); the rate did not
suffer (10,900 spans/s, on a less loaded machine: load average 3.5 against 8).

**Bulk insert.** A batch travels as one list per column bound to ``INSERT ... SELECT unnest(...)``
(:func:`_insert_sql`); maps travel as parallel key and value lists. Measured on this machine
for 512 spans with 14 attributes (two of them 150-element int arrays): ``executemany`` could not
bind maps at all (DuckDB 2.0 raises an internal error for dict parameters), a JSON document parsed
by ``from_json`` took 93 ms per batch, a registered dict of numpy object arrays 104 ms, and the
column-list ``unnest`` 44 ms (most of it DuckDB converting the Python values). Durability costs
about as much again: the same INSERT into an in-memory temporary table takes half the time of one
into the file (WAL write, ``fdatasync``, the checkpoint every 16 MiB of WAL). A batch also has a
fixed cost of about 10 ms (binding the 26-parameter statement, the commit), which matters only for
small batches (``bench/receiver_ingest.py``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Final

import duckdb

from otelbench import __version__, semconv
from otelbench.errors import NotAnOtelbenchStore, StoreError
from otelbench.lifecycle import Closes
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = [
    "SCHEMA_VERSION",
    "WRITER_MEMORY_LIMIT",
    "Snapshot",
    "SpanStore",
    "snapshot_if_written",
    "snapshot_note",
]

SCHEMA_VERSION: Final = 2
"""The store layout this otelbench writes and reads (``otelbench_meta.schema_version``). 2: span
kinds and statuses spelled as the current ClickHouse exporter writes them (``Server``, ``Error``;
``semconv.SPAN_KIND_SERVER``); 1: the older spellings (``SPAN_KIND_SERVER``), which every query
still reads. An otelbench that reads only version 1 refuses a version 2 store with a clear error
instead of finding no requests in it."""
WRITER_MEMORY_LIMIT: Final = "512MiB"
"""DuckDB's memory limit for a store opened for writing (see "Memory" in the module docstring)."""

_META_TABLE: Final = "otelbench_meta"
_DUCKDB_MAGIC: Final = b"DUCK"
_DUCKDB_MAGIC_OFFSET: Final = 8  # DuckDB's main header: 8-byte checksum, then "DUCK"
_WRITER_SUFFIX: Final = ".writer.json"
_SNAPSHOT_TIMEOUT_S: Final = 300.0  # a copy of a multi-GB store on a slow disk
_HELD: Final[set[Path]] = set()
"""Store files this process has open for writing: never opened and closed again here, since
closing any descriptor of a file drops the process's DuckDB lock (:func:`_open_for_snapshots`)."""
_LOCK_HOLDER: Final = re.compile(r"\(PID (\d+)\)")  # in DuckDB's "Conflicting lock" message


def _sql(name: str) -> str:
    """The store's DuckDB statement ``name`` (``otelbench/store/sql/duckdb/<name>.sql``)."""
    resource = resources.files("otelbench.store") / "sql" / "duckdb" / f"{name}.sql"
    return resource.read_text(encoding="utf-8")


_MAP_TYPE: Final = "MAP(VARCHAR, VARCHAR)"


def _insert_sql(table: str, columns: Iterable[tuple[str, str]]) -> str:
    """The bulk insert into ``table`` of a batch bound as one list per column (module
    docstring, "Bulk insert"): ``INSERT INTO table SELECT … FROM (SELECT unnest($field::T[]) AS
    field, …)``. ``columns`` pairs each row field with its column's DuckDB type, in the table's
    order (``sql/duckdb/schema.sql``); a map travels as ``<field>_k`` and ``<field>_v`` key and
    value lists, a timestamp as integer nanoseconds (:meth:`_Table.params`)."""
    select: list[str] = []
    unnest: list[tuple[str, str]] = []
    for field, column_type in columns:
        nested = column_type.endswith("[]")  # a list column: Events.*, Links.*, Exemplars.* …
        base = column_type.removesuffix("[]")
        lists = "[]" * (1 + nested)  # the batch's list, then the column's own
        if base == _MAP_TYPE:
            k, v = f"{field}_k", f"{field}_v"
            pair = f"{k}[i + 1], {v}[i + 1]" if nested else f"{k}, {v}"
            select.append(
                f"list_transform(range(len({k})), lambda i: map({pair}))"
                if nested
                else f"map({pair})"
            )
            unnest += [(k, f"VARCHAR[]{lists}"), (v, f"VARCHAR[]{lists}")]
        elif base == "TIMESTAMP_NS":
            select.append(
                f"list_transform({field}, lambda t: make_timestamp_ns(t))"
                if nested
                else f"make_timestamp_ns({field})"
            )
            unnest.append((field, f"BIGINT{lists}"))
        else:
            select.append(field)
            unnest.append((field, f"{column_type}[]"))
    selected = ",\n    ".join(select)
    params = ",\n        ".join(f"unnest(${name}::{t}) AS {name}" for name, t in unnest)
    return f"INSERT INTO {table}\nSELECT\n    {selected}\nFROM (\n    SELECT\n        {params}\n);"


# --------------------------------------------------------------------------------------------
# Rows → bound parameters (one list per column; maps as parallel key/value lists)
# --------------------------------------------------------------------------------------------
_SCALAR, _MAP, _MAPS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Table:
    """A table and how to turn its rows into the parameters of its insert (:func:`_insert_sql`)."""

    name: str
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
    SpanRow._fields,
    maps=frozenset({"resource_attributes", "span_attributes"}),
    map_lists=frozenset({"events_attributes", "links_attributes"}),
)
_GAUGE: Final = _Table(
    semconv.TABLE_METRICS_GAUGE,
    GaugeRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)
_SUM: Final = _Table(
    semconv.TABLE_METRICS_SUM,
    SumRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)
_HISTOGRAM: Final = _Table(
    semconv.TABLE_METRICS_HISTOGRAM,
    HistogramRow._fields,
    _METRIC_MAPS,
    frozenset({"exemplars_filtered_attributes"}),
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent copy of a store, made by its writer for a reader (:meth:`SpanStore.snapshot`).

    ``taken_unix_ns`` is when the copy began: every batch committed before it is in the copy.
    """

    path: Path
    taken_unix_ns: int


def snapshot_note(taken_unix_ns: int) -> str:
    """What a report says when it read a snapshot (``otelbench report``, the query layer).

    >>> snapshot_note(1_700_000_000_000_000_000).split(";")[0]
    'read from a snapshot taken at 2023-11-14T22:13:20.000+00:00'
    """
    taken = datetime.fromtimestamp(taken_unix_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds")
    return f"read from a snapshot taken at {taken}; spans stored after it are not included"


def snapshot_if_written(path: str | os.PathLike[str]) -> Snapshot | None:
    """A snapshot of the store at ``path`` from the process writing it, or ``None`` when no
    process writes it (read the file itself). The caller unlinks the snapshot when done.

    Raises :class:`~otelbench.errors.StoreError` when another process holds the file and
    serves no snapshots (see the module docstring).

    Example::

        snapshot = snapshot_if_written("run.duckdb")
        readable = snapshot.path if snapshot is not None else Path("run.duckdb")
    """
    p = Path(path)
    _check_is_duckdb_file(p)
    try:
        duckdb.connect(str(p), read_only=True).close()
    except duckdb.Error as err:
        if _is_lock_error(err):
            return _request_snapshot(p, err)
        raise _open_error(p, err) from err
    return None


@dataclass(frozen=True, slots=True)
class _Writer:
    """What a writer announces beside its store (``<store>.writer.json``)."""

    pid: int
    snapshot_url: str
    token: str | None


class SpanStore(Closes):
    """A DuckDB file with ``otel_traces``, the ``otel_metrics_*`` tables and ``otelbench_meta``.

    Open it with :meth:`open`; it is a context manager and :meth:`close` is idempotent.

    Example::

        with SpanStore.open(tmp_path / "spans.duckdb") as store:
            store.insert_spans(rows)
            assert store.span_count() == len(rows)
    """

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        path: Path,
        *,
        read_only: bool,
        snapshot_taken_unix_ns: int | None = None,
        file_fd: int | None = None,
    ) -> None:
        """Internal: use :meth:`SpanStore.open`."""
        self._con: duckdb.DuckDBPyConnection | None = connection
        self._file_fd = file_fd
        self._path = path
        self._read_only = read_only
        self._snapshot_taken_unix_ns = snapshot_taken_unix_ns
        self._announced = False
        self._lock = threading.RLock()
        self._statements: dict[str, str] = {}

    # ---------------------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        memory_limit: str = WRITER_MEMORY_LIMIT,
    ) -> SpanStore:
        """Open the store at ``path``; create it (file, tables, meta) when it does not exist.

        A writer's DuckDB keeps to ``memory_limit`` (DuckDB's syntax, e.g. ``"2GiB"``); a reader
        has DuckDB's default (80 % of RAM) for its queries.

        ``read_only=True`` never creates or changes anything, and may run beside other readers.
        Beside a writer (DuckDB locks the file) it reads a snapshot the writer makes on request
        when the writer announced it serves them (see the module docstring), and
        :attr:`snapshot_taken_unix_ns` says when it was taken. Raises
        :class:`~otelbench.errors.NotAnOtelbenchStore` for a file that is not an otelbench store
        (or is a newer one), :class:`~otelbench.errors.StoreError` for anything else.

        Example::

            store = SpanStore.open("run.duckdb", read_only=True)
        """
        p = Path(path)
        exists = p.exists()
        if exists and p.resolve() not in _HELD:
            _check_is_duckdb_file(p)
        elif not exists and read_only:
            raise StoreError(f"no span store at {p}: the file does not exist")
        config: dict[str, str | bool | int | float | list[str]] = (
            {} if read_only else {"memory_limit": memory_limit}
        )
        try:
            con = duckdb.connect(str(p), read_only=read_only, config=config)
        except duckdb.Error as err:
            if read_only and _is_lock_error(err):
                return cls._open_snapshot(p, err)
            raise _open_error(p, err) from err
        try:
            if exists:
                _check_meta(con, p)
            if read_only:
                return cls(con, p, read_only=True)
            _apply_schema(con, p, new=not exists)
            file_fd = _open_for_snapshots(p)
            _remove_stale_snapshots(p)
        except BaseException:
            con.close()
            raise
        _HELD.add(p.resolve())
        return cls(con, p, read_only=False, file_fd=file_fd)

    @classmethod
    def _open_snapshot(cls, p: Path, locked: duckdb.Error) -> SpanStore:
        snapshot = _request_snapshot(p, locked)
        try:
            con = duckdb.connect(str(snapshot.path), read_only=True)
        except duckdb.Error as err:
            raise StoreError(
                f"cannot open the snapshot of span store {p}: {_first_line(err)}"
            ) from err
        finally:  # the open connection keeps the file: nothing is left behind, whatever happens
            snapshot.path.unlink(missing_ok=True)
        try:
            _check_meta(con, p)
        except BaseException:
            con.close()
            raise
        return cls(con, p, read_only=True, snapshot_taken_unix_ns=snapshot.taken_unix_ns)

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
    def snapshot_taken_unix_ns(self) -> int | None:
        """When the writer took the snapshot this store reads (``None``: it reads the file)."""
        return self._snapshot_taken_unix_ns

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

    def memory_bytes(self) -> int:
        """The memory DuckDB's buffer manager holds for this process now (``duckdb_memory()``):
        mostly the table blocks it caches, which a writer keeps to :data:`WRITER_MEMORY_LIMIT`."""
        [(n,)] = self.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()")
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

    # ---------------------------------------------------------------------------- snapshots
    def snapshot(self) -> Snapshot:
        """Copy the committed store to a new file beside it, for a reader in another process.

        Under the lock (no batch commits meanwhile) the WAL is checkpointed into the file and the
        file is copied, so the copy is a consistent DuckDB file holding every batch committed so
        far. The caller owns the copy (a reader unlinks it once open).

        Example::

            snapshot = store.snapshot()
            with SpanStore.open(snapshot.path, read_only=True) as copy: ...
        """
        with self._lock:
            con = self.connection
            if self._read_only:
                raise StoreError(f"span store {self._path} is open read-only; its writer snapshots")
            try:
                fd, name = tempfile.mkstemp(
                    prefix=_snapshot_prefix(self._path),
                    suffix=".duckdb",
                    dir=_directory(self._path),
                )
                os.close(fd)
            except OSError as err:
                raise StoreError(
                    f"cannot snapshot span store {self._path}: {err.strerror or err}"
                ) from err
            target = Path(name)
            try:
                con.execute("CHECKPOINT")
                taken = time.time_ns()
                assert self._file_fd is not None  # every writable store holds one
                _copy_file(self._file_fd, target)
            except (duckdb.Error, OSError) as err:
                target.unlink(missing_ok=True)
                raise StoreError(
                    f"cannot snapshot span store {self._path}: {_first_line(err)}"
                ) from err
        return Snapshot(target, taken)

    def announce_writer(self, snapshot_url: str | None, *, token: bytes | None = None) -> None:
        """Announce that this process serves snapshots at ``snapshot_url`` (``POST``, with
        ``Authorization: Bearer <token>`` when ``token`` is given); ``None`` withdraws it.

        Written to ``<store>.writer.json`` (mode 0600, replaced atomically), removed by
        :meth:`close`. Readers use it when they find the file locked (:meth:`open`).

        Example::

            store.announce_writer(f"http://127.0.0.1:{port}/otelbench/snapshot")
        """
        with self._lock:
            self.connection  # noqa: B018 - raises when closed
            if self._read_only:
                raise StoreError(f"span store {self._path} is open read-only; it has no writer")
            if snapshot_url is None:
                self._withdraw()
                return
            record = {
                "pid": os.getpid(),
                "snapshot_url": snapshot_url,
                "token": token.decode("latin-1") if token is not None else None,
            }
            _write_private(_writer_path(self._path), json.dumps(record))
            self._announced = True

    def _withdraw(self) -> None:
        if self._announced:
            self._announced = False
            with contextlib.suppress(OSError):  # it is only a hint for readers
                _writer_path(self._path).unlink(missing_ok=True)

    def _statement(self, table: _Table) -> str:
        """The insert into ``table``, built once from its column types as the file has them."""
        sql = self._statements.get(table.name)
        if sql is None:
            types = [row[1] for row in self.connection.execute(f"DESCRIBE {table.name}").fetchall()]
            sql = _insert_sql(table.name, zip(table.fields, types, strict=True))
            self._statements[table.name] = sql
        return sql

    # ---------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Close the connection (DuckDB checkpoints the WAL into the file). Idempotent."""
        with self._lock:
            self._withdraw()
            con, self._con = self._con, None
            fd, self._file_fd = self._file_fd, None
            if con is not None:
                try:
                    con.close()
                except duckdb.Error as err:
                    raise StoreError(
                        f"cannot close span store {self._path}: {_first_line(err)}"
                    ) from err
                finally:
                    if fd is not None:  # after DuckDB's own: closing it drops the file's lock
                        os.close(fd)
                        _HELD.discard(self._path.resolve())

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


def _is_lock_error(err: duckdb.Error) -> bool:
    return "Could not set lock" in str(err)


def _directory(p: Path) -> Path:
    return p.resolve().parent


def _snapshot_prefix(p: Path) -> str:
    return f".{p.name}.snapshot-"


def _writer_path(p: Path) -> Path:
    return p.with_name(p.name + _WRITER_SUFFIX)


def _open_for_snapshots(p: Path) -> int:
    """A descriptor of the store file that the writer keeps open until it closes the store.

    DuckDB's lock on the file is a POSIX ``fcntl`` lock, which belongs to the process and goes
    away when the process closes *any* descriptor of the file: a plain ``shutil.copyfile`` of
    the store would silently unlock it (a second collector could then open it for writing).
    Snapshots read through this descriptor, which is closed only after DuckDB's.
    """
    try:
        return os.open(p, os.O_RDONLY)
    except OSError as err:
        raise StoreError(f"cannot open span store {p}: {err.strerror or err}") from err


def _remove_stale_snapshots(p: Path) -> None:
    """Remove snapshots a writer made but no reader took (the writer was killed mid-copy, or
    the reader died before opening it): a new writer holds the lock, so no one else will."""
    for stale in _directory(p).glob(f"{glob.escape(_snapshot_prefix(p))}*.duckdb"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _copy_file(src_fd: int, target: Path) -> None:
    """Copy the whole file behind ``src_fd`` to ``target`` (in the kernel; ``src_fd``'s offset
    is left alone and it stays open)."""
    size = os.fstat(src_fd).st_size
    with target.open("wb") as out:
        offset = 0
        while offset < size:
            sent = os.sendfile(out.fileno(), src_fd, offset, size - offset)
            if sent == 0:
                raise OSError(f"the store file ended after {offset} of {size} bytes")
            offset += sent


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by this user only."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        tmp = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp made it with mode 0600
                f.write(text)
            tmp.replace(path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as err:
        raise StoreError(f"cannot write {path}: {err.strerror or err}") from err


def _read_writer(p: Path) -> _Writer | None:
    """The writer announced beside ``p``; ``None`` when there is none (or it is unreadable)."""
    try:
        record = json.loads(_writer_path(p).read_text(encoding="utf-8"))
        writer = _Writer(int(record["pid"]), str(record["snapshot_url"]), record.get("token"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return writer if writer.token is None or isinstance(writer.token, str) else None


def _request_snapshot(p: Path, locked: duckdb.Error) -> Snapshot:
    """Ask the process holding ``p`` for a snapshot; the lock's error when it announced none."""
    writer = _read_writer(p)
    holder = _LOCK_HOLDER.search(str(locked))
    if writer is None or (holder is not None and int(holder.group(1)) != writer.pid):
        raise _open_error(p, locked)
    headers = {"Authorization": f"Bearer {writer.token}"} if writer.token is not None else {}
    request = urllib.request.Request(writer.snapshot_url, data=b"", headers=headers, method="POST")
    what = f"span store {p} is being written by process {writer.pid}, whose snapshot endpoint"
    try:
        with urllib.request.urlopen(request, timeout=_SNAPSHOT_TIMEOUT_S) as response:
            answer = json.loads(response.read())
        snapshot = Snapshot(Path(answer["path"]), int(answer["taken_unix_ns"]))
    except urllib.error.HTTPError as err:
        detail = err.read(300).decode("utf-8", "replace").strip()
        raise StoreError(f"{what} answered HTTP {err.code}: {detail}") from err
    except urllib.error.URLError as err:
        raise StoreError(f"{what} {writer.snapshot_url} is unreachable: {err.reason}") from err
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise StoreError(f"{what} failed: {_first_line(err)}") from err
    if snapshot.path.parent != _directory(p) or not snapshot.path.name.startswith(
        _snapshot_prefix(p)
    ):  # never open, let alone unlink, a file the answer names elsewhere
        raise StoreError(f"{what} answered an unexpected snapshot path {snapshot.path}")
    return snapshot


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
        con.execute(_sql("schema"))
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
