"""The load generator: workloads (draft 4.3), arrival processes (4.2.3) and the run driver."""

from __future__ import annotations

from otelbench.loadgen.arrivals import ARRIVALS, poisson, uniform
from otelbench.loadgen.workloads import (
    WORKLOADS,
    SyntheticUniform,
    Workload,
    WorkloadRequest,
    make_workload,
)

__all__ = [
    "ARRIVALS",
    "WORKLOADS",
    "SyntheticUniform",
    "Workload",
    "WorkloadRequest",
    "make_workload",
    "poisson",
    "uniform",
]
