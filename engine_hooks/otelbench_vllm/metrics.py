"""The hooks' OpenTelemetry metrics: histograms and counters recorded once per finished request.

Nothing here runs per token: :meth:`HookMetrics.record_finished` is called from
:meth:`otelbench_vllm.hook.RequestHook.on_finished` with what the span is built from. The
inter-token latency histogram gets the gaps between consecutive token steps of the request, at most
:data:`MAX_ITL_RECORDS` of them (one ``Histogram.record`` each, about 10 µs with the SDK): a
request with more gaps records an evenly strided subset of them (every k-th gap), so the cost at
a finish is bounded and every request weighs the same in the ITL histogram, whatever its length
(a per-request sample of its gaps, not a per-token one: say so beside any quantile read from it).
With 64 records the whole finish (span and metrics) cost about 1.15 ms on this project's 2-core
VM (``bench/hook_hot_path.py``), two thirds of it these records; 16 bring it to about half. Every
gap of every request is on the span (``token_offsets_us``), and vLLM's own
``vllm:inter_token_latency_seconds`` histogram counts every token. The hook's health (spans
ended / exported / failed / unaccounted, and dropped by a full span spool) is read from
:class:`HookStats` by observable instruments at collection time.

This module depends on ``opentelemetry-api`` only; readers and exporters are wired in
:mod:`otelbench_vllm.export`.

Example::

    metrics = HookMetrics(meter_provider, stats)
    metrics.record_finished(ttft=0.12, e2e=1.5, queue=0.01, prefill=0.1, decode=1.3,
                            token_ts=[...], preemptions=0)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from otelbench_vllm import names

if TYPE_CHECKING:
    from otelbench_vllm.hook import HookStats

__all__ = ["DURATION_BUCKETS_S", "MAX_ITL_RECORDS", "PREEMPTION_BUCKETS", "HookMetrics"]

MAX_ITL_RECORDS = 16
"""Inter-token gaps recorded per request at most (an evenly strided subset beyond that)."""

DURATION_BUCKETS_S: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075,
    0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5,
    0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0,
    180.0, 300.0, 600.0,
)  # fmt: skip
"""Explicit bucket boundaries (seconds) of every duration histogram: 100 µs to 10 min, about
1.3-2× apart (so one bucket is a relative error of at most 2×, and much less below 1 s)."""

PREEMPTION_BUCKETS: tuple[float, ...] = (0, 1, 2, 3, 4, 5, 8, 10, 16, 32, 64)
"""Explicit bucket boundaries of the preemptions-per-request histogram."""


class HookMetrics:
    """The instruments, created on one meter of ``meter_provider``."""

    def __init__(self, meter_provider: metrics.MeterProvider, stats: HookStats) -> None:
        meter = meter_provider.get_meter(names.INSTRUMENTATION_SCOPE_HOOKS)
        self._stats = stats

        def seconds(name: str, description: str) -> metrics.Histogram:
            return meter.create_histogram(
                name,
                unit="s",
                description=description,
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S),
            )

        self.ttft = seconds(names.METRIC_SERVER_TTFT, "Arrival to the first token's engine step")
        self.tpot = seconds(
            names.METRIC_SERVER_TPOT, "Decode time per output token after the first"
        )
        self.duration = seconds(names.METRIC_SERVER_REQUEST_DURATION, "Arrival to finish")
        self.queue = seconds(names.METRIC_HOOK_QUEUE, "Engine-core queued to first scheduled")
        self.prefill = seconds(names.METRIC_HOOK_PREFILL, "First scheduled to first token")
        self.decode = seconds(names.METRIC_HOOK_DECODE, "First token to last token")
        self.itl = seconds(names.METRIC_HOOK_ITL, "Gap between consecutive output-token steps")
        self.request_preemptions = meter.create_histogram(
            names.METRIC_HOOK_REQUEST_PREEMPTIONS,
            unit="{preemption}",
            description="Preemptions per finished request",
            explicit_bucket_boundaries_advisory=list(PREEMPTION_BUCKETS),
        )
        self.preemptions = meter.create_counter(
            names.METRIC_HOOK_PREEMPTIONS,
            unit="{preemption}",
            description="Preemptions of finished requests",
        )
        for name, field, description in (
            (names.METRIC_HOOK_SPANS_ENDED, "spans_ended", "Spans the hooks ended"),
            (names.METRIC_HOOK_SPANS_EXPORTED, "spans_exported", "Spans exported"),
            (names.METRIC_HOOK_SPANS_FAILED, "spans_export_failed", "Spans whose export failed"),
            (names.METRIC_HOOK_SPANS_DROPPED, "spans_dropped", "Spans dropped: spool full"),
        ):
            meter.create_observable_counter(
                name, callbacks=[self._observe(field)], unit="{span}", description=description
            )
        meter.create_observable_up_down_counter(
            names.METRIC_HOOK_SPANS_UNACCOUNTED,
            callbacks=[self._observe("spans_unaccounted")],
            unit="{span}",
            description="Spans ended but neither exported nor failed (queued or dropped)",
        )

    def _observe(self, field: str) -> metrics.CallbackT:
        stats = self._stats

        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(int(getattr(stats, field)))]

        return callback

    def record_finished(
        self,
        *,
        ttft: float | None,
        e2e: float,
        queue: float | None,
        prefill: float | None,
        decode: float | None,
        token_ts: Sequence[float],
        preemptions: int,
    ) -> None:
        """One finished request (seconds; None where the request never reached that phase)."""
        if ttft is not None:
            self.ttft.record(ttft)
        self.duration.record(e2e)
        if queue is not None:
            self.queue.record(queue)
        if prefill is not None:
            self.prefill.record(prefill)
        if decode is not None:
            self.decode.record(decode)
            if len(token_ts) > 1:
                self.tpot.record(decode / (len(token_ts) - 1))
        record_itl = self.itl.record
        gaps = len(token_ts) - 1
        if gaps <= MAX_ITL_RECORDS:
            for earlier, later in itertools.pairwise(token_ts):
                record_itl(later - earlier)
        else:
            step = gaps / MAX_ITL_RECORDS
            for k in range(MAX_ITL_RECORDS):
                i = int(k * step)
                record_itl(token_ts[i + 1] - token_ts[i])
        self.request_preemptions.record(preemptions)
        if preemptions:
            self.preemptions.add(preemptions)
