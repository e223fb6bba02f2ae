"""Every PromQL query of the committed *Serving overview* runs on a real Prometheus (Debian's
binary) scraping a real ``otelbench watch`` fed with spans this test controls.

The watcher, Prometheus and the spans are ``tests/integration/test_watch_prometheus.py``'s
fixtures and helpers (reused, not copied): 4 live hook spans (tenants t1, t2), one probe request.
Queries are read from ``dashboards/json/serving-overview.json`` and expanded as Grafana would
(:mod:`otelbench.dashboards.macros`): ``$source`` -> ``(live|probe)`` (Grafana's regex format of a
two-value selection), ``$__rate_interval`` -> ``4s`` (four of this Prometheus's 1 s scrape
intervals). Every ``otelbench_live_*`` query must return data. The ``vllm:*`` queries must be
valid PromQL that Prometheus executes; no vLLM runs here, so they return no series: they return
data in ``tests/vllm/test_dashboards_vllm.py`` (marked ``vllm``), which scrapes a real vLLM.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from otelbench.dashboards.macros import expand_promql
from otelbench.dashboards.names import DATASOURCE_PROMETHEUS
from tests.integration import test_watch_prometheus as watch_prom

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
OVERVIEW = REPO / "dashboards" / "json" / "serving-overview.json"
VARIABLES = {"source": "(live|probe)"}
RATE_INTERVAL = "4s"

watch_process = watch_prom.watch_process
prometheus = watch_prom.prometheus


def promql_targets(path: Path = OVERVIEW) -> dict[str, str]:
    """Every Prometheus target of the dashboard: ``"<panel title>/<refId>"`` -> expr."""
    model = json.loads(path.read_text(encoding="utf-8"))
    return {
        f"{panel['title']}/{target['refId']}": target["expr"]
        for panel in model["panels"]
        for target in panel.get("targets", [])
        if target["datasource"]["uid"] == DATASOURCE_PROMETHEUS
    }


def wait_for_data(url: str, promql: str, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        result = watch_prom.query(url, promql)
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_every_serving_overview_promql_query_runs_on_prometheus(
    watch_process: tuple[int, int, Path], prometheus: str
) -> None:
    watch_prom.send_spans(watch_process[1])
    assert watch_prom.scalar(prometheus, 'otelbench_live_requests{source="live"} == 4') == 4.0
    targets = promql_targets()
    assert len(targets) == 27
    empty = []
    vllm = {}
    for key, expr in targets.items():
        promql = expand_promql(expr, rate_interval=RATE_INTERVAL, variables=VARIABLES)
        if "vllm:" in promql:
            # valid PromQL, executed (query() asserts status "success"); no vLLM here
            vllm[key] = watch_prom.query(prometheus, promql)
            continue
        result = wait_for_data(prometheus, promql)
        if not result:
            empty.append(key)
        else:
            sources = {series["metric"].get("source") for series in result}
            assert sources <= {"live", "probe", None}, (key, sources)
    assert empty == []
    assert vllm == {
        "Queue depth/A": [],
        "Queue depth/B": [],
        "KV cache usage/A": [],
        "Preemptions/A": [],
    }

    # the source variable selects series: only the probe request (TTFT 0.05 s at every quantile)
    only_probe = expand_promql(
        targets["TTFT/A"], rate_interval=RATE_INTERVAL, variables={"source": "probe"}
    )
    result = watch_prom.query(prometheus, only_probe)
    assert {s["metric"]["source"] for s in result} == {"probe"}
    assert {s["metric"]["quantile"] for s in result} == {"0.5", "0.9", "0.95", "0.99"}
    assert {float(s["value"][1]) for s in result} == {0.05}
