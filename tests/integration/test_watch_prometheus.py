"""``otelbench watch --otlp`` as a process, scraped by a real Prometheus (Debian's binary).

Spans whose timing the test controls go by OTLP/HTTP to the watcher's own receiver; PromQL over
Prometheus's HTTP API must return the values worked out by hand below.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelbench import semconv

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
WATCH = "import typer; from otelbench.cli.live import watch; typer.run(watch)"
READY = re.compile(r"/metrics on http://127\.0\.0\.1:(\d+)/metrics; OTLP/HTTP on port (\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def watch_process(tmp_path: Path) -> Iterator[tuple[int, int, Path]]:
    """``otelbench watch`` with its receiver: yields (metrics port, OTLP port, store)."""
    store = tmp_path / "live.duckdb"
    proc = subprocess.Popen(
        [
            sys.executable, "-u", "-c", WATCH,
            "--store", str(store), "--otlp", "127.0.0.1:0", "--listen", "127.0.0.1:0",
            "--window", "60s", "--interval", "0.5s", "--class-attribute", "tenant",
            "--slo-ttft-ms", "250", "--retention", "1h",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = READY.search(line)
        assert match, f"watch did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        yield int(match.group(1)), int(match.group(2)), store
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err


@pytest.fixture
def prometheus(tmp_path: Path, watch_process: tuple[int, int, Path]) -> Iterator[str]:
    """Prometheus scraping the watcher every second; yields its base URL."""
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is not installed (scripts/setup.sh installs it)"
    metrics_port = watch_process[0]
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: otelbench_watch\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n",
        encoding="utf-8",
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def send_spans(otlp_port: int) -> None:
    """Live: 4 root hook spans (tenant t1: TTFT 0.1; t2: 0.2, 0.3; t2: failed); probe: one
    client span tagged as a probe with a hook child, TTFT 0.05. Every span ends 1–3 s ago."""
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{otlp_port}/v1/traces")
    vllm = TracerProvider(resource=Resource.create({"service.name": semconv.SERVICE_VLLM}))
    vllm.add_span_processor(SimpleSpanProcessor(exporter))
    client = TracerProvider(resource=Resource.create({"service.name": semconv.SERVICE_PROBE}))
    client.add_span_processor(SimpleSpanProcessor(exporter))
    now = time.time_ns()

    def hook_span(ttft: float, tenant: str | None, *, ok: bool = True, context: Any = None) -> None:
        start = now - 3_000_000_000
        offsets = [round(ttft * 1e6) + k * 20_000 for k in range(3)]  # ITL 20 ms
        attributes: dict[str, Any] = {
            semconv.VLLM_LATENCY_TTFT: ttft,
            semconv.VLLM_LATENCY_E2E: 1.0,
            semconv.VLLM_LATENCY_QUEUE: 0.01,
            semconv.VLLM_LATENCY_PREFILL: ttft - 0.01,
            semconv.VLLM_LATENCY_DECODE: 0.04,
            semconv.VLLM_USAGE_PROMPT_TOKENS: 16,
            semconv.VLLM_USAGE_COMPLETION_TOKENS: 3,
            semconv.SERVER_TOKEN_OFFSETS_US: offsets,
            semconv.SERVER_PREEMPTIONS: 0,
        }
        if tenant is not None:
            attributes["tenant"] = tenant
        span = vllm.get_tracer("otelbench.vllm").start_span(
            semconv.SPAN_HOOK_REQUEST,
            context=context,
            kind=trace_api.SpanKind.SERVER,
            start_time=start,
            attributes=attributes,
        )
        if not ok:
            span.set_status(trace_api.Status(trace_api.StatusCode.ERROR))
        span.end(end_time=start + 1_000_000_000)

    hook_span(0.1, "t1")
    hook_span(0.2, "t2")
    hook_span(0.3, "t2")
    hook_span(0.05, "t2", ok=False)
    probe_span = client.get_tracer("otelbench").start_span(
        "text_completion tiny",
        kind=trace_api.SpanKind.CLIENT,
        start_time=now - 4_000_000_000,
        attributes={
            semconv.RUN_ID: "probe-0",
            semconv.PROBE_STREAM: "probe",
            semconv.REQUEST_CLASS: "default",
        },
    )
    hook_span(0.05, None, context=trace_api.set_span_in_context(probe_span))
    probe_span.end(end_time=now - 1_000_000_000)
    vllm.shutdown()
    client.shutdown()


def query(url: str, promql: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=5).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def scalar(url: str, promql: str, timeout_s: float = 30.0) -> float:
    """The single value of ``promql`` once Prometheus has scraped one."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = query(url, promql)
        if result:
            assert len(result) == 1, result
            return float(result[0]["value"][1])
        assert time.monotonic() < deadline, f"no data for {promql}"
        time.sleep(0.5)


def test_prometheus_scrapes_watch_and_promql_returns_the_window_metrics(
    watch_process: tuple[int, int, Path], prometheus: str
) -> None:
    send_spans(watch_process[1])
    live = 'source="live"'
    probe = 'source="probe"'
    # wait for a scrape that has seen the spans
    assert scalar(prometheus, f"{semconv.METRIC_LIVE_REQUESTS}{{{live}}} == 4") == 4.0
    assert scalar(prometheus, f'{semconv.METRIC_LIVE_TTFT}{{{live},quantile="0.5"}}') == 0.2
    assert scalar(prometheus, f'{semconv.METRIC_LIVE_TTFT}{{{probe},quantile="0.5"}}') == 0.05
    assert scalar(prometheus, f"{semconv.METRIC_LIVE_REQUESTS}{{{probe}}}") == 1.0
    assert scalar(prometheus, f"{semconv.METRIC_LIVE_ERRORS}{{{live}}}") == 1.0
    assert scalar(
        prometheus, f'{semconv.METRIC_LIVE_ITL}{{{live},quantile="0.99"}}'
    ) == pytest.approx(0.02)
    # TTFT <= 250 ms: 0.1 and 0.2 of the 4 requests (the failed one never meets an SLO)
    assert scalar(prometheus, f'{semconv.METRIC_LIVE_SLO_ATTAINMENT}{{{live},slo="ttft"}}') == 0.5
    # Jain across tenants of the mean TTFT: t1 0.1, t2 0.25
    assert scalar(prometheus, f'{semconv.METRIC_LIVE_JAIN}{{{live},over="ttft"}}') == pytest.approx(
        0.35**2 / (2 * (0.01 + 0.0625))
    )
    assert scalar(prometheus, f"sum({semconv.METRIC_LIVE_REQUESTS})") == 5.0
    assert scalar(prometheus, 'up{job="otelbench_watch"}') == 1.0
    assert scalar(prometheus, semconv.METRIC_LIVE_WINDOW) == 60.0
    assert scalar(prometheus, semconv.METRIC_LIVE_RETENTION_DELETED) == 0.0
    assert scalar(prometheus, f"{semconv.METRIC_LIVE_STORE_BYTES} > 0") > 0
