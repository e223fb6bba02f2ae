"""Every endpoint otelbench opens binds loopback unless the user names a host (docs/security.md).

The list below is the audit: each server otelbench starts, with the parameter or option that sets
its address. ``test_no_listener_is_left_out`` scans the package for code that listens, so a new
server fails this file until it is added here (and to docs/security.md).
"""

from __future__ import annotations

import inspect
import ipaddress
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otelbench.benchmark import EmbeddedCollector
from otelbench.cli.collector import collector as collector_command
from otelbench.cli.gateway import gateway as gateway_command
from otelbench.cli.live import watch as watch_command
from otelbench.collector.receiver import Receiver, serve
from otelbench.collector.rotel import RotelCollector
from otelbench.guardrails.gateway import GatewayServer, serve_gateway
from otelbench.live.options import DEFAULT_LISTEN, parse_hostport
from otelbench.live.watch import Watcher
from otelbench.sut.vllm_cpu import VllmCpuServer

PACKAGE = Path(__file__).resolve().parents[2] / "otelbench"

# (what listens, the function whose parameter sets the address, that parameter)
ENDPOINTS: list[tuple[str, Callable[..., Any], str]] = [
    ("embedded receiver (Receiver)", Receiver.__init__, "host"),
    ("embedded receiver (serve)", serve, "host"),
    ("otelbench collector", collector_command, "host"),
    ("otelbench run's collector (EmbeddedCollector)", EmbeddedCollector.__init__, "host"),
    ("rotel in front of the receiver", RotelCollector.__init__, "host"),
    ("otelbench watch /metrics (Watcher.start)", Watcher.start, "host"),
    ("guardrail gateway (serve_gateway)", serve_gateway, "host"),
    ("otelbench gateway", gateway_command, "host"),
    ("guardrail gateway process (GatewayServer)", GatewayServer.__init__, "host"),
    ("vLLM started by otelbench (VllmCpuServer)", VllmCpuServer.__init__, "host"),
]

# the files that open a listening socket, and what in them does (all audited above)
LISTENERS = {
    "benchmark.py": "the run's receiver socket, bound here for its child collector",
    "collector/receiver.py": "ThreadingHTTPServer",
    "live/watch.py": "ThreadingHTTPServer",
    "guardrails/gateway.py": "uvicorn",
    "sut/process.py": "free-port probes (bind, never listen)",
}
_LISTENING = re.compile(
    r"HTTPServer\b|socketserver|\.bind\(\(|\.listen\(|uvicorn\.(Server|run)|start_server\(|create_server\("
    r"|start_http_server|make_server\("
)


def is_loopback(host: str) -> bool:
    return ipaddress.ip_address(host).is_loopback


@pytest.mark.parametrize(
    ("what", "function", "parameter"), ENDPOINTS, ids=[e[0] for e in ENDPOINTS]
)
def test_default_address_is_loopback(
    what: str, function: Callable[..., Any], parameter: str
) -> None:
    default = inspect.signature(function).parameters[parameter].default
    assert isinstance(default, str), what
    assert is_loopback(default), f"{what} binds {default} by default"


def test_watch_listens_on_loopback_by_default() -> None:
    default = inspect.signature(watch_command).parameters["listen"].default
    assert default == DEFAULT_LISTEN
    host, _ = parse_hostport(DEFAULT_LISTEN)
    assert is_loopback(host)
    # the watcher's own receiver runs only when asked (--otlp HOST:PORT), at that address
    assert inspect.signature(watch_command).parameters["otlp"].default is None


def test_no_listener_is_left_out() -> None:
    found = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _LISTENING.search(path.read_text(encoding="utf-8"))
    }
    assert found == set(LISTENERS), "a new listening socket: audit it here and in docs/security.md"
