"""``metrics.guardrails``: the report's guardrail section from filter spans, hand-computed.

Scenario: the shared client spans A–D (``tests/unit/query/spanstore.write_scenario`` without
server spans) plus guardrail spans as otelbench's middleware and gateway write them:

* A (inside vLLM: children of the client span): input ``banned`` allows, busy 100 µs; output
  ``pii`` allows over 4 SSE events of 50, 20, 30, 10 µs (busy 110), and the output stage held
  them 60, 25, 35, 15 µs (its own measurement, filter plus SSE handling).
* B (through the gateway: a gateway span is the client span's child, and the filter span and
  vLLM's ``llm_request`` span are the gateway span's children): input ``banned`` allows, 300 µs.
* D (failed): input ``banned`` blocks (rule ``keyword[0]``), 80 µs.
* A filter span of live traffic (a trace with no client span): not counted.

So ``banned``: 3 spans, allow 2 / block 1, busy 80, 100, 300 µs → P50 0.1 ms. Input added per
request: A 0.1, B 0.3, D 0.08 ms; the output stage's first event (A): 0.06 ms; TTFT added A
0.16, B 0.3, D 0.08; later events: 0.025, 0.035, 0.015 ms. One refusal (input, ``banned``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench import semconv
from otelbench.report import build_report, render_markdown
from tests.unit.query.spanstore import MS, T0_NS, SpanWriter, span, trace, write_scenario

RESOURCE = {
    semconv.RESOURCE_GUARDRAIL_INPUT_ENABLED: True,
    semconv.RESOURCE_GUARDRAIL_OUTPUT_ENABLED: True,
    semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS: ["banned"],
    semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS: ["pii"],
    semconv.RESOURCE_GUARDRAIL_CONFIG_SHA256: "ab" * 32,
    semconv.RESOURCE_GUARDRAIL_BLOCK_RESPONSE: "error",
}


def filter_span(
    store: SpanWriter,
    n: int,
    *,
    trace_n: int,
    parent: str,
    start_ns: int,
    stage: str,
    name: str,
    decision: str,
    busy_us: int,
    chunk_busy_us: list[int] | None = None,
    added_us: list[int] | None = None,
    rule: str | None = None,
) -> None:
    attrs: dict[str, object] = {
        semconv.GUARDRAIL_FILTER_NAME: name,
        semconv.GUARDRAIL_FILTER_TYPE: "blocklist" if name == "banned" else "pii",
        semconv.GUARDRAIL_STAGE: stage,
        semconv.GUARDRAIL_DECISION: decision,
        semconv.GUARDRAIL_INVOCATIONS: len(chunk_busy_us) if chunk_busy_us else 1,
        semconv.GUARDRAIL_BUSY_US: busy_us,
    }
    if chunk_busy_us is not None:
        attrs[semconv.GUARDRAIL_CHUNK_BUSY_US] = chunk_busy_us
    if added_us is not None:
        attrs[semconv.GUARDRAIL_OUTPUT_ADDED_US] = added_us
    if rule is not None:
        attrs[semconv.GUARDRAIL_RULE] = rule
    store.span(
        trace_id=trace(trace_n),
        span_id=span(n),
        parent_span_id=parent,
        name=semconv.SPAN_GUARDRAIL_FILTER,
        kind=semconv.SPAN_KIND_INTERNAL,
        start_ns=start_ns,
        duration_ns=busy_us * 1000 + 10_000,
        attributes=attrs,
        service=semconv.SERVICE_GUARDRAILS,
        resource=RESOURCE,
    )


@pytest.fixture
def guarded_store(tmp_path: Path) -> Path:
    return write_guarded(tmp_path / "guarded.duckdb")


def write_guarded(path: Path, *, stage_totals: bool = True) -> Path:
    """The scenario above; without ``stage_totals`` the output span lacks the stage's own
    per-event times (a producer that does not record them)."""
    write_scenario(path, with_server=False)
    store = SpanWriter(path)
    try:
        filter_span(
            store,
            201,
            trace_n=1,
            parent=span(1),
            start_ns=T0_NS + 1 * MS,
            stage="input",
            name="banned",
            decision="allow",
            busy_us=100,
        )
        filter_span(
            store,
            202,
            trace_n=1,
            parent=span(1),
            start_ns=T0_NS + 100 * MS,
            stage="output",
            name="pii",
            decision="allow",
            busy_us=110,
            chunk_busy_us=[50, 20, 30, 10],
            added_us=[60, 25, 35, 15] if stage_totals else None,
        )
        store.span(
            trace_id=trace(2),
            span_id=span(300),
            parent_span_id=span(2),
            name=semconv.SPAN_GATEWAY_REQUEST,
            kind=semconv.SPAN_KIND_SERVER,
            start_ns=T0_NS + 501 * MS,
            duration_ns=330 * MS,
            attributes={},
            service=semconv.SERVICE_GATEWAY,
        )
        filter_span(
            store,
            203,
            trace_n=2,
            parent=span(300),
            start_ns=T0_NS + 502 * MS,
            stage="input",
            name="banned",
            decision="allow",
            busy_us=300,
        )
        store.server_span(
            trace_id=trace(2),
            span_id=span(301),
            parent_span_id=span(300),
            start_ns=T0_NS + 510 * MS,
            ttft_s="0.25",
            e2e_s="0.33",
            queue_s="0.2",
            prefill_s="0.05",
            decode_s="0.02",
            prompt_tokens=256,
            completion_tokens=3,
        )
        filter_span(
            store,
            204,
            trace_n=4,
            parent=span(4),
            start_ns=T0_NS + 1501 * MS,
            stage="input",
            name="banned",
            decision="block",
            busy_us=80,
            rule="keyword[0]",
        )
        filter_span(
            store,
            205,
            trace_n=99,
            parent=span(99),
            start_ns=T0_NS + 1 * MS,
            stage="input",
            name="banned",
            decision="allow",
            busy_us=999,
        )
    finally:
        store.close()
    return path


def test_filters_refusals_and_added_latency(guarded_store: Path) -> None:
    g = build_report(guarded_store)["metrics"]["guardrails"]
    assert g["requests_with_guardrail_spans"] == 3
    assert g["spans"] == 4  # the live-traffic span is not in the run's traces
    assert g["spans_outside_measured_requests"] == 0
    banned, pii = g["filters"]
    assert (banned["name"], banned["stage"], banned["type"]) == ("banned", "input", "blocklist")
    assert banned["spans"] == 3
    assert banned["decisions"] == {"allow": 2, "block": 1}
    assert banned["rules"] == {"keyword[0]": 1}
    assert banned["busy_ms_per_request"]["p50"] == pytest.approx(0.1)
    assert (pii["name"], pii["stage"]) == ("pii", "output")
    assert pii["busy_ms_per_event"]["count"] == 4
    assert pii["busy_ms_per_event"]["p50"] == pytest.approx(0.025)
    assert g["refusals"] == {"requests": 1, "by_stage": {"input": 1}, "by_filter": {"banned": 1}}
    added = g["added_latency"]
    assert added["input_ms"]["count"] == 3
    assert added["input_ms"]["mean"] == pytest.approx((0.1 + 0.3 + 0.08) / 3)
    assert added["output_first_event_ms"]["p50"] == pytest.approx(0.06)
    assert added["ttft_ms"]["p50"] == pytest.approx(0.16)
    assert added["output_per_event_ms"]["count"] == 3
    assert added["output_per_event_ms"]["mean"] == pytest.approx(0.025)
    assert g["disclosure"]["input_filters"] == ["banned"]
    assert g["disclosure"]["output_filters"] == ["pii"]
    assert g["disclosure"]["services"] == [semconv.SERVICE_GUARDRAILS]


def test_a_server_span_behind_the_gateway_joins_its_client_request(guarded_store: Path) -> None:
    server = build_report(guarded_store)["metrics"]["server"]
    assert server["requests_joined"] == 1  # B's llm_request span, a child of the gateway span
    assert server["ttft_ms"]["p50"] == pytest.approx(250.0)


def test_guardrails_are_disclosed_and_rendered(guarded_store: Path) -> None:
    report = build_report(guarded_store)
    text = report["configuration"]["guardrails"]
    assert "input filtering enabled (banned)" in text
    assert "output filtering enabled (pii)" in text
    assert "1 request(s) refused" in text
    check = next(c for c in report["compliance"]["checks"] if c["id"] == "guardrail-disclosure")
    assert check["met"] is True
    md = render_markdown(report)
    assert "## Guardrails (draft 4.8.1, 5.10)" in md
    assert "- Refused requests: 1 (by stage: input: 1)" in md


def test_no_guardrail_span_no_section(tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "plain.duckdb", with_server=False)
    report = build_report(path)
    assert "guardrails" not in report["metrics"]
    assert "## Guardrails" not in render_markdown(report)


def test_without_the_stage_totals_the_output_filters_times_are_summed(tmp_path: Path) -> None:
    path = write_guarded(tmp_path / "no-totals.duckdb", stage_totals=False)
    added = build_report(path)["metrics"]["guardrails"]["added_latency"]
    assert added["output_first_event_ms"]["p50"] == pytest.approx(0.05)
    assert added["output_per_event_ms"]["mean"] == pytest.approx(0.02)
    assert added["ttft_ms"]["p50"] == pytest.approx(0.15)
