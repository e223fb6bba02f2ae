"""The conformance check (``scripts/vllm/conformance.sh``) on the vLLM releases the tier runs.

For each release the engine-hook tests run on (``--vllm-versions``), it reads the installed
``vllm/`` package of that release's venv as sources (nothing imported): a release the hooks are
tested on must conform, and the checker's answer to "do the client's trace
headers reach the engine without vLLM's tracer?" must be the hooks' own
(``otelbench_vllm._vllm_internals.needs_tracing_flag``), which decides whether they warn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otelbench.sut.vllm_cpu import VLLM_DIST
from tests.conftest import hook_test_versions
from tests.vllm.conftest import set_up_vllm

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "vllm" / "conformance.sh"
HOOKS_SRC = REPO / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:
    sys.path.insert(0, str(HOOKS_SRC))

from otelbench_vllm import _vllm_internals  # noqa: E402 - importable once HOOKS_SRC is on sys.path


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "installed_version" in metafunc.fixturenames:
        versions = hook_test_versions(metafunc.config)
        metafunc.parametrize("installed_version", versions, ids=versions)


def test_the_installed_vllm_conforms_and_agrees_on_trace_headers(
    installed_version: str, tmp_path: Path
) -> None:
    vllm_env = set_up_vllm(installed_version)
    [site_packages] = vllm_env.venv.glob("lib/python*/site-packages")
    out = tmp_path / "installed.json"
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--source", str(site_packages), "--dist", VLLM_DIST,
         "--json", str(out), installed_version],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.exists(), proc.stdout + proc.stderr
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["version"] == installed_version
    expected = "always"
    if _vllm_internals.needs_tracing_flag(record["version"]):
        expected = "only with --otlp-traces-endpoint"
    assert record["trace_headers"]["answer"] == expected, proc.stdout
    failed = [(c["id"], c["expected"], c["found"]) for c in record["checks"] if not c["ok"]]
    assert failed == [], proc.stdout
    assert record["conforms"] is True
    assert proc.returncode == 0, proc.stdout + proc.stderr
