"""The OpenTelemetry GenAI client metrics, recorded from what the instrumented transports measured.

Four histograms of the GenAI semantic conventions (names from ``opentelemetry-semantic-conventions``
through :mod:`otelbench.semconv`; the package's ``create_*`` helpers give no bucket advice, so
the instruments are created here with the conventions' explicit bucket boundaries):

============================================== ======== ==========================================
metric                                          unit     value, when
============================================== ======== ==========================================
``gen_ai.client.operation.duration``            s        T_submit → end of the response (the
                                                         client span's duration); every request,
                                                         failed ones with ``error.type``
``gen_ai.client.token.usage``                   {token}  input and output tokens, with
                                                         ``gen_ai.token.type``; only when the
                                                         server reported usage (a streamed request
                                                         must ask for it:
                                                         ``stream_options={"include_usage": True}``)
``gen_ai.client.operation.time_to_first_chunk`` s        streamed responses: T_submit → first SSE
                                                         ``data:`` event of any kind (the span's
                                                         ``gen_ai.response.time_to_first_chunk``)
``gen_ai.client.operation.time_per_output_chunk`` s      streamed responses: for each output chunk
                                                         after the first, the gap from the previous
                                                         one (output chunks: those carrying text,
                                                         the span's ``chunk_offsets_us``)
============================================== ======== ==========================================

Attributes, as the conventions list them: ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model`` (when the request named one), ``server.address``, ``server.port``,
``gen_ai.response.model`` (when the response named one), and ``error.type`` on the duration of a
failed request (its values: the transport module's list). No run, request or class identifiers:
metric attributes stay low-cardinality; the spans carry those.

Each value is recorded once, when the request ends (the per-chunk gaps too, from the chunk
offsets: the per-read hot path only appends). The Python SDK takes about 9 µs per recorded value
(7 attributes; measured here), so a streamed call costs roughly 50 µs plus 9 µs per output
chunk, spent when the stream ends, outside the timed path. Nothing is recorded, and the response
is not parsed for it, while no meter provider is set (the API's default): then the metrics cost
one check per request (~1-2 µs, before T_submit). Draft sections: TTFT 5.1.3.1 (the span's
``ttft_us``, not the first-chunk time here), inter-chunk timing 4.6.3 Option A.

Example::

    from opentelemetry.sdk.metrics import MeterProvider
    transport = InstrumentedTransport(meter_provider=MeterProvider(metric_readers=[reader]))
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider

from otelbench import __version__, semconv

__all__ = ["DURATION_BUCKETS_S", "TOKEN_BUCKETS", "GenAIClientMetrics", "Measured"]

DURATION_BUCKETS_S: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The conventions' bucket advice for the three durations (seconds)."""
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The conventions' bucket advice for ``gen_ai.client.token.usage``."""

_INERT: Final = (NoOpMeterProvider, _ProxyMeterProvider)
"""Providers that record nothing: the no-op one, and the API's global placeholder until an SDK
provider is set (its instruments then start recording, and so does this module)."""


class Measured(Protocol):
    """What a finished request's measurement offers (``transport.Measurement`` has it all)."""

    streaming: bool
    end_offset_us: int | None
    first_event_offset_us: int | None
    chunk_offsets_us: list[int]
    input_tokens: int | None
    output_tokens: int | None
    response_model: str | None
    error_type: str | None


class GenAIClientMetrics:
    """The four instruments, from ``meter_provider`` (default: the global one)."""

    __slots__ = ("_duration", "_live", "_provider", "_tokens", "_tpoc", "_ttfc")

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self._provider = meter_provider
        self._live = False
        meter = metrics.get_meter(
            semconv.INSTRUMENTATION_SCOPE, __version__, meter_provider=meter_provider
        )
        seconds = list(DURATION_BUCKETS_S)
        self._duration = meter.create_histogram(
            semconv.METRIC_CLIENT_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=seconds,
        )
        self._tokens = meter.create_histogram(
            semconv.METRIC_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self._ttfc = meter.create_histogram(
            semconv.METRIC_CLIENT_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=seconds,
        )
        self._tpoc = meter.create_histogram(
            semconv.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK,
            unit="s",
            description="Time per output chunk after the first, from the end of the previous one.",
            explicit_bucket_boundaries_advisory=seconds,
        )

    @property
    def live(self) -> bool:
        """Whether a recording meter provider is in effect: checked per request (~2 µs) until
        one is (the global provider is set once, and then for good)."""
        if not self._live:
            provider = self._provider or metrics.get_meter_provider()
            self._live = not isinstance(provider, _INERT)
        return self._live

    def record(self, m: Measured, request_attributes: dict[str, Any]) -> None:
        """Record one finished request. ``request_attributes``: the span's start attributes
        (operation, provider, request model, server address and port)."""
        attrs = dict(request_attributes)
        if m.response_model is not None:
            attrs[semconv.GEN_AI_RESPONSE_MODEL] = m.response_model
        if m.end_offset_us is not None:
            duration_attrs = attrs
            if m.error_type is not None:
                duration_attrs = {**attrs, semconv.ERROR_TYPE: m.error_type}
            self._duration.record(m.end_offset_us / 1e6, duration_attrs)
        for count, token_type in (
            (m.input_tokens, semconv.TOKEN_TYPE_INPUT),
            (m.output_tokens, semconv.TOKEN_TYPE_OUTPUT),
        ):
            if count is not None:
                self._tokens.record(count, {**attrs, semconv.GEN_AI_TOKEN_TYPE: token_type})
        if not m.streaming:
            return
        if m.first_event_offset_us is not None:
            self._ttfc.record(m.first_event_offset_us / 1e6, attrs)
        offsets = m.chunk_offsets_us
        for i in range(1, len(offsets)):
            self._tpoc.record((offsets[i] - offsets[i - 1]) / 1e6, attrs)
