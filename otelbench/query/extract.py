"""Run the named SQL queries against a span store and return typed records.

Each named query is one ``.sql`` file per dialect, ``<package>/sql/<dialect>/<name>.sql`` (this
package's by default; the live queries are ``otelbench/live/sql/<dialect>/<name>.sql``, run by the
same :meth:`QueryRunner.run`), with bound parameters: values (a run id, a time window) *and*
every span, attribute, kind and status name, which come from :mod:`otelbench.semconv` — the
SQL text holds no names of its own.
A kind or status is matched by both spellings a store may hold (the exporter's current ``Server``
/ ``Error`` and its pre-2024 ``SPAN_KIND_SERVER`` / ``STATUS_CODE_ERROR``: :data:`NAME_PARAMETERS`).
Dialects are registered (:func:`register_dialect`): DuckDB here, ClickHouse in
:mod:`otelbench.query.clickhouse` (``{name:Type}`` parameters and its fetch function).
:func:`open_store` opens a DuckDB file, or a store URL whose scheme is registered
(:func:`register_store_scheme`: ``chdb:///path`` and ``clickhouse://host:port/db``); the
connections come from the store's engines (:mod:`otelbench.store.duckdb`,
:mod:`otelbench.store.clickhouse`), which never import the query layer.

Stored attributes come from any producer (otelbench's own spans, vLLM's ``llm_request`` spans,
other SDKs), so they are parsed **leniently, and counted**: the SQL converts a value only when it
matches the pattern of its type (:data:`PATTERN_PARAMETERS`, bound in both dialects, so DuckDB
and ClickHouse accept exactly the same text); a present value that does not match is read as
absent — one bad attribute never fails a report — and each query's ``rejected_attributes``
column names it, which the records carry as counts per attribute (``RunData.rejected_attributes``,
the report's ``data_quality``).

Usage::

    from otelbench.query import extract_run_data, open_store

    with open_store("otelbench.duckdb") as store:
        data = extract_run_data(store)            # the only / latest run
        print(data.run.run_id, len(data.client), len(data.server))
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from importlib import import_module
from importlib.resources import files
from importlib.resources.abc import Traversable
from importlib.util import find_spec
from itertools import pairwise
from typing import Any, Final, TypeAlias

import duckdb
import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.errors import ConfigError, NotAnOtelbenchStore, StoreError, registered
from otelbench.query.records import (
    ClientRequests,
    GuardrailSpans,
    PhaseRequests,
    RunData,
    RunInfo,
    ServerRequests,
    ServerSource,
    run_manifest,
)
from otelbench.query.shards import (
    is_sharded,
    join_shards,
)
from otelbench.store import SpanStore
from otelbench.store.duckdb import snapshot_note

__all__ = [
    "PATTERN_PARAMETERS",
    "SQL_PACKAGE",
    "Dialect",
    "ListColumn",
    "QueryRunner",
    "arrow_columns",
    "extract_client_requests",
    "extract_guardrail_spans",
    "extract_phases",
    "extract_run",
    "extract_run_data",
    "extract_run_server_requests",
    "extract_server_sources",
    "get_dialect",
    "is_store_url",
    "list_runs",
    "open_store",
    "read_traces_from",
    "register_dialect",
    "register_store_scheme",
]

NAME_PARAMETERS: Final[Mapping[str, str]] = {
    "span_run": semconv.SPAN_RUN,
    "span_vllm_request": semconv.SPAN_VLLM_REQUEST,
    "span_hook_request": semconv.SPAN_HOOK_REQUEST,
    "span_gateway_request": semconv.SPAN_GATEWAY_REQUEST,
    "span_guardrail_filter": semconv.SPAN_GUARDRAIL_FILTER,
    "event_preemption": semconv.EVENT_PREEMPTION,
    "event_resumption": semconv.EVENT_RESUMPTION,
    "kind_client": semconv.SPAN_KIND_CLIENT,
    "kind_client_legacy": semconv.SPAN_KIND_CLIENT_LEGACY,
    "kind_server": semconv.SPAN_KIND_SERVER,
    "kind_server_legacy": semconv.SPAN_KIND_SERVER_LEGACY,
    "status_error": semconv.STATUS_ERROR,
    "status_error_legacy": semconv.STATUS_ERROR_LEGACY,
    "one_per_chunk": semconv.CHUNK_TOKENS_ONE_PER_CHUNK,
    "attr_run_id": semconv.RUN_ID,
    "attr_run_manifest": semconv.RUN_MANIFEST,
    "attr_ttft_us": semconv.CLIENT_TTFT_US,
    "attr_first_event_offset_us": semconv.CLIENT_FIRST_EVENT_OFFSET_US,
    "attr_end_offset_us": semconv.CLIENT_END_OFFSET_US,
    "attr_chunk_offsets_us": semconv.CLIENT_CHUNK_OFFSETS_US,
    "attr_chunk_tokens": semconv.CLIENT_CHUNK_TOKENS,
    "attr_chunk_token_source": semconv.CLIENT_CHUNK_TOKEN_SOURCE,
    "attr_input_tokens": semconv.GEN_AI_USAGE_INPUT_TOKENS,
    "attr_output_tokens": semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
    "attr_finish_reasons": semconv.GEN_AI_RESPONSE_FINISH_REASONS,
    "attr_error_type": semconv.ERROR_TYPE,
    "attr_request_index": semconv.REQUEST_INDEX,
    "attr_request_class": semconv.REQUEST_CLASS,
    "attr_schedule_lag_us": semconv.REQUEST_SCHEDULE_LAG_US,
    "attr_prompt_tokens_sent": semconv.REQUEST_PROMPT_TOKENS,
    "attr_max_tokens": semconv.GEN_AI_REQUEST_MAX_TOKENS,
    "attr_think_phase": semconv.CLIENT_THINK_PHASE,
    "attr_request_phase": semconv.REQUEST_PHASE,
    "phase_measure": semconv.PHASE_MEASURE,
    "attr_output_phase_chunk": semconv.CLIENT_OUTPUT_PHASE_CHUNK,
    "attr_vllm_ttft": semconv.VLLM_LATENCY_TTFT,
    "attr_vllm_e2e": semconv.VLLM_LATENCY_E2E,
    "attr_vllm_queue": semconv.VLLM_LATENCY_QUEUE,
    "attr_vllm_prefill": semconv.VLLM_LATENCY_PREFILL,
    "attr_vllm_decode": semconv.VLLM_LATENCY_DECODE,
    "attr_vllm_inference": semconv.VLLM_LATENCY_INFERENCE,
    "attr_vllm_prompt_tokens": semconv.VLLM_USAGE_PROMPT_TOKENS,
    "attr_vllm_completion_tokens": semconv.VLLM_USAGE_COMPLETION_TOKENS,
    "attr_vllm_request_id": semconv.VLLM_REQUEST_ID,
    "attr_vllm_finish_reason": semconv.VLLM_RESPONSE_FINISH_REASON,
    "attr_cache_read_tokens": semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    "attr_server_preemptions": semconv.SERVER_PREEMPTIONS,
    "attr_server_token_offsets_us": semconv.SERVER_TOKEN_OFFSETS_US,
    "attr_server_output_phase_token": semconv.SERVER_OUTPUT_PHASE_TOKEN,
    "attr_server_end_reason": semconv.SERVER_END_REASON,
    "attr_server_end_phase": semconv.SERVER_END_PHASE,
    "attr_server_prompt_tokens_computed": semconv.SERVER_PROMPT_TOKENS_COMPUTED,
    "attr_server_output_tokens_generated": semconv.SERVER_OUTPUT_TOKENS_GENERATED,
    "attr_preemption_kv_discarded": semconv.PREEMPTION_KV_TOKENS_DISCARDED,
    "res_vllm_version": semconv.RESOURCE_VLLM_VERSION,
    "res_hooks_version": semconv.RESOURCE_TELEMETRY_DISTRO_VERSION,
    "res_hook_support": semconv.RESOURCE_HOOK_SUPPORT,
    "attr_preemption_stall_us": semconv.PREEMPTION_STALL_US,
    "attr_guardrail_filter_name": semconv.GUARDRAIL_FILTER_NAME,
    "attr_guardrail_filter_type": semconv.GUARDRAIL_FILTER_TYPE,
    "attr_guardrail_stage": semconv.GUARDRAIL_STAGE,
    "attr_guardrail_decision": semconv.GUARDRAIL_DECISION,
    "attr_guardrail_rule": semconv.GUARDRAIL_RULE,
    "attr_guardrail_error": semconv.GUARDRAIL_ERROR,
    "attr_guardrail_invocations": semconv.GUARDRAIL_INVOCATIONS,
    "attr_guardrail_busy_us": semconv.GUARDRAIL_BUSY_US,
    "attr_guardrail_chunk_busy_us": semconv.GUARDRAIL_CHUNK_BUSY_US,
    "attr_guardrail_output_added_us": semconv.GUARDRAIL_OUTPUT_ADDED_US,
    "attr_guardrail_input_filters": semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS,
    "attr_guardrail_output_filters": semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS,
    "attr_guardrail_config_sha256": semconv.RESOURCE_GUARDRAIL_CONFIG_SHA256,
    "attr_guardrail_block_response": semconv.RESOURCE_GUARDRAIL_BLOCK_RESPONSE,
}
"""Every name the SQL files bind, as ``$name`` parameters, from :mod:`otelbench.semconv`. A kind or
status is matched by each of its spellings (``SpanKind IN ($kind_server, $kind_server_legacy)``):
the exporter's current one, which otelbench writes, and the one it wrote before August 2024
(``semconv.SPAN_KIND_SERVER_SPELLINGS``), so stores of either read alike."""

_JSON_WS = r"[ \t\n\r]*"
_JSON_INT = r"-?(0|[1-9][0-9]{0,17})"
_JSON_STRING = (
    r'"([^"\\\x00-\x1f]|\\(["\\/bfnrt]'
    r"|u(00[2-9a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-cA-CeEfF][0-9a-fA-F]{3}"
    r'|[dD][0-7][0-9a-fA-F]{2})))*"'
)


def _json_array(item: str) -> str:
    return rf"^\[{_JSON_WS}({item}({_JSON_WS},{_JSON_WS}{item})*)?{_JSON_WS}\]$"


def _one_of(values: tuple[str, ...]) -> str:
    return "^(" + "|".join(re.escape(v) for v in values) + ")$"


PATTERN_PARAMETERS: Final[Mapping[str, str]] = {
    "re_int": r"^-?[0-9]{1,18}$",
    "re_number": r"^-?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,2})?$",
    "re_int_array": _json_array(_JSON_INT),
    "re_string_array": _json_array(_JSON_STRING),
    "re_end_reason": _one_of(semconv.END_REASONS),
    "re_end_phase": _one_of(semconv.END_PHASES),
}
"""What a stored attribute must look like to be parsed, as RE2 patterns both dialects bind
(``$re_int``, ``{re_int:String}``): one definition, so DuckDB and ClickHouse accept the same
text. An integer has at most 18 digits (no int64 overflow); a number has at most 30 digits on
either side of the point and a two-digit exponent (always finite); an array is JSON, of such
integers or of strings (no control characters, no escaped NUL or surrogates); an end reason or
end phase is one of :data:`otelbench.semconv.END_REASONS` / ``END_PHASES``. A value that is
present but does not match is **rejected**: read as absent (NULL, NaN, an empty list) and named
in the query's ``rejected_attributes`` column, which the extraction counts."""

_log = logging.getLogger("otelbench.query")

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_INCLUDE = re.compile(r"^[ \t]*-- @include (\w+)[ \t]*$", re.MULTILINE)
_LINE_COMMENT = re.compile(r"--[^\n]*")
_FROM_TRACES = re.compile(rf"\bFROM\s+{semconv.TABLE_TRACES}\b")


# ---------------------------------------------------------------------------------------------
# Dialects
# ---------------------------------------------------------------------------------------------
SQL_PACKAGE: Final = "otelbench.query"
"""The package whose ``sql/<dialect>/`` directories hold the query layer's named queries and the
fragments every named query may include."""


@dataclass(frozen=True)
class Dialect:
    """One SQL dialect: its name (the SQL directory ``<package>/sql/<name>/``) and how to run a
    query and fetch columns.

    ``fetch(connection, sql, params, source)`` runs ``sql`` with named parameters and returns
    its columns; it translates the driver's errors into :class:`~otelbench.errors.StoreError`.
    ``parameters`` finds the names of the parameters a query's text binds (group 1): DuckDB's
    ``$name`` by default, ClickHouse's ``{name:Type}`` in its dialect.
    """

    name: str
    fetch: Callable[[Any, str, Mapping[str, object], str], Columns]
    parameters: re.Pattern[str] = _PARAM

    def sql_dir(self, package: str = SQL_PACKAGE) -> Traversable:
        """``package``'s SQL directory of this dialect (``<package>/sql/<dialect>/``)."""
        return files(package) / "sql" / self.name

    def sql(self, query: str, package: str = SQL_PACKAGE) -> str:
        """The text of the named query in this dialect (``<package>/sql/<dialect>/<query>.sql``),
        its ``-- @include`` lines expanded."""
        resource = self.sql_dir(package) / f"{query}.sql"
        if not resource.is_file():
            where = "" if package == SQL_PACKAGE else f" in {package}"
            raise StoreError(f"no {self.name} SQL for query {query!r}{where}")
        return self.expand(resource.read_text(encoding="utf-8"))

    def expand(
        self, text: str, fragments: Traversable | None = None, including: tuple[str, ...] = ()
    ) -> str:
        """``text`` with each ``-- @include NAME`` line replaced by the fragment ``NAME.sql`` of
        ``fragments`` (default: the query layer's directory of this dialect, whatever package
        the query is in; a fragment several queries share, e.g. the server-span record's
        columns), whose own includes are expanded too (``including``: the fragments being
        expanded, to refuse a cycle)."""
        directory = self.sql_dir() if fragments is None else fragments

        def fragment(match: re.Match[str]) -> str:
            name = match.group(1)
            resource = directory / f"{name}.sql"
            if not resource.is_file():
                raise StoreError(f"no {self.name} SQL fragment {name!r} to include")
            if name in including:
                raise StoreError(f"{self.name} SQL fragment {name!r} includes itself")
            body = resource.read_text(encoding="utf-8").rstrip("\n")
            return self.expand(body, directory, (*including, name))

        return _INCLUDE.sub(fragment, text)


_DIALECTS: dict[str, Dialect] = {}


def register_dialect(dialect: Dialect) -> None:
    """Make ``dialect`` available to :class:`QueryRunner` under ``dialect.name``."""
    _DIALECTS[dialect.name] = dialect


def get_dialect(name: str) -> Dialect:
    """The registered dialect called ``name``."""
    return registered(_DIALECTS, name, "SQL dialect")


def _duckdb_fetch(connection: Any, sql: str, params: Mapping[str, object], source: str) -> Columns:
    try:
        if _HAVE_PYARROW:
            return _duckdb_fetch_arrow(connection, sql, params)
        return dict(connection.execute(sql, dict(params)).fetchnumpy())
    except duckdb.CatalogException as err:
        raise NotAnOtelbenchStore(
            f"{source} lacks a table the query layer reads ({_first_line(err)}); "
            "it is not an otelbench span store"
        ) from err
    except duckdb.Error as err:
        raise StoreError(f"query on span store {source} failed: {_first_line(err)}") from err


def _duckdb_fetch_arrow(connection: Any, sql: str, params: Mapping[str, object]) -> Columns:
    """The result as Arrow: list columns as :class:`ListColumn` (one flat buffer and offsets,
    no numpy array per row), the others converted by DuckDB's own ``fetchnumpy`` (scanning the
    Arrow table in place), so they are exactly what ``fetchnumpy`` gives."""
    import pyarrow as pa

    table = connection.sql(sql, params=dict(params)).to_arrow_table()
    names = table.column_names
    is_list = [pa.types.is_list(t) or pa.types.is_large_list(t) for t in table.schema.types]
    lists = {n: t for n, t, flag in zip(names, table.columns, is_list, strict=True) if flag}
    scalars = table.drop_columns(list(lists))
    converted = dict(connection.from_arrow(scalars).fetchnumpy()) if scalars.num_columns else {}
    for name, chunked in lists.items():
        converted[name] = _arrow_chunked(chunked, pa, flat_lists=True)
    return {n: converted[n] for n in names}


_HAVE_PYARROW: Final = find_spec("pyarrow") is not None
"""Fetch DuckDB results as Arrow when pyarrow is installed (it is with the ``clickhouse``
extra): list columns then arrive as one flat buffer and offsets (:class:`ListColumn`)."""


@dataclass(frozen=True)
class ListColumn:
    """A list column in the Arrow layout: row ``i`` holds ``values[offsets[i]:offsets[i+1]]``.

    What :func:`arrow_columns` gives for a list column with ``flat_lists=True``: the per-token
    arrays of 100,000 spans stay one array (no numpy array per row, no concatenation).
    """

    values: Any
    offsets: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def __getitem__(self, i: int) -> Any:
        """Row ``i``'s items (as the object array's row would be)."""
        return self.values[int(self.offsets[i]) : int(self.offsets[i + 1])]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


Column: TypeAlias = npt.NDArray[Any] | ListColumn
"""One column of a query result: a numpy array (masked where NULLs occur; for a list column an
object array of arrays) or, for a list column fetched as Arrow, a :class:`ListColumn`."""
Columns: TypeAlias = dict[str, Column]
"""A query result, column-oriented: column name → :data:`Column`."""


def arrow_columns(table: Any, *, flat_lists: bool = False) -> Columns:
    """Column name → numpy array, shaped like DuckDB's ``fetchnumpy()``: plain arrays, masked
    arrays where NULLs occur, object arrays of numpy arrays for list columns — or, with
    ``flat_lists``, a :class:`ListColumn` for a list column without NULL lists.

    >>> cols = arrow_columns(session.query("SELECT [1, 2] AS a", "ArrowTable"))  # doctest: +SKIP
    >>> cols["a"][0].tolist()  # doctest: +SKIP
    [1, 2]
    """
    import pyarrow as pa

    return {
        name: _arrow_chunked(chunked, pa, flat_lists)
        for name, chunked in zip(table.column_names, table.columns, strict=True)
    }


def _arrow_chunked(chunked: Any, pa: Any, flat_lists: bool) -> Any:
    is_list = pa.types.is_list(chunked.type) or pa.types.is_large_list(chunked.type)
    if chunked.num_chunks == 0 and is_list:  # no rows (combining no chunks imports pandas)
        numeric = pa.types.is_integer(chunked.type.value_type)
        values = np.empty(0, dtype=np.int64 if numeric else object)
        return ListColumn(values, np.zeros(1, dtype=np.int64)) if flat_lists else values
    if is_list and flat_lists and chunked.num_chunks > 1 and chunked.null_count == 0:
        # chunk by chunk: no Arrow copy of the whole list column into one chunk first
        parts = [_arrow_column(chunk, pa, flat_lists) for chunk in chunked.chunks]
        values = np.concatenate([part.values for part in parts])
        return ListColumn(values, _bounds(np.concatenate([np.diff(p.offsets) for p in parts])))
    if chunked.num_chunks == 0:  # no rows
        array = pa.nulls(0, type=chunked.type)
    else:  # concat_arrays: combine_chunks() would import pyarrow's compute functions
        array = chunked.chunk(0) if chunked.num_chunks == 1 else pa.concat_arrays(chunked.chunks)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return _arrow_column(array, pa, flat_lists)


def _arrow_column(array: Any, pa: Any, flat_lists: bool) -> Any:
    n = len(array)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        offsets = _list_offsets(array, pa)
        values = _plain(_list_items(array, pa), pa)
        if flat_lists and array.null_count == 0:
            return ListColumn(values, offsets)
        rows = np.empty(n, dtype=object)
        for i in range(n):
            rows[i] = values[offsets[i] : offsets[i + 1]]
        return rows
    if pa.types.is_null(array.type):
        return np.ma.masked_array(np.zeros(n), mask=np.ones(n, dtype=np.bool_))
    if array.null_count == 0:
        return _plain(array, pa)
    mask = _null_mask(array)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        values = _plain(array, pa)
        values[mask] = ""
    elif (numeric := _numeric_dtype(array.type, pa)) is not None:
        values = _buffer_values(array, numeric).copy()
        values[mask] = np.nan if numeric.kind == "f" else 0
    else:
        values = _plain(array.fill_null(0), pa)
    return np.ma.masked_array(values, mask=mask)


def _null_mask(array: Any) -> npt.NDArray[np.bool_]:
    """Which entries of an Arrow array are NULL, read from its validity bitmap (``is_null()``
    would import pyarrow's compute functions, and pandas with them: a fifth of a second)."""
    n = len(array)
    bitmap = array.buffers()[0]
    if bitmap is None:
        return np.zeros(n, dtype=np.bool_)
    valid = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return np.logical_not(valid[array.offset : array.offset + n].astype(np.bool_))


def _raw_list_offsets(array: Any, pa: Any) -> Any:
    """A non-empty list array's ``n + 1`` offsets into its child array, from its buffer."""
    width = np.int64 if pa.types.is_large_list(array.type) else np.int32
    return np.frombuffer(array.buffers()[1], dtype=width)[
        array.offset : array.offset + len(array) + 1
    ]


def _list_offsets(array: Any, pa: Any) -> npt.NDArray[np.int64]:
    """A list array's ``n + 1`` offsets, from 0, read from its buffer (see :func:`_plain`)."""
    if len(array) == 0:
        return np.zeros(1, dtype=np.int64)
    raw = _raw_list_offsets(array, pa)
    return np.asarray(raw - raw[0], dtype=np.int64)


def _list_items(array: Any, pa: Any) -> Any:
    """The items of a list array's rows, in order: the slice of its child array its offsets
    span (:func:`_list_offsets` index it). Not ``flatten()``, which imports pyarrow's compute
    functions, and pandas with them (a fifth of a second)."""
    if len(array) == 0:
        return array.values.slice(0, 0)
    raw = _raw_list_offsets(array, pa)
    return array.values.slice(int(raw[0]), int(raw[-1] - raw[0]))


def _plain(array: Any, pa: Any) -> Any:
    """An Arrow array as numpy, as ``to_numpy(zero_copy_only=False)`` gives it — but integers
    and floats without NULLs are read from their buffer in place and strings through Python
    lists: pyarrow's ``to_numpy`` imports pandas (a quarter of a second) when it is installed."""
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        array = array.cast(pa.string())
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return np.array(array.to_pylist(), dtype=object).reshape(len(array))
    dtype = _numeric_dtype(array.type, pa)
    if dtype is not None and array.null_count == 0:
        return _buffer_values(array, dtype)
    return array.to_numpy(zero_copy_only=False)


def _numeric_dtype(arrow_type: Any, pa: Any) -> np.dtype[Any] | None:
    """The numpy dtype of an Arrow integer or float (of 32 bits or more) type; None otherwise."""
    kind = "i" if pa.types.is_signed_integer(arrow_type) else ""
    kind = "u" if pa.types.is_unsigned_integer(arrow_type) else kind
    kind = "f" if pa.types.is_floating(arrow_type) and arrow_type.bit_width >= 32 else kind
    return np.dtype(f"{kind}{arrow_type.bit_width // 8}") if kind else None


def _buffer_values(array: Any, dtype: np.dtype[Any]) -> Any:
    """A numeric Arrow array's values read from its data buffer in place (whatever a NULL's
    slot holds)."""
    if len(array) == 0:
        return np.empty(0, dtype=dtype)
    buffer = np.frombuffer(array.buffers()[1], dtype=dtype)
    return buffer[array.offset : array.offset + len(array)]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


register_dialect(Dialect("duckdb", _duckdb_fetch))


# ---------------------------------------------------------------------------------------------
# Opening a store and running named queries
# ---------------------------------------------------------------------------------------------
def read_traces_from(sql: str, relation: str) -> str:
    """``sql`` reading ``relation`` (a subquery) wherever it reads ``FROM otel_traces``. The
    relation goes in on one line without its comments, so that it stays whole wherever it lands,
    in a comment too.

    >>> read_traces_from("SELECT 1 FROM otel_traces AS t", "SELECT 1 AS x -- one\\nFROM t")
    'SELECT 1 FROM (SELECT 1 AS x FROM t) AS t'
    """
    one_line = " ".join(_LINE_COMMENT.sub("", relation).split())
    return _FROM_TRACES.sub(lambda _: f"FROM ({one_line})", sql)


class QueryRunner:
    """Runs named queries of one dialect on one open connection.

    ``connection`` is the dialect's connection object (a ``duckdb.DuckDBPyConnection``);
    ``lock``, when given, is held around every query (a store shared with a writer thread).
    ``traces``, when given, is a subquery every query reads in place of the ``otel_traces``
    table (each ``FROM otel_traces`` of its SQL): how a store whose table has another schema of
    the same columns is presented as the one the SQL reads (the ClickHouse exporter's JSON
    schema, :mod:`otelbench.query.clickhouse`).
    """

    def __init__(
        self,
        connection: Any,
        dialect: str = "duckdb",
        *,
        source: str = "",
        lock: AbstractContextManager[Any] | None = None,
        traces: str | None = None,
    ) -> None:
        self.connection = connection
        self.dialect = get_dialect(dialect)
        self.source = source or f"<{dialect} connection>"
        self.traces = traces
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()

    @classmethod
    def for_store(cls, store: SpanStore) -> QueryRunner:
        """Queries on an open embedded :class:`~otelbench.store.SpanStore` (holding its lock)."""
        return cls(store.connection, "duckdb", source=str(store.path), lock=store.lock)

    @contextmanager
    def concurrent(self) -> Iterator[QueryRunner | None]:
        """A runner on a second connection to the same store, for a query in another thread
        while this one runs its own (closed on exit); None for a dialect with one connection
        (chdb's session, a ClickHouse server's client), whose queries then run one by one.

        DuckDB runs queries of two connections to one database at the same time, and releases
        the GIL while it does; its own connection needs no lock."""
        if self.dialect.name != "duckdb":
            yield None
            return
        with self._lock:
            cursor = self.connection.cursor()
        try:
            yield QueryRunner(cursor, "duckdb", source=self.source)
        finally:
            cursor.close()

    def run(self, query: str, /, *, sql_package: str = SQL_PACKAGE, **values: object) -> Columns:
        """Run the named query (``<sql_package>/sql/<dialect>/<query>.sql``) with ``values``
        bound; names come from :data:`NAME_PARAMETERS` and :data:`PATTERN_PARAMETERS`."""
        sql = self.dialect.sql(query, sql_package)
        if self.traces is not None:
            sql = read_traces_from(sql, self.traces)
        wanted = set(self.dialect.parameters.findall(_LINE_COMMENT.sub("", sql)))
        available = {**NAME_PARAMETERS, **PATTERN_PARAMETERS, **values}
        missing = wanted - available.keys()
        if missing:
            raise StoreError(f"query {query!r} needs parameters {sorted(missing)}")
        params = {k: available[k] for k in sorted(wanted)}
        with self._lock:
            return self.dialect.fetch(self.connection, sql, params, self.source)


StoreOpener = Callable[[str], AbstractContextManager[QueryRunner]]
"""Opens a store URL for queries (a context manager yielding a :class:`QueryRunner`)."""

_STORE_SCHEMES: dict[str, StoreOpener] = {}
_STORE_URL = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_SCHEME_MODULES: Final[Mapping[str, str]] = {
    "chdb": "otelbench.query.clickhouse",
    "clickhouse": "otelbench.query.clickhouse",
    "clickhouses": "otelbench.query.clickhouse",
}
"""Modules that register a scheme when imported (imported on first use of the scheme)."""


def is_store_url(store: str | os.PathLike[str]) -> bool:
    """True when ``store`` is a store URL (``scheme://...``) rather than a DuckDB file path."""
    return isinstance(store, str) and _STORE_URL.match(store) is not None


def register_store_scheme(scheme: str, opener: StoreOpener) -> None:
    """Make :func:`open_store` open ``scheme://...`` URLs with ``opener``."""
    _STORE_SCHEMES[scheme.lower()] = opener


@contextmanager
def open_store(path: str | os.PathLike[str]) -> Iterator[QueryRunner]:
    """Open a span store read-only for queries; closes it on exit.

    ``path`` is a DuckDB store file, or a URL of a registered scheme: ``chdb:///abs/dir``
    (embedded ClickHouse) or ``clickhouse://[user[:password]@]host[:port][/database]`` (a
    ClickHouse server; ``clickhouses://`` for TLS) — see :mod:`otelbench.store.clickhouse`.
    The one place the query layer opens a store. Raises
    :class:`~otelbench.errors.NotAnOtelbenchStore` for a store that is not an otelbench store,
    :class:`~otelbench.errors.StoreError` for a missing or locked one and
    :class:`~otelbench.errors.ConfigError` for a URL of an unknown scheme. A DuckDB file that a
    collector is writing is read from a snapshot the collector takes on request
    (:meth:`~otelbench.store.SpanStore.open`); that is logged, and the runner's ``source`` says so.

    >>> with open_store("otelbench.duckdb") as store:  # doctest: +SKIP
    ...     runs = list_runs(store)
    """
    url = _STORE_URL.match(path) if isinstance(path, str) else None
    if url is None:
        with SpanStore.open(path, read_only=True) as span_store:
            taken = span_store.snapshot_taken_unix_ns
            if taken is None:
                yield QueryRunner.for_store(span_store)
                return
            note = snapshot_note(taken)
            _log.info("span store %s is being written: %s", path, note)
            con, lock = span_store.connection, span_store.lock
            yield QueryRunner(con, "duckdb", source=f"{path} ({note})", lock=lock)
        return
    scheme = url.group(1).lower()
    if scheme not in _STORE_SCHEMES and scheme in _SCHEME_MODULES:
        import_module(_SCHEME_MODULES[scheme])
    opener = _STORE_SCHEMES.get(scheme)
    if opener is None:
        known = ", ".join(f"{s}://" for s in sorted({*_STORE_SCHEMES, *_SCHEME_MODULES}))
        raise ConfigError(f"unknown store URL scheme {scheme}:// in {path!r}; known: {known}")
    with opener(str(path)) as runner:
        yield runner


# ---------------------------------------------------------------------------------------------
# Column conversion (NULL → NaN / None), once, at the boundary
# ---------------------------------------------------------------------------------------------
def _f64(column: Any) -> npt.NDArray[np.float64]:
    return np.ma.filled(np.ma.asarray(column).astype(np.float64), np.nan)


def _i64(column: Any, name: str) -> npt.NDArray[np.int64]:
    if np.ma.is_masked(column):
        raise StoreError(f"column {name} has NULLs")
    return np.asarray(column, dtype=np.int64)


def _str(column: Any) -> tuple[str | None, ...]:
    mask = np.ma.getmaskarray(column)
    return tuple(None if m else str(v) for v, m in zip(np.ma.getdata(column), mask, strict=True))


def _str_required(column: Any, name: str) -> tuple[str, ...]:
    if np.ma.is_masked(column):
        raise StoreError(f"column {name} has NULLs")
    return tuple(str(v) for v in np.asarray(column))


def _str_lists(column: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(column, ListColumn):
        items = [str(x) for x in column.values.tolist()]
        bounds = column.offsets.tolist()
        return tuple(tuple(items[a:b]) for a, b in pairwise(bounds))
    return tuple(tuple(str(x) for x in row) for row in np.asarray(column))


def _rejections(column: Any) -> dict[str, int]:
    """A ``rejected_attributes`` column (per row, the names of its unparsable attributes) →
    attribute name → count, sorted by name."""
    if isinstance(column, ListColumn):
        counts = Counter(str(name) for name in column.values.tolist())
    else:
        counts = Counter(str(name) for row in np.asarray(column) for name in row)
    return dict(sorted(counts.items()))


def _flatten_lists(column: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A list column (object array of int arrays, or :class:`ListColumn`) → (concatenation,
    per-row lengths)."""
    if isinstance(column, ListColumn):
        return np.asarray(column.values, dtype=np.int64), np.diff(column.offsets)
    lists = list(np.asarray(column))
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    flat = np.concatenate(lists).astype(np.int64) if lists else np.empty(0, dtype=np.int64)
    return flat, lengths


def _chunk_tokens(column: Any, n_offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """A ``chunk_tokens`` column → one token count per chunk offset. A row's list is either as
    long as its chunk offsets or empty, which means one token per chunk (``client_requests``
    leaves those ones out: at millions of chunks they cost more to build, sort and convert than
    to fill in here)."""
    counts, n_counts = _flatten_lists(column)
    tokens = np.ones(int(n_offsets.sum()), dtype=np.int64)
    if counts.size:
        given = n_counts > 0
        if not np.array_equal(n_counts[given], n_offsets[given]):
            raise StoreError("client_requests returned chunk token counts unlike its chunk offsets")
        tokens[np.repeat(given, n_offsets)] = counts
    return tokens


# ---------------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------------
def list_runs(store: QueryRunner) -> list[RunInfo]:
    """Every run in the store (one per ``otelbench.run`` span; the shards of a run sent from
    several hosts joined into one, :mod:`otelbench.query.shards`), oldest first."""
    cols = store.run("runs")
    runs: list[RunInfo] = []
    shards: dict[str, list[RunInfo]] = {}
    ids = _str_required(cols["run_id"], "run_id")
    manifests = _str(cols["manifest"])
    starts = _i64(cols["span_start_unix_ns"], "span_start_unix_ns")
    durations = _i64(cols["span_duration_ns"], "span_duration_ns")
    for run_id, text, start, duration in zip(ids, manifests, starts, durations, strict=True):
        try:
            checked = run_manifest(text)
        except ValueError as err:
            raise StoreError(f"run {run_id}: {err}") from err
        run = RunInfo(run_id, checked, int(start), int(duration))
        if is_sharded(checked):
            if run_id not in shards:
                runs.append(run)  # its place among the runs: its first shard's
            shards.setdefault(run_id, []).append(run)
        else:
            runs.append(run)
    return [_joined(run, shards[run.run_id]) if run.run_id in shards else run for run in runs]


def _joined(first: RunInfo, shards: list[RunInfo]) -> RunInfo:
    """One run from its shards' run spans: the joined manifest, the span from the first start
    to the last end."""
    start = min(s.span_start_unix_ns for s in shards)
    end = max(s.span_start_unix_ns + s.span_duration_ns for s in shards)
    manifest = join_shards([s.manifest for s in shards])
    return RunInfo(first.run_id, manifest, start, end - start)


def extract_run(store: QueryRunner, run_id: str | None = None) -> RunInfo:
    """The run called ``run_id``, or the latest run (by run span start) when None."""
    runs = list_runs(store)
    if not runs:
        raise StoreError(f"{store.source} holds no otelbench run (no {semconv.SPAN_RUN} span)")
    if run_id is None:
        return runs[-1]
    matches = [r for r in runs if r.run_id == run_id]
    if not matches:
        known = ", ".join(r.run_id for r in runs)
        raise ConfigError(f"no run {run_id!r} in {store.source}; runs: {known}")
    return matches[-1]


def extract_client_requests(store: QueryRunner, run_id: str) -> ClientRequests:
    """The client spans of run ``run_id`` with their chunk arrays, in submit order."""
    cols = store.run("client_requests", run_id=run_id)
    span_ids = _str_required(cols["span_id"], "span_id")
    offsets, n_offsets = _flatten_lists(cols["chunk_offsets_us"])
    tokens = _chunk_tokens(cols["chunk_tokens"], n_offsets)
    return ClientRequests(
        trace_id=_str_required(cols["trace_id"], "trace_id"),
        span_id=span_ids,
        submit_unix_ns=_i64(cols["submit_unix_ns"], "submit_unix_ns"),
        duration_ns=_i64(cols["duration_ns"], "duration_ns"),
        ok=np.asarray(cols["ok"], dtype=np.bool_),
        error_type=_str(cols["error_type"]),
        request_index=_f64(cols["request_index"]),
        request_class=_str(cols["request_class"]),
        think_phase=_str(cols["think_phase"]),
        output_phase_chunk=_f64(cols["output_phase_chunk"]),
        schedule_lag_us=_f64(cols["schedule_lag_us"]),
        prompt_tokens_sent=_f64(cols["prompt_tokens_sent"]),
        max_tokens=_f64(cols["max_tokens"]),
        ttft_us=_f64(cols["ttft_us"]),
        first_event_offset_us=_f64(cols["first_event_offset_us"]),
        end_offset_us=_f64(cols["end_offset_us"]),
        input_tokens=_f64(cols["input_tokens"]),
        output_tokens=_f64(cols["output_tokens"]),
        finish_reasons=_str_lists(cols["finish_reasons"]),
        chunk_token_source=_str(cols["chunk_token_source"]),
        chunk_bounds=_bounds(n_offsets),
        chunk_offset_us=offsets,
        chunk_tokens=tokens,
        rejected_attributes=_rejections(cols["rejected_attributes"]),
    )


def _bounds(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    bounds = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return bounds


def server_requests_from_columns(
    cols: Columns, client_index: npt.NDArray[np.int64]
) -> ServerRequests:
    """Server-span records from a query's columns (the columns of run_server_requests);
    ``client_index`` joins each span to its client request (-1: none)."""
    n = len(cols["span_id"])
    absent_f64 = np.full(n, np.nan)
    no_lists = ListColumn(np.empty(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64))
    offsets, n_offsets = _flatten_lists(cols.get("token_offsets_us", no_lists))
    stalls, n_stalls = _flatten_lists(cols.get("stall_us", no_lists))
    preempted_at = (
        _flatten_lists(cols["preemption_offset_us"]) if "preemption_offset_us" in cols else None
    )
    names = (
        _str_required(cols["span_name"], "span_name")
        if "span_name" in cols
        else (semconv.SPAN_VLLM_REQUEST,) * n
    )
    return ServerRequests(
        trace_id=_str_required(cols["trace_id"], "trace_id"),
        span_id=_str_required(cols["span_id"], "span_id"),
        parent_span_id=_str_required(cols["parent_span_id"], "parent_span_id"),
        client_index=client_index,
        start_unix_ns=_i64(cols["start_unix_ns"], "start_unix_ns"),
        duration_ns=_i64(cols["duration_ns"], "duration_ns"),
        request_id=_str(cols["request_id"]),
        ttft_s=_f64(cols["ttft_s"]),
        e2e_s=_f64(cols["e2e_s"]),
        queue_s=_f64(cols["queue_s"]),
        prefill_s=_f64(cols["prefill_s"]),
        decode_s=_f64(cols["decode_s"]),
        inference_s=_f64(cols["inference_s"]),
        prompt_tokens=_f64(cols["prompt_tokens"]),
        completion_tokens=_f64(cols["completion_tokens"]),
        span_name=names,
        finish_reason=_str(cols["finish_reason"]) if "finish_reason" in cols else (None,) * n,
        cache_read_tokens=_f64(cols.get("cache_read_tokens", absent_f64)),
        preemptions=_f64(cols.get("preemptions", absent_f64)),
        preemption_events=_f64(cols.get("preemption_events", absent_f64)),
        kv_tokens_discarded=_f64(cols.get("kv_tokens_discarded", absent_f64)),
        output_phase_token=_f64(cols.get("output_phase_token", absent_f64)),
        token_bounds=_bounds(n_offsets),
        token_offset_us=offsets,
        stall_bounds=_bounds(n_stalls),
        stall_us=stalls,
        rejected_attributes=_rejections(cols["rejected_attributes"]),
        preemption_bounds=None if preempted_at is None else _bounds(preempted_at[1]),
        preemption_offset_us=None if preempted_at is None else preempted_at[0],
        end_reason=_str(cols["end_reason"]) if "end_reason" in cols else None,
        end_phase=_str(cols["end_phase"]) if "end_phase" in cols else None,
        prompt_tokens_computed=_f64(cols.get("prompt_tokens_computed", absent_f64)),
        output_tokens_generated=_f64(cols.get("output_tokens_generated", absent_f64)),
    )


def extract_run_server_requests(
    store: QueryRunner, run_id: str, client: ClientRequests
) -> ServerRequests:
    """The server spans that are children of ``client`` (run ``run_id``'s client spans): per
    client span, the engine hooks' span when there is one, else vLLM's ``llm_request`` span."""
    return _run_server_requests(store.run("run_server_requests", run_id=run_id), client)


def _positions(client: ClientRequests) -> dict[tuple[str, str], int]:
    """Each client span's index by its (TraceId, SpanId)."""
    return {key: i for i, key in enumerate(zip(client.trace_id, client.span_id, strict=True))}


def _run_server_requests(cols: Columns, client: ClientRequests) -> ServerRequests:
    """``run_server_requests``' columns as records, each joined to its client span."""
    position = _positions(client)
    parents = zip(
        _str_required(cols["trace_id"], "trace_id"),
        _str_required(cols["parent_span_id"], "parent_span_id"),
        strict=True,
    )
    index = np.fromiter((position.get(p, -1) for p in parents), dtype=np.int64)
    return server_requests_from_columns(cols, index)


def extract_guardrail_spans(
    store: QueryRunner, run_id: str, client: ClientRequests
) -> GuardrailSpans:
    """The guardrail filter spans in the traces of run ``run_id``'s measured client spans."""
    return _guardrail_spans(store.run("run_guardrail_spans", run_id=run_id), client)


def _guardrail_spans(cols: Columns, client: ClientRequests) -> GuardrailSpans:
    """``run_guardrail_spans``' columns as records, each joined to its client span."""
    trace_ids = _str_required(cols["trace_id"], "trace_id")
    position = _positions(client) if trace_ids else {}  # most runs have no guardrail spans
    owners = zip(trace_ids, _str_required(cols["client_span_id"], "client_span_id"), strict=True)
    busy, n_busy = _flatten_lists(cols["chunk_busy_us"])
    added, n_added = _flatten_lists(cols["output_added_us"])
    return GuardrailSpans(
        trace_id=trace_ids,
        span_id=_str_required(cols["span_id"], "span_id"),
        client_index=np.fromiter((position.get(o, -1) for o in owners), dtype=np.int64),
        start_unix_ns=_i64(cols["start_unix_ns"], "start_unix_ns"),
        duration_ns=_i64(cols["duration_ns"], "duration_ns"),
        filter_name=_str(cols["filter_name"]),
        filter_type=_str(cols["filter_type"]),
        stage=_str(cols["stage"]),
        decision=_str(cols["decision"]),
        rule=_str(cols["rule"]),
        error=_str(cols["error"]),
        invocations=_f64(cols["invocations"]),
        busy_us=_f64(cols["busy_us"]),
        resource_input_filters=_str(cols["resource_input_filters"]),
        resource_output_filters=_str(cols["resource_output_filters"]),
        resource_config_sha256=_str(cols["resource_config_sha256"]),
        resource_block_response=_str(cols["resource_block_response"]),
        service_name=_str(cols["service_name"]),
        chunk_bounds=_bounds(n_busy),
        chunk_busy_us=busy,
        added_bounds=_bounds(n_added),
        output_added_us=added,
        rejected_attributes=_rejections(cols["rejected_attributes"]),
    )


def extract_run_data(store: QueryRunner, run_id: str | None = None) -> RunData:
    """The run (``run_id``, or the latest), its client requests, their server children and the
    guardrail filter spans in their traces. On DuckDB the server and guardrail spans are queried
    on a second connection while the client spans are (:meth:`QueryRunner.concurrent`)."""
    run = extract_run(store, run_id)
    with store.concurrent() as other:
        if other is None:
            client = extract_client_requests(store, run.run_id)
            server = extract_run_server_requests(store, run.run_id, client)
            guardrails = extract_guardrail_spans(store, run.run_id, client)
        else:  # the server's queries beside the client's: each leaves a core idle part of the time
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="otelbench-query") as pool:
                server_columns = pool.submit(other.run, "run_server_requests", run_id=run.run_id)
                guardrail_columns = pool.submit(other.run, "run_guardrail_spans", run_id=run.run_id)
                client = extract_client_requests(store, run.run_id)
                server = _run_server_requests(server_columns.result(), client)
                guardrails = _guardrail_spans(guardrail_columns.result(), client)
    sources = extract_server_sources(store, run.run_id)
    return RunData(
        run=run,
        client=client,
        server=server,
        guardrails=guardrails,
        server_sources=sources,
        phases=extract_phases(store, run.run_id),
    )


def extract_phases(store: QueryRunner, run_id: str) -> tuple[PhaseRequests, ...]:
    """Run ``run_id``'s client spans by request phase (query ``run_phases``)."""
    cols = store.run("run_phases", run_id=run_id)
    return tuple(
        PhaseRequests(str(phase), *(int(v or 0) for v in values))
        for phase, *values in zip(
            _str_required(cols["phase"], "phase"),
            cols["requests"],
            cols["succeeded"],
            cols["output_tokens"],
            cols["cached_tokens"],
            cols["first_submit_ns"],
            cols["last_end_ns"],
            cols["ended_after_start"],
            strict=True,
        )
    )


def extract_server_sources(store: QueryRunner, run_id: str) -> tuple[ServerSource, ...]:
    """What produced run ``run_id``'s server spans: span name, vLLM and hooks versions, support
    level, and how many spans each (query ``run_server_sources``)."""
    cols = store.run("run_server_sources", run_id=run_id)
    return tuple(
        ServerSource(str(name), str(vllm or ""), str(hooks or ""), str(support or ""), int(n))
        for name, vllm, hooks, support, n in zip(
            _str_required(cols["span_name"], "span_name"),
            cols["vllm_version"],
            cols["hooks_version"],
            cols["support"],
            cols["spans"],
            strict=True,
        )
    )
