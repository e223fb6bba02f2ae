"""`otelbench run` with a SUT description: the declarations reach report.json, and the per-test
verdicts judge the run by them (draft 2).

Real parts only: the CLI in a child process, the embedded collector, the scripted SSE server
(tests/fixtures/scripted_server.py). The runs are small (40 requests, an 8-request warm-up), so
5.1's sample counts and 4.5.1's warm-up are not met: the tests compare what else is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

SUT = """\
boundary: Model Engine
hardware: 2-core CPU, no accelerator
software: scripted SSE server
model_version: m@1
quantization: none
prefix_caching: disabled
"""

SMALL_RUN_UNMET_MUST = ["warmup", "ttft-request-count"]
"""What 40 requests after an 8-request warm-up cannot meet (4.5.1, 5.1.2.1)."""
LOAD_DEPENDENT = {"load-generator-requirements", "open-loop-isolation", "timing-resolution"}
"""4.2.5's isolation fails where the generator-bottleneck flag is raised (a P99 send lag over
10 ms), and 4.2.1's timing resolution where the load generator's event loop ran late (a P99 over
1 ms, ``run.client_health``): a busy 2-core test machine can cause either. tests/unit/report and
tests/timing/test_loadgen_workers.py cover both ways."""


def unmet_must(report: dict[str, Any], test: str) -> list[str]:
    """The test's unmet MUST statements, less :data:`LOAD_DEPENDENT`."""
    found = next(t for t in report["compliance"]["tests"] if t["test"] == test)
    return [i for i in found["unmet_must"] if i not in LOAD_DEPENDENT]


def run(server: ScriptedServer, out: Path, *extra: str) -> dict[str, Any]:
    sut = out.parent / f"{out.name}-sut.yaml"
    sut.write_text(SUT, encoding="utf-8")
    script = {"script": {"name": "irregular", "tag": f"compliance-{out.name}"}}
    proc = otelbench(
        "run", "--target", server.url, "--model", "m", "--requests", "40", "--rate", "40",
        "--seed", "3", "--vocab-size", "1024", "--out", str(out),
        "--extra-body", json.dumps(script), "--span-wait", "0",
        "--warmup-requests", "8", "--warmup-tokens", "0", "--sut-config", str(sut),
        "--tokenizer", "cl100k_base", *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def test_declarations_reach_the_report_and_the_verdict(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    report = run(scripted_server, tmp_path / "declared")
    sut = report["run"]["sut"]
    assert {k: sut[k] for k in ("boundary", "model_version", "quantization", "prefix_caching")} == {
        "boundary": "Model Engine",
        "model_version": "m@1",
        "quantization": "none",
        "prefix_caching": "disabled",
    }
    assert report["configuration"]["prefix_caching"] == "disabled"
    checks = {c["id"]: c for c in report["compliance"]["checks"]}
    assert checks["model-identifier"]["evidence"] == "name m; version m@1; quantization none"
    assert checks["model-identifier"]["met"] is True
    assert checks["configuration-summary"]["met"] is True
    assert unmet_must(report, "5.1") == SMALL_RUN_UNMET_MUST
    # the same run with one more requirement broken: uniform arrivals for 5.1 (5.1.2.2)
    broken = run(scripted_server, tmp_path / "uniform", "--arrival", "uniform")
    assert unmet_must(broken, "5.1") == ["warmup", "ttft-request-count", "ttft-poisson"]
