"""Extraction from a real DuckDB span store built from ``otelbench/store/sql/duckdb/schema.sql``."""

from __future__ import annotations

import math
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from otelbench import semconv
from otelbench.errors import ConfigError, NotAnOtelbenchStore, StoreError
from otelbench.live.query import extract_window
from otelbench.query import (
    QueryRunner,
    extract_client_requests,
    extract_guardrail_spans,
    extract_run,
    extract_run_data,
    extract_run_server_requests,
    get_dialect,
    list_runs,
    open_store,
)
from otelbench.query.extract import NAME_PARAMETERS, PATTERN_PARAMETERS
from otelbench.store import SpanStore
from tests.unit.query.clickhouse_store import load_chdb
from tests.unit.query.spanstore import (
    HOOK_RUN_ID,
    MANIFEST,
    MS,
    OLD_RUN_ID,
    RUN_ID,
    T0_NS,
    SpanWriter,
    preemption,
    resumption,
    span,
    trace,
)


# --- runs --------------------------------------------------------------------------------------
def test_list_runs_oldest_first_with_parsed_manifest(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        runs = list_runs(store)
    assert [r.run_id for r in runs] == [OLD_RUN_ID, RUN_ID]
    assert runs[1].manifest == MANIFEST
    assert runs[1].span_start_unix_ns == T0_NS
    assert runs[1].span_duration_ns == 1600 * MS


def test_a_manifest_of_an_earlier_version_is_upgraded_where_it_is_read(tmp_path: Path) -> None:
    """Manifests written before ``schedule_lag.generator_bottleneck`` carried the load
    generator's bottleneck (draft 4.2.5) only as a deviation's words: the flag is read from them
    once, as the store's manifests are parsed; a manifest with the flag is taken as written."""
    fell_behind = "load generator fell behind its schedule: P99 send lag 19.7 ms (> 10 ms)"
    manifests = {
        "legacy-flagged": {"schedule_lag": lag(19.7), "deviations": [fell_behind]},
        "legacy-on-time": {"schedule_lag": lag(0.4), "deviations": []},
        "flag-false": {
            "schedule_lag": {**lag(0.4), "generator_bottleneck": False},
            "deviations": [fell_behind],
        },
        "closed-loop": {"deviations": []},
    }
    writer = SpanWriter(tmp_path / "s.duckdb")
    for i, (run_id, manifest) in enumerate(manifests.items()):
        writer.run_span(run_id, manifest, T0_NS + i * 10**9, 10**8)
    writer.close()
    with open_store(tmp_path / "s.duckdb") as store:
        lags = {r.run_id: r.manifest.get("schedule_lag") for r in list_runs(store)}
    assert lags == {
        "legacy-flagged": {**lag(19.7), "generator_bottleneck": True},
        "legacy-on-time": {**lag(0.4), "generator_bottleneck": False},
        "flag-false": {**lag(0.4), "generator_bottleneck": False},
        "closed-loop": None,
    }


def lag(p99_ms: float) -> dict[str, float]:
    """A manifest's ``schedule_lag`` as written before it carried ``generator_bottleneck``."""
    return {"p50_ms": p99_ms / 2, "p99_ms": p99_ms, "max_ms": p99_ms + 1.0}


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        ({"id": 7}, "$.id: expected str, got int"),
        ({"load": "poisson"}, "$.load: expected RunLoad (an object), got str"),
        ({"schedule_lag": {"p99_ms": 3.0}}, "$.schedule_lag: missing key max_ms"),
        ({"shard": {"index": 0}}, "$.shard: missing key count"),
    ],
)
def test_a_manifest_of_another_shape_is_a_store_error_that_names_it(
    tmp_path: Path, manifest: dict[str, Any], problem: str
) -> None:
    """A run span whose manifest is not a run manifest's shape fails where the store is read,
    naming the run and what departs from the type, not later in a reader (a KeyError)."""
    writer = SpanWriter(tmp_path / "s.duckdb")
    writer.run_span("odd", manifest, T0_NS, 10**8)
    writer.close()
    with open_store(tmp_path / "s.duckdb") as store, pytest.raises(StoreError) as raised:
        list_runs(store)
    message = str(raised.value)
    assert message.startswith("run odd: not an otelbench run manifest: ")
    assert problem in message


def test_default_run_is_the_latest_and_runs_are_selected_by_id(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        assert extract_run(store).run_id == RUN_ID
        assert extract_run(store, OLD_RUN_ID).run_id == OLD_RUN_ID
        with pytest.raises(ConfigError, match=r"no run 'nope' .*runs: r0, r1"):
            extract_run(store, "nope")


def test_store_without_runs(tmp_path: Path) -> None:
    SpanWriter(tmp_path / "empty.duckdb").close()
    with (
        open_store(tmp_path / "empty.duckdb") as store,
        pytest.raises(StoreError, match="holds no otelbench run"),
    ):
        extract_run(store)


# --- client requests ---------------------------------------------------------------------------
def test_client_requests_of_a_run_in_submit_order(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        c = extract_client_requests(store, RUN_ID)
    assert len(c) == 4
    assert c.trace_id == (trace(1), trace(2), trace(3), trace(4))
    assert c.span_id == (span(1), span(2), span(3), span(4))
    assert c.submit_unix_ns.tolist() == [
        T0_NS,
        T0_NS + 500 * MS,
        T0_NS + 1000 * MS,
        T0_NS + 1500 * MS,
    ]
    assert c.duration_ns.tolist() == [210 * MS, 340 * MS, 65 * MS, 20 * MS]
    assert c.ok.tolist() == [True, True, True, False]
    assert c.error_type == (None, None, None, "504")
    assert c.request_index.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert c.request_class == ("default",) * 4
    assert c.ttft_us[:3].tolist() == [100_000.0, 300_000.0, 50_000.0]
    assert math.isnan(c.ttft_us[3])
    assert c.end_offset_us.tolist() == [210_000.0, 340_000.0, 65_000.0, 20_000.0]
    assert c.input_tokens[:3].tolist() == [200.0, 256.0, 255.0]
    assert math.isnan(c.input_tokens[3])
    assert c.output_tokens[:3].tolist() == [7.0, 3.0, 2.0]
    assert math.isnan(c.schedule_lag_us[0])
    assert c.finish_reasons == (("length",), ("length",), ("length",), ())
    assert c.chunk_token_source == ("usage", "usage", "usage", None)
    # chunk arrays: JSON text in the store → flat int64 arrays + bounds
    assert c.chunk_bounds.tolist() == [0, 4, 7, 9, 9]
    assert c.chunk_offset_us.dtype == np.int64
    assert c.chunk_offset_us.tolist() == [
        100_000,
        120_000,
        150_000,
        200_000,
        300_000,
        310_000,
        330_000,
        50_000,
        60_000,
    ]
    assert c.chunk_tokens.tolist() == [1, 2, 1, 3, 1, 1, 1, 1, 1]
    offsets, tokens = c.chunks(1)
    assert offsets.tolist() == [300_000, 310_000, 330_000]
    assert tokens.tolist() == [1, 1, 1]
    assert c.chunks(3)[0].size == 0
    assert c.end_unix_ns().tolist() == [
        T0_NS + 210 * MS,
        T0_NS + 840 * MS,
        T0_NS + 1065 * MS,
        T0_NS + 1520 * MS,
    ]


def test_other_runs_client_spans_are_not_extracted(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        old = extract_client_requests(store, OLD_RUN_ID)
    assert old.span_id == (span(100),)
    assert old.chunk_offset_us.tolist() == [1000, 2000]


def one_client_span(tmp_path: Path, **attrs: Any) -> Path:
    """A store holding one client span of run ``x`` (trace 1, span 1, ending 50 µs after its
    submit), with ``attrs`` given to :meth:`SpanWriter.client_span`."""
    path = tmp_path / "s.duckdb"
    s = SpanWriter(path)
    fields: dict[str, Any] = {"trace_id": trace(1), "span_id": span(1), **attrs}
    s.client_span(run_id="x", submit_ns=T0_NS, end_offset_us=50, **fields)
    s.close()
    return path


def test_missing_chunk_tokens_mean_one_token_per_chunk(tmp_path: Path) -> None:
    path = one_client_span(
        tmp_path, chunk_offsets_us=[10, 20, 40], chunk_tokens=None, chunk_token_source=None
    )
    with open_store(path) as store:
        c = extract_client_requests(store, "x")
    assert c.chunk_tokens.tolist() == [1, 1, 1]
    assert c.chunk_tokens.dtype == np.int64
    assert c.chunk_token_source == (semconv.CHUNK_TOKENS_ONE_PER_CHUNK,)


def test_warmup_and_probe_requests_are_not_measured(tmp_path: Path) -> None:
    """Only ``measure`` requests (or spans without a phase) are extracted, client and server."""
    s = SpanWriter(tmp_path / "s.duckdb")
    s.run_span("x", MANIFEST, T0_NS, 100 * MS)
    phases = [semconv.PHASE_WARMUP, semconv.PHASE_PROBE, semconv.PHASE_MEASURE, None]
    for i, phase in enumerate(phases, start=1):
        extra = {semconv.REQUEST_PHASE: phase} if phase is not None else {}
        s.client_span(
            run_id="x",
            trace_id=trace(i),
            span_id=span(i),
            submit_ns=T0_NS + i * MS,
            end_offset_us=50,
            chunk_offsets_us=[10, 20],
            chunk_tokens=[1, 1],
            index=i,
            extra=extra,
        )
        s.server_span(
            trace_id=trace(i),
            span_id=span(10 + i),
            parent_span_id=span(i),
            start_ns=T0_NS + i * MS,
            ttft_s="0.005",
            e2e_s="0.04",
            queue_s="0.001",
            prefill_s="0.004",
            decode_s="0.03",
            prompt_tokens=5,
            completion_tokens=2,
        )
    s.close()
    with open_store(tmp_path / "s.duckdb") as store:
        c = extract_client_requests(store, "x")
        data = extract_run_data(store, "x")
    assert c.request_index.tolist() == [3.0, 4.0]
    assert data.server.parent_span_id == (span(3), span(4))


def test_reasoning_phase_columns(tmp_path: Path) -> None:
    s = SpanWriter(tmp_path / "s.duckdb")
    extras: list[dict[str, Any]] = [
        {
            semconv.CLIENT_THINK_PHASE: semconv.THINK_PHASE_ENDED,
            semconv.CLIENT_OUTPUT_PHASE_CHUNK: 2,
        },
        {semconv.CLIENT_THINK_PHASE: semconv.THINK_PHASE_UNTERMINATED},
        {},
    ]
    for i, extra in enumerate(extras, start=1):
        s.client_span(
            run_id="x",
            trace_id=trace(i),
            span_id=span(i),
            submit_ns=T0_NS + i * MS,
            end_offset_us=50,
            chunk_offsets_us=[10, 20, 30],
            chunk_tokens=[1, 1, 1],
            extra=extra,
        )
    s.close()
    with open_store(tmp_path / "s.duckdb") as store:
        c = extract_client_requests(store, "x")
    assert c.think_phase == (semconv.THINK_PHASE_ENDED, semconv.THINK_PHASE_UNTERMINATED, None)
    assert c.output_phase_chunk[0] == 2.0
    assert np.isnan(c.output_phase_chunk[1:]).all()


def test_chunk_token_counts_of_another_length_are_rejected_and_counted(tmp_path: Path) -> None:
    """Token counts that do not pair with the chunk offsets are left out (one token per chunk
    is assumed, as without counts) and counted, instead of failing the extraction."""
    path = one_client_span(tmp_path, span_id=span(7), chunk_offsets_us=[10, 20], chunk_tokens=[1])
    with open_store(path) as store:
        c = extract_client_requests(store, "x")
    assert c.chunk_offset_us.tolist() == [10, 20]
    assert c.chunk_tokens.tolist() == [1, 1]
    assert c.chunk_token_source == (semconv.CHUNK_TOKENS_ONE_PER_CHUNK,)
    assert c.rejected_attributes == {semconv.CLIENT_CHUNK_TOKENS: 1}


@pytest.mark.parametrize(
    ("offsets", "tokens_text", "tokens", "rejected"),
    [
        ([10, 20, 30], "[1,1,1]", [1, 1, 1], 0),  # one per chunk: recognised by a compare
        ([10, 20, 30], "[1, 1,1]", [1, 1, 1], 0),  # the same counts written otherwise: parsed
        ([10, 20, 30], "[1,1,2]", [1, 1, 2], 0),
        ([10, 20, 30], "[1,1]", [1, 1, 1], 1),  # too few: one per chunk assumed, counted
        ([10, 20], "[1,1,1]", [1, 1], 1),  # too many
        ([], "[1]", [], 1),  # counts without any chunk
        ([], "[]", [], 0),
        ([10], "[01]", [1], 1),  # not JSON
    ],
)
def test_chunk_token_counts_are_read_exactly_whichever_path(
    tmp_path: Path, offsets: list[int], tokens_text: str, tokens: list[int], rejected: int
) -> None:
    """DuckDB's ``client_requests`` recognises ``[1,1,…,1]`` with as many ones as chunk offsets
    by comparing text; anything else goes through the pattern and the parser. Either way the
    records are what the ClickHouse dialect reads from the same spans (it recognises the same
    text by the same compare)."""
    path = one_client_span(tmp_path, chunk_offsets_us=offsets, chunk_tokens=tokens_text)
    for url in (path, load_chdb(path)):
        with open_store(url) as store:
            c = extract_client_requests(store, "x")
        assert c.chunk_offset_us.tolist() == offsets
        assert c.chunk_tokens.tolist() == tokens
        assert c.chunk_tokens.dtype == np.int64
        assert c.rejected_attributes == ({semconv.CLIENT_CHUNK_TOKENS: 1} if rejected else {})
        stated = semconv.CHUNK_TOKENS_FROM_USAGE  # what the span says it took the counts from
        assumed = semconv.CHUNK_TOKENS_ONE_PER_CHUNK if rejected else stated
        assert c.chunk_token_source == (assumed,)


def test_a_malformed_attribute_is_read_as_absent_and_counted(tmp_path: Path) -> None:
    path = one_client_span(
        tmp_path, chunk_offsets_us=[10], chunk_tokens=[1], extra={semconv.CLIENT_TTFT_US: "soon"}
    )
    with open_store(path) as store:
        c = extract_client_requests(store, "x")
    assert np.isnan(c.ttft_us).all()
    assert c.end_offset_us.tolist() == [50.0]
    assert c.rejected_attributes == {semconv.CLIENT_TTFT_US: 1}


# --- server spans ------------------------------------------------------------------------------
def test_server_children_are_joined_to_their_client_spans(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        data = extract_run_data(store)
    s = data.server
    assert data.run.run_id == RUN_ID
    assert len(s) == 2
    assert s.span_id == (span(11), span(12))
    assert s.parent_span_id == (span(1), span(2))
    assert s.client_index.tolist() == [0, 1]
    assert s.request_id == ("cmpl-a", "cmpl-b")
    assert s.start_unix_ns.tolist() == [T0_NS + 5 * MS, T0_NS + 505 * MS]
    # doubles stored as decimal text come back as float seconds
    assert s.ttft_s.tolist() == [0.06, 0.25]
    assert s.e2e_s.tolist() == [0.19, 0.33]
    assert s.queue_s.tolist() == [0.01, 0.2]
    assert s.prefill_s.tolist() == [0.05, 0.05]
    assert s.decode_s.tolist() == [0.1, 0.02]
    assert s.inference_s.tolist() == pytest.approx([0.15, 0.07])
    assert s.prompt_tokens.tolist() == [200.0, 256.0]
    assert s.completion_tokens.tolist() == [7.0, 3.0]


def test_a_client_span_keeps_only_its_earliest_server_child(tmp_path: Path) -> None:
    s = SpanWriter(tmp_path / "s.duckdb")
    s.run_span("x", {"id": "x"}, T0_NS, MS)
    s.client_span(run_id="x", trace_id=trace(1), span_id=span(1), submit_ns=T0_NS, end_offset_us=9)
    for n, start in ((3, T0_NS + 2 * MS), (2, T0_NS + MS)):
        s.server_span(
            trace_id=trace(1),
            span_id=span(n),
            parent_span_id=span(1),
            start_ns=start,
            ttft_s="0.001",
            e2e_s="0.002",
            queue_s="0",
            prefill_s="0.001",
            decode_s="0.001",
            prompt_tokens=1,
            completion_tokens=2,
        )
    s.close()
    with open_store(tmp_path / "s.duckdb") as store:
        server = extract_run_data(store).server
    assert server.span_id == (span(2),)


def test_live_server_spans_are_those_without_an_otelbench_client_parent(
    scenario_store: Path,
) -> None:
    """The live window (what ``otelbench watch`` reads): the server spans without an otelbench
    client parent are live traffic, the run's own are the benchmark's."""
    with open_store(scenario_store) as store:
        window = extract_window(store, start_unix_ns=T0_NS, end_unix_ns=T0_NS + 10_000 * MS)
        first = extract_window(store, start_unix_ns=T0_NS, end_unix_ns=T0_NS + 5100 * MS)
    live = window.mask(semconv.SOURCE_LIVE)
    ids = np.array(window.requests.span_id)
    assert ids[live].tolist() == [span(200), span(201)]
    assert semconv.SOURCE_BENCHMARK in window.sources()
    live_requests = window.requests
    at = {sid: i for i, sid in enumerate(live_requests.span_id)}
    i, j = at[span(200)], at[span(201)]
    assert [live_requests.parent_span_id[k] for k in (i, j)] == ["", span(999)]
    assert live_requests.client_index.tolist() == [-1] * len(window)
    # "1.5e-02" is valid decimal text too
    assert live_requests.ttft_s[[i, j]].tolist() == [0.015, 0.02]
    assert live_requests.completion_tokens[[i, j]].tolist() == [98.0, 9.0]
    assert live_requests.span_name[i] == live_requests.span_name[j] == semconv.SPAN_VLLM_REQUEST
    assert live_requests.token_offsets(i).tolist() == live_requests.token_offsets(j).tolist() == []
    assert np.isnan(live_requests.preemptions[[i, j]]).all()
    # the window is half-open: span 201 ends at T0 + 5.1 s
    first_ids = np.array(first.requests.span_id)
    assert first_ids[first.mask(semconv.SOURCE_LIVE)].tolist() == [span(200)]


def test_llm_request_spans_have_no_hook_data(scenario_store: Path) -> None:
    with open_store(scenario_store) as store:
        s = extract_run_data(store).server
    assert s.span_name == (semconv.SPAN_VLLM_REQUEST,) * 2
    assert s.is_hook().tolist() == [False, False]
    assert s.finish_reason == ('["length"]',) * 2
    for column in (s.preemptions, s.preemption_events, s.kv_tokens_discarded):
        assert np.isnan(column).all()
    assert s.token_bounds.tolist() == [0, 0, 0]
    assert s.stall_bounds.tolist() == [0, 0, 0]
    assert s.token_offset_us.dtype == np.int64


# --- engine-hook server spans --------------------------------------------------------------------
def test_hook_spans_are_preferred_and_carry_offsets_and_preemption_events(
    hook_store: Path,
) -> None:
    with open_store(hook_store) as store:
        data = extract_run_data(store)
    s = data.server
    assert data.run.run_id == HOOK_RUN_ID
    # H1 has an earlier llm_request span too: the hook span wins; the phase children are ignored
    assert s.span_id == (span(21), span(22), span(23), span(24))
    assert s.client_index.tolist() == [0, 1, 2, 3]
    assert s.span_name == (semconv.SPAN_HOOK_REQUEST,) * 3 + (semconv.SPAN_VLLM_REQUEST,)
    assert s.is_hook().tolist() == [True, True, True, False]
    assert s.request_id == ("cmpl-h1", "cmpl-h2", "cmpl-h3", "cmpl-h4")
    assert s.finish_reason == ("length", "length", "abort", '["length"]')
    assert s.ttft_s.tolist() == [0.059, 0.15, 0.09, 0.03]
    assert s.completion_tokens.tolist() == [4.0, 3.0, 2.0, 2.0]
    assert s.cache_read_tokens[:3].tolist() == [0.0, 0.0, 0.0]
    assert math.isnan(s.cache_read_tokens[3])
    # per-token offsets: JSON text in the store → flat int64 + bounds
    assert s.token_bounds.tolist() == [0, 4, 7, 9, 9]
    assert s.token_offset_us.dtype == np.int64
    assert s.token_offsets(0).tolist() == [60_000, 80_000, 100_000, 100_000]
    assert s.token_offsets(2).tolist() == [90_000, 95_000]
    assert s.token_offsets(3).size == 0
    # preemption counter, events and their attributes (NaN for the llm_request span)
    assert s.preemptions[:3].tolist() == [0.0, 2.0, 1.0]
    assert s.preemption_events[:3].tolist() == [0.0, 2.0, 1.0]
    assert s.kv_tokens_discarded[:3].tolist() == [0.0, 83.0, 30.0]
    assert s.output_phase_token[0] == 2.0  # a think-end token marked the third token
    assert np.isnan(s.output_phase_token[1:]).all()
    assert np.isnan([s.preemptions[3], s.preemption_events[3], s.kv_tokens_discarded[3]]).all()
    assert s.stall_bounds.tolist() == [0, 0, 2, 3, 3]
    assert s.stalls(1).tolist() == [60_000, 5_000]
    assert s.stalls(2).tolist() == [30_000]


def test_a_hook_span_without_offsets_or_counter(tmp_path: Path) -> None:
    w = SpanWriter(tmp_path / "s.duckdb")
    w.run_span("x", {"id": "x"}, T0_NS, MS)
    w.client_span(run_id="x", trace_id=trace(1), span_id=span(1), submit_ns=T0_NS, end_offset_us=9)
    w.hook_span(
        trace_id=trace(1),
        span_id=span(2),
        parent_span_id=span(1),
        start_ns=T0_NS,
        token_offsets_us=None,
        ttft_s="0.001",
        e2e_s="0.002",
        queue_s="0",
        prefill_s="0.001",
        decode_s="0.001",
        prompt_tokens=3,
        preemptions=None,
        # a resumption without its stall attribute is not a stall sample
        events=[preemption(T0_NS + 1, 0, 3), (semconv.EVENT_RESUMPTION, T0_NS + 2, {})],
    )
    w.close()
    with open_store(tmp_path / "s.duckdb") as store:
        s = extract_run_data(store).server
    assert s.token_bounds.tolist() == [0, 0]
    assert math.isnan(s.preemptions[0])
    assert s.preemption_events.tolist() == [1.0]
    assert s.kv_tokens_discarded.tolist() == [3.0]
    assert s.stall_us.size == 0


def test_events_of_other_spans_do_not_count(tmp_path: Path) -> None:
    w = SpanWriter(tmp_path / "s.duckdb")
    w.run_span("x", {"id": "x"}, T0_NS, MS)
    w.client_span(run_id="x", trace_id=trace(1), span_id=span(1), submit_ns=T0_NS, end_offset_us=9)
    w.hook_span(
        trace_id=trace(1),
        span_id=span(2),
        parent_span_id=span(1),
        start_ns=T0_NS,
        token_offsets_us=[5],
        ttft_s="0.000005",
        e2e_s="0.00001",
        queue_s="0",
        prefill_s="0.000005",
        decode_s="0",
        prompt_tokens=3,
        events=[("something.else", T0_NS + 1, {}), resumption(T0_NS + 2, 7)],
    )
    w.close()
    with open_store(tmp_path / "s.duckdb") as store:
        s = extract_run_data(store).server
    assert s.preemption_events.tolist() == [0.0]
    assert s.kv_tokens_discarded.tolist() == [0.0]
    assert s.stall_us.tolist() == [7]


# --- opening stores, dialects and SQL files ----------------------------------------------------
def test_open_store_is_read_only(scenario_store: Path) -> None:
    with open_store(scenario_store) as store, pytest.raises(duckdb.Error, match="read-only"):
        store.connection.execute("DELETE FROM otel_traces")


def test_missing_file_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no span store at"), open_store(tmp_path / "nope.duckdb"):
        pass


def test_a_duckdb_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    duckdb.connect(str(tmp_path / "other.duckdb")).close()
    with (
        pytest.raises(NotAnOtelbenchStore, match="not an otelbench store"),
        open_store(tmp_path / "other.duckdb"),
    ):
        pass


def test_a_file_that_is_not_duckdb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "junk.duckdb").write_bytes(b"not a database at all" * 100)
    with (
        pytest.raises(NotAnOtelbenchStore, match="not a DuckDB database"),
        open_store(tmp_path / "junk.duckdb"),
    ):
        pass


def test_a_store_missing_otel_traces_is_not_an_otelbench_store(tmp_path: Path) -> None:
    SpanWriter(tmp_path / "s.duckdb").close()
    with duckdb.connect(str(tmp_path / "s.duckdb")) as con:
        con.execute("DROP TABLE otel_traces")
    with (
        open_store(tmp_path / "s.duckdb") as store,
        pytest.raises(NotAnOtelbenchStore, match=r"otel_traces.*not an otelbench span store"),
    ):
        list_runs(store)


def test_queries_on_an_open_span_store(scenario_store: Path) -> None:
    with SpanStore.open(scenario_store, read_only=True) as span_store:
        runner = QueryRunner.for_store(span_store)
        assert runner.source == str(scenario_store)
        assert [r.run_id for r in list_runs(runner)] == [OLD_RUN_ID, RUN_ID]


def test_dialects_are_registered() -> None:
    import otelbench.query.clickhouse  # noqa: F401  (registers the ClickHouse dialect)

    assert get_dialect("duckdb").name == "duckdb"
    assert get_dialect("clickhouse").name == "clickhouse"
    with pytest.raises(
        ConfigError, match="unknown SQL dialect 'oracle'; known: clickhouse, duckdb"
    ):
        get_dialect("oracle")


VALUE_PARAMETERS = {"run_id"}


def test_every_sql_parameter_is_a_semconv_name_or_a_declared_value() -> None:
    sql_dir = files("otelbench.query") / "sql" / "duckdb"
    names = sorted(p.name for p in sql_dir.iterdir() if p.name.endswith(".sql"))
    assert names == [
        "_measured_client_filter.sql",  # fragments the queries include
        "_server_span_columns.sql",
        "_server_span_inputs.sql",
        "client_requests.sql",
        "run_guardrail_spans.sql",
        "run_phases.sql",
        "run_server_requests.sql",
        "run_server_sources.sql",
        "runs.sql",
    ]
    used: set[str] = set()
    for name in names:
        text = re.sub(r"--[^\n]*", "", (sql_dir / name).read_text(encoding="utf-8"))
        params = set(re.findall(r"\$([A-Za-z_]\w*)", text))
        assert params <= NAME_PARAMETERS.keys() | PATTERN_PARAMETERS.keys() | VALUE_PARAMETERS, name
        # no attribute name is spelled out in SQL: they are all bound from semconv
        assert "gen_ai." not in text, name
        assert "otelbench." not in text, name
        used |= params
    assert NAME_PARAMETERS.keys() <= used  # no stale names
    assert set(NAME_PARAMETERS.values()) <= {
        v for k, v in vars(semconv).items() if k.isupper() and isinstance(v, str)
    }


def test_a_shared_fragment_is_included_where_a_query_asks_for_it() -> None:
    """``-- @include _server_span_columns``: both server-span queries carry the same column
    list, expanded from one file; an unknown fragment is one clear error."""
    dialect = get_dialect("duckdb")
    fragment = files("otelbench.query") / "sql" / "duckdb" / "_server_span_columns.sql"
    columns = fragment.read_text(encoding="utf-8").rstrip("\n")
    for query, package in (
        ("run_server_requests", "otelbench.query"),
        ("window_server_requests", "otelbench.live"),
    ):
        text = dialect.sql(query, package)
        assert "-- @include" not in text
        assert columns in text
    with pytest.raises(StoreError, match="no duckdb SQL fragment 'nope'"):
        dialect.expand("SELECT\n-- @include nope\nFROM t")


def test_fragments_include_fragments_and_a_cycle_is_refused(tmp_path: Path) -> None:
    """``run_server_requests`` includes ``_measured_client_parents``, which includes
    ``_measured_client_filter`` (a fragment in a fragment), and the span pick
    (``_chosen_server_spans``): each expanded once where it is included. A fragment that includes
    itself is one clear error."""
    import otelbench.query.clickhouse  # noqa: F401  (registers the dialect)

    clickhouse = get_dialect("clickhouse")
    sql = files("otelbench.query") / "sql" / "clickhouse"
    text = clickhouse.sql("run_server_requests")
    assert "-- @include" not in text
    for fragment in ("_chosen_server_spans", "_measured_client_filter"):
        body = (sql / f"{fragment}.sql").read_text(encoding="utf-8").rstrip("\n")
        assert text.count(body) == 1, fragment
    (tmp_path / "_a.sql").write_text("-- @include _b\n")
    (tmp_path / "_b.sql").write_text("SELECT 1\n-- @include _a\n")
    with pytest.raises(StoreError, match="'_a' includes itself"):
        clickhouse.expand("-- @include _a", tmp_path)


def test_duckdb_runs_the_two_largest_queries_at_once_with_the_same_records(
    scenario_store: Path,
) -> None:
    """``extract_run_data`` runs ``run_server_requests`` and ``run_guardrail_spans`` on a second
    DuckDB connection while ``client_requests`` runs (``QueryRunner.concurrent``); the records
    are the ones the queries give one by one. chdb has one session: no second runner, the
    queries run one by one."""
    with open_store(scenario_store) as store:
        together = extract_run_data(store, RUN_ID)
        client = extract_client_requests(store, RUN_ID)
        server = extract_run_server_requests(store, RUN_ID, client)
        guardrails = extract_guardrail_spans(store, RUN_ID, client)
        with store.concurrent() as other:
            assert other is not None
            assert other.connection is not store.connection
            assert other.run("runs")["run_id"].tolist() == store.run("runs")["run_id"].tolist()
        with pytest.raises(duckdb.ConnectionException):  # closed on exit
            other.connection.sql("SELECT 1")
    assert together.client.span_id == client.span_id
    assert together.server.span_id == server.span_id
    assert together.server.client_index.tolist() == server.client_index.tolist()
    assert together.server.token_offset_us.tolist() == server.token_offset_us.tolist()
    assert together.guardrails.span_id == guardrails.span_id
    assert together.guardrails.client_index.tolist() == guardrails.client_index.tolist()
    with open_store(load_chdb(scenario_store)) as store, store.concurrent() as other:
        assert other is None
