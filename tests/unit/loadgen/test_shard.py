"""One host's shard of a run sent from several hosts (otelbench.loadgen.shard): the union of the
shards is the one seeded schedule, the options parse or fail in one line, and the agreed
wall-clock start maps onto the monotonic clock."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.loadgen.arrivals import arrival_schedule
from otelbench.loadgen.shard import (
    Shard,
    agreed_t0,
    parse_shard,
    parse_start,
    shard_from_env,
    shard_part,
)
from otelbench.loadgen.share import split_load
from otelbench.loadgen.workloads import WorkloadRequest

START = 1_790_000_000.0


def items(n: int) -> list[WorkloadRequest]:
    return [WorkloadRequest(i, [i], 16, 0.0) for i in range(n)]


@settings(deadline=None, max_examples=60)
@given(n=st.integers(1, 300), shards=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_the_shards_together_send_the_one_schedule_exactly_once(
    n: int, shards: int, seed: int
) -> None:
    """Open loop: every request of the seeded Poisson schedule is sent by exactly one shard,
    with its own index, prompt and send offset from the agreed start."""
    reqs = items(n)
    offsets = [float(x) for x in arrival_schedule("poisson", rate=50.0, n=n, seed=seed)]
    prompts = [r.prompt_token_ids for r in reqs]
    parts = [
        shard_part(reqs, prompts, offsets, None, Shard(i, shards, START)) for i in range(shards)
    ]
    sent = [
        (item.index, offset, prompt)
        for part in parts
        for item, offset, prompt in zip(part.items, part.offsets_s or [], part.prompts, strict=True)
    ]
    assert sorted(sent) == [(i, offsets[i], [i]) for i in range(n)]
    for index, part in enumerate(parts):
        assert all(item.index % shards == index for item in part.items)
        assert part.offsets_s == sorted(part.offsets_s or [])


@settings(deadline=None, max_examples=60)
@given(n=st.integers(1, 300), concurrency=st.integers(1, 64), shards=st.integers(1, 8))
def test_closed_loop_shards_split_the_streams(n: int, concurrency: int, shards: int) -> None:
    reqs = items(n)
    prompts = [r.prompt_token_ids for r in reqs]
    if concurrency < shards:
        with pytest.raises(ConfigError, match="give --concurrency >= the shard count"):
            shard_part(reqs, prompts, None, concurrency, Shard(0, shards, START))
        return
    parts = [
        shard_part(reqs, prompts, None, concurrency, Shard(i, shards, START)) for i in range(shards)
    ]
    assert sum(p.concurrency or 0 for p in parts) == concurrency
    assert all((p.concurrency or 0) >= 1 for p in parts)
    assert sorted(i.index for p in parts for i in p.items) == list(range(n))


def test_a_shard_then_splits_over_its_own_workers_keeping_indices_and_offsets() -> None:
    reqs = items(40)
    offsets = [i * 0.01 for i in range(40)]
    part = shard_part(reqs, [r.prompt_token_ids for r in reqs], offsets, None, Shard(1, 4, START))
    workers = split_load(part.items, part.prompts, part.offsets_s, part.concurrency, 2)
    sent = sorted(
        (i.index, o) for w in workers for i, o in zip(w.items, w.offsets_s or [], strict=True)
    )
    assert sent == [(i, offsets[i]) for i in range(1, 40, 4)]


def test_shard_options_parse_or_fail_in_one_line() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("2", "a/4", "2/", "-1/4"):
        with pytest.raises(ConfigError, match="expected I/N"):
            parse_shard(bad)
    with pytest.raises(ConfigError, match="0 <= I < N"):
        Shard(4, 4, START)
    with pytest.raises(ConfigError, match="needs one agreed start"):
        Shard(0, 2)
    assert Shard(0, 1).warms_up
    assert not Shard(1, 2, START).warms_up
    assert parse_start("1790000000.5") == 1790000000.5
    assert parse_start("2026-11-29T15:00:00Z") == 1_795_964_400.0
    assert parse_start("2026-11-29T16:00:00+01:00") == 1_795_964_400.0
    for bad, why in (
        ("tomorrow", "expected Unix seconds or ISO 8601"),
        ("nan", "not a time"),
        ("2026-11-29T15:00:00", "give the time zone"),
    ):
        with pytest.raises(ConfigError, match=why):
            parse_start(bad)


def test_the_shard_comes_from_the_environment_where_the_option_is_not_given() -> None:
    assert shard_from_env({}, None) is None
    assert shard_from_env({"OTELBENCH_SHARD": "1/3"}, None) == (1, 3)
    assert shard_from_env({"JOB_COMPLETION_INDEX": "2"}, 4) == (2, 4)
    with pytest.raises(ConfigError, match="give the shard count, --shards N"):
        shard_from_env({"JOB_COMPLETION_INDEX": "2"}, None)
    with pytest.raises(ConfigError, match="is not a shard index"):
        shard_from_env({"JOB_COMPLETION_INDEX": "x"}, 4)


def test_the_agreed_start_maps_onto_the_monotonic_clock() -> None:
    """A start 2 s ahead is 2 s ahead on CLOCK_MONOTONIC too (to the µs of the mapping, with
    room for this host being descheduled between the reads); one 3 s past is 3 s late."""
    ahead = time.time() + 2.0
    mono = time.perf_counter_ns()
    t0, late = agreed_t0(ahead)
    assert late < 0
    assert abs((t0 - mono) - 2e9) < 100e6
    t0, late = agreed_t0(time.time() - 3.0)
    assert abs(late - 3e9) < 100e6
    assert t0 < time.perf_counter_ns()


def test_the_manifest_entry_names_the_host_and_the_lateness() -> None:
    entry = Shard(2, 4, START).manifest(late_ns=1_234_567)
    assert entry["index"] == 2
    assert entry["count"] == 4
    assert entry["start_at_unix"] == START
    assert entry["start_late_ms"] == 1.235
    assert isinstance(entry["host"], str)
    assert entry["host"]
    assert Shard(2, 4, START).manifest(late_ns=-5_000_000)["start_late_ms"] == 0.0


def test_one_shard_of_one_is_the_single_host_run_and_a_shard_needs_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--shard 0/1`` changes nothing of the run (it is today's run, byte for byte); a real
    shard needs the run id, the shared collector and the agreed start; ``--shards`` alone is
    refused rather than sending the whole load from every host."""
    import typer

    from otelbench.cli.run import RunOptions, _sharded
    from otelbench.loadgen.runner import LoadSpec, RunConfig

    for name in ("OTELBENCH_SHARD", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(name, raising=False)
    config = RunConfig(target="http://t", model="m", load=LoadSpec("poisson", 10, rate=1.0))
    assert _sharded(config, RunOptions(shard="0/1"), None) == config
    assert _sharded(config, RunOptions(), None) == config
    named = _sharded(config, RunOptions(shard="0/1", run_id="r"), None)
    assert (named.run_id, named.shard) == ("r", None)
    with pytest.raises(typer.BadParameter, match="needs --run-id"):
        _sharded(config, RunOptions(shard="1/4"), "http://c:4318")
    with pytest.raises(typer.BadParameter, match="give --otlp-endpoint"):
        _sharded(config, RunOptions(shard="1/4", run_id="r"), None)
    with pytest.raises(ConfigError, match="needs one agreed start"):
        _sharded(config, RunOptions(shard="1/4", run_id="r"), "http://c:4318")
    with pytest.raises(typer.BadParameter, match="needs this host's index"):
        _sharded(config, RunOptions(shards=4), "http://c:4318")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "3")
    sharded = _sharded(
        config,
        RunOptions(shards=4, run_id="r", start_at=str(START), clock_reference=""),
        "http://c:4318",
    )
    assert sharded.shard == Shard(3, 4, START)
    assert sharded.clock_reference is None
    assert sharded.shard_index == 3
