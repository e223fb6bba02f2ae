"""Warm-up before measurement (draft 4.5): warm the target, drain, probe, check stabilization.

The procedure, run by :func:`run_warmup` (the runner calls it when ``RunConfig.warmup`` is set)::

    probe × K  (before)                   K probe requests, one at a time
    ┌─ warm-up batch ───────────────────  closed loop at ``concurrency`` until at least
    │                                     ``min_requests`` requests AND ``min_output_tokens``
    │                                     output tokens have completed successfully (a failed
    │                                     request processed nothing; 4.5.1 item 2: "at least
    │                                     100 requests or 10,000 output tokens, whichever is
    │                                     greater" — i.e. both floors)
    │  drain                              every warm-up request has completed (4.5.1 item 3; the
    │                                     client cannot see the server's queue, only its own):
    │                                     the requests still in flight are counted, and the
    │                                     report checks it again from the stored spans
    │  probe × K  (after)                 K probe requests, one at a time
    └─ stabilized? else another round, up to ``max_rounds``

**Probe and stabilization (4.5.2), as defined here.** A probe is the warm-up workload's first
request, sent alone (nothing else in flight), K times in a row. Its latency is the end-to-end
latency (submit → end of the stream); TTFT is recorded too. The probe set's value is the
*median* latency of its K probes; "before" and "after" are the medians before the first round
and after the last. The target is *stabilized* when every one of the K consecutive post-warm-up
probes lies within ``threshold`` (10 %) of their median: ``max |xᵢ − median| / median <
threshold`` (:func:`probe_variation`). Fewer than two successful probes cannot show stability.

Warm-up requests come from the run's workload with seed ``run seed + WARMUP_SEED_OFFSET``: the
same distribution as the measured requests, but not the same prompts (an exact-prefix cache would
otherwise flatter the measurement). Every warm-up and probe request is sent and traced like a
measured one, with ``otelbench.request.phase`` = ``warmup`` / ``probe`` (measured requests carry
``measure``) so that queries can exclude them. Floors below the draft's (for tests and demos)
are recorded as a deviation, as is a warm-up that stopped short or did not stabilize.

Cold start (4.5.3): ``WarmupSpec(cold_start=True)`` skips warm-up and probes; the manifest says
so (``warmup.mode = "cold_start"``) and carries a note for the report.

Example::

    spec = WarmupSpec(min_requests=20, min_output_tokens=500, probes=3)   # scaled down: a demo
    config = RunConfig(target=url, model="m", load=load, warmup=spec)
    outcome = asyncio.run(execute_run(config))
    outcome.manifest["warmup"]["stabilized"]
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from otelbench import draft
from otelbench.client import CompletionResult
from otelbench.errors import ConfigError
from otelbench.loadgen.workloads import Workload, WorkloadRequest
from otelbench.metrics.warmup import probe_variation
from otelbench.model import report as rt
from otelbench.semconv import PHASE_PROBE, PHASE_WARMUP

__all__ = [
    "WARMUP_SEED_OFFSET",
    "SendFn",
    "WarmupOutcome",
    "WarmupSpec",
    "probe_summary",
    "probe_variation",
    "run_warmup",
]


DEFAULT_CONCURRENCY: Final = 8
"""Warm-up concurrency of an open-loop run (a closed-loop run warms at its own concurrency)."""
WARMUP_SEED_OFFSET: Final = 1_000_003
"""Warm-up requests are generated with ``run seed + WARMUP_SEED_OFFSET``."""
_MIN_FAILURES_TO_STOP: Final = 10

SendFn = Callable[[WorkloadRequest, str], Awaitable[CompletionResult]]
"""Sends one request in a phase (``warmup`` or ``probe``) and returns its result."""


@dataclass(frozen=True)
class WarmupSpec:
    """How to warm up (draft 4.5). The defaults are the draft's; lower floors are a deviation.

    ``cold_start=True`` skips warm-up and probes (4.5.3). ``concurrency=None`` warms a
    closed-loop run at its own concurrency, an open-loop run at :data:`DEFAULT_CONCURRENCY`.
    ``probes`` is K, the probe requests per probe set; ``threshold`` the stabilization bound;
    ``max_rounds`` how many warm-up rounds to try for stabilization; ``max_requests`` caps the
    warm-up requests of one round (a target that returns no tokens could never reach the floor).

    Example::

        WarmupSpec()                                   # the draft's procedure
        WarmupSpec(min_requests=10, min_output_tokens=100, probes=3)   # a scaled-down demo
        WarmupSpec(cold_start=True)                    # cold-start measurement
    """

    cold_start: bool = False
    min_requests: int = draft.WARMUP_MIN_REQUESTS
    min_output_tokens: int = draft.WARMUP_MIN_OUTPUT_TOKENS
    concurrency: int | None = None
    probes: int = 5
    threshold: float = draft.WARMUP_STABILIZATION_THRESHOLD
    max_rounds: int = 3
    max_requests: int = 5_000

    def __post_init__(self) -> None:
        if self.min_requests < 0 or self.min_output_tokens < 0:
            raise ConfigError("warm-up floors (requests, output tokens) must be >= 0")
        if self.min_requests == 0 and self.min_output_tokens == 0 and not self.cold_start:
            raise ConfigError("a warm-up needs min_requests or min_output_tokens > 0")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"warm-up concurrency must be >= 1, got {self.concurrency}")
        if self.probes < 2:
            raise ConfigError(f"warm-up needs at least 2 probes per set, got {self.probes}")
        if not self.threshold >= 0:
            raise ConfigError(f"stabilization threshold must be >= 0, got {self.threshold}")
        if self.max_rounds < 1:
            raise ConfigError(f"warm-up max_rounds must be >= 1, got {self.max_rounds}")
        if self.max_requests < max(self.min_requests, 1):
            raise ConfigError("warm-up max_requests must be >= min_requests")

    def deviations(self) -> list[str]:
        """Where this spec departs from draft 4.5 (empty for the defaults and for cold start)."""
        if self.cold_start:
            return []
        out = []
        if self.min_requests < draft.WARMUP_MIN_REQUESTS or self.min_output_tokens < (
            draft.WARMUP_MIN_OUTPUT_TOKENS
        ):
            out.append(
                f"warm-up scaled down to at least {self.min_requests} requests and "
                f"{self.min_output_tokens} output tokens (draft 4.5.1: at least "
                f"{draft.WARMUP_MIN_REQUESTS} requests or "
                f"{draft.WARMUP_MIN_OUTPUT_TOKENS:,} output tokens, whichever is greater)"
            )
        if self.threshold > draft.WARMUP_STABILIZATION_THRESHOLD:
            out.append(
                f"warm-up stabilization threshold {self.threshold:.0%} is looser than draft "
                f"4.5.2's {draft.WARMUP_STABILIZATION_THRESHOLD:.0%}"
            )
        return out


def _ms(us: int | None) -> float | None:
    return None if us is None else us / 1000.0


def probe_summary(results: Sequence[CompletionResult], threshold: float) -> rt.ProbeSet:
    """One probe set for the manifest: each probe's latency and TTFT (ms), their medians, the
    variation (:func:`probe_variation`) and whether it is below ``threshold``."""
    ok = [r for r in results if r.ok and r.end_offset_us is not None]
    lat = [r.end_offset_us / 1000.0 for r in ok if r.end_offset_us is not None]
    ttft = [t for t in (_ms(r.ttft_us) for r in ok) if t is not None]
    variation = probe_variation(lat)
    return {
        "probes": len(results),
        "ok": len(ok),
        "latency_ms": lat,
        "ttft_ms": ttft,
        "median_latency_ms": statistics.median(lat) if lat else None,
        "median_ttft_ms": statistics.median(ttft) if ttft else None,
        "variation": variation,
        "stabilized": variation is not None and variation < threshold,
    }


@dataclass
class WarmupOutcome:
    """What the warm-up did; :meth:`to_manifest` is the run manifest's ``warmup`` entry."""

    spec: WarmupSpec
    concurrency: int | None = None
    seed: int | None = None
    requests: int = 0
    failed: int = 0
    in_flight: int = 0
    """Warm-up requests not yet completed when the warm-up ended (0: drained)."""
    output_tokens: int = 0
    duration_s: float = 0.0
    probe_before: rt.ProbeSet | None = None
    rounds: list[rt.WarmupRound] = field(default_factory=list)
    stabilized: bool = False
    deviations: list[str] = field(default_factory=list)
    results: list[tuple[str, CompletionResult]] = field(default_factory=list)
    """(phase, result) of every warm-up and probe request, in completion order."""

    def to_manifest(self) -> rt.WarmupWarm | rt.WarmupColdStart:
        """The manifest's ``warmup`` entry (JSON-serialisable)."""
        s = self.spec
        if s.cold_start:
            return {
                "mode": "cold_start",
                "skipped": True,
                "reason": "cold start measurement: warm-up skipped (draft 4.5.3)",
                "deviations": [],
            }
        return {
            "mode": "warm",
            "procedure": "draft 4.5",
            "floors": {
                "min_requests": s.min_requests,
                "min_output_tokens": s.min_output_tokens,
                "rule": "both floors must be reached (draft 4.5.1: whichever is greater)",
            },
            "concurrency": self.concurrency,
            "seed": self.seed,
            "requests": self.requests,
            "failed": self.failed,
            "output_tokens": self.output_tokens,
            "duration_s": self.duration_s,
            "drained": self.in_flight == 0,
            "probe": {
                "k": s.probes,
                "request": "the warm-up workload's first request, sent alone, K times in a row",
                "metric": "median end-to-end latency of the K probes (TTFT also recorded)",
                "stabilization": "max |latency - median| / median of the K post-warm-up "
                "probes < threshold",
                "threshold": s.threshold,
            },
            "probe_before": self.probe_before,
            "probe_after": self.rounds[-1]["probe_after"] if self.rounds else None,
            "rounds": self.rounds,
            "stabilized": self.stabilized,
            "deviations": list(self.deviations),
        }


def _tokens(r: CompletionResult) -> int:
    if r.output_tokens is not None:
        return r.output_tokens
    return sum(r.chunk_tokens)


class _Items:
    """Warm-up requests from the workload, as many as needed (regenerated in doublings)."""

    def __init__(self, workload: Workload) -> None:
        self._workload = workload
        self._items: list[WorkloadRequest] = workload.requests(16)
        self._next = 0

    def first(self) -> WorkloadRequest:
        return self._items[0]

    def take(self) -> WorkloadRequest:
        if self._next >= len(self._items):
            self._items = self._workload.requests(2 * len(self._items))
        item = self._items[self._next]
        self._next += 1
        return item


async def _probe_set(
    spec: WarmupSpec, item: WorkloadRequest, send: SendFn, out: WarmupOutcome
) -> rt.ProbeSet:
    results = []
    for _ in range(spec.probes):
        r = await send(item, PHASE_PROBE)
        out.results.append((PHASE_PROBE, r))
        results.append(r)
    return probe_summary(results, spec.threshold)


async def _batch(
    spec: WarmupSpec, items: _Items, send: SendFn, concurrency: int, out: WarmupOutcome
) -> tuple[int, int, int, float]:
    """One warm-up round: closed loop until both floors are reached by successful requests,
    then drained; its requests, failures, output tokens and duration (s)."""
    issued = done = failed = tokens = 0
    stop: str | None = None
    started = time.perf_counter()

    def more() -> bool:
        nonlocal stop
        if stop is not None:
            return False
        # the requests in flight count as successes until they fail: the closed loop issues
        # no more than the floor asks (a failure issues another), the tokens are counted as
        # they come
        if issued - failed >= spec.min_requests and tokens >= spec.min_output_tokens:
            return False
        if issued >= spec.max_requests:
            stop = f"reached its cap of {spec.max_requests} requests"
            return False
        return True

    async def worker() -> None:
        nonlocal issued, done, failed, tokens, stop
        while more():
            issued += 1
            r = await send(items.take(), PHASE_WARMUP)
            out.results.append((PHASE_WARMUP, r))
            done += 1
            if r.ok:
                tokens += _tokens(r)
            else:
                failed += 1
                if failed >= _MIN_FAILURES_TO_STOP and 2 * failed > done and stop is None:
                    stop = f"stopped after {failed} of {done} warm-up requests failed"

    # Every worker returns only after its last request completed: the queue is drained.
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    out.in_flight += issued - done
    duration = time.perf_counter() - started
    out.requests += done
    out.failed += failed
    out.output_tokens += tokens
    if stop is None and tokens < spec.min_output_tokens:
        stop = f"ended with {tokens} output tokens"
    if stop is not None:
        out.deviations.append(
            f"warm-up round {len(out.rounds) + 1} {stop}, short of its floors "
            f"({spec.min_requests} requests, {spec.min_output_tokens} output tokens)"
        )
    return done, failed, tokens, duration


async def run_warmup(
    spec: WarmupSpec,
    workload: Workload,
    send: SendFn,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> WarmupOutcome:
    """Run the warm-up procedure of ``spec`` (see the module docstring) and return its outcome.

    ``workload`` supplies the warm-up requests (the runner passes the run's workload with seed
    ``run seed + WARMUP_SEED_OFFSET``); ``send(item, phase)`` sends one request and returns its
    result (the runner's sender, which traces it with ``otelbench.request.phase``);
    ``concurrency`` is used unless ``spec.concurrency`` is set. Target failures are results: a
    warm-up that falls short is recorded in ``deviations``, never raised.

    Example::

        outcome = await run_warmup(WarmupSpec(), workload, send, concurrency=4)
        outcome.to_manifest()["stabilized"]
    """
    out = WarmupOutcome(spec, seed=workload.seed)
    out.deviations.extend(spec.deviations())
    if spec.cold_start:
        return out
    out.concurrency = spec.concurrency or concurrency
    started = time.perf_counter()
    items = _Items(workload)
    probe = items.first()
    out.probe_before = await _probe_set(spec, probe, send, out)
    for _ in range(spec.max_rounds):
        done, failed, tokens, duration = await _batch(spec, items, send, out.concurrency, out)
        round_: rt.WarmupRound = {
            "requests": done,
            "failed": failed,
            "output_tokens": tokens,
            "duration_s": duration,
            "probe_after": await _probe_set(spec, probe, send, out),
        }
        out.rounds.append(round_)
        if round_["probe_after"]["stabilized"]:
            out.stabilized = True
            break
    out.duration_s = time.perf_counter() - started
    if not out.stabilized:
        last = out.rounds[-1]["probe_after"]
        var = last["variation"]
        shown = "unknown" if var is None else f"{var:.1%}"
        out.deviations.append(
            f"latency had not stabilized after {len(out.rounds)} warm-up round(s): probe "
            f"variation {shown}, threshold {spec.threshold:.0%} (draft 4.5.2)"
        )
    return out
