"""``otelbench run``'s embedded collector yields the CPU to the load generator (a real child)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from otelbench.benchmark import EmbeddedCollector
from otelbench.sut import SUT_NICENESS


def _children_running(module: str) -> list[int]:
    """Pids of this process's children whose command line runs ``python -m module``."""
    me = os.getpid()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == me and module.encode() in cmdline:
            out.append(int(entry.name))
    return out


def test_the_embedded_collector_runs_at_the_servers_lower_priority(tmp_path: Path) -> None:
    """Nice 10, its session's autogroup too: on a shared core the client's reads come first.
    It still serves: the stats endpoint answers."""
    collector = EmbeddedCollector(tmp_path / "spans.duckdb")
    endpoint = collector.start()
    try:
        (pid,) = _children_running("otelbench.collector")
        stat = Path(f"/proc/{pid}/stat").read_text()
        nice = int(stat[stat.rindex(")") + 2 :].split()[16])  # field 19 of proc(5)
        assert nice == SUT_NICENESS
        autogroup = Path(f"/proc/{pid}/autogroup")
        if autogroup.exists():  # kernels with autogroup scheduling
            assert autogroup.read_text().strip().endswith(f"nice {SUT_NICENESS}")
        assert httpx.get(endpoint + "/otelbench/stats", timeout=5.0).status_code == 200
    finally:
        collector.stop()
