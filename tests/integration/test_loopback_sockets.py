"""The embedded receiver and ``otelbench watch`` bind loopback by default, checked on their real
sockets (the audit of every endpoint's default is ``tests/unit/test_bind_defaults.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench.collector.receiver import Receiver
from otelbench.live.watch import WatchConfig, Watcher

pytestmark = pytest.mark.integration


def test_the_receiver_socket_is_bound_to_loopback(tmp_path: Path) -> None:
    with Receiver(tmp_path / "spans.duckdb", port=0) as receiver:
        assert receiver._server is not None
        assert receiver._server.socket.getsockname()[0] == "127.0.0.1"


def test_the_watch_socket_is_bound_to_loopback(tmp_path: Path) -> None:
    with Watcher(tmp_path / "absent.duckdb", WatchConfig()).start(port=0) as watcher:
        assert watcher._server is not None
        assert watcher._server.socket.getsockname()[0] == "127.0.0.1"
