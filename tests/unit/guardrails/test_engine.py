"""The filter runtime: timeouts and fail-open/closed, filters that raise, the output window
(redaction across chunk boundaries), spans and metrics. Real SDK providers, in-memory exporters."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otelbench import semconv
from otelbench.guardrails.base import GuardrailFilter, Stage, Verdict
from otelbench.guardrails.config import GuardrailConfig, parse_config
from otelbench.guardrails.engine import BLOCKED, Guardrails
from otelbench.guardrails.registry import register

RELEASE = threading.Event()
"""Set at the end of each test: lets a hung worker thread finish."""


@register
class HangAsync(GuardrailFilter):
    type_name = "test_hang_async"

    async def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        await asyncio.sleep(3600)
        return Verdict.ALLOW


@register
class HangThread(GuardrailFilter):
    type_name = "test_hang_thread"

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        RELEASE.wait(30)
        return Verdict.ALLOW


@register
class SlowInline(GuardrailFilter):
    type_name = "test_slow_inline"
    inline = True

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        time.sleep(0.03)
        return Verdict.block("late")


@register
class Raises(GuardrailFilter):
    type_name = "test_raises"

    def __init__(self, *, inline_run: bool = True) -> None:
        self.inline = inline_run  # type: ignore[misc]

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        raise RuntimeError("filter bug")


@register
class BadVerdict(GuardrailFilter):
    type_name = "test_bad_verdict"
    inline = True

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        return "allow"  # type: ignore[return-value]


@register
class Threaded(GuardrailFilter):
    type_name = "test_threaded"

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        self.thread = threading.current_thread().name
        return Verdict.redact("upper", [t.upper() for t in texts])


@pytest.fixture(autouse=True)
def _release_threads() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def make(
    cfg: dict[str, object],
    tracer_provider: TracerProvider,
    metric_reader: InMemoryMetricReader | None = None,
) -> Guardrails:
    mp = MeterProvider(metric_readers=[metric_reader]) if metric_reader else None
    return Guardrails(parse_config(cfg), tracer_provider=tracer_provider, meter_provider=mp)


@pytest.mark.parametrize("ftype", ["test_hang_async", "test_hang_thread", "test_slow_inline"])
@pytest.mark.parametrize("on_error", ["open", "closed"])
async def test_timeout_fails_open_or_closed(
    ftype: str,
    on_error: str,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    g = make({"input": [{"type": ftype, "timeout_ms": 20, "on_error": on_error}]}, tracer_provider)
    t0 = time.perf_counter()
    outcome = await g.run_input(["hello"], "m", None)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0  # the hung filter did not hold the request
    if on_error == "open":
        assert outcome.blocked is None
        assert outcome.texts == ["hello"]
    else:
        assert outcome.blocked is not None
        assert (outcome.blocked.filter, outcome.blocked.rule) == (ftype, "timeout")
    (span,) = span_exporter.get_finished_spans()
    assert span.name == semconv.SPAN_GUARDRAIL_FILTER
    attrs = dict(span.attributes or {})
    assert attrs[semconv.GUARDRAIL_ERROR] == "timeout"
    assert attrs[semconv.GUARDRAIL_ON_ERROR] == on_error
    assert attrs[semconv.GUARDRAIL_DECISION] == ("allow" if on_error == "open" else "block")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.end_time or 0) - (span.start_time or 0) >= 15_000_000  # the ~20 ms it waited
    await g.aclose()


@pytest.mark.parametrize("inline_run", [True, False])
@pytest.mark.parametrize("on_error", ["open", "closed"])
async def test_filter_that_raises_is_contained(
    inline_run: bool, on_error: str, tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:  # fmt: skip
    g = make(
        {"input": [{"type": "test_raises", "inline_run": inline_run, "on_error": on_error}]},
        tracer_provider,
    )
    outcome = await g.run_input(["x"], None, None)
    assert (outcome.blocked is None) == (on_error == "open")
    if outcome.blocked is not None:
        assert outcome.blocked.rule == "error"
    (span,) = span_exporter.get_finished_spans()
    assert dict(span.attributes or {})[semconv.GUARDRAIL_ERROR] == "RuntimeError"
    await g.aclose()


async def test_bad_verdict_counts_as_error(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    g = make({"input": [{"type": "test_bad_verdict", "on_error": "closed"}]}, tracer_provider)
    outcome = await g.run_input(["x"], None, None)
    assert outcome.blocked is not None
    assert outcome.blocked.rule == "error"
    attrs = dict(span_exporter.get_finished_spans()[0].attributes or {})
    assert attrs[semconv.GUARDRAIL_ERROR] == "bad_verdict"


async def test_input_chain_redacts_then_blocks_with_spans_and_metrics(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    cfg = {
        "input": [
            {"type": "pii", "name": "pii-in"},
            {"type": "test_threaded", "name": "upper"},
            {"type": "blocklist", "keywords": ["[EMAIL]"], "whole_words": False},
            {"type": "max_input_length", "max_chars": 1},
        ]
    }
    g = make(cfg, tracer_provider, metric_reader)
    outcome = await g.run_input(["write to a@b.io"], "m", None)
    assert outcome.blocked is not None
    assert (outcome.blocked.filter, outcome.blocked.rule) == ("blocklist", "keyword[0]")
    spans = span_exporter.get_finished_spans()
    got = [
        (dict(s.attributes or {})[semconv.GUARDRAIL_FILTER_NAME],
         dict(s.attributes or {})[semconv.GUARDRAIL_DECISION],
         dict(s.attributes or {}).get(semconv.GUARDRAIL_RULE))
        for s in spans
    ]  # fmt: skip
    # the max_input_length filter never ran: the chain stops at the first block
    assert got == [
        ("pii-in", "redact", "email"),
        ("upper", "redact", "upper"),
        ("blocklist", "block", "keyword[0]"),
    ]
    assert g.config.input[1].filter.thread.startswith("otelbench-guardrail")  # type: ignore[attr-defined]
    for s in spans:
        attrs = dict(s.attributes or {})
        assert attrs[semconv.GUARDRAIL_STAGE] == "input"
        assert attrs[semconv.GUARDRAIL_INVOCATIONS] == 1
        assert "a@b.io" not in str(attrs)  # no text on spans
    data = metric_reader.get_metrics_data()
    metrics = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    (refusal,) = metrics[semconv.METRIC_GUARDRAIL_REFUSALS].data.data_points
    assert refusal.value == 1
    assert dict(refusal.attributes or {}) == {
        semconv.GUARDRAIL_STAGE: "input",
        semconv.GUARDRAIL_FILTER_NAME: "blocklist",
    }
    durations = metrics[semconv.METRIC_GUARDRAIL_FILTER_DURATION].data.data_points
    assert sum(p.count for p in durations) == 3
    await g.aclose()


async def run_stream(g: Guardrails, chunks: list[str]) -> list[str]:
    session = g.output_session("m", None)
    assert session is not None
    out = []
    for i, chunk in enumerate(chunks):
        released = await session.feed(0, chunk, final=i == len(chunks) - 1)
        assert isinstance(released, str)
        out.append(released)
    session.finish()
    return out


async def test_window_redacts_across_chunk_boundaries(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    g = make({"output_window": 24, "output": [{"type": "pii"}]}, tracer_provider)
    chunks = [
        "Reach me at jo",
        "hn.sm",
        "ith@exam",
        "ple.com or 4111 1111 ",
        "1111 1111",
        " thanks",
    ]
    out = await run_stream(g, chunks)
    assert "".join(out) == "Reach me at [EMAIL] or [CARD] thanks"
    # never more than the window held back
    produced = sum(len(c) for c in chunks)
    assert all(len(c) <= produced for c in out)
    (span,) = span_exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs[semconv.GUARDRAIL_STAGE] == "output"
    assert attrs[semconv.GUARDRAIL_DECISION] == "redact"
    # one entry per SSE event; more invocations than events where a redaction needed checking
    assert len(attrs[semconv.GUARDRAIL_CHUNK_BUSY_US]) == len(chunks)  # type: ignore[arg-type]
    assert attrs[semconv.GUARDRAIL_INVOCATIONS] >= len(chunks)  # type: ignore[operator]
    assert attrs[semconv.GUARDRAIL_WINDOW_CHARS] == 24
    assert semconv.GUARDRAIL_REDACTIONS not in attrs


async def test_per_chunk_mode_misses_what_spans_chunks(tracer_provider: TracerProvider) -> None:
    g = make({"output": [{"type": "pii"}]}, tracer_provider)
    out = await run_stream(g, ["mail a@b.", "io", " or c@d.io"])
    assert out == ["mail a@b.", "io", " or [EMAIL]"]  # nothing held back, per chunk


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=40),
)
def test_window_output_equals_whole_text_redaction(cuts: list[int], window: int) -> None:
    """Split one text anywhere: with a window as long as the longest match, the released text
    is the whole-text redaction, and at no time is more than the window held back."""
    text = "x a@b.io y 5555-5555-5555-4444 z +1 415-555-0132 w " * 2
    pieces, pos = [], 0
    for c in cuts * 20:
        if pos >= len(text):
            break
        pieces.append(text[pos : pos + c])
        pos += c
    if pos < len(text):
        pieces.append(text[pos:])
    g = Guardrails(parse_config({"output_window": max(window, 22), "output": [{"type": "pii"}]}))

    async def go() -> tuple[list[str], list[int]]:
        session = g.output_session(None, None)
        assert session is not None
        out, held = [], []
        for i, piece in enumerate(pieces):
            released = await session.feed(0, piece, final=i == len(pieces) - 1)
            assert isinstance(released, str)
            out.append(released)
            held.append(len(session.pending().get(0, "")))
        return out, held

    out, held = asyncio.run(go())
    whole = g.config.output[0].filter.check([text], Stage.OUTPUT).texts
    assert whole is not None
    assert "".join(out) == whole[0]
    # at most two windows (the window plus a match that straddles its edge)
    assert max(held) <= 2 * max(window, 22)


async def test_output_block_stops_the_stream(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    g = make(
        {"output": [{"type": "blocklist", "name": "bl", "keywords": ["stop"]}]},
        tracer_provider,
        metric_reader,
    )
    session = g.output_session("m", None)
    assert session is not None
    assert await session.feed(0, "fine ", final=False) == "fine "
    assert await session.feed(0, "now stop", final=False) is BLOCKED
    assert await session.feed(0, "more", final=True) is BLOCKED
    assert session.blocked is not None
    assert session.blocked.filter == "bl"
    session.finish()
    session.finish()  # idempotent
    (span,) = span_exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert (attrs[semconv.GUARDRAIL_DECISION], attrs[semconv.GUARDRAIL_RULE]) == (
        "block",
        "keyword[0]",
    )
    assert attrs[semconv.GUARDRAIL_INVOCATIONS] == 2


def test_model_scoping_and_empty_config() -> None:
    g = Guardrails(parse_config({"output": [{"type": "pii", "models": ["a"]}]}))
    assert g.output_session("a", None) is not None
    assert g.output_session("b", None) is None
    assert g.model_scoped
    assert Guardrails(GuardrailConfig()).output_session("a", None) is None


@pytest.mark.parametrize("on_error", ["open", "closed"])
async def test_output_filter_that_raises(on_error: str, tracer_provider: TracerProvider) -> None:
    g = make({"output": [{"type": "test_raises", "on_error": on_error}]}, tracer_provider)
    session = g.output_session("m", None)
    assert session is not None
    released = await session.feed(0, "some text", final=False)
    if on_error == "open":
        assert released == "some text"
    else:
        assert released is BLOCKED
        assert session.blocked is not None
        assert session.blocked.rule == "error"
