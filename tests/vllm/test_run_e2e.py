"""The main job, for real: `otelbench run --sut vllm-cpu` against a real vLLM engine on CPU.

The command starts the embedded collector, launches vLLM with its own tracer pointed at it,
runs open-loop Poisson load, and writes the reports. Checked here from the stored spans
directly (not through the query layer): every request has its client span and vLLM's
``llm_request`` span, joined by trace and parent span id, and for every request the client's
TTFT (T_submit → first content token) is at least vLLM's (arrival → first token).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from otelbench import semconv
from otelbench.sut.vllm_cpu import VllmEnv

pytestmark = pytest.mark.vllm

REQUESTS = 24


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, vllm_env: VllmEnv) -> Path:
    out = tmp_path_factory.mktemp("demo")
    cmd = [
        sys.executable,
        "-m",
        "otelbench.cli",
        "run",
        "--sut",
        "vllm-cpu",
        "--model",
        "tiny",
        "--requests",
        str(REQUESTS),
        "--rate",
        "6",
        "--seed",
        "7",
        "--vocab-size",
        "1024",
        "--ignore-eos",
        "--warmup-requests",
        "12",
        "--warmup-tokens",
        "0",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return out


def test_client_and_server_spans_are_joined_for_every_request(demo_run: Path) -> None:
    with duckdb.connect(str(demo_run / "spans.duckdb"), read_only=True) as con:
        rows = con.execute(
            f"""
            SELECT c."SpanId",
                   CAST(c."SpanAttributes"['{semconv.CLIENT_TTFT_US}'] AS BIGINT) / 1e6,
                   CAST(s."SpanAttributes"['{semconv.VLLM_LATENCY_TTFT}'] AS DOUBLE),
                   CAST(s."SpanAttributes"['{semconv.VLLM_USAGE_COMPLETION_TOKENS}'] AS BIGINT),
                   CAST(c."SpanAttributes"['{semconv.GEN_AI_USAGE_OUTPUT_TOKENS}'] AS BIGINT)
            FROM otel_traces c
            LEFT JOIN otel_traces s
              ON s."TraceId" = c."TraceId" AND s."ParentSpanId" = c."SpanId"
             AND s."SpanName" = '{semconv.SPAN_VLLM_REQUEST}'
            WHERE c."SpanKind" = '{semconv.SPAN_KIND_CLIENT}'
              AND c."SpanAttributes"['{semconv.REQUEST_PHASE}'] = '{semconv.PHASE_MEASURE}'
            """
        ).fetchall()
    assert len(rows) == REQUESTS
    for span_id, client_ttft_s, server_ttft_s, server_tokens, client_tokens in rows:
        assert server_ttft_s is not None, f"client span {span_id} has no llm_request child"
        assert client_ttft_s >= server_ttft_s, (span_id, client_ttft_s, server_ttft_s)
        assert server_tokens == client_tokens


def test_report_has_client_and_server_sides(demo_run: Path) -> None:
    report = json.loads((demo_run / "report.json").read_text())
    assert report["run"]["requests"]["total"] == REQUESTS
    assert report["run"]["requests"]["succeeded"] == REQUESTS
    assert report["metrics"]["client"]["ttft_ms"]["count"] == REQUESTS
    server = report["metrics"]["server"]
    assert server["requests_joined"] == REQUESTS
    assert server["queue_ms"]["count"] == REQUESTS
    assert server["ttft_ms"]["p50"] <= report["metrics"]["client"]["ttft_ms"]["p50"]
    markdown = (demo_run / "report.md").read_text()
    assert "TTFT" in markdown


def test_main_job_reports_engine_timing(demo_run: Path) -> None:
    """The main job runs with the engine hooks on: server ITL is Option C (per-token engine
    times, one sample per output token after the first) and TTFT is decomposed per request."""
    report = json.loads((demo_run / "report.json").read_text())
    server = report["metrics"]["server"]
    client = report["metrics"]["client"]
    assert server["span_sources"][semconv.SPAN_HOOK_REQUEST] == REQUESTS
    assert report["methodology"]["itl_method"]["server_option"] == "C"
    # Every output token after the first gives one server ITL sample; the client's count is the
    # same (Option B gives each token of a merged chunk its own, zero, interval).
    assert server["itl_ms"]["count"] == client["itl_ms"]["count"]
    decomposition = server["ttft_decomposition_ms"]
    assert decomposition["count"] == REQUESTS
    shares = decomposition["share_of_mean"]
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    assert all(v >= 0 for k, v in shares.items() if k != "network_and_framing")


def test_report_command_recomputes_the_same_numbers(demo_run: Path) -> None:
    before = json.loads((demo_run / "report.json").read_text())
    proc = subprocess.run(
        [sys.executable, "-m", "otelbench.cli", "report", str(demo_run)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    after = json.loads((demo_run / "report.json").read_text())
    assert after["metrics"] == before["metrics"]
    assert after["run"] == before["run"]
