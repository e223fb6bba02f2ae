"""The hooks' metrics: what one finished request records, read back with the SDK's in-memory
reader (the same plain vLLM-shaped objects as ``test_hook.py``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from otelbench_vllm.export import make_metric_readers
from otelbench_vllm.hook import HookStats, RequestHook
from otelbench_vllm.metrics import (
    DEFAULT_ITL_RECORDS,
    DURATION_BUCKETS_S,
    HookMetrics,
    itl_records_from_env,
)

from otelbench import semconv

from .test_hook import ARRIVAL, MONO0, OFFSET_NS, drive, event, request_stats

DURATIONS = (
    semconv.METRIC_SERVER_TTFT,
    semconv.METRIC_SERVER_TPOT,
    semconv.METRIC_SERVER_REQUEST_DURATION,
    semconv.METRIC_HOOK_QUEUE,
    semconv.METRIC_HOOK_PREFILL,
    semconv.METRIC_HOOK_DECODE,
    semconv.METRIC_HOOK_ITL,
)


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def hook(
    metric_reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RequestHook]:
    monkeypatch.setenv(semconv.ENV_VLLM_ITL_RECORDS, "16")  # opt in: every gap of these requests
    meters = MeterProvider(metric_readers=[metric_reader])
    yield RequestHook(tracer_provider=TracerProvider(), offset_ns=OFFSET_NS, meter_provider=meters)
    meters.shutdown()


def collect(reader: InMemoryMetricReader) -> dict[str, Any]:
    """Metric name → its one data point."""
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, Any] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == semconv.INSTRUMENTATION_SCOPE_HOOKS
            for metric in sm.metrics:
                [point] = list(metric.data.data_points)
                points[metric.name] = point
                if metric.name in DURATIONS:
                    assert metric.unit == "s"
    return points


def test_a_finished_request_records_every_histogram_once_and_each_gap(
    hook: RequestHook, metric_reader: InMemoryMetricReader
) -> None:
    steps = [
        (MONO0 + 0.010, 1, [event(1, MONO0 + 0.001), event(2, MONO0 + 0.002)]),
        (MONO0 + 0.020, 1, []),
        (MONO0 + 0.090, 1, [event(3, MONO0 + 0.025), event(2, MONO0 + 0.080)]),
        (MONO0 + 0.200, 2, [event(3, MONO0 + 0.100), event(2, MONO0 + 0.150)]),
    ]
    drive(hook, steps)
    points = collect(metric_reader)

    def hist(name: str) -> HistogramDataPoint:
        point = points[name]
        assert isinstance(point, HistogramDataPoint)
        assert tuple(point.explicit_bounds) == (
            DURATION_BUCKETS_S if name in DURATIONS else point.explicit_bounds
        )
        return point

    for name in DURATIONS:
        if name != semconv.METRIC_HOOK_ITL:
            assert hist(name).count == 1, name
    assert hist(semconv.METRIC_SERVER_TTFT).sum == pytest.approx(0.0102)
    assert hist(semconv.METRIC_HOOK_QUEUE).sum == pytest.approx(0.001)
    assert hist(semconv.METRIC_HOOK_PREFILL).sum == pytest.approx(0.008)
    assert hist(semconv.METRIC_HOOK_DECODE).sum == pytest.approx(0.190)
    assert hist(semconv.METRIC_SERVER_TPOT).sum == pytest.approx(0.190 / 4)  # 5 tokens
    assert hist(semconv.METRIC_SERVER_REQUEST_DURATION).sum == pytest.approx(0.2003)
    itl = hist(semconv.METRIC_HOOK_ITL)
    assert itl.count == 4  # 5 tokens, the last two from one step (a 0 gap)
    assert itl.sum == pytest.approx(0.190)
    assert itl.min == 0.0
    assert itl.max == pytest.approx(0.110)
    preempt = hist(semconv.METRIC_HOOK_REQUEST_PREEMPTIONS)
    assert (preempt.count, preempt.sum) == (1, 2)
    assert points[semconv.METRIC_HOOK_PREEMPTIONS].value == 2
    assert points[semconv.METRIC_HOOK_SPANS_ENDED].value == 4  # server + 3 phases
    assert points[semconv.METRIC_HOOK_SPANS_EXPORTED].value == 0  # no CountingExporter here
    assert points[semconv.METRIC_HOOK_SPANS_FAILED].value == 0
    assert points[semconv.METRIC_HOOK_SPANS_UNACCOUNTED].value == 4


def test_a_request_without_tokens_records_its_duration_only(
    hook: RequestHook, metric_reader: InMemoryMetricReader
) -> None:
    hook.on_finished(ARRIVAL + 0.5, "abort", "cmpl-2-0", 16, request_stats())
    points = collect(metric_reader)
    assert points[semconv.METRIC_SERVER_REQUEST_DURATION].count == 1
    for name in DURATIONS:
        if name != semconv.METRIC_SERVER_REQUEST_DURATION:
            assert name not in points
    assert points[semconv.METRIC_HOOK_REQUEST_PREEMPTIONS].sum == 0
    assert semconv.METRIC_HOOK_PREEMPTIONS not in points  # never added to


def test_health_counters_follow_the_hook_stats() -> None:
    reader = InMemoryMetricReader()
    stats = HookStats()
    HookMetrics(MeterProvider(metric_readers=[reader]), stats)
    stats.add("spans_ended", 10)
    stats.add("spans_exported", 7)
    stats.add("spans_export_failed", 2)
    points = collect(reader)
    assert points[semconv.METRIC_HOOK_SPANS_ENDED].value == 10
    assert points[semconv.METRIC_HOOK_SPANS_EXPORTED].value == 7
    assert points[semconv.METRIC_HOOK_SPANS_FAILED].value == 2
    assert points[semconv.METRIC_HOOK_SPANS_UNACCOUNTED].value == 1


def test_buckets_span_sub_millisecond_to_minutes() -> None:
    assert DURATION_BUCKETS_S[0] <= 0.0001
    assert DURATION_BUCKETS_S[-1] >= 300
    assert list(DURATION_BUCKETS_S) == sorted(set(DURATION_BUCKETS_S))
    ratios = [b / a for a, b in itertools.pairwise(DURATION_BUCKETS_S)]
    assert max(ratios) <= 2.5


def test_no_metric_reader_without_prometheus_or_otlp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", raising=False)
    assert make_metric_readers(prometheus=False) == []


def test_otlp_metric_reader_when_an_endpoint_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:9/v1/metrics")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000")
    [reader] = make_metric_readers(prometheus=False)
    assert type(reader).__name__ == "PeriodicExportingMetricReader"
    reader.shutdown(timeout_millis=100)


def test_a_long_request_records_a_bounded_strided_subset_of_its_gaps() -> None:
    reader = InMemoryMetricReader()
    metrics = HookMetrics(MeterProvider(metric_readers=[reader]), HookStats(), itl_records=16)
    token_ts = [0.01 * i for i in range(1001)]  # 1000 gaps of 10 ms
    metrics.record_finished(
        ttft=0.1, e2e=10.0, queue=0.0, prefill=0.1, decode=10.0, token_ts=token_ts, preemptions=0
    )
    itl = collect(reader)[semconv.METRIC_HOOK_ITL]
    assert itl.count == 16
    assert itl.sum == pytest.approx(0.01 * 16)


def test_by_default_no_inter_token_gap_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's own ITL histogram and the span's offsets have every gap; the hooks' histogram is
    opt-in (``OTELBENCH_VLLM_ITL_RECORDS``), and its instrument then has no data point."""
    monkeypatch.delenv(semconv.ENV_VLLM_ITL_RECORDS, raising=False)
    reader = InMemoryMetricReader()
    metrics = HookMetrics(MeterProvider(metric_readers=[reader]), HookStats())
    assert metrics.itl_records == DEFAULT_ITL_RECORDS == 0
    token_ts = [0.01 * i for i in range(65)]
    metrics.record_finished(
        ttft=0.1, e2e=1.0, queue=0.0, prefill=0.1, decode=0.64, token_ts=token_ts, preemptions=0
    )
    points = collect(reader)
    assert semconv.METRIC_HOOK_ITL not in points
    assert points[semconv.METRIC_SERVER_TPOT].count == 1


@pytest.mark.parametrize(("value", "expected"), [("8", 8), (" 0 ", 0), ("-3", 0), ("many", 0)])
def test_itl_records_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str, expected: int
) -> None:
    monkeypatch.setenv(semconv.ENV_VLLM_ITL_RECORDS, value)
    assert itl_records_from_env() == expected
    assert ("is not a count" in caplog.text) is (value in ("-3", "many"))
