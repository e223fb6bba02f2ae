"""The dashboards as code: no drift between the builders and the committed files, every metric
name known (the GenAI client names checked against the real OpenTelemetry Prometheus exporter),
the SQL placeholders and Grafana's substitutions as documented."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest

from otelbench import semconv
from otelbench.client.metrics import GenAIClientMetrics
from otelbench.dashboards import build, names
from otelbench.dashboards.macros import expand_clickhouse, expand_promql, expand_variables

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "dashboards"
LIVE_METRICS = {v for k, v in vars(semconv).items() if k.startswith("METRIC_LIVE_")}


def _targets() -> list[tuple[str, dict[str, object]]]:
    out = []
    for path in sorted((ROOT / "json").glob("*.json")):
        model = json.loads(path.read_text(encoding="utf-8"))
        out += [(path.stem, t) for p in model["panels"] for t in p.get("targets", [])]
    return out


def test_committed_files_have_no_drift_from_the_builders() -> None:
    generated = build.generated_files()
    committed = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in sorted(ROOT.rglob("*"))
        if p.suffix in (".json", ".yaml")
    }
    assert sorted(generated) == sorted(committed), (
        "regenerate: python -m otelbench.dashboards.build"
    )
    for relative, text in generated.items():
        assert committed[relative] == text, f"{relative} drifted: regenerate it"


def test_four_dashboards_with_fixed_uids_and_datasources() -> None:
    models = build.build_all()
    assert {stem: m["uid"] for stem, m in models.items()} == {
        "serving-overview": "otelbench-serving-overview",
        "application-clients": "otelbench-application-clients",
        "request-anatomy": "otelbench-request-anatomy",
        "benchmark-runs": "otelbench-benchmark-runs",
    }
    kinds = {
        stem: sorted({t["datasource"]["type"] for p in m["panels"] for t in p.get("targets", [])})
        for stem, m in models.items()
    }
    assert kinds == {
        "serving-overview": ["prometheus"],
        "application-clients": ["prometheus"],
        "request-anatomy": ["grafana-clickhouse-datasource"],
        "benchmark-runs": ["grafana-clickhouse-datasource"],
    }
    types = {p["type"] for m in models.values() for p in m["panels"]}
    assert types == {"row", "timeseries", "table", "heatmap", "xychart", "stat"}


def test_every_metric_name_is_in_semconv_or_vllm_or_a_genai_client_histogram() -> None:
    used_live: set[str] = set()
    used_vllm: set[str] = set()
    used_genai: set[str] = set()
    for _, target in _targets():
        expr = target.get("expr")
        if not isinstance(expr, str):
            continue
        live = set(re.findall(r"\botelbench_[a-z_]+", expr))
        vllm = set(re.findall(r"\bvllm:[a-z_]+", expr))
        # a histogram's series: the exposed name and _bucket, _sum or _count; a counter's, _total
        series = r"\b(gen_ai_client_[a-z_]+?)_(?:bucket|sum|count|total)\b"
        genai = set(re.findall(series, expr))
        assert live or vllm or genai, expr
        assert len(re.findall(r"\bgen_ai_client_", expr)) == len(re.findall(series, expr)), expr
        used_live |= live
        used_vllm |= vllm
        used_genai |= genai
    assert used_live <= LIVE_METRICS, used_live - LIVE_METRICS
    assert used_vllm == set(names.VLLM_METRICS)
    assert used_genai == set(names.GENAI_CLIENT_METRICS)
    # the overview shows most of the watcher's metrics
    assert len(used_live) == 23


def test_sql_names_come_from_semconv() -> None:
    sql = build.render_sql("anatomy_slowest")
    assert "{{" not in sql
    assert f"SpanAttributes['{semconv.VLLM_LATENCY_QUEUE}']" in sql
    assert f"SpanName IN ('{semconv.SPAN_HOOK_REQUEST}', '{semconv.SPAN_VLLM_REQUEST}')" in sql
    for stem, target in _targets():
        raw = target.get("rawSql")
        if isinstance(raw, str):
            assert "{{" not in raw, stem
            assert "}}" not in raw, stem
            assert "$__timeFilter_ms(" in raw or "${run:singlequote}" in raw, stem


def test_provisioning_names_the_uids_the_queries_use() -> None:
    datasources = yaml.safe_load((ROOT / "provisioning/datasources/otelbench.yaml").read_text())
    uids = {d["uid"]: d["type"] for d in datasources["datasources"]}
    assert uids == {
        names.DATASOURCE_PROMETHEUS: "prometheus",
        names.DATASOURCE_CLICKHOUSE: "grafana-clickhouse-datasource",
        names.DATASOURCE_TEMPO: "tempo",
    }
    used = {str(t["datasource"]["uid"]) for _, t in _targets()}  # type: ignore[index]
    assert used <= set(uids)
    anatomy = json.loads((ROOT / "json/request-anatomy.json").read_text())
    (slowest,) = [p for p in anatomy["panels"] if p["title"] == "Slowest requests"]
    (override,) = slowest["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byName", "options": "trace_id"}
    (link,) = override["properties"][0]["value"]
    assert link["internal"]["datasourceUid"] == names.DATASOURCE_TEMPO
    providers = yaml.safe_load((ROOT / "provisioning/dashboards/otelbench.yaml").read_text())
    assert providers["providers"][0]["folderUid"] == names.FOLDER_UID


def test_clickhouse_macros_expand_as_the_plugin_does() -> None:
    sql = "SELECT $__timeInterval(Timestamp) AS t FROM x WHERE $__timeFilter_ms(Timestamp) AND "
    sql += "r = ${run:singlequote} AND v <= ${slo} AND w = $slo AND i = $__interval_s"
    assert expand_clickhouse(
        sql, from_ms=1000, to_ms=2000, interval_s=60, variables={"run": "a'b", "slo": "5"}
    ) == (
        "SELECT toStartOfInterval(toDateTime(Timestamp), INTERVAL 60 second) AS t FROM x WHERE "
        "Timestamp >= fromUnixTimestamp64Milli(1000) AND Timestamp <= "
        "fromUnixTimestamp64Milli(2000) AND r = 'a\\'b' AND v <= 5 AND w = 5 AND i = 60"
    )


def test_promql_expansion_and_unknown_names() -> None:
    assert (
        expand_promql(
            'rate(x{source=~"$source"}[$__rate_interval])',
            rate_interval="1m",
            variables={"source": "(live|probe)"},
        )
        == 'rate(x{source=~"(live|probe)"}[1m])'
    )
    with pytest.raises(KeyError):
        expand_variables("$missing", {})
    with pytest.raises(KeyError, match="unexpanded Grafana macro"):
        expand_variables("$__range", {})


@dataclass
class _Finished:
    """One finished streamed call, as ``transport.Measurement`` offers it to the metrics."""

    streaming: bool = True
    end_offset_us: int | None = 90_000
    first_event_offset_us: int | None = 20_000
    chunk_offsets_us: list[int] = field(default_factory=lambda: [25_000, 50_000])
    event_offsets_us: list[int] = field(default_factory=lambda: [20_000, 25_000, 50_000])
    input_tokens: int | None = 7
    output_tokens: int | None = 2
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    response_model: str | None = "m"
    service_tier: str | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None


def test_genai_client_names_are_what_the_prometheus_exporter_exposes() -> None:
    """otelbench's GenAI client instruments through OpenTelemetry's real Prometheus exporter: its
    histogram families and labels are the names the dashboard queries."""
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    request = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
        semconv.GEN_AI_REQUEST_MODEL: "m",
        semconv.SERVER_ADDRESS: "127.0.0.1",
    }
    GenAIClientMetrics(provider).record(_Finished(), request)
    GenAIClientMetrics(provider).record(_Finished(streaming=False, error_type="500"), request)
    text = generate_latest(registry).decode()
    # (the exporter's TYPE line names a counter with its _total)
    typed = re.findall(r"^# TYPE (gen_ai_client_\w+) (histogram|counter)$", text, re.M)
    families = {name.removesuffix("_total"): kind for name, kind in typed}
    assert {name: m.kind for name, m in names.GENAI_CLIENT_METRICS.items()}.items() <= (
        families.items()
    )
    for metric in names.GENAI_CLIENT_METRICS.values():
        series = "_bucket" if metric.kind == "histogram" else "_total"
        assert f"{metric.exposed}{series}{{" in text
    labels = set(re.findall(r"[{,](\w+)=", text))
    assert {build.MODEL, build.SERVER, build.ERROR_TYPE, "le"} <= labels
    assert 'error_type="500"' in text
    provider.shutdown()
