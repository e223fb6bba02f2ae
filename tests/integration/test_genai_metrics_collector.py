"""An application on the real ``openai`` SDK, instrumented as the README says, exporting its spans
and GenAI client metrics over OTLP/HTTP to otelbench's embedded collector: the metric points land
in the store's ``otel_metrics_histogram`` (the OpenTelemetry Collector ClickHouse exporter's table
shape), the client spans in ``otel_traces``, and the stored histograms agree with the stored
spans of the same calls (against the scripted SSE server).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from otelbench import semconv
from otelbench.client import openai_http_client
from otelbench.client.metrics import DURATION_BUCKETS_S, TOKEN_BUCKETS
from otelbench.collector import Receiver
from otelbench.telemetry import make_tracer_provider, shutdown
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

N = 6
CALLS = 3
SCRIPT = {"n": N, "ttft_ms": 10.0, "itl_ms": 10.0, "prompt_tokens": 9}


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    with Receiver(tmp_path / "app.duckdb", port=0) as r:
        yield r


def test_the_metrics_and_spans_of_an_openai_app_land_in_the_store(
    receiver: Receiver, scripted_server: ScriptedServer
) -> None:
    endpoint = f"http://127.0.0.1:{receiver.port}"
    tracer_provider = make_tracer_provider(endpoint, service_name="my-app")
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint + "/v1/metrics"), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "my-app"})
    )
    client = openai.OpenAI(
        base_url=scripted_server.url + "/v1",
        api_key="unused",
        http_client=openai_http_client(
            tracer_provider=tracer_provider, meter_provider=meter_provider
        ),
    )
    for _ in range(CALLS):
        stream = client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "Hi"}],
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"script": SCRIPT},
        )
        assert len([c for c in stream if c.choices and c.choices[0].delta.content]) == N
    client.close()
    assert shutdown(tracer_provider)
    meter_provider.shutdown()  # collects and exports once

    store = receiver.store
    spans = store.execute(
        'SELECT "SpanAttributes" FROM otel_traces WHERE "ServiceName" = ? AND "SpanKind" = ?',
        ["my-app", semconv.SPAN_KIND_CLIENT],
    )
    assert len(spans) == CALLS
    attrs = [dict(a) for (a,) in spans]
    end_s = [int(a[semconv.CLIENT_END_OFFSET_US]) / 1e6 for a in attrs]
    first_s = [int(a[semconv.CLIENT_FIRST_EVENT_OFFSET_US]) / 1e6 for a in attrs]
    gaps_s = [
        (b - a) / 1e6
        for s in attrs
        for a, b in itertools.pairwise(json.loads(s[semconv.CLIENT_CHUNK_OFFSETS_US]))
    ]

    rows = store.execute(
        'SELECT "MetricName", "MetricUnit", "Attributes", "Count", "Sum", "Min", "Max", '
        '"BucketCounts", "ExplicitBounds", "ServiceName", "ScopeName" '
        'FROM otel_metrics_histogram ORDER BY "MetricName", "Attributes"::VARCHAR'
    )
    by_name: dict[str, list[tuple[object, ...]]] = {}
    for row in rows:
        by_name.setdefault(str(row[0]), []).append(row)
    assert set(by_name) == {
        semconv.METRIC_CLIENT_INFERENCE_DURATION,
        semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
        semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
        semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK,
        semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
        semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
    }
    request_attrs = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
        semconv.GEN_AI_PROVIDER_NAME: semconv.PROVIDER_OPENAI,
        semconv.GEN_AI_REQUEST_MODEL: "tiny",
        semconv.GEN_AI_RESPONSE_MODEL: "tiny",
        semconv.SERVER_ADDRESS: "127.0.0.1",
        semconv.SERVER_PORT: str(scripted_server.port),
    }
    for name, values in (
        (semconv.METRIC_CLIENT_INFERENCE_DURATION, end_s),
        (semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK, first_s),
        (semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK, gaps_s),
    ):
        [(_, unit, a, count, total, lo, hi, buckets, bounds, service, scope)] = by_name[name]
        assert (unit, dict(a), service, scope) == ("s", request_attrs, "my-app", "otelbench")
        assert list(bounds) == list(DURATION_BUCKETS_S)
        assert (count, lo, hi) == (len(values), min(values), max(values))
        assert total == pytest.approx(sum(values), abs=1e-9)
        # the stored buckets are the spans' values counted into the conventions' boundaries
        expected = [0] * (len(DURATION_BUCKETS_S) + 1)
        for v in values:
            expected[sum(v > b for b in DURATION_BUCKETS_S)] += 1
        assert list(buckets) == expected
    assert len(gaps_s) == CALLS * (N - 1)

    usage = [
        by_name[semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS],
        by_name[semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS],
    ]
    assert [(r[3], r[4]) for [r] in usage] == [(CALLS, 9.0 * CALLS), (CALLS, float(N * CALLS))]
    assert [list(r[8]) for [r] in usage] == [list(map(float, TOKEN_BUCKETS))] * 2
    # every chunk after the first, text or not: at least the text chunks' gaps
    [(_, _, _, count, *_)] = by_name[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK]
    assert count >= len(gaps_s)
    # the usage counters land in otel_metrics_sum, monotonic and cumulative
    sums = {
        str(name): (value, monotonic)
        for name, value, monotonic in store.execute(
            'SELECT "MetricName", sum("Value"), bool_and("IsMonotonic") FROM otel_metrics_sum '
            "WHERE \"MetricName\" LIKE 'gen_ai.client.inference.usage.%' GROUP BY 1"
        )
    }
    assert sums[semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS] == (9.0 * CALLS, True)
    assert sums[semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS] == (float(N * CALLS), True)
    assert receiver.stats().rejected == {}
