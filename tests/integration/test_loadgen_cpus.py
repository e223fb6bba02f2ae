"""``otelbench run --loadgen-cpus``, end to end: the measuring event loops ran on the CPUs asked,
the embedded collector on the others, as the report reads them back (otelbench.loadgen.affinity).

Real parts only: the CLI in a child process with its embedded collector (and, with ``--workers
2``, its worker processes) against the scripted SSE server (tests/fixtures/scripted_server.py).
The CPUs are this machine's: the first allowed one (and the first two) for the load generator,
the others for the rest; a procedure (``otelbench test ttft``) takes the last one. On a 2-CPU
machine ``--workers 2`` over both leaves none, which the report must say, the collector then
running unpinned.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

ALLOWED = sorted(os.sched_getaffinity(0))


def run(server: ScriptedServer, out: Path, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    script = {"script": {"n": 8, "ttft_ms": 2.0, "itl_ms": 2.0, "tag": out.name}}
    proc = otelbench(
        "run", "--target", server.url, "--model", "m", "--requests", "40", "--rate", "40",
        "--seed", "3", "--vocab-size", "1024", "--out", str(out), "--span-wait", "0",
        "--extra-body", json.dumps(script), "--warmup-requests", "4", "--warmup-tokens", "0",
        *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["run"]["requests"]["succeeded"] == 40
    return report, json.loads((out / "run.json").read_text())


def test_one_worker_measures_on_its_cpu_and_the_collector_runs_on_the_others(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    load = ALLOWED[0]
    rest = ALLOWED[1:]
    report, manifest = run(scripted_server, tmp_path / "one", "--loadgen-cpus", str(load))
    workers = report["run"]["load"]["workers"]
    assert workers["count"] == 1
    assert workers["chosen"].endswith("at most 1 (one per --loadgen-cpus CPU)")
    assert workers["cpus"] == {
        "loadgen": [load],
        "others": rest or None,
        "processes": {"collector": rest or ALLOWED},
    }
    (worker,) = report["run"]["client_health"]["workers"]
    assert worker["pid"] == manifest["pid"]  # the CLI's own process measured …
    assert worker["cpus"] == [load]  # … on the CPU asked, read back at the measurement's start
    assert manifest["loadgen_cpus"] == [load]


def test_two_workers_each_on_its_own_cpu(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    load = ALLOWED[:2]
    rest = ALLOWED[2:]
    spec = ",".join(map(str, load))
    report, manifest = run(
        scripted_server, tmp_path / "two", "--workers", "2", "--loadgen-cpus", spec
    )
    workers = report["run"]["load"]["workers"]
    assert workers["count"] == 2
    assert workers["cpus"] == {
        "loadgen": load,
        "others": rest or None,
        "processes": {"collector": rest or ALLOWED},
    }
    found = {w["worker"]: (w["pid"], w["cpus"]) for w in report["run"]["client_health"]["workers"]}
    assert {k: cpus for k, (_pid, cpus) in found.items()} == {0: load[:1], 1: load[1:2] or load}
    assert manifest["pid"] not in {pid for pid, _cpus in found.values()}  # worker processes
    notes = report["run"]["notes"]
    if rest:
        assert not any("--loadgen-cpus" in n for n in notes)
    else:
        assert "leaves no other CPU this process may use" in " ".join(notes)


def test_a_procedure_pins_its_levels_too(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    load = ALLOWED[-1]
    rest = ALLOWED[:-1]
    script = {"script": {"name": "fixed", "ttft_ms": 5.0, "n": 4, "tag": "cpus-proc"}}
    proc = otelbench(
        "test", "ttft", "--target", scripted_server.url, "--model", "m", "--profile", "quick",
        "--rate", "30", "--requests", "12", "--vocab-size", "1024", "--span-wait", "0",
        "--extra-body", json.dumps(script), "--warmup-requests", "4", "--out", str(tmp_path),
        "--loadgen-cpus", str(load),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "levels" / "01" / "report.json").read_text())
    assert report["run"]["load"]["workers"]["cpus"] == {
        "loadgen": [load],
        "others": rest or None,
        "processes": {"collector": rest or ALLOWED},
    }
    assert [w["cpus"] for w in report["run"]["client_health"]["workers"]] == [[load]]
