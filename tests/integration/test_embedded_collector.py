"""``otelbench run``'s embedded collector yields the CPU to the load generator (a real child)."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import httpx
import pytest

from otelbench.benchmark import EmbeddedCollector
from otelbench.sut import SUT_NICENESS

pytestmark = pytest.mark.integration


def test_the_embedded_collector_runs_at_the_servers_lower_priority(tmp_path: Path) -> None:
    """Nice 10, its session's autogroup too: on a shared core the client's reads come first.
    It still serves: the stats endpoint answers."""
    store = tmp_path / "spans.duckdb"
    collector = EmbeddedCollector(store)
    endpoint = collector.start()
    try:
        # the collector announces itself as the store's writer (SpanStore.announce_writer)
        pid = json.loads(store.with_name(store.name + ".writer.json").read_text())["pid"]
        stat = Path(f"/proc/{pid}/stat").read_text()
        assert "otelbench.collector" in Path(f"/proc/{pid}/cmdline").read_text()
        nice = int(stat[stat.rindex(")") + 2 :].split()[16])  # field 19 of proc(5)
        assert nice == SUT_NICENESS
        autogroup = Path(f"/proc/{pid}/autogroup")
        if autogroup.exists():  # kernels with autogroup scheduling
            assert autogroup.read_text().strip().endswith(f"nice {SUT_NICENESS}")
        assert httpx.get(endpoint + "/otelbench/stats", timeout=5.0).status_code == 200
    finally:
        collector.stop()


def test_the_embedded_collector_starts_in_a_process_holding_over_a_thousand_descriptors(
    tmp_path: Path,
) -> None:
    """Its pipes then get descriptor numbers past 1023, which ``select.select`` refuses
    (``ValueError``); waiting for its ready line must not (a long test session or procedure
    reached that: chdb keeps three descriptors per thread)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(2048, hard), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    collector = EmbeddedCollector(tmp_path / "spans.duckdb")
    try:
        assert max(held) > 1023
        endpoint = collector.start()
        assert httpx.get(endpoint + "/otelbench/stats", timeout=5.0).status_code == 200
    finally:
        collector.stop()
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
