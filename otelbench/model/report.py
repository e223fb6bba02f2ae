"""The shape of ``report.json`` as types: one TypedDict per object of ``docs/report-schema.md``.

:class:`Report` is what :func:`~otelbench.report.build_report` returns and what every renderer
(Markdown, HTML, compare, the procedures) takes. Each TypedDict's docstring names the section of
``docs/report-schema.md`` it mirrors; that document stays the public contract, and
``tests/unit/report/test_types.py`` checks that doc, types and the built reports agree:

* a key that only some runs have is ``NotRequired`` (``metrics.server`` needs joined server
  spans, ``metrics.guardrails`` guardrail spans, ``metrics.server.itl_ms`` the engine hooks …);
* a value that may be ``null`` is ``X | None``; a map keyed by data (error types, request
  classes, attribute names, decisions) is ``dict[str, int]``; values the document fixes are
  ``Literal``;
* an open object whose keys the user chooses (``run.load.arrival_params``, the arrival
  parameters as the user gave them; ``run.request_options.extra_body``) is a
  :data:`~otelbench.model.jsonvalue.JsonObject`, typed by its JSON values;
  ``run.load.arrival``, the arrival process with every parameter bound, is
  :class:`ArrivalSpec`; ``run.workload.spec``, each workload's own
  specification, is :class:`WorkloadSpec`.

A ``report.json`` read back from disk enters only through
:func:`~otelbench.model.load.load_report`, which brings an older version to this one's shape and
checks it against these types: past it, every reader reads the report as typed, not
defensively.

The summary shape and the TTFT-by-input-length row are made by :mod:`otelbench.metrics`
(``Summary.to_dict``, ``InputBucket.to_dict``), which returns these types: the model imports
nothing that computes, so a report read back renders without the metrics.

Usage::

    from otelbench.report import build_report
    from otelbench.model.report import Report

    report: Report = build_report("otelbench.duckdb")
    report["metrics"]["client"]["ttft_ms"]["p99"]      # float | None
"""

# No ``from __future__ import annotations`` here: ``NotRequired`` must be seen when each class is
# made (Python 3.11's TypedDict reads it from evaluated annotations only), so that
# ``__required_keys__`` is right for the conformance tests.

from typing import Final, Literal, NotRequired, Required, TypedDict

from otelbench.model.jsonvalue import JsonObject
from otelbench.model.sut import ClockSyncDeclaration, GuardrailsDeclaration

__all__ = [
    "CONFIGURATION_LABELS",
    "SCHEMA_VERSION",
    "AddedLatency",
    "ArrivalFacts",
    "ArrivalSpec",
    "Check",
    "ClassRow",
    "Classes",
    "ClientHealth",
    "ClientMetrics",
    "ClockDomains",
    "ComplianceCounts",
    "ComplianceSection",
    "ComponentShares",
    "Configuration",
    "DataQuality",
    "DatasetFilters",
    "DatasetSpec",
    "DeadlineRange",
    "DeadlineRow",
    "EndMismatches",
    "EngineStepsSection",
    "FilterRow",
    "FilterStats",
    "FirstContentToken",
    "FixedPrefillDeadline",
    "FluidRate",
    "Fluidity",
    "FluidityIndex",
    "GuardrailDisclosure",
    "Guardrails",
    "HealthQuantiles",
    "HooksSource",
    "InputLengthBucket",
    "ItlMethod",
    "ItlPerRequest",
    "ItlShape",
    "LengthSpec",
    "LevelCounts",
    "LoadCpus",
    "LoadGenerator",
    "LoadWorkers",
    "Methodology",
    "Metrics",
    "Preemptions",
    "PrefillDeadline",
    "PrefillFitSection",
    "PrefixSharingSpec",
    "ProbeDefinition",
    "ProbeSet",
    "ProfileGroup",
    "ProfiledPrefillDeadline",
    "Reasoning",
    "ReasoningRequests",
    "Refusals",
    "Report",
    "ReportBody",
    "RequestClassSpec",
    "RequestCounts",
    "RequestEnds",
    "RequestOptions",
    "RunLoad",
    "RunSection",
    "RunWorkload",
    "ScheduleLag",
    "ServerMetrics",
    "ServerTiming",
    "ShardClock",
    "ShardRow",
    "Shards",
    "ShortSummary",
    "SourceFile",
    "StatementResult",
    "Summary",
    "Sut",
    "SystemPromptSpec",
    "TestVerdict",
    "Throughput",
    "Tokenizer",
    "TtftDecomposition",
    "UnreadWork",
    "Verdict",
    "Warmup",
    "WarmupColdStart",
    "WarmupFloors",
    "WarmupInterrupted",
    "WarmupRound",
    "WarmupWarm",
    "WorkerCpu",
    "WorkerHealth",
    "WorkloadContent",
    "WorkloadSpec",
]

SCHEMA_VERSION: Final = 1
"""Version of the ``report.json`` shape; bumped on any incompatible change
(:data:`otelbench.model.load.UPGRADES` brings an older one to it)."""


class Summary(TypedDict):
    """The *summary* shape (section ``The *summary* shape``):
    :meth:`otelbench.metrics.Summary.to_dict`."""

    count: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None


class InputLengthBucket(TypedDict):
    """A row of ``metrics.client.ttft_by_input_tokens`` (section ``metrics.client``, "Bucket
    row"): :meth:`otelbench.metrics.InputBucket.to_dict`."""

    bucket: str
    min_tokens: int
    max_tokens_exclusive: int | None
    count: int
    p50: float | None
    p95: float | None
    p99: float | None


class ShortSummary(TypedDict):
    """The summary's short form ``{count, p50, p95, p99}`` (its last paragraph in section
    ``The *summary* shape``): ``itl_per_request`` and the class rows of ``metrics.classes``."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None


# ------------------------------------------------------------------------------------------
# run
# ------------------------------------------------------------------------------------------


class Tokenizer(TypedDict):
    """``run.tokenizer``: draft 4.4.3's declaration (section ``run``). A loaded tokenizer adds
    its vocabulary, special tokens and counting; the rest are per kind of tokenizer."""

    option: Literal["A (native)", "B (reference)"]
    name: str
    source: str
    version: NotRequired[str]
    """A loaded tokenizer's version: its ``tokenizer.json``'s or BPE file's SHA-256 (4.4.1)."""
    vocab_size: NotRequired[int | None]
    bos_token_id: NotRequired[int | None]
    eos_token_id: NotRequired[int | None]
    bos_eos: NotRequired[str]
    system_prompt: NotRequired[str]
    tool_call_formatting: NotRequired[str]
    library: NotRequired[str]
    max_model_len: NotRequired[int | None]
    n_vocab_with_special: NotRequired[int]


class LengthSpec(TypedDict, total=False):
    """A length distribution's draft 4.3.1 description in the workload's ``spec``
    (``run.workload.spec``, section ``run``): its type (``"per class"`` when each request class
    has its own), its unit and the parameters of that type; an output's control method; and,
    in ``spec.input``, what the prompt is made of."""

    distribution: Required[str]
    unit: str
    value: int
    min: int
    max: int
    mean: float
    std: float
    mu: float
    sigma: float
    median_unclipped: float
    mean_unclipped: float
    bounds: str
    values: list[int]
    weights: list[float] | None
    quantiles: dict[str, float]
    control: str
    """An output length's: how it is imposed (``max_tokens``)."""
    content: str
    vocab_size: int
    target_lengths: list[int]
    """``long-context`` (A.5): the target input lengths …"""
    effective_lengths: list[int]
    """… and those sent, capped to the context window."""
    structure: str
    document: str
    question: str
    reference_a32: dict[str, int]
    """``sharegpt`` (A.3): A.3.2's reference quantiles, beside the dataset's own."""


class RequestClassSpec(TypedDict):
    """A request class (draft 5.6) in the workload's ``spec`` (section ``run``): its share of
    the mix, its lengths and temperature."""

    name: str
    ratio: float
    input: LengthSpec
    output: LengthSpec
    temperature: float


class WorkloadContent(TypedDict):
    """``spec.content`` (section ``run``): draft 4.3.1's content characteristics."""

    domain: str | None
    language: str | None


class SystemPromptSpec(TypedDict):
    """``spec.system_prompt`` (section ``run``): one shared system prompt of ``tokens`` ids,
    prepended to a ``share`` of the requests (draft 4.3.2.3)."""

    tokens: int
    share: float
    shared_prefix: bool
    content: NotRequired[str]


class PrefixSharingSpec(TypedDict):
    """``spec.prefix_sharing`` (section ``run``): draft 4.3.1's prefix sharing: the fraction
    of requests sharing a context, how many contexts, their length and which one a request
    takes."""

    ratio: float
    prefixes: int
    length: LengthSpec
    selection: str
    rank_probabilities: list[float]
    unshared_requests: str


class DatasetFilters(TypedDict, total=False):
    """``spec.dataset.filters`` (section ``run``): which conversation turns were kept
    (``sharegpt`` writes every key; another producer's may name fewer)."""

    min_tokens: int
    max_input_tokens: int | None
    max_output_tokens: int | None
    limit: int | None


class DatasetSpec(TypedDict, total=False):
    """``spec.dataset`` (section ``run``): the ShareGPT file a ``sharegpt`` workload (A.3)
    was read from, and what was kept of it. ``sharegpt`` writes every key; another producer's
    may lack some, which the ``dataset-provenance`` check (draft 4.3.3) judges."""

    format: str
    path: str
    sha256: str
    conversations: int
    turns: str
    requests_available: int
    dropped: dict[str, int]
    filters: DatasetFilters
    selection: str


class SourceFile(TypedDict):
    """``spec.source_file`` (section ``run``): a custom workload's file and its SHA-256."""

    path: str
    sha256: str


class WorkloadSpec(TypedDict, total=False):
    """``run.workload.spec``, a workload's own specification (section ``run``; draft 4.3,
    Appendix A): name, draft section and seed, then those of the input and output lengths,
    request classes, content, system prompt, prefix sharing, counting, temperature, stop
    sequences, notes and deviations that the workload declares, and its own parts
    (``max_context_len``; ``dataset`` and ``tokenizer``; a file's ``source_file`` and
    ``description``).

    As in the run manifest (:class:`~otelbench.model.manifest.RunManifest`), every key may be
    absent: a stored run of another producer may declare less, and the checks read a run with
    no workload as an empty specification; a key that is there has its type. Every workload of
    this version writes ``name``, ``draft_section`` and ``seed`` (``tests/unit/loadgen`` checks
    each workload's ``spec()`` against this type).

    Example::

        make_workload("synthetic-uniform", seed=1).spec()["input"]["distribution"]  # "uniform"
    """

    name: str
    draft_section: str
    seed: int
    shared_seed: int
    """The seed of the shared parts (system prompt, shared contexts), when not ``seed``."""
    synthetic: bool
    input: LengthSpec
    output: LengthSpec
    request_classes: list[RequestClassSpec]
    content: WorkloadContent
    system_prompt: SystemPromptSpec | None
    prefix_sharing: PrefixSharingSpec | None
    counting: str
    temperature: float | Literal["per class"]
    stop_sequences: None
    notes: list[str]
    deviations: list[str]
    max_context_len: int | None
    dataset: DatasetSpec
    tokenizer: Tokenizer
    source_file: SourceFile
    description: str | None


class RunWorkload(TypedDict):
    """``run.workload``: the run manifest's workload (section ``run``): its name, the seed it
    was generated with, and ``spec``, the workload's own specification (lengths, content, prefix
    sharing, system prompt, dataset or file, draft section: keys per workload), a
    :class:`WorkloadSpec`."""

    name: str
    seed: int
    spec: WorkloadSpec


class LoadCpus(TypedDict):
    """``run.load.workers.cpus``: the CPUs of a run given ``--loadgen-cpus`` (section ``run``)."""

    loadgen: list[int]
    others: list[int] | None
    processes: dict[str, list[int]]


class LoadWorkers(TypedDict):
    """``run.load.workers``: the load generator's worker processes (section ``run``)."""

    count: int
    chosen: str
    start_method: NotRequired[str]
    cpus: NotRequired[LoadCpus]


class ArrivalFacts(TypedDict, total=False):
    """What an arrival process adds to its parameters in ``run.load.arrival`` (section ``run``;
    ``describe`` of :func:`otelbench.loadgen.arrivals.register_arrival`): ``bursty``'s gamma
    shape, a replayed trace's file digest and extent."""

    distribution: str
    gamma_shape: float
    sha256: str
    timestamps_in_file: int
    file_duration_s: float


class ArrivalSpec(ArrivalFacts):
    """``run.load.arrival``: everything that defines the schedule (section ``run``): the process,
    its rate and seed, each parameter of the process with its default filled in (``cv`` for
    ``bursty``; ``path`` and ``time_scale`` for ``trace``) and its facts; a closed loop's is its
    process and ``concurrency``. Draft 4.2.3."""

    process: str
    rate: NotRequired[float | None]
    seed: NotRequired[int]
    concurrency: NotRequired[int | None]
    cv: NotRequired[float]
    path: NotRequired[str]
    time_scale: NotRequired[float]


class RunLoad(TypedDict):
    """``run.load``: the run manifest's load model (section ``run``). ``arrival_params``,
    ``arrival`` and ``workers`` are there in every run the load generator made."""

    mode: Literal["poisson", "uniform", "bursty", "trace", "closed_loop"]
    requests: int
    rate: float | None
    concurrency: int | None
    arrival_params: NotRequired[JsonObject]
    arrival: NotRequired[ArrivalSpec]
    workers: NotRequired[LoadWorkers]


class RequestOptions(TypedDict):
    """``run.request_options``: how requests were sent (section ``run``)."""

    prompt_format: Literal["token_ids", "text"]
    ignore_eos: bool
    stream: bool
    extra_body: JsonObject


class WarmupFloors(TypedDict):
    """``run.warmup.floors``: the draft 4.5.1 minimums (section ``run``, ``warmup``)."""

    min_requests: int
    min_output_tokens: int
    rule: str


class ProbeDefinition(TypedDict):
    """``run.warmup.probe``: the draft 4.5.2 probe definition (section ``run``, ``warmup``)."""

    k: int
    request: str
    metric: str
    stabilization: str
    threshold: float


class ProbeSet(TypedDict):
    """``run.warmup.probe_before`` / ``probe_after``: one probe set (section ``run``,
    ``warmup``)."""

    probes: int
    ok: int
    latency_ms: list[float]
    ttft_ms: list[float]
    median_latency_ms: float | None
    median_ttft_ms: float | None
    variation: float | None
    stabilized: bool


class WarmupRound(TypedDict):
    """An entry of ``run.warmup.rounds``: one warm-up round (section ``run``, ``warmup``)."""

    requests: int
    failed: int
    output_tokens: int
    duration_s: float
    probe_after: ProbeSet


class WarmupWarm(TypedDict):
    """``run.warmup`` with ``mode`` ``warm``: the warm-up that ran (section ``run``)."""

    mode: Literal["warm"]
    procedure: str
    floors: WarmupFloors
    concurrency: int | None
    seed: int | None
    requests: int
    failed: int
    output_tokens: int
    duration_s: float
    drained: bool
    probe: ProbeDefinition
    probe_before: ProbeSet | None
    probe_after: ProbeSet | None
    rounds: list[WarmupRound]
    stabilized: bool
    deviations: list[str]


class WarmupInterrupted(TypedDict):
    """``run.warmup`` of a run interrupted during its warm-up (section ``run``)."""

    mode: Literal["warm"]
    interrupted: bool


class WarmupColdStart(TypedDict):
    """``run.warmup`` with ``mode`` ``cold_start``: a declared cold start (section ``run``)."""

    mode: Literal["cold_start"]
    skipped: bool
    reason: str
    deviations: list[str]


Warmup = WarmupWarm | WarmupInterrupted | WarmupColdStart
"""``run.warmup`` (draft 4.5), when a warm-up was configured."""


class HooksSource(TypedDict):
    """An entry of ``run.sut.server_timing.hooks``: one engine-hooks resource (section ``run``,
    ``run.sut.server_timing``)."""

    vllm_version: str | None
    hooks_version: str | None
    support: str | None
    spans: int


class ServerTiming(TypedDict):
    """``run.sut.server_timing``: what produced the run's server spans (section ``run``)."""

    source: Literal["engine_hooks", "vllm_tracer", "none"]
    hook_spans: int
    vllm_tracer_spans: int
    hooks: list[HooksSource]
    note: str | None


class Sut(TypedDict):
    """``run.sut``: the system under test as declared or detected (section ``run``). Only
    ``server_timing`` is always there."""

    boundary: NotRequired[str]
    hardware: NotRequired[str]
    software: NotRequired[str]
    load_generator_host: NotRequired[str]
    process_priority: NotRequired[str]
    model_version: NotRequired[str]
    quantization: NotRequired[str]
    prefix_caching: NotRequired[str | bool]
    guardrails: NotRequired[str | GuardrailsDeclaration]
    clock_sync: NotRequired[str | ClockSyncDeclaration]
    network_rtt_ms: NotRequired[float]
    server_timing: ServerTiming


class RequestCounts(TypedDict):
    """``run.requests`` (section ``run``)."""

    total: int
    succeeded: int
    failed: int
    failed_by_type: dict[str, int]


class ScheduleLag(TypedDict):
    """``run.load_generator.schedule_lag_ms`` (section ``run``, ``load_generator``)."""

    count: int
    p50: float | None
    p99: float | None
    max: float


class ArrivalFit(TypedDict):
    """``run.sent.arrivals``: the measured requests' send gaps against exponential gaps (section
    ``run``, ``sent``, draft 5.1.2.2)."""

    gaps: int
    declared_rate_per_s: float | None
    tested_rate_per_s: float
    measured_rate_per_s: float
    cv: float
    cv_tolerance: float
    timing_tolerance_ms: float
    ks_statistic: float
    ks_p_value: float


class SentLengths(TypedDict):
    """``run.sent.prompt_tokens`` / ``max_tokens`` (section ``run``, ``sent``)."""

    count: int
    min: float | None
    max: float | None
    mean: float | None
    p50: float | None


class Sent(TypedDict):
    """``run.sent``: what the load generator actually sent (section ``run``, ``sent``)."""

    arrivals: ArrivalFit | None
    prompt_tokens: SentLengths
    max_tokens: SentLengths


class Phase(TypedDict):
    """An entry of ``run.phases``: one request phase's client spans (section ``run``,
    ``phases``, draft 4.5.1)."""

    requests: int
    succeeded: int
    output_tokens: int
    cached_tokens: int
    first_submit_unix: float
    last_end_unix: float
    ended_after_measurement_start: int


class LoadGenerator(TypedDict):
    """``run.load_generator``: the open-loop generator's schedule lag (section ``run``,
    ``load_generator``, draft 4.2.5)."""

    schedule_lag_ms: ScheduleLag
    generator_bottleneck_flagged: bool


class HealthQuantiles(TypedDict):
    """``{count, p50, p99, max}`` of the load generator's loop lateness or read delay, ms
    (section ``run``, ``client_health``)."""

    count: int
    p50: float | None
    p99: float | None
    max: float | None


class WorkerCpu(TypedDict):
    """A worker's ``cpu`` (section ``run``, ``client_health``)."""

    user_s: float
    system_s: float
    wall_s: float
    utilization: float | None
    involuntary_context_switches: int
    runqueue_wait_s: float | None
    runqueue_wait_share: float | None
    host_steal_share: float | None


class GcPauses(TypedDict):
    """``gc_pauses`` of ``run.client_health`` and of each worker: CPython's garbage collections
    during the measurement, each a pause of the whole process (section ``run``,
    ``client_health``)."""

    collections: int
    full: int
    over_limit: int
    total_ms: float
    max_ms: float


class WorkerHealth(TypedDict):
    """An entry of ``run.client_health.workers`` (section ``run``, ``client_health``)."""

    worker: int
    pid: int
    cpus: NotRequired[list[int] | None]
    """With ``--loadgen-cpus``: the CPUs it read back at the measurement's start."""
    loop_lateness_ms: HealthQuantiles
    read_delay_ms: HealthQuantiles
    gc_pauses: NotRequired[GcPauses]
    """The worker's garbage collections during the measurement (reports from 2026-11-29 on)."""
    cpu: WorkerCpu


class ClientClock(TypedDict):
    """``run.client_health.clock``: the clock the load generator timed with, as its processes
    found it (section ``run``, ``client_health``, draft 4.2.1): the worst of them."""

    clock: str
    implementation: str
    resolution_ns: float
    clock_getres_ns: float | None
    read_delay_ns: HealthQuantiles


class ClientHealth(TypedDict):
    """``run.client_health``: the load generator's own timing health (section ``run``,
    ``client_health``, draft 4.2.1)."""

    clock: NotRequired[ClientClock]
    method: str
    period_ms: float
    limit_ms: float
    loop_lateness_ms: HealthQuantiles
    read_delay_ms: HealthQuantiles
    gc_pauses: NotRequired[GcPauses]
    workers: list[WorkerHealth]


class ShardClock(TypedDict):
    """A shard's clock evidence in ``run.shards.rows`` (section ``run``, ``shards``; draft
    4.7.2): how it was measured, the estimated accuracy, and whether that is within 10 ms."""

    method: str
    accuracy_ms: float | None
    within_limit: bool | None


class ShardRow(TypedDict):
    """One shard of a run sent from several hosts (section ``run``, ``shards``)."""

    index: int
    host: str | None
    requests_sent: int | None
    start_late_ms: float | None
    schedule_lag_p99_ms: float | None
    generator_bottleneck: bool
    loop_lateness_p99_ms: float | None
    read_delay_p99_ms: float | None
    cpu_utilization_max: float | None
    runqueue_wait_share_max: float | None
    clock: ShardClock


class Shards(TypedDict):
    """``run.shards``: the shards of a run sent from several hosts (section ``run``,
    ``shards``): how many the run declared, which sent no run span, and each one's row."""

    count: int
    missing: list[int]
    rows: list[ShardRow]


class RunSection(TypedDict):
    """``run`` (section ``run``). ``client_telemetry`` (the spool's counters by name) is added by
    the commands that wrote the run (``otelbench run``, a procedure level), not by
    :func:`~otelbench.report.build_report`."""

    id: str
    target: str | None
    model: str | None
    api: Literal["completions", "chat"] | None
    workload: RunWorkload | None
    seed: int | None
    tokenizer: Tokenizer | None
    load: RunLoad | None
    client_health: ClientHealth | None
    request_options: RequestOptions | None
    request_classes: dict[str, int] | None
    warmup: Warmup | None
    cold_start: bool | None
    started_unix: float
    finished_unix: float
    duration_s: float
    otelbench_version: str | None
    sut: Sut
    notes: list[str]
    requests: RequestCounts
    load_generator: LoadGenerator | None
    sent: Sent
    phases: dict[str, Phase]
    shards: NotRequired[Shards]
    client_telemetry: NotRequired[dict[str, int] | None]


# ------------------------------------------------------------------------------------------
# metrics.client
# ------------------------------------------------------------------------------------------


class ItlPerRequest(TypedDict):
    """``itl_per_request`` of ``metrics.client`` and ``metrics.server`` (section
    ``metrics.client``; 5.4.4.2)."""

    jitter_ms: ShortSummary
    max_pause_ms: ShortSummary


class ItlShape(TypedDict):
    """``metrics.client.itl_shape`` (section ``metrics.client``, ``itl_shape``, 5.4.4.3)."""

    count: int
    peaks: int
    multimodal: bool
    peak_locations_ms: list[float]
    bandwidth_ms: float | None
    p50_ms: float | None
    p99_ms: float | None
    p99_p50_ratio: float | None


class Throughput(TypedDict):
    """``metrics.client.throughput`` (section ``metrics.client``, ``throughput``)."""

    output_tokens_per_s: float | None
    input_tokens_per_s: float | None
    requests_per_s: float | None
    window_s: float | None
    output_tokens: int
    input_tokens: int
    requests: int


class ReasoningRequests(TypedDict):
    """``metrics.client.reasoning.requests`` (section ``metrics.client``, ``reasoning``)."""

    with_think_phase: int
    think_phase_ended: int
    think_phase_unterminated: int
    without_think_phase: int


class Reasoning(TypedDict):
    """``metrics.client.reasoning`` (section ``metrics.client``, ``reasoning``; ADR-0005)."""

    requests: ReasoningRequests
    population: str
    boundary: str
    ttot_ms: Summary
    think_to_output_gap_ms: Summary
    think_tokens: Summary
    output_itl_ms: Summary


class FirstContentToken(TypedDict):
    """``metrics.client.first_content_token`` (section ``metrics.client``; draft 5.1.3.1)."""

    requests: int
    first_event_recorded: int
    after_non_content_events: int
    non_content_lead_ms: ShortSummary
    content_before_first_event: int


class ClientMetrics(TypedDict):
    """``metrics.client`` (section ``metrics.client``)."""

    ttft_ms: Summary
    first_content_token: FirstContentToken
    itl_ms: Summary
    tpot_ms: Summary
    e2e_ms: Summary
    time_between_chunks_ms: Summary
    tokens_per_chunk: Summary
    itl_per_request: ItlPerRequest
    itl_p99_p50_ratio: float | None
    itl_shape: ItlShape
    ttft_by_input_tokens: list[InputLengthBucket]
    throughput: Throughput
    reasoning: NotRequired[Reasoning]


# ------------------------------------------------------------------------------------------
# metrics.server
# ------------------------------------------------------------------------------------------


class ComponentShares(TypedDict):
    """``share_of_mean`` / ``share_p50`` of ``metrics.server.ttft_decomposition_ms`` (section
    ``metrics.server``, ``ttft_decomposition_ms``)."""

    network_and_framing: float | None
    arrival_to_queue: float | None
    queue: float | None
    prefill: float | None


class TtftDecomposition(TypedDict):
    """``metrics.server.ttft_decomposition_ms`` (section ``metrics.server``, 5.1.4.2)."""

    count: int
    client_ttft: Summary
    network_and_framing: Summary
    arrival_to_queue: Summary
    queue: Summary
    prefill: Summary
    share_of_mean: ComponentShares
    share_p50: ComponentShares


class Preemptions(TypedDict):
    """``metrics.server.preemptions`` (section ``metrics.server``, ``preemptions``, 5.8.4)."""

    requests_observed: int
    total: int
    requests_preempted: int
    rate: float | None
    preemptions_per_request: Summary
    recovered: int
    recovery_rate: float | None
    tokens_lost: int
    stall_ms: Summary


class EndMismatches(TypedDict):
    """``metrics.server.request_ends.mismatches`` (section ``metrics.server``,
    ``request_ends``)."""

    client_cut_server_finished: int
    client_ok_server_not_finished: int
    client_cut_without_server_span: int


class UnreadWork(TypedDict):
    """``metrics.server.request_ends.unread_work`` (section ``metrics.server``,
    ``request_ends``)."""

    definition: str
    requests: int
    prompt_tokens_processed: int
    output_tokens_generated: int
    output_tokens_received_by_client: int
    engine_request_s: float
    requests_without_engine_account: int


class RequestEnds(TypedDict):
    """``metrics.server.request_ends`` (section ``metrics.server``, ``request_ends``): how
    requests ended on the client and in the engine."""

    client: dict[str, int]
    """``ok`` and the client's error types, as the run's client spans give them."""
    server: dict[str, int]
    """Every end reason (``semconv.END_REASONS``) of the joined server spans."""
    by_client_outcome: dict[str, dict[str, int]]
    cut_on_both_sides: int
    mismatches: EndMismatches
    by_phase: dict[str, dict[str, int]]
    unread_work: UnreadWork


class EngineStepsSection(TypedDict):
    """``metrics.server.engine_steps`` (section ``metrics.server``, ``engine_steps``; draft
    4.6.2–4.6.3): present when an engine step produced more than one token."""

    requests: int
    tokens: int
    steps: int
    multi_token_steps: int
    tokens_per_step: Summary
    steps_by_tokens: dict[str, int]
    zero_itl_samples: int
    zero_itl_share: float | None
    time_between_steps_ms: Summary


class ServerMetrics(TypedDict):
    """``metrics.server`` (section ``metrics.server``): the keys from ``itl_ms`` on need the
    engine hooks' spans."""

    requests_joined: int
    client_requests_without_server_span: int
    span_sources: dict[str, int]
    ttft_ms: Summary
    tpot_ms: Summary
    e2e_ms: Summary
    queue_ms: Summary
    prefill_ms: Summary
    decode_ms: Summary
    client_minus_server_ttft_ms: Summary
    ttft_decomposition_ms: TtftDecomposition
    itl_ms: NotRequired[Summary]
    itl_per_request: NotRequired[ItlPerRequest]
    itl_p99_p50_ratio: NotRequired[float | None]
    preemptions: NotRequired[Preemptions]
    engine_steps: NotRequired[EngineStepsSection]
    request_ends: NotRequired[RequestEnds]


# ------------------------------------------------------------------------------------------
# metrics.fluidity, metrics.classes, metrics.guardrails
# ------------------------------------------------------------------------------------------


class FixedPrefillDeadline(TypedDict):
    """``metrics.fluidity.prefill_deadline`` of kind ``fixed`` (section ``metrics.fluidity``)."""

    kind: Literal["fixed"]
    deadline_ms: float
    description: str


class PrefillFitSection(TypedDict):
    """``metrics.fluidity.prefill_deadline.fit`` (section ``metrics.fluidity``)."""

    a_ms: float
    b_ms_per_token: float
    c_ms_per_token2: float
    r_squared: float
    residual_std_ms: float
    requests: int
    min_tokens: int
    max_tokens: int


class ProfileGroup(TypedDict):
    """A row of ``metrics.fluidity.prefill_deadline.groups`` (section ``metrics.fluidity``)."""

    min_tokens: int
    max_tokens: int
    requests: int
    prefill_p50_ms: float


class DeadlineRange(TypedDict):
    """``metrics.fluidity.prefill_deadline.deadline_range_ms`` of a profiled ``D_p`` (section
    ``metrics.fluidity``)."""

    min: float
    p50: float
    max: float


class ProfiledPrefillDeadline(TypedDict):
    """``metrics.fluidity.prefill_deadline`` of kind ``profiled`` (section
    ``metrics.fluidity``)."""

    kind: Literal["profiled"]
    description: str
    source: str
    isolation: str
    grouping: str
    scheduling_slack_ms: float
    isolated_requests: int
    left_out: dict[str, int]
    fit: PrefillFitSection
    groups: list[ProfileGroup]
    deadline_range_ms: DeadlineRange
    requests_outside_range: int


PrefillDeadline = FixedPrefillDeadline | ProfiledPrefillDeadline
"""``metrics.fluidity.prefill_deadline``: a fixed ``D_p`` or Etalon's profiled ``D_p(L)``."""


class FluidityIndex(TypedDict):
    """``fluidity_index`` of a deadline row (section ``metrics.fluidity``, "Deadline row")."""

    count: int
    mean: float
    min: float
    p1: float | None
    p5: float | None
    p50: float | None
    fraction_at_least_min: float


class DeadlineRow(TypedDict):
    """A row of ``metrics.fluidity.deadlines`` (section ``metrics.fluidity``, "Deadline row")."""

    preset: str
    decode_deadline_ms: float
    fluidity_index: FluidityIndex


class FluidRate(TypedDict):
    """``metrics.fluidity.fluid_token_generation_rate`` (section ``metrics.fluidity``)."""

    decode_deadline_ms: float
    tokens_per_s: float
    precision_ms: float
    fraction_meeting: float
    requests: int


class Fluidity(TypedDict):
    """``metrics.fluidity`` (section ``metrics.fluidity``; Etalon §4)."""

    source: Literal["server", "client"]
    timeline: str
    chunk_handling: str
    requests: int
    requests_left_out: int
    prefill_deadline: PrefillDeadline
    min_fluidity: float
    request_fraction: float
    deadlines: list[DeadlineRow]
    fluid_token_generation_rate: FluidRate | None


class ClassRow(TypedDict):
    """A value of ``metrics.classes.by_class`` (section ``metrics.classes``, "Class row")."""

    count: int
    ttft_ms: ShortSummary
    tpot_ms: ShortSummary
    e2e_ms: ShortSummary
    itl_ms: ShortSummary
    starvation_rate: float | None


class Classes(TypedDict):
    """``metrics.classes`` (section ``metrics.classes``; draft 5.6.4)."""

    reference: str
    jain_index: float | None
    jain_requests: int
    starvation_factor: float
    requests_without_class: int
    by_class: dict[str, ClassRow]


class FilterStats(TypedDict):
    """``{count, p50, p95, p99, mean}`` in ms (or invocations) of ``metrics.guardrails``
    (section ``metrics.guardrails``: ``added_latency`` and the filter rows)."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None


class GuardrailDisclosure(TypedDict):
    """``metrics.guardrails.disclosure`` (section ``metrics.guardrails``; draft 4.8.1)."""

    input_filters: list[str]
    output_filters: list[str]
    config_sha256: str | None
    block_response: str | None
    services: list[str]
    configurations_seen: int


class FilterRow(TypedDict):
    """A row of ``metrics.guardrails.filters`` (section ``metrics.guardrails``, "Filter row");
    output filters add ``busy_ms_per_event`` and ``invocations_per_request``."""

    name: str
    type: str | None
    stage: str
    spans: int
    decisions: dict[str, int]
    rules: dict[str, int]
    errors: dict[str, int]
    busy_ms_per_request: FilterStats
    busy_ms_per_event: NotRequired[FilterStats]
    invocations_per_request: NotRequired[FilterStats]


class Refusals(TypedDict):
    """``metrics.guardrails.refusals`` (section ``metrics.guardrails``)."""

    requests: int
    by_stage: dict[str, int]
    by_filter: dict[str, int]


class AddedLatency(TypedDict):
    """``metrics.guardrails.added_latency`` (section ``metrics.guardrails``)."""

    input_ms: FilterStats
    output_first_event_ms: FilterStats
    output_per_event_ms: FilterStats
    ttft_ms: FilterStats


class Guardrails(TypedDict):
    """``metrics.guardrails`` (section ``metrics.guardrails``; draft 4.8.1, 5.10)."""

    disclosure: GuardrailDisclosure
    requests_with_guardrail_spans: int
    spans: int
    spans_outside_measured_requests: int
    filters: list[FilterRow]
    refusals: Refusals
    added_latency: AddedLatency
    definitions: dict[str, str]


class Metrics(TypedDict):
    """``metrics``: ``client`` always; each other section only when the run has its data
    (sections ``metrics.server``, ``metrics.fluidity``, ``metrics.classes``,
    ``metrics.guardrails``)."""

    client: ClientMetrics
    server: NotRequired[ServerMetrics]
    fluidity: NotRequired[Fluidity]
    classes: NotRequired[Classes]
    guardrails: NotRequired[Guardrails]


# ------------------------------------------------------------------------------------------
# methodology, data_quality, configuration, compliance
# ------------------------------------------------------------------------------------------


class ItlMethod(TypedDict):
    """``methodology.itl_method`` (section ``methodology``; draft 4.6.3)."""

    option: Literal["B"]
    name: str
    description: str
    protocol: str
    chunk_token_source: str | None
    """``usage``, ``one_per_chunk`` or ``mixed`` from otelbench's client; another producer's
    ``otelbench.client.chunk_token_source`` value passes through as it was stored."""
    chunk_token_sources: dict[str, int]
    chunk_token_source_meaning: dict[str, str]
    time_between_chunks: str
    server_option: Literal["C"] | None
    server_side: str
    server_engine_steps: NotRequired[str]
    server_multi_token_handling: NotRequired[str]


class ClockDomains(TypedDict):
    """``methodology.clock_domains`` (section ``methodology``; draft 4.7)."""

    client: str
    server: str
    client_minus_server_ttft: str


class Methodology(TypedDict):
    """``methodology`` (section ``methodology``)."""

    itl_method: ItlMethod
    first_token_definition: str
    tpot_definition: str
    jitter_definition: str
    percentile_method: str
    std_definition: str
    throughput_window: str
    latency_population: str
    clock_domains: ClockDomains
    deviations: list[str]


class DataQuality(TypedDict):
    """``data_quality`` (section ``data_quality``)."""

    rejected_attributes: dict[str, int]


class Configuration(TypedDict):
    """``configuration``: draft 5.1.5.1's configuration summary, one line per item (section
    ``configuration``; its keys in order, labelled in :data:`CONFIGURATION_LABELS`)."""

    sut_boundary: str
    target: str
    model: str
    hardware: str
    software: str
    load_generator: str
    workload: str
    seed: str
    tokenizer: str
    load_model: str
    requests: str
    duration: str
    warmup: str
    prefix_caching: str
    guardrails: str
    timing_method: str
    clock_synchronization: str


CONFIGURATION_LABELS: Final = {
    "sut_boundary": "SUT configuration and boundary (4.1)",
    "target": "Target",
    "model": "Model",
    "hardware": "Hardware",
    "software": "Software",
    "load_generator": "Load generator",
    "workload": "Workload (4.3)",
    "seed": "Seed (4.3.3)",
    "tokenizer": "Tokenizer (4.4)",
    "load_model": "Load model and parameters",
    "requests": "Request count",
    "duration": "Test duration",
    "warmup": "Warm-up (4.5)",
    "prefix_caching": "Prefix caching",
    "guardrails": "Guardrails (4.8.1)",
    "timing_method": "Timing method (4.2.1, 4.6.3)",
    "clock_synchronization": "Clock synchronization (4.7)",
}
"""Each key of :class:`Configuration`, in order, with the label the renderers show for it (the
draft section the item answers, where it has one)."""


class Check(TypedDict):
    """An entry of ``compliance.checks`` (section ``compliance``, "Check")."""

    id: str
    section: str
    level: Literal["MUST", "SHOULD"]
    requirement: str
    met: bool | None
    evidence: str
    judges: list[str]


class LevelCounts(TypedDict):
    """``counts.MUST`` / ``.SHOULD`` of a test's verdict (section ``compliance``, "Test")."""

    met: int
    unmet: int
    not_applicable: int


class ComplianceCounts(TypedDict):
    """``counts`` of a test's verdict (section ``compliance``, "Test"): statements by level and
    outcome."""

    MUST: LevelCounts
    SHOULD: LevelCounts


Verdict = Literal["not compliant", "conditionally compliant", "unconditionally compliant"]
"""A test's and the whole report's ``verdict`` (section ``compliance``; draft 2)."""


class BulletResult(TypedDict):
    """An entry of a statement's ``bullets`` (section ``compliance``, "Test"): one item of an
    umbrella statement, judged."""

    section: str
    text: str
    checks: list[str]
    met: bool | None
    evidence: str


class StatementResult(TypedDict):
    """An entry of a test's ``statements`` (section ``compliance``, "Test"): one normative
    statement of ``otelbench.draft.statements``, judged."""

    id: str
    section: str
    keyword: str
    level: Literal["MUST", "SHOULD"]
    statement: str
    judged: str
    checks: list[str]
    met: bool | None
    evidence: str
    bullets: list[BulletResult]


class TestVerdict(TypedDict):
    """An entry of ``compliance.tests`` (section ``compliance``, "Test"): one test's verdict."""

    test: str
    title: str
    verdict: Verdict
    counts: ComplianceCounts
    unmet_must: list[str]
    unmet_should: list[str]
    statements: list[StatementResult]


class ComplianceSection(TypedDict):
    """``compliance`` (section ``compliance``; draft 2)."""

    scope: str
    verdict_rule: str
    checks: list[Check]
    tests: list[TestVerdict]
    unmet_must: list[str]
    unmet_should: list[str]
    verdict: Verdict


# ------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------


class ReportBody(TypedDict):
    """The report's facts: what the run declared and measured (sections ``schema_version``,
    ``run``, ``metrics``, ``methodology``, ``data_quality``). ``configuration`` and
    ``compliance`` are computed from these alone."""

    schema_version: int
    run: RunSection
    metrics: Metrics
    methodology: Methodology
    data_quality: DataQuality


class Report(ReportBody):
    """``report.json``, the whole run report (docs/report-schema.md), keys in report order."""

    configuration: Configuration
    compliance: ComplianceSection
