"""The OpenTelemetry GenAI client metrics, recorded from what the instrumented transports measured.

Names, units, instruments, attributes and bucket advice are those of the GenAI semantic
conventions in ``open-telemetry/semantic-conventions-genai`` at commit ``066d4a7f``
(``docs/reference/semconv-genai/``; names through :mod:`otelbench.semconv`; the conventions' YAML
is read by ``tests/unit/client/test_semconv_genai.py``):

=================================================== ========= ===================================
metric                                              kind      value, when
=================================================== ========= ===================================
``gen_ai.client.inference.duration``                hist, s   T_submit → end of the response (the
                                                              span's duration); every call, a
                                                              failed one with ``error.type``
``gen_ai.client.inference.time_to_first_chunk``     hist, s   streamed calls: T_submit → first
                                                              chunk (SSE ``data:`` event)
``gen_ai.client.inference.time_per_output_chunk``   hist, s   streamed calls: every chunk after
                                                              the first (any ``data:`` event but
                                                              ``[DONE]``), gap from the previous
``gen_ai.client.inference.usage.input_tokens``,     counter   every call: the reported usage, or
``….output_tokens``, ``….cache_read.input_tokens``, {token}   0 (modality ``unknown``) without;
``….reasoning.output_tokens``                                 by ``gen_ai.token.modality``
``gen_ai.client.inference.operation.input_tokens``, hist,     every call, with ``error.type``:
``….operation.output_tokens``                       {token}   the reported usage, or 0
``otelbench.client.time_per_output_text_chunk``     hist, s   streamed calls, otelbench's own:
                                                              every chunk *carrying text* after
                                                              the first (the span's
                                                              ``chunk_offsets_us``)
=================================================== ========= ===================================

Attributes, as the conventions list them: ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model`` (when the request named one), ``server.address``, ``server.port``,
``gen_ai.response.model`` (when the response named one); ``error.type`` on the duration and the
per-call token histograms of a failed call (its values: the transport module's list); with
provider ``openai``, ``openai.response.service_tier`` and ``openai.response.system_fingerprint``
on the duration and the token metrics when the response carried them. ``gen_ai.token.modality``
on the usage counters: ``text`` for the completions API, ``unknown`` for chat (OpenAI's usage
does not split its totals by modality). ``cache_write`` is not recorded: OpenAI-compatible
servers do not report it. No run, request or class identifiers: metric attributes stay
low-cardinality; the spans carry those.

**Migration switch.** ``OTEL_SEMCONV_STABILITY_OPT_IN`` (comma-separated, as OpenTelemetry's
other migrations): ``gen_ai_legacy`` records the v1.41.0 names instead (the last in
``open-telemetry/semantic-conventions``: ``gen_ai.client.operation.duration``,
``gen_ai.client.token.usage`` with ``gen_ai.token.type``, recorded only when usage came,
``gen_ai.client.operation.time_to_first_chunk`` and ``.time_per_output_chunk``);
``gen_ai_legacy/dup`` records both. otelbench's own text-chunk metric is recorded either way.

**Exemplars.** Every value is recorded with the call's span as its context, so an SDK meter
provider's exemplars (trace-based by default) point at the span of the call they came from.

Each value is recorded once, when the request ends (the per-chunk gaps too, from the offsets:
the per-read hot path only appends). The Python SDK takes about 9 µs per recorded value, spent
when the stream ends, outside the timed path. Nothing is recorded, and the response is not
parsed for it, while no meter provider is set (the API's default): then the metrics cost one
check per request (~1-2 µs, before T_submit). Draft sections: TTFT 5.1.3.1 (the span's
``ttft_us``, not the first-chunk time here), inter-chunk timing 4.6.3 Option A.

Example::

    from opentelemetry.sdk.metrics import MeterProvider
    transport = InstrumentedTransport(meter_provider=MeterProvider(metric_readers=[reader]))
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import Final, Protocol

from opentelemetry import metrics
from opentelemetry.context import Context
from opentelemetry.metrics import Histogram, MeterProvider, NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.util.types import AttributeValue

from otelbench import __version__, semconv

__all__ = [
    "DURATION_BUCKETS_S",
    "TOKEN_BUCKETS",
    "GenAIClientMetrics",
    "Measured",
    "metric_generations",
]

DURATION_BUCKETS_S: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The conventions' bucket advice for the three durations (seconds)."""
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The conventions' bucket advice for the per-call token histograms."""

_INERT: Final = (NoOpMeterProvider, _ProxyMeterProvider)
"""Providers that record nothing: the no-op one, and the API's global placeholder until an SDK
provider is set (its instruments then start recording, and so does this module)."""

LATEST: Final = "latest"
LEGACY: Final = "legacy"


def metric_generations(opt_in: str | None = None) -> frozenset[str]:
    """Which names to record: ``{"latest"}`` by default, ``{"legacy"}`` with ``gen_ai_legacy``,
    both with ``gen_ai_legacy/dup``, from ``opt_in`` or else ``OTEL_SEMCONV_STABILITY_OPT_IN``.

    >>> sorted(metric_generations("http, gen_ai_legacy/dup"))
    ['latest', 'legacy']
    """
    value = os.environ.get(semconv.ENV_SEMCONV_OPT_IN, "") if opt_in is None else opt_in
    tokens = {t.strip() for t in value.split(",")}
    if semconv.OPT_IN_GEN_AI_LEGACY_DUP in tokens:
        return frozenset((LATEST, LEGACY))
    if semconv.OPT_IN_GEN_AI_LEGACY in tokens:
        return frozenset((LEGACY,))
    return frozenset((LATEST,))


class Measured(Protocol):
    """What a finished request's measurement offers (``transport.Measurement`` has it all)."""

    streaming: bool
    end_offset_us: int | None
    first_event_offset_us: int | None
    chunk_offsets_us: list[int]
    event_offsets_us: list[int]
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    reasoning_tokens: int | None
    response_model: str | None
    service_tier: str | None
    system_fingerprint: str | None
    error_type: str | None


_FIRST_CHUNK: Final = "Time to receive the first chunk of a streamed response."
_PER_CHUNK: Final = "Time per output chunk, for each chunk after the first."
_HISTOGRAMS: Final = (
    (
        semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK,
        "s",
        "Time per output chunk carrying text, for each such chunk after the first.",
        None,
    ),
    (
        semconv.METRIC_CLIENT_INFERENCE_DURATION,
        "s",
        "GenAI client inference operation duration.",
        LATEST,
    ),
    (semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK, "s", _FIRST_CHUNK, LATEST),
    (semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK, "s", _PER_CHUNK, LATEST),
    (
        semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS,
        "{token}",
        "The number of input (prompt) tokens used per inference operation.",
        LATEST,
    ),
    (
        semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS,
        "{token}",
        "The number of output (completion) tokens used per inference operation.",
        LATEST,
    ),
    (semconv.METRIC_CLIENT_OPERATION_DURATION, "s", "GenAI operation duration.", LEGACY),
    (
        semconv.METRIC_CLIENT_TOKEN_USAGE,
        "{token}",
        "Number of input and output tokens used.",
        LEGACY,
    ),
    (semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK, "s", _FIRST_CHUNK, LEGACY),
    (semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK, "s", _PER_CHUNK, LEGACY),
)
"""(name, unit, description, generation: None for otelbench's own, recorded either way)."""
_COUNTERS: Final = (
    (semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS, "Input tokens, cached included."),
    (semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS, "Output tokens, reasoning included."),
    (
        semconv.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
        "Input tokens served from a provider-managed cache.",
    ),
    (semconv.METRIC_CLIENT_USAGE_REASONING_OUTPUT_TOKENS, "Output tokens used for reasoning."),
)
"""Today's usage counters ({token})."""


def _gaps_s(offsets_us: list[int]) -> list[float]:
    return [(b - a) / 1e6 for a, b in itertools.pairwise(offsets_us)]


class GenAIClientMetrics:
    """The instruments, from ``meter_provider`` (default: the global one); ``opt_in``: the
    migration switch's value (default: ``OTEL_SEMCONV_STABILITY_OPT_IN``)."""

    __slots__ = ("_counters", "_h", "_latest", "_legacy", "_live", "_provider")

    def __init__(self, meter_provider: MeterProvider | None = None, opt_in: str | None = None):
        self._provider = meter_provider
        self._live = False
        generations = metric_generations(opt_in)
        self._latest = LATEST in generations
        self._legacy = LEGACY in generations
        meter = metrics.get_meter(
            semconv.INSTRUMENTATION_SCOPE, __version__, meter_provider=meter_provider
        )
        h: dict[str, Histogram] = {}
        self._counters = {}
        for name, unit, brief, generation in _HISTOGRAMS:
            if generation is None or generation in generations:
                buckets = DURATION_BUCKETS_S if unit == "s" else TOKEN_BUCKETS
                h[name] = meter.create_histogram(
                    name,
                    unit=unit,
                    description=brief,
                    explicit_bucket_boundaries_advisory=list(buckets),
                )
        if self._latest:
            for name, brief in _COUNTERS:
                self._counters[name] = meter.create_counter(name, unit="{token}", description=brief)
        self._h = h

    @property
    def live(self) -> bool:
        """Whether a recording meter provider is in effect: checked per request (~2 µs) until
        one is (the global provider is set once, and then for good)."""
        if not self._live:
            provider = self._provider or metrics.get_meter_provider()
            self._live = not isinstance(provider, _INERT)
        return self._live

    def record(
        self,
        m: Measured,
        request_attributes: Mapping[str, AttributeValue],
        context: Context | None = None,
    ) -> None:
        """Record one finished request. ``request_attributes``: the span's start attributes
        (operation, provider, request model, server address and port); ``context``: the call's
        span's (for exemplars)."""
        h, ctx = self._h, context
        attrs = dict(request_attributes)
        if m.response_model is not None:
            attrs[semconv.GEN_AI_RESPONSE_MODEL] = m.response_model
        usage_attrs = attrs
        if attrs.get(semconv.GEN_AI_PROVIDER_NAME) == semconv.PROVIDER_OPENAI:
            usage_attrs = dict(attrs)
            if m.service_tier is not None:
                usage_attrs[semconv.OPENAI_RESPONSE_SERVICE_TIER] = m.service_tier
            if m.system_fingerprint is not None:
                usage_attrs[semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT] = m.system_fingerprint
        failed = usage_attrs
        if m.error_type is not None:
            failed = {**usage_attrs, semconv.ERROR_TYPE: m.error_type}
        chunk_gaps = _gaps_s(m.event_offsets_us) if m.streaming else []
        first = m.first_event_offset_us if m.streaming else None
        if self._latest:
            if m.end_offset_us is not None:
                h[semconv.METRIC_CLIENT_INFERENCE_DURATION].record(
                    m.end_offset_us / 1e6, failed, ctx
                )
            self._usage(m, usage_attrs, failed, ctx)
            if first is not None:
                h[semconv.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK].record(
                    first / 1e6, attrs, ctx
                )
            tpoc = h[semconv.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK]
            for gap in chunk_gaps:
                tpoc.record(gap, attrs, ctx)
        if self._legacy:
            if m.end_offset_us is not None:
                duration_attrs = attrs
                if m.error_type is not None:
                    duration_attrs = {**attrs, semconv.ERROR_TYPE: m.error_type}
                h[semconv.METRIC_CLIENT_OPERATION_DURATION].record(
                    m.end_offset_us / 1e6, duration_attrs, ctx
                )
            for count, token_type in (
                (m.input_tokens, semconv.TOKEN_TYPE_INPUT),
                (m.output_tokens, semconv.TOKEN_TYPE_OUTPUT),
            ):
                if count is not None:
                    h[semconv.METRIC_CLIENT_TOKEN_USAGE].record(
                        count, {**attrs, semconv.GEN_AI_TOKEN_TYPE: token_type}, ctx
                    )
            if first is not None:
                h[semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK].record(first / 1e6, attrs, ctx)
            legacy_tpoc = h[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK]
            for gap in chunk_gaps:
                legacy_tpoc.record(gap, attrs, ctx)
        if m.streaming:
            text = h[semconv.METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK]
            for gap in _gaps_s(m.chunk_offsets_us):
                text.record(gap, attrs, ctx)

    def _usage(
        self,
        m: Measured,
        attrs: dict[str, AttributeValue],
        failed: dict[str, AttributeValue],
        ctx: Context | None,
    ) -> None:
        """The token counters and the per-call token histograms: every call, 0 without usage."""
        reported = m.input_tokens is not None or m.output_tokens is not None
        text_api = attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_TEXT_COMPLETION
        modality = (
            semconv.TOKEN_MODALITY_TEXT if reported and text_api else semconv.TOKEN_MODALITY_UNKNOWN
        )
        by_modality = {**attrs, semconv.GEN_AI_TOKEN_MODALITY: modality}
        c = self._counters
        for name, value in (
            (semconv.METRIC_CLIENT_USAGE_INPUT_TOKENS, m.input_tokens),
            (semconv.METRIC_CLIENT_USAGE_OUTPUT_TOKENS, m.output_tokens),
            (semconv.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, m.cached_tokens),
            (semconv.METRIC_CLIENT_USAGE_REASONING_OUTPUT_TOKENS, m.reasoning_tokens),
        ):
            c[name].add(value or 0, by_modality, ctx)
        self._h[semconv.METRIC_CLIENT_OPERATION_INPUT_TOKENS].record(
            m.input_tokens or 0, failed, ctx
        )
        self._h[semconv.METRIC_CLIENT_OPERATION_OUTPUT_TOKENS].record(
            m.output_tokens or 0, failed, ctx
        )
