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

Errors are translated once, in :mod:`otelbench.store.clickhouse` (the connections raise
:class:`~otelbench.errors.StoreError` and :class:`~otelbench.errors.NotAnOtelbenchStore`).

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
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import numpy as np

from otelbench import draft, semconv
from otelbench.metrics.summary import Summary
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
    "client_itl_per_request",
    "client_itl_summary",
    "open_chdb",
    "open_clickhouse_server",
    "run_target_span_count",
    "server_itl_per_request",
    "server_itl_summary",
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
    levels = [p / 100.0 for p in draft.PERCENTILES]
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
