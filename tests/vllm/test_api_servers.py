"""otelbench's engine hooks in a real vLLM with two API server processes (``--api-server-count 2``).

With several API servers vLLM runs its frontend (and so ``IterationStats`` and the hooks) once per
API server process, and serves ``/metrics`` from prometheus_client's multiprocess files. One
server for this module, hooks enabled, each API server spooling under ``OTELBENCH_SPOOL_DIR``;
the collector is down while the requests are served and starts afterwards, on the same port:

- every request has its server span and phase spans, joined to the trace the request carried;
- each API server process spooled to a slot of its own (``api-server-0``, ``api-server-1``) and
  both slots drain into the collector once it listens: nothing is lost;
- ``/metrics`` says, per API server process, that the hooks are active and that their metrics go
  to OTLP only (``otelbench_hook_info{metrics="otlp"}``); the hooks' OTLP metrics from both
  processes reach the collector and their request counts add up to the requests served.
"""

from __future__ import annotations

import concurrent.futures
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.sut import VllmCpuServer, VllmEnv
from otelbench.sut.process import free_port

pytestmark = pytest.mark.vllm

REQUESTS = 16
HOOK_SPANS = (
    semconv.SPAN_HOOK_REQUEST,
    semconv.SPAN_HOOK_QUEUE,
    semconv.SPAN_HOOK_PREFILL,
    semconv.SPAN_HOOK_DECODE,
)


def traced_completion(base_url: str, index: int) -> tuple[str, str]:
    """One completion on a connection of its own (the kernel spreads connections over the API
    servers' shared socket), carrying a fresh ``traceparent``; returns (trace id, parent id)."""
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    body = {
        "model": "tiny",
        "prompt": [10 + index, 11, 12, 13],
        "max_tokens": 8,
        "ignore_eos": True,
    }
    with httpx.Client(base_url=base_url, timeout=120.0, trust_env=False) as client:
        response = client.post(
            "/v1/completions", json=body, headers={"traceparent": f"00-{trace_id}-{parent_id}-01"}
        )
    response.raise_for_status()
    assert response.json()["usage"]["completion_tokens"] == 8
    return trace_id, parent_id


def hook_info(base_url: str) -> list[dict[str, str]]:
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    return [
        dict(re.findall(r'(\w+)="([^"]*)"', line[line.index("{") + 1 : line.rindex("}")]))
        for line in text.splitlines()
        if line.startswith(semconv.PROMETHEUS_HOOK_INFO + "{")
    ]


def spooled_slots(spool: Path) -> dict[str, int]:
    """Segment files per slot directory of the hooks' spool."""
    return {
        d.name: len(list(d.glob("segment-*.otlp"))) for d in sorted(spool.glob("*")) if d.is_dir()
    }


@pytest.fixture(scope="module")
def two_api_servers(
    vllm_env: VllmEnv, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[VllmCpuServer, int, Path]]:
    """vLLM with two API servers and the hooks on, exporting spans and metrics to a port where
    nothing listens yet; yields (server, collector port, spool directory)."""
    workdir = tmp_path_factory.mktemp("api-servers")
    port = free_port("127.0.0.1")
    spool = workdir / "hook-spool"
    server = VllmCpuServer(
        model_dir=vllm_env.model_dir,
        venv=vllm_env.venv,
        extra_args=("--api-server-count", "2"),
        otlp_traces_endpoint=f"http://127.0.0.1:{port}/v1/traces",
        hooks=True,
        env={
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"http://127.0.0.1:{port}/v1/metrics",
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            semconv.ENV_SPOOL_DIR: str(spool),
        },
        log_path=workdir / "vllm.log",
    )
    server.start(timeout=600)
    try:
        yield server, port, spool
    finally:
        server.stop()
        assert not server.processes(), "vLLM processes left after stop()"


def test_two_api_servers_trace_every_request_spool_apart_and_lose_nothing(
    two_api_servers: tuple[VllmCpuServer, int, Path], tmp_path: Path
) -> None:
    server, port, spool = two_api_servers
    infos = hook_info(server.base_url)
    assert len(infos) == 2, infos  # one sample per API server process (label pid)
    assert len({i["pid"] for i in infos}) == 2
    for info in infos:
        assert (info["support"], info["metrics"]) == ("tested", "otlp"), info

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        sent = list(pool.map(lambda i: traced_completion(server.base_url, i), range(REQUESTS)))

    # The collector is down: both API servers spool, each to its own slot.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        slots = spooled_slots(spool)
        if len(slots) == 2 and all(slots.values()):
            break
        time.sleep(0.25)
    assert sorted(slots) == ["api-server-0", "api-server-1"], slots
    assert all(slots.values()), slots

    with Receiver(tmp_path / "spans.duckdb", port=port) as receiver:
        deadline = time.monotonic() + 60
        while True:
            rows = receiver.store.execute(
                f'SELECT "TraceId", "SpanName", "ParentSpanId", "SpanId" FROM '
                f'{semconv.TABLE_TRACES} WHERE "ScopeName" = ?',
                [semconv.INSTRUMENTATION_SCOPE_HOOKS],
            )
            left = sum(len(list(d.glob("segment-*.otlp"))) for d in spool.glob("*"))
            histograms = receiver.store.execute(
                'SELECT "ResourceAttributes"[\'process.pid\'], max("Count") FROM '
                'otel_metrics_histogram WHERE "MetricName" = ? GROUP BY 1',
                [semconv.METRIC_SERVER_REQUEST_DURATION],
            )
            counted = sum(int(n) for _, n in histograms)
            done = len(rows) >= REQUESTS * len(HOOK_SPANS) and left == 0 and counted >= REQUESTS
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.25)

    assert left == 0, "spool segments were not replayed"
    by_trace: dict[str, dict[str, tuple[str, str]]] = {}
    for trace_id, name, parent, span_id in rows:
        assert name not in by_trace.setdefault(trace_id, {}), f"{name} twice in {trace_id}"
        by_trace[trace_id][name] = (parent, span_id)
    assert len(rows) == REQUESTS * len(HOOK_SPANS)
    for trace_id, parent_id in sent:
        spans = by_trace[trace_id]
        assert sorted(spans) == sorted(HOOK_SPANS)
        request_parent, request_id = spans[semconv.SPAN_HOOK_REQUEST]
        assert request_parent == parent_id  # joined to the trace the client sent
        for phase in HOOK_SPANS[1:]:
            assert spans[phase][0] == request_id
    # the hooks' OTLP metrics: both processes export, and their request counts add up
    assert len(histograms) == 2, histograms
    assert counted == REQUESTS
    assert "Traceback" not in Path(str(server.log_path)).read_text(errors="replace")
