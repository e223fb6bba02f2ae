"""`otelbench run --target` at the draft's sizes for TTFT (5.1) against a well-behaved server is
"unconditionally compliant"; the same run with one requirement broken is not, and names it.

Which test and boundary: a run report judges 5.1 and 5.4. 5.4 RECOMMENDS several load levels
(5.4.2), which one run cannot have (``otelbench test itl`` runs them), and the Model Engine
boundary RECOMMENDS gRPC (4.6.1) where otelbench streams SSE: so the one verdict a single run can
carry to "unconditionally compliant" is 5.1's at the Application Gateway boundary, which
RECOMMENDS SSE (4.6.1) and the Conversation workload (4.3.2.3). The sizes are the draft's, not
scaled down: 10,000 requests (5.1.2.1: P99.9 needs 10,000 samples, and the report gives P99.9,
5.1.4.1), Poisson arrivals (5.1.2.2), a warm-up of 100 requests and 10,000 output tokens with its
stabilization probes (4.5). That is 50 s of load per run at 200 requests/s (two runs: about two
minutes on a quiet machine), so this lives in the timing tier (tests/timing: no other test's load
on the cores).

4.2.1's 1 ms timing and 4.2.5's schedule lag are judged from the load generator's own measured
health. Without ``--loadgen-cpus`` they were never met here: the gateway, the scripted server
and the embedded collector share both cores with the load generator, whose loop lateness P99
was 3–4 ms with about 8 % of its time waiting for a core. So the runs give the load generator's
event loop CPU 0 of its own (``--loadgen-cpus 0``: the collector and the span exporter's thread
on the other CPUs) and the gateway and scripted server are started on the other CPUs too: the
verdict must then be "unconditionally compliant", and the uniform twin must miss exactly
5.1.2.2's Poisson statement. Measured so, with CPU 0 otherwise idle: loop lateness P99
0.65–0.94 ms (once 1.001 ms), run-queue wait 0.3–0.4 %, the loop busy 20 % of a core (unpinned,
the same quiet hour: 1.6–1.9 ms and 2.9–3.4 %); the margin to 1 ms is small, and the rest is the
loop's own work and its garbage collections (young collections of about 0.3 ms, a middle one of
1–2 ms every ten). Since the P99 sits that close to the bound, a run whose only unmet statements
are 4.2.1 and 4.2.5 is run again, up to :data:`ATTEMPTS` runs in all (one quiet run in five
missed by noise: three in a row would mean the load generator cannot time this load to 1 ms).
The one other way out is other people's processes on this shared machine (they took 20–75 % of
CPU 0 in some runs: P99 3.7–4.4 ms): where 4.2.1 or 4.2.5 is unmet in the last run, the
report's own evidence must show the loop waiting for a core (or the host stealing it) while the
load generator was not busy with its own load (as in tests/timing/test_loadgen_workers.py),
and the report must show every process of the run where it was put; every other statement of
5.1 must be met either way, and no statement depends on the latencies. The uniform twin must be
"not compliant" and name 5.1.2.2's Poisson statement as its one unmet statement besides,
possibly, those two.

Real parts only: the CLI in a child process with its embedded collector; the Application Gateway
is ``otelbench gateway`` with a blocklist input filter (its default configuration) in front of
the scripted SSE server (tests/fixtures/scripted_server.py), which plays a fixed fast schedule
(2 chunks of 50 tokens, continuous usage statistics) whatever the request asks. The SUT
description declares what otelbench cannot see; its guardrail comparative run is the tester's
declaration (draft 4.8.2 statements are judged as declared).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelbench.draft import P99_9_MIN_SAMPLES, WARMUP_MIN_OUTPUT_TOKENS, WARMUP_MIN_REQUESTS
from otelbench.guardrails.gateway import GatewayServer
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer
from tests.integration.test_run_compliance import LOAD_DEPENDENT
from tests.timing.test_loadgen_workers import explained_by_other_processes

pytestmark = pytest.mark.timing  # the load generator's timing to 1 ms

GUARDRAILS = """\
input:
  - type: blocklist
    name: banned
    keywords: [forbidden]
"""
SUT = """\
boundary: Application Gateway
hardware: 2-core CPU, no accelerator
software: otelbench gateway in front of the scripted SSE server
model_version: m@1
quantization: none
prefix_caching: disabled
guardrails:
  input_filter: otelbench blocklist (banned)
  output_filter: none
  default_configuration: true
  comparative_run: otelbench test guardrail-overhead, out/5.10/procedure.json
"""
SCRIPT = {"n": 2, "tokens": [50], "ttft_ms": 1.0, "itl_ms": 1.0, "tag": "unconditional"}
"""100 output tokens per request in 2 chunks: the warm-up's 100 requests reach 10,000 output
tokens, and the gateway relays few events."""
RATE = 200.0
ATTEMPTS = 3
"""Runs of the Poisson case while its only unmet statements are the load generator's timing."""
ALLOWED = sorted(os.sched_getaffinity(0))
LOADGEN_CPU = ALLOWED[0]
OTHERS = ALLOWED[1:] or ALLOWED
"""The load generator's CPU, and where the gateway, the scripted server and the collector run
(on a 1-CPU machine, the same one: the report then shows it)."""


@contextlib.contextmanager
def started_on(cpus: list[int]) -> Iterator[None]:
    """This thread on ``cpus`` while the servers start: their processes inherit the mask."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    config = tmp_path_factory.mktemp("gateway") / "guardrails.yaml"
    config.write_text(GUARDRAILS, encoding="utf-8")
    with contextlib.ExitStack() as stack:
        with started_on(OTHERS):
            server = stack.enter_context(ScriptedServer())
            gw = stack.enter_context(GatewayServer(server.url, config=config))
        assert server.proc is not None
        assert gw.pid is not None
        assert sorted(os.sched_getaffinity(server.proc.pid)) == OTHERS
        assert sorted(os.sched_getaffinity(gw.pid)) == OTHERS
        yield gw


def run(gateway: GatewayServer, out: Path, *extra: str) -> dict[str, Any]:
    sut = out.parent / f"{out.name}-sut.yaml"
    sut.write_text(SUT, encoding="utf-8")
    proc = otelbench(
        "run", "--target", gateway.base_url, "--model", "m", "--workload", "conversation",
        "--requests", str(P99_9_MIN_SAMPLES), "--rate", str(RATE), "--seed", "3",
        "--tokenizer", "cl100k_base", "--extra-body", json.dumps({"script": SCRIPT}),
        "--span-wait", "0", "--sut-config", str(sut), "--out", str(out),
        "--loadgen-cpus", str(LOADGEN_CPU), *extra,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert_pinned(report)
    return report


def assert_pinned(report: dict[str, Any]) -> None:
    """The load generator measured on its CPU, the collector ran on the others (read back)."""
    cpus = report["run"]["load"]["workers"]["cpus"]
    assert cpus["loadgen"] == [LOADGEN_CPU]
    assert cpus["processes"] == {"collector": OTHERS}
    assert [w["cpus"] for w in report["run"]["client_health"]["workers"]] == [[LOADGEN_CPU]]


def ttft_verdict(report: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(t for t in report["compliance"]["tests"] if t["test"] == "5.1")
    return found


def unmet(verdict: dict[str, Any]) -> dict[str, str]:
    return {s["id"]: s["evidence"] for s in verdict["statements"] if s["met"] is False}


def timing_held_or_explained(report: dict[str, Any], unmet: dict[str, str]) -> set[str]:
    """The unmet statements beyond the load generator's timing (4.2.1, 4.2.5). Those two are
    judged from the run's own measured timing health; with the load generator on a CPU of its
    own, only processes that are not the run's (this machine is shared) can break them: where
    they are unmet, the report's own evidence must show it (the loop waited for a core, or the
    host stole it, while the worker was not busy with its own load), as in
    tests/timing/test_loadgen_workers.py."""
    if unmet.keys() & LOAD_DEPENDENT:
        assert explained_by_other_processes(report), unmet
    return set(unmet) - LOAD_DEPENDENT


def test_a_complete_run_is_unconditionally_compliant_and_one_broken_requirement_is_named(
    gateway: GatewayServer, tmp_path: Path
) -> None:
    for attempt in range(1, ATTEMPTS + 1):
        report = run(gateway, tmp_path / f"poisson-{attempt}")
        verdict = ttft_verdict(report)
        found = unmet(verdict)
        if not found or set(found) - LOAD_DEPENDENT or explained_by_other_processes(report):
            break
        health = report["run"]["client_health"]["loop_lateness_ms"]
        print(f"attempt {attempt}: only the load generator's timing unmet (P99 {health['p99']} ms)")
    assert report["run"]["requests"]["succeeded"] == P99_9_MIN_SAMPLES
    warmup = report["run"]["warmup"]
    assert warmup["requests"] >= WARMUP_MIN_REQUESTS
    assert warmup["output_tokens"] >= WARMUP_MIN_OUTPUT_TOKENS
    assert timing_held_or_explained(report, found) == set()
    expected = "not compliant" if found else "unconditionally compliant"
    assert verdict["verdict"] == expected
    checks = {c["id"]: c for c in report["compliance"]["checks"]}
    assert checks["chunking-declared"]["met"] is True
    assert checks["first-token-definition"]["met"] is True
    assert checks["guardrails-production"]["met"] is True

    # the same run with uniform arrivals: 5.1.2.2 REQUIRES Poisson
    broken_report = run(gateway, tmp_path / "uniform", "--arrival", "uniform")
    broken = ttft_verdict(broken_report)
    assert broken["verdict"] == "not compliant"
    assert set(unmet(broken)) - LOAD_DEPENDENT == {"ttft-poisson"}
    assert "open-loop arrivals: uniform" in unmet(broken)["ttft-poisson"]
