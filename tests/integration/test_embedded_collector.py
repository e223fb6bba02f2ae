"""``otelbench run``'s embedded collector yields the CPU to the load generator (a real child)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from otelbench.benchmark import EmbeddedCollector
from otelbench.sut import SUT_NICENESS


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
