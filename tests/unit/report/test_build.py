"""report.json from a real span store: keys, hand-computed values, determinism.

Scenario (``tests/unit/query/spanstore.py``), successful requests A, B, C and failed D:

* TTFT 100, 300, 50 ms → sorted 50, 100, 300: P50 100, P90 100 + .8·200 = 260, P99 296.
* Option B token times: A 100, 120, 120, 150, 200, 200, 200; B 300, 310, 330; C 50, 60 →
  ITL A 20, 0, 30, 50, 0, 0; B 10, 20; C 10 → nine samples 0 0 0 10 10 20 20 30 50:
  P50 10, P90 34, P99 30 + .92·20 = 48.4, mean 140/9.
* Time between chunks: A 20, 30, 50; B 10, 20; C 10 → P50 20, mean 140/6.
* TPOT: A (200-100)/6, B (330-300)/2 = 15, C (60-50)/1 = 10.
* Jitter: A sqrt(6400/18), B 5 (C has one ITL: undefined). Max pause 50, 20, 10.
* Window: submit of A (T0) to end of failed D (T0 + 1.52 s); 12 output and 711 input tokens.
* Server (A, B): TTFT 60, 250 ms; TPOT 100/6, 20/2; client − server TTFT 40, 50 ms.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from otelbench.errors import ConfigError
from otelbench.query import open_store
from otelbench.report import SCHEMA_VERSION, build_report, render, render_json, render_markdown
from tests.unit.query.spanstore import (
    MANIFEST,
    MS,
    OLD_RUN_ID,
    RUN_ID,
    T0_NS,
    SpanWriter,
    span,
    trace,
)

SUMMARY_KEYS = ["count", "mean", "std", "min", "max", "p50", "p90", "p95", "p99", "p99_9"]


NO_LENGTHS = {"count": 0, "min": None, "max": None, "mean": None, "p50": None}
"""``run.sent``'s lengths of spans that recorded none."""


def test_top_level_shape(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    assert list(report) == [
        "schema_version",
        "run",
        "metrics",
        "methodology",
        "data_quality",
        "configuration",
        "compliance",
    ]
    assert report["data_quality"] == {"rejected_attributes": {}}
    assert report["schema_version"] == SCHEMA_VERSION == 1
    assert list(report["metrics"]) == ["client", "server", "fluidity"]
    client = report["metrics"]["client"]
    assert list(client) == [
        "ttft_ms",
        "first_content_token",
        "itl_ms",
        "tpot_ms",
        "e2e_ms",
        "time_between_chunks_ms",
        "tokens_per_chunk",
        "itl_per_request",
        "itl_p99_p50_ratio",
        "itl_shape",
        "ttft_by_input_tokens",
        "throughput",
    ]
    for key in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "time_between_chunks_ms"):
        assert list(client[key]) == SUMMARY_KEYS
    assert list(report["metrics"]["server"]) == [
        "requests_joined",
        "client_requests_without_server_span",
        "span_sources",
        "ttft_ms",
        "tpot_ms",
        "e2e_ms",
        "queue_ms",
        "prefill_ms",
        "decode_ms",
        "client_minus_server_ttft_ms",
        "ttft_decomposition_ms",
    ]
    assert list(report["methodology"]) == [
        "itl_method",
        "first_token_definition",
        "tpot_definition",
        "jitter_definition",
        "percentile_method",
        "std_definition",
        "throughput_window",
        "latency_population",
        "clock_domains",
        "deviations",
    ]


def test_run_section(scenario_store: Path) -> None:
    run = build_report(scenario_store)["run"]
    assert run == {
        "id": RUN_ID,
        "target": "http://127.0.0.1:8000",
        "model": "tiny",
        "api": "completions",
        "workload": MANIFEST["workload"],
        "seed": 7,
        "tokenizer": MANIFEST["tokenizer"],
        "load": {"mode": "poisson", "rate": 2.0, "concurrency": None, "requests": 4},
        "client_health": None,  # the scenario's manifest predates it
        "request_options": None,  # the scenario's manifest predates them
        "request_classes": {"default": 4},
        "warmup": None,
        "cold_start": False,
        "started_unix": 1_700_000_000.0,
        "finished_unix": 1_700_000_001.6,
        "duration_s": 1.6,
        "otelbench_version": "0.1.0",
        "sut": {
            "boundary": "Model Engine",
            "software": "vLLM 0.32.0",
            "hardware": "2-core CPU",
            "server_timing": {
                "source": "vllm_tracer",
                "hook_spans": 0,
                "vllm_tracer_spans": 2,
                "hooks": [],
                "note": (
                    "the target's server spans are vLLM's own llm_request spans only: the engine "
                    "hooks were off, not installed, or disabled themselves on this vLLM (its log "
                    "says why), so there is no per-token server timing (draft 4.6.3 Option C)"
                ),
            },
        },
        "notes": ["scenario"],
        "requests": {"total": 4, "succeeded": 3, "failed": 1, "failed_by_type": {"504": 1}},
        "load_generator": None,
        # A, B, C and D sent 500 ms apart: 3 gaps of 0.5 s against the exponential at the
        # declared 2 req/s, each gap known to ±1 ms (4.2.1), so the CDF's band at 0.5 s starts
        # at 1 - e^-(2 × 0.499); the spans record no sent lengths
        "sent": {
            "arrivals": {
                "gaps": 3,
                "declared_rate_per_s": 2.0,
                "tested_rate_per_s": 2.0,
                "measured_rate_per_s": 2.0,
                "cv": 0.0,
                "cv_tolerance": pytest.approx(3 / 3**0.5 + 2 * (0.001 * 2.0) ** 2),
                "timing_tolerance_ms": 1.0,
                "ks_statistic": pytest.approx(1 - math.exp(-0.998)),
                "ks_p_value": pytest.approx(0.1076, abs=1e-3),
            },
            "prompt_tokens": NO_LENGTHS,
            "max_tokens": NO_LENGTHS,
        },
        # D ends at +1520 ms; A, B and C succeeded with 7 + 3 + 2 output tokens (their usage)
        "phases": {
            "measure": {
                "requests": 4,
                "succeeded": 3,
                "output_tokens": 12,
                "cached_tokens": 0,
                "first_submit_unix": 1_700_000_000.0,
                "last_end_unix": 1_700_000_001.52,
                "ended_after_measurement_start": 4,
            }
        },
    }


def test_client_latency_values(scenario_store: Path) -> None:
    client = build_report(scenario_store)["metrics"]["client"]
    ttft = client["ttft_ms"]
    assert ttft["count"] == 3
    assert (ttft["min"], ttft["max"], ttft["mean"]) == (50.0, 300.0, 150.0)
    assert ttft["p50"] == pytest.approx(100.0)
    assert ttft["p90"] == pytest.approx(260.0)
    assert ttft["p95"] == pytest.approx(280.0)
    assert ttft["p99"] == pytest.approx(296.0)
    assert ttft["p99_9"] == pytest.approx(299.6)
    assert ttft["std"] == pytest.approx(math.sqrt(35000 / 3))

    itl = client["itl_ms"]
    assert itl["count"] == 9
    assert (itl["min"], itl["max"]) == (0.0, 50.0)
    assert itl["mean"] == pytest.approx(140 / 9)
    assert itl["p50"] == pytest.approx(10.0)
    assert itl["p90"] == pytest.approx(34.0)
    assert itl["p95"] == pytest.approx(42.0)
    assert itl["p99"] == pytest.approx(48.4)
    assert itl["p99_9"] == pytest.approx(49.84)
    assert client["itl_p99_p50_ratio"] == pytest.approx(4.84)

    tbc = client["time_between_chunks_ms"]
    assert tbc["count"] == 6
    assert tbc["p50"] == pytest.approx(20.0)
    assert tbc["mean"] == pytest.approx(140 / 6)
    assert client["tokens_per_chunk"]["count"] == 9
    assert client["tokens_per_chunk"]["mean"] == pytest.approx(12 / 9)
    assert client["tokens_per_chunk"]["max"] == 3.0

    tpot = client["tpot_ms"]
    assert tpot["count"] == 3
    assert (tpot["min"], tpot["p50"]) == (10.0, 15.0)
    assert tpot["max"] == pytest.approx(100 / 6)
    assert tpot["p99"] == pytest.approx(15 + 0.98 * (100 / 6 - 15))

    e2e = client["e2e_ms"]
    assert (e2e["count"], e2e["min"], e2e["p50"], e2e["max"]) == (3, 65.0, 210.0, 340.0)

    per_request = client["itl_per_request"]
    jitter_a = math.sqrt(6400 / 18)
    assert per_request["jitter_ms"]["count"] == 2
    assert per_request["jitter_ms"]["p50"] == pytest.approx((jitter_a + 5.0) / 2)
    assert per_request["jitter_ms"]["p99"] == pytest.approx(5.0 + 0.99 * (jitter_a - 5.0))
    assert per_request["max_pause_ms"] == {
        "count": 3,
        "p50": pytest.approx(20.0),
        "p95": pytest.approx(47.0),
        "p99": pytest.approx(49.4),
    }


def test_ttft_by_input_length_buckets(scenario_store: Path) -> None:
    rows = build_report(scenario_store)["metrics"]["client"]["ttft_by_input_tokens"]
    assert [r["bucket"] for r in rows] == [
        "0-256",
        "256-512",
        "512-1024",
        "1024-2048",
        "2048-4096",
        "4096+",
    ]
    # 255 input tokens (C, 50 ms) and 200 (A, 100 ms) are below 256; 256 (B, 300 ms) is not
    assert rows[0] == {
        "bucket": "0-256",
        "min_tokens": 0,
        "max_tokens_exclusive": 256,
        "count": 2,
        "p50": pytest.approx(75.0),
        "p95": pytest.approx(97.5),
        "p99": pytest.approx(99.5),
    }
    assert (rows[1]["count"], rows[1]["p50"], rows[1]["p99"]) == (1, 300.0, 300.0)
    assert rows[5] == {
        "bucket": "4096+",
        "min_tokens": 4096,
        "max_tokens_exclusive": None,
        "count": 0,
        "p50": None,
        "p95": None,
        "p99": None,
    }


def test_throughput_over_the_measurement_window(scenario_store: Path) -> None:
    t = build_report(scenario_store)["metrics"]["client"]["throughput"]
    assert t["window_s"] == pytest.approx(1.52)
    assert (t["output_tokens"], t["input_tokens"], t["requests"]) == (12, 711, 3)
    assert t["output_tokens_per_s"] == pytest.approx(12 / 1.52)
    assert t["input_tokens_per_s"] == pytest.approx(711 / 1.52)
    assert t["requests_per_s"] == pytest.approx(3 / 1.52)


def test_server_metrics(scenario_store: Path) -> None:
    server = build_report(scenario_store)["metrics"]["server"]
    assert server["requests_joined"] == 2
    assert server["client_requests_without_server_span"] == 2
    assert server["ttft_ms"]["count"] == 2
    assert server["ttft_ms"]["p50"] == pytest.approx(155.0)
    assert server["ttft_ms"]["p99"] == pytest.approx(248.1)
    assert server["tpot_ms"]["min"] == pytest.approx(10.0)
    assert server["tpot_ms"]["max"] == pytest.approx(100 / 6)
    assert server["e2e_ms"]["mean"] == pytest.approx(260.0)
    assert (server["queue_ms"]["min"], server["queue_ms"]["max"]) == pytest.approx((10.0, 200.0))
    assert server["prefill_ms"]["p50"] == pytest.approx(50.0)
    assert server["prefill_ms"]["std"] == pytest.approx(0.0)
    assert server["decode_ms"]["p50"] == pytest.approx(60.0)
    diff = server["client_minus_server_ttft_ms"]
    assert diff["count"] == 2
    assert (diff["min"], diff["max"], diff["mean"]) == pytest.approx((40.0, 50.0, 45.0))
    assert server["span_sources"] == {"otelbench.vllm.request": 0, "llm_request": 2}
    # no hook spans: no Option C ITL and no preemption data
    assert "itl_ms" not in server
    assert "preemptions" not in server
    # decomposition from llm_request alone: A 100 = 40 + 0 + 10 + 50, B 300 = 50 + 0 + 200 + 50
    d = server["ttft_decomposition_ms"]
    assert d["count"] == 2
    assert d["client_ttft"]["mean"] == pytest.approx(200.0)
    assert d["network_and_framing"]["mean"] == pytest.approx(45.0)
    assert d["arrival_to_queue"]["max"] == pytest.approx(0.0, abs=1e-9)
    assert d["queue"]["mean"] == pytest.approx(105.0)
    assert d["prefill"]["mean"] == pytest.approx(50.0)
    assert d["share_of_mean"]["queue"] == pytest.approx(210 / 400)
    assert d["share_of_mean"]["network_and_framing"] == pytest.approx(90 / 400)
    # per-request shares: queue 0.1 and 2/3, prefill 0.5 and 1/6
    assert d["share_p50"]["queue"] == pytest.approx((0.1 + 2 / 3) / 2)
    assert d["share_p50"]["prefill"] == pytest.approx((0.5 + 1 / 6) / 2)


def test_no_server_section_without_server_spans(scenario_store_without_server: Path) -> None:
    report = build_report(scenario_store_without_server)
    assert list(report["metrics"]) == ["client", "fluidity"]
    assert report["metrics"]["client"]["ttft_ms"]["p50"] == pytest.approx(100.0)
    assert report["methodology"]["itl_method"]["server_side"] == (
        "Option C not used: vLLM's llm_request span carries phase durations but no per-token "
        "timestamps"
    )


def test_methodology_declares_option_b_and_the_deviations(scenario_store: Path) -> None:
    m = build_report(scenario_store)["methodology"]
    assert m["itl_method"]["option"] == "B"
    assert m["itl_method"]["chunk_token_source"] == "usage"
    assert m["itl_method"]["chunk_token_sources"] == {"usage": 3}
    assert m["itl_method"]["server_option"] is None
    assert m["itl_method"]["server_side"].startswith("Option C not used")
    assert "5.1.3.1" in m["first_token_definition"]
    assert "type 7" in m["percentile_method"]
    assert list(m["clock_domains"]) == ["client", "server", "client_minus_server_ttft"]
    assert m["deviations"] == [
        "no warm-up procedure was run before measurement (draft 4.5)",
        "TTFT has 3 samples, fewer than the 1000 the draft requires for P99 and the 10000 for "
        "P99.9 (5.1.4.3): those percentiles are reported but not statistically reliable",
        "1 of 4 requests failed (504: 1); latency metrics cover the 3 successful requests only",
        "3 of 3 successful requests generated fewer than 50 output tokens, the minimum for ITL "
        "statistics (5.4.2)",
        "per-request ITL statistics come from 3 requests, fewer than the 100 the draft requires "
        "(5.4.2)",
        *[d for d in m["deviations"] if d.startswith(("fluidity uses", "the fluid token"))],
    ]
    assert len(m["deviations"]) == 7  # the fixed D_p and the fluid rate: test_sections.py


def test_report_is_deterministic_and_valid_json(scenario_store: Path) -> None:
    first = render_json(build_report(scenario_store))
    second = render_json(build_report(scenario_store))
    assert first == second
    assert first.endswith("\n")
    assert json.loads(first)["run"]["id"] == RUN_ID
    assert render(build_report(scenario_store), "json") == first


def test_report_of_a_named_run_and_from_an_open_store(scenario_store: Path) -> None:
    old = build_report(scenario_store, OLD_RUN_ID)
    assert old["run"]["id"] == OLD_RUN_ID
    assert old["run"]["requests"] == {
        "total": 1,
        "succeeded": 1,
        "failed": 0,
        "failed_by_type": {},
    }
    assert old["metrics"]["client"]["ttft_ms"]["p50"] == pytest.approx(1.0)
    assert old["metrics"]["server"]["ttft_ms"]["p50"] == pytest.approx(0.5)
    with open_store(scenario_store) as store:
        assert build_report(store) == build_report(scenario_store)


def test_unknown_render_format() -> None:
    known = "known: html, json, markdown"
    with pytest.raises(ConfigError, match=f"unknown report format 'pdf'; {known}"):
        render({}, "pdf")


def test_a_run_without_requests_reports_zero_counts_and_nulls(tmp_path: Path) -> None:
    store = SpanWriter(tmp_path / "empty.duckdb")
    load = {"mode": "closed_loop", "rate": None, "concurrency": 4, "requests": 0}
    store.run_span("e", {"id": "e", "load": load}, T0_NS, 2 * MS)
    store.close()
    report = build_report(tmp_path / "empty.duckdb")
    assert report["run"]["requests"] == {
        "total": 0,
        "succeeded": 0,
        "failed": 0,
        "failed_by_type": {},
    }
    # no manifest timing: the run span's start and duration stand in
    assert report["run"]["started_unix"] == T0_NS / 1e9
    assert report["run"]["duration_s"] == pytest.approx(0.002)
    client = report["metrics"]["client"]
    assert client["ttft_ms"] == dict.fromkeys(SUMMARY_KEYS) | {"count": 0}
    assert client["itl_p99_p50_ratio"] is None
    assert client["throughput"]["output_tokens_per_s"] is None
    assert "server" not in report["metrics"]
    assert report["methodology"]["itl_method"]["chunk_token_source"] is None
    md = render_markdown(report)
    assert "- Max Throughput: n/a (output tokens/s" in md
    assert "| TTFT P50 | n/a |" in md


def test_one_token_per_chunk_is_declared(tmp_path: Path) -> None:
    store = SpanWriter(tmp_path / "s.duckdb")
    store.run_span("x", {"id": "x"}, T0_NS, 2 * MS)
    store.client_span(
        run_id="x",
        trace_id=trace(1),
        span_id=span(1),
        submit_ns=T0_NS,
        end_offset_us=1000,
        chunk_offsets_us=[100, 300, 600],
        chunk_tokens=None,
        chunk_token_source=None,
        output_tokens=5,
    )
    store.close()
    report = build_report(tmp_path / "s.duckdb")
    method = report["methodology"]["itl_method"]
    assert method["chunk_token_source"] == "one_per_chunk"
    client = report["metrics"]["client"]
    # three chunks counted as one token each: ITL equals the time between chunks…
    assert client["itl_ms"]["count"] == 2
    assert (client["itl_ms"]["min"], client["itl_ms"]["max"]) == (0.2, 0.3)
    # …while TPOT uses the usage count: (600 - 100) µs / (5 - 1)
    assert client["tpot_ms"]["p50"] == pytest.approx(0.125)
