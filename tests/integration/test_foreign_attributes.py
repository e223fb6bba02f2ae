"""Spans from foreign producers and malformed stored attributes, on DuckDB and on chdb.

One store holds a run whose spans come from otelbench (well formed), from vLLM's own tracing
(``llm_request`` spans with vLLM's real attribute names, ``vllm/tracing/utils.py``), from another
SDK (most attributes missing) and with wrongly typed values (``gen_ai.usage.output_tokens`` =
``"abc"``, token offsets that are not a JSON integer array, …). Both dialects must extract it
without an error, give equal records and equal rejection counts — each malformed value read as
absent and counted once — and still report every well-formed span of the run.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from otelbench import semconv
from otelbench.query import RunData, extract_run_data, open_store
from otelbench.report import build_report, render_markdown
from tests.unit.query.clickhouse_store import load_chdb
from tests.unit.query.spanstore import (
    MANIFEST,
    MS,
    T0_NS,
    SpanWriter,
    preemption,
    resumption,
    span,
    trace,
)

pytestmark = pytest.mark.integration

RUN = "foreign"

# vLLM's own llm_request attributes (vllm/tracing/utils.py SpanAttributes), as its exporter
# sends them: ints as ints, latencies as doubles.
_VLLM_EXTRA = {
    "gen_ai.request.max_tokens": 16,
    "gen_ai.request.top_p": "1",
    "gen_ai.request.temperature": "0",
    "gen_ai.response.model": "tiny",
    "gen_ai.request.n": 1,
    "gen_ai.usage.num_sequences": 1,
    "gen_ai.latency.time_in_scheduler": "0.0004",
    "gen_ai.latency.time_in_model_forward": "0.01",
    "gen_ai.latency.time_in_model_execute": "0.012",
}

EXPECTED_REJECTIONS = {
    semconv.CLIENT_CHUNK_OFFSETS_US: 1,  # '[1,2,"x"]'
    semconv.CLIENT_CHUNK_TOKENS: 2,  # 'not json'; and counts without valid offsets
    semconv.CLIENT_TTFT_US: 1,  # 'true'
    semconv.GEN_AI_RESPONSE_FINISH_REASONS: 1,  # '[1,2]'
    semconv.GEN_AI_USAGE_INPUT_TOKENS: 1,  # '12.5'
    semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 2,  # 'abc', '' (an empty value)
    semconv.GUARDRAIL_BUSY_US: 1,  # 'slow'
    semconv.GUARDRAIL_CHUNK_BUSY_US: 1,  # '[3,'
    semconv.PREEMPTION_KV_TOKENS_DISCARDED: 1,  # '-'
    semconv.PREEMPTION_STALL_US: 1,  # '1e3'
    semconv.SERVER_PREEMPTIONS: 1,  # 'many'
    semconv.SERVER_END_REASON: 1,  # 'gone'
    semconv.SERVER_END_PHASE: 1,  # 'nowhere'
    semconv.SERVER_PROMPT_TOKENS_COMPUTED: 1,  # '12.5'
    semconv.SERVER_OUTPUT_TOKENS_GENERATED: 1,  # 'x'
    semconv.SERVER_TOKEN_OFFSETS_US: 1,  # '[100, 2.5]'
    semconv.VLLM_LATENCY_E2E: 1,  # '1,5'
    semconv.VLLM_LATENCY_QUEUE: 1,  # 'NaN'
    semconv.VLLM_LATENCY_TTFT: 2,  # 'inf', ' 0.1 '
    semconv.VLLM_USAGE_COMPLETION_TOKENS: 1,  # Arabic-Indic digits
    semconv.VLLM_USAGE_PROMPT_TOKENS: 1,  # '1e2'
}


def _client(s: SpanWriter, n: int, **kw: Any) -> None:
    s.client_span(run_id=RUN, trace_id=trace(n), span_id=span(n), index=n, **kw)


def _hook(s: SpanWriter, n: int, **kw: Any) -> None:
    kw.setdefault("ttft_s", "0.05")
    kw.setdefault("e2e_s", "0.2")
    kw.setdefault("queue_s", "0.001")
    kw.setdefault("prefill_s", "0.04")
    kw.setdefault("decode_s", "0.15")
    kw.setdefault("prompt_tokens", 32)
    s.hook_span(trace_id=trace(n), span_id=span(100 + n), parent_span_id=span(n), **kw)


def _vllm(s: SpanWriter, n: int, attributes: dict[str, Any]) -> None:
    s.span(
        trace_id=trace(n),
        span_id=span(100 + n),
        parent_span_id=span(n),
        name=semconv.SPAN_VLLM_REQUEST,
        kind=semconv.SPAN_KIND_SERVER,
        service="vllm",
        start_ns=T0_NS + n * 100 * MS + MS,
        duration_ns=150 * MS,
        attributes=attributes,
    )


def write_foreign_run(path: Path) -> Path:
    s = SpanWriter(path)
    s.run_span(RUN, {**MANIFEST, "id": RUN}, T0_NS - MS, 2000 * MS)
    t = [T0_NS + n * 100 * MS for n in range(8)]
    # 1, 2: otelbench's own spans, well formed: a hook span with a preemption, an llm_request
    _client(s, 1, submit_ns=t[1], end_offset_us=200_000, chunk_offsets_us=[50_000, 90_000],
            chunk_tokens=[1, 2], input_tokens=32, output_tokens=3)  # fmt: skip
    _hook(s, 1, start_ns=t[1] + MS, token_offsets_us=[40_000, 80_000, 80_000], preemptions=1,
          events=[preemption(t[1] + 60 * MS, 1, 12), resumption(t[1] + 70 * MS, 3000)],
          extra={semconv.SERVER_END_REASON: "cancelled", semconv.SERVER_END_PHASE: "decode",
                 semconv.SERVER_PROMPT_TOKENS_COMPUTED: 32,
                 semconv.SERVER_OUTPUT_TOKENS_GENERATED: 4})  # fmt: skip
    _client(s, 2, submit_ns=t[2], end_offset_us=180_000, chunk_offsets_us=[60_000],
            chunk_tokens=[4], input_tokens=16, output_tokens=4)  # fmt: skip
    _vllm(s, 2, {
        semconv.VLLM_LATENCY_TTFT: "0.058", semconv.VLLM_LATENCY_E2E: "0.17",
        semconv.VLLM_LATENCY_QUEUE: "0.0012", semconv.VLLM_LATENCY_PREFILL: "0.05",
        semconv.VLLM_LATENCY_DECODE: "0.11", semconv.VLLM_LATENCY_INFERENCE: "0.16",
        semconv.VLLM_USAGE_PROMPT_TOKENS: 16, semconv.VLLM_USAGE_COMPLETION_TOKENS: 4,
        semconv.VLLM_REQUEST_ID: "cmpl-2", **_VLLM_EXTRA,
    })  # fmt: skip
    # 3: another SDK: a client span and a server span with almost nothing on them
    s.span(trace_id=trace(3), span_id=span(3), name="POST", kind=semconv.SPAN_KIND_CLIENT,
           start_ns=t[3], duration_ns=90 * MS, attributes={semconv.RUN_ID: RUN})  # fmt: skip
    _vllm(s, 3, {semconv.VLLM_REQUEST_ID: "other-sdk"})
    # 4: wrongly typed client attributes
    _client(s, 4, submit_ns=t[4], end_offset_us=150_000, chunk_offsets_us='[1,2,"x"]',
            chunk_tokens="not json", input_tokens="12.5", output_tokens="abc",
            extra={semconv.CLIENT_TTFT_US: "true",
                   semconv.GEN_AI_RESPONSE_FINISH_REASONS: "[1,2]"})  # fmt: skip
    # 5: a hook span with wrongly typed attributes and event attributes
    _client(s, 5, submit_ns=t[5], end_offset_us=210_000, chunk_offsets_us=[70_000],
            chunk_tokens=[2], output_tokens="")  # fmt: skip
    _hook(s, 5, start_ns=t[5] + MS, token_offsets_us=None, ttft_s="inf", queue_s="NaN",
          prompt_tokens="1e2", preemptions="many",
          extra={semconv.SERVER_END_REASON: "gone", semconv.SERVER_END_PHASE: "nowhere",
                 semconv.SERVER_PROMPT_TOKENS_COMPUTED: "12.5",
                 semconv.SERVER_OUTPUT_TOKENS_GENERATED: "x"},
          events=[(semconv.EVENT_PREEMPTION, t[5] + 50 * MS,
                   {semconv.PREEMPTION_KV_TOKENS_DISCARDED: "-"}),
                  resumption(t[5] + 60 * MS, "1e3")])  # type: ignore[arg-type]  # fmt: skip
    # 6: vLLM's llm_request with wrongly typed values
    _client(s, 6, submit_ns=t[6], end_offset_us=170_000, chunk_offsets_us=[55_000],
            chunk_tokens=[1])  # fmt: skip
    _vllm(s, 6, {
        semconv.VLLM_LATENCY_TTFT: " 0.1 ", semconv.VLLM_LATENCY_E2E: "1,5",
        semconv.VLLM_USAGE_COMPLETION_TOKENS: "\u0661\u0662", semconv.VLLM_REQUEST_ID: "cmpl-6",
        semconv.SERVER_END_REASON: "bogus",  # a hook attribute on vLLM's span: not read
    })  # fmt: skip
    # 7: token offsets that are not a JSON integer array; chunk tokens without offsets
    _client(s, 7, submit_ns=t[7], end_offset_us=160_000, chunk_tokens=[1, 1])
    s.span(trace_id=trace(7), span_id=span(107), parent_span_id=span(7),
           name=semconv.SPAN_HOOK_REQUEST, kind=semconv.SPAN_KIND_SERVER,
           service=semconv.SERVICE_VLLM, start_ns=t[7] + MS, duration_ns=100 * MS,
           attributes={semconv.SERVER_TOKEN_OFFSETS_US: "[100, 2.5]",
                       semconv.VLLM_USAGE_PROMPT_TOKENS: 8})  # fmt: skip
    # guardrail filter spans in run traces: one well formed, one malformed
    for n, busy, chunks in ((1, 40, [10, 30]), (4, "slow", "[3,")):
        s.span(trace_id=trace(n), span_id=span(200 + n), parent_span_id=span(n),
               name=semconv.SPAN_GUARDRAIL_FILTER, kind=semconv.SPAN_KIND_INTERNAL,
               service=semconv.SERVICE_VLLM, start_ns=t[n] + MS // 2, duration_ns=MS,
               attributes={semconv.GUARDRAIL_FILTER_NAME: "pii",
                           semconv.GUARDRAIL_STAGE: "output",
                           semconv.GUARDRAIL_BUSY_US: busy,
                           semconv.GUARDRAIL_CHUNK_BUSY_US: chunks})  # fmt: skip
    s.close()
    return path


def _assert_records_equal(a: object, b: object) -> None:
    for f in fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


def _both(tmp_path: Path) -> tuple[RunData, RunData, Path, str]:
    duck = write_foreign_run(tmp_path / "foreign.duckdb")
    url = load_chdb(duck)
    with open_store(duck) as store:
        from_duck = extract_run_data(store, RUN)
    with open_store(url) as store:
        from_chdb = extract_run_data(store, RUN)
    return from_duck, from_chdb, duck, url


def test_foreign_and_malformed_spans_give_equal_records_and_counts(tmp_path: Path) -> None:
    duck, ch, duck_path, url = _both(tmp_path)
    for name in ("client", "server", "guardrails"):
        _assert_records_equal(getattr(duck, name), getattr(ch, name))
    assert duck.rejected_attributes() == ch.rejected_attributes() == EXPECTED_REJECTIONS

    c = duck.client
    assert c.span_id == tuple(span(n) for n in range(1, 8))  # every measured span is there
    # well-formed spans keep every value
    assert c.output_tokens[:2].tolist() == [3.0, 4.0]
    assert c.input_tokens[:2].tolist() == [32.0, 16.0]
    assert c.chunks(0)[0].tolist() == [50_000, 90_000]
    assert c.chunks(0)[1].tolist() == [1, 2]
    assert c.finish_reasons[0] == ("length",)
    # malformed values are absent, the rest of their span is kept
    assert np.isnan(c.output_tokens[[3, 4]]).all()
    assert np.isnan(c.input_tokens[3])
    assert np.isnan(c.ttft_us[3])
    assert c.end_offset_us[3] == 150_000.0
    assert c.chunks(3)[0].size == 0
    assert c.finish_reasons[3] == ()
    assert c.chunks(6)[1].size == 0  # tokens without offsets are rejected
    assert np.isnan(c.output_tokens[2])  # another SDK: absent, not rejected

    sv = duck.server
    assert sv.span_id == tuple(span(100 + n) for n in (1, 2, 3, 5, 6, 7))
    assert sv.token_offsets(0).tolist() == [40_000, 80_000, 80_000]
    assert sv.stalls(0).tolist() == [3000]
    assert sv.kv_tokens_discarded[0] == 12.0
    assert sv.ttft_s[1] == 0.058
    assert sv.completion_tokens[1] == 4.0
    assert np.isnan(sv.ttft_s[2])
    assert sv.request_id[2] == "other-sdk"
    assert np.isnan(sv.ttft_s[3])
    assert np.isnan(sv.queue_s[3])
    assert np.isnan(sv.preemptions[3])
    assert sv.e2e_s[3] == 0.2
    assert sv.preemption_events[3] == 1.0
    assert sv.kv_tokens_discarded[3] == 0.0
    assert sv.stalls(3).size == 0
    assert np.isnan(sv.ttft_s[4])
    assert np.isnan(sv.e2e_s[4])
    assert np.isnan(sv.completion_tokens[4])
    assert sv.token_offsets(5).size == 0
    assert sv.prompt_tokens[5] == 8.0
    # the hooks' end of a request: parsed on hook spans only, malformed values absent
    assert sv.end_reason == ("cancelled", None, None, None, None, None)
    assert sv.end_phase == ("decode", None, None, None, None, None)
    assert sv.prompt_tokens_computed is not None
    assert sv.output_tokens_generated is not None
    assert sv.prompt_tokens_computed[0] == 32.0
    assert sv.output_tokens_generated[0] == 4.0
    assert np.isnan(sv.prompt_tokens_computed[1:]).all()
    assert np.isnan(sv.output_tokens_generated[1:]).all()
    assert sv.cut().tolist() == [True, False, False, False, False, False]
    assert sv.end_reasons() == ("cancelled",) + ("finished",) * 5

    g = duck.guardrails
    assert g.busy_us.tolist()[0] == 40.0
    assert np.isnan(g.busy_us[1])
    assert g.chunk_busy(0).tolist() == [10, 30]
    assert g.chunk_busy(1).size == 0

    report = build_report(duck_path, RUN)
    assert report == build_report(url, RUN)
    assert report["data_quality"] == {"rejected_attributes": EXPECTED_REJECTIONS}
    assert report["run"]["requests"]["total"] == 7
    assert "- Stored attribute values that could not be parsed (read as absent): " in (
        render_markdown(report)
    )
    assert f"`{semconv.GEN_AI_USAGE_OUTPUT_TOKENS}` 2" in render_markdown(report)


_TEXT = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"-?[0-9]{0,20}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4).map(str),
    st.lists(st.text(max_size=4), max_size=3).map(lambda v: str(v).replace("'", '"')),
)


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example loads chdb
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=st.lists(st.tuples(_TEXT, _TEXT, _TEXT), min_size=20, max_size=40))
def test_any_stored_text_parses_alike_in_both_dialects(
    tmp_path_factory: pytest.TempPathFactory, values: list[tuple[str, str, str]]
) -> None:
    """Arbitrary text in integer, number, integer-array and string-array attributes: DuckDB
    and chdb accept and reject exactly the same values (one pattern set, bound in both)."""
    path = tmp_path_factory.mktemp("fuzz") / "s.duckdb"
    s = SpanWriter(path)
    s.run_span(RUN, {**MANIFEST, "id": RUN}, T0_NS - MS, 10_000 * MS)
    for n, (a, b, c) in enumerate(values, start=1):
        s.client_span(run_id=RUN, trace_id=trace(n), span_id=span(n), submit_ns=T0_NS + n * MS,
                      end_offset_us=1000, chunk_offsets_us=c, chunk_tokens=None,
                      output_tokens=a,  # type: ignore[arg-type]
                      extra={semconv.GEN_AI_RESPONSE_FINISH_REASONS: b})  # fmt: skip
        _vllm(s, n, {semconv.VLLM_LATENCY_TTFT: b, semconv.VLLM_USAGE_PROMPT_TOKENS: a})
    s.close()
    with open_store(path) as store:
        duck = extract_run_data(store, RUN)
    with open_store(load_chdb(path)) as store:
        ch = extract_run_data(store, RUN)
    for name in ("client", "server"):
        _assert_records_equal(getattr(duck, name), getattr(ch, name))
    assert len(duck.client) == len(values)
    assert duck.rejected_attributes() == ch.rejected_attributes()
