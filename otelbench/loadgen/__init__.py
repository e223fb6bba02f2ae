"""The load generator: workloads (draft 4.3, Appendix A), tokenizers (4.4), arrival processes
(4.2.3), warm-up (4.5) and the run driver."""

from __future__ import annotations

from otelbench.loadgen.arrivals import ARRIVALS, bursty, poisson, trace, uniform
from otelbench.loadgen.tokenizers import TOKENIZERS, Tokenizer, load_tokenizer
from otelbench.loadgen.warmup import WarmupOutcome, WarmupSpec
from otelbench.loadgen.workloads import (
    WORKLOADS,
    SyntheticUniform,
    Workload,
    WorkloadRequest,
    make_workload,
)

__all__ = [
    "ARRIVALS",
    "TOKENIZERS",
    "WORKLOADS",
    "SyntheticUniform",
    "Tokenizer",
    "WarmupOutcome",
    "WarmupSpec",
    "Workload",
    "WorkloadRequest",
    "bursty",
    "load_tokenizer",
    "make_workload",
    "poisson",
    "trace",
    "uniform",
]
