"""The GenAI client metrics of the instrumented transports (otelbench.client.metrics), read with the
SDK's in-memory metric reader: names, units, bucket advice, attributes, and values equal to the
numbers the request's span carries (the same measurement, recorded twice).

The target is the scripted httpx transport of test_transport.py (httpx's extension interface);
otelbench's code is never mocked.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import httpx
import pytest
from opentelemetry.metrics import Meter, NoOpHistogram, NoOpMeterProvider
from opentelemetry.metrics import MeterProvider as ApiMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from otelbench import semconv
from otelbench.client import InstrumentedSyncTransport, InstrumentedTransport
from otelbench.client.metrics import DURATION_BUCKETS_S, TOKEN_BUCKETS, GenAIClientMetrics
from tests.unit.client.test_transport import BODY, STREAM, URL, Pieces, Target, only_span

REQUEST_ATTRS = {
    semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_TEXT_COMPLETION,
    semconv.GEN_AI_PROVIDER_NAME: semconv.PROVIDER_OPENAI,
    semconv.GEN_AI_REQUEST_MODEL: "tiny",
    semconv.SERVER_ADDRESS: "llm.test",
    semconv.SERVER_PORT: 8000,
}
"""What every data point carries here (the request's), before the response model."""


Point = HistogramDataPoint | NumberDataPoint


def points(reader: InMemoryMetricReader) -> dict[str, tuple[str, list[Any]]]:
    """Metric name → (unit, its data points: histogram points, or a counter's number points)."""
    data = reader.get_metrics_data()
    found: dict[str, tuple[str, list[Any]]] = {}
    if data is None:
        return found
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == semconv.INSTRUMENTATION_SCOPE
            for metric in sm.metrics:
                found[metric.name] = (metric.unit or "", list(metric.data.data_points))
    return found


async def send(
    target: Target,
    meter_provider: ApiMeterProvider,
    tracer_provider: TracerProvider,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    transport = InstrumentedTransport(
        target, tracer_provider=tracer_provider, meter_provider=meter_provider
    )
    async with httpx.AsyncClient(transport=transport) as client:
        request = client.build_request("POST", URL, json=body or BODY, headers=headers)
        response = await client.send(request, stream=True)
        raw = b"".join([p async for p in response.aiter_raw()])
        await response.aclose()
    return raw


LATEST = {
    semconv.METRIC_CLIENT_INFERENCE_DURATION,
    semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
    semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS,
    semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS,
    semconv.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
    semconv.METRIC_CLIENT_USAGE_REASONING_OUTPUT_TOKENS,
    semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
    semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
}
LEGACY = {
    semconv.METRIC_CLIENT_OPERATION_DURATION,
    semconv.METRIC_CLIENT_TOKEN_USAGE,
    semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK,
    semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK,
}
TEXT_GAPS = semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK


def span_id(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.span_id


async def test_a_streamed_request_records_todays_metrics_from_its_span_numbers(
    reader: InMemoryMetricReader,
    meter_provider: MeterProvider,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    await send(Target(), meter_provider, tracer_provider)
    the_span = only_span(span_exporter)
    span = dict(the_span.attributes or {})
    got = points(reader)
    assert set(got) == {*LATEST, TEXT_GAPS}
    attrs = {**REQUEST_ATTRS, semconv.GEN_AI_RESPONSE_MODEL: "tiny-resp"}

    unit, [duration] = got[semconv.METRIC_CLIENT_INFERENCE_DURATION]
    assert unit == "s"
    assert dict(duration.attributes or {}) == attrs
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS_S
    assert (duration.count, duration.sum) == (1, span[semconv.CLIENT_END_OFFSET_US] / 1e6)
    # the value's exemplar points at the call's span (recorded with it as the context)
    assert [e.span_id for e in duration.exemplars] == [span_id(the_span)]

    unit, [ttfc] = got[semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK]
    assert unit == "s"
    assert dict(ttfc.attributes or {}) == attrs
    assert tuple(ttfc.explicit_bounds) == DURATION_BUCKETS_S
    assert (ttfc.count, ttfc.sum) == (1, span[semconv.CLIENT_FIRST_EVENT_OFFSET_US] / 1e6)
    assert ttfc.sum == span[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]

    # every chunk after the first: " ", "Hello", " big world", the usage-only chunk, "!" (not
    # [DONE], not the comment): 4 gaps
    unit, [tpoc] = got[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK]
    assert unit == "s"
    assert dict(tpoc.attributes or {}) == attrs
    assert tpoc.count == 4
    # they add up to first chunk → last chunk ("!", read with [DONE], which ends the span)
    first, end = span[semconv.CLIENT_FIRST_EVENT_OFFSET_US], span[semconv.CLIENT_END_OFFSET_US]
    assert tpoc.sum == pytest.approx((end - first) / 1e6, abs=1e-9)  # type: ignore[operator]

    # otelbench's own: the chunks carrying text after the first, the span's chunk offsets
    offsets = list(span[semconv.CLIENT_CHUNK_OFFSETS_US])  # type: ignore[arg-type]
    assert len(offsets) == 3  # "Hello", " big world", "!"
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(offsets)]
    unit, [text] = got[TEXT_GAPS]
    assert unit == "s"
    assert text.count == 2
    assert text.sum == pytest.approx(sum(gaps), abs=1e-12)
    assert (text.min, text.max) == (min(gaps), max(gaps))

    modality = {**attrs, semconv.GEN_AI_TOKEN_MODALITY: semconv.TOKEN_MODALITY_TEXT}
    for name, value in (
        (semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS, 5),
        (semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS, 5),
        (semconv.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, 2),
        (semconv.METRIC_CLIENT_USAGE_REASONING_OUTPUT_TOKENS, 0),
    ):
        unit, [counter] = got[name]
        assert isinstance(counter, NumberDataPoint)
        assert (unit, counter.value, dict(counter.attributes or {})) == ("{token}", value, modality)
    for name in (
        semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
        semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
    ):
        unit, [hist] = got[name]
        assert (unit, hist.count, hist.sum) == ("{token}", 1, 5)
        assert tuple(hist.explicit_bounds) == TOKEN_BUCKETS
        assert dict(hist.attributes or {}) == attrs


@pytest.mark.parametrize(
    ("opt_in", "expected"),
    [("gen_ai_legacy", LEGACY), ("http, gen_ai_legacy/dup", LEGACY | LATEST), ("", LATEST)],
)
async def test_the_legacy_names_are_behind_the_migration_switch(
    opt_in: str,
    expected: set[str],
    reader: InMemoryMetricReader,
    meter_provider: MeterProvider,
    tracer_provider: TracerProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(semconv.ENV_SEMCONV_OPT_IN, opt_in)
    await send(Target(), meter_provider, tracer_provider)
    got = points(reader)
    assert set(got) == {*expected, TEXT_GAPS}
    if expected >= LEGACY:
        by_type = {
            dict(p.attributes or {})[semconv.GEN_AI_TOKEN_TYPE]: p.sum
            for p in got[semconv.METRIC_CLIENT_TOKEN_USAGE][1]
        }
        assert by_type == {semconv.TOKEN_TYPE_INPUT: 5, semconv.TOKEN_TYPE_OUTPUT: 5}
        [legacy_tpoc] = got[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK][1]
        assert legacy_tpoc.count == 4


async def test_a_failed_request_records_its_duration_and_zero_tokens_with_error_type(
    reader: InMemoryMetricReader, meter_provider: MeterProvider, tracer_provider: TracerProvider
) -> None:
    body = b'{"object": "error", "message": "slow down"}'
    target = Target(429, {"content-type": "application/json"}, Pieces([body]))
    await send(target, meter_provider, tracer_provider)
    got = points(reader)
    assert set(got) == LATEST - {
        semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
        semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    }
    failed = {**REQUEST_ATTRS, semconv.ERROR_TYPE: "429"}
    [duration] = got[semconv.METRIC_CLIENT_INFERENCE_DURATION][1]
    assert dict(duration.attributes or {}) == failed
    [tokens] = got[semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS][1]
    assert (tokens.sum, dict(tokens.attributes or {})) == (0, failed)
    [counter] = got[semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS][1]
    unknown = {**REQUEST_ATTRS, semconv.GEN_AI_TOKEN_MODALITY: semconv.TOKEN_MODALITY_UNKNOWN}
    assert (counter.value, dict(counter.attributes or {})) == (0, unknown)


async def test_a_non_streamed_request_has_no_chunk_metrics(
    reader: InMemoryMetricReader, meter_provider: MeterProvider, tracer_provider: TracerProvider
) -> None:
    body = (
        b'{"id": "cmpl-9", "model": "tiny", "choices": [{"index": 0, "text": "Hi", '
        b'"finish_reason": "stop"}], "usage": {"prompt_tokens": 4, "completion_tokens": 1}}'
    )
    target = Target(headers={"content-type": "application/json"}, body=Pieces([body]))
    await send(target, meter_provider, tracer_provider, body={**BODY, "stream": False})
    got = points(reader)
    assert set(got) == LATEST - {
        semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
        semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    }
    sums = {
        name: got[name][1][0].sum
        for name in (
            semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
            semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
        )
    }
    assert list(sums.values()) == [4, 1]


async def test_metrics_are_recorded_when_the_span_is_not_sampled(
    reader: InMemoryMetricReader, meter_provider: MeterProvider
) -> None:
    """The stream is still parsed for the metrics, though no span records (no exemplar)."""
    await send(Target(), meter_provider, TracerProvider(sampler=ALWAYS_OFF))
    got = points(reader)
    [tpoc] = got[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK][1]
    assert tpoc.count == 4
    assert not tpoc.exemplars


def test_metrics_are_live_only_with_a_recording_meter_provider(
    meter_provider: MeterProvider,
) -> None:
    assert GenAIClientMetrics(meter_provider).live
    assert not GenAIClientMetrics(NoOpMeterProvider()).live
    # the global provider: the API's placeholder until an application sets one (none is set in
    # the test session)
    assert not GenAIClientMetrics().live


class _BrokenHistogram(NoOpHistogram):
    def record(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("metric exporter misconfigured")


class _BrokenMeterProvider(MeterProvider):
    def get_meter(self, *args: Any, **kwargs: Any) -> Meter:
        meter = super().get_meter(*args, **kwargs)
        meter.create_histogram = lambda name, **k: _BrokenHistogram(name)  # type: ignore[method-assign]
        return meter


def test_a_metrics_failure_never_changes_behaviour(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = InstrumentedSyncTransport(
        Target(), tracer_provider=tracer_provider, meter_provider=_BrokenMeterProvider()
    )
    with (
        caplog.at_level(logging.WARNING, logger="otelbench.client.transport"),
        httpx.Client(transport=transport) as client,
        client.stream("POST", URL, json=BODY) as response,
    ):
        raw = b"".join(response.iter_raw())
    assert raw == b"".join(STREAM)
    assert only_span(span_exporter).attributes is not None
    assert any("failed on metrics" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("header", "expected"), [("2", 2), ("0", None), ("x", None)])
async def test_an_sdk_resend_is_counted_on_the_span(
    header: str,
    expected: int | None,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    await send(
        Target(), NoOpMeterProvider(), tracer_provider, headers={"x-stainless-retry-count": header}
    )
    attrs = dict(only_span(span_exporter).attributes or {})
    assert attrs.get(semconv.HTTP_REQUEST_RESEND_COUNT) == expected
