"""The run manifest as types: what the load generator records of a run, on its run span.

The load generator (:func:`otelbench.loadgen.runner.execute_run`) writes one
:class:`RunManifest` per run (per shard, for a run sent from several hosts) as JSON on the run
span's ``otelbench.run.manifest`` attribute. The store side reads it back once
(:func:`otelbench.query.extract.list_runs`: parsed, brought to today's shape by
:func:`otelbench.query.records.upgrade_manifest`, checked against :class:`RunManifest` with
:func:`~otelbench.model.conform.conforms`), joins the shards' manifests of one run
(:func:`otelbench.query.shards.join_shards`) and the report copies its parts into ``run``
(``docs/report-schema.md``, section ``run``).

Where the manifest's object is the one the report copies, its type is the report's
(:class:`~otelbench.model.report.RunWorkload`, :class:`~otelbench.model.report.RunLoad`,
:class:`~otelbench.model.report.Tokenizer`, :class:`~otelbench.model.report.RequestOptions`,
:data:`~otelbench.model.report.Warmup`, :class:`~otelbench.model.report.ClientHealth`); the
manifest's own objects are here: the send lag (:class:`SendLag`), a shard's part
(:class:`ShardManifest`), its clock evidence (:class:`ClockEvidence`, draft 4.7.2) and the
joined run's shard entries (:class:`ShardEntry`).

Every key of :class:`RunManifest` may be absent: the store keeps runs of every otelbench version
and run spans of other producers (a run span with no manifest is an empty one); the load
generator of this version writes every key but ``clock``, ``shard`` (a shard's only),
``shard_count`` and ``shards`` (the joined manifest's only), as the conformance test of
``tests/unit/loadgen`` checks. A present key has its type: a manifest that departs from it is a
clear error where the store is read, never a ``KeyError`` in a reader.

Example::

    manifest: RunManifest = run.manifest
    manifest.get("load", {}).get("mode")       # "poisson", …
"""

# No ``from __future__ import annotations``: ``NotRequired`` must be seen when each class is made
# (see otelbench.model.report), for the conformance check's ``__required_keys__``.

from typing import Literal, NotRequired, TypedDict

from otelbench.model.report import (
    ClientHealth,
    LoadWorkers,
    RequestOptions,
    RunLoad,
    RunWorkload,
    Tokenizer,
    Warmup,
)
from otelbench.model.sut import SutDeclaration

__all__ = [
    "ClockEvidence",
    "KernelClock",
    "MeasuredOffset",
    "RunManifest",
    "SendLag",
    "ShardEntry",
    "ShardManifest",
]


class KernelClock(TypedDict):
    """The kernel's account of its wall clock (``adjtimex``;
    :func:`otelbench.loadgen.clocksync.kernel_clock`)."""

    source: str
    synchronised: bool
    state: str
    max_error_ms: float
    est_error_ms: float


class MeasuredOffset(TypedDict):
    """An SNTP measurement of the wall clock's offset
    (:func:`otelbench.loadgen.clocksync.measure_offset`); the numbers are None (and ``error``
    says why) when the reference gave no usable answer."""

    reference: str
    samples: int
    offset_ms: float | None
    round_trip_ms: float | None
    error_bound_ms: float | None
    stratum: int | None
    error: NotRequired[str]


class ClockEvidence(TypedDict):
    """A shard's ``clock``: its clock evidence (draft 4.7.2,
    :func:`otelbench.loadgen.clocksync.clock_evidence`): the method, the estimated accuracy and
    whether it is within the draft's limit, with the kernel's account and the measurement."""

    method: str
    accuracy_ms: float | None
    within_limit: bool | None
    kernel: KernelClock | None
    measured: MeasuredOffset | None


class ShardManifest(TypedDict):
    """A shard's ``shard``: which part of the run's schedule this host sent, on which host, and
    how late it started against the agreed start (:meth:`otelbench.loadgen.shard.Shard.manifest`).
    """

    index: int
    count: int
    host: str
    start_at_unix: float | None
    start_late_ms: float


class SendLag(TypedDict):
    """``schedule_lag``: the measured requests' send lag (actual − scheduled send, ms; None
    when nothing was sent on a schedule) and whether its P99 flagged the load generator as the
    bottleneck (draft 4.2.5)."""

    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    generator_bottleneck: bool
    """Manifests written before the flag are given it where the store is read
    (:func:`otelbench.query.records.upgrade_manifest`)."""


class ShardEntry(TypedDict):
    """An entry of the joined manifest's ``shards``: one shard's own facts
    (:func:`otelbench.query.shards.shard_entry`); None where its manifest lacked them."""

    index: int
    host: str | None
    start_late_ms: float | None
    requests_sent: int | None
    started_unix: float | None
    finished_unix: float | None
    duration_s: float | None
    workers: LoadWorkers | None
    schedule_lag: SendLag | None
    client_health: ClientHealth | None
    clock: ClockEvidence | None


class RunManifest(TypedDict, total=False):
    """A run's manifest (the run span's ``otelbench.run.manifest``): everything that defines the
    run and what the load generator measured of itself. Every key may be absent (see the module
    docstring)."""

    id: str
    target: str
    model: str
    api: Literal["completions", "chat"]
    workload: RunWorkload
    seed: int
    tokenizer: Tokenizer
    """Draft 4.4.3's declaration of the tokenizer the token counts are in."""
    load: RunLoad
    request_classes: dict[str, int]
    otelbench_version: str
    sut: SutDeclaration | None
    """The system under test as declared or detected (draft 4.1): the validated declaration
    with what ``otelbench run`` detected (None: nothing declared, as other producers write
    it)."""
    request_options: RequestOptions
    warmup: Warmup | None
    """Draft 4.5's warm-up; None when none ran."""
    cold_start: bool
    deviations: list[str]
    notes: list[str]
    started_unix: float
    finished_unix: float
    duration_s: float
    requests_sent: int
    schedule_lag: SendLag
    client_health: ClientHealth | None
    """Draft 4.2.1: the load generator's own timing health; None when no worker reported."""
    shard: ShardManifest
    """A shard's manifest only."""
    clock: ClockEvidence
    """A shard's manifest only (draft 4.7.2)."""
    shard_count: int
    """The joined manifest only: the N the shards declared."""
    shards: list[ShardEntry]
    """The joined manifest only: each shard that ended its run span, by index."""
