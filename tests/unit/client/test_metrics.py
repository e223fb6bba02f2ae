"""The GenAI client metrics of the instrumented transports (otelbench.client.metrics), read with the
SDK's in-memory metric reader: names, units, bucket advice, attributes, and values equal to the
numbers the request's span carries (the same measurement, recorded twice).

The target is the scripted httpx transport of test_transport.py (httpx's extension interface);
otelbench's code is never mocked.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.metrics import Meter, NoOpHistogram, NoOpMeterProvider
from opentelemetry.metrics import MeterProvider as ApiMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
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


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[reader])
    yield provider
    provider.shutdown()


def points(reader: InMemoryMetricReader) -> dict[str, tuple[str, list[HistogramDataPoint]]]:
    """Metric name → (unit, its histogram data points)."""
    data = reader.get_metrics_data()
    found: dict[str, tuple[str, list[HistogramDataPoint]]] = {}
    if data is None:
        return found
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == semconv.INSTRUMENTATION_SCOPE
            for metric in sm.metrics:
                dps = [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]
                assert len(dps) == len(list(metric.data.data_points))
                found[metric.name] = (metric.unit or "", dps)
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


async def test_a_streamed_request_records_the_four_metrics_from_its_span_numbers(
    reader: InMemoryMetricReader,
    meter_provider: MeterProvider,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    await send(Target(), meter_provider, tracer_provider)
    span = dict(only_span(span_exporter).attributes or {})
    got = points(reader)
    assert set(got) == {
        semconv.METRIC_CLIENT_OPERATION_DURATION,
        semconv.METRIC_CLIENT_TOKEN_USAGE,
        semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK,
        semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK,
    }
    attrs = {**REQUEST_ATTRS, semconv.GEN_AI_RESPONSE_MODEL: "tiny-resp"}

    unit, [duration] = got[semconv.METRIC_CLIENT_OPERATION_DURATION]
    assert unit == "s"
    assert dict(duration.attributes or {}) == attrs
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS_S
    assert (duration.count, duration.sum) == (1, span[semconv.CLIENT_END_OFFSET_US] / 1e6)

    unit, [ttfc] = got[semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK]
    assert unit == "s"
    assert dict(ttfc.attributes or {}) == attrs
    assert tuple(ttfc.explicit_bounds) == DURATION_BUCKETS_S
    assert (ttfc.count, ttfc.sum) == (1, span[semconv.CLIENT_FIRST_EVENT_OFFSET_US] / 1e6)
    assert ttfc.sum == span[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]

    # one value per output chunk after the first: the gaps between the span's chunk offsets
    offsets = list(span[semconv.CLIENT_CHUNK_OFFSETS_US])
    assert len(offsets) == 3  # "Hello", " big world", "!"
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(offsets)]
    unit, [tpoc] = got[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK]
    assert unit == "s"
    assert dict(tpoc.attributes or {}) == attrs
    assert tpoc.count == 2
    assert tpoc.sum == pytest.approx(sum(gaps), abs=1e-12)
    assert (tpoc.min, tpoc.max) == (min(gaps), max(gaps))

    unit, usage = got[semconv.METRIC_CLIENT_TOKEN_USAGE]
    assert unit == "{token}"
    by_type = {dict(p.attributes or {})[semconv.GEN_AI_TOKEN_TYPE]: p for p in usage}
    assert set(by_type) == {semconv.TOKEN_TYPE_INPUT, semconv.TOKEN_TYPE_OUTPUT}
    assert (by_type["input"].count, by_type["input"].sum) == (1, 5)
    assert (by_type["output"].count, by_type["output"].sum) == (1, 5)
    assert span[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    for p in usage:
        assert tuple(p.explicit_bounds) == TOKEN_BUCKETS
        assert {k: v for k, v in (p.attributes or {}).items() if k != "gen_ai.token.type"} == attrs


async def test_a_failed_request_records_its_duration_with_error_type_only(
    reader: InMemoryMetricReader, meter_provider: MeterProvider, tracer_provider: TracerProvider
) -> None:
    body = b'{"object": "error", "message": "slow down"}'
    target = Target(429, {"content-type": "application/json"}, Pieces([body]))
    await send(target, meter_provider, tracer_provider)
    got = points(reader)
    assert set(got) == {semconv.METRIC_CLIENT_OPERATION_DURATION}
    [duration] = got[semconv.METRIC_CLIENT_OPERATION_DURATION][1]
    assert dict(duration.attributes or {}) == {**REQUEST_ATTRS, semconv.ERROR_TYPE: "429"}


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
    assert set(got) == {semconv.METRIC_CLIENT_OPERATION_DURATION, semconv.METRIC_CLIENT_TOKEN_USAGE}
    sums = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for p in got[semconv.METRIC_CLIENT_TOKEN_USAGE][1]
    }
    assert sums == {"input": 4, "output": 1}


async def test_metrics_are_recorded_when_the_span_is_not_sampled(
    reader: InMemoryMetricReader, meter_provider: MeterProvider
) -> None:
    """The stream is still parsed for the metrics, though no span records."""
    await send(Target(), meter_provider, TracerProvider(sampler=ALWAYS_OFF))
    got = points(reader)
    [tpoc] = got[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK][1]
    assert tpoc.count == 2


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
