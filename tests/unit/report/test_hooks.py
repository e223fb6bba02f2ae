"""report.json and Markdown of a run with engine-hook server spans (Option C), hand-computed.

Scenario (``tests/unit/query/spanstore.write_hook_scenario``): H1–H3 have hook spans (H1 also an
llm_request span, ignored), H4 only an llm_request span; H3's client request failed.

* Server TTFT: first offsets H1 60, H2 150, H3 90 ms (H1's latency key 59 is not used), H4's
  latency key 30 → sorted 30 60 90 150: mean 82.5, P50 75.
* Server TPOT: H1 (100 - 60)/3, H2 (260 - 150)/2 = 55, H3 (95 - 90)/1 = 5, H4 10/(2 - 1) = 10.
* Server ITL (Option C): H1 20, 20, 0 (two tokens of one step); H2 100, 10; H3 5 → six samples
  0 5 10 20 20 100: P50 15, P99 20 + .95·80 = 96, mean 155/6. Jitter H1 sqrt(2400/27), H2 45.
  Max pause 20, 100, 5.
* Decomposition (successful H1, H2, H4): client 100, 200, 40 = network 40, 50, 10 + arrival to
  queue 10, 20, 5 + queue 20, 50, 5 + prefill 30, 80, 20 (sums 340 = 100 + 35 + 75 + 130).
* Preemptions (hook spans H1–H3): 0, 2, 1 → total 3, 2 of 3 preempted, H2 succeeded and H3 did
  not: recovery 1/2; KV tokens 41 + 42 + 30 = 113; stalls 60, 5, 30 ms.
* Engine steps (H1–H3's offsets): H1 60 | 80 | 100 100, H2 150 | 250 | 260, H3 90 | 95 → 9
  tokens in 8 steps (7 of one token, 1 of two), 1 zero among the 6 ITL samples; time between
  steps 20, 20, 100, 10, 5: mean 31, P50 20.
* Request ends: H3's hook span predates end reasons and has finish reason ``abort``: it counts
  as ``aborted`` (phase unknown) but keeps its timing in the summaries above, as before; its
  client timed out (a client cut, but no cancellation on the engine's side). Its work: 30 prompt
  tokens, 2 completion tokens (1 reached the client), inference 0.07 + 0.005 s.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from otelbench import semconv
from otelbench.query import extract_run_data, open_store
from otelbench.render.html import render_html
from otelbench.report import build_report, render_json, render_markdown
from otelbench.report.plot_data import plot_data
from tests.unit.query.spanstore import MS, T0_NS, SpanWriter, span, trace
from tests.unit.report.test_markdown import section


def test_server_keys_with_hook_spans(hook_store: Path) -> None:
    server = build_report(hook_store)["metrics"]["server"]
    assert list(server) == [
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
        "itl_ms",
        "itl_per_request",
        "itl_p99_p50_ratio",
        "preemptions",
        "engine_steps",
        "request_ends",
    ]
    assert server["requests_joined"] == 4
    assert server["client_requests_without_server_span"] == 0
    assert server["span_sources"] == {semconv.SPAN_HOOK_REQUEST: 3, semconv.SPAN_VLLM_REQUEST: 1}


def test_server_latencies_from_token_offsets(hook_store: Path) -> None:
    server = build_report(hook_store)["metrics"]["server"]
    ttft = server["ttft_ms"]
    assert (ttft["count"], ttft["min"], ttft["max"]) == (4, 30.0, 150.0)
    assert (ttft["mean"], ttft["p50"]) == pytest.approx((82.5, 75.0))
    tpot = server["tpot_ms"]
    assert tpot["count"] == 4
    assert (tpot["min"], tpot["max"]) == pytest.approx((5.0, 55.0))
    assert tpot["p50"] == pytest.approx((10.0 + 40 / 3) / 2)
    # the ignored llm_request span of H1 said e2e 900 ms: e2e 110, 270, 300, 50
    assert server["e2e_ms"]["max"] == pytest.approx(300.0)
    assert server["e2e_ms"]["mean"] == pytest.approx(182.5)
    assert server["queue_ms"]["max"] == pytest.approx(50.0)
    diff = server["client_minus_server_ttft_ms"]
    assert (diff["count"], diff["min"], diff["max"]) == (3, pytest.approx(10.0), 50.0)


def test_server_itl_is_option_c(hook_store: Path) -> None:
    report = build_report(hook_store)
    server = report["metrics"]["server"]
    itl = server["itl_ms"]
    assert (itl["count"], itl["min"], itl["max"]) == (6, 0.0, 100.0)
    assert itl["mean"] == pytest.approx(155 / 6)
    assert itl["p50"] == pytest.approx(15.0)
    assert itl["p99"] == pytest.approx(96.0)
    assert server["itl_p99_p50_ratio"] == pytest.approx(6.4)
    jitter = server["itl_per_request"]["jitter_ms"]
    assert jitter["count"] == 2  # H3 has one interval
    assert jitter["p50"] == pytest.approx((math.sqrt(2400 / 27) + 45.0) / 2)
    assert server["itl_per_request"]["max_pause_ms"] == {
        "count": 3,
        "p50": pytest.approx(20.0),
        "p95": pytest.approx(92.0),
        "p99": pytest.approx(98.4),
    }
    method = report["methodology"]["itl_method"]
    assert method["option"] == "B"  # the client's
    assert method["server_option"] == "C"
    assert "Option C" in method["server_side"]
    assert "engine step" in method["server_side"]
    assert "share the step's time" in method["server_side"]


def test_ttft_decomposition(hook_store: Path) -> None:
    d = build_report(hook_store)["metrics"]["server"]["ttft_decomposition_ms"]
    assert list(d) == [
        "count",
        "client_ttft",
        "network_and_framing",
        "arrival_to_queue",
        "queue",
        "prefill",
        "share_of_mean",
        "share_p50",
    ]
    assert d["count"] == 3
    assert d["client_ttft"]["mean"] == pytest.approx(340 / 3)
    means = {k: d[k]["mean"] for k in ("network_and_framing", "arrival_to_queue", "queue")}
    assert means == pytest.approx(
        {"network_and_framing": 100 / 3, "arrival_to_queue": 35 / 3, "queue": 25.0}
    )
    assert d["prefill"]["p50"] == pytest.approx(30.0)
    assert d["share_of_mean"] == pytest.approx(
        {
            "network_and_framing": 100 / 340,
            "arrival_to_queue": 35 / 340,
            "queue": 75 / 340,
            "prefill": 130 / 340,
        }
    )
    assert d["share_p50"] == pytest.approx(
        {"network_and_framing": 0.25, "arrival_to_queue": 0.1, "queue": 0.2, "prefill": 0.4}
    )


def test_preemptions(hook_store: Path) -> None:
    p = build_report(hook_store)["metrics"]["server"]["preemptions"]
    assert list(p) == [
        "requests_observed",
        "total",
        "requests_preempted",
        "rate",
        "preemptions_per_request",
        "recovered",
        "recovery_rate",
        "tokens_lost",
        "stall_ms",
    ]
    assert (p["requests_observed"], p["total"], p["requests_preempted"]) == (3, 3, 2)
    assert p["rate"] == pytest.approx(2 / 3)
    per_request = p["preemptions_per_request"]
    assert (per_request["count"], per_request["mean"], per_request["max"]) == (3, 1.0, 2.0)
    assert (p["recovered"], p["recovery_rate"]) == (1, 0.5)
    assert p["tokens_lost"] == 113
    stall = p["stall_ms"]
    assert (stall["count"], stall["min"], stall["p50"], stall["max"]) == (3, 5.0, 30.0, 60.0)
    assert stall["mean"] == pytest.approx(95 / 3)


def test_preemption_timeline_places_each_preemption_at_its_engine_time(hook_store: Path) -> None:
    """The hooks' preemption events carry the engine's time of each preemption: the timeline's
    points are those times (spanstore: request 2 preempted 160 and 252 ms after its arrival in
    the engine, resumed after 60 and 5 ms; request 3 at 20 ms, resumed after 30 ms)."""
    with open_store(hook_store) as store:
        data = extract_run_data(store)
    origin_ns = int(data.client.submit_unix_ns.min())
    p = plot_data(data)["preemptions"]
    assert p["placement"].startswith("at each preemption event's time in the engine")
    assert p["total"] == 3
    pre = p["preempted"]
    t2, t3 = T0_NS + 505 * MS, T0_NS + 1005 * MS
    expected = [t2 + 160 * MS, t2 + 252 * MS, t3 + 20 * MS]
    assert pre["time_s"] == [round((t - origin_ns) / 1e9, 6) for t in expected]
    assert pre["stall_ms"] == [60.0, 5.0, 30.0]
    assert pre["preemptions"] == [1, 1, 1]
    assert pre["cumulative"] == [1, 2, 3]
    page = render_html(build_report(hook_store), plot_data(data))
    assert "placed at its time in the engine" in page


def test_engine_steps_of_a_multi_token_step(hook_store: Path) -> None:
    report = build_report(hook_store)
    steps = report["metrics"]["server"]["engine_steps"]
    assert {k: v for k, v in steps.items() if not k.endswith(("_step", "_ms"))} == {
        "requests": 3,
        "tokens": 9,
        "steps": 8,
        "multi_token_steps": 1,
        "steps_by_tokens": {"1": 7, "2": 1},
        "zero_itl_samples": 1,
        "zero_itl_share": pytest.approx(1 / 6),
    }
    per_step = steps["tokens_per_step"]
    assert (per_step["count"], per_step["mean"], per_step["max"]) == (8, 9 / 8, 2.0)
    between = steps["time_between_steps_ms"]
    assert (between["count"], between["min"], between["max"]) == (5, 5.0, 100.0)
    assert (between["mean"], between["p50"]) == pytest.approx((31.0, 20.0))
    method = report["methodology"]["itl_method"]
    assert method["server_engine_steps"] == (
        "multi-token engine steps: 9 tokens from 8 engine steps (1.12 tokens per step on "
        "average, up to 2: speculative decoding or another multi-token step); 1 of 6 server "
        "ITL samples (16.7%) are 0"
    )
    assert method["server_multi_token_handling"].startswith("by the draft's rules (4.6.2-4.6.3)")
    # the per-token ITL keeps the zero: six samples, the smallest 0 (test_server_itl_is_option_c)
    assert report["metrics"]["server"]["itl_ms"]["min"] == 0.0
    (chunking,) = [c for c in report["compliance"]["checks"] if c["id"] == "chunking-declared"]
    assert chunking["evidence"].endswith(
        "; server ITL by Option C: " + method["server_engine_steps"]
        + ", handled as methodology.itl_method.server_multi_token_handling says"
    )  # fmt: skip
    md = render_markdown(report)
    steps_md = section(md, "## Engine steps (draft 4.6.2-4.6.3)")
    for row in (
        "| Engine steps | 8 (1 with several tokens) |",
        "| Tokens per step (mean / max) | 1.12 / 2 |",
        "| Steps by tokens | 1: 7, 2: 1 |",
        "| Zero server ITL samples | 1 (16.7%) |",
        "| Time between steps P50 | 20.00 ms |",
    ):
        assert row in steps_md, row
    assert f"- Engine steps: {method['server_engine_steps']}\n" in md


def test_request_ends_of_a_span_written_before_end_reasons(hook_store: Path) -> None:
    ends = build_report(hook_store)["metrics"]["server"]["request_ends"]
    assert ends["client"] == {"ok": 3, "timeout": 1}
    assert ends["server"] == {"finished": 3, "cancelled": 0, "aborted": 1, "error": 0}
    zero = {"finished": 0, "cancelled": 0, "aborted": 0, "error": 0, "no_server_span": 0}
    assert ends["by_client_outcome"] == {
        "ok": {**zero, "finished": 3},
        "timeout": {**zero, "aborted": 1},
    }
    assert ends["cut_on_both_sides"] == 0
    assert ends["mismatches"] == {
        "client_cut_server_finished": 0,
        "client_ok_server_not_finished": 0,
        "client_cut_without_server_span": 0,
    }
    assert ends["by_phase"]["aborted"] == {
        "queue": 0, "prefill": 0, "decode": 0, "preempted": 0, "unknown": 1,
    }  # fmt: skip
    work = {k: v for k, v in ends["unread_work"].items() if k != "definition"}
    assert work == {
        "requests": 1,
        "prompt_tokens_processed": 30,
        "output_tokens_generated": 2,
        "output_tokens_received_by_client": 1,
        "engine_request_s": pytest.approx(0.075),
        "requests_without_engine_account": 0,
    }


def test_report_with_hooks_is_deterministic(hook_store: Path) -> None:
    assert render_json(build_report(hook_store)) == render_json(build_report(hook_store))


def test_hook_spans_without_preemptions(tmp_path: Path) -> None:
    w = SpanWriter(tmp_path / "s.duckdb")
    w.run_span("x", {"id": "x"}, T0_NS, 10 * MS)
    w.client_span(
        run_id="x",
        trace_id=trace(1),
        span_id=span(1),
        submit_ns=T0_NS,
        end_offset_us=9000,
        chunk_offsets_us=[5000, 6000, 8000],
        chunk_tokens=[1, 1, 1],
    )
    w.hook_span(
        trace_id=trace(1),
        span_id=span(2),
        parent_span_id=span(1),
        start_ns=T0_NS + MS,
        token_offsets_us=[3000, 4000, 6000],
        ttft_s="0.003",
        e2e_s="0.0065",
        queue_s="0.001",
        prefill_s="0.0015",
        decode_s="0.003",
        prompt_tokens=8,
    )
    w.close()
    report = build_report(tmp_path / "s.duckdb")
    server = report["metrics"]["server"]
    assert server["preemptions"]["total"] == 0
    assert server["preemptions"]["rate"] == 0.0
    assert server["preemptions"]["recovery_rate"] is None
    assert server["preemptions"]["stall_ms"]["count"] == 0
    assert server["itl_ms"]["count"] == 2
    assert (server["itl_ms"]["min"], server["itl_ms"]["max"]) == (1.0, 2.0)
    # client 5 = network 2 + arrival to queue 0.5 + queue 1 + prefill 1.5
    d = server["ttft_decomposition_ms"]
    assert d["arrival_to_queue"]["p50"] == pytest.approx(0.5)
    assert d["share_of_mean"]["network_and_framing"] == pytest.approx(0.4)
    md = render_markdown(report)
    assert "## Preemption" not in md
    assert "| ITL (client Option B, server Option C) | 1.50 ms | 1.50 ms |" in md


def test_markdown_with_hook_spans(hook_store: Path) -> None:
    md = render_markdown(build_report(hook_store))
    table = section(md, "## Client vs server")
    assert (
        "Server spans joined to 4 client requests (0 without one). Server spans by source: "
        "otelbench.vllm.request 3, llm_request 1."
    ) in table
    assert "| TTFT | 100.00 ms | 75.00 ms | 198.00 ms | 148.20 ms |" in table
    assert "| ITL (client Option B, server Option C) | 15.00 ms | 15.00 ms |" in table
    assert "| Maximum pause (per-request max ITL) | 30.00 ms | 20.00 ms |" in table
    assert (
        "| Component | Mean | P50 | P99 | Share of mean | P50 share |\n"
        "|---|---|---|---|---|---|\n"
        "| Network and framing (client − server TTFT) | 33.33 ms | 40.00 ms | 49.80 ms | "
        "29.4% | 25.0% |\n"
        "| Arrival to queue (server TTFT − queue − prefill) | 11.67 ms | 10.00 ms | 19.80 ms | "
        "10.3% | 10.0% |\n"
        "| Queue | 25.00 ms | 20.00 ms | 49.40 ms | 22.1% | 20.0% |\n"
        "| Prefill | 43.33 ms | 30.00 ms | 79.00 ms | 38.2% | 40.0% |\n"
        "| Client TTFT | 113.33 ms | 100.00 ms | 198.00 ms | 100.0% | 100.0% |\n"
    ) in table
    preemption = section(md, "## Preemption (draft 5.8.4)")
    for row in (
        "| Preemptions | 3 |",
        "| Requests preempted | 2 of 3 |",
        "| Preemption rate | 66.7% |",
        "| Preemptions per request (mean / max) | 1.00 / 2 |",
        "| Recovery rate | 50.0% |",
        "| KV tokens recomputed (tokens lost) | 113 |",
        "| Stall P50 | 30.00 ms |",
        "| Stall Max | 60.00 ms |",
    ):
        assert row in preemption, row
    methodology = section(md, "## Methodology")
    assert "- Server-side timing: Option C (direct token timing" in methodology


def test_run_sut_names_what_produced_the_server_timing(hook_store: Path) -> None:
    """H1–H3's hook spans carry the hooks' resource (vLLM 0.32.0+cpu, tested); H1's and H4's
    llm_request spans are counted beside them; the Markdown says the same in one line."""
    report = build_report(hook_store)
    assert report["run"]["sut"]["server_timing"] == {
        "source": "engine_hooks",
        "hook_spans": 3,
        "vllm_tracer_spans": 2,
        "hooks": [
            {
                "vllm_version": "0.32.0+cpu",
                "hooks_version": "0.1.0",
                "support": "tested",
                "spans": 3,
            }
        ],
        "note": None,
    }
    assert (
        "- Server Timing: otelbench engine hooks (Option C) 0.1.0 in vLLM 0.32.0+cpu (tested, 3 "
        "spans)\n"
    ) in render_markdown(report)


def test_hooks_on_an_untested_release_and_no_server_spans_are_said(tmp_path: Path) -> None:
    store = SpanWriter(tmp_path / "spans.duckdb")
    manifest = {"id": "u1", "target": "http://127.0.0.1:8000", "model": "tiny", "sut": None}
    store.run_span("u1", manifest, T0_NS, 1000 * MS)
    for n in (1, 2):
        store.client_span(
            run_id="u1", trace_id=trace(n), span_id=span(n), submit_ns=T0_NS + n * 100 * MS,
            index=n - 1, chunk_offsets_us=[50_000, 60_000], chunk_tokens=[1, 1],
            output_tokens=2, input_tokens=8, end_offset_us=70_000,
        )  # fmt: skip
    store.hook_span(
        trace_id=trace(1), span_id=span(11), parent_span_id=span(1), start_ns=T0_NS + 101 * MS,
        token_offsets_us=[40_000, 50_000], ttft_s="0.04", e2e_s="0.05", queue_s="0.01",
        prefill_s="0.03", decode_s="0.01", prompt_tokens=8,
        resource={semconv.RESOURCE_VLLM_VERSION: "0.29.0", semconv.RESOURCE_HOOK_SUPPORT:
                  "untested", semconv.RESOURCE_TELEMETRY_DISTRO_VERSION: "0.1.0"},
    )  # fmt: skip
    store.close()
    timing = build_report(tmp_path / "spans.duckdb")["run"]["sut"]["server_timing"]
    assert timing["source"] == "engine_hooks"
    assert timing["hooks"] == [
        {"vllm_version": "0.29.0", "hooks_version": "0.1.0", "support": "untested", "spans": 1}
    ]
    assert "vLLM 0.29.0, a release otelbench's test tier has not run" in timing["note"]
