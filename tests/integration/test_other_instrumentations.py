"""otelbench beside the other instrumentations of the ``openai`` SDK, each real and on the same
application: the OpenTelemetry GenAI instrumentation (``opentelemetry-instrumentation-genai-
openai``) and OpenLLMetry (``opentelemetry-instrumentation-openai``). otelbench says once what
doubles (two CLIENT spans per call, two sets of metrics), and ``signals`` leaves one side out:
``spans`` keeps otelbench's span (the chunk timing, the ``traceparent`` the server sees) and no
metrics of its own; ``metrics`` keeps its metrics and no span.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor as GenAIOpenAI
from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetry
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otelbench import semconv
from otelbench.client import openai_http_client
from otelbench.client.others import active_openai_instrumentations
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = [
    pytest.mark.integration,
    # OpenLLMetry's own models still use pydantic's class-based config
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
]

N = 4
SCRIPT = {"n": N, "ttft_ms": 5.0, "itl_ms": 5.0}
OTHERS: dict[str, Any] = {
    "opentelemetry-instrumentation-genai-openai": GenAIOpenAI,
    "opentelemetry-instrumentation-openai (OpenLLMetry)": OpenLLMetry,
}


@pytest.fixture(params=sorted(OTHERS))
def other(
    request: pytest.FixtureRequest, tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> Iterator[str]:
    """The other instrumentation, on, with the same providers; its distribution's name."""
    name: str = request.param
    instrumentor = OTHERS[name]()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield name
    finally:
        instrumentor.uninstrument()
    assert active_openai_instrumentations() == []


@pytest.fixture
def providers(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> dict[str, Any]:
    """otelbench's providers: the other instrumentation's."""
    return {"tracer_provider": tracer_provider, "meter_provider": meter_provider}


def call(server: ScriptedServer, **kw: Any) -> str:
    client = openai.OpenAI(
        base_url=server.url + "/v1",
        api_key="unused",
        max_retries=0,
        http_client=openai_http_client(**kw),
    )
    stream = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"script": SCRIPT},
    )
    ids = {c.id for c in stream}  # read to the end
    client.close()
    return ids.pop()


def scopes(reader: InMemoryMetricReader) -> dict[str, set[str]]:
    """Instrumentation scope → the metric names it recorded."""
    data = reader.get_metrics_data()
    if data is None:
        return {}
    return {
        sm.scope.name: {m.name for m in sm.metrics}
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        if sm.metrics
    }


def ours_and_theirs(spans: tuple[ReadableSpan, ...]) -> tuple[list[ReadableSpan], list[Any]]:
    ours = [s for s in spans if s.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE]
    return ours, [s for s in spans if s not in ours]


def traceparent_span_id(span: ReadableSpan) -> str:
    return f"{span.context.span_id:016x}"


def test_otelbench_says_once_what_doubles(
    other: str,
    scripted_server: ScriptedServer,
    providers: dict[str, Any],
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert active_openai_instrumentations() == [other]
    with caplog.at_level(logging.WARNING, logger="otelbench.client"):
        rids = [call(scripted_server, **providers), call(scripted_server, **providers)]
    warnings = [r.getMessage() for r in caplog.records if r.name == "otelbench.client"]
    assert len(warnings) == 1, warnings  # once per process, however many clients and calls
    assert other in warnings[0]
    assert "two CLIENT spans" in warnings[0]
    assert "signals='spans'" in warnings[0]
    # what it says: two CLIENT spans per call, otelbench's under theirs, and two sets of metrics
    ours, theirs = ours_and_theirs(span_exporter.get_finished_spans())
    assert len(ours) == len(theirs) == 2
    assert all(s.kind == SpanKind.CLIENT for s in ours + theirs)
    for mine, rid in zip(ours, rids, strict=True):
        assert mine.parent is not None
        assert mine.parent.span_id in {t.context.span_id for t in theirs}
        sent = scripted_server.entry(rid)["traceparent"]
        assert sent.split("-")[2] == traceparent_span_id(mine)
    recorded = scopes(reader)
    assert semconv.METRIC_CLIENT_INFERENCE_DURATION in recorded[semconv.INSTRUMENTATION_SCOPE]
    assert len(recorded) == 2  # theirs too, for the same calls


def test_signals_spans_leaves_the_metrics_to_the_other(
    other: str,
    scripted_server: ScriptedServer,
    providers: dict[str, Any],
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="otelbench.client"):
        rid = call(scripted_server, signals="spans", **providers)
    assert not [r for r in caplog.records if r.name == "otelbench.client"]  # chosen: no warning
    [mine], [_] = ours_and_theirs(span_exporter.get_finished_spans())
    a = dict(mine.attributes or {})
    assert len(a[semconv.CLIENT_CHUNK_OFFSETS_US]) == N  # type: ignore[arg-type]
    assert scripted_server.entry(rid)["traceparent"].split("-")[2] == traceparent_span_id(mine)
    recorded = scopes(reader)
    assert semconv.INSTRUMENTATION_SCOPE not in recorded
    assert len(recorded) == 1


def test_signals_metrics_leaves_the_span_to_the_other(
    other: str,
    scripted_server: ScriptedServer,
    providers: dict[str, Any],
    span_exporter: InMemorySpanExporter,
    reader: InMemoryMetricReader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(semconv.ENV_CLIENT_SIGNALS, "metrics")  # the environment, this time
    call(scripted_server, **providers)
    ours, theirs = ours_and_theirs(span_exporter.get_finished_spans())
    assert (len(ours), len(theirs)) == (0, 1)
    recorded = scopes(reader)[semconv.INSTRUMENTATION_SCOPE]
    assert semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK in recorded
