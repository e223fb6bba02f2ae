"""The window metrics as Prometheus metric families, exposed through ``prometheus-client``.

:func:`families` turns one refresh (every source's :class:`~otelbench.live.window.SourceMetrics`,
the window configuration and the watcher's own numbers) into ``prometheus_client`` metric
families; :class:`WindowCollector` is a custom collector (``prometheus_client.registry.Collector``)
that yields the families of the last refresh, and :func:`encode` renders a registry in the format
a scrape's ``Accept`` header asks for (``prometheus_client.exposition.choose_encoder``): the
OpenMetrics text format 1.0 when asked (``application/openmetrics-text``, as Prometheus asks by
default) and the Prometheus text format 0.0.4 otherwise. ``prometheus-client`` writes both; no
line of either format is written here.

Every metric name and label name comes from :mod:`otelbench.semconv` (the "live" heading), and
each family declares its label names below. A value that is undefined in a window (no request,
fewer than 2 classes …) is left out rather than exposed as NaN, so PromQL sees "no data" for it.
The percentiles are the methodology's (draft 5.1.2.1, type-7, :mod:`otelbench.metrics.summary`),
exposed as summaries that hold their ``quantile`` samples only: a Prometheus summary is quantiles
over a sliding time window, which is what the window's are, while its optional ``_sum`` and
``_count`` are counters over the process's life, which a window's totals are not (so they are left
out; ``otelbench_live_requests`` counts the window). A gauge with a ``quantile`` label, as these
were typed before, is what ``promtool check metrics`` rejects ("non-summary metrics should not have
"quantile" label"); the series, their names, labels and values are the same as then.

Example::

    registry = CollectorRegistry()
    collector = WindowCollector()
    registry.register(collector)
    collector.publish(families(window_metrics(window, config).values(), config))
    body, content_type = encode(registry, "application/openmetrics-text; version=1.0.0")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from otelbench import semconv
from otelbench.live.window import SourceMetrics, WindowConfig
from otelbench.metrics import Summary

__all__ = ["FAMILIES", "Family", "WindowCollector", "encode", "families"]


@dataclass(frozen=True)
class Family:
    """What a metric is: its type, HELP text, label names (in order) and OpenMetrics unit."""

    kind: Literal["gauge", "counter", "summary"]
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""


_SOURCE = (semconv.LABEL_SOURCE,)
_QUANTILES = (semconv.LABEL_SOURCE, semconv.LABEL_QUANTILE)
_SUMMARY_QUANTILES = (("0.5", "p50"), ("0.9", "p90"), ("0.95", "p95"), ("0.99", "p99"))


def _gauge(help: str, labels: tuple[str, ...] = (), unit: str = "") -> Family:
    return Family("gauge", help, labels, unit)


def _quantiled(help: str, labels: tuple[str, ...] = _QUANTILES, unit: str = "seconds") -> Family:
    return Family("summary", help, labels, unit)


FAMILIES: Mapping[str, Family] = {
    semconv.METRIC_LIVE_REQUESTS: _gauge(
        "Requests whose server span ended in the window.", _SOURCE
    ),
    semconv.METRIC_LIVE_ERRORS: _gauge("Requests in the window with span status Error.", _SOURCE),
    semconv.METRIC_LIVE_CUT_REQUESTS: _gauge(
        "Requests in the window the engine did not finish, by end reason and phase.",
        (semconv.LABEL_SOURCE, semconv.LABEL_END_REASON, semconv.LABEL_END_PHASE),
    ),
    semconv.METRIC_LIVE_UNREAD_PROMPT_TOKENS: _gauge(
        "Prompt tokens the engine processed for requests it did not finish.", _SOURCE
    ),
    semconv.METRIC_LIVE_UNREAD_OUTPUT_TOKENS: _gauge(
        "Output tokens the engine generated for requests it did not finish.", _SOURCE
    ),
    semconv.METRIC_LIVE_UNREAD_ENGINE_SECONDS: _gauge(
        "Request-seconds in the engine of requests it did not finish.", _SOURCE, "seconds"
    ),
    semconv.METRIC_LIVE_REQUEST_RATE: _gauge("Requests in the window per second.", _SOURCE),
    semconv.METRIC_LIVE_OUTPUT_TOKEN_RATE: _gauge(
        "Output tokens per second in the window.", _SOURCE
    ),
    semconv.METRIC_LIVE_TTFT: _quantiled("Server time to first token, by quantile."),
    semconv.METRIC_LIVE_ITL: _quantiled("Inter-token latency (engine steps), by quantile."),
    semconv.METRIC_LIVE_TPOT: _quantiled("Time per output token, by quantile."),
    semconv.METRIC_LIVE_E2E: _quantiled("Server request duration, by quantile."),
    semconv.METRIC_LIVE_QUEUE: _quantiled("Time in queue (TTFT component), by quantile."),
    semconv.METRIC_LIVE_PREFILL: _quantiled("Prefill time (TTFT component), by quantile."),
    semconv.METRIC_LIVE_FLUIDITY: _quantiled(
        "Etalon fluidity-index, by quantile and D_d.",
        (semconv.LABEL_SOURCE, semconv.LABEL_DECODE_DEADLINE, semconv.LABEL_QUANTILE),
        unit="",
    ),
    semconv.METRIC_LIVE_FLUID_FRACTION: _gauge(
        "Fraction of requests with fluidity >= 0.9.",
        (semconv.LABEL_SOURCE, semconv.LABEL_DECODE_DEADLINE),
        "ratio",
    ),
    semconv.METRIC_LIVE_FLUID_TOKEN_RATE: _gauge("Etalon fluid token generation rate.", _SOURCE),
    semconv.METRIC_LIVE_PREEMPTED_RATIO: _gauge(
        "Preempted requests / observed requests.", _SOURCE, "ratio"
    ),
    semconv.METRIC_LIVE_PREEMPTION_RATE: _gauge("Preemptions per second in the window.", _SOURCE),
    semconv.METRIC_LIVE_JAIN: _gauge(
        "Jain's index across classes of the class means.",
        (semconv.LABEL_SOURCE, semconv.LABEL_OVER),
    ),
    semconv.METRIC_LIVE_CLASS_REQUESTS: _gauge(
        "Requests in the window per class.", (semconv.LABEL_SOURCE, semconv.LABEL_CLASS)
    ),
    semconv.METRIC_LIVE_SLO_ATTAINMENT: _gauge(
        "Fraction of requests meeting the SLO.", (semconv.LABEL_SOURCE, semconv.LABEL_SLO), "ratio"
    ),
    semconv.METRIC_LIVE_GOODPUT: _gauge("Requests meeting every SLO per second.", _SOURCE),
    semconv.METRIC_LIVE_GOODPUT_TOKENS: _gauge("Output tokens of SLO-meeting requests/s.", _SOURCE),
    semconv.METRIC_LIVE_WINDOW: _gauge("Length of the sliding window.", unit="seconds"),
    semconv.METRIC_LIVE_SLO_TARGET: _gauge(
        "Configured SLO thresholds.", (semconv.LABEL_SLO,), "seconds"
    ),
    semconv.METRIC_LIVE_REFRESH_TIMESTAMP: _gauge(
        "End of the last refreshed window.", unit="seconds"
    ),
    semconv.METRIC_LIVE_REFRESH_DURATION: _gauge("Duration of the last refresh.", unit="seconds"),
    semconv.METRIC_LIVE_REFRESH_SPANS: _gauge("Server spans read by the last refresh."),
    semconv.METRIC_LIVE_REFRESH_ERRORS: Family("counter", "Refreshes that failed."),
    semconv.METRIC_LIVE_STORE_BYTES: _gauge(
        "Size of the span store on disk (DuckDB: file + WAL; ClickHouse: otel_traces' parts).",
        unit="bytes",
    ),
    semconv.METRIC_LIVE_RETENTION_DELETED: Family(
        "counter", "Spans deleted by the retention policy."
    ),
}
"""Every live metric, by its semconv name (a counter's name ends in ``_total``, its samples'
name; ``prometheus-client`` names the family without it, as OpenMetrics does)."""


class _Families:
    """The families of one refresh, built sample by sample; a family appears once it has one."""

    def __init__(self) -> None:
        self._by_name: dict[str, Metric] = {}

    def add(self, name: str, value: float | None, **labels: str) -> None:
        """One sample of ``name`` (a key of :data:`FAMILIES`, with exactly its label names);
        ``None`` is left out."""
        spec = FAMILIES[name]
        if set(labels) != set(spec.labels):
            raise KeyError(f"{name} has the labels {spec.labels}, not {tuple(labels)}")
        if value is None:
            return
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = _new_family(name, spec)
        # the sample's name is the semconv name (a counter's ends in _total), its labels in the
        # declared order; add_sample because SummaryMetricFamily.add_metric takes only a count
        # and a sum, not quantiles
        family.add_sample(name, {k: labels[k] for k in spec.labels}, float(value))

    def sorted(self) -> tuple[Metric, ...]:
        """The families in name order."""
        return tuple(self._by_name[name] for name in sorted(self._by_name))


_FAMILY_TYPES: Mapping[str, Callable[..., Metric]] = {
    "gauge": GaugeMetricFamily,
    "counter": CounterMetricFamily,
    "summary": SummaryMetricFamily,
}


def _new_family(name: str, spec: Family) -> Metric:
    """An empty family (a counter's is named without ``_total``, as OpenMetrics names it)."""
    return _FAMILY_TYPES[spec.kind](name, spec.help, labels=spec.labels, unit=spec.unit)


def _quantiles(out: _Families, name: str, source: str, summary: Summary) -> None:
    for label, attr in _SUMMARY_QUANTILES:
        out.add(
            name,
            getattr(summary, attr),
            **{semconv.LABEL_SOURCE: source, semconv.LABEL_QUANTILE: label},
        )


def _add_source(out: _Families, m: SourceMetrics) -> None:
    """Every sample of one source."""
    src = {semconv.LABEL_SOURCE: m.source}
    out.add(semconv.METRIC_LIVE_REQUESTS, m.requests, **src)
    out.add(semconv.METRIC_LIVE_ERRORS, m.errors, **src)
    for (reason, phase), count in m.cut.items():
        labels = {semconv.LABEL_END_REASON: reason, semconv.LABEL_END_PHASE: phase}
        out.add(semconv.METRIC_LIVE_CUT_REQUESTS, count, **src, **labels)
    if m.cut:
        out.add(semconv.METRIC_LIVE_UNREAD_PROMPT_TOKENS, m.unread_prompt_tokens, **src)
        out.add(semconv.METRIC_LIVE_UNREAD_OUTPUT_TOKENS, m.unread_output_tokens, **src)
        out.add(semconv.METRIC_LIVE_UNREAD_ENGINE_SECONDS, m.unread_engine_s, **src)
    out.add(semconv.METRIC_LIVE_REQUEST_RATE, m.requests_per_s, **src)
    out.add(semconv.METRIC_LIVE_OUTPUT_TOKEN_RATE, m.output_tokens_per_s, **src)
    for name, summary in (
        (semconv.METRIC_LIVE_TTFT, m.ttft_s),
        (semconv.METRIC_LIVE_ITL, m.itl_s),
        (semconv.METRIC_LIVE_TPOT, m.tpot_s),
        (semconv.METRIC_LIVE_E2E, m.e2e_s),
        (semconv.METRIC_LIVE_QUEUE, m.queue_s),
        (semconv.METRIC_LIVE_PREFILL, m.prefill_s),
    ):
        _quantiles(out, name, m.source, summary)
    for f in m.fluidity:
        dd = {**src, semconv.LABEL_DECODE_DEADLINE: f"{f.decode_deadline_s:g}"}
        for q, value in f.quantiles.items():
            out.add(
                semconv.METRIC_LIVE_FLUIDITY,
                value,
                **dd,
                **{semconv.LABEL_QUANTILE: f"{q / 100:g}"},
            )
        out.add(semconv.METRIC_LIVE_FLUID_FRACTION, f.fraction_fluid, **dd)
    if m.fluid_rate is not None:
        out.add(semconv.METRIC_LIVE_FLUID_TOKEN_RATE, m.fluid_rate.tokens_per_s, **src)
    out.add(semconv.METRIC_LIVE_PREEMPTED_RATIO, m.preemptions.rate, **src)
    if m.preemptions.requests_observed:
        out.add(semconv.METRIC_LIVE_PREEMPTION_RATE, m.preemptions_per_s, **src)
    for over, value in m.jain.items():
        out.add(semconv.METRIC_LIVE_JAIN, value, **src, **{semconv.LABEL_OVER: over})
    for label, count in m.class_requests.items():
        out.add(semconv.METRIC_LIVE_CLASS_REQUESTS, count, **src, **{semconv.LABEL_CLASS: label})
    for slo, value in m.slo_attainment.items():
        out.add(semconv.METRIC_LIVE_SLO_ATTAINMENT, value, **src, **{semconv.LABEL_SLO: slo})
    out.add(semconv.METRIC_LIVE_GOODPUT, m.goodput_requests_per_s, **src)
    out.add(semconv.METRIC_LIVE_GOODPUT_TOKENS, m.goodput_tokens_per_s, **src)


def families(
    metrics: Iterable[SourceMetrics],
    config: WindowConfig,
    extra: Mapping[str, float | None] | None = None,
) -> tuple[Metric, ...]:
    """The metric families of every source's metrics, the configuration and ``extra`` unlabelled
    samples (the watcher's own: refresh time, store size …), in name order."""
    out = _Families()
    for m in metrics:
        _add_source(out, m)
    out.add(semconv.METRIC_LIVE_WINDOW, config.window_s)
    for slo, target in (("ttft", config.slo_ttft_s), ("tpot", config.slo_tpot_s)):
        out.add(semconv.METRIC_LIVE_SLO_TARGET, target, **{semconv.LABEL_SLO: slo})
    for name, value in (extra or {}).items():
        out.add(name, value)
    return out.sorted()


class WindowCollector(Collector):
    """A custom ``prometheus_client`` collector: yields the families last published.

    :meth:`publish` swaps the whole tuple at once, so a scrape sees one refresh, never a mix.
    """

    def __init__(self, published: tuple[Metric, ...] = ()) -> None:
        self._families = published

    def publish(self, published: tuple[Metric, ...]) -> None:
        """Replace the families a scrape returns."""
        self._families = published

    def collect(self) -> Iterator[Metric]:
        """The families of the last :meth:`publish`."""
        return iter(self._families)


def encode(registry: Collector, accept: str | None) -> tuple[bytes, str]:
    """``registry`` in the format ``accept`` (an HTTP ``Accept`` header) asks for, and its
    ``Content-Type``: OpenMetrics 1.0 for ``application/openmetrics-text``, else the Prometheus
    text format 0.0.4."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type
