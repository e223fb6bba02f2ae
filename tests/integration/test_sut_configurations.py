"""Configurations a procedure restarts (draft 5.7, 5.10): the launch command and 5.7's plumbing.

Real parts only: the scripted SSE server started by a shell command through
:class:`~otelbench.sut.CommandServer` (its own process group, stopped as a whole), the embedded
collector, the load generator. The scripted server has no prefix cache and sends no server
spans, so these tests check what 5.7 does around the target — configurations, restarts,
levels, the reset attempt and the deviations — not cache effects (tests/vllm does those).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest

from otelbench.errors import TargetUnreachable
from otelbench.loadgen.runner import RunConfig
from otelbench.loadgen.warmup import WarmupSpec
from otelbench.procedures import (
    PrefixCacheParams,
    PrefixCacheProcedure,
    ProcedureSpec,
    get_profile,
    placeholder_load,
    run_procedure,
)
from otelbench.procedures.configurations import parse_configurations
from otelbench.sut import CommandServer
from otelbench.sut.process import SUT_NICENESS, free_port, group_processes
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("procedure_json_conforms")]


SCRIPTED = Path(__file__).resolve().parents[1] / "fixtures" / "scripted_server.py"
SCRIPT = {"name": "fixed", "ttft_ms": 2.0, "itl_ms": 1.0, "n": 4}


def scripted_command(port: int) -> str:
    return f"exec {sys.executable} {SCRIPTED} --port {port}"


def test_a_launch_command_serves_then_stops_with_its_whole_group(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    # a shell that starts the server as a child: stop() must end both
    server = CommandServer(
        f"{sys.executable} {SCRIPTED} --port {port} & wait",
        f"http://127.0.0.1:{port}",
        log_path=tmp_path / "launch.log",
    )
    with server:
        assert server.startup_seconds is not None
        pgid = server.pid
        assert pgid is not None
        processes = group_processes(pgid)
        assert len(processes) >= 2  # bash and the server
        for proc in processes:
            stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            assert int(stat[16]) == SUT_NICENESS
        assert httpx.get(f"{server.base_url}/health", timeout=5).status_code == 200
    assert not group_processes(pgid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)


def test_a_launch_command_that_exits_is_one_error_with_its_log(tmp_path: Path) -> None:
    server = CommandServer(
        "echo 'no such model: m' >&2; exit 3",
        "http://127.0.0.1:9",
        log_path=tmp_path / "launch.log",
        niceness=0,
    )
    with pytest.raises(TargetUnreachable, match=r"exited with code 3(.|\n)*no such model"):
        server.start(timeout=20)


def base_config(target: str = "") -> RunConfig:
    return RunConfig(
        target=target,
        model="m",
        load=placeholder_load(),
        seed=3,
        workload="code-completion",
        workload_params={
            "vocab_size": 1024,
            "contexts": 3,
            "context_min": 32,
            "context_max": 64,
            "body_max": 32,
            "output_min": 4,
            "output_max": 8,
        },
        extra_body={"script": SCRIPT},
        warmup=WarmupSpec(min_requests=3, min_output_tokens=0, probes=2),
    )


def test_prefix_cache_restarts_the_launched_configuration_and_reports_three_levels(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    port = free_port("127.0.0.1")
    configs = parse_configurations(
        ["disabled=" + scripted_server.url, f"enabled=http://127.0.0.1:{port}"],
        [f"enabled={scripted_command(port)}"],
    )
    spec = ProcedureSpec(
        base=base_config(),
        profile=get_profile("quick"),
        out_dir=tmp_path / "5.7",
        span_wait_s=0.0,
        configurations=tuple(configs),
    )
    result = run_procedure(PrefixCacheProcedure(PrefixCacheParams(concurrency=2, requests=8)), spec)

    r = result.result
    assert r["draft_section"] == "5.7"
    roles = [(lv["role"], lv["configuration"]) for lv in r["levels"]]
    assert roles == [("disabled", "disabled"), ("cold", "enabled"), ("warm", "enabled")]
    # a restart warms up again; the warm level follows the cold one on the same server
    assert [run["warmed"] for run in r["runs"]] == [True, True, False]
    assert all(lv["succeeded"] == 8 for lv in r["levels"])
    assert [row["name"] for row in r["table"]] == ["Cache Disabled", "Cache (Cold)", "Cache (Warm)"]
    for row in r["table"]:
        assert row["ttft_p50_ms"] >= SCRIPT["ttft_ms"]
        assert row["cache_hit_rate"] is None  # no server spans from the scripted server
    assert [c["role"] for c in r["comparisons"]] == ["cold", "warm"]
    used = r["configuration"]["configurations"]
    assert used["enabled"]["kind"] == "command"
    assert used["enabled"]["restarted"] is True
    assert used["disabled"]["restarted"] is False
    assert (tmp_path / "5.7" / "sut-enabled.log").exists()
    assert r["cache_reset"] == {}  # the enabled configuration was restarted: nothing to reset
    assert any("cache hit rate (5.7.4) is not measured" in d for d in r["deviations"])
    assert "Table 10" in result.markdown
    assert "| Cache (Warm) |" in result.markdown
    # the launched server is gone once the procedure is over
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    assert json.loads((tmp_path / "5.7" / "procedure.json").read_text())["procedure"] == (
        "prefix-cache"
    )


def test_prefix_cache_on_running_urls_tries_a_reset_and_says_it_failed(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    configs = parse_configurations(
        ["disabled=" + scripted_server.url, "enabled=" + scripted_server.url], []
    )
    spec = ProcedureSpec(
        base=base_config(),
        profile=get_profile("quick"),
        out_dir=tmp_path / "5.7",
        span_wait_s=0.0,
        configurations=tuple(configs),
    )
    params = PrefixCacheParams(concurrency=2, requests=6, warm=False)
    r = run_procedure(PrefixCacheProcedure(params), spec).result

    assert [lv["role"] for lv in r["levels"]] == ["disabled", "cold"]
    assert r["cache_reset"]["enabled"]["reset"] is False
    assert "HTTP 404" in r["cache_reset"]["enabled"]["detail"]
    assert any("could not be reset" in d for d in r["deviations"])


def test_prefix_cache_without_configurations_or_launcher_is_one_clear_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    import subprocess

    out = str(tmp_path / "x")
    cmd = [sys.executable, "-m", "otelbench.cli", "test", "prefix-cache", "--model", "m",
           "--target", scripted_server.url, "--out", out, "--profile", "quick"]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("otelbench: error: 5.7 runs the target with prefix caching disabled")
    assert "--config disabled=URL --config enabled=URL" in line
