"""``otelbench watch`` on a ClickHouse store: the same windows, metrics and ``/metrics`` text as
on the DuckDB store holding the same spans, and how a chdb data directory is shared.

The spans are live traffic as the engine hooks export it (hook server spans with per-token
offsets and their queue/prefill/decode phase spans, vLLM's own ``llm_request`` spans beside some
of them, preemption and resumption events, failed requests, tenants on the span, its resource or
an application's parent span), probe requests (directly and behind otelbench's gateway span) and
another otelbench run's requests, written to a DuckDB store and copied into chdb in the exporter's
exact ``otel_traces`` schema (``tests/unit/query/clickhouse_store.py``) — also inserted as the
exporter inserts them, and as an old store spells kinds and statuses
(``tests/fixtures/exporter_rows.py``).
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from otelbench import semconv
from otelbench.errors import NotAnOtelbenchStore
from otelbench.live.query import LiveWindow, extract_window, store_bytes
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.live.window import WindowConfig
from otelbench.query import open_store
from otelbench.store import SpanStore
from otelbench.store.rows import SpanRow
from tests.fixtures.exporter_rows import with_legacy_spellings
from tests.unit.query.clickhouse_store import chdb_dir, load_chdb, load_chdb_as_exporter
from tests.unit.query.spanstore import MS, Event, attr_text, preemption, resumption

pytestmark = pytest.mark.integration

S = 1000 * MS
TENANTS = ("gold", "silver", "bronze")
STALL_US = (0, 0, 0, 0, 450_000)
"""Token gaps: mostly engine steps, sometimes a stall (so fluidity varies across requests)."""
ORIGINS = ("live", "live", "live", "app", "probe", "gateway", "benchmark")
"""Request i's origin is ORIGINS[i % 7]; request i fails when i % 13 == 5."""
STORED_TWICE = (11, 18)
"""Requests whose spans are all stored twice, as an exporter's retry after a lost response does
(11: live, 18: a probe's client span too); each is still one request."""
FAR_PARENT = 4
"""This probe request's client span started 3 h before it: beyond the bound within which the
window query looks for parents (2 lookbacks of 1 h), so its server span counts as live."""
CUT_PHASES = (
    semconv.END_PHASE_QUEUE,
    semconv.END_PHASE_PREFILL,
    semconv.END_PHASE_DECODE,
    semconv.END_PHASE_PREEMPTED,
)


def cut_end(i: int) -> tuple[str, str] | None:
    """(end reason, end phase) of request ``i`` when the engine did not finish it: cancelled
    when ``i % 11 == 2`` (phase ``CUT_PHASES[i % 4]``), an engine error in decode when
    ``i % 29 == 8``; only hook spans (``i % 19 != 3``) of requests that did not fail otherwise
    (``i % 13 != 5``)."""
    if i % 19 == 3 or i % 13 == 5:
        return None
    if i % 11 == 2:
        return semconv.END_REASON_CANCELLED, CUT_PHASES[i % 4]
    if i % 29 == 8:
        return semconv.END_REASON_ERROR, semconv.END_PHASE_DECODE
    return None


def origins(requests: int) -> dict[int, str]:
    return {i: "app" if i == FAR_PARENT else ORIGINS[i % 7] for i in range(requests)}


def expected_requests(requests: int, sources: tuple[str, ...]) -> tuple[float, float]:
    """(requests, failed requests: status Error) of ``write_traffic`` with an origin in
    ``sources``."""
    origin = origins(requests)
    chosen = [i for i in range(requests) if origin[i] in sources]
    failed = [i for i in chosen if i % 13 == 5 or (cut_end(i) or ("",))[0] == "error"]
    return float(len(chosen)), float(len(failed))


def expected_cut(requests: int, sources: tuple[str, ...]) -> dict[tuple[str, str], int]:
    """(end reason, end phase) → requests of ``write_traffic`` with an origin in ``sources``."""
    origin = origins(requests)
    ends = [cut_end(i) for i in range(requests) if origin[i] in sources]
    return {end: ends.count(end) for end in set(ends) if end is not None}


def _cut(attrs: dict[str, Any], end: tuple[str, str], offsets: list[int]) -> None:
    """Make ``attrs`` a span of a request the engine did not finish, as the hooks write it: no
    decode time, inference up to the cut, the engine core's account; a request cut in the queue
    or in prefill has no token and no TTFT."""
    reason, phase = end
    del attrs[semconv.VLLM_LATENCY_DECODE]
    attrs[semconv.SERVER_END_REASON] = reason
    attrs[semconv.SERVER_END_PHASE] = phase
    attrs[semconv.VLLM_RESPONSE_FINISH_REASON] = "abort" if reason == "cancelled" else "error"
    prompt = int(attrs[semconv.VLLM_USAGE_PROMPT_TOKENS])
    if phase in (semconv.END_PHASE_QUEUE, semconv.END_PHASE_PREFILL):
        for key in (semconv.VLLM_LATENCY_TTFT, semconv.VLLM_LATENCY_PREFILL):
            del attrs[key]
        attrs[semconv.SERVER_TOKEN_OFFSETS_US] = []
        attrs[semconv.VLLM_USAGE_COMPLETION_TOKENS] = 0
        generated, computed = 0, (0 if phase == semconv.END_PHASE_QUEUE else prompt // 2)
    else:
        generated, computed = len(offsets) + 1, prompt
    if phase == semconv.END_PHASE_QUEUE:
        del attrs[semconv.VLLM_LATENCY_INFERENCE]
    attrs[semconv.SERVER_PROMPT_TOKENS_COMPUTED] = computed
    attrs[semconv.SERVER_OUTPUT_TOKENS_GENERATED] = generated


def _ids(rng: random.Random) -> tuple[str, str]:
    return f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(64):016x}"


def _server_attrs(rng: random.Random, offsets: list[int], hook: bool) -> dict[str, Any]:
    e2e = offsets[-1] / 1e6 + rng.randint(1, 5) / 1000
    attrs: dict[str, Any] = {
        semconv.VLLM_REQUEST_ID: f"cmpl-{rng.getrandbits(48):012x}",
        semconv.VLLM_RESPONSE_FINISH_REASON: "length",
        semconv.VLLM_USAGE_PROMPT_TOKENS: rng.randint(20, 400),
        semconv.VLLM_USAGE_COMPLETION_TOKENS: len(offsets),
        semconv.VLLM_LATENCY_TTFT: repr(offsets[0] / 1e6),
        semconv.VLLM_LATENCY_E2E: repr(e2e),
        semconv.VLLM_LATENCY_QUEUE: repr(rng.randint(0, 50_000) / 1e6),
        semconv.VLLM_LATENCY_PREFILL: repr(rng.randint(5_000, 90_000) / 1e6),
        semconv.VLLM_LATENCY_DECODE: repr((offsets[-1] - offsets[0]) / 1e6),
        semconv.VLLM_LATENCY_INFERENCE: repr(e2e - 0.001),
    }
    if hook:
        attrs[semconv.SERVER_TOKEN_OFFSETS_US] = offsets
        attrs[semconv.SERVER_PREEMPTIONS] = 0
    return attrs


def _row(
    trace_id: str,
    span_id: str,
    parent: str,
    name: str,
    kind: str,
    start_ns: int,
    duration_ns: int,
    attributes: Mapping[str, Any],
    *,
    service: str = semconv.SERVICE_VLLM,
    resource: Mapping[str, Any] | None = None,
    status: str = semconv.STATUS_UNSET,
    events: Sequence[Event] = (),
) -> SpanRow:
    """A span as the receiver stores it (attribute values as text, arrays as JSON)."""
    text = {k: attr_text(v) for k, v in attributes.items()}
    res = {"service.name": service, **{k: attr_text(v) for k, v in (resource or {}).items()}}
    return SpanRow(
        start_ns, trace_id, span_id, parent, "", name, kind, service, res,
        semconv.INSTRUMENTATION_SCOPE_HOOKS, "0.1.0", text, duration_ns, status, "",
        [t for _, t, _ in events], [n for n, _, _ in events],
        [{k: attr_text(v) for k, v in a.items()} for _, _, a in events], [], [], [], [],
    )  # fmt: skip


def _e2e_ns(attrs: Mapping[str, Any]) -> int:
    return int(float(attrs[semconv.VLLM_LATENCY_E2E]) * 1e9)


def write_traffic(
    path: Path,
    base_ns: int,
    requests: int = 120,
    seed: int = 11,
    cut_spans: dict[int, dict[str, Any]] | None = None,
) -> Path:
    """``requests`` requests starting within 50 s after ``base_ns`` (module docstring):
    request ``i`` comes from ``ORIGINS[i % 7]`` and fails when ``i % 13 == 5``; the engine did
    not finish it when :func:`cut_end` says so (its span's attributes go into ``cut_spans``)."""
    rng = random.Random(seed)
    rows: list[SpanRow] = []
    for i in range(requests):
        first = len(rows)
        start = base_ns + rng.randint(0, 50 * S)
        offsets = [rng.randint(20_000, 400_000)]
        for _ in range(rng.choice((0, 1, 4, 19, 59)) if i % 17 else 2):
            offsets.append(offsets[-1] + rng.randint(5_000, 60_000) + rng.choice(STALL_US))
        trace_id, span_id = _ids(rng)
        attrs = _server_attrs(rng, offsets, hook=True)
        resource: dict[str, Any] = {}
        events: list[Event] = []
        parent = ""
        if rng.random() < 0.1:  # preempted once, resumed after a stall
            attrs[semconv.SERVER_PREEMPTIONS] = 1
            events = [
                preemption(start + 50 * MS, 3, rng.randint(16, 256)),
                resumption(start + 90 * MS, rng.randint(10_000, 80_000)),
            ]
        if i == 7:
            attrs[semconv.VLLM_LATENCY_TTFT] = "n/a"  # malformed text: absent, in both dialects
        if i == 11:
            attrs[semconv.SERVER_TOKEN_OFFSETS_US] = [300_000, 200_000]  # decreasing: no ITL
        end = cut_end(i)
        if end is not None:
            _cut(attrs, end, offsets)
            if cut_spans is not None:
                cut_spans[i] = attrs
        origin = ORIGINS[i % 7]
        tenant = TENANTS[rng.randrange(len(TENANTS))]
        if origin == "live":
            (attrs if i % 2 else resource)["tenant"] = tenant
            if rng.random() < 0.4:  # vLLM's own span of the same request: the hook span wins
                vllm = _server_attrs(rng, offsets, hook=False)
                vllm[semconv.VLLM_REQUEST_ID] = attrs[semconv.VLLM_REQUEST_ID]
                rows.append(
                    _row(trace_id, _ids(rng)[1], "", semconv.SPAN_VLLM_REQUEST,
                         semconv.SPAN_KIND_SERVER, start - MS, _e2e_ns(vllm), vllm)
                )  # fmt: skip
        else:
            parent = _ids(rng)[1]
            client: dict[str, Any] = {"tenant": tenant}
            if origin in ("probe", "gateway"):
                client |= {semconv.PROBE_STREAM: "canary", semconv.RUN_ID: f"probe-{i}"}
            elif origin == "benchmark":
                client |= {semconv.RUN_ID: "bench-1", semconv.REQUEST_CLASS: "short"}
            app = origin == "app"  # another application's span: not an otelbench client
            rows.append(
                _row(trace_id, parent, "", "text_completion tiny",
                     semconv.SPAN_KIND_SERVER if app else semconv.SPAN_KIND_CLIENT,
                     start - (3 * 3600 * S if i == FAR_PARENT else 2 * MS), 2 * S, client,
                     service="app" if app else semconv.SERVICE_CLIENT)
            )  # fmt: skip
            if origin == "gateway":
                gateway = _ids(rng)[1]
                rows.append(
                    _row(trace_id, gateway, parent, semconv.SPAN_GATEWAY_REQUEST,
                         semconv.SPAN_KIND_SERVER, start - MS, S, {},
                         service=semconv.SERVICE_GATEWAY)
                )  # fmt: skip
                parent = gateway
        rows.append(
            _row(trace_id, span_id, parent,
                 semconv.SPAN_HOOK_REQUEST if i % 19 != 3 else semconv.SPAN_VLLM_REQUEST,
                 semconv.SPAN_KIND_SERVER, start, _e2e_ns(attrs), attrs, resource=resource,
                 status=semconv.STATUS_ERROR
                 if i % 13 == 5 or (end or ("",))[0] == "error" else semconv.STATUS_UNSET,
                 events=events)
        )  # fmt: skip
        for phase in (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE):
            rows.append(
                _row(trace_id, _ids(rng)[1], span_id, phase, semconv.SPAN_KIND_INTERNAL,
                     start, 10 * MS, {})
            )  # fmt: skip
        if i in STORED_TWICE:
            rows.extend(rows[first:])
    with SpanStore.open(path) as store:
        store.insert_spans(rows)
    return path


def assert_same_window(a: LiveWindow, b: LiveWindow) -> None:
    assert (a.start_unix_ns, a.end_unix_ns) == (b.start_unix_ns, b.end_unix_ns)
    assert a.source == b.source
    assert a.request_class == b.request_class
    assert a.ok.tolist() == b.ok.tolist()
    for field in dataclasses.fields(a.requests):
        x, y = getattr(a.requests, field.name), getattr(b.requests, field.name)
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), field.name
            assert x.dtype == y.dtype, field.name
        else:
            assert x == y, field.name


_VARIES = (semconv.METRIC_LIVE_REFRESH_DURATION, semconv.METRIC_LIVE_STORE_BYTES)


def comparable(text: str) -> str:
    """The exposition without the two series that differ by nature between stores."""
    return "\n".join(
        line for line in text.splitlines() if not any(name in line for name in _VARIES)
    )


def test_chdb_windows_and_metrics_equal_duckdb(tmp_path: Path) -> None:
    """The DuckDB store against chdb stores of every shape (``tests/fixtures/exporter_rows.py``):
    a copy of otelbench's rows, the rows as the collector's ClickHouse exporter inserts them (its
    Map schema and its json mode's JSON schema), and
    an old store's rows (kinds and statuses spelled as before August 2024)."""
    base = 1_700_000_000 * S
    cut_spans: dict[int, dict[str, Any]] = {}
    duck = write_traffic(tmp_path / "live.duckdb", base, cut_spans=cut_spans)
    shapes = {
        "copy": load_chdb(duck),
        "exporter": load_chdb_as_exporter(duck),
        "exporter-json": load_chdb_as_exporter(duck, json_schema=True),
        "legacy": load_chdb(with_legacy_spellings(duck, tmp_path / "legacy.duckdb")),
    }
    by_tenant = WindowConfig(
        window_s=30.0, slo_ttft_s=0.25, slo_tpot_s=0.03, class_attribute="tenant"
    )
    default = WindowConfig(window_s=300.0)
    sources_seen: set[str] = set()
    texts: dict[tuple[float, int], str] = {}
    for config, end in (
        (by_tenant, base + 30 * S),  # the window cuts through the traffic
        (by_tenant, base + 60 * S),
        (default, base + 120 * S),  # every request
        (default, base + 400 * S),  # none
    ):
        text_d = Watcher(duck, WatchConfig(window=config)).refresh(end)
        for shape, url in shapes.items():
            with open_store(duck) as d, open_store(url) as c:
                wd, wc = (
                    extract_window(
                        s, start_unix_ns=end - int(config.window_s * 1e9), end_unix_ns=end,
                        class_attribute=config.class_attribute,
                    )
                    for s in (d, c)
                )  # fmt: skip
            assert_same_window(wd, wc)
            sources_seen |= set(wd.source)
            if config is by_tenant:  # tenants from the span, its resource and the parent spans
                assert set(TENANTS) <= set(wd.request_class)
            text_c = Watcher(url, WatchConfig(window=config)).refresh(end)
            assert comparable(text_c) == comparable(text_d), shape
            texts[config.window_s, end - base] = text_c
    assert sources_seen == {"benchmark", "live", "probe"}
    # 5 minutes ending 120 s after the first request hold every request
    every = texts[300.0, 120 * S]
    for source, kinds in (("live", ("live", "app")), ("probe", ("probe", "gateway"))):
        requests, errors = expected_requests(120, kinds)
        assert _value(every, f'{semconv.METRIC_LIVE_REQUESTS}{{source="{source}"}}') == requests
        assert _value(every, f'{semconv.METRIC_LIVE_ERRORS}{{source="{source}"}}') == errors
        cut = expected_cut(120, kinds)
        assert sum(cut.values()) >= 3  # cancellations in several phases, and an error
        for reason in (semconv.END_REASON_CANCELLED, semconv.END_REASON_ABORTED, "error"):
            for phase in semconv.END_PHASES:
                labels = f'end_phase="{phase}",end_reason="{reason}",source="{source}"'
                assert _value(every, f"{semconv.METRIC_LIVE_CUT_REQUESTS}{{{labels}}}") == (
                    cut.get((reason, phase), 0)
                ), labels
        # the unread work: the sums of what the cut spans were written with
        spans = [a for i, a in cut_spans.items() if origins(120)[i] in kinds]
        assert len(spans) == sum(cut.values())
        src = f'{{source="{source}"}}'
        for name, key in (
            (semconv.METRIC_LIVE_UNREAD_PROMPT_TOKENS, semconv.SERVER_PROMPT_TOKENS_COMPUTED),
            (semconv.METRIC_LIVE_UNREAD_OUTPUT_TOKENS, semconv.SERVER_OUTPUT_TOKENS_GENERATED),
        ):
            assert _value(every, name + src) == sum(a[key] for a in spans), name
        engine_s = sum(float(a.get(semconv.VLLM_LATENCY_INFERENCE, 0.0)) for a in spans)
        assert _value(every, semconv.METRIC_LIVE_UNREAD_ENGINE_SECONDS + src) == pytest.approx(
            engine_s, abs=1e-6
        )
    preempted = _value(every, f'{semconv.METRIC_LIVE_PREEMPTED_RATIO}{{source="live"}}')
    assert preempted is not None
    assert 0 < preempted < 1
    assert (_value(every, semconv.METRIC_LIVE_STORE_BYTES) or 0) > 0
    past = texts[300.0, 400 * S]  # a window after the traffic holds none of it
    assert _value(past, f'{semconv.METRIC_LIVE_REQUESTS}{{source="live"}}') == 0.0


def test_a_failed_clickhouse_refresh_is_counted(tmp_path: Path) -> None:
    url = f"chdb://{chdb_dir()}?database=otel_missing"
    watcher = Watcher(url, WatchConfig(window=WindowConfig(window_s=60.0)))
    with pytest.raises(NotAnOtelbenchStore, match="UNKNOWN_DATABASE"):
        watcher.refresh()
    assert f"{semconv.METRIC_LIVE_REFRESH_ERRORS} 1.0" in watcher.metrics_text()
    assert watcher.last_error is not None
    assert "otel_missing" in watcher.last_error


def test_store_bytes_of_chdb_are_the_active_parts(tmp_path: Path) -> None:
    url = load_chdb(write_traffic(tmp_path / "live.duckdb", 1_700_000_000 * S, requests=10))
    with open_store(url) as store:
        size = store_bytes(store)
        [parts] = (
            store.connection.query_arrow(
                "SELECT toInt64(sum(bytes_on_disk)) AS b FROM system.parts "
                "WHERE active AND database = currentDatabase() AND table = 'otel_traces'",
                {},
                "t",
            )
            .column("b")
            .to_pylist()
        )
    assert size == parts > 0


def test_clickhouse_connect_binds_the_live_queries_as_chdb_runs_them(tmp_path: Path) -> None:
    """The ClickHouse server path without a server: clickhouse-connect's own binding of the
    live queries (the ``param_*`` values it would send over HTTP), run on chdb, gives the same
    columns as the values chdb is given."""
    from clickhouse_connect.driver.binding import bind_query

    from otelbench.live.query import LIVE_PARAMETERS, SQL_PACKAGE
    from otelbench.query.extract import arrow_columns
    from otelbench.store.clickhouse import ChdbConnection

    base = 1_700_000_000 * S
    url = load_chdb(write_traffic(tmp_path / "live.duckdb", base, requests=30))
    values: dict[str, object] = {
        "start_unix_ns": base,
        "end_unix_ns": base + 60 * S,
        "lookback_ns": 3600 * S,
        "class_attribute": "tenant",
        "table_traces": semconv.TABLE_TRACES,
    }
    with open_store(url) as runner:
        conn = runner.connection
        assert isinstance(conn, ChdbConnection)
        for name in ("window_server_requests", "store_bytes"):
            sql = runner.dialect.sql(name, SQL_PACKAGE)
            wanted = set(runner.dialect.parameters.findall(re.sub(r"--[^\n]*", "", sql)))
            params = {k: {**LIVE_PARAMETERS, **values}[k] for k in wanted}
            bound_sql, http_params = bind_query(sql, params)
            assert bound_sql == sql  # server-side binding: the text is sent unchanged
            server_side = {k.removeprefix("param_"): v for k, v in http_params.items()}
            theirs = arrow_columns(conn.session.query(sql, "ArrowTable", params=server_side))
            ours = arrow_columns(conn.query_arrow(sql, params, runner.source))
            assert theirs.keys() == ours.keys()
            assert len(next(iter(ours.values()))) > 0
            for col in ours:
                assert repr(np.ma.asarray(theirs[col]).tolist()) == repr(
                    np.ma.asarray(ours[col]).tolist()
                ), (name, col)


# --- a chdb directory shared with other processes ----------------------------------------------

_WRITE_CHDB = """
import sys, chdb.session
from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb
session = chdb.session.Session(sys.argv[2])
print(copy_duckdb_to_chdb(sys.argv[1], ChdbConnection(session, "otel")))
session.close()
"""

_HOLD = """
import sys, time, chdb.session
deadline = time.monotonic() + 30
while True:  # the watcher holds the directory during its refreshes: retry
    try:
        session = chdb.session.Session(sys.argv[1])
        break
    except RuntimeError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
print("holding", flush=True)
sys.stdin.readline()
session.close()
"""


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def _value(text: str, series: str) -> float | None:
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def _wait(port: int, ok: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = _scrape(port)
        if ok(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{text}")
        time.sleep(0.1)


def test_watch_reads_a_chdb_directory_between_other_processes(tmp_path: Path) -> None:
    """`otelbench watch --store chdb:///dir` in its own process: it reads a directory another
    process wrote and released; while a third process holds the directory, refreshes fail and
    are counted with the last values still served; once released, refreshes recover."""
    base = time.time_ns() - 120 * S  # every request has ended, within the last 10 minutes
    duck = write_traffic(tmp_path / "live.duckdb", base)
    directory = tmp_path / "ch"
    written = subprocess.run(
        [sys.executable, "-c", _WRITE_CHDB, str(duck), str(directory)],
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    expected = Watcher(duck, WatchConfig(window=WindowConfig(window_s=600.0))).refresh()
    live = f'{semconv.METRIC_LIVE_REQUESTS}{{source="live"}}'
    errors = semconv.METRIC_LIVE_REFRESH_ERRORS
    stamp = semconv.METRIC_LIVE_REFRESH_TIMESTAMP
    args = ["--store", f"chdb://{directory}", "--listen", "127.0.0.1:0", "--window", "10m"]
    watch = subprocess.Popen(
        [sys.executable, "-m", "otelbench.cli", "watch", *args, "--interval", "0.2s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        banner = watch.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", banner)
        assert found, banner
        port = int(found.group(1))
        text = _wait(port, lambda t: _value(t, live) is not None, "the first window")
        requests, _ = expected_requests(120, ("live", "app"))
        assert _value(text, live) == _value(expected, live) == requests
        assert _value(text, errors) == 0.0
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(directory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "holding"
            held = _wait(port, lambda t: (_value(t, errors) or 0) >= 2, "counted failures")
            assert _value(held, live) == requests  # the last values stay served
            last_ok = _value(held, stamp)
            assert last_ok is not None  # the last successful refresh's time stays served
        finally:
            holder.communicate("\n", timeout=60)
        assert holder.returncode == 0
        recovered = _wait(port, lambda t: (_value(t, stamp) or 0) > (last_ok or 0), "recovery")
        assert _value(recovered, live) == requests
    finally:
        watch.send_signal(signal.SIGTERM)
        _, stderr = watch.communicate(timeout=60)
    assert watch.returncode == 0, stderr
