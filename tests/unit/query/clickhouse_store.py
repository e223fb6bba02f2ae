"""chdb span stores for tests, built from the same spans as the DuckDB stores (``spanstore``).

chdb (ClickHouse in-process) serves **one data directory per process**: every test in a pytest
process shares :func:`chdb_dir` (a temporary directory, removed at exit) and each store is its own
database in it. :func:`load_chdb` copies a DuckDB store's spans into a new database with
:func:`otelbench.query.clickhouse.copy_duckdb_to_chdb` (the exporter's ``otel_traces`` DDL) and
returns the store's ``chdb://`` URL; :func:`load_chdb_as_exporter` inserts them as the collector's
ClickHouse exporter would have (``tests/fixtures/exporter_rows.py``), in its Map schema or its
JSON one. Any other test that uses chdb
must use :func:`chdb_dir` too.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import chdb.session

from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb
from tests.fixtures.exporter_rows import (
    create_exporter_table,
    insert_like_exporter,
    request_from_store,
    typed_request,
)

_DIR: list[Path] = []


def chdb_dir() -> Path:
    """This process's chdb data directory (created on first use, removed at exit)."""
    if not _DIR:
        path = Path(tempfile.mkdtemp(prefix="otelbench-chdb-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _DIR.append(path)
    return _DIR[0]


@contextmanager
def chdb_session() -> Iterator[Any]:
    """A chdb session on :func:`chdb_dir` (closed on exit)."""
    session = chdb.session.Session(str(chdb_dir()))
    try:
        yield session
    finally:
        session.close()


def new_database() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def load_chdb_as_exporter(duckdb_path: Path, *, json_schema: bool = False) -> str:
    """The DuckDB store's spans inserted into a new chdb database as the OTel Collector's
    ClickHouse exporter inserts them (its DDL for this engine, its values: current kind and status
    spellings whatever the DuckDB store holds; ``tests/fixtures/exporter_rows.py``); its
    ``chdb://`` URL. With ``json_schema``, as its json mode creates the table and inserts the
    rows, from the spans with their attributes typed as a sender types them (``typed_request``).
    """
    database = new_database()
    request = request_from_store(duckdb_path)
    if json_schema:
        request = typed_request(request)
    with chdb_session() as session:
        connection = ChdbConnection(session, database)
        create_exporter_table(connection, database, json_schema=json_schema)
        inserted = insert_like_exporter(connection, database, request, json_schema=json_schema)
    assert inserted > 0
    return f"chdb://{chdb_dir()}?database={database}"


def load_chdb(duckdb_path: Path) -> str:
    """Copy the DuckDB store's spans into a new chdb database; its ``chdb://`` URL."""
    database = new_database()
    with chdb_session() as session:
        copied = copy_duckdb_to_chdb(
            duckdb_path, ChdbConnection(session, database), database=database
        )
        counted = (
            session.query(f"SELECT count() FROM {database}.otel_traces", "CSV")
            .bytes()
            .decode()
            .strip()
        )
    assert int(counted) == copied
    return f"chdb://{chdb_dir()}?database={database}"
