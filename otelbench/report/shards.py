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

from collections.abc import Mapping
from typing import Any

from otelbench.model import report as rt

__all__ = ["shards_section"]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _p99(section: Any, key: str) -> float | None:
    return (
        _number(((section or {}).get(key) or {}).get("p99")) if isinstance(section, dict) else None
    )


def _row(shard: Mapping[str, Any]) -> rt.ShardRow:
    lag = shard.get("schedule_lag") or {}
    clock = shard.get("clock") or {}
    health = shard.get("client_health")
    sent = shard.get("requests_sent")
    return {
        "index": int(shard["index"]),
        "host": shard.get("host"),
        "requests_sent": sent if isinstance(sent, int) else None,
        "start_late_ms": _number(shard.get("start_late_ms")),
        "schedule_lag_p99_ms": _number(lag.get("p99_ms")),
        "generator_bottleneck": bool(lag.get("generator_bottleneck")),
        "loop_lateness_p99_ms": _p99(health, "loop_lateness_ms"),
        "read_delay_p99_ms": _p99(health, "read_delay_ms"),
        "clock": {
            "method": str(clock.get("method") or "not recorded"),
            "accuracy_ms": _number(clock.get("accuracy_ms")),
            "within_limit": clock.get("within_limit"),
        },
    }


def shards_section(manifest: Mapping[str, Any]) -> rt.Shards | None:
    """The report's ``run.shards`` from a joined run manifest; None for a run from one host."""
    shards = manifest.get("shards")
    if not isinstance(shards, list):
        return None
    rows = [_row(s) for s in shards]
    present = {row["index"] for row in rows}
    count = int(manifest.get("shard_count") or len(rows))
    return {"count": count, "missing": sorted(set(range(count)) - present), "rows": rows}
