"""Query layer: named SQL per dialect over the ``otel_traces`` store → typed, columnar records.

Usage::

    from otelbench.query import extract_run_data, open_store

    with open_store("otelbench.duckdb") as store:
        data = extract_run_data(store, run_id=None)   # None: the latest run
        offsets_us, tokens = data.client.chunks(0)
"""

from __future__ import annotations

from otelbench.query.extract import (
    Dialect,
    QueryRunner,
    extract_client_requests,
    extract_guardrail_spans,
    extract_phases,
    extract_run,
    extract_run_data,
    extract_run_server_requests,
    extract_server_sources,
    get_dialect,
    list_runs,
    open_store,
    register_dialect,
)
from otelbench.query.records import (
    ClientRequests,
    GuardrailSpans,
    PhaseRequests,
    RunData,
    RunInfo,
    ServerRequests,
    ServerSource,
)

__all__ = [
    "ClientRequests",
    "Dialect",
    "GuardrailSpans",
    "PhaseRequests",
    "QueryRunner",
    "RunData",
    "RunInfo",
    "ServerRequests",
    "ServerSource",
    "extract_client_requests",
    "extract_guardrail_spans",
    "extract_phases",
    "extract_run",
    "extract_run_data",
    "extract_run_server_requests",
    "extract_server_sources",
    "get_dialect",
    "list_runs",
    "open_store",
    "register_dialect",
]
