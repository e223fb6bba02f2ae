"""The span store's ClickHouse engine: chdb (embedded) and ClickHouse servers.

Everything otelbench needs to hold a ClickHouse span store, in one place: the store URLs
(:class:`ChdbUrl`, :class:`ServerUrl`), the connections (:class:`ChdbConnection`,
:class:`ServerConnection`: a query with ``{name:Type}`` parameters → an Arrow table, statements,
JSONEachRow inserts), opening a store for reading (:func:`open_chdb_connection`,
:func:`open_server_connection`, which check its ``otelbench_meta`` with :func:`store_meta`), the
exporter's ``otel_traces`` DDL (:func:`clickhouse_schema`,
``otelbench/store/sql/clickhouse/schema.sql``), the writer the collector uses
(:class:`ClickHouseSpanWriter`) and :func:`copy_duckdb_to_chdb`. The query layer
(:mod:`otelbench.query.clickhouse`) runs its named SQL over these connections; this module never
imports the query layer.

Two kinds of store:

* ``chdb:///abs/dir[?database=otel]`` — ClickHouse's engine in-process (chdb-core-lite), over a
  ClickHouse data directory. chdb serves **one data directory per process** and **one process
  per directory**: query a store in the process that writes it, or after the writer exits.
* ``clickhouse://[user[:password]@]host[:port][/database]`` (``clickhouses://`` for TLS) — a
  ClickHouse server through clickhouse-connect (HTTP; port 8123, 8443 with TLS). The database
  defaults to ``otel``, the exporter's default.

::

    with ClickHouseSpanWriter.open("chdb:///var/lib/otelbench/ch") as writer:
        writer.insert_spans(rows)                  # one INSERT; in the table when it returns

**What it writes.** ``otel_traces`` exactly as the OpenTelemetry Collector's ClickHouse exporter
creates it (the one DDL, read by :func:`clickhouse_schema`), created if absent in the URL's
database (default ``otel``, created if absent), and the same rows :class:`~otelbench.store.SpanRow`
gives the DuckDB store: attribute maps hold every value as the string the exporter writes (arrays
as JSON text), ``Events``/``Links`` as the Nested columns' parallel arrays. So the query layer, the
reports and dashboards read a store this writer filled exactly as one the exporter filled. It
also keeps ``otelbench_meta`` (``schema_version``, ``created_by``), as the DuckDB store does;
the ClickHouse readers do not need it (an exporter-written database has none), but readers and
this writer refuse a database whose meta says a newer otelbench wrote it (:func:`store_meta`).

**Which schema.** The exporter creates ``otel_traces`` with ``Map`` attribute columns, or, in its
json mode, ``JSON`` ones (:data:`TRACES_SCHEMAS`); :func:`traces_schema` tells them apart from
``system.columns`` and refuses any other, and the query layer reads both. This writer creates the
Map table; in a database whose ``otel_traces`` the json mode created it inserts into that table
(its string values are JSON strings there, read back the same).

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
run and the procedures do exactly that). Inserts are serialised by
:attr:`ClickHouseSpanWriter.lock`.

The server path (``clickhouse://``) cannot be exercised on this machine (no ClickHouse server
installs here); it runs the same SQL and rows as chdb through clickhouse-connect.

Errors (translated once, here)::

    OtelbenchError
    ├── ConfigError            a malformed store URL, a missing driver
    └── StoreError             missing data directory, locked or unreachable store, failed query
        └── NotAnOtelbenchStore  no otel_traces table / database / expected column, attribute
                                 columns of neither of the exporter's schemas, or a database
                                 written by a newer otelbench
"""

from __future__ import annotations

import json
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

from otelbench import __version__, semconv
from otelbench.errors import ConfigError, NotAnOtelbenchStore, StoreError
from otelbench.lifecycle import Closes
from otelbench.store.duckdb import SCHEMA_VERSION, SpanStore
from otelbench.store.rows import GaugeRow, HistogramRow, SpanRow, SumRow

__all__ = [
    "DEFAULT_DATABASE",
    "META_TABLE",
    "METRICS_NOT_STORED",
    "SCHEMES",
    "TRACES_SCHEMAS",
    "ChdbConnection",
    "ChdbUrl",
    "ClickHouseConnection",
    "ClickHouseSpanWriter",
    "ServerConnection",
    "ServerUrl",
    "clickhouse_schema",
    "connect_server",
    "copy_duckdb_to_chdb",
    "escape_parameter",
    "open_chdb_connection",
    "open_chdb_session",
    "open_server_connection",
    "span_to_json",
    "store_meta",
    "traces_schema",
]

DEFAULT_DATABASE: Final = "otel"
"""The database the collector's ClickHouse exporter writes ``otel_traces`` into by default."""

_PARAM: Final = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):")
_CODE: Final = re.compile(r"Code:\s*(\d+)")
_NOT_OURS: Final = frozenset({16, 47, 60, 81})
"""NO_SUCH_COLUMN_IN_TABLE, UNKNOWN_IDENTIFIER, UNKNOWN_TABLE, UNKNOWN_DATABASE."""

_DATABASE_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def clickhouse_schema() -> str:
    """The exporter's ``otel_traces`` DDL (``otelbench/store/sql/clickhouse/schema.sql``)."""
    resource = files("otelbench.store") / "sql" / "clickhouse" / "schema.sql"
    return resource.read_text(encoding="utf-8")


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
def open_chdb_connection(
    path: str | os.PathLike[str], database: str = DEFAULT_DATABASE
) -> Iterator[ChdbConnection]:
    """A connection on an existing chdb data directory's ``database`` (read-only use), its
    ``otelbench_meta`` checked; closes on exit.

    >>> with open_chdb_connection("/var/lib/otelbench/ch") as conn:  # doctest: +SKIP
    ...     conn.query_arrow("SELECT count() FROM otel_traces", {}, "chdb")
    """
    directory = Path(path)
    source = ChdbUrl(directory, database).display()
    if not (directory / "metadata").is_dir():
        raise StoreError(f"no chdb store at {directory} (not a ClickHouse data directory)")
    session = open_chdb_session(directory)
    try:
        connection = ChdbConnection(session, database)
        connection.execute(f"USE {_database(database, source)}", source)
        store_meta(connection, database, source)
        yield connection
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


TRACES_SCHEMAS: Final[Mapping[str, str]] = {
    "map": "Map(LowCardinality(String), String) attributes (the exporter's default, "
    "traces_table.sql)",
    "json": "JSON attributes (the exporter's json mode, traces_json_table.sql)",
}
"""The two ``otel_traces`` schemas the collector's ClickHouse exporter creates, by the type of
the attribute columns; otelbench reads both (the query layer presents a JSON table as the Map
one, :mod:`otelbench.query.clickhouse`)."""

_ATTRIBUTE_COLUMNS: Final = (
    "ResourceAttributes",
    "SpanAttributes",
    "Events.Attributes",
    "Links.Attributes",
)


def _attribute_kind(column_type: str) -> str:
    """``map`` or ``json`` for an attribute column's type (a Nested one's is an Array of it);
    ``''`` for anything else."""
    inner = column_type.removeprefix("Array(")
    return "map" if inner.startswith("Map(") else "json" if inner.startswith("JSON") else ""


def traces_schema(connection: ClickHouseConnection, database: str, source: str) -> str | None:
    """Which of :data:`TRACES_SCHEMAS` ``database.otel_traces`` has, from ``system.columns``;
    None when there is no such table (the queries then say so). A table whose attribute columns
    are of neither schema raises :class:`~otelbench.errors.NotAnOtelbenchStore` naming both.

    >>> traces_schema(ChdbConnection(session, "otel"), "otel", "chdb")  # doctest: +SKIP
    'json'
    """
    table = connection.query_arrow(
        "SELECT name, type FROM system.columns WHERE database = {db:String} AND "
        "table = {t:String} AND name IN {names:Array(String)}",
        {"db": _database(database, source), "t": semconv.TABLE_TRACES,
         "names": list(_ATTRIBUTE_COLUMNS)},
        source,
    )  # fmt: skip
    names, column_types = (table.column(i).to_pylist() for i in range(2))
    types = {_text(n): _text(t) for n, t in zip(names, column_types, strict=True)}
    if not types:
        return None
    kinds = {_attribute_kind(t) for t in types.values()}
    if len(types) == len(_ATTRIBUTE_COLUMNS) and len(kinds) == 1 and "" not in kinds:
        return kinds.pop()
    found = ", ".join(f"{name} {types.get(name, '(missing)')}" for name in _ATTRIBUTE_COLUMNS)
    supported = "; or ".join(TRACES_SCHEMAS.values())
    raise NotAnOtelbenchStore(
        f"{source}: {semconv.TABLE_TRACES} has {found}: not a schema of the collector's "
        f"ClickHouse exporter; otelbench reads {semconv.TABLE_TRACES} with {supported}"
    )


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
def open_server_connection(url: str) -> Iterator[ServerConnection]:
    """A connection on a ClickHouse server's database (the URL's), its ``otelbench_meta``
    checked; closes on exit.

    >>> with open_server_connection("clickhouse://ch:8123/otel") as conn:  # doctest: +SKIP
    ...     conn.query_arrow("SELECT count() FROM otel_traces", {}, "ch")
    """
    target = ServerUrl.parse(url)
    client = connect_server(target)
    try:
        connection = ServerConnection(client)
        store_meta(connection, target.database, target.display())
        yield connection
    finally:
        client.close()


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
# Writing: the collector's ClickHouse store
# ---------------------------------------------------------------------------------------------
METRICS_NOT_STORED: Final = (
    "metric data points are not stored in a ClickHouse span store (spans only)"
)
"""The ``partial_success`` message for metric points a ClickHouse store does not keep."""

SCHEMES: Final = frozenset({"chdb", "clickhouse", "clickhouses"})
"""The store URL schemes of a ClickHouse store."""


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


class ClickHouseSpanWriter(Closes):
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
        scheme = url.split("://", 1)[0].lower()
        if scheme == "chdb":
            parsed = ChdbUrl.parse(url)
            session = open_chdb_session(parsed.path)
            connection: _Connection = ChdbConnection(session, parsed.database)
            writer = cls(connection, parsed.database, parsed.display(), session.close)
        else:
            target = ServerUrl.parse(url)
            client = connect_server(target, database="default")
            connection = ServerConnection(client)
            writer = cls(connection, target.database, target.display(), client.close)
        try:
            writer._create(clickhouse_schema())
        except BaseException:
            writer.close()
            raise
        return writer

    def _create(self, traces_ddl: str) -> None:
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

    def __repr__(self) -> str:
        state = "closed" if self._connection is None else "read-write"
        return f"ClickHouseSpanWriter({self._source!r}, {state})"
