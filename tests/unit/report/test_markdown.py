"""Markdown rendering: the draft's report blocks and tables with the scenario's numbers."""

from __future__ import annotations

from pathlib import Path

from otelbench.report import build_report, render, render_markdown


def section(markdown: str, heading: str) -> str:
    """The text from ``heading`` up to the next heading of the same or a higher level."""
    start = markdown.index(heading)
    level = heading.split(" ")[0]
    rest = markdown[start + len(heading) :]
    ends = [rest.find(f"\n{h} ") for h in ("#", "##", "###")[: len(level)]]
    ends = [e for e in ends if e >= 0]
    return heading + (rest[: min(ends)] if ends else rest)


def test_minimum_viable_report_block(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    assert md.startswith("# otelbench report — run r1\n")
    block = md[md.index("=== LLM Benchmark Report (Minimum) ===") : md.index("=== End Report ===")]
    for line in [
        "System Identification:",
        "- Model: tiny",
        "- Hardware: 2-core CPU",
        "- Software: vLLM 0.32.0 (target http://127.0.0.1:8000)",
        "- SUT Boundary: Model Engine",
        "Test Configuration:",
        "- Workload: synthetic-uniform",
        "- Load Model: open-loop poisson, 2.0 req/s",
        "- Request Count: 4 (3 succeeded, 1 failed)",
        "- Test Duration: 1.6 s",
        "Key Results:",
        "- TTFT P50: 100.00 ms",
        "- TTFT P99: 296.00 ms",
        "- TPOT P50: 15.00 ms",
        "- TPOT P99: 16.63 ms",
        "- Max Throughput: 7.9 tok/s (output tokens/s at this run's single load level, "
        "not a maximum search)",
        "- Throughput at P99 TTFT < 500ms: not measured (needs the load sweep of draft 5.2/5.3)",
        "Notes:",
        "- no warm-up procedure was run before measurement (draft 4.5)",
        "- 1 of 4 requests failed (504: 1); latency metrics cover the 3 successful requests only",
        "- Guardrail configuration: none in the measured path: the Model Engine boundary "
        "excludes input and output safety filtering (draft 4.1.1)",
    ]:
        assert f"\n{line}\n" in block, line


def test_ttft_results_table(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    table = section(md, "## TTFT results (draft 5.1.5.2)")
    assert (
        "| Metric | Value |\n"
        "|---|---|\n"
        "| Requests | 3 |\n"
        "| TTFT P50 | 100.00 ms |\n"
        "| TTFT P90 | 260.00 ms |\n"
        "| TTFT P95 | 280.00 ms |\n"
        "| TTFT P99 | 296.00 ms |\n"
        "| TTFT P99.9 | 299.60 ms |\n"
        "| TTFT Mean | 150.00 ms |\n"
        "| TTFT Min | 50.00 ms |\n"
        "| TTFT Max | 300.00 ms |\n"
    ) in table


def test_ttft_by_input_length_table(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    table = section(md, "## TTFT by input length (draft 5.1.5.3)")
    assert (
        "| Input Tokens | Requests | P50 (ms) | P95 (ms) | P99 (ms) |\n"
        "|---|---|---|---|---|\n"
        "| 0-256 | 2 | 75.00 | 97.50 | 99.50 |\n"
        "| 256-512 | 1 | 300.00 | 300.00 | 300.00 |\n"
        "| 512-1024 | 0 | n/a | n/a | n/a |\n"
        "| 1024-2048 | 0 | n/a | n/a | n/a |\n"
        "| 2048-4096 | 0 | n/a | n/a | n/a |\n"
        "| 4096+ | 0 | n/a | n/a | n/a |\n"
    ) in table


def test_itl_table_declares_the_method(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    table = section(md, "## Inter-token latency (draft 5.4.5)")
    assert (
        "Method: Option B, distributed timing (draft 4.6.3 Option B); chunk token counts: usage."
    ) in table
    assert (
        "| ITL Samples | 9 |\n"
        "| ITL P50 | 10.00 ms |\n"
        "| ITL P90 | 34.00 ms |\n"
        "| ITL P95 | 42.00 ms |\n"
        "| ITL P99 | 48.40 ms |\n"
        "| ITL P99.9 | 49.84 ms |\n"
        "| ITL Mean | 15.56 ms |\n"
        "| ITL Std Dev | 15.71 ms |\n"
        "| P99/P50 Ratio | 4.84 |\n"
    ) in table
    assert "| Jitter (per-request ITL std dev) | 2 | 11.93 ms | 18.16 ms | 18.72 ms |" in table
    assert "| Maximum pause (per-request max ITL) | 3 | 20.00 ms | 47.00 ms | 49.40 ms |" in table
    assert "| Time between chunks | 6 | 20.00 ms | 40.00 ms | 49.00 ms | 23.33 ms |" in table
    assert "| Tokens per chunk | 9 | 1.00 | 2.20 | 2.92 | 1.33 |" in table


def test_latency_and_throughput_tables(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    table = section(md, "## Latency and throughput (draft 5.2.5)")
    assert "| TTFT | 100.00 ms | 280.00 ms | 296.00 ms |" in table
    assert "| End-to-End | 210.00 ms | 327.00 ms | 337.40 ms |" in table
    assert "| Output Throughput | 7.9 tok/s |" in table
    assert "| Request Throughput | 1.97 req/s |" in table
    assert "| Input Throughput | 467.8 tok/s |" in table
    assert "| Measurement Window | 1.520 s |" in table


def test_client_vs_server_table(scenario_store: Path) -> None:
    md = render_markdown(build_report(scenario_store))
    table = section(md, "## Client vs server")
    assert "Server spans joined to 2 client requests (2 without one)." in table
    assert (
        "| Metric | Client P50 | Server P50 | Client P99 | Server P99 |\n"
        "|---|---|---|---|---|\n"
        "| TTFT | 100.00 ms | 155.00 ms | 296.00 ms | 248.10 ms |\n"
        "| TPOT | 15.00 ms | 13.33 ms | 16.63 ms | 16.60 ms |\n"
        "| End-to-End | 210.00 ms | 260.00 ms | 337.40 ms | 328.60 ms |\n"
    ) in table
    assert "| Queue | 2 | 105.00 ms | 190.50 ms | 198.10 ms |" in table
    assert "| Prefill | 2 | 50.00 ms | 50.00 ms | 50.00 ms |" in table
    assert "| Decode | 2 | 60.00 ms | 96.00 ms | 99.20 ms |" in table
    assert "| Client − server TTFT | 2 | 45.00 ms | 49.50 ms | 49.90 ms |" in table
    # llm_request spans only: no server ITL (Option C), no preemption section
    assert "| ITL (client Option B, server Option C)" not in table
    assert "## Preemption" not in md
    assert "TTFT decomposition (draft 5.1.4.2), 2 successful requests:" in table
    assert "| Queue | 105.00 ms | 105.00 ms | 198.10 ms | 52.5% | 38.3% |" in table


def test_no_client_vs_server_table_without_server_spans(
    scenario_store_without_server: Path,
) -> None:
    md = render_markdown(build_report(scenario_store_without_server))
    assert "## Client vs server" not in md
    assert "| TTFT P50 | 100.00 ms |" in md


def test_methodology_and_deviations_are_rendered(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    md = render(report, "markdown")
    assert md == render_markdown(report)
    methodology = section(md, "## Methodology")
    assert "- ITL method: Option B — client-side ITL" in methodology
    assert f"- Percentiles: {report['methodology']['percentile_method']}\n" in methodology
    deviations = section(md, "### Deviations")
    for d in report["methodology"]["deviations"]:
        assert f"- {d}\n" in deviations
    assert md.endswith("\n")
    assert not md.endswith("\n\n")
