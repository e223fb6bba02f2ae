"""Extraction from DuckDB and from chdb (ClickHouse in-process) side by side, on 1M+ token offsets.

One run builds one span store and measures both dialects on it, alternating:

- **Store**: ``--requests`` measured client spans of one run, each with ``--tokens`` content
  chunks of one token (``otelbench.client.chunk_offsets_us`` / ``chunk_tokens``, JSON text as the
  exporter writes arrays), and a child engine-hook span per request with ``--tokens`` per-token
  offsets (``otelbench.server.token_offsets_us``) and one preemption + resumption event pair: by
  default 10,000 × 100 = 1,000,000 client chunk offsets and 1,000,000 server token offsets. The
  offsets are seeded random (ITL 5–25 ms). It is written into a DuckDB store
  (``otelbench/store/sql/duckdb/schema.sql``) with one INSERT … SELECT, then copied into chdb in
  the exporter's ``otel_traces`` schema (``copy_duckdb_to_chdb``; the copy is timed too).
- **extract_run_data**: open the store, run the four named queries of a run (runs,
  client_requests, run_server_requests, run_guardrail_spans) and build the typed records, through
  ``open_store(path)`` (DuckDB) and ``open_store("chdb://…")`` (the ClickHouse SQL); the two
  record sets are checked equal.
- **ClickHouse writer**: the run's spans (``SpanRow``s read back from DuckDB, not timed) inserted
  through :class:`~otelbench.store.clickhouse.ClickHouseSpanWriter` into a new chdb
  database in batches of 512 (the OTLP exporters' default batch), against
  ``SpanStore.insert_spans`` into a new DuckDB file with the same batches.

The ClickHouse dialect once also aggregated the ITL figures in the database (used by no report),
and this benchmark timed them: ``bench/results/query_dialects.json`` holds that run (server ITL
summary 1.20 s extract + numpy against 0.94 s in chdb; client and per-request ITL 1.29 s against
1.64 s). They were removed: not faster where it counts, and the report extracts every record for
its other sections anyway.

Every timing is the median of ``--repeats`` alternating runs, in one process (chdb serves one data
directory per process). Usage: ``.venv/bin/python bench/query_dialects.py [--requests 10000]
[--tokens 100] [--repeats 5] [--out bench/results/query_dialects.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import chdb
import duckdb
import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import machine, write_result  # noqa: E402
from otelbench import semconv  # noqa: E402
from otelbench.query import RunData, extract_run_data, open_store  # noqa: E402
from otelbench.store import (  # noqa: E402
    ClickHouseSpanWriter,
    SpanRow,
    SpanStore,
)
from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb  # noqa: E402

RUN_ID = "bench"
T0_NS = 1_700_000_000_000_000_000

_INSERT = """
INSERT INTO otel_traces
SELECT
    make_timestamp_ns(g.start_ns), g.trace_id, g.span_id, g.parent_span_id, '', g.name, g.kind,
    g.service, MAP(['service.name'], [g.service]), $scope, '',
    MAP(g.keys, g.vals), g.duration_ns, $status_unset, '',
    list_transform(g.ev_ts, lambda t: make_timestamp_ns(t)), g.ev_names,
    list_transform(list_zip(g.ev_keys, g.ev_vals), lambda kv: MAP(kv[1], kv[2])),
    [], [], [], []
FROM gen AS g
"""


def _json(values: np.ndarray) -> str:
    return "[" + ",".join(map(str, values.tolist())) + "]"


def build_store(path: Path, requests: int, tokens: int, seed: int = 7) -> int:
    """Write the run into a new DuckDB store; returns the number of spans."""
    rng = np.random.default_rng(seed)
    itl = rng.integers(5_000, 25_000, size=(requests, tokens))
    ttft = rng.integers(50_000, 250_000, size=requests)
    server_offsets = np.cumsum(itl, axis=1) - itl[:, :1] + ttft[:, None] - 2_000
    client_offsets = server_offsets + 2_000
    rows: dict[str, list[Any]] = {
        k: []
        for k in (
            "start_ns", "trace_id", "span_id", "parent_span_id", "name", "kind", "service",
            "keys", "vals", "duration_ns", "ev_ts", "ev_names", "ev_keys", "ev_vals",
        )
    }  # fmt: skip

    def add(**row: Any) -> None:
        for k, v in row.items():
            rows[k].append(v)

    load = {"mode": "uniform", "requests": requests, "rate": 100.0, "concurrency": None}
    manifest = json.dumps({"id": RUN_ID, "model": "bench", "load": load})
    add(start_ns=T0_NS, trace_id="f" * 32, span_id="f" * 16, parent_span_id="",
        name=semconv.SPAN_RUN, kind=semconv.SPAN_KIND_INTERNAL, service=semconv.SERVICE_CLIENT,
        keys=[semconv.RUN_ID, semconv.RUN_MANIFEST], vals=[RUN_ID, manifest],
        duration_ns=requests * 10_000_000, ev_ts=[], ev_names=[], ev_keys=[],
        ev_vals=[])  # fmt: skip
    for i in range(requests):
        submit = T0_NS + i * 10_000_000
        end_us = int(client_offsets[i, -1]) + 1_000
        first_chunk = int(client_offsets[i, 0])
        client_keys = [
            semconv.RUN_ID, semconv.REQUEST_INDEX, semconv.REQUEST_CLASS,
            semconv.CLIENT_END_OFFSET_US, semconv.CLIENT_CHUNK_OFFSETS_US,
            semconv.CLIENT_CHUNK_TOKENS, semconv.CLIENT_CHUNK_TOKEN_SOURCE, semconv.CLIENT_TTFT_US,
            semconv.CLIENT_FIRST_EVENT_OFFSET_US, semconv.GEN_AI_USAGE_INPUT_TOKENS,
            semconv.GEN_AI_USAGE_OUTPUT_TOKENS, semconv.GEN_AI_RESPONSE_FINISH_REASONS,
        ]  # fmt: skip
        client_vals = [
            RUN_ID, str(i), "default", str(end_us), _json(client_offsets[i]),
            _json(np.ones(tokens, dtype=np.int64)), semconv.CHUNK_TOKENS_FROM_USAGE,
            str(first_chunk), str(first_chunk), "256", str(tokens), '["length"]',
        ]  # fmt: skip
        add(start_ns=submit, trace_id=f"{i:032x}", span_id=f"{i:016x}", parent_span_id="",
            name="text_completion bench", kind=semconv.SPAN_KIND_CLIENT,
            service=semconv.SERVICE_CLIENT, keys=client_keys, vals=client_vals,
            duration_ns=end_us * 1000, ev_ts=[], ev_names=[], ev_keys=[], ev_vals=[])  # fmt: skip
        server_keys = [
            semconv.VLLM_REQUEST_ID, semconv.VLLM_USAGE_PROMPT_TOKENS,
            semconv.VLLM_USAGE_COMPLETION_TOKENS, semconv.VLLM_LATENCY_TTFT,
            semconv.VLLM_LATENCY_E2E, semconv.VLLM_LATENCY_QUEUE, semconv.VLLM_LATENCY_PREFILL,
            semconv.VLLM_LATENCY_DECODE, semconv.SERVER_TOKEN_OFFSETS_US,
            semconv.SERVER_PREEMPTIONS,
        ]  # fmt: skip
        e2e = float(server_offsets[i, -1] + 500) / 1e6
        first = float(server_offsets[i, 0]) / 1e6
        server_vals = [
            f"cmpl-{i}", "256", str(tokens), repr(first), repr(e2e), "0.001", repr(first - 0.001),
            repr(e2e - first), _json(server_offsets[i]), "1",
        ]  # fmt: skip
        add(start_ns=submit + 1_000_000, trace_id=f"{i:032x}", span_id=f"{i + 10**9:016x}",
            parent_span_id=f"{i:016x}", name=semconv.SPAN_HOOK_REQUEST,
            kind=semconv.SPAN_KIND_SERVER, service=semconv.SERVICE_VLLM, keys=server_keys,
            vals=server_vals, duration_ns=int(e2e * 1e9),
            ev_ts=[submit + 100_000_000, submit + 120_000_000],
            ev_names=[semconv.EVENT_PREEMPTION, semconv.EVENT_RESUMPTION],
            ev_keys=[[semconv.PREEMPTION_KV_TOKENS_DISCARDED], [semconv.PREEMPTION_STALL_US]],
            ev_vals=[["64"], ["20000"]])  # fmt: skip
    gen = pa.table(rows)  # noqa: F841  (read by DuckDB's replacement scan below)
    with SpanStore.open(path) as store:
        store.connection.execute(
            _INSERT, {"scope": semconv.INSTRUMENTATION_SCOPE, "status_unset": semconv.STATUS_UNSET}
        )
        store.connection.execute("CHECKPOINT")
    return len(rows["span_id"])


def assert_same(a: RunData, b: RunData) -> None:
    assert a.run == b.run
    for x, y in ((a.client, b.client), (a.server, b.server), (a.guardrails, b.guardrails)):
        for f in fields(x):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if isinstance(u, np.ndarray):
                np.testing.assert_array_equal(u, v, err_msg=f.name)
            else:
                assert u == v, f.name


def span_rows(path: Path) -> list[SpanRow]:
    """Every span of the DuckDB store as SpanRow values (what the collector hands a store)."""
    sql = """SELECT epoch_ns("Timestamp"), "TraceId", "SpanId", "ParentSpanId", "TraceState",
        "SpanName", "SpanKind", "ServiceName", "ResourceAttributes", "ScopeName",
        "ScopeVersion", "SpanAttributes", "Duration", "StatusCode", "StatusMessage",
        list_transform("Events.Timestamp", lambda t: epoch_ns(t)), "Events.Name",
        "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState",
        "Links.Attributes" FROM otel_traces"""
    with SpanStore.open(path, read_only=True) as store:
        return [SpanRow(*row) for row in store.execute(sql)]


def insert_in_batches(insert: Callable[[list[SpanRow]], int], rows: list[SpanRow]) -> int:
    return sum(insert(rows[i : i + 512]) for i in range(0, len(rows), 512))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "query_dialects.json"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="otelbench-bench-") as tmp:
        duck = Path(tmp) / "spans.duckdb"
        build_s, spans = timed(lambda: build_store(duck, args.requests, args.tokens))
        session = chdb.session.Session(str(Path(tmp) / "ch"))
        copy_s, copied = timed(
            lambda: copy_duckdb_to_chdb(duck, ChdbConnection(session, "otel"), database="otel")
        )
        assert copied == spans
        session.close()
        url = f"chdb://{Path(tmp) / 'ch'}?database=otel"

        def duck_extract() -> RunData:
            with open_store(duck) as store:
                return extract_run_data(store, RUN_ID)

        def chdb_extract() -> RunData:
            with open_store(url) as store:
                return extract_run_data(store, RUN_ID)

        timings: dict[str, list[float]] = {k: [] for k in ("dd", "cd")}
        outputs: dict[str, Any] = {}
        for _ in range(args.repeats):
            for key, fn in (("dd", duck_extract), ("cd", chdb_extract)):
                seconds, outputs[key] = timed(fn)
                timings[key].append(seconds)
        assert_same(outputs["dd"], outputs["cd"])
        rows_in = span_rows(duck)
        with SpanStore.open(Path(tmp) / "written.duckdb") as written:
            duck_write_s, _ = timed(lambda: insert_in_batches(written.insert_spans, rows_in))
        with ClickHouseSpanWriter.open(f"chdb://{Path(tmp) / 'ch'}?database=written") as writer:
            chdb_write_s, _ = timed(lambda: insert_in_batches(writer.insert_spans, rows_in))
            assert writer.span_count() == spans
        sizes = {
            "duckdb_file_mib": round(duck.stat().st_size / 2**20, 1),
            "chdb_dir_mib": round(
                sum(p.stat().st_size for p in (Path(tmp) / "ch").rglob("*") if p.is_file()) / 2**20,
                1,
            ),
        }
    data = outputs["dd"]
    median = {k: statistics.median(v) for k, v in timings.items()}
    results = {
        "spans": spans,
        "client_chunk_offsets": int(data.client.chunk_offset_us.size),
        "server_token_offsets": int(data.server.token_offset_us.size),
        "build_duckdb_store_s": round(build_s, 3),
        "copy_to_chdb_s": round(copy_s, 3),
        "extract_run_data_s": {
            "duckdb": round(median["dd"], 3),
            "chdb": round(median["cd"], 3),
        },
        "records_equal": True,
        "insert_spans_batches_of_512_s": {
            "duckdb_span_store": round(duck_write_s, 3),
            "chdb_writer": round(chdb_write_s, 3),
        },
        **sizes,
    }
    rows = [
        ("extract_run_data (4 queries → records)", median["dd"], median["cd"]),
        ("insert every span, batches of 512", duck_write_s, chdb_write_s),
    ]
    print(
        f"{spans} spans, {results['client_chunk_offsets']} client chunk offsets, "
        f"{results['server_token_offsets']} server token offsets; median of {args.repeats}"
    )
    header = ("", "DuckDB s", "chdb s", "chdb/DuckDB")
    cells = [header] + [(n, f"{d:.3f}", f"{c:.3f}", f"{c / d:.2f}") for n, d, c in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]
    for k, row in enumerate(cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))  # fmt: skip
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print(
        f"build DuckDB store {build_s:.2f} s; copy into chdb {copy_s:.2f} s; "
        f"DuckDB {sizes['duckdb_file_mib']} MiB, chdb {sizes['chdb_dir_mib']} MiB; "
        "records equal"
    )
    report = {
        "benchmark": "query_dialects",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(duckdb=duckdb.__version__, chdb=chdb.__version__),
        "workload": {
            "requests": args.requests,
            "tokens_per_request": args.tokens,
            "repeats": args.repeats,
        },
        "results": results,
    }
    write_result(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
