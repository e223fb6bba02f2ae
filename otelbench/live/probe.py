"""``otelbench probe``: a low-rate, tagged benchmark stream sent alongside live traffic.

The probe is the load generator (:func:`otelbench.loadgen.runner.execute_run`) run in
**segments** of ``ceil(rate × segment_s)`` requests at ``rate`` requests/s (Poisson arrivals),
each segment an ordinary otelbench run (its run span and manifest, run id ``<stream>-<n>``),
until ``ceil(rate × duration_s)`` requests are sent (forever without ``duration_s``). Every
span its tracer starts carries :data:`~otelbench.semconv.PROBE_STREAM` (a span processor sets
it when the span starts), and its ``service.name`` is :data:`~otelbench.semconv.SERVICE_PROBE`.
The client spans send
``traceparent``, so the server span of a probe request (engine hooks, vLLM) is the client span's
child: ``otelbench watch`` reports it under ``source="probe"``, not as live traffic
(:func:`~otelbench.live.query.extract_window`).

Example::

    otelbench probe --target http://vllm:8000 --model m --rate 0.2 \\
        --otlp-endpoint http://watch:4318 --stream canary

    outcome = asyncio.run(run_probe(ProbeConfig(target=url, model="m", rate=0.5,
                                                 segment_s=10, duration_s=30),
                                    tracer_provider=provider))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import SpanProcessor

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec, RunConfig, RunOutcome, execute_run
from otelbench.model.jsonvalue import JsonObject

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider

__all__ = ["ProbeConfig", "ProbeTagger", "run_probe"]


class ProbeTagger(SpanProcessor):
    """A span processor that puts :data:`~otelbench.semconv.PROBE_STREAM` on every span it
    sees start (add it to the probe's tracer provider)."""

    def __init__(self, stream: str) -> None:
        super().__init__()
        self.stream = stream

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span.set_attribute(semconv.PROBE_STREAM, self.stream)

    def on_end(self, span: ReadableSpan) -> None:
        pass


@dataclass(frozen=True)
class ProbeConfig:
    """One probe stream: where, what, how fast, how long."""

    target: str
    model: str
    rate: float
    stream: str = "probe"
    segment_s: float = 300.0
    duration_s: float | None = None
    workload: str = "synthetic-uniform"
    workload_params: JsonObject = field(default_factory=dict)
    seed: int = 42
    timeout_s: float = 120.0
    ignore_eos: bool = False
    extra_body: JsonObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ConfigError("--rate must be > 0 (requests/s)")
        if not self.segment_s > 0 or (self.duration_s is not None and not self.duration_s > 0):
            raise ConfigError("--segment and --duration must be > 0")
        if not self.stream:
            raise ConfigError("--stream must not be empty")

    def segment_requests(self, seconds: float) -> int:
        """Requests of a segment of ``seconds`` (at least 1)."""
        return max(1, math.ceil(self.rate * seconds))


async def run_probe(
    config: ProbeConfig,
    *,
    tracer_provider: TracerProvider | None = None,
    keep_records: bool = True,
) -> list[RunOutcome]:
    """Run the probe's segments one after another; returns each segment's outcome.

    ``tracer_provider`` should carry a :class:`ProbeTagger` (``probe`` adds one); per-request
    failures are results, as in any run. ``keep_records=False`` (``otelbench probe``, which may
    run for ever: its results are its spans) keeps each segment's tally, not its records
    (:class:`~otelbench.loadgen.runner.RunOutcome`).
    """
    outcomes: list[RunOutcome] = []
    per_segment = config.segment_requests(config.segment_s)
    left = None if config.duration_s is None else config.segment_requests(config.duration_s)
    segment = 0
    while left is None or left > 0:
        n = per_segment if left is None else min(per_segment, left)
        run = RunConfig(
            target=config.target,
            model=config.model,
            load=LoadSpec(mode="poisson", requests=n, rate=config.rate),
            seed=config.seed + segment,
            workload=config.workload,
            workload_params=dict(config.workload_params),
            timeout_s=config.timeout_s,
            ignore_eos=config.ignore_eos,
            extra_body=dict(config.extra_body),
            run_id=f"{config.stream}-{segment}",
            sut={"probe": {"stream": config.stream, "rate": config.rate}},
        )
        outcomes.append(
            await execute_run(run, tracer_provider=tracer_provider, keep_records=keep_records)
        )
        segment += 1
        if left is not None:
            left -= n
    return outcomes
