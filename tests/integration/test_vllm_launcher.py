"""The vLLM launcher's failure paths (``otelbench.sut.VllmCpuServer``), with no vLLM at all.

Real subprocesses from a throw-away "venv" whose CLI is a small Python script: one that dies while
starting, one that never serves, one that serves (a loopback HTTP server) and ignores SIGTERM;
also the command line and environment the launcher builds, and its configuration errors. The
real engine's side is ``tests/vllm/test_vllm_server.py``.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from otelbench.errors import ConfigError, TargetUnreachable
from otelbench.sut import VllmCpuServer, vllm_env_ready
from otelbench.sut.vllm_cpu import CLI_NAME, STAMP_NAME, VLLM_DIST, VLLM_VERSION

pytestmark = pytest.mark.integration


FAKE_CLI = r"""
import http.server, json, os, signal, subprocess, sys, time

mode = os.environ["FAKE_MODE"]
args = sys.argv[1:]
if mode == "die":
    for i in range(30):
        print(f"line {i}", flush=True)
    sys.exit(3)
if mode == "serve":  # a server (and its child) that ignore SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "300"])
with open(os.environ["FAKE_CHILD_PID"], "w") as f:
    f.write(str(child.pid))
if mode == "hang":
    time.sleep(300)
port = int(args[args.index("--port") + 1])
name = args[args.index("--served-model-name") + 1]

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"" if self.path == "/health" else json.dumps({"data": [{"id": name}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def fake_env(tmp_path: Path) -> tuple[Path, Path]:
    venv, model = tmp_path / "venv", tmp_path / "model"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / CLI_NAME).write_text(FAKE_CLI)
    (venv / STAMP_NAME).write_text(f"setup_version=1\ndist={VLLM_DIST}=={VLLM_VERSION}\n")
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (model / name).write_text("{}")
    assert vllm_env_ready(venv, model)
    return venv, model


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")


def test_missing_environment_is_a_config_error_naming_the_fix(tmp_path: Path) -> None:
    assert not vllm_env_ready(tmp_path / "no-venv", tmp_path / "no-model")
    server = VllmCpuServer(model_dir=tmp_path / "no-model", venv=tmp_path / "no-venv")
    with pytest.raises(ConfigError, match=r"no vLLM venv at .*: run scripts/vllm/setup\.sh$"):
        server.start()
    assert server.pid is None


def test_server_that_dies_while_starting_is_unreachable_with_its_log_tail(
    fake_env: tuple[Path, Path], tmp_path: Path
) -> None:
    venv, model = fake_env
    server = VllmCpuServer(
        model_dir=model, venv=venv, env={"FAKE_MODE": "die"}, log_path=tmp_path / "vllm.log"
    )
    with pytest.raises(TargetUnreachable) as info:
        server.start(timeout=30)
    message = str(info.value)
    assert message.startswith(f"vLLM exited with code 3 while starting on {server.base_url}")
    assert [line.strip() for line in message.splitlines()[1:]] == [
        f"| line {i}" for i in range(10, 30)
    ]
    assert server.processes() == []


def test_start_timeout_stops_the_whole_process_group(
    fake_env: tuple[Path, Path], tmp_path: Path
) -> None:
    venv, model = fake_env
    child_pid_file = tmp_path / "child.pid"
    server = VllmCpuServer(
        model_dir=model,
        venv=venv,
        env={"FAKE_MODE": "hang", "FAKE_CHILD_PID": str(child_pid_file)},
        log_path=tmp_path / "vllm.log",
    )
    with pytest.raises(TargetUnreachable, match=r"did not serve 'tiny' on .* within 2 s"):
        server.start(timeout=2)
    assert server.processes() == []
    assert _gone(int(child_pid_file.read_text()))


def test_stop_kills_a_server_that_ignores_sigterm(
    fake_env: tuple[Path, Path], tmp_path: Path
) -> None:
    venv, model = fake_env
    child_pid_file = tmp_path / "child.pid"
    with VllmCpuServer(
        model_dir=model,
        venv=venv,
        served_model_name="m",
        env={"FAKE_MODE": "serve", "FAKE_CHILD_PID": str(child_pid_file)},
        log_path=tmp_path / "vllm.log",
    ) as server:
        assert server.running
        assert len(server.processes()) == 2
        t0 = time.monotonic()
        server.stop(grace=0.5)
        assert time.monotonic() - t0 < 10
    assert not server.running
    assert server.processes() == []
    assert _gone(int(child_pid_file.read_text()))
    assert server.log_path is not None
    assert server.log_path.exists()
    assert server._proc is not None
    assert server._proc.returncode == -signal.SIGKILL


def test_command_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("OTELBENCH_HOME", str(tmp_path))
    server = VllmCpuServer(
        model_dir=tmp_path / "m",
        venv=tmp_path / "v",
        port=8123,
        max_model_len=256,
        extra_args=("--block-size", "32"),
        otlp_traces_endpoint="http://127.0.0.1:4318",
        env={"VLLM_CPU_KVCACHE_SPACE": "2", "TRANSFORMERS_OFFLINE": None, "X": "1"},
    )
    assert server.command() == [
        str(tmp_path / "v/bin/python"), str(tmp_path / "v/bin" / CLI_NAME), "serve",
        str(tmp_path / "m"), "--served-model-name", "tiny", "--load-format", "dummy",
        "--dtype", "float32", "--enforce-eager", "--host", "127.0.0.1", "--port", "8123",
        "--max-model-len", "256", "--otlp-traces-endpoint", "http://127.0.0.1:4318/v1/traces",
        "--block-size", "32",
    ]  # fmt: skip
    env = server.environment()
    assert {k: v for k, v in env.items() if k.startswith("OTEL_")} == {
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "vllm",
    }
    assert "PYTHONPATH" not in env
    assert "TRANSFORMERS_OFFLINE" not in env
    assert env["X"] == "1"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert env["HF_HUB_OFFLINE"] == env["VLLM_NO_USAGE_STATS"] == "1"
    assert env["VLLM_TARGET_DEVICE"] == "cpu"
    assert env["VLLM_CACHE_ROOT"] == str(tmp_path / "vllm-cache")
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path / "v/bin")
    assert "OTEL_SERVICE_NAME" not in VllmCpuServer(venv=tmp_path / "v").environment()


def test_bad_otlp_endpoint_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bad OTLP traces endpoint 'localhost:4318'"):
        VllmCpuServer(otlp_traces_endpoint="localhost:4318")


def test_taken_port_is_a_config_error(fake_env: tuple[Path, Path]) -> None:
    venv, model = fake_env
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = VllmCpuServer(model_dir=model, venv=venv, port=port)
        with pytest.raises(ConfigError, match=f"cannot serve vLLM on 127.0.0.1:{port}: "):
            server.start()
    assert server.pid is None
