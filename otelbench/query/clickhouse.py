"""The ClickHouse dialect of the query layer: chdb (embedded) and ClickHouse servers.

The named queries of :mod:`otelbench.query.extract` run in ClickHouse SQL
(``otelbench/query/sql/clickhouse/<name>.sql``, ``{name:Type}`` parameters) over ``otel_traces``
exactly as the OpenTelemetry Collector's ClickHouse exporter creates it
(``otelbench/store/clickhouse_schema.sql``), and return the same columns as the DuckDB dialect, so
:func:`~otelbench.query.extract.extract_run_data` and the report are the same on either store.

Heavy aggregations run in the database, without moving per-token arrays to Python: the ITL
figures of the report, which pool every token interval of a run (a million offsets for 10,000
requests of 100 tokens) — :func:`server_itl_summary` and :func:`client_itl_summary` (the
distribution, exact type-7 percentiles: ``metrics.*.itl_ms``), :func:`server_itl_per_request`
and :func:`client_itl_per_request` (jitter and maximum pause, draft 5.4.4.2:
``metrics.*.itl_per_request``). Counts, minima, maxima and percentiles equal numpy's exactly;
means and standard deviations are sums in another order (equal within float rounding). Their
time against numpy's is in ``bench/query_dialects.py``. :func:`run_target_span_count` counts a
run's target spans in the store (how a run waits for them when an external collector writes a
ClickHouse server).

The connections here also write: ``ChdbConnection.insert_rows`` / ``ServerConnection.insert_rows``
insert JSONEachRow text, which :mod:`otelbench.store.clickhouse_writer` (the collector's
ClickHouse store) uses with :func:`open_chdb_session` and :func:`connect_server`.

Two kinds of connection, one SQL dialect (``"clickhouse"``):

* ``chdb:///abs/dir[?database=otel]`` — ClickHouse's engine in-process (chdb-core-lite), over a
  ClickHouse data directory. chdb serves **one data directory per process** and **one process
  per directory**: query a store in the process that writes it, or after the writer exits.
* ``clickhouse://[user[:password]@]host[:port][/database]`` (``clickhouses://`` for TLS) — a
  ClickHouse server through clickhouse-connect (HTTP; port 8123, 8443 with TLS). The database
  defaults to ``otel``, the exporter's default.

Errors (translated once, here)::

    OtelbenchError
    ├── ConfigError            a malformed store URL
    └── StoreError             missing data directory, locked or unreachable store, failed query
        └── NotAnOtelbenchStore  no otel_traces table / database / expected column

Usage::

    from otelbench.query import extract_run_data, open_store
    from otelbench.query.clickhouse import server_itl_summary

    with open_store("chdb:///var/lib/otelbench/ch") as store:
        data = extract_run_data(store)
        itl = server_itl_summary(store, data.run.run_id)   # computed in ClickHouse
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from otelbench import __version__, semconv
from otelbench.errors import ConfigError, NotAnOtelbenchStore, StoreError
from otelbench.metrics.summary import PERCENTILES, Summary
from otelbench.query.extract import (
    Columns,
    Dialect,
    QueryRunner,
    arrow_columns,
    register_dialect,
    register_store_scheme,
)
from otelbench.store import SCHEMA_VERSION

__all__ = [
    "DEFAULT_DATABASE",
    "META_TABLE",
    "ChdbConnection",
    "ChdbUrl",
    "ClickHouseConnection",
    "ServerConnection",
    "ServerUrl",
    "arrow_columns",
    "clickhouse_schema",
    "client_itl_per_request",
    "client_itl_summary",
    "connect_server",
    "copy_duckdb_to_chdb",
    "escape_parameter",
    "open_chdb",
    "open_chdb_session",
    "open_clickhouse_server",
    "run_target_span_count",
    "server_itl_per_request",
    "server_itl_summary",
    "store_meta",
]

DEFAULT_DATABASE: Final = "otel"
"""The database the collector's ClickHouse exporter writes ``otel_traces`` into by default."""

_PARAM: Final = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):")
_CODE: Final = re.compile(r"Code:\s*(\d+)")
_NOT_OURS: Final = frozenset({16, 47, 60, 81})
"""NO_SUCH_COLUMN_IN_TABLE, UNKNOWN_IDENTIFIER, UNKNOWN_TABLE, UNKNOWN_DATABASE."""

_DATABASE_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def clickhouse_schema() -> str:
    """The exporter's ``otel_traces`` DDL (``otelbench/store/clickhouse_schema.sql``)."""
    return (files("otelbench.store") / "clickhouse_schema.sql").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Connections: one small adapter per driver, both returning Arrow tables
# ---------------------------------------------------------------------------------------------
class ClickHouseConnection(Protocol):
    """What the dialect's fetch needs: a query with ``{name:Type}`` parameters → Arrow table."""

    def query_arrow(self, sql: str, params: Mapping[str, object], source: str) -> Any: ...


def _first_line(err: BaseException, limit: int = 300) -> str:
    text = str(err).strip()
    line = text.splitlines()[0] if text else type(err).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


_ERROR_NAME: Final = re.compile(r"\(([A-Z][A-Z0-9_]+)\)\s*$")
_EXCEPTION_TEXT: Final = re.compile(
    r"DB::Exception:\s*(.*?)(?:\.?\s+(?i:in scope)\s|\s*\([A-Z][A-Z0-9_]+\)\s*$)"
)


def _clickhouse_message(err: BaseException) -> str:
    """``NAME: what went wrong`` from a ClickHouse exception text (without the echoed query)."""
    text = " ".join(str(err).split())
    name = _ERROR_NAME.search(text)
    what = _EXCEPTION_TEXT.search(text)
    if name is None or what is None:
        return _first_line(err)
    detail = what.group(1) if len(what.group(1)) <= 200 else what.group(1)[:199] + "…"
    return f"{name.group(1)}: {detail}"


_ERRNO: Final = re.compile(r"\[Errno -?\d+\] ([^\"')]+)")


def _connection_message(err: BaseException) -> str:
    """The socket error inside a driver's connection error (``Connection refused``), else its
    first line."""
    match = _ERRNO.search(str(err))
    return match.group(1).strip() if match is not None else _first_line(err, 200)


def _translate(err: BaseException, source: str) -> StoreError:
    match = _CODE.search(str(err))
    if match is not None and int(match.group(1)) in _NOT_OURS:
        return NotAnOtelbenchStore(
            f"{source} lacks a table or column the query layer reads "
            f"({_clickhouse_message(err)}); it is not a store with the ClickHouse exporter's "
            "otel_traces"
        )
    return StoreError(f"query on span store {source} failed: {_clickhouse_message(err)}")


def escape_parameter(value: object) -> str:
    r"""A query parameter's value as ClickHouse parses ``{name:Type}`` values (TSV-escaped text;
    ``\N`` is NULL; arrays as ``[a,b]``) — what clickhouse-connect sends a server, for chdb.

    >>> escape_parameter(None), escape_parameter(7), escape_parameter([0.5, 0.99])
    ('\\N', '7', '[0.5,0.99]')
    """
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return (
            value.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
            .replace("\0", "\\0")
        )
    if isinstance(value, Sequence):
        return "[" + ",".join(_array_element(v) for v in value) + "]"
    raise TypeError(f"unsupported query parameter type {type(value).__name__}")


def _array_element(value: object) -> str:
    if isinstance(value, str):
        return "'" + escape_parameter(value).replace("'", "\\'") + "'"
    return escape_parameter(value)


_CHDB_SETTINGS: Final = (
    "\nSETTINGS merge_tree_min_rows_for_concurrent_read = 8192,"
    " merge_tree_min_bytes_for_concurrent_read = 1048576,"
    " query_plan_execute_functions_after_sorting = 0,"
    " output_format_arrow_compression_method = 'none'"
)
"""The settings every chdb query runs with, appended to its text (a query-level ``SETTINGS``
clause, after any of the query's own), for the extraction's few wide queries over one run
(measured on 50,000 requests of 100 tokens, ``bench/report_scale.py``). ClickHouse reads a
table in one thread below 163,840 rows or 24 MiB, and a run's client or server spans are fewer
rows than that but megabytes of attribute text: lower thresholds let every core parse them.
By default the planner moves every function an ``ORDER BY`` does not need to after the sort,
into the single stream the sort merges to, so the JSON and pattern parsing of
``client_requests`` and ``run_server_requests`` ran on one core; computed before the sort, it
runs on all (0.35 s instead of 0.65 s for ``client_requests``; no query here limits a sorted
result, where computing after the sort would save work). The Arrow result stays in this
process, so compressing it (LZ4 by default) only costs time on both sides (0.1 s a query).
chdb only: a server's user may not be allowed to change settings, and its results travel."""


class ChdbConnection:
    """An open chdb session on one database (``USE database`` at open); queries run with
    :data:`_CHDB_SETTINGS`.

    >>> conn = ChdbConnection(chdb.session.Session("/data/ch"), "otel")  # doctest: +SKIP
    >>> conn.query_arrow("SELECT {n:Int64} AS n", {"n": 1}, "chdb").num_rows  # doctest: +SKIP
    1
    """

    def __init__(self, session: Any, database: str) -> None:
        self.session = session
        self.database = database

    def query_arrow(self, sql: str, params: Mapping[str, object], source: str) -> Any:
        """The result read in place from chdb's Arrow IPC file, not through chdb's own
        ``"ArrowTable"`` format, which imports pandas (a fifth of a second) on first use.

        The result is uncompressed (:data:`_CHDB_SETTINGS`), so the table's arrays point into
        chdb's result buffer, which lives as long as chdb's result object: the Arrow buffer holds
        that object, so they stay valid after this returns (chdb's ``"ArrowTable"`` does not)."""
        import pyarrow as pa

        bound = {k: escape_parameter(v) for k, v in params.items()}
        try:
            result = self.session.query(sql + _CHDB_SETTINGS, "Arrow", params=bound)
        except RuntimeError as err:
            raise _translate(err, source) from err
        if len(result) == 0:  # a statement without a result
            return pa.table({})
        view = result.get_memview().view()
        held = pa.py_buffer(view)
        buffer = pa.foreign_buffer(held.address, held.size, base=(result, held))
        return pa.ipc.open_file(buffer).read_all()

    def execute(self, sql: str, source: str = "chdb") -> None:
        """Run a statement (DDL, INSERT) on this session."""
        try:
            self.session.query(sql, "CSV")
        except RuntimeError as err:
            raise _translate(err, source) from err

    def insert_rows(self, table: str, payload: str, source: str = "chdb") -> None:
        """Insert ``payload`` (JSONEachRow: one JSON object per line) into ``table``."""
        self.execute(f"INSERT INTO {table} FORMAT JSONEachRow\n{payload}", source)


class ServerConnection:
    """A clickhouse-connect client; parameters are bound server-side (``{name:Type}``).

    >>> conn = ServerConnection(clickhouse_connect.get_client(host="ch"))  # doctest: +SKIP
    >>> conn.query_arrow("SELECT {n:Int64} AS n", {"n": 1}, "ch").num_rows  # doctest: +SKIP
    1
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def query_arrow(self, sql: str, params: Mapping[str, object], source: str) -> Any:
        with _server_errors(source):
            return self.client.query_arrow(sql, parameters=dict(params), use_strings=True)

    def execute(self, sql: str, source: str) -> None:
        """Run a statement (DDL) on the server."""
        with _server_errors(source):
            self.client.command(sql)

    def insert_rows(self, table: str, payload: str, source: str) -> None:
        """Insert ``payload`` (JSONEachRow: one JSON object per line) into ``table``."""
        with _server_errors(source):
            self.client.raw_insert(table, None, payload.encode("utf-8"), fmt="JSONEachRow")


@contextmanager
def _server_errors(source: str) -> Iterator[None]:
    """clickhouse-connect's errors as otelbench's: an unreachable server, or :func:`_translate`."""
    from clickhouse_connect.driver.exceptions import ClickHouseError, OperationalError

    try:
        yield
    except OperationalError as err:
        raise StoreError(
            f"ClickHouse at {source} is unreachable: {_connection_message(err)}"
        ) from err
    except ClickHouseError as err:
        raise _translate(err, source) from err


def _clickhouse_fetch(
    connection: Any, sql: str, params: Mapping[str, object], source: str
) -> Columns:
    return arrow_columns(connection.query_arrow(sql, params, source), flat_lists=True)


register_dialect(
    Dialect(
        "clickhouse", files("otelbench.query") / "sql" / "clickhouse", _clickhouse_fetch, _PARAM
    )
)


# ---------------------------------------------------------------------------------------------
# Opening stores
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChdbUrl:
    """A parsed ``chdb:///abs/dir[?database=NAME]`` store URL."""

    path: Path
    database: str

    @classmethod
    def parse(cls, url: str) -> ChdbUrl:
        """``chdb:///abs/dir[?database=NAME]`` (the database defaults to ``otel``)."""
        return _parse_chdb_url(url)

    def display(self) -> str:
        """The URL as messages and reports show it."""
        return f"chdb://{self.path}?database={self.database}"


def _database(value: str, url: str) -> str:
    if not _DATABASE_NAME.match(value):
        raise ConfigError(f"bad ClickHouse database name {value!r} in {url!r}")
    return value


def _parse_chdb_url(url: str) -> ChdbUrl:
    parts = urlsplit(url)
    raw = unquote(parts.netloc + parts.path)
    if not raw:
        raise ConfigError(f"bad chdb store URL {url!r}; expected chdb:///path/to/dir")
    query = parse_qs(parts.query)
    unknown = set(query) - {"database"}
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)} in {url!r}; known: database")
    database = _database(query.get("database", [DEFAULT_DATABASE])[-1], url)
    return ChdbUrl(Path(raw), database)


def open_chdb_session(path: Path) -> Any:
    """A chdb session on the data directory ``path`` (created if absent); one line on failure
    (another process holds the directory, another directory is open in this process)."""
    try:
        import chdb.session
    except ImportError as err:
        raise ConfigError(
            "a chdb:// store needs chdb-core-lite: pip install 'otelbench[clickhouse]'"
        ) from err

    session_type: Any = chdb.session.Session  # chdb's annotations are incomplete
    try:
        return session_type(str(path))
    except RuntimeError as err:  # chdb raises RuntimeError for every engine error
        text = str(err)
        if any(m in text for m in ("Cannot lock file", "already running", "initializing Embed")):
            # chdb-core-lite reports a held directory only as "Error initializing EmbeddedServer"
            raise StoreError(
                f"cannot open chdb store {path}: another process holds it (chdb allows one "
                f"process per data directory); query it after that process exits "
                f"({_clickhouse_message(err)})"
            ) from err
        if "already initialized with path" in text:
            raise StoreError(
                f"chdb serves one data directory per process and another one is open here; "
                f"cannot open {path} ({_first_line(err)})"
            ) from err
        raise StoreError(f"cannot open chdb store {path}: {_first_line(err)}") from err


@contextmanager
def open_chdb(
    path: str | os.PathLike[str], database: str = DEFAULT_DATABASE
) -> Iterator[QueryRunner]:
    """Query an existing chdb data directory's ``database`` (read-only use); closes on exit.

    >>> with open_chdb("/var/lib/otelbench/ch") as store:  # doctest: +SKIP
    ...     data = extract_run_data(store)
    """
    directory = Path(path)
    source = f"chdb://{directory}?database={database}"
    if not (directory / "metadata").is_dir():
        raise StoreError(f"no chdb store at {directory} (not a ClickHouse data directory)")
    session = open_chdb_session(directory)
    try:
        connection = ChdbConnection(session, database)
        connection.execute(f"USE {_database(database, source)}", source)
        store_meta(connection, database, source)
        yield QueryRunner(connection, "clickhouse", source=source, lock=threading.Lock())
    finally:
        session.close()


META_TABLE: Final = "otelbench_meta"
"""otelbench's marker table (``key``, ``value``), as in the DuckDB store: written by the
collector's ClickHouse writer, absent from a database only the exporter wrote (also readable)."""


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def store_meta(connection: ClickHouseConnection, database: str, source: str) -> dict[str, str]:
    """``database``'s ``otelbench_meta`` pairs ({} when it has none: an exporter-written store);
    raises :class:`~otelbench.errors.NotAnOtelbenchStore` when a newer otelbench wrote it.

    >>> store_meta(ChdbConnection(session, "otel"), "otel", "chdb")  # doctest: +SKIP
    {'created_by': 'otelbench 0.1.0', 'schema_version': '1'}
    """
    found = connection.query_arrow(
        "SELECT count() FROM system.tables WHERE database = {db:String} AND name = {t:String}",
        {"db": _database(database, source), "t": META_TABLE},
        source,
    )
    if int(found.column(0)[0].as_py()) == 0:
        return {}
    table = connection.query_arrow(
        f"SELECT key, value FROM {database}.{META_TABLE} FINAL ORDER BY key", {}, source
    )
    keys, values = (table.column(i).to_pylist() for i in range(2))
    meta = {_text(k): _text(v) for k, v in zip(keys, values, strict=True)}
    version = meta.get("schema_version")
    if version is not None and (not version.isdigit() or int(version) > SCHEMA_VERSION):
        raise NotAnOtelbenchStore(
            f"{source} was written by a newer or unknown otelbench (store schema version "
            f"{version!r}; this otelbench {__version__} reads version {SCHEMA_VERSION}); "
            "upgrade otelbench to read it"
        )
    return meta


def _open_chdb_url(url: str) -> Any:
    parsed = ChdbUrl.parse(url)
    return open_chdb(parsed.path, parsed.database)


@dataclass(frozen=True)
class ServerUrl:
    """A parsed ``clickhouse://`` / ``clickhouses://`` store URL (clickhouse-connect's terms)."""

    host: str
    port: int
    database: str
    username: str | None
    password: str
    secure: bool

    @classmethod
    def parse(cls, url: str) -> ServerUrl:
        """``clickhouse[s]://[user[:password]@]host[:port][/database]``."""
        parts = urlsplit(url)
        secure = parts.scheme.lower() == "clickhouses"
        if parts.scheme.lower() not in ("clickhouse", "clickhouses") or not parts.hostname:
            raise ConfigError(
                f"bad ClickHouse URL {url!r}; expected clickhouse://[user[:password]@]host[:port]"
                "[/database]"
            )
        try:
            port = parts.port
        except ValueError as err:
            raise ConfigError(f"bad port in ClickHouse URL {url!r}") from err
        path = unquote(parts.path.strip("/"))
        return cls(
            host=parts.hostname,
            port=port if port is not None else (8443 if secure else 8123),
            database=_database(path, url) if path else DEFAULT_DATABASE,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else "",
            secure=secure,
        )

    def display(self) -> str:
        """The URL without its password (for messages)."""
        scheme = "clickhouses" if self.secure else "clickhouse"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}/{self.database}"


def connect_server(target: ServerUrl, *, database: str | None = None) -> Any:
    """A clickhouse-connect client for ``target`` (on ``database``, default the URL's).

    >>> client = connect_server(ServerUrl.parse("clickhouse://ch:8123/otel"))  # doctest: +SKIP
    """
    try:
        import clickhouse_connect
        from clickhouse_connect.driver.exceptions import ClickHouseError
    except ImportError as err:
        raise ConfigError(
            "a ClickHouse server store needs clickhouse-connect: "
            "pip install 'otelbench[clickhouse]'"
        ) from err
    try:
        return clickhouse_connect.get_client(
            host=target.host,
            port=target.port,
            username=target.username,
            password=target.password,
            database=target.database if database is None else database,
            secure=target.secure,
        )
    except ClickHouseError as err:
        raise StoreError(
            f"cannot connect to ClickHouse at {target.display()}: {_connection_message(err)}"
        ) from err


@contextmanager
def open_clickhouse_server(url: str) -> Iterator[QueryRunner]:
    """Query a ClickHouse server's ``otel_traces`` through clickhouse-connect; closes on exit.

    >>> with open_clickhouse_server("clickhouse://ch:8123/otel") as store:  # doctest: +SKIP
    ...     data = extract_run_data(store)
    """
    target = ServerUrl.parse(url)
    client = connect_server(target)
    try:
        connection = ServerConnection(client)
        store_meta(connection, target.database, target.display())
        yield QueryRunner(connection, "clickhouse", source=target.display(), lock=threading.Lock())
    finally:
        client.close()


register_store_scheme("chdb", _open_chdb_url)
register_store_scheme("clickhouse", open_clickhouse_server)
register_store_scheme("clickhouses", open_clickhouse_server)


# ---------------------------------------------------------------------------------------------
# Loading: a DuckDB store's spans into chdb, in the exporter's schema
# ---------------------------------------------------------------------------------------------
_TIMESTAMP_COLUMNS: Final = ("Timestamp", "Events.Timestamp")


def copy_duckdb_to_chdb(
    duckdb_path: str | os.PathLike[str],
    connection: ChdbConnection,
    *,
    database: str = DEFAULT_DATABASE,
) -> int:
    """Create ``database.otel_traces`` (the exporter's DDL) on ``connection`` if absent and copy
    every span of the DuckDB store at ``duckdb_path`` into it; returns the spans copied.

    Rows travel as Parquet with timestamps as integer nanoseconds since the epoch (so no time
    zone can shift them) and become ``DateTime64(9)`` again with ``fromUnixTimestamp64Nano``.

    >>> conn = ChdbConnection(chdb.session.Session("/data/ch"), "otel")  # doctest: +SKIP
    >>> copied = copy_duckdb_to_chdb("spans.duckdb", conn)  # doctest: +SKIP
    """
    from otelbench.store import SpanStore

    db = _database(database, str(duckdb_path))
    connection.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    connection.execute(f"USE {db}")
    connection.execute(clickhouse_schema())
    with SpanStore.open(duckdb_path, read_only=True) as store:
        names = [
            str(row[0])
            for row in store.connection.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'otel_traces' ORDER BY ordinal_position"
            ).fetchall()
        ]
        exported = ", ".join(
            f'list_transform("{c}", lambda t: epoch_ns(t)) AS "{c}"'
            if c == "Events.Timestamp"
            else (f'epoch_ns("{c}") AS "{c}"' if c == "Timestamp" else f'"{c}"')
            for c in names
        )
        with tempfile.TemporaryDirectory(prefix="otelbench-ch-") as tmp:
            parquet = Path(tmp) / "otel_traces.parquet"
            store.connection.execute(
                f"COPY (SELECT {exported} FROM otel_traces) TO '{parquet}' (FORMAT parquet)"
            )
            count = int(
                store.connection.execute("SELECT count(*) FROM otel_traces").fetchall()[0][0]
            )
            imported = ", ".join(
                "arrayMap(t -> fromUnixTimestamp64Nano(t), `Events.Timestamp`)"
                if c == "Events.Timestamp"
                else ("fromUnixTimestamp64Nano(Timestamp)" if c == "Timestamp" else f"`{c}`")
                for c in names
            )
            columns = ", ".join(f"`{c}`" for c in names)
            connection.execute(
                f"INSERT INTO otel_traces ({columns}) "
                f"SELECT {imported} FROM file('{parquet}', Parquet)"
            )
    return count


# ---------------------------------------------------------------------------------------------
# Aggregations in the database
# ---------------------------------------------------------------------------------------------
def server_itl_summary(store: QueryRunner, run_id: str) -> Summary:
    """Run ``run_id``'s server ITL distribution (ms), computed in ClickHouse: the figures of the
    report's ``metrics.server.itl_ms`` (same samples, same type-7 percentiles) in one query.

    >>> server_itl_summary(store, "r1").p99  # doctest: +SKIP
    24.8
    """
    return _summary(store, "run_server_itl_summary", run_id)


def client_itl_summary(store: QueryRunner, run_id: str) -> Summary:
    """Run ``run_id``'s client ITL distribution (ms, Option B: every token of a chunk arrives
    with it), computed in ClickHouse: the figures of the report's ``metrics.client.itl_ms``.

    >>> client_itl_summary(store, "r1").count  # doctest: +SKIP
    600
    """
    return _summary(store, "run_client_itl_summary", run_id)


def client_itl_per_request(
    store: QueryRunner, run_id: str
) -> dict[str, dict[str, int | float | None]]:
    """Run ``run_id``'s per-request client ITL jitter and maximum pause P50/P95/P99 (ms, draft
    5.4.4.2), computed in ClickHouse: the report's ``metrics.client.itl_per_request``.

    >>> client_itl_per_request(store, "r1")["max_pause_ms"]["p99"]  # doctest: +SKIP
    31.5
    """
    return _per_request(store, "run_client_itl_per_request", run_id)


def server_itl_per_request(
    store: QueryRunner, run_id: str
) -> dict[str, dict[str, int | float | None]]:
    """Run ``run_id``'s per-request server ITL jitter and maximum pause P50/P95/P99 (ms, Option
    C), computed in ClickHouse: the report's ``metrics.server.itl_per_request``.

    >>> server_itl_per_request(store, "r1")["jitter_ms"]["p50"]  # doctest: +SKIP
    1.2
    """
    return _per_request(store, "run_server_itl_per_request", run_id)


_PER_REQUEST_LEVELS: Final = (50, 95, 99)
"""The percentiles the report gives of per-request figures (``_p50_p95_p99``)."""


def _per_request(
    store: QueryRunner, query: str, run_id: str
) -> dict[str, dict[str, int | float | None]]:
    levels = [p / 100.0 for p in _PER_REQUEST_LEVELS]
    cols = store.run(query, run_id=run_id, levels=levels)
    out: dict[str, dict[str, int | float | None]] = {}
    for name, column in (("jitter_ms", "jitter"), ("max_pause_ms", "max_pause")):
        values = [float(v) for v in cols[f"{column}_percentiles"][0]]
        figures: dict[str, int | float | None] = {"count": int(cols[f"{column}_count"][0])}
        for i, p in enumerate(_PER_REQUEST_LEVELS):
            figures[f"p{p}"] = values[i] if values else None
        out[name] = figures
    return out


def _summary(store: QueryRunner, query: str, run_id: str) -> Summary:
    levels = [p / 100.0 for p in PERCENTILES]
    cols = store.run(query, run_id=run_id, levels=levels)
    count = int(np.asarray(cols["count"])[0])
    if count == 0:
        return Summary(0, None, None, None, None, None, None, None, None, None)
    p50, p90, p95, p99, p99_9 = (float(v) for v in cols["percentiles"][0])
    return Summary(
        count=count,
        mean=float(np.asarray(cols["mean"])[0]),
        std=float(np.asarray(cols["std"])[0]),
        min=float(np.asarray(cols["min"])[0]),
        max=float(np.asarray(cols["max"])[0]),
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        p99_9=p99_9,
    )


def run_target_span_count(store: QueryRunner, run_id: str) -> int:
    """Spans from the target (every service but the load generator) in run ``run_id``'s traces,
    counted in ClickHouse: how a run learns that an external collector has stored them.

    >>> run_target_span_count(store, "r1")  # doctest: +SKIP
    40
    """
    cols = store.run("run_target_span_count", run_id=run_id, service_client=semconv.SERVICE_CLIENT)
    return int(np.asarray(cols["spans"])[0])
