"""The four Grafana dashboards, as code (grafana-foundation-sdk), and their JSON.

* *Serving overview* (Prometheus): ``otelbench watch``'s window metrics (``otelbench_live_*``,
  names from :mod:`otelbench.semconv`) and vLLM's own ``vllm:*`` gauges and counters
  (:data:`otelbench.dashboards.names.VLLM_METRICS`).
* *Application clients (GenAI)* (Prometheus): the GenAI client histograms an application
  instrumented with :mod:`otelbench.client` exports (names:
  :data:`otelbench.dashboards.names.GENAI_CLIENT_METRICS`): time to first chunk, time per output
  chunk and operation duration percentiles per request model and server, operations, token usage
  and errors per second.
* *Request anatomy* (ClickHouse, the collector's ``otel_traces``): queue / prefill / decode /
  guardrail breakdown, guardrail filters, the slowest requests linking to their traces, and a
  per-token stall heatmap.
* *Benchmark runs* (ClickHouse): every run in the time range compared (throughput-latency curve,
  knee, capacity, SLO and methodology verdicts), and one run's requests.

SQL lives in ``otelbench/dashboards/sql/clickhouse/<name>.sql`` in the ClickHouse dialect with the
ClickHouse plugin's macros (``$__timeFilter_ms``, ``$__timeInterval``) and Grafana variables
(``${run:singlequote}``, ``${slo_ttft_ms}``); two build-time placeholders are expanded here:
``{{NAME}}`` is the SQL string literal of ``semconv.NAME`` and ``{{> file}}`` includes
``sql/file.sql``.

Regenerate the committed files (``dashboards/json/*.json`` and ``dashboards/provisioning``) with
``python -m otelbench.dashboards.build [ROOT]`` (default ``dashboards``)::

    from otelbench.dashboards.build import build_all
    dashboards = build_all()  # {"serving-overview": {...dashboard JSON...}, ...}

Draft sections: TTFT 5.1.3.1 (the first-chunk time is its client-side, first-event variant),
inter-chunk timing 4.6.3 Option A.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, Final, Self

from grafana_foundation_sdk.builders import common as gcommon
from grafana_foundation_sdk.builders import dashboard as gdash
from grafana_foundation_sdk.builders import heatmap, prometheus, stat, table, timeseries, xychart
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as mcommon
from grafana_foundation_sdk.models import dashboard as mdash

from otelbench import semconv
from otelbench.dashboards import names
from otelbench.dashboards.push import datasource_models
from otelbench.model.jsonvalue import JsonObject, JsonValue

__all__ = [
    "DASHBOARDS",
    "build_all",
    "generated_files",
    "main",
    "provisioning_files",
    "render_sql",
    "write_all",
]

_PLACEHOLDER: Final = re.compile(r"\{\{\s*(>\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

PROMETHEUS: Final = mdash.DataSourceRef(
    type_val=names.PLUGIN_PROMETHEUS, uid=names.DATASOURCE_PROMETHEUS
)
CLICKHOUSE: Final = mdash.DataSourceRef(
    type_val=names.PLUGIN_CLICKHOUSE, uid=names.DATASOURCE_CLICKHOUSE
)

CLICKHOUSE_FORMAT_TIMESERIES: Final = 0
CLICKHOUSE_FORMAT_TABLE: Final = 1
"""The ClickHouse plugin's (v4) ``format`` values: 0 time series, 1 table."""


def _sql_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render_sql(name: str) -> str:
    """``sql/clickhouse/<name>.sql`` with ``{{NAME}}`` (a :mod:`semconv` name, as an SQL string
    literal) and ``{{> file}}`` (another SQL file, comment lines dropped) expanded; Grafana's
    macros and variables are left for Grafana."""
    text = (
        files("otelbench.dashboards")
        .joinpath("sql", "clickhouse", f"{name}.sql")
        .read_text("utf-8")
    )

    def expand(match: re.Match[str]) -> str:
        include, key = match.group(1), match.group(2)
        if include:
            body = render_sql(key)
            return "\n".join(ln for ln in body.splitlines() if not ln.startswith("--"))
        value = getattr(semconv, key)
        if not isinstance(value, str):
            raise TypeError(f"semconv.{key} is not a string")
        return _sql_literal(value)

    return _PLACEHOLDER.sub(expand, text).strip() + "\n"


class ClickHouseQuery(cogvariants.Dataquery):
    """A query of the official ClickHouse plugin (``grafana-clickhouse-datasource`` v4), raw SQL
    (the SDK has no model for this plugin)."""

    def __init__(self, ref_id: str, raw_sql: str, fmt: int, query_type: str) -> None:
        self.ref_id = ref_id
        self.raw_sql = raw_sql
        self.fmt = fmt
        self.query_type = query_type

    def to_json(self) -> dict[str, object]:
        return {
            "datasource": {"type": names.PLUGIN_CLICKHOUSE, "uid": names.DATASOURCE_CLICKHOUSE},
            "editorType": "sql",
            "format": self.fmt,
            "queryType": self.query_type,
            "rawSql": self.raw_sql,
            "refId": self.ref_id,
        }


class ClickHouseQueryBuilder(cogbuilder.Builder[cogvariants.Dataquery]):
    """Builder of :class:`ClickHouseQuery` from a named SQL file."""

    def __init__(self, sql_name: str, *, table_format: bool = True, ref_id: str = "A") -> None:
        self._query = ClickHouseQuery(
            ref_id,
            render_sql(sql_name),
            CLICKHOUSE_FORMAT_TABLE if table_format else CLICKHOUSE_FORMAT_TIMESERIES,
            "table" if table_format else "timeseries",
        )

    def ref_id(self, ref_id: str) -> Self:
        self._query.ref_id = ref_id
        return self

    def build(self) -> cogvariants.Dataquery:
        return self._query


def _prom(expr: str, legend: str, ref_id: str = "A") -> prometheus.Dataquery:
    return (
        prometheus.Dataquery()
        .expr(expr)
        .legend_format(legend)
        .ref_id(ref_id)
        .datasource(PROMETHEUS)
    )


def _sel(metric: str, *matchers: str) -> str:
    """``metric{source=~"$source",...}``: every live series is filtered by the source variable."""
    return metric + "{" + ",".join(('source=~"$source"', *matchers)) + "}"


def _all_fields() -> gcommon.ReduceDataOptions:
    """Stat panels show every column of their one-row query (the run id beside its figure)."""
    return gcommon.ReduceDataOptions().values(True).calcs(["lastNotNull"]).fields("/.*/")


def _timeseries(title: str, unit: str, description: str) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .datasource(PROMETHEUS)
        .height(8)
        .span(12)
    )


# --------------------------------------------------------------------------------------------
# Serving overview (Prometheus)
# --------------------------------------------------------------------------------------------
def serving_overview() -> gdash.Dashboard:
    live = semconv
    quantile_legend = "{{source}} p{{quantile}}"
    source = (
        gdash.CustomVariable("source")
        .label("Traffic source")
        .values(f"{semconv.SOURCE_LIVE},{semconv.SOURCE_PROBE},{semconv.SOURCE_BENCHMARK}")
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )
    builder = (
        gdash.Dashboard("otelbench: Serving overview")
        .uid("otelbench-serving-overview")
        .tags(["otelbench"])
        .description(
            "Live serving metrics: otelbench watch's sliding-window figures (otelbench_live_*) "
            "per traffic source, beside vLLM's own /metrics (vllm:*)."
        )
        .refresh("30s")
        .time("now-1h", "now")
        .timezone("browser")
        .with_variable(source)
        .with_row(gdash.Row("Traffic"))
        .with_panel(
            _timeseries("Requests and tokens per second", "reqps", "Window rates per source.")
            .with_target(_prom(_sel(live.METRIC_LIVE_REQUEST_RATE), "{{source}} requests/s"))
            .with_target(
                _prom(_sel(live.METRIC_LIVE_GOODPUT), "{{source}} goodput requests/s", "B")
            )
            .with_target(
                _prom(_sel(live.METRIC_LIVE_OUTPUT_TOKEN_RATE), "{{source}} output tokens/s", "C")
            )
        )
        .with_panel(
            _timeseries("Requests and errors in the window", "short", "Counts over the window.")
            .with_target(_prom(_sel(live.METRIC_LIVE_REQUESTS), "{{source}} requests"))
            .with_target(_prom(_sel(live.METRIC_LIVE_ERRORS), "{{source}} errors", "B"))
        )
        .with_row(gdash.Row("Requests cut short"))
        .with_panel(
            _timeseries(
                "Requests cut short in the window, by phase",
                "short",
                "Requests the engine did not finish (the client hung up: cancelled; aborted; "
                "engine error) by the phase they were in, from the hooks' server spans.",
            ).with_target(
                _prom(
                    f"sum by (end_reason, end_phase) ({_sel(live.METRIC_LIVE_CUT_REQUESTS)})",
                    "{{end_reason}} in {{end_phase}}",
                )
            )
        )
        .with_panel(
            _timeseries(
                "Engine work nobody read: tokens",
                "short",
                "Prompt tokens processed and output tokens generated for the window's requests "
                "the engine did not finish (the engine core's account on their spans).",
            )
            .with_target(
                _prom(_sel(live.METRIC_LIVE_UNREAD_PROMPT_TOKENS), "{{source}} prompt tokens")
            )
            .with_target(
                _prom(_sel(live.METRIC_LIVE_UNREAD_OUTPUT_TOKENS), "{{source}} output tokens", "B")
            )
        )
        .with_panel(
            _timeseries(
                "Engine work nobody read: request-seconds",
                "s",
                "Time the window's requests the engine did not finish held a place in the "
                "running batch (time in model inference, first scheduling to the cut).",
            ).with_target(
                _prom(_sel(live.METRIC_LIVE_UNREAD_ENGINE_SECONDS), "{{source}} request-seconds")
            )
        )
        .with_row(gdash.Row("Latency percentiles"))
        .with_panel(
            _timeseries(
                "TTFT", "s", "Server TTFT (arrival to first token), by quantile."
            ).with_target(_prom(_sel(live.METRIC_LIVE_TTFT), quantile_legend))
        )
        .with_panel(
            _timeseries(
                "ITL", "s", "Gaps between consecutive output-token engine steps."
            ).with_target(_prom(_sel(live.METRIC_LIVE_ITL), quantile_legend))
        )
        .with_panel(
            _timeseries(
                "TPOT", "s", "(last - first token) / (output tokens - 1) per request."
            ).with_target(_prom(_sel(live.METRIC_LIVE_TPOT), quantile_legend))
        )
        .with_panel(
            _timeseries("Queue and prefill (TTFT components)", "s", "By quantile.")
            .with_target(_prom(_sel(live.METRIC_LIVE_QUEUE), "queue " + quantile_legend))
            .with_target(_prom(_sel(live.METRIC_LIVE_PREFILL), "prefill " + quantile_legend, "B"))
        )
        .with_row(gdash.Row("Fluidity and SLOs"))
        .with_panel(
            _timeseries(
                "Fluidity-index (low tail)",
                "percentunit",
                "Etalon's fluidity-index by quantile and decode deadline D_d.",
            ).with_target(
                _prom(
                    _sel(live.METRIC_LIVE_FLUIDITY),
                    "{{source}} p{{quantile}} D_d={{decode_deadline_seconds}}s",
                )
            )
        )
        .with_panel(
            _timeseries(
                "Fluid requests and fluid token rate",
                "percentunit",
                "Fraction of requests with fluidity-index >= 0.9 per D_d; fluid token rate.",
            )
            .with_target(
                _prom(
                    _sel(live.METRIC_LIVE_FLUID_FRACTION),
                    "{{source}} fluid D_d={{decode_deadline_seconds}}s",
                )
            )
            .with_target(
                _prom(_sel(live.METRIC_LIVE_FLUID_TOKEN_RATE), "{{source}} fluid tokens/s", "B")
            )
        )
        .with_panel(
            _timeseries(
                "SLO attainment",
                "percentunit",
                "Requests meeting each SLO (ttft, tpot, all) / requests; failed never meet it.",
            ).with_target(_prom(_sel(live.METRIC_LIVE_SLO_ATTAINMENT), "{{source}} {{slo}}"))
        )
        .with_panel(
            _timeseries(
                "Fairness (Jain's index across classes)",
                "percentunit",
                "Jain's index of the classes' mean TTFT / TPOT (1 = equal service).",
            ).with_target(_prom(_sel(live.METRIC_LIVE_JAIN), "{{source}} over {{over}}"))
        )
        .with_row(gdash.Row("Engine: queue, KV cache, preemptions"))
        .with_panel(
            _timeseries("Queue depth", "short", "vLLM's scheduler: requests waiting and running.")
            .with_target(_prom("sum(vllm:num_requests_waiting)", "waiting"))
            .with_target(_prom("sum(vllm:num_requests_running)", "running", "B"))
        )
        .with_panel(
            _timeseries(
                "KV cache usage", "percentunit", "vLLM's KV-cache usage (1 = full)."
            ).with_target(_prom("max by (instance) (vllm:kv_cache_usage_perc)", "{{instance}}"))
        )
        .with_panel(
            _timeseries(
                "Preemptions",
                "short",
                "vLLM's preemption rate, and the window's preemptions/s and preempted ratio "
                "from the hook spans.",
            )
            .with_target(
                _prom("sum(rate(vllm:num_preemptions_total[$__rate_interval]))", "vLLM /s")
            )
            .with_target(_prom(_sel(live.METRIC_LIVE_PREEMPTION_RATE), "{{source}} window /s", "B"))
            .with_target(
                _prom(_sel(live.METRIC_LIVE_PREEMPTED_RATIO), "{{source}} preempted ratio", "C")
            )
        )
        .with_panel(
            _timeseries(
                "Watcher health",
                "s",
                "otelbench watch: refresh duration and failed refreshes.",
            )
            .with_target(_prom(live.METRIC_LIVE_REFRESH_DURATION, "refresh duration"))
            .with_target(
                _prom(
                    f"increase({live.METRIC_LIVE_REFRESH_ERRORS}[$__rate_interval])",
                    "failed refreshes",
                    "B",
                )
            )
        )
    )
    return builder


# --------------------------------------------------------------------------------------------
# Application clients (Prometheus, the GenAI client histograms)
# --------------------------------------------------------------------------------------------
MODEL: Final = names.prometheus_label(semconv.GEN_AI_REQUEST_MODEL)
SERVER: Final = names.prometheus_label(semconv.SERVER_ADDRESS)
ERROR_TYPE: Final = names.prometheus_label(semconv.ERROR_TYPE)
_REF_IDS: Final = "ABCDEFGH"


def _app_sel(series: str, *matchers: str) -> str:
    """``series{gen_ai_request_model=~"$model",server_address=~"$server",...}``."""
    return series + "{" + ",".join((f'{MODEL}=~"$model"', f'{SERVER}=~"$server"', *matchers)) + "}"


def _app_rate(series: str, *matchers: str) -> str:
    return f"rate({_app_sel(series, *matchers)}[$__rate_interval])"


def _app_quantiles(metric: names.GenAIClientMetric, quantiles: tuple[str, ...]) -> list[Any]:
    """``histogram_quantile`` over the buckets' rates, per request model and server: one target
    per quantile (Prometheus interpolates linearly inside the bucket the quantile falls in)."""
    by = f"sum by (le, {MODEL}, {SERVER})"
    return [
        _prom(
            f"histogram_quantile({q}, {by} ({_app_rate(metric.exposed + '_bucket')}))",
            f"{{{{{MODEL}}}}} @ {{{{{SERVER}}}}} p{round(float(q) * 100)}",
            ref_id,
        )
        for q, ref_id in zip(quantiles, _REF_IDS, strict=False)
    ]


def _label_variable(name: str, label: str, title: str) -> gdash.QueryVariable:
    """A multi-value variable of the label's values on the duration histogram (every call)."""
    return (
        gdash.QueryVariable(name)
        .label(title)
        .datasource(PROMETHEUS)
        .query(f"label_values({names.GENAI_INFERENCE_DURATION.exposed}_count, {label})")
        .refresh(mdash.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )


def _latency_panel(
    title: str, metric: names.GenAIClientMetric, quantiles: tuple[str, ...], what: str
) -> timeseries.Panel:
    panel = _timeseries(title, "s", f"{metric.name}: {what}").span(8)
    for target in _app_quantiles(metric, quantiles):
        panel = panel.with_target(target)
    return panel


def application_clients() -> gdash.Dashboard:
    duration = names.GENAI_INFERENCE_DURATION.exposed + "_count"
    errors = _app_rate(duration, f'{ERROR_TYPE}!=""')
    return (
        gdash.Dashboard("otelbench: Application clients (GenAI)")
        .uid("otelbench-application-clients")
        .tags(["otelbench"])
        .description(
            "The GenAI client metrics (semantic-conventions-genai: gen_ai.client.inference.*) "
            "of applications instrumented with otelbench.client, as Prometheus scrapes them "
            "from the application's "
            "OpenTelemetry Prometheus exporter: latency percentiles from the histograms' "
            "buckets, operations, tokens and errors per second."
        )
        .refresh("30s")
        .time("now-1h", "now")
        .timezone("browser")
        .with_variable(_label_variable("model", MODEL, "Request model"))
        .with_variable(_label_variable("server", SERVER, "Server address"))
        .with_row(gdash.Row("Application clients (GenAI): latency"))
        .with_panel(
            _latency_panel(
                "Time to first chunk",
                names.GENAI_TIME_TO_FIRST_CHUNK,
                ("0.5", "0.95", "0.99"),
                "request sent -> first SSE event of a streamed response.",
            )
        )
        .with_panel(
            _latency_panel(
                "Time per output chunk",
                names.GENAI_TIME_PER_OUTPUT_CHUNK,
                ("0.5", "0.99"),
                "gap between consecutive chunks of a streamed response (every chunk after the "
                "first, text or not).",
            )
        )
        .with_panel(
            _latency_panel(
                "Inference duration",
                names.GENAI_INFERENCE_DURATION,
                ("0.5", "0.99"),
                "request sent -> end of the response; failed calls included.",
            )
        )
        .with_row(gdash.Row("Application clients (GenAI): traffic, tokens, errors"))
        .with_panel(
            _timeseries(
                "Operations and errors per second",
                "reqps",
                "Calls per request model and server; failed calls per error.type.",
            )
            .span(8)
            .with_target(
                _prom(
                    f"sum by ({MODEL}, {SERVER}) ({_app_rate(duration)})",
                    f"{{{{{MODEL}}}}} @ {{{{{SERVER}}}}} operations/s",
                )
            )
            .with_target(
                _prom(f"sum by ({ERROR_TYPE}) ({errors})", f"{{{{{ERROR_TYPE}}}}} errors/s", "B")
            )
        )
        .with_panel(
            _timeseries(
                "Error ratio by error.type",
                "percentunit",
                "Failed calls of each error.type / all calls.",
            )
            .span(8)
            .with_target(
                _prom(
                    f"sum by ({ERROR_TYPE}) ({errors}) / on() group_left() "
                    f"sum({_app_rate(duration)})",
                    f"{{{{{ERROR_TYPE}}}}}",
                )
            )
        )
        .with_panel(
            _timeseries(
                "Token usage per second",
                "short",
                "The usage counters gen_ai.client.inference.usage.input_tokens and "
                ".output_tokens (every call; 0 when the server reported no usage).",
            )
            .span(8)
            .with_target(
                _prom(
                    f"sum({_app_rate(names.GENAI_USAGE_INPUT_TOKENS.exposed + '_total')})",
                    "input tokens/s",
                )
            )
            .with_target(
                _prom(
                    f"sum({_app_rate(names.GENAI_USAGE_OUTPUT_TOKENS.exposed + '_total')})",
                    "output tokens/s",
                    "B",
                )
            )
        )
    )


# --------------------------------------------------------------------------------------------
# Request anatomy (ClickHouse)
# --------------------------------------------------------------------------------------------
def _trace_link() -> list[mdash.DynamicConfigValue]:
    link = {
        "title": "Open trace",
        "url": "",
        "internal": {
            "datasourceUid": names.DATASOURCE_TEMPO,
            "datasourceName": "Tempo",
            "query": {"query": "${__value.raw}", "queryType": "traceql"},
        },
    }
    return [mdash.DynamicConfigValue(id_val="links", value=[link])]


def request_anatomy() -> gdash.Dashboard:
    return (
        gdash.Dashboard("otelbench: Request anatomy")
        .uid("otelbench-request-anatomy")
        .tags(["otelbench"])
        .description(
            "Where a request's time goes, from the server spans in ClickHouse (otel_traces): "
            "queue, prefill, decode and guardrails; the slowest requests link to their traces."
        )
        .time("now-1h", "now")
        .timezone("browser")
        .with_panel(
            timeseries.Panel()
            .title("Request anatomy: mean seconds per request by phase")
            .description("Queue / prefill / decode (server span) and guardrail input / output.")
            .datasource(CLICKHOUSE)
            .unit("s")
            .height(9)
            .span(24)
            .with_target(ClickHouseQueryBuilder("anatomy_phases", table_format=False))
        )
        .with_panel(
            table.Panel()
            .title("Slowest requests")
            .description("Top 20 by server duration; trace_id opens the trace.")
            .datasource(CLICKHOUSE)
            .height(10)
            .span(24)
            .with_target(ClickHouseQueryBuilder("anatomy_slowest"))
            .override_by_name("trace_id", _trace_link())
        )
        .with_panel(
            heatmap.Panel()
            .title("Per-token stalls (gap between output-token steps, ms)")
            .description("Counts of inter-token gaps per bucket; hook spans' token offsets.")
            .datasource(CLICKHOUSE)
            .height(9)
            .span(12)
            .calculate(False)
            .rows_frame(heatmap.RowsHeatmapOptions().layout(mcommon.HeatmapCellLayout.LE))
            .with_target(ClickHouseQueryBuilder("anatomy_token_gaps", table_format=False))
        )
        .with_panel(
            timeseries.Panel()
            .title("Requests the engine did not finish, per interval")
            .description(
                "Server spans the engine hooks ended without finishing, by end reason "
                "(otelbench.server.end_reason): cancelled (the client hung up), aborted, error."
            )
            .datasource(CLICKHOUSE)
            .unit("short")
            .height(9)
            .span(12)
            .with_target(ClickHouseQueryBuilder("anatomy_cut", table_format=False))
        )
        .with_panel(
            table.Panel()
            .title("Engine work nobody read, by end reason and phase")
            .description(
                "Requests the engine did not finish, by end reason and the phase they were in: "
                "prompt tokens processed, output tokens generated, request-seconds in the engine."
            )
            .datasource(CLICKHOUSE)
            .height(9)
            .span(12)
            .with_target(ClickHouseQueryBuilder("anatomy_unread"))
        )
        .with_panel(
            table.Panel()
            .title("Guardrail filters")
            .description("Invocations, busy time and decisions per stage and filter.")
            .datasource(CLICKHOUSE)
            .height(9)
            .span(12)
            .with_target(ClickHouseQueryBuilder("anatomy_guardrails"))
        )
    )


# --------------------------------------------------------------------------------------------
# Benchmark runs (ClickHouse)
# --------------------------------------------------------------------------------------------
def benchmark_runs() -> gdash.Dashboard:
    run = (
        gdash.QueryVariable("run")
        .label("Run")
        .datasource(CLICKHOUSE)
        .query(
            {
                "editorType": "sql",
                "format": CLICKHOUSE_FORMAT_TABLE,
                "queryType": "table",
                "rawSql": render_sql("runs_variable"),
            }
        )
        .refresh(mdash.VariableRefresh.ON_TIME_RANGE_CHANGED)
    )
    slo_ttft = gdash.TextBoxVariable("slo_ttft_ms").label("SLO: p99 TTFT (ms)").default_value("500")
    slo_tpot = gdash.TextBoxVariable("slo_tpot_ms").label("SLO: p99 TPOT (ms)").default_value("50")
    return (
        gdash.Dashboard("otelbench: Benchmark runs")
        .uid("otelbench-benchmark-runs")
        .tags(["otelbench"])
        .description(
            "Benchmark runs in ClickHouse (otel_traces run and client spans): every run in the "
            "time range compared, and one run's requests."
        )
        .time("now-7d", "now")
        .timezone("browser")
        .with_variable(run)
        .with_variable(slo_ttft)
        .with_variable(slo_tpot)
        .with_panel(
            xychart.Panel()
            .title("Throughput-latency curve (one point per run)")
            .description("Successful requests/s against p99 TTFT and p99 TPOT.")
            .datasource(CLICKHOUSE)
            .height(9)
            .span(12)
            .with_target(ClickHouseQueryBuilder("runs_curve"))
        )
        .with_panel(
            stat.Panel()
            .title("Knee (max throughput / p99 latency)")
            .description("The run with the highest power, throughput / p99 end-to-end latency.")
            .datasource(CLICKHOUSE)
            .height(9)
            .span(6)
            .reduce_options(_all_fields())
            .with_target(ClickHouseQueryBuilder("runs_knee"))
        )
        .with_panel(
            stat.Panel()
            .title("Capacity under the SLO")
            .description("Highest throughput of a run meeting the SLO variables, no failures.")
            .datasource(CLICKHOUSE)
            .unit("reqps")
            .height(9)
            .span(6)
            .reduce_options(_all_fields())
            .with_target(ClickHouseQueryBuilder("runs_capacity"))
        )
        .with_panel(
            table.Panel()
            .title("Runs compared: load, throughput, latency, verdicts")
            .description("slo: the SLO variables met; methodology: no declared deviation.")
            .datasource(CLICKHOUSE)
            .height(10)
            .span(24)
            .with_target(ClickHouseQueryBuilder("runs_table"))
        )
        .with_panel(
            timeseries.Panel()
            .title("Run ${run}: TTFT and end-to-end latency per request")
            .datasource(CLICKHOUSE)
            .unit("ms")
            .height(9)
            .span(24)
            .with_target(ClickHouseQueryBuilder("run_requests", table_format=False))
        )
    )


DASHBOARDS: Final[dict[str, Callable[[], gdash.Dashboard]]] = {
    "serving-overview": serving_overview,
    "application-clients": application_clients,
    "request-anatomy": request_anatomy,
    "benchmark-runs": benchmark_runs,
}
"""File stem -> builder of every dashboard (registered, not branched)."""


def _without_nulls(value: JsonValue) -> JsonValue:
    """The SDK writes unset options as ``null``; Grafana wants them absent (its defaults)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def build_all() -> dict[str, JsonObject]:
    """Every dashboard's JSON model, by file stem."""
    out: dict[str, JsonObject] = {}
    for stem, builder in DASHBOARDS.items():
        model = _without_nulls(json.loads(json.dumps(builder().build(), cls=JSONEncoder)))
        assert isinstance(model, dict)  # a dashboard is a JSON object
        out[stem] = model
    return out


def dump(model: JsonObject) -> str:
    """The committed text of a dashboard: sorted keys, two-space indent, final newline."""
    return json.dumps(model, indent=2, sort_keys=True) + "\n"


PROVISIONED_DASHBOARDS_PATH: Final = "/var/lib/grafana/dashboards/otelbench"
"""Where the provisioning provider expects ``dashboards/json`` to be mounted in Grafana."""


def provisioning_files() -> dict[str, str]:
    """Grafana's file-provisioning YAML, by path under ``dashboards/``: the three datasources
    (the same models ``otelbench dashboards push`` sends; ClickHouse's password from the
    ``CLICKHOUSE_PASSWORD`` environment variable of Grafana) and the dashboards provider."""
    yaml: Any = importlib.import_module("yaml")  # no stubs; as otelbench.documents
    datasources = datasource_models(
        prometheus_url="http://prometheus:9090",
        clickhouse_host="clickhouse",
        clickhouse_port=9000,
        clickhouse_database="otel",
        clickhouse_username="default",
        tempo_url="http://tempo:3200",
    )
    for model in datasources:
        model["editable"] = False
        if model["uid"] == names.DATASOURCE_CLICKHOUSE:
            model["secureJsonData"] = {"password": "$CLICKHOUSE_PASSWORD"}
    provider = {
        "name": "otelbench",
        "orgId": 1,
        "folder": names.FOLDER_TITLE,
        "folderUid": names.FOLDER_UID,
        "type": "file",
        "disableDeletion": False,
        "allowUiUpdates": False,
        "updateIntervalSeconds": 30,
        "options": {"path": PROVISIONED_DASHBOARDS_PATH, "foldersFromFilesStructure": False},
    }
    header = "# Generated by python -m otelbench.dashboards.build; do not edit.\n"
    return {
        "provisioning/datasources/otelbench.yaml": header
        + yaml.safe_dump({"apiVersion": 1, "datasources": datasources}, sort_keys=False),
        "provisioning/dashboards/otelbench.yaml": header
        + yaml.safe_dump({"apiVersion": 1, "providers": [provider]}, sort_keys=False),
    }


def generated_files() -> dict[str, str]:
    """Every generated file, by path under ``dashboards/``: ``json/<stem>.json`` and the
    provisioning YAML."""
    out = {f"json/{stem}.json": dump(model) for stem, model in build_all().items()}
    out.update(provisioning_files())
    return out


def write_all(root: Path) -> list[Path]:
    """Write every generated file under ``root`` (the repository's ``dashboards/``)."""
    written = []
    for relative, text in generated_files().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m otelbench.dashboards.build [ROOT]`` (default ``dashboards``)."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path("dashboards")
    for path in write_all(root):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
