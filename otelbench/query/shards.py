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
from typing import Final, Literal

from otelbench.model.manifest import RunManifest, ShardEntry
from otelbench.semconv import WARMUP_SHARD

__all__ = ["LATE_START_MS", "is_sharded", "join_shards", "shard_entry"]

LATE_START_MS: Final = 1.0
"""A shard that started more than this after the agreed start is named as late (draft 4.2.1's
timing resolution: its first sends are off schedule by more than the run can resolve)."""


def is_sharded(manifest: RunManifest) -> bool:
    """Whether ``manifest`` is one shard's of a run sent from several hosts."""
    shard = manifest.get("shard")
    return shard is not None and shard["count"] > 1


def shard_entry(manifest: RunManifest) -> ShardEntry:
    """One shard's facts for the joined manifest's ``shards`` list."""
    shard = manifest["shard"]
    load = manifest.get("load")
    return {
        "index": shard["index"],
        "host": shard["host"],
        "start_late_ms": shard["start_late_ms"],
        "requests_sent": manifest.get("requests_sent"),
        "started_unix": manifest.get("started_unix"),
        "finished_unix": manifest.get("finished_unix"),
        "duration_s": manifest.get("duration_s"),
        "workers": None if load is None else load.get("workers"),
        "schedule_lag": manifest.get("schedule_lag"),
        "client_health": manifest.get("client_health"),
        "clock": manifest.get("clock"),
    }


def _or_lowest(value: float | None) -> float:
    return float("-inf") if value is None else float(value)


def _lag_p99(manifest: RunManifest) -> float:
    """The shard's P99 send lag (ms; lowest when it has none), to find the worst shard."""
    lag = manifest.get("schedule_lag")
    return _or_lowest(None if lag is None else lag["p99_ms"])


def _lateness_p99(manifest: RunManifest) -> float:
    """The shard's P99 loop lateness (ms; lowest when it has none), to find the worst shard."""
    health = manifest.get("client_health")
    return _or_lowest(None if health is None else health["loop_lateness_ms"]["p99"])


def _by_shard(
    by_index: dict[int, RunManifest], base: RunManifest, key: Literal["deviations", "notes"]
) -> list[str]:
    """``base``'s ``key`` list, then each text only other shards have, once, with the indices
    of the shards that have it (``shards 1, 3: …``)."""
    own = list(base.get(key, []))
    others: dict[str, list[int]] = {}
    for index, m in by_index.items():
        for text in m.get(key, []):
            if m is not base and text not in own:
                others.setdefault(text, []).append(index)
    return own + [
        f"shard{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}: {text}"
        for text, ids in others.items()
    ]


def join_shards(manifests: Sequence[RunManifest]) -> RunManifest:
    """The run's manifest from its shards' (each with a ``shard`` entry; see the module
    docstring). The count is the largest any shard declared."""
    ordered = sorted(manifests, key=lambda m: m["shard"]["index"])
    by_index = {m["shard"]["index"]: m for m in ordered}
    count = max(m["shard"]["count"] for m in manifests)
    base = by_index.get(WARMUP_SHARD) or next(iter(by_index.values()))
    shards = [shard_entry(m) for m in by_index.values()]
    worst_lag = max(by_index.values(), key=_lag_p99)
    worst_health = max(by_index.values(), key=_lateness_p99)
    lag = worst_lag.get("schedule_lag")
    if lag is not None:
        flagged = any(m.get("schedule_lag", {}).get("generator_bottleneck") for m in manifests)
        lag = {**lag, "generator_bottleneck": flagged}
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
        if late is not None and late > LATE_START_MS:
            deviations.append(
                f"shard {entry['index']} of {count} started {late:.1f} ms after the agreed "
                f"start (> {LATE_START_MS:g} ms): its first sends are behind the schedule"
            )
    starts = [m["started_unix"] for m in manifests if "started_unix" in m]
    ends = [m["finished_unix"] for m in manifests if "finished_unix" in m]
    durations = [m["duration_s"] for m in manifests if "duration_s" in m]
    joined = base.copy()
    joined.pop("shard", None)
    joined.pop("clock", None)
    joined["requests_sent"] = sum(m.get("requests_sent", 0) for m in manifests)
    if starts:
        joined["started_unix"] = min(starts)
    if ends:
        joined["finished_unix"] = max(ends)
    if durations:
        joined["duration_s"] = max(durations)
    if lag is not None:
        joined["schedule_lag"] = lag
    joined["client_health"] = worst_health.get("client_health")
    joined["deviations"] = deviations
    joined["notes"] = notes
    joined["shard_count"] = count
    joined["shards"] = shards
    return joined
