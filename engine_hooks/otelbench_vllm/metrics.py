"""The hooks' OpenTelemetry metrics: histograms and counters recorded once per finished request.

Nothing here runs per token: :meth:`HookMetrics.record_finished` is called from
:meth:`otelbench_vllm.hook.RequestHook.on_finished` with what the span is built from, in vLLM's
API server process (the metrics are served on vLLM's own ``/metrics``, so they stay there when
the spans go to the exporter process). That is seven ``Histogram.record`` calls per finished
request (TTFT, TPOT, duration, queue, prefill, decode, preemptions), about 4 µs each with the SDK
on this project's 2-core VM: most of what the hooks still cost the API server per request.

The inter-token latency histogram is off by default (:data:`DEFAULT_ITL_RECORDS` = 0) and opt-in
with ``OTELBENCH_VLLM_ITL_RECORDS=N``: it would cost one more ``Histogram.record`` per gap, so at
most N per request, and at 16 it was two thirds of the metrics' cost per finished request, which
is the API server's CPU and so vLLM's throughput where that process is the bottleneck. What it
would show is already measured twice over: every gap of every request is on the server span
(``otelbench.server.token_offsets_us``, from which otelbench's query layer computes ITL
percentiles, draft 4.2.4), and vLLM's own ``vllm:inter_token_latency_seconds`` histogram on the
same ``/metrics`` counts every token. With N set, a request with more than N gaps records an evenly
strided subset of them (every k-th gap), so the cost at a finish is bounded and every request
weighs the same in the histogram whatever its length (a per-request sample of its gaps, not a
per-token one: say so beside any quantile read from it).

The hook's health (spans ended / exported / failed / unaccounted, dropped by a full span spool,
requests dropped before the exporter process) is read from :class:`HookStats` by observable
instruments at collection time.

This module depends on ``opentelemetry-api`` only; readers and exporters are wired in
:mod:`otelbench_vllm.export`.

Example::

    metrics = HookMetrics(meter_provider, stats)
    metrics.record_finished(ttft=0.12, e2e=1.5, queue=0.01, prefill=0.1, decode=1.3,
                            token_ts=[...], preemptions=0)
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from otelbench_vllm import names

if TYPE_CHECKING:
    from otelbench_vllm.hook import HookStats

__all__ = [
    "DEFAULT_ITL_RECORDS",
    "DURATION_BUCKETS_S",
    "PREEMPTION_BUCKETS",
    "HookMetrics",
    "itl_records_from_env",
]

_log = logging.getLogger("vllm.plugins.otelbench")

DEFAULT_ITL_RECORDS = 0
"""Inter-token gaps recorded per request at most when ``OTELBENCH_VLLM_ITL_RECORDS`` is unset:
none (module docstring)."""


def itl_records_from_env() -> int:
    """``$OTELBENCH_VLLM_ITL_RECORDS`` as a count ≥ 0; :data:`DEFAULT_ITL_RECORDS` when unset or
    not a count (with a warning)."""
    raw = os.environ.get(names.ENV_VLLM_ITL_RECORDS, "").strip()
    if not raw:
        return DEFAULT_ITL_RECORDS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        _log.warning(
            "otelbench hooks: %s=%r is not a count; recording %d inter-token gaps per request",
            names.ENV_VLLM_ITL_RECORDS,
            raw,
            DEFAULT_ITL_RECORDS,
        )
        return DEFAULT_ITL_RECORDS
    return value


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
    """The instruments, created on one meter of ``meter_provider``; ``itl_records``: inter-token
    gaps recorded per request at most (None: :func:`itl_records_from_env`)."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider,
        stats: HookStats,
        itl_records: int | None = None,
    ) -> None:
        meter = meter_provider.get_meter(names.INSTRUMENTATION_SCOPE_HOOKS)
        self._stats = stats
        self.itl_records = itl_records if itl_records is not None else itl_records_from_env()

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
        self.requests = meter.create_counter(
            names.METRIC_SERVER_REQUESTS,
            unit="{request}",
            description="Requests ended, by end reason (and phase, for those that did not finish)",
        )
        self._finished = {names.SERVER_END_REASON: names.END_REASON_FINISHED}
        for name, field, description in (
            (names.METRIC_HOOK_SPANS_ENDED, "spans_ended", "Spans the hooks ended"),
            (names.METRIC_HOOK_SPANS_EXPORTED, "spans_exported", "Spans exported"),
            (names.METRIC_HOOK_SPANS_FAILED, "spans_export_failed", "Spans whose export failed"),
            (names.METRIC_HOOK_SPANS_DROPPED, "spans_dropped", "Spans dropped: spool full"),
        ):
            meter.create_observable_counter(
                name, callbacks=[self._observe(field)], unit="{span}", description=description
            )
        meter.create_observable_counter(
            names.METRIC_HOOK_RECORDS_DROPPED,
            callbacks=[self._observe("records_dropped")],
            unit="{request}",
            description="Finished requests dropped before the exporter process built their spans",
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
        end_reason: str = names.END_REASON_FINISHED,
        end_phase: str | None = None,
    ) -> None:
        """One ended request (seconds; None where the request never reached that phase). A
        request that did not finish (``end_phase`` set) counts in the requests counter with its
        reason and phase, and gives its TTFT, queue and prefill times where it completed them,
        but no decode time, TPOT or ITL (its decode was cut short)."""
        if end_phase is None:
            self.requests.add(1, self._finished)
        else:
            self.requests.add(
                1, {names.SERVER_END_REASON: end_reason, names.SERVER_END_PHASE: end_phase}
            )
        if ttft is not None:
            self.ttft.record(ttft)
        self.duration.record(e2e)
        if queue is not None:
            self.queue.record(queue)
        if prefill is not None:
            self.prefill.record(prefill)
        if end_phase is not None:
            self.request_preemptions.record(preemptions)
            if preemptions:
                self.preemptions.add(preemptions)
            return
        if decode is not None:
            self.decode.record(decode)
            if len(token_ts) > 1:
                self.tpot.record(decode / (len(token_ts) - 1))
        if self.itl_records:
            self._record_itl(token_ts)
        self.request_preemptions.record(preemptions)
        if preemptions:
            self.preemptions.add(preemptions)

    def _record_itl(self, token_ts: Sequence[float]) -> None:
        record_itl = self.itl.record
        most = self.itl_records
        gaps = len(token_ts) - 1
        if gaps <= most:
            for earlier, later in itertools.pairwise(token_ts):
                record_itl(later - earlier)
        else:
            step = gaps / most
            for k in range(most):
                i = int(k * step)
                record_itl(token_ts[i + 1] - token_ts[i])
