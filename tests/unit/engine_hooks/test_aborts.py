"""Requests that end without finishing, driven with plain objects shaped like vLLM 0.32's.

``frontend_state`` is the frontend's ``RequestState`` (``request_id``: the engine's internal id,
``external_req_id``, ``prompt_len``, ``num_cached_tokens``, ``stats``: a ``RequestStateStats``);
``engine_request`` the engine core's ``Request`` (``status`` a ``RequestStatus`` member,
``num_prompt_tokens``, ``num_computed_tokens``, ``num_output_tokens``, ``num_preemptions``,
``events``, ``trace_headers``) — what ``OutputProcessor.abort_requests`` and
``EngineCore.abort_requests`` hold when the hooks' wrappers read them. The account travels
through the real channel in ``tests/integration/test_abort_channel.py``; here it is handed to
the hook directly (:meth:`RequestHook.on_engine_facts`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from otelbench_vllm.aborts import EngineFacts, decode_facts, encode_facts, engine_facts, phase_of
from otelbench_vllm.hook import ACCOUNT_WAIT_S, ENDED_ATTR, RequestHook

from otelbench import semconv

OFFSET_NS = 1_700_000_000_000_000_000
MONO0 = 1000.0
ARRIVAL = MONO0 + OFFSET_NS / 1e9
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
HEADERS = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
ENGINE_ID = "cmpl-7-0-beef"


class Status(enum.Enum):
    """vLLM's ``RequestStatus`` members the phase is read from (by name)."""

    WAITING = enum.auto()
    RUNNING = enum.auto()
    PREEMPTED = enum.auto()
    FINISHED_STOPPED = enum.auto()


def ns(mono_s: float) -> int:
    return int(mono_s * 1e9) + OFFSET_NS


def frontend_state(prompt_len: int = 480) -> SimpleNamespace:
    stats = SimpleNamespace(
        arrival_time=ARRIVAL,
        queued_ts=0.0,
        scheduled_ts=0.0,
        first_token_ts=0.0,
        last_token_ts=0.0,
        first_token_latency=0.0,
    )
    return SimpleNamespace(
        request_id=ENGINE_ID,
        external_req_id="cmpl-7-0",
        prompt_len=prompt_len,
        num_cached_tokens=0,
        stats=stats,
    )


def decode_steps(hook: RequestHook, state: SimpleNamespace, times: list[float]) -> None:
    """Tokens at ``times`` (monotonic s), one per step, after QUEUED +1 ms, SCHEDULED +2 ms."""
    stats = state.stats
    events = [SimpleNamespace(type=1, timestamp=MONO0 + 0.001)]
    events.append(SimpleNamespace(type=2, timestamp=MONO0 + 0.002))
    stats.queued_ts, stats.scheduled_ts = MONO0 + 0.001, MONO0 + 0.002
    hook.on_events(events, stats)
    for t in times:
        out = SimpleNamespace(request_id=ENGINE_ID, new_token_ids=[7], trace_headers=HEADERS)
        hook.on_output(out, t, stats)
        if not stats.first_token_ts:
            stats.first_token_ts, stats.first_token_latency = t, t - MONO0
        stats.last_token_ts = t


def facts(phase: str, events: list[tuple[int, float]], **kw: object) -> EngineFacts:
    values: dict[str, object] = {
        "engine_request_id": ENGINE_ID,
        "phase": phase,
        "num_prompt_tokens": 480,
        "num_computed_tokens": 0,
        "num_output_tokens": 0,
        "num_preemptions": 0,
        "events": events,
        "trace_headers": HEADERS,
        "abort_ts": MONO0 + 0.300,
    }
    values.update(kw)
    return EngineFacts(**values)  # type: ignore[arg-type]


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def hook(
    exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[RequestHook]:
    """A hook; without the ``channel`` fixture it has no abort channel (none in the
    environment), and cut spans end at once."""
    if "channel" not in request.fixturenames:
        monkeypatch.delenv(semconv.ENV_VLLM_ABORT_CHANNEL, raising=False)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    meters = MeterProvider(metric_readers=[reader])
    hook = RequestHook(tracer_provider=provider, offset_ns=OFFSET_NS, meter_provider=meters)
    yield hook
    hook.close()
    provider.shutdown()
    meters.shutdown()


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    found = exporter.get_finished_spans()
    named = {s.name: s for s in found}
    assert len(named) == len(found), [s.name for s in found]
    return named


@pytest.fixture
def channel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An abort channel directory (as the hooks make in vLLM's first process): cut requests
    then wait for the engine core's account, which these tests hand to the hook themselves."""
    monkeypatch.setenv(semconv.ENV_VLLM_ABORT_CHANNEL, str(tmp_path))
    return tmp_path


def requests_counter(reader: InMemoryMetricReader) -> dict[tuple[tuple[str, str], ...], int]:
    data = reader.get_metrics_data()
    assert data is not None
    counts: dict[tuple[tuple[str, str], ...], int] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == semconv.METRIC_SERVER_REQUESTS:
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        key = tuple(sorted((str(k), str(v)) for k, v in point.attributes.items()))
                        counts[key] = int(point.value)  # type: ignore[union-attr]
    return counts


# ----------------------------------------------------------------------------------------------
def test_phase_is_read_from_the_engine_requests_status_and_tokens() -> None:
    assert phase_of("WAITING", 0) == semconv.END_PHASE_QUEUE
    assert phase_of("WAITING_FOR_REMOTE_KVS", 0) == semconv.END_PHASE_QUEUE
    assert phase_of("RUNNING", 0) == semconv.END_PHASE_PREFILL
    assert phase_of("RUNNING", 3) == semconv.END_PHASE_DECODE
    assert phase_of("PREEMPTED", 0) == semconv.END_PHASE_PREEMPTED
    assert phase_of("PREEMPTED", 5) == semconv.END_PHASE_PREEMPTED


def test_engine_facts_read_an_engine_core_request() -> None:
    request = SimpleNamespace(
        request_id=ENGINE_ID,
        status=Status.RUNNING,
        num_prompt_tokens=480,
        num_computed_tokens=112,
        num_output_tokens=0,
        num_preemptions=0,
        events=[SimpleNamespace(type=1, timestamp=1.5), SimpleNamespace(type=2, timestamp=1.75)],
        trace_headers=HEADERS,
    )
    got = engine_facts(request, now=2.0)
    assert got == EngineFacts(
        ENGINE_ID, "prefill", 480, 112, 0, 0, [(1, 1.5), (2, 1.75)], HEADERS, 2.0
    )
    assert decode_facts(encode_facts([got])) == [got]


@pytest.mark.parametrize("payload", [b"not json", b'{"a": 1}', b"[[1, 2]]", b'[["x"]]'])
def test_a_datagram_that_is_not_an_account_is_a_value_error(payload: bytes) -> None:
    with pytest.raises((ValueError, TypeError)):
        decode_facts(payload)


def test_a_cancelled_request_in_decode_ends_its_span_with_what_the_frontend_saw(
    hook: RequestHook, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    state = frontend_state(prompt_len=16)
    decode_steps(hook, state, [MONO0 + 0.010, MONO0 + 0.020, MONO0 + 0.030])
    hook.on_aborted([state])

    spans = spans_by_name(exporter)
    assert set(spans) == {
        semconv.SPAN_HOOK_REQUEST,
        semconv.SPAN_HOOK_QUEUE,
        semconv.SPAN_HOOK_PREFILL,
        semconv.SPAN_HOOK_DECODE,
    }
    server = spans[semconv.SPAN_HOOK_REQUEST]
    attrs = dict(server.attributes or {})
    assert server.status.status_code is StatusCode.UNSET  # the caller's choice, not a failure
    assert semconv.ERROR_TYPE not in attrs
    assert attrs[semconv.SERVER_END_REASON] == semconv.END_REASON_CANCELLED
    assert attrs[semconv.SERVER_END_PHASE] == semconv.END_PHASE_DECODE
    assert attrs[semconv.VLLM_RESPONSE_FINISH_REASON] == "abort"
    assert attrs[semconv.SERVER_TOKEN_OFFSETS_US] == (10000, 20000, 30000)
    assert attrs[semconv.VLLM_USAGE_COMPLETION_TOKENS] == 3
    assert attrs[semconv.SERVER_OUTPUT_TOKENS_GENERATED] == 3
    assert attrs[semconv.SERVER_PROMPT_TOKENS_COMPUTED] == 16
    assert attrs[semconv.VLLM_REQUEST_ID] == "cmpl-7-0"
    assert semconv.VLLM_LATENCY_DECODE not in attrs  # a decode cut short is no decode time
    assert attrs[semconv.VLLM_LATENCY_PREFILL] == pytest.approx(0.008)
    assert server.parent is not None
    assert f"{server.parent.span_id:016x}" == PARENT_ID
    # the decode phase runs until the frontend's abort, after the last token seen
    decode = spans[semconv.SPAN_HOOK_DECODE]
    assert decode.start_time == ns(MONO0 + 0.010)
    assert server.end_time is not None
    assert decode.end_time is not None
    assert ns(MONO0 + 0.030) < decode.end_time <= server.end_time
    assert attrs[semconv.VLLM_LATENCY_INFERENCE] == pytest.approx(
        (decode.end_time - ns(MONO0 + 0.002)) / 1e9, abs=1e-6
    )
    assert hook.stats.requests_cancelled == 1
    assert hook.stats.abort_accounts_missing == 0
    assert requests_counter(reader) == {
        (
            (semconv.SERVER_END_PHASE, semconv.END_PHASE_DECODE),
            (semconv.SERVER_END_REASON, semconv.END_REASON_CANCELLED),
        ): 1
    }


def test_a_request_cut_before_any_output_waits_for_the_engines_account_of_its_queue(
    channel: Path, hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    state = frontend_state()
    hook.on_aborted([state])
    assert exporter.get_finished_spans() == ()  # waiting for the account
    hook.on_engine_facts([facts("queue", [(1, MONO0 + 0.004)])])

    spans = spans_by_name(exporter)
    assert set(spans) == {semconv.SPAN_HOOK_REQUEST, semconv.SPAN_HOOK_QUEUE}
    server = spans[semconv.SPAN_HOOK_REQUEST]
    attrs = dict(server.attributes or {})
    assert attrs[semconv.SERVER_END_PHASE] == semconv.END_PHASE_QUEUE
    assert attrs[semconv.SERVER_TOKEN_OFFSETS_US] == ()
    assert attrs[semconv.SERVER_PROMPT_TOKENS_COMPUTED] == 0
    assert attrs[semconv.SERVER_OUTPUT_TOKENS_GENERATED] == 0
    assert semconv.VLLM_LATENCY_QUEUE not in attrs  # the wait never ended in a scheduling
    assert semconv.VLLM_LATENCY_INFERENCE not in attrs
    # the trace headers came with the account: the frontend never had an output to read them
    assert server.context is not None
    assert f"{server.context.trace_id:032x}" == TRACE_ID
    queue = spans[semconv.SPAN_HOOK_QUEUE]
    assert (queue.start_time, queue.end_time) == (ns(MONO0 + 0.004), ns(MONO0 + 0.300))
    assert server.end_time is not None
    assert server.end_time >= ns(MONO0 + 0.300)


def test_a_request_cut_during_prefill_has_its_prefill_end_at_the_abort(
    channel: Path, hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    hook.on_aborted([frontend_state()])
    events = [(1, MONO0 + 0.004), (2, MONO0 + 0.005)]
    hook.on_engine_facts([facts("prefill", events, num_computed_tokens=112)])

    spans = spans_by_name(exporter)
    assert set(spans) == {
        semconv.SPAN_HOOK_REQUEST,
        semconv.SPAN_HOOK_QUEUE,
        semconv.SPAN_HOOK_PREFILL,
    }
    attrs = dict(spans[semconv.SPAN_HOOK_REQUEST].attributes or {})
    assert attrs[semconv.SERVER_END_PHASE] == semconv.END_PHASE_PREFILL
    assert attrs[semconv.SERVER_PROMPT_TOKENS_COMPUTED] == 112
    assert attrs[semconv.VLLM_LATENCY_QUEUE] == pytest.approx(0.001)
    assert attrs[semconv.VLLM_LATENCY_INFERENCE] == pytest.approx(0.295)
    assert semconv.VLLM_LATENCY_TTFT not in attrs
    prefill = spans[semconv.SPAN_HOOK_PREFILL]
    assert (prefill.start_time, prefill.end_time) == (ns(MONO0 + 0.005), ns(MONO0 + 0.300))


def test_an_account_that_never_comes_ends_the_span_with_the_frontends_knowledge(
    channel: Path, hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    hook.on_aborted([frontend_state()])
    hook.on_engine_facts([facts("queue", [], engine_request_id="another-request")])
    hook.expire(now=0.0)  # long before the deadline
    assert exporter.get_finished_spans() == ()
    hook.expire(now=float("inf"))

    attrs = dict(spans_by_name(exporter)[semconv.SPAN_HOOK_REQUEST].attributes or {})
    assert attrs[semconv.SERVER_END_PHASE] == semconv.END_PHASE_UNKNOWN
    assert semconv.SERVER_PROMPT_TOKENS_COMPUTED not in attrs
    assert hook.stats.abort_accounts_missing == 1
    assert ACCOUNT_WAIT_S >= 1.0


def test_a_request_is_ended_once_whatever_ends_it_again(
    hook: RequestHook, exporter: InMemorySpanExporter
) -> None:
    state = frontend_state(prompt_len=16)
    decode_steps(hook, state, [MONO0 + 0.010])
    hook.on_aborted([state])
    hook.on_aborted([state])  # vLLM's recursive abort of a parent's children (n > 1)
    hook.on_engine_error([state], RuntimeError("late"))
    assert len(exporter.get_finished_spans()) == 4  # one request span and its three phases
    assert state.stats.__dict__[ENDED_ATTR] is True


def test_an_engine_error_ends_every_request_in_flight_as_an_error(
    hook: RequestHook, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    class EngineDeadError(Exception):
        """vLLM's exception when its engine core died (shape only)."""

    decoding, waiting = frontend_state(prompt_len=16), frontend_state()
    decode_steps(hook, decoding, [MONO0 + 0.010, MONO0 + 0.020])
    hook.on_engine_error([decoding, waiting], EngineDeadError())

    servers = [s for s in exporter.get_finished_spans() if s.name == semconv.SPAN_HOOK_REQUEST]
    assert len(servers) == 2
    for span in servers:
        assert span.status.status_code is StatusCode.ERROR
        attrs = dict(span.attributes or {})
        assert attrs[semconv.ERROR_TYPE] == "EngineDeadError"
        assert attrs[semconv.SERVER_END_REASON] == semconv.END_REASON_ERROR
    phases = sorted(str((s.attributes or {})[semconv.SERVER_END_PHASE]) for s in servers)
    assert phases == [semconv.END_PHASE_DECODE, semconv.END_PHASE_UNKNOWN]
    assert hook.stats.requests_failed == 2
    counts = requests_counter(reader)
    assert sum(counts.values()) == 2
    assert all(dict(k)[semconv.SERVER_END_REASON] == semconv.END_REASON_ERROR for k in counts)


@pytest.mark.parametrize(
    ("reason", "end_reason"),
    [("abort", semconv.END_REASON_ABORTED), ("error", semconv.END_REASON_ERROR)],
)
def test_a_finish_by_the_engine_with_abort_or_error_is_an_error(
    hook: RequestHook, exporter: InMemorySpanExporter, reason: str, end_reason: str
) -> None:
    state = frontend_state(prompt_len=16)
    decode_steps(hook, state, [MONO0 + 0.010])
    hook.on_finished(ARRIVAL + 0.5, reason, "cmpl-7-0", 16, state.stats)
    server = spans_by_name(exporter)[semconv.SPAN_HOOK_REQUEST]
    attrs = dict(server.attributes or {})
    assert server.status.status_code is StatusCode.ERROR
    assert attrs[semconv.ERROR_TYPE] == reason
    assert attrs[semconv.SERVER_END_REASON] == end_reason
    assert attrs[semconv.SERVER_END_PHASE] == semconv.END_PHASE_DECODE


def test_a_finished_request_counts_as_finished_without_a_phase(
    hook: RequestHook, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    state = frontend_state(prompt_len=16)
    decode_steps(hook, state, [MONO0 + 0.010, MONO0 + 0.020])
    hook.on_finished(ARRIVAL + 0.5, "length", "cmpl-7-0", 16, state.stats)
    server = spans_by_name(exporter)[semconv.SPAN_HOOK_REQUEST]
    attrs = dict(server.attributes or {})
    assert server.status.status_code is StatusCode.UNSET
    assert semconv.SERVER_END_PHASE not in attrs
    assert attrs[semconv.SERVER_END_REASON] == semconv.END_REASON_FINISHED
    assert requests_counter(reader) == {
        ((semconv.SERVER_END_REASON, semconv.END_REASON_FINISHED),): 1
    }


def test_abort_internals_shaped_as_vllm_0_32_pass_and_each_difference_is_named() -> None:
    from otelbench_vllm._vllm_internals import check_abort_internals

    class OutputProcessor:
        def abort_requests(self, request_ids: object, internal: bool) -> list[str]:
            return []

        def propagate_error(self, e: Exception) -> None:
            return None

    class EngineCore:
        def abort_requests(self, request_ids: list[str]) -> None:
            return None

    assert check_abort_internals(OutputProcessor, EngineCore) is None

    class OldEngineCore:
        def abort_requests(self, requests: list[object]) -> None:
            return None

    assert check_abort_internals(OutputProcessor, OldEngineCore) == (
        "EngineCore.abort_requests('self', 'requests') is not ('self', 'request_ids')"
    )
    assert check_abort_internals(object, EngineCore) == "OutputProcessor.abort_requests is missing"
