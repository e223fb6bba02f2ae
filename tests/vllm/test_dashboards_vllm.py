"""The *Serving overview*'s ``vllm:*`` queries against a real vLLM (CPU, tiny model) scraped by a
real Prometheus, and the vLLM metric names against vLLM's own source.

vLLM is the session's shared ``vllm_server`` (its engine hooks are on, which these queries do not
read; the ``otelbench_live_*`` queries are covered by
``tests/integration/test_dashboards_prometheus.py``); two completions give its scheduler and
KV-cache gauges and its preemption counter samples. Prometheus is
``tests/integration/test_watch_prometheus.py``'s fixture, reused: its ``watch_process``
dependency is overridden here to hand it vLLM's port, whose ``/metrics`` it scrapes every
second. ``$__rate_interval`` -> ``4s`` as in the other PromQL test.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from otelbench.dashboards.macros import expand_promql
from otelbench.dashboards.names import VLLM_METRICS, VLLM_METRICS_SOURCE
from otelbench.sut import VllmCpuServer, VllmEnv
from tests.integration import test_watch_prometheus as watch_prom
from tests.integration.test_dashboards_prometheus import RATE_INTERVAL, promql_targets

pytestmark = pytest.mark.vllm

prometheus = watch_prom.prometheus


@pytest.fixture
def watch_process(vllm_server: VllmCpuServer, tmp_path: Path) -> tuple[int, int, Path]:
    """The shared vLLM in place of the watcher: (its port, unused, unused) for ``prometheus``."""
    body = {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 4, "ignore_eos": True}
    for _ in range(2):
        answer = httpx.post(f"{vllm_server.base_url}/v1/completions", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
    return vllm_server.port, 0, tmp_path


def test_vllm_metric_names_are_declared_in_vllm(vllm_env: VllmEnv) -> None:
    (source,) = vllm_env.venv.glob(f"lib/python3*/site-packages/{VLLM_METRICS_SOURCE}")
    declared = dict(
        (name, kind)
        for kind, name in re.findall(
            r"self\._(gauge|counter|histogram)_cls\(\s*name=\"(vllm:[a-z_]+)\"",
            source.read_text(encoding="utf-8"),
        )
    )
    for metric in VLLM_METRICS.values():
        assert declared.get(metric.declared) == metric.kind, metric.declared


def test_vllm_panel_queries_return_data(
    watch_process: tuple[int, int, Path], prometheus: str
) -> None:
    vllm = {k: e for k, e in promql_targets().items() if "vllm:" in e}
    assert sorted(vllm) == ["KV cache usage/A", "Preemptions/A", "Queue depth/A", "Queue depth/B"]
    deadline = time.monotonic() + 30
    missing = dict(vllm)
    while missing and time.monotonic() < deadline:
        for key, expr in list(missing.items()):
            promql = expand_promql(expr, rate_interval=RATE_INTERVAL, variables={})
            result = watch_prom.query(prometheus, promql)
            if result:
                value = float(result[0]["value"][1])
                assert value >= 0.0, (key, value)
                del missing[key]
        time.sleep(0.5)
    assert missing == {}
