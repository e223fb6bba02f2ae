"""One run from its shards' run spans: the merge of a run sent from several hosts.

Each shard of a run (``otelbench run --shard I/N``, :mod:`otelbench.loadgen.shard`) ends its own
``otelbench.run`` span, with the same run id and its own manifest (which carries ``shard``:
index, count, host, how late it started, and ``clock``: its clock evidence). The request spans
need no merging: they are the run's, whichever host sent them. The manifests are joined here,
once, where the store's run spans are read (:func:`otelbench.query.extract.list_runs`):

* the run's manifest is the warm-up shard's (:data:`~otelbench.semconv.WARMUP_SHARD`),
  else the lowest shard's, with ``requests_sent`` summed, the run's wall-clock span from the
  first start to the last finish and ``duration_s`` the longest shard's;
* ``schedule_lag`` and ``client_health`` are the worst shard's (by P99 lag, by P99 loop
  lateness): a quantile of one host is no quantile of the union, and the run keeps time only
  if every host does; ``generator_bottleneck`` is set if any shard's is;
* ``shards`` lists each shard's own manifest facts (:func:`shard_entry`), by index, and
  ``shard_count`` the N the shards declared;
* a shard with no run span in the store (never started, or stopped before its end: its run
  span is never exported) is a deviation that names it, as is a shard that started late;
  deviations and notes of shards other than the run manifest's are kept once, with the
  indices of the shards that have them.

Example::

    manifest = join_shards([m0, m1, m3])     # shards 0, 1, 3 of 4
    manifest["shards"][2]["index"], manifest["deviations"][-1]
    # (3, 'shard 2 of 4: no run span in the store (…)')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from otelbench.semconv import WARMUP_SHARD

__all__ = ["LATE_START_MS", "is_sharded", "join_shards", "shard_entry"]

LATE_START_MS: Final = 1.0
"""A shard that started more than this after the agreed start is named as late (draft 4.2.1's
timing resolution: its first sends are off schedule by more than the run can resolve)."""


def is_sharded(manifest: dict[str, Any]) -> bool:
    """Whether ``manifest`` is one shard's of a run sent from several hosts."""
    shard = manifest.get("shard")
    return isinstance(shard, dict) and int(shard.get("count") or 1) > 1


def shard_entry(manifest: dict[str, Any]) -> dict[str, Any]:
    """One shard's facts for the joined manifest's ``shards`` list."""
    shard = manifest["shard"]
    return {
        "index": shard["index"],
        "host": shard.get("host"),
        "start_late_ms": shard.get("start_late_ms"),
        "requests_sent": manifest.get("requests_sent"),
        "started_unix": manifest.get("started_unix"),
        "finished_unix": manifest.get("finished_unix"),
        "duration_s": manifest.get("duration_s"),
        "workers": (manifest.get("load") or {}).get("workers"),
        "schedule_lag": manifest.get("schedule_lag"),
        "client_health": manifest.get("client_health"),
        "clock": manifest.get("clock"),
    }


def _p99(section: Any, key: str) -> float:
    value = (section or {}).get(key) if isinstance(section, dict) else None
    if isinstance(value, dict):
        value = value.get("p99")
    return float(value) if isinstance(value, int | float) else float("-inf")


def _by_shard(by_index: dict[int, dict[str, Any]], base: dict[str, Any], key: str) -> list[str]:
    """``base``'s ``key`` list, then each text only other shards have, once, with the indices
    of the shards that have it (``shards 1, 3: …``)."""
    own = list(base.get(key) or [])
    others: dict[str, list[int]] = {}
    for index, m in by_index.items():
        for text in m.get(key) or []:
            if m is not base and text not in own:
                others.setdefault(text, []).append(index)
    return own + [
        f"shard{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}: {text}"
        for text, ids in others.items()
    ]


def _numbers(manifests: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [m[key] for m in manifests if isinstance(m.get(key), int | float)]


def join_shards(manifests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's manifest from its shards' (each with a ``shard`` entry; see the module
    docstring). The count is the largest any shard declared."""
    ordered = sorted(manifests, key=lambda m: int(m["shard"]["index"]))
    by_index = {int(m["shard"]["index"]): m for m in ordered}
    count = max(int(m["shard"]["count"]) for m in manifests)
    base = by_index.get(WARMUP_SHARD) or next(iter(by_index.values()))
    shards = [shard_entry(m) for m in by_index.values()]
    worst_lag = max(by_index.values(), key=lambda m: _p99(m.get("schedule_lag"), "p99_ms"))
    worst_health = max(
        by_index.values(), key=lambda m: _p99(m.get("client_health"), "loop_lateness_ms")
    )
    lag = worst_lag.get("schedule_lag")
    if isinstance(lag, dict):
        flagged = any((m.get("schedule_lag") or {}).get("generator_bottleneck") for m in manifests)
        lag = {**lag, "generator_bottleneck": bool(flagged)}
    deviations = _by_shard(by_index, base, "deviations")
    notes = _by_shard(by_index, base, "notes")
    for index in range(count):
        if index not in by_index:
            deviations.append(
                f"shard {index} of {count}: no run span in the store (the shard never started, "
                "or stopped before its end); the requests it sent before are counted, the rest "
                "of its part of the schedule was never sent"
            )
    for entry in shards:
        late = entry["start_late_ms"]
        if isinstance(late, int | float) and late > LATE_START_MS:
            deviations.append(
                f"shard {entry['index']} of {count} started {late:.1f} ms after the agreed "
                f"start (> {LATE_START_MS:g} ms): its first sends are behind the schedule"
            )
    starts = [
        m["started_unix"] for m in manifests if isinstance(m.get("started_unix"), int | float)
    ]
    ends = [
        m["finished_unix"] for m in manifests if isinstance(m.get("finished_unix"), int | float)
    ]
    durations = [m["duration_s"] for m in manifests if isinstance(m.get("duration_s"), int | float)]
    return {
        **{k: v for k, v in base.items() if k not in ("shard", "clock")},
        "requests_sent": sum(int(m.get("requests_sent") or 0) for m in manifests),
        "started_unix": min(starts) if starts else base.get("started_unix"),
        "finished_unix": max(ends) if ends else base.get("finished_unix"),
        "duration_s": max(durations) if durations else base.get("duration_s"),
        "schedule_lag": lag,
        "client_health": worst_health.get("client_health"),
        "deviations": deviations,
        "notes": notes,
        "shard_count": count,
        "shards": shards,
    }
