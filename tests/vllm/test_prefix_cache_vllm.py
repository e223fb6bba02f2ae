"""Draft 5.7 for real: `otelbench test prefix-cache --sut vllm-cpu --profile quick`.

The built-in launcher starts the tiny vLLM twice — ``--no-enable-prefix-caching``, then
``--enable-prefix-caching`` — with the engine hooks on, so every request's server span carries
vLLM's cached-token count. Code Completion with 3 shared contexts of 128–256 tokens: the cold
level fills the cache as it runs, the warm level (same contexts, new bodies) finds them there.
Checked: no token served from cache with caching off, some in the cold level, nearly all shared
tokens in the warm level, and the report's Table 10 and comparisons.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def procedure(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("prefix") / "run"
    cmd = [
        sys.executable, "-m", "otelbench.cli", "test", "prefix-cache",
        "--sut", "vllm-cpu", "--model", "tiny", "--max-model-len", "1024",
        "--vllm-arg=--block-size", "--vllm-arg=32",
        "--profile", "quick", "--concurrency", "4", "--requests", "24",
        "--vocab-size", "1024", "--ignore-eos", "--seed", "5",
        "--workload-param", "contexts=3", "--workload-param", "context_min=128",
        "--workload-param", "context_max=256", "--workload-param", "body_max=64",
        "--workload-param", "output_min=8", "--workload-param", "output_max=16",
        "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    result: dict[str, Any] = json.loads((out / "procedure.json").read_text())
    result["_markdown"] = (out / "procedure.md").read_text()
    return result


def test_caching_off_serves_nothing_from_cache_and_warm_serves_the_shared_prefixes(
    procedure: dict[str, Any], vllm_measurements: dict[str, Any]
) -> None:
    rows = {row["role"]: row for row in procedure["table"]}
    assert set(rows) == {"disabled", "cold", "warm"}
    for row in rows.values():
        assert row["succeeded"] == 24
        assert row["requests_with_server_span"] == 24  # the hooks' spans joined every request
        assert row["shared_prefix_tokens"] > 0
    assert rows["disabled"]["cached_tokens"] == 0
    assert rows["disabled"]["cache_hit_rate"] == 0.0
    assert 0.0 < rows["cold"]["cache_hit_rate"] < rows["warm"]["cache_hit_rate"]
    assert rows["warm"]["cache_hit_rate"] >= 0.75  # whole 32-token blocks of each prefix
    vllm_measurements["procedure 5.7 quick"] = {
        role: {
            "ttft_p50_ms": round(r["ttft_p50_ms"], 1),
            "server_ttft_p50_ms": round(r["server_ttft_p50_ms"], 1),
            "cache_hit_rate": round(r["cache_hit_rate"], 3),
            "output_tokens_per_s": round(r["output_tokens_per_s"], 1),
        }
        for role, r in rows.items()
    } | {
        "ttft_p50_reduction_pct": {
            c["role"]: round(c["ttft_reduction_pct"]["p50"], 1) for c in procedure["comparisons"]
        },
        "test_seconds": round(procedure["duration_s"], 1),
    }


def test_each_configuration_was_its_own_launch(procedure: dict[str, Any]) -> None:
    used = procedure["configuration"]["configurations"]
    assert used["disabled"]["vllm_args"] == ["--no-enable-prefix-caching"]
    assert used["enabled"]["vllm_args"] == ["--enable-prefix-caching"]
    assert used["disabled"]["url"] != used["enabled"]["url"]  # a fresh port per launch
    assert [run["warmed"] for run in procedure["runs"]] == [True, True, False]
    assert [c["role"] for c in procedure["comparisons"]] == ["cold", "warm"]
    assert not any("could not be reset" in d for d in procedure["deviations"])
    assert "| Cache Disabled |" in procedure["_markdown"]
