"""Draft 5.10 for real: `otelbench test guardrail-overhead --sut vllm-cpu --guardrails FILE`.

The guardrail file has output filters only (a PII detector that redacts e-mail addresses and a
blocklist), so the procedure derives two configurations: the baseline (vLLM without the
middleware) and "full" (vLLM's API server running otelbench's guardrail middleware), each a launch
of its own. Prompts go out as text decoded by the tiny model's tokenizer. Checked: the filter
spans of the full configuration sit in the measured requests' traces (one per request), the
baseline has none, and Tables 13 and 14 are filled for both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.vllm

GUARDRAILS = {
    "output": [
        {"type": "pii", "name": "pii", "kinds": ["email"], "action": "redact"},
        {"type": "blocklist", "name": "banned-out", "keywords": ["zzqqxforbidden"]},
    ]
}


@pytest.fixture(scope="module")
def procedure(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("g510")
    config = tmp / "guardrails.json"
    config.write_text(json.dumps(GUARDRAILS))
    out = tmp / "run"
    cmd = [
        sys.executable, "-m", "otelbench.cli", "test", "guardrail-overhead",
        "--sut", "vllm-cpu", "--model", "tiny", "--max-model-len", "512",
        "--guardrails", str(config), "--profile", "quick",
        "--fraction", "0.5", "--level-duration", "3", "--probe-requests", "12",
        "--vocab-size", "1024", "--ignore-eos", "--seed", "3",
        "--workload-param", "input_max=64", "--workload-param", "output_min=16",
        "--workload-param", "output_max=32",
        "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    return out, json.loads((out / "procedure.json").read_text())


def test_two_launches_one_with_the_middleware(procedure: tuple[Path, dict[str, Any]]) -> None:
    _, r = procedure
    used = r["configuration"]["configurations"]
    assert list(used) == ["baseline", "full"]
    assert used["baseline"]["vllm_args"] == []
    assert used["full"]["vllm_args"] == [
        "--middleware",
        "otelbench.guardrails.middleware.GuardrailMiddleware",
    ]
    assert [lv["configuration"] for lv in r["levels"]] == ["baseline"] * 2 + ["full"] * 2
    assert [t["configuration"] for t in r["table14"]] == ["baseline", "full"]
    assert all(t["max_output_tokens_per_s"] > 0 for t in r["table14"])


def test_filter_spans_are_in_the_traces_of_the_filtered_runs_only(
    procedure: tuple[Path, dict[str, Any]], vllm_measurements: dict[str, Any]
) -> None:
    out, r = procedure
    rows = {row["configuration"]: row for row in r["table13"]}
    assert rows["baseline"]["guardrail_ttft_added_p50_ms"] is None
    assert rows["full"]["guardrail_itl_added_p99_ms"] > 0
    measured = [lv for lv in r["levels"] if lv.get("fraction")]  # the probes have none
    level = next(lv for lv in measured if lv["configuration"] == "full")
    report = json.loads((out / level["report"]).read_text())
    g = report["metrics"]["guardrails"]
    assert g["requests_with_guardrail_spans"] == report["run"]["requests"]["succeeded"]
    assert {f["name"] for f in g["filters"]} == {"pii", "banned-out"}
    assert all(f["stage"] == "output" for f in g["filters"])
    assert g["disclosure"]["output_filters"] == ["pii", "banned-out"]
    assert report["run"]["request_options"]["prompt_format"] == "text"
    assert "server" in report["metrics"]  # the engine hooks' spans joined too
    base = next(
        lv for lv in r["levels"] if lv["configuration"] == "baseline" and lv.get("fraction")
    )
    assert "guardrails" not in json.loads((out / base["report"]).read_text())["metrics"]
    overhead = r["overheads"][0]
    vllm_measurements["procedure 5.10 quick (output filters in vLLM)"] = {
        "ttft_p50_ms": {k: round(v["ttft_p50_ms"], 1) for k, v in rows.items()},
        "e2e_p50_ms": {k: round(v["e2e_p50_ms"], 1) for k, v in rows.items()},
        "e2e_overhead_p50_ms": round(overhead["e2e_overhead_ms"]["p50"], 2),
        "filter_itl_added_p99_ms": round(rows["full"]["guardrail_itl_added_p99_ms"], 3),
        "throughput_change_pct": round(r["table14"][1]["change_pct"], 1),
        "test_seconds": round(r["duration_s"], 1),
    }
