"""Configuration files checked by the real binaries they configure: Prometheus's ``promtool``
and flags (Debian's prometheus package, which scripts/setup.sh installs) and rotel's flags (the
binary otelbench runs in front of its receiver). The files' own checks, which need no binary, are
``tests/unit/test_deploy.py`` and ``tests/unit/test_collector_configs.py``."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from otelbench.collector.rotel import RotelCollector, rotel_binary
from tests.unit.test_collector_configs import env_file
from tests.unit.test_deploy import DEPLOY, SERVICES, container

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("config", ["compose/prometheus.yml", "k8s/config/prometheus.yml"])
def test_prometheus_configs_pass_promtool(config: str) -> None:
    # the real checker, from Debian's prometheus package (scripts/setup.sh installs it)
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool missing: scripts/setup.sh installs Debian's prometheus"
    done = subprocess.run(
        [promtool, "check", "config", str(DEPLOY / config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_prometheus_flags_are_flags_of_the_real_binary() -> None:
    prometheus = shutil.which("prometheus")
    assert prometheus is not None
    done = subprocess.run(
        [prometheus, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    help_text = done.stdout + done.stderr
    compose_args = SERVICES["prometheus"]["command"]
    assert compose_args == container("prometheus")["args"]
    for arg in compose_args:
        name, _, value = arg.partition("=")
        assert re.search(rf"\s{re.escape(name)}=", help_text), name
        if name == "--enable-feature":
            assert re.search(rf"\b{re.escape(value)}\b", help_text), value


def test_rotel_env_file_keys_are_flags_of_the_real_binary() -> None:
    help_text = subprocess.run(
        [str(rotel_binary()), "start", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    flags = set(re.findall(r"\[env: (ROTEL_[A-Z0-9_]+)=", help_text))
    assert len(flags) > 100  # the help lists every flag's variable
    assert set(env_file()) <= flags, set(env_file()) - flags
    launcher = RotelCollector("http://127.0.0.1:4319", log_path="/tmp/x.log")
    assert set(launcher.rotel_env()) <= flags
