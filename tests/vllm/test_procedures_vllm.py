"""Draft 5.3 for real: `otelbench test throughput-latency --target URL --collector-port PORT`.

The session's shared vLLM (``vllm_server``: engine hooks on, vLLM's tracer on, both exporting to
the session receiver's port) serves every level: the receiver lends its port
(``otlp_receiver.lent()``) and the procedure's own embedded collector listens there
(``--collector-port``), so the engine's spans land in the procedure's spans.duckdb as they would
from a vLLM the procedure launched. A closed-loop capacity probe, then 12 open-loop Poisson levels
from 10 % to 120 % of the estimate. Checked: the procedure report's structure, plausible values
(ascending offered load, every request served, throughput rising from the first level to the
peak) and the derived points (an index in range, or None with a reason); every level's run report
joins the engine's spans. (``--sut vllm-cpu``, the launch, is checked by ``test_run_e2e.py``,
5.7 and 5.10.)
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from otelbench import semconv
from otelbench.sut import VllmCpuServer

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

pytestmark = pytest.mark.vllm

LEVELS = 12


@pytest.fixture(scope="module")
def sweep(
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, float]:
    out = tmp_path_factory.mktemp("sweep")
    cmd = [
        sys.executable, "-m", "otelbench.cli", "test", "throughput-latency",
        "--target", vllm_server.base_url, "--model", "tiny",
        "--profile", "quick", "--level-duration", "3", "--min-level-requests", "4",
        "--slo-ttft-p99-ms", "1000",
        "--vocab-size", "1024", "--ignore-eos", "--seed", "11",
        "--workload-param", "input_min=32", "--workload-param", "input_max=64",
        "--workload-param", "output_min=16", "--workload-param", "output_max=32",
        "--out", str(out / "run"),
    ]  # fmt: skip
    started = time.monotonic()
    with otlp_receiver.lent() as port:
        cmd += ["--collector-port", str(port)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=420, check=False)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    assert f"level {LEVELS + 1}/{LEVELS + 1}" in proc.stderr
    return out / "run", elapsed


def test_sweep_has_twelve_ascending_levels_all_served(sweep: tuple[Path, float]) -> None:
    out, _ = sweep
    r = json.loads((out / "procedure.json").read_text())
    assert r["procedure"] == "throughput-latency"
    assert r["draft_section"] == "5.3"
    assert r["profile"] == "quick"
    capacity = r["capacity"]["rps"]
    assert capacity > 0
    assert r["capacity"]["probe"]["role"] == "capacity-probe"
    levels: list[dict[str, Any]] = r["levels"]
    assert len(levels) == LEVELS
    offered = [lv["offered_rps"] for lv in levels]
    assert offered == pytest.approx([capacity * 0.1 * k for k in range(1, 13)])
    assert all(b > a for a, b in itertools.pairwise(offered))
    for lv in levels:
        assert lv["success_rate"] == 1.0, lv
        assert lv["output_tokens_per_s"] > 0
        assert 0 < lv["ttft_p50_ms"] <= lv["ttft_p99_ms"]
        assert lv["e2e_p99_ms"] >= lv["ttft_p99_ms"]
    assert len(r["runs"]) == LEVELS + 1
    peak = r["peak_index"]
    assert peak is not None
    assert levels[peak]["output_tokens_per_s"] >= levels[0]["output_tokens_per_s"]


def test_derived_points_are_in_range_or_explained(
    sweep: tuple[Path, float], vllm_measurements: dict[str, Any]
) -> None:
    out, elapsed = sweep
    r = json.loads((out / "procedure.json").read_text())
    for name in ("knee", "saturation", "optimal", "peak"):
        index = r[f"{name}_index"]
        assert index is None or 0 <= index < LEVELS
        assert r["derived"][name]["index"] == index
        assert r["derived"][name]["reason"]
        if index is not None:
            assert r["derived"][name]["offered_rps"] == r["levels"][index]["offered_rps"]
    if r["saturation_index"] is not None:
        s = r["saturation_index"]
        assert r["levels"][s]["output_tokens_per_s"] < r["levels"][s - 1]["output_tokens_per_s"]
    if r["knee_index"] is not None:
        assert r["levels"][r["knee_index"]]["ttft_p99_ms"] > 2 * r["min_ttft_p99_ms"]
    vllm_measurements["procedure 5.3 quick"] = {
        "capacity_rps": round(r["capacity"]["rps"], 3),
        "knee_rps": r["derived"]["knee"]["offered_rps"],
        "saturation_rps": r["derived"]["saturation"]["offered_rps"],
        "peak_rps": r["derived"]["peak"]["offered_rps"],
        "optimal_rps": r["derived"]["optimal"]["offered_rps"],
        "peak_output_tokens_per_s": round(r["levels"][r["peak_index"]]["output_tokens_per_s"], 1),
        "ttft_p99_ms_by_level": [round(lv["ttft_p99_ms"], 1) for lv in r["levels"]],
        "output_tokens_per_s_by_level": [round(lv["output_tokens_per_s"], 1) for lv in r["levels"]],
        "test_seconds": round(elapsed, 1),
    }


def test_every_level_report_joins_the_engines_spans(sweep: tuple[Path, float]) -> None:
    out, _ = sweep
    r = json.loads((out / "procedure.json").read_text())
    for run in r["runs"]:
        report = json.loads((out / run["report"]).read_text())
        assert report["run"]["id"] == run["run_id"]
        total = report["run"]["requests"]["total"]
        assert total == run["requests"]
        server = report["metrics"]["server"]
        assert server["requests_joined"] == total
        assert server["span_sources"][semconv.SPAN_HOOK_REQUEST] == total
    md = (out / "procedure.md").read_text()
    assert "## Throughput-latency table (5.3.5)" in md
