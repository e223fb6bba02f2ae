"""The ClickHouse dialect of the query layer: chdb (embedded) and ClickHouse servers.

The named queries of :mod:`otelbench.query.extract` run in ClickHouse SQL
(``otelbench/query/sql/clickhouse/<name>.sql``, ``{name:Type}`` parameters) over ``otel_traces``
exactly as the OpenTelemetry Collector's ClickHouse exporter creates it
(``otelbench/store/sql/clickhouse/schema.sql``), and return the same columns as the DuckDB
dialect, so :func:`~otelbench.query.extract.extract_run_data` and the report are the same on
either store. The connections, store URLs and the checks on opening are the store's
(:mod:`otelbench.store.clickhouse`); this module registers the dialect (its fetch: an Arrow
table → columns) and the ``chdb://``, ``clickhouse://`` and ``clickhouses://`` schemes of
:func:`~otelbench.query.open_store`.

**Both of the exporter's schemas.** The exporter creates ``otel_traces`` with ``Map`` attribute
columns by default and with ``JSON`` ones in its json mode (``traces_json_table.sql``). Opening a
store reads which one its table has (:func:`~otelbench.store.clickhouse.traces_schema`, from
``system.columns``); on a JSON table every query reads ``_otel_traces_json.sql`` in place of
``otel_traces`` (:func:`traces_relation`): the same rows with each attribute map rebuilt as the Map
schema holds it, so one set of SQL serves both and the reports are the same
(``tests/unit/query/test_clickhouse_json_schema.py``). A table of any other schema is refused on
opening with one message naming the two.

:func:`run_target_span_count` counts a run's target spans in the store (how a run waits for them
when an external collector writes a ClickHouse server). The report's aggregations (the ITL
distributions among them) run in numpy on the extracted records, as on DuckDB: the report needs
every record for its other sections anyway, and ClickHouse did not do the ITL figures faster
(``bench/results/query_dialects.json``: the server ITL summary 0.94 s in chdb against 1.20 s for
extraction and numpy, the client and per-request ITL 1.64 s against 1.29 s, on a million token
offsets, with the extraction still to do).

Errors are translated once, in :mod:`otelbench.store.clickhouse` (the connections raise
:class:`~otelbench.errors.StoreError` and :class:`~otelbench.errors.NotAnOtelbenchStore`).

Usage::

    from otelbench.query import extract_run_data, open_store
    from otelbench.query.clickhouse import run_target_span_count

    with open_store("chdb:///var/lib/otelbench/ch") as store:
        data = extract_run_data(store)
        target_spans = run_target_span_count(store, data.run.run_id)
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import numpy as np

from otelbench import semconv
from otelbench.query.extract import (
    Columns,
    Dialect,
    QueryRunner,
    arrow_columns,
    get_dialect,
    register_dialect,
    register_store_scheme,
)
from otelbench.store.clickhouse import (
    DEFAULT_DATABASE,
    ChdbUrl,
    ServerUrl,
    open_chdb_connection,
    open_server_connection,
    traces_schema,
)

__all__ = [
    "open_chdb",
    "open_clickhouse_server",
    "run_target_span_count",
    "traces_relation",
]

_PARAM: Final = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):")


def _clickhouse_fetch(
    connection: Any, sql: str, params: Mapping[str, object], source: str
) -> Columns:
    return arrow_columns(connection.query_arrow(sql, params, source), flat_lists=True)


register_dialect(Dialect("clickhouse", _clickhouse_fetch, _PARAM))


# ---------------------------------------------------------------------------------------------
# Opening stores for queries
# ---------------------------------------------------------------------------------------------
_TRACES_RELATIONS: Final[Mapping[str, str | None]] = {"map": None, "json": "_otel_traces_json"}
"""What the queries read for ``otel_traces``, by the table's schema
(:data:`~otelbench.store.clickhouse.TRACES_SCHEMAS`): the table itself (the Map schema the SQL
is written for), or the named SQL that presents the JSON schema's table as the Map one."""


def traces_relation(schema: str) -> str | None:
    """The SQL every query reads in place of ``otel_traces`` on a table of ``schema`` (a key of
    :data:`~otelbench.store.clickhouse.TRACES_SCHEMAS`); None: the table itself. The dashboards
    read it too (``otelbench dashboards push --traces-schema``).

    >>> traces_relation("json").startswith("-- _otel_traces_json")
    True
    """
    relation = _TRACES_RELATIONS[schema]
    return None if relation is None else get_dialect("clickhouse").sql(relation)


def _runner(connection: Any, database: str, source: str) -> QueryRunner:
    """A runner on ``connection`` that reads ``otel_traces`` in the schema its table has."""
    traces = traces_relation(traces_schema(connection, database, source) or "map")
    return QueryRunner(
        connection, "clickhouse", source=source, lock=threading.Lock(), traces=traces
    )


@contextmanager
def open_chdb(
    path: str | os.PathLike[str], database: str = DEFAULT_DATABASE
) -> Iterator[QueryRunner]:
    """Query an existing chdb data directory's ``database`` (read-only use); closes on exit.

    >>> with open_chdb("/var/lib/otelbench/ch") as store:  # doctest: +SKIP
    ...     data = extract_run_data(store)
    """
    source = ChdbUrl(Path(path), database).display()
    with open_chdb_connection(path, database) as connection:
        yield _runner(connection, database, source)


def _open_chdb_url(url: str) -> Any:
    parsed = ChdbUrl.parse(url)
    return open_chdb(parsed.path, parsed.database)


@contextmanager
def open_clickhouse_server(url: str) -> Iterator[QueryRunner]:
    """Query a ClickHouse server's ``otel_traces`` through clickhouse-connect; closes on exit.

    >>> with open_clickhouse_server("clickhouse://ch:8123/otel") as store:  # doctest: +SKIP
    ...     data = extract_run_data(store)
    """
    target = ServerUrl.parse(url)
    with open_server_connection(url) as connection:
        yield _runner(connection, target.database, target.display())


register_store_scheme("chdb", _open_chdb_url)
register_store_scheme("clickhouse", open_clickhouse_server)
register_store_scheme("clickhouses", open_clickhouse_server)


# ---------------------------------------------------------------------------------------------
# Counts in the database
# ---------------------------------------------------------------------------------------------
def run_target_span_count(store: QueryRunner, run_id: str) -> int:
    """Spans from the target (every service but the load generator) in run ``run_id``'s traces,
    counted in ClickHouse: how a run learns that an external collector has stored them.

    >>> run_target_span_count(store, "r1")  # doctest: +SKIP
    40
    """
    cols = store.run("run_target_span_count", run_id=run_id, service_client=semconv.SERVICE_CLIENT)
    return int(np.asarray(cols["spans"])[0])
