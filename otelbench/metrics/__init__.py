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

from otelbench.metrics.latency import (
    TTFT_INPUT_BUCKET_EDGES,
    InputBucket,
    Ragged,
    consecutive_intervals,
    group_first,
    group_last,
    group_max,
    group_std,
    tail_ratio,
    token_arrival_times,
    tpot,
    ttft_by_input_length,
)
from otelbench.metrics.server import (
    TTFT_COMPONENTS,
    Preemptions,
    TtftDecomposition,
    preemption_stats,
    ttft_decomposition,
)
from otelbench.metrics.summary import PERCENTILE_METHOD, PERCENTILES, Summary, percentile, summarize
from otelbench.metrics.throughput import (
    UNKNOWN_ERROR_TYPE,
    Outcomes,
    Throughput,
    measurement_window_ns,
    outcomes,
    window_throughput,
)

__all__ = [
    "PERCENTILES",
    "PERCENTILE_METHOD",
    "TTFT_COMPONENTS",
    "TTFT_INPUT_BUCKET_EDGES",
    "UNKNOWN_ERROR_TYPE",
    "InputBucket",
    "Outcomes",
    "Preemptions",
    "Ragged",
    "Summary",
    "Throughput",
    "TtftDecomposition",
    "consecutive_intervals",
    "group_first",
    "group_last",
    "group_max",
    "group_std",
    "measurement_window_ns",
    "outcomes",
    "percentile",
    "preemption_stats",
    "summarize",
    "tail_ratio",
    "token_arrival_times",
    "tpot",
    "ttft_by_input_length",
    "ttft_decomposition",
    "window_throughput",
]
