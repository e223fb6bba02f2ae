"""Render window metrics in the Prometheus text exposition format (version 0.0.4).

Every metric name and label name comes from :mod:`otelbench.semconv` (the "live" heading).
A value that is undefined in a window (no request, fewer than 2 classes …) is left out rather
than exposed as NaN, so PromQL sees "no data" for it.

Example::

    text = render(window_metrics(window, config), config)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from otelbench import semconv
from otelbench.live.window import SourceMetrics, WindowConfig
from otelbench.metrics import Summary

__all__ = ["CONTENT_TYPE", "Exposition", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_SUMMARY_QUANTILES = (("0.5", "p50"), ("0.9", "p90"), ("0.95", "p95"), ("0.99", "p99"))

_HELP: Mapping[str, tuple[str, str]] = {
    semconv.METRIC_LIVE_REQUESTS: ("gauge", "Requests whose server span ended in the window."),
    semconv.METRIC_LIVE_ERRORS: ("gauge", "Requests in the window with span status Error."),
    semconv.METRIC_LIVE_REQUEST_RATE: ("gauge", "Requests in the window per second."),
    semconv.METRIC_LIVE_OUTPUT_TOKEN_RATE: ("gauge", "Output tokens per second in the window."),
    semconv.METRIC_LIVE_TTFT: ("gauge", "Server time to first token, by quantile."),
    semconv.METRIC_LIVE_ITL: ("gauge", "Inter-token latency (engine steps), by quantile."),
    semconv.METRIC_LIVE_TPOT: ("gauge", "Time per output token, by quantile."),
    semconv.METRIC_LIVE_E2E: ("gauge", "Server request duration, by quantile."),
    semconv.METRIC_LIVE_QUEUE: ("gauge", "Time in queue (TTFT component), by quantile."),
    semconv.METRIC_LIVE_PREFILL: ("gauge", "Prefill time (TTFT component), by quantile."),
    semconv.METRIC_LIVE_FLUIDITY: ("gauge", "Etalon fluidity-index, by quantile and D_d."),
    semconv.METRIC_LIVE_FLUID_FRACTION: ("gauge", "Fraction of requests with fluidity >= 0.9."),
    semconv.METRIC_LIVE_FLUID_TOKEN_RATE: ("gauge", "Etalon fluid token generation rate."),
    semconv.METRIC_LIVE_PREEMPTED_RATIO: ("gauge", "Preempted requests / observed requests."),
    semconv.METRIC_LIVE_PREEMPTION_RATE: ("gauge", "Preemptions per second in the window."),
    semconv.METRIC_LIVE_JAIN: ("gauge", "Jain's index across classes of the class means."),
    semconv.METRIC_LIVE_CLASS_REQUESTS: ("gauge", "Requests in the window per class."),
    semconv.METRIC_LIVE_SLO_ATTAINMENT: ("gauge", "Fraction of requests meeting the SLO."),
    semconv.METRIC_LIVE_GOODPUT: ("gauge", "Requests meeting every SLO per second."),
    semconv.METRIC_LIVE_GOODPUT_TOKENS: ("gauge", "Output tokens of SLO-meeting requests/s."),
    semconv.METRIC_LIVE_WINDOW: ("gauge", "Length of the sliding window."),
    semconv.METRIC_LIVE_SLO_TARGET: ("gauge", "Configured SLO thresholds."),
    semconv.METRIC_LIVE_REFRESH_TIMESTAMP: ("gauge", "End of the last refreshed window."),
    semconv.METRIC_LIVE_REFRESH_DURATION: ("gauge", "Duration of the last refresh."),
    semconv.METRIC_LIVE_REFRESH_SPANS: ("gauge", "Server spans read by the last refresh."),
    semconv.METRIC_LIVE_REFRESH_ERRORS: ("counter", "Refreshes that failed."),
    semconv.METRIC_LIVE_STORE_BYTES: (
        "gauge",
        "Size of the span store on disk (DuckDB: file + WAL; ClickHouse: otel_traces' parts).",
    ),
    semconv.METRIC_LIVE_RETENTION_DELETED: ("counter", "Spans deleted by the retention policy."),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    return repr(float(value))


@dataclass
class Exposition:
    """Samples grouped by metric name, rendered with one HELP/TYPE block each."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)

    def add(self, name: str, value: float | None, **labels: str) -> None:
        """One sample; ``None`` is left out. Label keys are written with their semconv names."""
        if name not in _HELP:
            raise KeyError(f"{name} is not a documented live metric")
        if value is None:
            return
        self.samples.setdefault(name, []).append((labels, float(value)))

    def text(self) -> str:
        """The exposition, metrics in name order, samples in insertion order."""
        lines: list[str] = []
        for name in sorted(self.samples):
            kind, help_text = _HELP[name]
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, value in self.samples[name]:
                if labels:
                    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                    lines.append(f"{name}{{{body}}} {_num(value)}")
                else:
                    lines.append(f"{name} {_num(value)}")
        return "\n".join(lines) + "\n"


def _labels(source: str, **extra: str) -> dict[str, str]:
    return {semconv.LABEL_SOURCE: source, **extra}


def _quantiles(exp: Exposition, name: str, source: str, summary: Summary) -> None:
    for label, attr in _SUMMARY_QUANTILES:
        exp.add(name, getattr(summary, attr), **_labels(source, **{semconv.LABEL_QUANTILE: label}))


def _deadline(seconds: float) -> str:
    return f"{seconds:g}"


def add_source(exp: Exposition, m: SourceMetrics) -> None:
    """Every sample of one source."""
    s = m.source
    exp.add(semconv.METRIC_LIVE_REQUESTS, m.requests, **_labels(s))
    exp.add(semconv.METRIC_LIVE_ERRORS, m.errors, **_labels(s))
    exp.add(semconv.METRIC_LIVE_REQUEST_RATE, m.requests_per_s, **_labels(s))
    exp.add(semconv.METRIC_LIVE_OUTPUT_TOKEN_RATE, m.output_tokens_per_s, **_labels(s))
    for name, summary in (
        (semconv.METRIC_LIVE_TTFT, m.ttft_s),
        (semconv.METRIC_LIVE_ITL, m.itl_s),
        (semconv.METRIC_LIVE_TPOT, m.tpot_s),
        (semconv.METRIC_LIVE_E2E, m.e2e_s),
        (semconv.METRIC_LIVE_QUEUE, m.queue_s),
        (semconv.METRIC_LIVE_PREFILL, m.prefill_s),
    ):
        _quantiles(exp, name, s, summary)
    for f in m.fluidity:
        dd = {semconv.LABEL_DECODE_DEADLINE: _deadline(f.decode_deadline_s)}
        for q, value in f.quantiles.items():
            exp.add(
                semconv.METRIC_LIVE_FLUIDITY,
                value,
                **_labels(s, **dd, **{semconv.LABEL_QUANTILE: f"{q / 100:g}"}),
            )
        exp.add(semconv.METRIC_LIVE_FLUID_FRACTION, f.fraction_fluid, **_labels(s, **dd))
    if m.fluid_rate is not None:
        exp.add(semconv.METRIC_LIVE_FLUID_TOKEN_RATE, m.fluid_rate.tokens_per_s, **_labels(s))
    exp.add(semconv.METRIC_LIVE_PREEMPTED_RATIO, m.preemptions.rate, **_labels(s))
    if m.preemptions.requests_observed:
        exp.add(semconv.METRIC_LIVE_PREEMPTION_RATE, m.preemptions_per_s, **_labels(s))
    for over, value in m.jain.items():
        exp.add(semconv.METRIC_LIVE_JAIN, value, **_labels(s, **{semconv.LABEL_OVER: over}))
    for label, count in m.class_requests.items():
        exp.add(
            semconv.METRIC_LIVE_CLASS_REQUESTS, count, **_labels(s, **{semconv.LABEL_CLASS: label})
        )
    for slo, value in m.slo_attainment.items():
        exp.add(semconv.METRIC_LIVE_SLO_ATTAINMENT, value, **_labels(s, **{semconv.LABEL_SLO: slo}))
    exp.add(semconv.METRIC_LIVE_GOODPUT, m.goodput_requests_per_s, **_labels(s))
    exp.add(semconv.METRIC_LIVE_GOODPUT_TOKENS, m.goodput_tokens_per_s, **_labels(s))


def render(
    metrics: Iterable[SourceMetrics],
    config: WindowConfig,
    extra: Mapping[str, float | None] | None = None,
) -> Exposition:
    """The exposition of every source's metrics, the configuration and ``extra`` unlabelled
    samples (the watcher's own: refresh time, store size …)."""
    exp = Exposition()
    for m in metrics:
        add_source(exp, m)
    exp.add(semconv.METRIC_LIVE_WINDOW, config.window_s)
    for slo, target in (("ttft", config.slo_ttft_s), ("tpot", config.slo_tpot_s)):
        exp.add(semconv.METRIC_LIVE_SLO_TARGET, target, **{semconv.LABEL_SLO: slo})
    for name, value in (extra or {}).items():
        exp.add(name, value)
    return exp
