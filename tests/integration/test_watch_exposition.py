"""``otelbench watch``'s ``/metrics`` over HTTP: the Prometheus text format and OpenMetrics 1.0,
chosen by the scrape's ``Accept`` header, both read back with ``prometheus-client``'s parsers to
the same samples; the text passes the real ``promtool check metrics`` (Debian's prometheus).

The store is the live-traffic DuckDB store of ``test_watch_clickhouse`` (live, probe and benchmark
requests, tenants, failures, preemptions, SLOs), so every family appears.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)

from otelbench import semconv
from otelbench.live.exposition import FAMILIES
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.live.window import WindowConfig
from tests.fixtures.exposition import parse, samples
from tests.integration.test_watch_clickhouse import S, write_traffic

pytestmark = pytest.mark.integration

TEXT = "text/plain; version=0.0.4; charset=utf-8"
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
"""The ``Accept`` header Prometheus 2.42 sends with every scrape."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A watcher serving ``/metrics`` once its first refresh (over every request of the traffic)
    is done; the next is an hour away, so every scrape of a test sees the same refresh. Yields
    its URL."""
    base = 1_700_000_000 * S
    store = write_traffic(tmp_path / "live.duckdb", base)
    config = WindowConfig(
        window_s=300.0, slo_ttft_s=0.25, slo_tpot_s=0.03, class_attribute="tenant"
    )
    watch = WatchConfig(window=config, interval_s=3600.0)
    watcher = Watcher(store, watch, clock=lambda: base + 120 * S)
    with watcher.start("127.0.0.1", 0):
        url = f"http://127.0.0.1:{watcher.port}/metrics"
        deadline = time.monotonic() + 60
        while semconv.METRIC_LIVE_REFRESH_TIMESTAMP not in scrape(url, None).text:
            assert watcher.last_error is None, watcher.last_error
            assert time.monotonic() < deadline, "no refresh within 60 s"
            time.sleep(0.05)
        yield url


def scrape(url: str, accept: str | None) -> httpx.Response:
    headers = {"Accept": accept} if accept is not None else {}
    response = httpx.get(url, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    return response


def test_text_and_openmetrics_are_negotiated_and_hold_the_same_samples(served: str) -> None:
    text = scrape(served, None)
    assert text.headers["content-type"] == TEXT
    assert scrape(served, "text/plain").headers["content-type"] == TEXT
    om = scrape(served, PROMETHEUS_ACCEPT)
    assert om.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert om.text.endswith("# EOF\n")
    assert "# EOF" not in text.text
    plain_om = scrape(served, "application/openmetrics-text")
    assert plain_om.headers["content-type"] == OPENMETRICS
    # the same series and values in both formats (both parsed by prometheus-client)
    text_samples = samples(text.text)
    assert samples(om.text, openmetrics=True) == text_samples
    assert samples(plain_om.text, openmetrics=True) == text_samples
    # every family of FAMILIES appears, bar the retention counter (no --retention)
    names = {s for s, _ in text_samples}
    assert names == set(FAMILIES) - {semconv.METRIC_LIVE_RETENTION_DELETED}
    assert {dict(labels)["source"] for name, labels in text_samples if name in {
        semconv.METRIC_LIVE_REQUESTS}} == {"live", "probe", "benchmark"}  # fmt: skip


def test_openmetrics_types_units_and_counters(served: str) -> None:
    om = scrape(served, "application/openmetrics-text; version=1.0.0").text
    by_name = {family.name: family for family in openmetrics_families(om)}
    errors = by_name[semconv.METRIC_LIVE_REFRESH_ERRORS.removesuffix("_total")]
    assert errors.type == "counter"
    assert [(s.name, s.value) for s in errors.samples] == [
        (semconv.METRIC_LIVE_REFRESH_ERRORS, 0.0)
    ]
    ttft = by_name[semconv.METRIC_LIVE_TTFT]
    assert (ttft.type, ttft.unit) == ("summary", "seconds")
    # quantiles only: a window's count and sum are not the counters a summary's would be
    assert {s.name for s in ttft.samples} == {semconv.METRIC_LIVE_TTFT}
    assert {s.labels["quantile"] for s in ttft.samples} == {"0.5", "0.9", "0.95", "0.99"}
    assert f"# UNIT {semconv.METRIC_LIVE_STORE_BYTES} bytes" in om.splitlines()
    assert by_name[semconv.METRIC_LIVE_SLO_ATTAINMENT].unit == "ratio"
    for name, family in by_name.items():
        spec = FAMILIES[f"{name}_total" if family.type == "counter" else name]
        assert (family.type, family.documentation, family.unit) == (spec.kind, spec.help, spec.unit)
    assert parse(om, openmetrics=True).keys() == by_name.keys()


def test_promtool_check_metrics_passes_on_the_text_format(served: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool missing: scripts/setup.sh installs Debian's prometheus"
    text = scrape(served, None).text
    done = subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == ""  # no lint problem at all


def test_other_paths_are_404(served: str) -> None:
    response = httpx.get(served.removesuffix("/metrics") + "/", timeout=10)
    assert response.status_code == 404
    assert response.text == "otelbench watch: see /metrics\n"
