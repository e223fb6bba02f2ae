"""The methodology's metrics as pure numpy functions: no I/O, no store, no report.

Every function documents its definition and the draft section it implements. Inputs are arrays of
timestamps, durations and counts (the query layer's records hold them); outputs are arrays,
:class:`Summary` objects or small dataclasses.

Usage::

    from otelbench.metrics import consecutive_intervals, summarize, token_arrival_times

    tokens = token_arrival_times(chunk_offsets_us, chunk_tokens, chunk_bounds)  # Option B
    itl_ms = consecutive_intervals(tokens).values / 1000.0
    print(summarize(itl_ms).p99)
"""

from __future__ import annotations

from otelbench.metrics.curves import (
    CurvePoints,
    Saturation,
    SteadyState,
    detect_saturation,
    queue_growing,
    steady_state,
    throughput_latency_points,
)
from otelbench.metrics.effects import (
    ITL_SHAPE_PERCENTILES,
    GuardrailOverhead,
    ItlShape,
    PrefixCacheEffect,
    guardrail_overhead,
    itl_shape,
    percent_change,
    prefix_cache_effect,
)
from otelbench.metrics.fairness import (
    ClassFairness,
    Fairness,
    jain_fairness_index,
    latency_inflation,
    scheduling_fairness,
    starvation_rate,
)
from otelbench.metrics.fluidity import (
    FluidRate,
    PrefillFit,
    deadline_intervals,
    fit_prefill_time,
    fluid_token_generation_rate,
    fluidity_index,
    fluidity_indices,
    isolated,
    prefill_deadlines,
    profile_groups,
    profiled_prefill_deadlines,
)
from otelbench.metrics.latency import (
    InputBucket,
    Ragged,
    consecutive_intervals,
    group_first,
    group_last,
    group_max,
    group_std,
    tail_class,
    tail_ratio,
    tail_spacing_ratio,
    token_arrival_times,
    tpot,
    ttft_by_input_length,
)
from otelbench.metrics.reasoning import (
    ReasoningPhases,
    reasoning_phases,
)
from otelbench.metrics.scaling import (
    LengthRow,
    LinearFit,
    LongContextScaling,
    PowerLawFit,
    fit_linear,
    fit_power_law,
    long_context_scaling,
    time_per_input_token,
)
from otelbench.metrics.server import (
    TTFT_COMPONENTS,
    EngineSteps,
    Preemptions,
    TtftDecomposition,
    UnreadWork,
    engine_steps,
    preemption_stats,
    ttft_decomposition,
    unread_work,
)
from otelbench.metrics.stats import BootstrapCI, bootstrap_ci
from otelbench.metrics.summary import (
    PERCENTILE_METHOD,
    AnyOrderStatistics,
    CountedOrderStatistics,
    OrderStatistics,
    Summary,
    percentile,
    summarize,
)
from otelbench.metrics.throughput import (
    UNKNOWN_ERROR_TYPE,
    Outcomes,
    Throughput,
    measurement_window_ns,
    outcomes,
    window_throughput,
)

__all__ = [
    "ITL_SHAPE_PERCENTILES",
    "PERCENTILE_METHOD",
    "TTFT_COMPONENTS",
    "UNKNOWN_ERROR_TYPE",
    "AnyOrderStatistics",
    "BootstrapCI",
    "ClassFairness",
    "CountedOrderStatistics",
    "CurvePoints",
    "EngineSteps",
    "Fairness",
    "FluidRate",
    "GuardrailOverhead",
    "InputBucket",
    "ItlShape",
    "LengthRow",
    "LinearFit",
    "LongContextScaling",
    "OrderStatistics",
    "Outcomes",
    "PowerLawFit",
    "Preemptions",
    "PrefillFit",
    "PrefixCacheEffect",
    "Ragged",
    "ReasoningPhases",
    "Saturation",
    "SteadyState",
    "Summary",
    "Throughput",
    "TtftDecomposition",
    "UnreadWork",
    "bootstrap_ci",
    "consecutive_intervals",
    "deadline_intervals",
    "detect_saturation",
    "engine_steps",
    "fit_linear",
    "fit_power_law",
    "fit_prefill_time",
    "fluid_token_generation_rate",
    "fluidity_index",
    "fluidity_indices",
    "group_first",
    "group_last",
    "group_max",
    "group_std",
    "guardrail_overhead",
    "isolated",
    "itl_shape",
    "jain_fairness_index",
    "latency_inflation",
    "long_context_scaling",
    "measurement_window_ns",
    "outcomes",
    "percent_change",
    "percentile",
    "preemption_stats",
    "prefill_deadlines",
    "prefix_cache_effect",
    "profile_groups",
    "profiled_prefill_deadlines",
    "queue_growing",
    "reasoning_phases",
    "scheduling_fairness",
    "starvation_rate",
    "steady_state",
    "summarize",
    "tail_class",
    "tail_ratio",
    "tail_spacing_ratio",
    "throughput_latency_points",
    "time_per_input_token",
    "token_arrival_times",
    "tpot",
    "ttft_by_input_length",
    "ttft_decomposition",
    "unread_work",
    "window_throughput",
]
