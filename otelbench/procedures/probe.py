"""The capacity estimate a sweep or a search starts from (draft 5.3.3 step 1).

Either given (``--capacity-rps``, e.g. a published specification or an earlier result) or
measured by a short **closed-loop probe**: ``probe_requests`` requests at ``probe_concurrency``
in flight; the estimate is the probe's achieved request throughput (completed requests per
second over its window). A closed loop at a concurrency the target can batch runs it near its
capacity without queueing past it; the estimate is only a starting point (5.3 sweeps to 120 %
of it, 5.2 searches around it).

Example::

    rps = estimate_capacity(session, None, procedure)  # procedure: a LevelSizes, e.g. 5.3's
    capacity = capacity_section(session.levels, None, procedure)
    capacity["rps"], capacity["source"]
"""

from __future__ import annotations

from typing import cast

from otelbench.errors import TargetError
from otelbench.loadgen.runner import LoadSpec
from otelbench.model.procedure import CapacityEstimate, ProbeLevel
from otelbench.procedures.base import LevelSizes, level_entry
from otelbench.procedures.session import Level, ProcedureSession

__all__ = ["PROBE_ROLE", "capacity_section", "estimate_capacity"]

PROBE_ROLE = "capacity-probe"


def estimate_capacity(session: ProcedureSession, given: float | None, sizes: LevelSizes) -> float:
    """The capacity estimate in requests/s: ``given``, else the throughput of a closed-loop
    probe of the procedure's ``sizes`` (:attr:`~LevelSizes.probe_requests` requests at
    :attr:`~LevelSizes.probe_concurrency`)."""
    if given is not None:
        return given
    concurrency, requests = sizes.probe_concurrency, sizes.probe_requests
    level = session.run_level(
        LoadSpec(mode="closed_loop", requests=requests, concurrency=concurrency),
        f"capacity probe (closed loop, concurrency {concurrency})",
        {"role": PROBE_ROLE},
    )
    rps = level.live_row.get("achieved_rps") if level.live_row else None
    if not rps:
        raise TargetError(
            "the capacity probe completed no request; check the target (or give --capacity-rps)"
        )
    return float(rps)


def capacity_section(
    levels: list[Level], given: float | None, sizes: LevelSizes
) -> CapacityEstimate:
    """The report's ``capacity`` block: the estimate, its source and the probe's level
    (:func:`estimate_capacity`'s)."""
    probe = next((lv for lv in levels if lv.meta.get("role") == PROBE_ROLE), None)
    if given is not None:
        return {"rps": given, "source": "given (--capacity-rps)", "probe": None}
    live = probe.live_row if probe is not None else None
    return {
        "rps": live.get("achieved_rps") if live else None,
        "source": f"closed-loop probe: {sizes.probe_requests} requests at concurrency "
        f"{sizes.probe_concurrency}, "
        "achieved request throughput (as measured live, when the levels were planned)",
        "probe": cast(ProbeLevel, level_entry(probe)) if probe is not None else None,
    }
