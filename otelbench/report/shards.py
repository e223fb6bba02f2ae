"""``run.shards``: each shard of a run sent from several hosts, its health and clock evidence.

A run sent with ``otelbench run --shard I/N`` (:mod:`otelbench.loadgen.shard`) is one run in the
store: its shards' run spans are joined there (:mod:`otelbench.query.shards`), and the joined
manifest lists each shard's own facts. This section carries them into the report, one row per
shard that ended its run span, and names the shards that did not (``missing``): the run's
timing is judged per shard (draft 4.2.1, 4.2.5 and 4.7.2, :mod:`otelbench.report.compliance`),
since a run keeps time only if every host does.

Example::

    shards = shards_section(data.run.manifest)     # None for a run from one host
    shards["rows"][0]["clock"]["within_limit"]
"""

from __future__ import annotations

from typing import Literal

from otelbench.model import report as rt
from otelbench.model.manifest import RunManifest, ShardEntry

__all__ = ["shards_section"]


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _busiest(
    health: rt.ClientHealth | None, key: Literal["utilization", "runqueue_wait_share"]
) -> float | None:
    """The highest of the shard's workers' ``cpu[key]`` (None when none measured)."""
    if health is None:
        return None
    values = [w["cpu"][key] for w in health["workers"]]
    measured = [float(v) for v in values if v is not None]
    return max(measured) if measured else None


def _row(shard: ShardEntry) -> rt.ShardRow:
    lag = shard["schedule_lag"]
    clock = shard["clock"]
    health = shard["client_health"]
    return {
        "index": shard["index"],
        "host": shard["host"],
        "requests_sent": shard["requests_sent"],
        "start_late_ms": _float(shard["start_late_ms"]),
        "schedule_lag_p99_ms": None if lag is None else _float(lag["p99_ms"]),
        "generator_bottleneck": lag is not None and lag["generator_bottleneck"],
        "loop_lateness_p99_ms": None
        if health is None
        else _float(health["loop_lateness_ms"]["p99"]),
        "read_delay_p99_ms": None if health is None else _float(health["read_delay_ms"]["p99"]),
        "cpu_utilization_max": _busiest(health, "utilization"),
        "runqueue_wait_share_max": _busiest(health, "runqueue_wait_share"),
        "clock": {
            "method": "not recorded" if clock is None else clock["method"] or "not recorded",
            "accuracy_ms": None if clock is None else _float(clock["accuracy_ms"]),
            "within_limit": None if clock is None else clock["within_limit"],
        },
    }


def shards_section(manifest: RunManifest) -> rt.Shards | None:
    """The report's ``run.shards`` from a joined run manifest; None for a run from one host."""
    shards = manifest.get("shards")
    if shards is None:
        return None
    rows = [_row(s) for s in shards]
    present = {row["index"] for row in rows}
    count = manifest.get("shard_count") or len(rows)
    return {"count": count, "missing": sorted(set(range(count)) - present), "rows": rows}
