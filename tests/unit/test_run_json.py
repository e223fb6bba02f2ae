"""``run.json`` (:func:`otelbench.benchmark.config_json`): a run's configuration, written with its
keys in the order of the run's own configuration values (``load`` and ``warmup`` as their
dataclasses' fields, ``shard`` only for a sharded run, before ``pid``)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from otelbench.benchmark import config_json
from otelbench.loadgen.runner import LoadSpec, RunConfig
from otelbench.loadgen.shard import Shard
from otelbench.loadgen.warmup import WarmupSpec

PLAIN = RunConfig(
    target="http://127.0.0.1:8000",
    model="m",
    load=LoadSpec(mode="poisson", requests=3, rate=1.0),
    run_id="r1",
)
SHARDED = dataclasses.replace(
    PLAIN,
    load=LoadSpec(mode="bursty", requests=3, rate=1.0, arrival_params={"cv": 2.0}),
    workload_params={"vocab_size": 100},
    warmup=WarmupSpec(min_requests=10, min_output_tokens=100, probes=3),
    shard=Shard(1, 2, 1_700_000_000.0),
)


@pytest.mark.parametrize("config", [PLAIN, SHARDED], ids=["plain", "sharded"])
def test_run_json_holds_the_configuration_in_order(config: RunConfig) -> None:
    expected = {
        "run_id": config.run_id,
        "target": config.target,
        "model": config.model,
        "load": dataclasses.asdict(config.load),
        "seed": config.seed,
        "workload": config.workload,
        "workload_params": config.workload_params,
        "api": config.api,
        "ignore_eos": config.ignore_eos,
        "tokenizer": config.tokenizer,
        "warmup": None if config.warmup is None else dataclasses.asdict(config.warmup),
        "workers": config.workers,
        "loadgen_cpus": None,
        **({} if config.shard is None else {"shard": dataclasses.asdict(config.shard)}),
        "pid": os.getpid(),
    }
    assert json.dumps(config_json(config), indent=2) == json.dumps(expected, indent=2)
