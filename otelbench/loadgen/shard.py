"""One host's part of a run sent from many hosts: shard *I* of *N* of one seeded schedule.

A run too large for one load-generator host is split over *N* hosts, each running
``otelbench run --shard I/N`` with the same ``--run-id``, seed, workload, load and
``--start-at``. Every host computes the whole schedule from the seed (the workload's requests and,
open loop, every send offset) and sends only its shard's part, so the union of the shards is
exactly the schedule one host would send, and every request keeps its index and send time:

* open loop (draft 4.2.3, 4.2.5): request *i* belongs to shard *i* mod N, sent at the agreed
  start + its offset; each shard's arrivals are a thinning of the one process, and all of them
  together are the process itself;
* closed loop (draft 4.2.4): the C streams are numbered; stream *s* belongs to shard *s* mod N
  and request *i* to the shard of stream *i* mod C (C ≥ N: every shard has a stream).

This is :func:`~otelbench.loadgen.share.split_load` one level up (shards of hosts, then each
shard's worker processes). The warm-up (draft 4.5) runs once, on
:data:`~otelbench.semconv.WARMUP_SHARD`, before
the agreed start; the other shards wait for the start.

Clock domains: the agreed start is a wall-clock instant (``--start-at``, Unix seconds: the only
clock the hosts share, synchronised as draft 4.7.2 requires; :mod:`otelbench.loadgen.clocksync`
records the evidence); each host maps it once onto its own CLOCK_MONOTONIC (``t0``) and keeps
the schedule there, as a single host does.

Spans are the merge: every shard exports to the same collector, its run span's manifest carries
:meth:`Shard.manifest` and every request span ``otelbench.loadgen.shard``; the store joins the
shards of a run (:mod:`otelbench.query.shards`).

Example::

    shard = Shard(index=1, count=4, start_at_unix=1_790_000_000.0)
    part = shard_part(items, prompts, offsets_s, None, shard)   # a Share of requests 1, 5, 9 …
    t0, late_ns = agreed_t0(shard.start_at_unix)
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.loadgen.share import Prompt, Share, split_load
from otelbench.loadgen.workloads import WorkloadRequest
from otelbench.model.manifest import ShardManifest

__all__ = [
    "ENV_SHARD",
    "ENV_SHARD_INDEX",
    "Shard",
    "agreed_t0",
    "parse_shard",
    "parse_start",
    "shard_from_env",
    "shard_part",
]

ENV_SHARD: Final = "OTELBENCH_SHARD"
"""``I/N``: this host's shard, where ``--shard`` is not given."""
ENV_SHARD_INDEX: Final = "JOB_COMPLETION_INDEX"
"""Kubernetes' index of a pod of an Indexed Job: this host's shard *I*, with ``--shards N``."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` of one run, started at ``start_at_unix`` (wall clock, s)."""

    index: int
    count: int
    start_at_unix: float | None = None

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(
                f"shard {self.index}/{self.count}: give I/N with N >= 1 and 0 <= I < N"
            )
        if self.count > 1 and self.start_at_unix is None:
            raise ConfigError(
                "a run in several shards needs one agreed start: give every shard the same "
                "--start-at (Unix seconds), a little after the last host can be up"
            )

    @property
    def warms_up(self) -> bool:
        """Whether this shard runs the run's warm-up."""
        return self.index == semconv.WARMUP_SHARD

    def manifest(self, late_ns: int) -> ShardManifest:
        """The run manifest's ``shard`` entry: which part, on which host, and how late it
        started against the agreed start (ms; 0 when on time)."""
        return {
            "index": self.index,
            "count": self.count,
            "host": socket.gethostname(),
            "start_at_unix": self.start_at_unix,
            "start_late_ms": round(max(late_ns, 0) / 1e6, 3),
        }


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``; a one-line ConfigError otherwise."""
    index, sep, count = text.strip().partition("/")
    if not sep or not index.isdigit() or not count.isdigit():
        raise ConfigError(f"--shard {text!r}: expected I/N, e.g. 0/4")
    return int(index), int(count)


def parse_start(text: str) -> float:
    """``--start-at``: Unix seconds, or an ISO 8601 time with a zone (``…Z`` or ``+00:00``)."""
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise ConfigError(f"--start-at {text!r}: not a time")
        return seconds
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--start-at {text!r}: expected Unix seconds or ISO 8601, e.g. 2026-11-29T15:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ConfigError(f"--start-at {text!r}: give the time zone (e.g. a trailing Z)")
    return moment.timestamp()


def shard_from_env(env: Mapping[str, str], shards: int | None) -> tuple[int, int] | None:
    """This host's ``(I, N)`` from the environment: :data:`ENV_SHARD` (``I/N``), else
    :data:`ENV_SHARD_INDEX` (Kubernetes) with ``shards`` as N; None when neither is set."""
    if env.get(ENV_SHARD):
        return parse_shard(env[ENV_SHARD])
    index = env.get(ENV_SHARD_INDEX)
    if index is None:
        return None
    if shards is None:
        raise ConfigError(f"{ENV_SHARD_INDEX}={index} is set: give the shard count, --shards N")
    if not index.isdigit():
        raise ConfigError(f"{ENV_SHARD_INDEX}={index!r} is not a shard index")
    return int(index), shards


def shard_part(
    items: Sequence[WorkloadRequest],
    prompts: Sequence[Prompt],
    offsets_s: Sequence[float] | None,
    concurrency: int | None,
    shard: Shard,
) -> Share:
    """Shard ``shard``'s part of the run's requests (see the module docstring)."""
    if offsets_s is None and (concurrency or 0) < shard.count:
        raise ConfigError(
            f"a closed loop of {concurrency} streams cannot be split over {shard.count} shards: "
            "give --concurrency >= the shard count"
        )
    return split_load(items, prompts, offsets_s, concurrency, shard.count)[shard.index]


def agreed_t0(start_at_unix: float) -> tuple[int, int]:
    """The agreed wall-clock start on this host's CLOCK_MONOTONIC (``time.perf_counter_ns``),
    and how late this host is for it (ns, > 0 when the start has passed).

    The wall clock is read once, between two monotonic reads, and the start mapped through the
    midpoint: the mapping is as good as the host's clock synchronisation, no better.
    """
    before = time.perf_counter_ns()
    wall = time.time_ns()
    after = time.perf_counter_ns()
    now = (before + after) // 2
    t0 = now + round(start_at_unix * 1e6) * 1000 - wall  # µs: exact in a double
    return t0, now - t0
