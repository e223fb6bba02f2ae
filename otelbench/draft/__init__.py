"""The methodology's home: every minimum, threshold and preset of the draft (and of Etalon, for
fluidity) that otelbench uses, defined once, each with its section, under one name.

The report (``otelbench.report``: deviations and compliance checks), the warm-up
(``otelbench.loadgen.warmup``), the metrics and the procedures (``otelbench.procedures``: profiles
and shortfalls) read them from here as ``draft.NAME``: a draft number is never copied into a
constant of its own or imported under another name. This package imports nothing of otelbench
outside itself, so any module may read it without an import cycle.

* this module: the numbers;
* :mod:`otelbench.draft.statements`: the registry of the draft's normative statements, each
  worded as the draft words it (tested against ``docs/reference/methodology-draft.txt``).

Usage::

    from otelbench import draft

    if ttft_samples < draft.P99_MIN_SAMPLES:
        ...
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "CAPACITY_MIN_COMPLETION",
    "CAPACITY_MIN_DURATION_S",
    "CAPACITY_REQUESTS_PER_SLOT",
    "CLOCK_SYNC_MAX_ERROR_MS",
    "COMPARISON_MIN_RUNS",
    "FAIRNESS_CLASS_REQUESTS",
    "FAIRNESS_LOAD_RANGE",
    "FAIRNESS_MIXED_DURATION_S",
    "FAIRNESS_SHORT_MIX",
    "FAIRNESS_STARVATION_FACTOR",
    "FLUIDITY_DECODE_DEADLINE_PRESETS_S",
    "FLUIDITY_DECODE_DEADLINE_S",
    "FLUIDITY_MIN_INDEX",
    "FLUIDITY_PROFILE_REQUESTS",
    "FLUIDITY_REQUEST_FRACTION",
    "FLUIDITY_SCHEDULING_SLACK_S",
    "GUARDRAIL_LOAD_FRACTIONS",
    "ITL_LOAD_FRACTIONS",
    "ITL_MIN_OUTPUT_TOKENS",
    "ITL_MIN_REQUESTS",
    "LEVEL_MIN_DURATION_S",
    "LONG_CONTEXT_LENGTHS",
    "LONG_CONTEXT_OUTPUT_TOKENS",
    "LONG_CONTEXT_REQUESTS",
    "P99_9_MIN_SAMPLES",
    "P99_MIN_SAMPLES",
    "PERCENTILES",
    "PRESSURE_LEVEL_MIN_S",
    "PRESSURE_OVERSUBSCRIPTION",
    "SWEEP_MIN_LEVELS",
    "THROUGHPUT_RECOMMENDED_DURATION_S",
    "TIMING_RESOLUTION_MS",
    "TTFT_INPUT_BUCKET_EDGES",
    "WARMUP_MIN_OUTPUT_TOKENS",
    "WARMUP_MIN_REQUESTS",
    "WARMUP_STABILIZATION_THRESHOLD",
]

# -- test setup (section 4) ----------------------------------------------------------------------

TIMING_RESOLUTION_MS: Final = 1.0
"""4.2.1: the load generator measures time with a resolution of 1 ms or better."""
WARMUP_MIN_REQUESTS: Final = 100
"""4.5.1 item 2: warm up with at least 100 requests or 10,000 output tokens, whichever is
greater."""
WARMUP_MIN_OUTPUT_TOKENS: Final = 10_000
"""4.5.1 item 2: at least 10,000 warm-up output tokens (with :data:`WARMUP_MIN_REQUESTS`)."""
WARMUP_STABILIZATION_THRESHOLD: Final = 0.10
"""4.5.2: warm-up is complete at less than 10 % variation across consecutive probe requests."""
CLOCK_SYNC_MAX_ERROR_MS: Final = 10.0
"""4.7.2: across machines, clock synchronization must achieve 10 ms accuracy or better."""

# -- TTFT (5.1) ----------------------------------------------------------------------------------

PERCENTILES: Final = (50.0, 90.0, 95.0, 99.0, 99.9)
"""5.1.4.1 and 5.4.4.1: the percentiles reported for TTFT and ITL: P50, P90, P95, P99, P99.9."""
TTFT_INPUT_BUCKET_EDGES: Final = (0, 256, 512, 1024, 2048, 4096)
"""5.1.4.2: the lower edges of the RECOMMENDED input-length buckets; the last is open."""

P99_MIN_SAMPLES: Final = 1000
"""5.1.2.1 and 5.1.4.3: at least 1,000 samples (requests) for P99 within 10 % at 95 %
confidence."""
P99_9_MIN_SAMPLES: Final = 10000
"""5.1.2.1 and 5.1.4.3: at least 10,000 samples (requests) for P99.9."""

# -- load sweeps (5.2, 5.3) ----------------------------------------------------------------------

LEVEL_MIN_DURATION_S: Final = 60.0
"""5.2.2.1 and 5.3.2: at least 60 s per load level."""
THROUGHPUT_RECOMMENDED_DURATION_S: Final = 300.0
"""5.2.2.1: 300 s per level RECOMMENDED for a stable throughput measurement."""
SWEEP_MIN_LEVELS: Final = 10
"""5.3.2: at least 10 load levels."""

# -- ITL (5.4) -----------------------------------------------------------------------------------

ITL_MIN_OUTPUT_TOKENS: Final = 50
"""5.4.2: every request generates at least 50 output tokens for meaningful ITL samples."""
ITL_MIN_REQUESTS: Final = 100
"""5.4.2: at least 100 requests (per level) for per-request ITL statistics."""
ITL_LOAD_FRACTIONS: Final = (0.25, 0.5, 0.75, 0.9)
"""5.4.2: load levels at 25 %, 50 %, 75 % and 90 % of saturation."""

# -- capacity (5.5) ------------------------------------------------------------------------------

CAPACITY_MIN_COMPLETION: Final = 0.99
"""5.5.2: a concurrency level passes with a request completion rate of at least 99 %."""
CAPACITY_REQUESTS_PER_SLOT: Final = 100
"""5.5.3 step 3: at least 100 request completions per concurrency slot ..."""
CAPACITY_MIN_DURATION_S: Final = 60.0
"""5.5.3 step 3: ... and at least 60 s, whichever is longer."""

# -- fairness (5.6) ------------------------------------------------------------------------------

FAIRNESS_SHORT_MIX: Final = 0.8
"""5.6.2: the mixed workload is 80 % short and 20 % long requests."""
FAIRNESS_LOAD_RANGE: Final = (0.7, 0.9)
"""5.6.2: the mixed run at 70–90 % of saturation throughput (RECOMMENDED)."""
FAIRNESS_CLASS_REQUESTS: Final = 500
"""5.6.2: at least 500 requests per class."""
FAIRNESS_MIXED_DURATION_S: Final = 300.0
"""5.6.3 step 4: the mixed run lasts at least 300 s."""
FAIRNESS_STARVATION_FACTOR: Final = 5.0
"""5.6.4: a request starves when it waits longer than this many times its class's median."""

# -- memory pressure (5.8) -----------------------------------------------------------------------

PRESSURE_OVERSUBSCRIPTION: Final = (1.0, 1.1, 1.25, 1.5)
"""5.8.2 and Table 11: load levels at 100 % (base), 110 %, 125 % and 150 % of the capacity."""
PRESSURE_LEVEL_MIN_S: Final = 120.0
"""5.8.3 step 3.2: run each pressure level for at least 120 s."""

# -- long context (5.9, A.5) ---------------------------------------------------------------------

LONG_CONTEXT_LENGTHS: Final = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
"""5.9.2: context lengths of 1K … 128K tokens."""
LONG_CONTEXT_REQUESTS: Final = 20
"""5.9.2: at least 20 requests per context length."""
LONG_CONTEXT_OUTPUT_TOKENS: Final = 256
"""A.5: the long-context workload generates 256 output tokens."""

# -- guardrail overhead (5.10) -------------------------------------------------------------------

GUARDRAIL_LOAD_FRACTIONS: Final = (0.25, 0.5, 0.75)
"""5.10.2: load levels at 25 %, 50 % and 75 % of capacity."""

# -- fluidity (Etalon) ---------------------------------------------------------------------------

FLUIDITY_MIN_INDEX: Final = 0.9
"""Etalon §4.2, §5: the fluidity-index a request must reach to count as fluid."""
FLUIDITY_REQUEST_FRACTION: Final = 0.99
"""Etalon §5.2: the fraction of requests that must be fluid for the fluid token generation
rate."""
FLUIDITY_DECODE_DEADLINE_PRESETS_S: Final[Mapping[str, float]] = MappingProxyType(
    {"strict": 0.025, "medium": 0.050, "relaxed": 0.100}
)
"""Etalon §4.1: the decode (TBT) deadline presets in seconds: chat (strict), medium, relaxed."""
FLUIDITY_DECODE_DEADLINE_S: Final = FLUIDITY_DECODE_DEADLINE_PRESETS_S["strict"]
"""Etalon §4.1 and §5.2: the strict preset, 25 ms, the default ``D_d`` and the capacity SLO's."""
FLUIDITY_SCHEDULING_SLACK_S: Final = 0.5
"""Etalon §4.1: "interactive applications might set a tight slack of 500ms" (``S`` of ``D_p``)."""
FLUIDITY_PROFILE_REQUESTS: Final = 10
"""Etalon §4.1: each prompt length is profiled with 10 isolated requests ("tunable")."""

# -- comparisons (6) -----------------------------------------------------------------------------

COMPARISON_MIN_RUNS: Final = 3
"""6.3: at least 3 independent runs for a comparative claim."""
