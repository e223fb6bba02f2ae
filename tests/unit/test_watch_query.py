"""otelbench.live.query on a real DuckDB span store: sources, classes, windows, retention."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from otelbench import semconv
from otelbench.errors import ConfigError, StoreError
from otelbench.live.query import (
    LIVE_PARAMETERS,
    SQL_PACKAGE,
    delete_older_than,
    extract_window,
)
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.live.window import WindowConfig
from otelbench.query import get_dialect, open_store
from otelbench.store import SpanStore
from tests.fixtures.exporter_rows import with_legacy_spellings
from tests.fixtures.exposition import sample
from tests.unit.query.spanstore import MS, T0_NS, SpanWriter, span, trace

S = 1000 * MS


def server(
    w: SpanWriter,
    n: int,
    *,
    parent: str = "",
    start_ns: int,
    duration_ns: int,
    hook: bool = True,
    ttft: float = 0.1,
    offsets: list[int] | None = None,
    attrs: Mapping[str, Any] | None = None,
    resource: Mapping[str, Any] | None = None,
    request_id: str | None = None,
    error: bool = False,
    trace_n: int | None = None,
) -> None:
    a: dict[str, Any] = {
        semconv.VLLM_REQUEST_ID: request_id or f"req-{n}",
        semconv.VLLM_LATENCY_TTFT: repr(ttft),
        semconv.VLLM_LATENCY_E2E: repr(duration_ns / 1e9),
        semconv.VLLM_LATENCY_QUEUE: "0.01",
        semconv.VLLM_LATENCY_PREFILL: "0.02",
        semconv.VLLM_LATENCY_DECODE: "0.3",
        semconv.VLLM_USAGE_PROMPT_TOKENS: 10,
        semconv.VLLM_USAGE_COMPLETION_TOKENS: len(offsets or [1, 2, 3, 4]),
    }
    if hook:
        a[semconv.SERVER_TOKEN_OFFSETS_US] = offsets or [100_000, 200_000, 300_000, 400_000]
        a[semconv.SERVER_PREEMPTIONS] = 0
    a.update(attrs or {})
    w.span(
        trace_id=trace(trace_n if trace_n is not None else n),
        span_id=span(n),
        parent_span_id=parent,
        name=semconv.SPAN_HOOK_REQUEST if hook else semconv.SPAN_VLLM_REQUEST,
        kind=semconv.SPAN_KIND_SERVER,
        start_ns=start_ns,
        duration_ns=duration_ns,
        attributes=a,
        service=semconv.SERVICE_VLLM,
        resource=resource,
        status=semconv.STATUS_ERROR if error else semconv.STATUS_UNSET,
    )


def client(w: SpanWriter, n: int, attrs: Mapping[str, Any], start_ns: int) -> None:
    w.span(
        trace_id=trace(n),
        span_id=span(n),
        name="text_completion tiny",
        kind=semconv.SPAN_KIND_CLIENT,
        start_ns=start_ns,
        duration_ns=S,
        attributes=attrs,
    )


PROBE_ATTRS = {
    semconv.RUN_ID: "probe-1",
    semconv.PROBE_STREAM: "p",
    semconv.REQUEST_CLASS: "probe-class",
    semconv.REQUEST_PHASE: semconv.PHASE_MEASURE,
}


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Window [T0 + 10 s, T0 + 20 s) by span end; spans 1–9 end inside, 10 and 11 outside."""
    w = SpanWriter(tmp_path / "live.duckdb")
    t = T0_NS + 10 * S
    # 1: live root hook span, and vLLM's own llm_request span of the same request (ignored)
    server(w, 1, start_ns=t, duration_ns=S, attrs={"tenant": "t1"}, request_id="live-1")
    server(w, 2, start_ns=t - MS, duration_ns=S, hook=False, request_id="live-1", ttft=9.0)
    # 3: live, parent span of another application (not otelbench): class from the parent
    w.span(
        trace_id=trace(3),
        span_id=span(30),
        name="app",
        kind=semconv.SPAN_KIND_CLIENT,
        start_ns=t,
        duration_ns=2 * S,
        attributes={"tenant": "t2"},
        service="app",
    )
    server(w, 3, parent=span(30), start_ns=t + MS, duration_ns=S, ttft=0.2)
    # 4: live, class from the resource, failed
    server(w, 4, start_ns=t, duration_ns=2 * S, resource={"tenant": "t3"}, error=True)
    # 5: probe client span → hook child
    client(w, 50, PROBE_ATTRS, t)
    server(w, 5, parent=span(50), start_ns=t + MS, duration_ns=S, trace_n=50, ttft=0.05)
    # 6: probe client → otelbench gateway span → hook child
    client(w, 60, PROBE_ATTRS, t)
    w.span(
        trace_id=trace(60),
        span_id=span(61),
        parent_span_id=span(60),
        name=semconv.SPAN_GATEWAY_REQUEST,
        kind=semconv.SPAN_KIND_SERVER,
        start_ns=t,
        duration_ns=S,
        attributes={},
        service=semconv.SERVICE_GATEWAY,
    )
    server(w, 6, parent=span(61), start_ns=t + MS, duration_ns=S, trace_n=60, ttft=0.06)
    # 7: another otelbench run's request (benchmark), an llm_request span
    client(w, 70, {semconv.RUN_ID: "bench-1", semconv.REQUEST_CLASS: "short"}, t)
    server(w, 7, parent=span(70), start_ns=t + MS, duration_ns=S, trace_n=70, hook=False)
    # 10: ended before the window; 11: ends at the window's end (half-open: outside)
    server(w, 10, start_ns=T0_NS, duration_ns=9 * S)
    server(w, 11, start_ns=T0_NS + 15 * S, duration_ns=5 * S)
    w.close()
    return tmp_path / "live.duckdb"


def test_window_sources_classes_and_status(store_path: Path) -> None:
    with SpanStore.open(store_path, read_only=True) as store:
        win = extract_window(
            store,
            start_unix_ns=T0_NS + 10 * S,
            end_unix_ns=T0_NS + 20 * S,
            class_attribute="tenant",
        )
    facts = zip(win.source, win.request_class, win.ok.tolist(), strict=True)
    rows = dict(zip(win.requests.span_id, facts, strict=True))
    assert rows == {
        span(1): ("live", "t1", True),
        span(3): ("live", "t2", True),
        span(4): ("live", "t3", False),
        span(5): ("probe", None, True),
        span(6): ("probe", None, True),
        span(7): ("benchmark", None, True),
    }
    assert win.window_s == 10.0
    i = win.requests.span_id.index(span(1))
    assert win.requests.span_name[i] == semconv.SPAN_HOOK_REQUEST  # the hook span wins
    assert win.requests.ttft_s[i] == 0.1
    assert win.requests.token_offsets(i).tolist() == [100_000, 200_000, 300_000, 400_000]


def test_an_old_store_gives_the_same_window_and_metrics(store_path: Path, tmp_path: Path) -> None:
    """The same spans with the kinds and statuses spelled as before August 2024
    (``SPAN_KIND_SERVER``, ``STATUS_CODE_ERROR``): the same requests, sources, classes and
    failures, and the same ``/metrics`` text."""
    legacy = with_legacy_spellings(store_path, tmp_path / "legacy.duckdb")
    windows = []
    for path in (store_path, legacy):
        with SpanStore.open(path, read_only=True) as store:
            windows.append(
                extract_window(
                    store, start_unix_ns=T0_NS + 10 * S, end_unix_ns=T0_NS + 20 * S,
                    class_attribute="tenant",
                )
            )  # fmt: skip
    now, old = windows
    assert len(now) == len(old) == 6
    assert (old.source, old.request_class, old.ok.tolist()) == (
        now.source,
        now.request_class,
        now.ok.tolist(),
    )
    assert old.requests.span_id == now.requests.span_id
    assert old.ok.tolist().count(False) == 1  # STATUS_CODE_ERROR is a failure
    config = WatchConfig(window=WindowConfig(window_s=10.0, class_attribute="tenant"))
    texts = [
        Watcher(path, config, clock=lambda: T0_NS + 20 * S).refresh()
        for path in (store_path, legacy)
    ]
    varies = (semconv.METRIC_LIVE_REFRESH_DURATION, semconv.METRIC_LIVE_STORE_BYTES)
    now_text, old_text = (
        [line for line in text.splitlines() if not line.startswith(varies)] for text in texts
    )
    assert old_text == now_text
    assert f'{semconv.METRIC_LIVE_ERRORS}{{source="live"}} 1.0' in old_text


def test_default_class_attribute_is_the_request_class(store_path: Path) -> None:
    with SpanStore.open(store_path, read_only=True) as store:
        win = extract_window(store, start_unix_ns=T0_NS + 10 * S, end_unix_ns=T0_NS + 20 * S)
    classes = dict(zip(win.requests.span_id, win.request_class, strict=True))
    assert classes[span(5)] == "probe-class"  # from the probe's client span
    assert classes[span(6)] == "probe-class"  # behind the gateway
    assert classes[span(7)] == "short"
    assert classes[span(1)] is None


def test_live_requests_are_hook_spans_without_otelbench_clients(store_path: Path) -> None:
    """Over a window that holds every span: live traffic is the hook spans (the hook wins over
    vLLM's llm_request span of the same request) whose parents are not otelbench clients."""
    with open_store(store_path) as store:
        win = extract_window(store, start_unix_ns=T0_NS, end_unix_ns=T0_NS + 30 * S)
    live = [i for i, source in enumerate(win.source) if source == semconv.SOURCE_LIVE]
    expected = [span(10), span(1), span(4), span(3), span(11)]
    assert [win.requests.span_id[i] for i in live] == expected
    assert {win.requests.span_name[i] for i in live} == {semconv.SPAN_HOOK_REQUEST}
    assert [win.requests.token_offsets(i).size for i in live] == [4] * 5
    assert win.requests.client_index.tolist() == [-1] * len(win)


def test_watcher_refresh_exposes_each_source(store_path: Path) -> None:
    config = WatchConfig(window=WindowConfig(window_s=10.0, class_attribute="tenant"))
    watcher = Watcher(store_path, config, clock=lambda: T0_NS + 20 * S)
    text = watcher.refresh()
    assert f'{semconv.METRIC_LIVE_REQUESTS}{{source="live"}} 3.0' in text
    assert f'{semconv.METRIC_LIVE_ERRORS}{{source="live"}} 1.0' in text
    assert f'{semconv.METRIC_LIVE_REQUESTS}{{source="probe"}} 2.0' in text
    assert f'{semconv.METRIC_LIVE_REQUESTS}{{source="benchmark"}} 1.0' in text
    # live TTFT of the successful requests 0.1 and 0.2; probe 0.05 and 0.06
    assert sample(text, semconv.METRIC_LIVE_TTFT, source="live", quantile="0.5") == pytest.approx(
        0.15
    )
    assert sample(text, semconv.METRIC_LIVE_TTFT, source="probe", quantile="0.5") == pytest.approx(
        0.055
    )
    assert f"{semconv.METRIC_LIVE_REFRESH_SPANS} 6.0" in text
    assert watcher.metrics_text() == text


def test_a_failed_refresh_is_counted_and_keeps_the_last_values(store_path: Path) -> None:
    config = WatchConfig(window=WindowConfig(window_s=10.0))
    watcher = Watcher(store_path, config, clock=lambda: T0_NS + 20 * S)
    watcher.refresh()
    # another writer holds the file: read-only opens fail
    with SpanStore.open(store_path), pytest.raises(StoreError, match="cannot open span store"):
        watcher.refresh()
    text = watcher.metrics_text()
    assert f"{semconv.METRIC_LIVE_REFRESH_ERRORS} 1.0" in text
    assert f'{semconv.METRIC_LIVE_REQUESTS}{{source="probe"}} 2.0' in text


def test_delete_older_than(store_path: Path) -> None:
    with SpanStore.open(store_path) as store:
        before = store.span_count()
        deleted = delete_older_than(store, T0_NS + 10 * S)
        assert deleted == 2  # span 10 started at T0, span 2 1 ms before T0 + 10 s
        assert store.span_count() == before - 2
        assert delete_older_than(store, T0_NS + 10 * S) == 0


def test_retention_needs_a_writable_store(store_path: Path) -> None:
    config = WatchConfig(window=WindowConfig(window_s=10.0), retention_s=3600.0)
    with pytest.raises(ConfigError, match="retention needs the store open for writing"):
        Watcher(store_path, config)


def test_the_live_sql_binds_the_same_known_names_in_both_dialects() -> None:
    """Every name the window query binds comes from LIVE_PARAMETERS or is a value, in both
    dialects, and no span or attribute name is spelled out in the SQL."""
    import otelbench.query.clickhouse  # noqa: F401  (registers the dialect)

    values = {"start_unix_ns", "end_unix_ns", "lookback_ns", "class_attribute"}
    bound = {}
    for dialect in ("duckdb", "clickhouse"):
        sql = get_dialect(dialect).sql("window_server_requests", SQL_PACKAGE)
        text = re.sub(r"--[^\n]*", "", sql)
        assert "-- @include" not in sql
        bound[dialect] = set(get_dialect(dialect).parameters.findall(text))
        assert bound[dialect] <= LIVE_PARAMETERS.keys() | values, dialect
        assert "otelbench." not in text, dialect
        assert "gen_ai." not in text, dialect
    assert bound["duckdb"] == bound["clickhouse"]
    assert values | {"attr_probe_stream", "source_live", "source_probe"} <= bound["duckdb"]
    with pytest.raises(
        StoreError, match=r"no duckdb SQL for query 'store_bytes' in otelbench\.live"
    ):
        get_dialect("duckdb").sql("store_bytes", SQL_PACKAGE)
