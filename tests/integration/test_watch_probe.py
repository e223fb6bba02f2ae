"""``run_probe`` against the scripted SSE server: segments, tags, and the traceparent that makes
the server's span a child of the probe's client span."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.errors import ConfigError
from otelbench.live.probe import ProbeConfig, ProbeTagger, run_probe
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration


def test_probe_segments_are_tagged_runs_whose_requests_carry_traceparent(
    scripted_server: ScriptedServer,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(ProbeTagger("canary"))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = ProbeConfig(
        target=scripted_server.url,
        model="m",
        rate=10.0,
        stream="canary",
        segment_s=0.3,
        duration_s=0.5,
        workload_params={"vocab_size": 1024},
        extra_body={"script": {"name": "fixed", "n": 3, "tag": "probe-test"}},
    )
    outcomes = asyncio.run(run_probe(config, tracer_provider=provider))
    provider.shutdown()
    # ceil(10 × 0.5) = 5 requests in segments of ceil(10 × 0.3) = 3
    assert [o.run_id for o in outcomes] == ["canary-0", "canary-1"]
    assert [len(o.results) for o in outcomes] == [3, 2]
    assert all(r.ok for o in outcomes for r in o.results)
    spans = exporter.get_finished_spans()
    assert len(spans) == 7  # 2 run spans, 5 client spans
    assert all(s.attributes[semconv.PROBE_STREAM] == "canary" for s in spans)  # type: ignore[index]
    runs = [s for s in spans if s.name == semconv.SPAN_RUN]
    assert sorted(s.attributes[semconv.RUN_ID] for s in runs) == ["canary-0", "canary-1"]  # type: ignore[index]
    clients = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert len(clients) == 5
    # the server received each client span's context: its own span would be the child
    sent = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in clients}
    received = {
        tuple(e["traceparent"].split("-")[1:3]) for e in scripted_server.log(tag="probe-test")
    }
    assert received == sent


def test_probe_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="--rate"):
        ProbeConfig(target="http://x", model="m", rate=0)
    with pytest.raises(ConfigError, match="--segment"):
        ProbeConfig(target="http://x", model="m", rate=1, duration_s=-1)
    assert ProbeConfig(target="http://x", model="m", rate=0.2).segment_requests(300) == 60


def _probe_cli(
    server: ScriptedServer, endpoint: str, spool: Path, stream: str, flush: str = "30s"
) -> str:
    cmd = [sys.executable, "-m", "otelbench.cli", "probe", "--target", server.url, "--model", "m",
           "--rate", "10", "--segment", "300ms", "--duration", "500ms", "--stream", stream,
           "--workload-param", "vocab_size=1024", "--otlp-endpoint", endpoint,
           "--spool-dir", str(spool), "--flush-timeout", flush]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _counts(stdout: str) -> dict[str, int]:
    """The probe's last line: 'spans sent N, spooled N, replayed N, dropped N, refused N'."""
    line = stdout.strip().splitlines()[-1].removeprefix("otelbench probe: spans ")
    return {k: int(v) for k, v in (item.split() for item in line.split(", "))}


def test_probe_spans_wait_in_the_spool_while_the_collector_is_down(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """With --spool-dir nothing the probe measured is lost to a collector outage: its spans
    (its results) stay in the spool and the next probe on that spool sends them first. With the
    collector down the first probe gives up on it after --flush-timeout (1 s, not 30)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint, spool, store = f"http://127.0.0.1:{port}", tmp_path / "spool", tmp_path / "s.duckdb"
    # nothing listens on the port: after 1 s the probe leaves its spans in the spool
    down = _probe_cli(scripted_server, endpoint, spool, "outage", flush="1s")
    assert "5 requests in 2 segments, 0 failed" in down
    assert _counts(down) == {"sent": 0, "spooled": 7, "replayed": 0, "dropped": 0, "refused": 0}
    with Receiver(store, port=port):
        up = _counts(_probe_cli(scripted_server, endpoint, spool, "after"))
    # the 7 left behind are replayed; each new one goes straight out, or through the spool
    assert up["sent"] + up["spooled"] == 7
    assert up["replayed"] == 7 + up["spooled"]
    assert (up["dropped"], up["refused"]) == (0, 0)
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            f"""SELECT "SpanAttributes"['{semconv.PROBE_STREAM}'], count(*) FROM otel_traces
                GROUP BY ALL ORDER BY 1"""
        ).fetchall()
    assert rows == [("after", 7), ("outage", 7)]
    assert not list(spool.glob("segment-*"))
