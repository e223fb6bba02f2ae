"""otelbench's GenAI client metrics against the conventions' own files, shipped in
``docs/reference/semconv-genai/`` (semantic-conventions-genai at a named commit): each metric
recorded under today's names is defined there with the same instrument, unit and bucket advice,
carries only attributes its groups (or the OpenAI refinements) name, and every required one.

The values come from the real instruments (``GenAIClientMetrics`` on an SDK meter provider with
the in-memory reader), fed two finished calls: a streamed success with everything a response can
carry, and a failed call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, Sum

from otelbench import semconv
from otelbench.client.metrics import GenAIClientMetrics
from tests.unit.client.test_metrics import LATEST

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "semconv-genai"
MODEL = REFERENCE / "model" / "gen-ai"


def _load() -> tuple[dict[str, Any], dict[str, Any], dict[str, list[Any]]]:
    """(metrics by name, attribute groups by id, refinements' attribute lists by metric)."""
    metrics: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    refinements: dict[str, list[Any]] = {}
    for path in sorted(MODEL.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for g in doc.get("attribute_groups", []):
            groups[g["id"]] = g
        for m in doc.get("metrics", []):
            metrics[m["name"]] = m
        for r in doc.get("metric_refinements", []):
            if r["id"].startswith("openai."):
                refinements.setdefault(r["ref"], []).extend(r["attributes"])
    return metrics, groups, refinements


METRICS, GROUPS, OPENAI_REFINEMENTS = _load()


def _level(entry: dict[str, Any]) -> str:
    level = entry.get("requirement_level", "recommended")
    return level if isinstance(level, str) else next(iter(level))


def resolve(entries: list[Any]) -> dict[str, str]:
    """Attribute → requirement level, ``ref_group`` expanded (a later entry overrides)."""
    out: dict[str, str] = {}
    for entry in entries:
        if "ref_group" in entry:
            out.update(resolve(GROUPS[entry["ref_group"]]["attributes"]))
        else:
            out[entry["ref"]] = _level(entry)
    return out


def bucket_advice() -> dict[str, list[float]]:
    text = (REFERENCE / "bucket-advice.md").read_text(encoding="utf-8")
    found = re.findall(
        r"### Metric: `([\w.]+)`\s+This metric SHOULD be specified with "
        r"\[ExplicitBucketBoundaries\] of \[([^\]]+)\]",
        text,
    )
    return {name: [float(v) for v in values.split(",")] for name, values in found}


@dataclass
class _Call:
    """A finished call as ``transport.Measurement`` offers it to the metrics."""

    streaming: bool = True
    end_offset_us: int | None = 900_000
    first_event_offset_us: int | None = 200_000
    chunk_offsets_us: list[int] = field(default_factory=lambda: [250_000, 500_000])
    event_offsets_us: list[int] = field(default_factory=lambda: [200_000, 250_000, 500_000])
    input_tokens: int | None = 7
    output_tokens: int | None = 2
    cached_tokens: int | None = 3
    reasoning_tokens: int | None = 1
    response_model: str | None = "m-2026"
    service_tier: str | None = "default"
    system_fingerprint: str | None = "fp_1"
    error_type: str | None = None


REQUEST = {
    semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
    semconv.GEN_AI_PROVIDER_NAME: semconv.PROVIDER_OPENAI,
    semconv.GEN_AI_REQUEST_MODEL: "m",
    semconv.SERVER_ADDRESS: "llm.test",
    semconv.SERVER_PORT: 8000,
}


@pytest.fixture(scope="module")
def recorded() -> dict[str, tuple[Any, list[Any]]]:
    """Metric name → (its data, its points) from a success and a failure."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics = GenAIClientMetrics(provider, opt_in="")
    metrics.record(_Call(), REQUEST)
    failed = _Call(
        streaming=False,
        input_tokens=None,
        output_tokens=None,
        cached_tokens=None,
        reasoning_tokens=None,
        response_model=None,
        service_tier=None,
        system_fingerprint=None,
        error_type="timeout",
    )
    metrics.record(failed, REQUEST)
    data = reader.get_metrics_data()
    provider.shutdown()
    assert data is not None
    return {
        m.name: (m, list(m.data.data_points))
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }


def test_the_shipped_files_define_the_inference_metrics() -> None:
    assert {
        "gen_ai.client.inference.duration",
        "gen_ai.client.inference.time_to_first_chunk",
        "gen_ai.client.inference.time_per_output_chunk",
        "gen_ai.client.inference.usage.input_tokens",
        "gen_ai.client.inference.operation.output_tokens",
    } <= set(METRICS)
    assert set(bucket_advice()) == {
        "gen_ai.client.inference.duration",
        "gen_ai.client.inference.time_to_first_chunk",
        "gen_ai.client.inference.time_per_output_chunk",
        "gen_ai.client.inference.operation.input_tokens",
        "gen_ai.client.inference.operation.output_tokens",
    }


def test_every_gen_ai_metric_recorded_is_the_conventions_own(
    recorded: dict[str, tuple[Any, list[Any]]],
) -> None:
    gen_ai = {name for name in recorded if name.startswith("gen_ai.")}
    assert gen_ai == LATEST
    # not the non-inference duration, which the conventions say inference must not report
    assert "gen_ai.client.operation.duration" in METRICS
    assert "gen_ai.client.operation.duration" not in recorded
    # otelbench's own metric stays out of the conventions' namespace
    assert set(recorded) - gen_ai == {semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK}
    advice = bucket_advice()
    for name in sorted(gen_ai):
        spec = METRICS[name]
        metric, points = recorded[name]
        assert metric.unit == spec["unit"], name
        if spec["instrument"] == "histogram":
            assert all(isinstance(p, HistogramDataPoint) for p in points), name
            for p in points:
                assert list(p.explicit_bounds) == advice[name], name
        else:
            assert spec["instrument"] == "counter", name
            assert isinstance(metric.data, Sum)
            assert metric.data.is_monotonic, name


def test_every_attribute_is_one_the_conventions_name_and_none_required_is_missing(
    recorded: dict[str, tuple[Any, list[Any]]],
) -> None:
    for name, (_, points) in recorded.items():
        if not name.startswith("gen_ai."):
            continue
        spec = METRICS[name]
        allowed = resolve(spec["attributes"])
        allowed |= resolve(OPENAI_REFINEMENTS.get(name, []))
        required = {a for a, level in allowed.items() if level == "required"}
        for p in points:
            attrs = dict(p.attributes or {})
            assert set(attrs) <= set(allowed), (name, set(attrs) - set(allowed))
            assert required <= set(attrs), (name, required - set(attrs))
            # conditionally required, and the conditions hold here
            assert {"gen_ai.request.model", "server.port"} <= set(attrs), name
            if "error.type" in allowed:
                assert ("error.type" in attrs) == (attrs.get("gen_ai.response.model") is None)


def test_the_openai_attributes_appear_where_the_refinements_add_them(
    recorded: dict[str, tuple[Any, list[Any]]],
) -> None:
    refined = {n for n in recorded if n in OPENAI_REFINEMENTS}
    assert semconv.METRIC_CLIENT_INFERENCE_DURATION in refined
    for name in refined:
        attrs = [dict(p.attributes or {}) for p in recorded[name][1]]
        assert any(a.get(semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT) == "fp_1" for a in attrs)
