"""The hooks' bookkeeping and spans, driven with plain objects shaped like vLLM 0.32's.

``output`` is an ``EngineCoreOutput`` (``request_id``, ``new_token_ids``, ``trace_headers``),
``event`` an ``EngineCoreEvent`` (``type``: QUEUED=1 SCHEDULED=2 PREEMPTED=3, ``timestamp``:
``time.monotonic()`` seconds), ``stats`` a ``RequestStateStats`` (``arrival_time`` wall clock,
``*_ts`` monotonic), exactly as ``IterationStats.update_from_*`` receive them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import time
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from otelbench_vllm import _vllm_internals, enabled, register
from otelbench_vllm.export import CountingExporter
from otelbench_vllm.hook import (
    STATE_ATTR,
    HookStats,
    RequestHook,
    RequestTrace,
    mono_to_unix_offset_ns,
    think_end_token_id_from_env,
    token_offsets_us,
)

from otelbench import semconv

OFFSET_NS = 1_700_000_000_000_000_000  # wall = monotonic + 1.7e9 s
MONO0 = 1000.0  # monotonic seconds at arrival
ARRIVAL = MONO0 + OFFSET_NS / 1e9  # the same instant on the wall clock
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def ns(mono_s: float) -> int:
    return int(mono_s * 1e9) + OFFSET_NS


def output(tokens: int, headers: dict[str, str] | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        request_id="cmpl-1-0-abcd", new_token_ids=list(range(tokens)), trace_headers=headers
    )


def event(kind: int, t: float) -> SimpleNamespace:
    return SimpleNamespace(type=kind, timestamp=t)


def request_stats() -> SimpleNamespace:
    return SimpleNamespace(
        arrival_time=ARRIVAL,
        queued_ts=0.0,
        scheduled_ts=0.0,
        first_token_ts=0.0,
        last_token_ts=0.0,
        first_token_latency=0.0,
    )


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def hook(
    exporter: InMemorySpanExporter, metric_reader: InMemoryMetricReader
) -> Iterator[RequestHook]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    meters = MeterProvider(metric_readers=[metric_reader])
    yield RequestHook(tracer_provider=provider, offset_ns=OFFSET_NS, meter_provider=meters)
    provider.shutdown()
    meters.shutdown()


def drive(
    hook: RequestHook,
    steps: Sequence[tuple[float, int, list[SimpleNamespace]]],
    headers: dict[str, str] | None = None,
    prompt_tokens: int = 16,
    request_id: str = "cmpl-1-0",
) -> SimpleNamespace:
    """Play steps (timestamp, new tokens, events) as vLLM's frontend does, then finish."""
    stats = request_stats()
    first = True
    for t, tokens, events in steps:
        # IterationStats.update_from_output: events first (it calls update_from_events), then
        # the step's tokens; vLLM sets first_token_ts / last_token_ts as it goes.
        for e in events:
            if e.type == 1:
                stats.queued_ts = e.timestamp
            elif e.type == 2 and stats.scheduled_ts == 0.0:
                stats.scheduled_ts = e.timestamp
        if events:
            hook.on_events(events, stats)
        hook.on_output(output(tokens, headers), t, stats)
        if first:
            stats.first_token_ts = t
            stats.first_token_latency = t + 0.0002 - MONO0
            first = False
        stats.last_token_ts = t
    hook.on_finished(steps[-1][0] + OFFSET_NS / 1e9 + 0.0003, "length", request_id, prompt_tokens,
                     stats, num_cached_tokens=4)  # fmt: skip
    return stats


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    spans = exporter.get_finished_spans()
    named = {s.name: s for s in spans}
    assert len(named) == len(spans)
    return named


# ----------------------------------------------------------------------------------------------
def test_token_offsets_are_microseconds_since_arrival() -> None:
    arrival_ns = int(ARRIVAL * 1e9)
    assert token_offsets_us(
        [MONO0 + 0.0125, MONO0 + 0.0125, MONO0 + 1.5], arrival_ns, OFFSET_NS
    ) == [
        12500,
        12500,
        1500000,
    ]


def test_request_trace_appends_one_timestamp_per_token_and_pairs_preemptions(
    hook: RequestHook,
) -> None:
    stats = request_stats()
    hook.on_output(output(1), 1.0, stats)
    hook.on_output(output(3), 2.0, stats)  # one step, three tokens (speculative): they share it
    hook.on_output(output(0), 3.0, stats)
    state = stats.__dict__[STATE_ATTR]
    assert isinstance(state, RequestTrace)
    state.on_event(2, 2.5)  # SCHEDULED without a preemption before it: not a resumption
    state.on_event(3, 4.0)
    state.on_event(2, 4.5)
    assert state.token_ts == [1.0, 2.0, 2.0, 2.0]
    assert state.preemptions == [(4.0, 4)]
    assert state.resumptions == [4.5]


def test_finished_request_gives_a_server_span_with_phases_and_offsets(
    hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    traceparent = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    steps = [
        (MONO0 + 0.010, 1, [event(1, MONO0 + 0.001), event(2, MONO0 + 0.002)]),
        (MONO0 + 0.020, 1, []),
        (MONO0 + 0.030, 2, []),
    ]
    stats = drive(hook, steps, traceparent)

    spans = by_name(exporter)
    assert set(spans) == {
        semconv.SPAN_HOOK_REQUEST,
        semconv.SPAN_HOOK_QUEUE,
        semconv.SPAN_HOOK_PREFILL,
        semconv.SPAN_HOOK_DECODE,
    }
    server = spans[semconv.SPAN_HOOK_REQUEST]
    assert server.kind is SpanKind.SERVER
    assert server.context is not None
    assert server.parent is not None
    assert f"{server.context.trace_id:032x}" == TRACE_ID
    assert f"{server.parent.span_id:016x}" == PARENT_ID
    assert server.start_time == int(ARRIVAL * 1e9)
    assert server.end_time == int((MONO0 + 0.030 + OFFSET_NS / 1e9 + 0.0003) * 1e9)
    attrs = dict(server.attributes or {})
    assert attrs.pop(semconv.SERVER_TOKEN_OFFSETS_US) == (10000, 20000, 30000, 30000)
    assert attrs == pytest.approx(
        {
            semconv.VLLM_REQUEST_ID: "cmpl-1-0",
            semconv.VLLM_RESPONSE_FINISH_REASON: "length",
            semconv.SERVER_END_REASON: semconv.END_REASON_FINISHED,
            semconv.VLLM_USAGE_PROMPT_TOKENS: 16,
            semconv.VLLM_USAGE_COMPLETION_TOKENS: 4,
            semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 4,
            semconv.VLLM_LATENCY_E2E: 0.0303,
            semconv.VLLM_LATENCY_TTFT: 0.0102,
            semconv.VLLM_LATENCY_QUEUE: 0.001,
            semconv.VLLM_LATENCY_PREFILL: 0.008,
            semconv.VLLM_LATENCY_DECODE: 0.020,
            semconv.VLLM_LATENCY_INFERENCE: 0.028,
            semconv.SERVER_PREEMPTIONS: 0,
            semconv.SERVER_MONO_TO_UNIX_OFFSET_NS: OFFSET_NS,
            semconv.SERVER_ENGINE_REQUEST_ID: "cmpl-1-0-abcd",
        },
        abs=1e-6,
    )
    assert server.events == ()
    phases = [
        (semconv.SPAN_HOOK_QUEUE, MONO0 + 0.001, MONO0 + 0.002),
        (semconv.SPAN_HOOK_PREFILL, MONO0 + 0.002, MONO0 + 0.010),
        (semconv.SPAN_HOOK_DECODE, MONO0 + 0.010, MONO0 + 0.030),
    ]
    for name, start, end in phases:
        child = spans[name]
        assert child.parent is not None
        assert child.parent.span_id == server.context.span_id
        assert child.kind is SpanKind.INTERNAL
        assert (child.start_time, child.end_time) == (ns(start), ns(end))
    assert STATE_ATTR not in vars(stats)  # the state went with the finish
    assert hook.stats.requests_traced == 1
    assert hook.stats.spans_ended == 4


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([[5], [7], [99], [8]], 3),  # think-end token alone in a step: the next token is output
        ([[5], [7, 99, 8], [9]], 3),  # merged step: the token after it in the same step
        ([[5], [7, 99]], 3),  # finished right after the think phase: index == token count
        ([[5], [7], [8]], None),  # never seen: no attribute
    ],
)
def test_think_end_token_marks_the_first_output_token(
    exporter: InMemorySpanExporter, steps: list[list[int]], expected: int | None
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    hook = RequestHook(
        tracer_provider=provider, offset_ns=OFFSET_NS, meter_provider=meters, think_end_token_id=99
    )
    stats = request_stats()
    for i, ids in enumerate(steps):
        out = SimpleNamespace(request_id="cmpl-1-0-abcd", new_token_ids=ids, trace_headers=None)
        hook.on_output(out, MONO0 + 0.01 * (i + 1), stats)
    stats.first_token_ts, stats.last_token_ts = MONO0 + 0.01, MONO0 + 0.01 * len(steps)
    hook.on_finished(MONO0 + 1 + OFFSET_NS / 1e9, "stop", "cmpl-1-0", 4, stats)
    attrs = dict(by_name(exporter)[semconv.SPAN_HOOK_REQUEST].attributes or {})
    assert attrs.get(semconv.SERVER_OUTPUT_PHASE_TOKEN) == expected
    provider.shutdown()
    meters.shutdown()


def test_think_end_token_id_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(semconv.ENV_VLLM_THINK_END_TOKEN_ID, " 151668 ")
    assert think_end_token_id_from_env() == 151668
    monkeypatch.setenv(semconv.ENV_VLLM_THINK_END_TOKEN_ID, "</think>")
    assert think_end_token_id_from_env() is None
    assert "is not a token id" in caplog.text
    monkeypatch.delenv(semconv.ENV_VLLM_THINK_END_TOKEN_ID)
    assert think_end_token_id_from_env() is None


def test_preemptions_and_resumptions_are_span_events(
    hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    steps = [
        (MONO0 + 0.010, 1, [event(1, MONO0 + 0.001), event(2, MONO0 + 0.002)]),
        (MONO0 + 0.020, 1, []),
        # preempted at +25 ms with 2 tokens out, resumed at +80 ms, preempted again, resumed
        (MONO0 + 0.090, 1, [event(3, MONO0 + 0.025), event(2, MONO0 + 0.080)]),
        (MONO0 + 0.200, 1, [event(3, MONO0 + 0.100), event(2, MONO0 + 0.150)]),
    ]
    drive(hook, steps, headers=None, prompt_tokens=16)

    server = by_name(exporter)[semconv.SPAN_HOOK_REQUEST]
    assert server.parent is None  # no traceparent: a root span
    assert server.attributes is not None
    assert server.attributes[semconv.SERVER_PREEMPTIONS] == 2
    assert server.attributes[semconv.SERVER_TOKEN_OFFSETS_US] == (10000, 20000, 90000, 200000)
    got = [(e.name, e.timestamp, dict(e.attributes or {})) for e in server.events]
    assert got == [
        (semconv.EVENT_PREEMPTION, ns(MONO0 + 0.025),
         {semconv.PREEMPTION_OUTPUT_TOKENS: 2, semconv.PREEMPTION_KV_TOKENS_DISCARDED: 18}),
        (semconv.EVENT_RESUMPTION, ns(MONO0 + 0.080), {semconv.PREEMPTION_STALL_US: 55000}),
        (semconv.EVENT_PREEMPTION, ns(MONO0 + 0.100),
         {semconv.PREEMPTION_OUTPUT_TOKENS: 3, semconv.PREEMPTION_KV_TOKENS_DISCARDED: 19}),
        (semconv.EVENT_RESUMPTION, ns(MONO0 + 0.150), {semconv.PREEMPTION_STALL_US: 50000}),
    ]  # fmt: skip


def test_a_request_finished_without_outputs_still_gives_a_span(
    hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    stats = request_stats()
    hook.on_finished(ARRIVAL + 0.5, "abort", "cmpl-2-0", 16, stats)
    spans = by_name(exporter)
    assert set(spans) == {semconv.SPAN_HOOK_REQUEST}  # no phase ran, so no child spans
    attrs = spans[semconv.SPAN_HOOK_REQUEST].attributes or {}
    assert attrs[semconv.SERVER_TOKEN_OFFSETS_US] == ()
    assert attrs[semconv.VLLM_RESPONSE_FINISH_REASON] == "abort"
    assert semconv.VLLM_LATENCY_TTFT not in attrs


def test_the_clock_offset_lies_within_the_reads_around_it() -> None:
    """The offset is wall minus monotonic at one instant within the call: it lies between the
    offsets bracketing the call from outside (a wall read before it against a monotonic read
    after it, and the reverse)."""
    for _ in range(100):
        wall_before, mono_before = time.time_ns(), time.monotonic_ns()
        offset = mono_to_unix_offset_ns()
        mono_after, wall_after = time.monotonic_ns(), time.time_ns()
        assert wall_before - mono_after <= offset <= wall_after - mono_before


def test_the_clock_offset_is_read_for_each_request_not_once(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a fixed offset, each span carries the wall-clock minus monotonic offset of the
    moment its record was made: a wall-clock step (NTP, a VM resumed) between two requests shows
    in the second request's offset, so its phases stay on the wall clock of its own time. The
    step is made by shifting ``time.time_ns`` (the standard library's clock, not our code)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = RequestHook(tracer_provider=provider)
    offsets = []
    for step_ns in (0, 5_000_000_000):
        real = time.time_ns
        monkeypatch.setattr(time, "time_ns", lambda real=real, step=step_ns: real() + step)
        exporter.clear()
        hook.on_finished(time.time(), "length", f"cmpl-{step_ns}-0", 16, request_stats())
        attrs = by_name(exporter)[semconv.SPAN_HOOK_REQUEST].attributes or {}
        offsets.append(int(attrs[semconv.SERVER_MONO_TO_UNIX_OFFSET_NS]))
        monkeypatch.undo()
    provider.shutdown()
    # the second record's offset moved with the step (the clocks' reads differ by microseconds)
    assert abs((offsets[1] - offsets[0]) - 5_000_000_000) < 50_000_000, offsets


# ----------------------------------------------------------------------------------------------
class _Failing(SpanExporter):
    """An exporter whose collector is down (this is the SDK's interface, not our code)."""

    def __init__(self, raise_: bool) -> None:
        self.raise_ = raise_

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.raise_:
            raise ConnectionError("nothing listening")
        return SpanExportResult.FAILURE


def test_counting_exporter_counts_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    stats = HookStats()
    inner = InMemorySpanExporter()
    spans: list[Any] = [object(), object()]
    assert CountingExporter(inner, stats).export(spans) is SpanExportResult.SUCCESS
    assert CountingExporter(_Failing(False), stats).export(spans) is SpanExportResult.FAILURE
    raising = CountingExporter(_Failing(True), stats)
    with caplog.at_level(logging.ERROR, logger="vllm.plugins.otelbench"):
        assert raising.export(spans) is SpanExportResult.FAILURE
        assert raising.export(spans[:1]) is SpanExportResult.FAILURE
    assert len(caplog.records) == 1  # logged once, counted every time
    assert stats.spans_exported == 2
    assert stats.spans_export_failed == 5
    assert stats.export_errors == 2


# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), ("", False), ("0", False), ("no", False), ("1", True), ("true", True)],
)
def test_enabled_only_by_the_switch(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    if value is None:
        monkeypatch.delenv(semconv.ENV_VLLM_HOOKS, raising=False)
    else:
        monkeypatch.setenv(semconv.ENV_VLLM_HOOKS, value)
    assert enabled() is expected


def test_register_does_nothing_when_not_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(semconv.ENV_VLLM_HOOKS, raising=False)
    monkeypatch.setattr(_vllm_internals, "_refused", False)
    register()
    assert _vllm_internals.active_hook() is None
    assert _vllm_internals._refused is False  # it did not even look for vLLM


def test_without_a_known_vllm_the_hooks_disable_themselves_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(semconv.ENV_VLLM_HOOKS, "1")
    monkeypatch.setattr(_vllm_internals, "_refused", False)
    with caplog.at_level(logging.WARNING, logger="vllm.plugins.otelbench"):
        register()  # vLLM is not installed in otelbench's env
        register()
        assert _vllm_internals.install() is None
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "otelbench hooks disabled" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("version", "level"),
    [("0.32.0", "tested"), ("0.32.1.dev3+gabc", "tested"), ("0.30.0+cpu", "tested"),
     ("0.31.0", "tested"), ("0.33.0", "conformed"), ("0.29.0", "untested"),
     ("0.3.2", "untested"), ("1.32.0", "untested"), ("unknown", "untested")],
)  # fmt: skip
def test_support_level_says_how_well_a_release_is_known(version: str, level: str) -> None:
    assert _vllm_internals.support_level(version) == level


@pytest.mark.parametrize(
    ("version", "needs"),
    [("0.29.0", True), ("0.31.0+cpu", True), ("0.32.0", True), ("0.33.0", True),
     ("1.0.0", True), ("unknown", True)],
)  # fmt: skip
def test_every_known_release_needs_vllms_tracer_for_trace_headers(
    version: str, needs: bool
) -> None:
    assert _vllm_internals.needs_tracing_flag(version) is needs


def test_a_release_that_passes_trace_headers_on_is_told_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_vllm_internals, "TRACE_HEADERS_ALWAYS_SINCE", (0, 34))
    assert _vllm_internals.needs_tracing_flag("0.33.9") is True
    assert _vllm_internals.needs_tracing_flag("0.34.0") is False
    assert _vllm_internals.needs_tracing_flag("garbage") is True


# Stand-ins for vLLM's own classes (vLLM is not in otelbench's env): the shapes check_internals
# reads, as vLLM 0.32's v1/metrics/stats.py and v1/engine/__init__.py declare them.
class _EventType(enum.IntEnum):
    QUEUED = 1
    SCHEDULED = 2
    PREEMPTED = 3


@dataclasses.dataclass
class _RequestStateStats:
    arrival_time: float = 0.0
    queued_ts: float = 0.0
    scheduled_ts: float = 0.0
    first_token_ts: float = 0.0
    last_token_ts: float = 0.0
    first_token_latency: float = 0.0
    num_generation_tokens: int = 0


class _IterationStats:
    def update_from_output(
        self, output: Any, engine_core_timestamp: float, is_prefilling: bool, req_stats: Any,
        lora_states: Any, lora_name: str | None,
    ) -> None: ...  # fmt: skip

    def update_from_events(
        self, req_id: str, events: Any, is_prefilling: bool, req_stats: Any, lora_states: Any,
        lora_name: str | None,
    ) -> None: ...  # fmt: skip

    def update_from_finished_request(
        self, finish_reason: Any, request_id: str, num_prompt_tokens: int,
        max_tokens_param: int | None, req_stats: Any, num_cached_tokens: int = 0,
    ) -> None: ...  # fmt: skip


def test_internals_shaped_as_vllm_0_32_pass_the_capability_check() -> None:
    assert _vllm_internals.check_internals(_IterationStats, _EventType, _RequestStateStats) is None


def _renamed_param(self: Any, finish_reason: Any, req_id: str, num_prompt_tokens: int,
                   max_tokens_param: int | None, req_stats: Any,
                   num_cached_tokens: int = 0) -> None: ...  # fmt: skip


class _ShiftedEvents(enum.IntEnum):
    QUEUED = 1
    SCHEDULED = 2
    PREEMPTED = 4


@dataclasses.dataclass
class _NoQueuedTs:
    arrival_time: float = 0.0
    scheduled_ts: float = 0.0
    first_token_ts: float = 0.0
    last_token_ts: float = 0.0
    first_token_latency: float = 0.0


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("renamed parameter", "IterationStats.update_from_finished_request("),
        ("missing method", "IterationStats.update_from_events is missing"),
        ("event value", "EngineCoreEventType.PREEMPTED is 4, not 3"),
        ("stats field", "RequestStateStats lacks queued_ts"),
        ("not a dataclass", "RequestStateStats is not a dataclass"),
    ],
)
def test_each_difference_in_vllms_internals_is_named(change: str, problem: str) -> None:
    stats_cls: type = _IterationStats
    events: Any = _EventType
    request_stats: type = _RequestStateStats
    if change == "renamed parameter":
        stats_cls = type("IterationStats", (_IterationStats,), {})
        stats_cls.update_from_finished_request = _renamed_param  # type: ignore[attr-defined]
    elif change == "missing method":
        stats_cls = type("IterationStats", (), {
            "update_from_output": _IterationStats.update_from_output,
            "update_from_finished_request": _IterationStats.update_from_finished_request,
        })  # fmt: skip
    elif change == "event value":
        events = _ShiftedEvents
    elif change == "stats field":
        request_stats = _NoQueuedTs
    else:
        request_stats = type("RequestStateStats", (), {})
    found = _vllm_internals.check_internals(stats_cls, events, request_stats)
    assert found is not None
    assert found.startswith(problem)


def test_the_hooks_resource_names_the_vllm_version_and_support(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from otelbench_vllm import __version__
    from otelbench_vllm.export import make_meter_provider, make_tracer_provider

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    hook = RequestHook(offset_ns=OFFSET_NS)
    hook.describe_engine("0.31.0+cpu", "tested")
    provider = make_tracer_provider(hook.stats, hook.resource_attributes)
    meters = make_meter_provider(prometheus=False, attributes=hook.resource_attributes)
    try:
        for resource in (provider.resource, meters._sdk_config.resource):
            attrs = dict(resource.attributes)
            assert attrs[semconv.RESOURCE_VLLM_VERSION] == "0.31.0+cpu"
            assert attrs[semconv.RESOURCE_HOOK_SUPPORT] == "tested"
            assert attrs[semconv.RESOURCE_TELEMETRY_DISTRO_NAME] == semconv.HOOKS_DISTRIBUTION
            assert attrs[semconv.RESOURCE_TELEMETRY_DISTRO_VERSION] == __version__
            assert attrs["service.name"] == semconv.SERVICE_VLLM
    finally:
        provider.shutdown()
        meters.shutdown()


def test_a_request_without_trace_headers_warns_once_where_vllm_needs_its_tracer(
    hook: RequestHook, caplog: pytest.LogCaptureFixture
) -> None:
    hook.describe_engine("0.31.0", "tested")
    with caplog.at_level(logging.WARNING, logger="vllm.plugins.otelbench"):
        drive(hook, [(MONO0 + 0.01, 1, [])])
        assert caplog.records == []  # the tracer is on (or the version passes headers)
        hook.trace_headers_need_tracer = True
        traced = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
        drive(hook, [(MONO0 + 0.01, 1, [])], headers=traced)
        assert caplog.records == []  # headers arrived
        drive(hook, [(MONO0 + 0.01, 1, [])])
        drive(hook, [(MONO0 + 0.01, 1, [])])
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    assert "vLLM 0.31.0" in messages[0]
    assert "--otlp-traces-endpoint" in messages[0]


def test_offsets_attribute_is_compact_json_in_the_store() -> None:
    # the store keeps attribute values as strings: an int array arrives as JSON text
    offsets = token_offsets_us(
        [MONO0 + i * 0.01 for i in range(1, 4)], int(ARRIVAL * 1e9), OFFSET_NS
    )
    assert json.loads(json.dumps(offsets)) == [10000, 20000, 30000]
