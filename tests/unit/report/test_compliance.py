"""Configuration summary (draft 5.1.5.1) and methodology compliance (draft 2) of a report.

``full_report()`` is a hand-built report of a run that meets every MUST: a loopback Model Engine
with its model version, quantization and prefix caching declared, a complete Synthetic-Uniform
spec with A.1's lengths sent (``run.sent``) and Poisson gaps, a declared reference tokenizer, a
draft-sized warm-up that stabilized and drained (``run.phases``), the load generator's clock and
event-loop timing within 1 ms (``run.client_health``), 10000 TTFT samples and engine-hook spans
(Option C). Two SHOULD statements no such run can meet stay unmet
(:data:`BASE_UNMET_SHOULD`): gRPC for a Model Engine (it streams SSE) and several load levels for
5.4 (it is one run). ``gateway_report()`` is the same run declared as an Application Gateway with
the Conversation workload and its guardrails: its 5.1 verdict is unconditional. Each test changes
the facts one requirement reads and checks the verdict and the evidence.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otelbench import semconv
from otelbench.draft.statements import statement
from otelbench.model.conform import conforms
from otelbench.model.report import CONFIGURATION_LABELS, ReportBody
from otelbench.report import build_report, render_json, render_markdown
from otelbench.report.compliance import (
    DRAFT_INPUT_BUCKETS,
    NOT_DECLARED,
    PROCEDURE_REQUIREMENTS,
    REQUIREMENTS,
    VERDICT_CONDITIONAL,
    VERDICT_NOT_COMPLIANT,
    VERDICT_UNCONDITIONAL,
    Requirement,
    compliance,
    configuration_summary,
)
from tests.unit.report.test_markdown import section

CHECKS = [
    ("sut-boundary", "4.1", "MUST"),
    ("timing-resolution", "4.2.1", "MUST"),
    ("timing-resolution-us", "4.2.1", "SHOULD"),
    ("streaming-per-chunk", "4.2.2", "MUST"),
    ("open-loop-isolation", "4.2.5", "MUST"),
    ("request-timestamps", "4.2.6", "MUST"),
    ("request-status", "4.2.6", "MUST"),
    ("token-counts", "4.2.6", "MUST"),
    ("workload-input", "4.3.1", "MUST"),
    ("workload-output", "4.3.1", "MUST"),
    ("workload-content", "4.3.1", "MUST"),
    ("workload-prefix-sharing", "4.3.1", "MUST"),
    ("dataset-provenance", "4.3.3", "MUST"),
    ("seed-reported", "4.3.3", "MUST"),
    ("request-sequence-reproducible", "4.3.3", "SHOULD"),
    ("tokenizer-spec", "4.4.1", "MUST"),
    ("token-counting-option", "4.4.2", "MUST"),
    ("special-tokens", "4.4.3", "MUST"),
    ("warmup", "4.5.1", "MUST"),
    ("warmup-model-loaded", "4.5.1", "MUST"),
    ("warmup-drained", "4.5.1", "MUST"),
    ("warmup-cache-populated", "4.5.1", "MUST"),
    ("warmup-verified", "4.5.2", "SHOULD"),
    ("chunking-declared", "4.6.2", "MUST"),
    ("itl-method", "4.6.3", "MUST"),
    ("itl-option-c", "4.6.3", "SHOULD"),
    ("clock-sync", "4.7", "MUST"),
    ("clock-sync-accuracy", "4.7.2", "MUST"),
    ("clock-sync-ptp", "4.7.2", "SHOULD"),
    ("single-host", "4.7.1", "SHOULD"),
    ("network-rtt", "4.7.3", "SHOULD"),
    ("guardrail-disclosure", "4.8.1", "MUST"),
    ("first-token-definition", "5.1.3.1", "MUST"),
    ("ttft-percentiles", "5.1.4.1", "MUST"),
    ("sample-count-stated", "5.1.4.3", "MUST"),
    ("sample-count-p99", "5.1.2.1", "MUST"),
    ("sample-count-p99-9", "5.1.2.1", "MUST"),
    ("itl-output-tokens", "5.4.2", "MUST"),
    ("itl-request-count", "5.4.2", "SHOULD"),
    ("configuration-summary", "5.1.5.1", "MUST"),
    ("model-identifier", "5.1.2.3", "MUST"),
    ("poisson-arrivals", "5.1.2.2", "MUST"),
    ("open-loop", "5.3.2", "MUST"),
    ("cold-start", "4.5.3", "MUST"),
    ("ttft-input-buckets", "5.1.4.2", "SHOULD"),
    ("level-duration", "5.2.2.1", "SHOULD"),
    ("sse-protocol", "4.6.1", "SHOULD"),
    ("grpc-protocol", "4.6.1", "SHOULD"),
    ("model-engine-workload", "4.3.2.1", "MUST"),
    ("gateway-workload", "4.3.2.3", "SHOULD"),
    ("itl-workload", "5.4.2", "SHOULD"),
    ("capacity-workload", "5.5.2", "SHOULD"),
    ("fairness-workload", "5.6.2", "MUST"),
    ("prefix-cache-workload", "5.7.2", "SHOULD"),
    ("memory-pressure-workload", "5.8.2", "SHOULD"),
    ("long-context-workload", "5.9.2", "MUST"),
    ("guardrail-overhead-workload", "5.10.2", "SHOULD"),
    ("guardrails-production", "4.8.2", "SHOULD"),
    ("guardrails-disabled-noted", "4.8.2", "MUST"),
    ("guardrails-comparative", "4.8.2", "SHOULD"),
]
PROCEDURE_CHECKS = [
    ("itl-load-levels", "5.4.2", "SHOULD"),
    ("fairness-load-level", "5.6.2", "SHOULD"),
    ("fairness-class-requests", "5.6.2", "SHOULD"),
    ("level-min-duration", "5.2.2.1", "MUST"),
    ("tradeoff-load-levels", "5.3.2", "SHOULD"),
    ("search-range", "5.2.2.2", "MUST"),
    ("prefix-cache-configurations", "5.7.2", "MUST"),
    ("equivalence", "6.1", "MUST"),
    ("reference-tokenizer", "4.4.2", "SHOULD"),
]
RUN_REPORT_CHECKS = [
    c
    for c in CHECKS + PROCEDURE_CHECKS
    if c[0] not in {
        "open-loop", "level-duration", "capacity-workload", "fairness-workload",
        "prefix-cache-workload", "memory-pressure-workload", "long-context-workload",
        "guardrail-overhead-workload", "fairness-load-level", "fairness-class-requests",
        "level-min-duration", "tradeoff-load-levels", "search-range",
        "prefix-cache-configurations", "equivalence", "reference-tokenizer",
    }
]  # fmt: skip
"""The checks a run report lists: those bearing on 5.1 and 5.4 (and section 4)."""
BASE_UNMET_SHOULD = ["grpc-model-engine", "itl-load-levels"]
"""The SHOULD statements a single Model Engine run over SSE cannot meet (module docstring)."""
NOT_APPLICABLE_IN_FULL_REPORT = [
    "dataset-provenance",
    "warmup-cache-populated",
    "clock-sync",
    "clock-sync-accuracy",
    "clock-sync-ptp",
    "network-rtt",
    "cold-start",
    "sse-protocol",
    "gateway-workload",
    "guardrails-production",
    "guardrails-disabled-noted",
    "guardrails-comparative",
]
"""Not applicable to :func:`full_report`, by the registry's conditions (not a dataset, prefix
caching off, one host, not a cold start) and boundaries (Application Gateway statements)."""


def _summary(count: int, p50: float) -> dict[str, Any]:
    return {
        "count": count,
        "mean": p50 * 1.1,
        "std": p50 / 4,
        "min": p50 / 2,
        "max": p50 * 5,
        "p50": p50,
        "p90": p50 * 1.5,
        "p95": p50 * 2,
        "p99": p50 * 3,
        "p99_9": p50 * 4,
    }


def _probes(latency_ms: list[float], variation: float) -> dict[str, Any]:
    """A set of three warm-up probes (``run.warmup.probe_before`` / ``probe_after``)."""
    return {
        "probes": len(latency_ms),
        "ok": len(latency_ms),
        "latency_ms": latency_ms,
        "ttft_ms": [40.0, 41.0, 39.5],
        "median_latency_ms": sorted(latency_ms)[1],
        "median_ttft_ms": 40.0,
        "variation": variation,
        "stabilized": variation < 0.1,
    }


def input_bucket(label: str, count: int) -> dict[str, Any]:
    """A row of ``metrics.client.ttft_by_input_tokens``: the bucket ``label`` (``256-512``,
    ``4096+``) with ``count`` TTFTs."""
    low, _, high = label.rstrip("+").partition("-")
    p50 = 100.0 if count else None
    return {
        "bucket": label,
        "min_tokens": int(low),
        "max_tokens_exclusive": int(high) if high else None,
        "count": count,
        "p50": p50,
        "p95": p50,
        "p99": p50,
    }


_CPU: dict[str, Any] = {
    "user_s": 800.0,
    "system_s": 200.0,
    "wall_s": 5000.0,
    "utilization": 0.2,
    "involuntary_context_switches": 40,
    "runqueue_wait_s": 5.0,
    "runqueue_wait_share": 0.001,
    "host_steal_share": 0.0,
}
"""A load-generator worker's CPU time during the measurement (``run.client_health``)."""

CLIENT_HEALTH: dict[str, Any] = {
    "clock": {
        "clock": "time.perf_counter_ns (CLOCK_MONOTONIC)",
        "implementation": "clock_gettime(CLOCK_MONOTONIC)",
        "resolution_ns": 1.0,
        "clock_getres_ns": 1.0,
        "read_delay_ns": {"count": 1999, "p50": 60.0, "p99": 90.0, "max": 4000.0},
    },
    "method": "a timerfd on CLOCK_MONOTONIC",
    "period_ms": 2.0,
    "limit_ms": 1.0,
    "loop_lateness_ms": {"count": 2_500_000, "p50": 0.06, "p99": 0.3, "max": 2.0},
    "read_delay_ms": {"count": 0, "p50": None, "p99": None, "max": None},
    "workers": [
        {
            "worker": 0,
            "pid": 4242,
            "loop_lateness_ms": {"count": 2_500_000, "p50": 0.06, "p99": 0.3, "max": 2.0},
            "read_delay_ms": {"count": 0, "p50": None, "p99": None, "max": None},
            "cpu": dict(_CPU),
        }
    ],
}
"""A load generator that timed to 1 ms: its clock and its event loop's lateness."""


_SHARES: dict[str, Any] = {
    "network_and_framing": 0.05,
    "arrival_to_queue": 0.03,
    "queue": 0.02,
    "prefill": 0.9,
}
"""The TTFT components' shares (``metrics.server.ttft_decomposition_ms``)."""


def _phase(requests: int, succeeded: int, tokens: int, first: float, last: float) -> dict[str, Any]:
    return {
        "requests": requests,
        "succeeded": succeeded,
        "output_tokens": tokens,
        "cached_tokens": 0,
        "first_submit_unix": first,
        "last_end_unix": last,
        "ended_after_measurement_start": 0,
    }


def full_report() -> dict[str, Any]:
    """A report of a run that meets every requirement (only dataset provenance is n/a): the
    facts of a report (:class:`~otelbench.model.report.ReportBody`), every key its types
    require."""
    n = 10_000
    return {
        "schema_version": 1,
        "run": {
            "id": "r-full",
            "target": "http://127.0.0.1:8000",
            "model": "tiny",
            "api": "completions",
            "workload": {
                "name": "synthetic-uniform",
                "seed": 42,
                "spec": {
                    "draft_section": "A.1",
                    "input": {
                        "distribution": "uniform",
                        "min": 128,
                        "max": 512,
                        "unit": "tokens",
                        "content": "random token ids from the vocabulary",
                    },
                    "output": {
                        "distribution": "uniform",
                        "min": 64,
                        "max": 256,
                        "unit": "tokens",
                        "control": "max_tokens",
                    },
                    "prefix_sharing": None,
                    "system_prompt": None,
                },
            },
            "seed": 42,
            "tokenizer": {
                "option": "B (reference)",
                "name": "cl100k_base",
                "vocab_size": 100256,
                "version": "cl100k_base, BPE file sha256 223921b7",
                "source": "tiktoken",
                "bos_eos": "excluded from counts",
                "system_prompt": "counted separately",
                "tool_call_formatting": "none (no tool calls in the workloads)",
            },
            "load": {
                "mode": "poisson",
                "rate": 2.0,
                "concurrency": None,
                "requests": n,
                "arrival_params": {},
                "arrival": {"process": "poisson", "rate": 2.0, "seed": 42},
            },
            "request_options": {
                "prompt_format": "token_ids",
                "ignore_eos": True,
                "stream": True,
                "extra_body": {},
            },
            "request_classes": {"default": n},
            "warmup": {
                "mode": "warm",
                "procedure": "draft 4.5.1 floors, then probes until stable (4.5.2)",
                "floors": {
                    "min_requests": 100,
                    "min_output_tokens": 10_000,
                    "rule": "whichever is greater: both",
                },
                "concurrency": 8,
                "seed": 1042,
                "requests": 120,
                "failed": 0,
                "output_tokens": 19_200,
                "duration_s": 31.25,
                "drained": True,
                "probe": {
                    "k": 3,
                    "request": "one request of the workload, sent alone",
                    "metric": "latency_ms",
                    "stabilization": "largest distance from the median",
                    "threshold": 0.1,
                },
                "probe_before": _probes([900.0, 1170.0, 890.0], 0.3),
                "probe_after": _probes([800.0, 832.0, 790.0], 0.04),
                "rounds": [],
                "stabilized": True,
                "deviations": [],
            },
            "cold_start": False,
            "started_unix": 1_700_000_000.0,
            "finished_unix": 1_700_005_000.0,
            "duration_s": 5000.0,
            "otelbench_version": "0.1.0",
            "sut": {
                "boundary": "Model Engine",
                "software": "vLLM 0.32.0",
                "hardware": "1x H100 80 GB",
                "prefix_caching": False,
                "model_version": "tiny-llama@rev1",
                "quantization": "none",
                "load_generator_host": "AMD EPYC (2 cores)",
                "server_timing": {
                    "source": "engine_hooks",
                    "hook_spans": n,
                    "vllm_tracer_spans": 0,
                    "hooks": [
                        {
                            "vllm_version": "0.32.0",
                            "hooks_version": "0.1.0",
                            "support": "tested",
                            "spans": n,
                        }
                    ],
                    "note": None,
                },
            },
            "notes": [],
            "requests": {"total": n, "succeeded": n, "failed": 0, "failed_by_type": {}},
            "load_generator": {
                "schedule_lag_ms": {"count": n, "p50": 0.05, "p99": 0.4, "max": 1.2},
                "generator_bottleneck_flagged": False,
            },
            "client_health": copy.deepcopy(CLIENT_HEALTH),
            "sent": {
                "arrivals": {
                    "gaps": n - 1,
                    "declared_rate_per_s": 2.0,
                    "tested_rate_per_s": 2.0,
                    "measured_rate_per_s": 2.01,
                    "cv": 0.99,
                    "cv_tolerance": 0.03,
                    "timing_tolerance_ms": 1.0,
                    "ks_statistic": 0.008,
                    "ks_p_value": 0.52,
                },
                "prompt_tokens": {"count": n, "min": 128, "max": 512, "mean": 320.4, "p50": 321},
                "max_tokens": {"count": n, "min": 64, "max": 256, "mean": 160.2, "p50": 160},
            },
            "phases": {
                "probe": _phase(10, 10, 1600, 1_699_999_968.0, 1_699_999_999.2),
                "warmup": _phase(120, 120, 19_200, 1_699_999_969.0, 1_699_999_998.0),
                "measure": _phase(n, n, 1_600_000, 1_700_000_000.0, 1_700_005_000.0)
                | {"ended_after_measurement_start": n},
            },
        },
        "metrics": {
            "client": {
                "ttft_ms": _summary(n, 100.0),
                "first_content_token": {
                    "requests": n,
                    "first_event_recorded": n,
                    "after_non_content_events": n,
                    "non_content_lead_ms": {"count": n, "p50": 0.4, "p95": 0.9, "p99": 1.5},
                    "content_before_first_event": 0,
                },
                "itl_ms": _summary(1_590_000, 20.0),
                "tpot_ms": _summary(n, 20.0),
                "e2e_ms": _summary(n, 3_500.0),
                "time_between_chunks_ms": _summary(1_590_000, 20.0),
                "tokens_per_chunk": _summary(1_600_000, 1.0) | {"max": 1.0},
                "itl_per_request": {
                    "jitter_ms": {"count": n, "p50": 3.0, "p95": 5.0, "p99": 8.0},
                    "max_pause_ms": {"count": n, "p50": 40.0, "p95": 60.0, "p99": 90.0},
                },
                "itl_p99_p50_ratio": 3.0,
                "itl_shape": {
                    "count": 1_590_000,
                    "peaks": 1,
                    "multimodal": False,
                    "peak_locations_ms": [20.0],
                    "bandwidth_ms": 1.5,
                    "p50_ms": 20.0,
                    "p99_ms": 60.0,
                    "p99_p50_ratio": 3.0,
                },
                "ttft_by_input_tokens": [
                    input_bucket("0-256", 3_000),
                    input_bucket("256-512", 7_000),
                    *(input_bucket(b, 0) for b in DRAFT_INPUT_BUCKETS[2:]),
                ],
                "throughput": {
                    "output_tokens_per_s": 320.03,
                    "input_tokens_per_s": 640.86,
                    "requests_per_s": 2.0,
                    "window_s": 4999.5,
                    "output_tokens": 1_600_000,
                    "input_tokens": 3_204_000,
                    "requests": n,
                },
            },
            "server": {
                "requests_joined": n,
                "client_requests_without_server_span": 0,
                "span_sources": {semconv.SPAN_HOOK_REQUEST: n, semconv.SPAN_VLLM_REQUEST: 0},
                "ttft_ms": _summary(n, 95.0),
                "tpot_ms": _summary(n, 19.0),
                "e2e_ms": _summary(n, 3_490.0),
                "queue_ms": _summary(n, 2.0),
                "prefill_ms": _summary(n, 90.0),
                "decode_ms": _summary(n, 3_000.0),
                "client_minus_server_ttft_ms": _summary(n, 5.0),
                "ttft_decomposition_ms": {
                    "count": n,
                    "client_ttft": _summary(n, 100.0),
                    "network_and_framing": _summary(n, 5.0),
                    "arrival_to_queue": _summary(n, 3.0),
                    "queue": _summary(n, 2.0),
                    "prefill": _summary(n, 90.0),
                    "share_of_mean": _SHARES,
                    "share_p50": _SHARES,
                },
                "itl_ms": _summary(1_590_000, 19.0),
            },
        },
        "methodology": {
            "itl_method": {
                "option": "B",
                "name": "distributed timing (draft 4.6.3 Option B)",
                "description": "the time between content chunks, each chunk's tokens spread evenly",
                "protocol": "HTTP/1.1 Server-Sent Events (OpenAI-compatible streaming)",
                "chunk_token_source": "usage",
                "chunk_token_sources": {"usage": n},
                "chunk_token_source_meaning": {"usage": "the server's per-chunk usage"},
                "time_between_chunks": "Option A: the time between content chunks",
                "server_option": "C",
                "server_side": "per-token engine-step timing from the engine hooks (Option C)",
            },
            "first_token_definition": "time to the first content token (draft 5.1.3.1)",
            "tpot_definition": "(e2e - TTFT) / (output tokens - 1)",
            "jitter_definition": "population standard deviation of a request's ITLs",
            "percentile_method": "linear interpolation between closest ranks",
            "std_definition": "population standard deviation (ddof=0)",
            "throughput_window": "first submit to last end of the measured requests",
            "latency_population": "successful measured requests",
            "clock_domains": {
                "client": "offsets on the load generator's monotonic clock, in µs since T_submit",
                "server": "the engine's span times, on the SUT's clock",
                "client_minus_server_ttft": "two durations, each on one clock",
            },
            "deviations": [],
        },
        "data_quality": {"rejected_attributes": {}},
    }


def checks_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in compliance(report)["checks"]}


def verdict_of(report: dict[str, Any], test: str) -> dict[str, Any]:
    return next(t for t in compliance(report)["tests"] if t["test"] == test)


def extra_unmet(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The unmet MUST and SHOULD statements beyond :data:`BASE_UNMET_SHOULD`."""
    result = compliance(report)
    return result["unmet_must"], [i for i in result["unmet_should"] if i not in BASE_UNMET_SHOULD]


def gateway_report() -> dict[str, Any]:
    """:func:`full_report` as an Application Gateway on the same host: the Conversation
    workload (A.3), SSE, its guardrails declared enabled in their default configuration and a
    comparative run named."""
    report = full_report()
    report["run"]["sut"]["boundary"] = "Application Gateway"
    report["run"]["sut"]["guardrails"] = {
        "input_filter": "Llama Guard 3",
        "output_filter": "none",
        "default_configuration": True,
        "comparative_run": "out/5.10/procedure.json",
        "comparative": {
            "read": True,
            "path": "out/5.10/procedure.json",
            "kind": "procedure",
            "configurations": ["baseline", "input", "full"],
        },
    }
    report["run"]["workload"]["name"] = "sharegpt"
    report["run"]["workload"]["spec"]["draft_section"] = "A.3"
    report["run"]["workload"]["spec"]["dataset"] = {
        "path": "ShareGPT_V3_unfiltered_cleaned_split.json",
        "sha256": "35f0e213",
        "selection": "seeded shuffle",
        "filters": {"min_tokens": 4},
    }
    return report


def declared_nothing() -> dict[str, Any]:
    """:func:`full_report` of a run that declared nothing: every optional key absent, every
    declaration null, no server span joined."""
    report = full_report()
    nulls = (
        "target", "model", "api", "workload", "seed", "tokenizer", "load", "client_health",
        "request_options", "request_classes", "warmup", "cold_start", "otelbench_version",
        "load_generator",
    )  # fmt: skip
    report["run"].update(dict.fromkeys(nulls))
    report["run"]["sut"] = {
        "server_timing": {
            "source": "none",
            "hook_spans": 0,
            "vllm_tracer_spans": 0,
            "hooks": [],
            "note": None,
        }
    }
    del report["metrics"]["server"]
    report["methodology"]["itl_method"]["server_option"] = None
    return report


@pytest.mark.parametrize("make", [full_report, gateway_report, declared_nothing])
def test_the_hand_built_reports_have_the_report_types_shape(
    make: Callable[[], dict[str, Any]],
) -> None:
    assert conforms(make(), ReportBody) == []


def test_the_checks_their_sections_and_levels() -> None:
    assert [(r.id, r.section, r.level) for r in REQUIREMENTS] == CHECKS
    assert [(r.id, r.section, r.level) for r in PROCEDURE_REQUIREMENTS] == PROCEDURE_CHECKS
    checks = compliance(full_report())["checks"]
    assert [(c["id"], c["section"], c["level"]) for c in checks] == RUN_REPORT_CHECKS
    assert all(
        list(c) == ["id", "section", "level", "requirement", "met", "evidence", "judges"]
        for c in checks
    )
    for c in checks:
        keywords = ("MUST",) if c["level"] == "MUST" else ("SHOULD", "RECOMMENDED")
        assert any(k in c["requirement"] for k in keywords), c["id"]


@pytest.mark.parametrize("check", [*REQUIREMENTS, *PROCEDURE_REQUIREMENTS], ids=lambda r: r.id)
def test_a_check_of_one_statement_takes_its_section_and_level_unless_it_overrides_them(
    check: Requirement[Any],
) -> None:
    """A check judging exactly one statement is placed by it: the same section and level, or an
    override with its reason, whose section or level differs from the statement's (an override
    that restates it is redundant). A check of several statements, or none, gives its own."""
    own = (check.own_section, check.own_level)
    placed = (check.section, check.level)
    if len(check.judges) != 1:
        assert None not in own
        assert placed == own
        assert check.override == ""
        return
    judged = statement(check.judges[0])
    derived = (judged.section, judged.level)
    if not check.override:
        assert own == (None, None)
        assert placed == derived
        return
    assert "\n" not in check.override
    assert own != (None, None)
    for given, value, statements in zip(own, placed, derived, strict=True):
        assert value == (statements if given is None else given)
        assert given != statements


def _never(f: object) -> tuple[bool, str]:
    return False, "never"


@pytest.mark.parametrize(
    ("judges", "placement"),
    [
        (("ttft-percentiles",), {"own_section": "5.1.4"}),  # an override without its reason
        (("ttft-percentiles",), {"override": "a reason, yet nothing overridden"}),
        ((), {"own_section": "4.2.6"}),  # no statement: its own section and level, both
        (("ttft-percentiles", "sample-count-stated"), {"own_level": "MUST"}),
        ((), {"own_section": "4.2.6", "own_level": "MUST", "override": "nothing to override"}),
    ],
)
def test_a_check_is_placed_by_its_statement_or_says_why_not(
    judges: tuple[str, ...], placement: dict[str, str]
) -> None:
    with pytest.raises(ValueError, match=r"^check a-check"):
        Requirement("a-check", "A check.", _never, judges, **placement)


def test_the_overrides_of_the_statements_placement() -> None:
    overridden = [
        (r.id, r.section, r.level) for r in [*REQUIREMENTS, *PROCEDURE_REQUIREMENTS] if r.override
    ]
    assert overridden == [
        ("workload-input", "4.3.1", "MUST"),
        ("workload-output", "4.3.1", "MUST"),
        ("workload-content", "4.3.1", "MUST"),
        ("workload-prefix-sharing", "4.3.1", "MUST"),
        ("clock-sync", "4.7", "MUST"),
        ("guardrail-disclosure", "4.8.1", "MUST"),
        ("level-min-duration", "5.2.2.1", "MUST"),
    ]


def test_a_full_model_engine_run_is_conditionally_compliant_for_5_1_and_5_4() -> None:
    result = compliance(full_report())
    assert list(result) == [
        "scope",
        "verdict_rule",
        "checks",
        "tests",
        "unmet_must",
        "unmet_should",
        "verdict",
    ]
    assert result["verdict"] == VERDICT_CONDITIONAL
    assert (result["unmet_must"], result["unmet_should"]) == ([], BASE_UNMET_SHOULD)
    assert [c["id"] for c in result["checks"] if c["met"] is None] == (
        NOT_APPLICABLE_IN_FULL_REPORT
    )
    assert [c["id"] for c in result["checks"] if c["met"] is False] == [
        "grpc-protocol",
        "itl-load-levels",
    ]
    tests = {t["test"]: t for t in result["tests"]}
    assert list(tests) == ["5.1", "5.4"]
    assert tests["5.1"]["title"] == "Time to First Token"
    assert (tests["5.1"]["unmet_must"], tests["5.1"]["unmet_should"]) == (
        [],
        ["grpc-model-engine"],
    )
    assert tests["5.4"]["unmet_should"] == ["grpc-model-engine", "itl-load-levels"]
    # every statement of section 4 and of its own section, each once, with its judgement
    s51 = {s["id"]: s for s in tests["5.1"]["statements"]}
    assert len(s51) == 48 + 10 - 2  # section 4 less 4.4.2's comparison and 4.3.2.5's 5.9 one
    assert s51["poisson-supported"] == {
        "id": "poisson-supported",
        "section": "4.2.3",
        "keyword": "MUST",
        "level": "MUST",
        "statement": "Poisson arrivals MUST be supported.",
        "judged": "enforced",
        "checks": [],
        "met": True,
        "evidence": "enforced: a capability of otelbench's load generator, whatever the run: "
        "--arrival poisson, the default of `otelbench run --rate` "
        "(otelbench.loadgen.arrivals:ARRIVALS)",
        "bullets": [],
    }
    # an umbrella is judged item by item
    bullets = s51["output-recording"]["bullets"]
    assert [(b["text"], b["checks"], b["met"]) for b in bullets] == [
        ("Request submission timestamp", ["request-timestamps"], True),
        ("First token arrival timestamp", ["request-timestamps"], True),
        ("Each subsequent token arrival timestamp", ["streaming-per-chunk"], True),
        ("Final token arrival timestamp", ["request-timestamps"], True),
        ("Total input token count", ["token-counts"], True),
        ("Total output token count", ["token-counts"], True),
        ("Request success/failure status", ["request-status"], True),
    ]
    assert s51["warmup"]["bullets"][3]["met"] is None  # prefix caching is disabled
    assert s51["warmup"]["bullets"][3]["evidence"] == (
        'not applicable: 4.5.1 item 4: "If prefix caching is enabled and being tested"'
    )
    assert s51["sse-application-gateway"]["met"] is None
    assert s51["sse-application-gateway"]["evidence"] == (
        "applies to the Application Gateway boundary only; this one is Model Engine"
    )
    assert s51["ttft-parameters-defined"]["checks"] == [
        "workload-input",
        "workload-output",
        "workload-content",
        "workload-prefix-sharing",
        "request-status",
        "configuration-summary",
        "sut-boundary",
        "model-identifier",
    ]
    # n/a: 4.3.3's dataset, 4.5.3's two cold-start statements, 4.7.2's two across hosts, 4.8.2's
    # gateway note; the SHOULDs: SSE, Conversation, PTP, RTT and two guardrail statements
    assert tests["5.1"]["counts"] == {
        "MUST": {"met": 33, "unmet": 0, "not_applicable": 6},
        "SHOULD": {"met": 10, "unmet": 1, "not_applicable": 6},
    }


def test_a_gateway_run_with_its_declarations_is_unconditionally_compliant_for_5_1() -> None:
    report = gateway_report()
    t51 = verdict_of(report, "5.1")
    assert t51["verdict"] == VERDICT_UNCONDITIONAL == "unconditionally compliant"
    assert (t51["unmet_must"], t51["unmet_should"]) == ([], [])
    # one requirement broken, one verdict lower: a guardrail declaration withdrawn (SHOULD),
    # then arrivals that are not Poisson (MUST)
    del report["run"]["sut"]["guardrails"]["comparative_run"]
    t51 = verdict_of(report, "5.1")
    assert (t51["verdict"], t51["unmet_should"]) == (
        VERDICT_CONDITIONAL,
        ["safety-comparative-runs"],
    )
    # gaps sent on a uniform schedule: every gap the mean, a KS distance of 1 - 1/e
    report["run"]["sent"]["arrivals"] |= {"cv": 0.0, "ks_statistic": 0.632, "ks_p_value": 0.0}
    t51 = verdict_of(report, "5.1")
    assert (t51["verdict"], t51["unmet_must"]) == (VERDICT_NOT_COMPLIANT, ["ttft-poisson"])
    assert checks_by_id(report)["poisson-arrivals"]["evidence"] == (
        "measured over the 9999 gaps between the requests sent: rate 2.01 req/s, coefficient of "
        "variation 0.000 (Poisson: 1 ± 0.030), Kolmogorov–Smirnov against the exponential at "
        "2.00 req/s: D = 0.6320, p = 0; configured: poisson: the gaps sent are not exponential"
    )


def test_evidence_quotes_the_facts() -> None:
    checks = checks_by_id(full_report())
    assert checks["sut-boundary"]["evidence"] == (
        "declared: run.sut.boundary Model Engine (draft 4.1.1)"
    )
    assert checks["timing-resolution"]["evidence"] == (
        "time.perf_counter_ns (CLOCK_MONOTONIC) (clock_gettime(CLOCK_MONOTONIC)): resolution 1 "
        "ns as the clock reports it, back-to-back reads P50 60 ns, P99 90 ns (measured); "
        "event-loop lateness over 1 worker(s): P50 0.060 ms, P99 0.300 ms, max 2.000 ms; "
        "busiest worker's CPU 20% of a core, longest wait for a core 0% of the time (P99 within "
        "1 ms)"
    )
    assert checks["poisson-arrivals"]["evidence"] == (
        "measured over the 9999 gaps between the requests sent: rate 2.01 req/s, coefficient of "
        "variation 0.990 (Poisson: 1 ± 0.030), Kolmogorov–Smirnov against the exponential at "
        "2.00 req/s: D = 0.0080, p = 0.52; configured: poisson"
    )
    assert checks["model-engine-workload"]["evidence"] == (
        "workload synthetic-uniform (declared draft A.1); sent prompt lengths 128–512 (P50 321) "
        "over 10000, max_tokens 64–256 (P50 160) over 10000; wanted Synthetic-Uniform (A.1)"
    )
    assert checks["warmup-drained"]["evidence"] == (
        "from the spans: the last warm-up or probe request ended 800.0 ms before the first "
        "measured request was submitted"
    )
    assert checks["open-loop-isolation"]["evidence"] == (
        "open-loop poisson; schedule lag of 10000 requests P50 0.05 ms, P99 0.40 ms, max 1.20 ms; "
        "sends are scheduled independently of responses, not flagged"
    )
    assert checks["seed-reported"]["evidence"] == "run seed 42, arrival schedule seed 42"
    assert checks["sample-count-p99-9"]["evidence"] == (
        "10000 requests, 10000 TTFT samples; P99.9 needs at least 10000"
    )
    assert checks["warmup"]["evidence"] == (
        "warm-up spans: 120 of 120 requests succeeded, 19200 output tokens"
    )
    assert checks["warmup-verified"]["met"] is True
    assert checks["warmup-verified"]["evidence"] == (
        "probe median latency 900.00 ms before, 800.00 ms after; variation across consecutive "
        "probes 4.0%: stabilized"
    )
    assert checks["chunking-declared"]["evidence"] == (
        "protocol HTTP/1.1 Server-Sent Events (OpenAI-compatible streaming); one token per "
        "chunk, counted from per-chunk usage on all 10000 requests with content chunks; "
        "multi-token chunks handled by Option B"
    )
    assert checks["first-token-definition"]["evidence"] == (
        "TTFT is the time to the first content token; 10000 requests with the first event and "
        "the first content token recorded: 10000 of them began with non-content events "
        "(role-only, empty or whitespace deltas) that TTFT skipped, P50 0.40 ms before the "
        "content"
    )
    assert checks["itl-method"]["evidence"] == (
        "client ITL by Option B: distributed timing (draft 4.6.3 Option B); server ITL by Option C"
    )
    assert checks["itl-option-c"]["evidence"] == (
        "server ITL by Option C: 1590000 per-token intervals from 10000 engine-hook spans "
        "(metrics.server.itl_ms)"
    )
    assert checks["token-counts"]["evidence"] == (
        "input token counts for 10000 of 10000 requests with a TTFT; 1600000 output tokens "
        "counted over 10000 successful requests"
    )
    assert checks["ttft-percentiles"]["evidence"] == (
        "P50 100.00 ms, P90 150.00 ms, P95 200.00 ms, P99 300.00 ms, P99.9 400.00 ms; "
        "percentiles by linear interpolation between closest ranks"
    )
    assert checks["guardrail-disclosure"]["evidence"] == (
        "none in the measured path: the Model Engine boundary excludes input and output safety "
        "filtering (draft 4.1.1); failed requests: 0"
    )


def test_a_should_unmet_is_conditionally_compliant() -> None:
    report = gateway_report()  # out of the base SHOULDs' way
    # the probes' latencies after the warm-up, one of them 25 % off their median
    report["run"]["warmup"]["probe_after"]["latency_ms"] = [800.0, 1000.0, 790.0]
    t51 = verdict_of(report, "5.1")
    assert t51["verdict"] == VERDICT_CONDITIONAL == "conditionally compliant"
    assert (t51["unmet_must"], t51["unmet_should"]) == ([], ["warmup-verified"])
    check = checks_by_id(report)["warmup-verified"]
    assert check["met"] is False
    assert check["evidence"].endswith("probes 25.0%: NOT stabilized")


def test_no_sut_boundary_is_not_compliant() -> None:
    report = full_report()
    del report["run"]["sut"]["boundary"]
    result = compliance(report)
    assert result["verdict"] == VERDICT_NOT_COMPLIANT == "not compliant"
    # without a boundary, nothing says the guardrails are outside the measured path either
    assert result["unmet_must"] == [
        "sut-boundary-declared",
        "safety-accounted",
        "guardrail-disclosure",
        "ttft-parameters-defined",
        "ttft-report-includes",
    ]
    # and no boundary-specific statement applies (gRPC for a Model Engine among them)
    assert result["unmet_should"] == ["itl-load-levels"]
    checks = checks_by_id(report)
    assert checks["sut-boundary"]["evidence"] == (
        "no SUT boundary declared (run.sut.boundary is absent; --sut-boundary)"
    )
    assert checks["guardrail-disclosure"]["evidence"] == (
        "guardrails not declared for the undeclared boundary; failed requests: 0"
    )
    assert checks["configuration-summary"]["evidence"] == (
        "not declared: SUT configuration and boundary (4.1), Guardrails (4.8.1)"
    )


def test_declared_guardrails_satisfy_disclosure_at_any_boundary() -> None:
    report = full_report()
    report["run"]["sut"]["boundary"] = "Application Gateway"
    report["run"]["sut"]["guardrails"] = {"input_filter": "Llama Guard 3", "output_filter": False}
    report["run"]["requests"] |= {"succeeded": 9_998, "failed": 2, "failed_by_type": {"400": 2}}
    check = checks_by_id(report)["guardrail-disclosure"]
    assert check["met"] is True
    assert check["evidence"] == (
        "declared: input_filter: Llama Guard 3; output_filter: disabled; failed requests: 2 "
        "(400: 2)"
    )
    # 4.8.1 names both stages: a declaration of one is not a disclosure of both
    del report["run"]["sut"]["guardrails"]["output_filter"]
    check = checks_by_id(report)["guardrail-disclosure"]
    assert check["met"] is False
    assert "not declared: output filtering" in check["evidence"]


@pytest.mark.parametrize(
    ("samples", "unmet"),
    [
        (999, ["ttft-request-count"]),
        (1_000, ["ttft-request-count"]),
        (9_999, ["ttft-request-count"]),
        (10_000, []),
    ],
)
def test_sample_counts_of_5_1_4_3(samples: int, unmet: list[str]) -> None:
    report = full_report()
    report["metrics"]["client"]["ttft_ms"]["count"] = samples
    report["metrics"]["client"]["ttft_by_input_tokens"] = [{"bucket": "0-256", "count": samples}]
    result = compliance(report)
    assert result["unmet_must"] == unmet
    assert result["verdict"] == (VERDICT_NOT_COMPLIANT if unmet else VERDICT_CONDITIONAL)
    checks = checks_by_id(report)
    assert checks["sample-count-p99"]["evidence"] == (
        f"10000 requests, {samples} TTFT samples; P99 needs at least 1000"
    )
    assert (checks["sample-count-p99"]["met"], checks["sample-count-p99-9"]["met"]) == (
        samples >= 1_000,
        samples >= 10_000,
    )


def test_closed_loop_has_no_open_loop_isolation_to_check() -> None:
    report = full_report()
    report["run"]["load"] |= {"mode": "closed_loop", "rate": None, "concurrency": 16}
    report["run"]["load_generator"] = None
    report["run"]["sent"]["arrivals"] = None
    check = checks_by_id(report)["open-loop-isolation"]
    # not applicable by the registry's condition, which quotes the draft
    assert (check["met"], check["evidence"]) == (
        None,
        'not applicable: 4.2.5: "in open-loop mode"; 5.1.2.2: "For open-loop:"',
    )
    assert extra_unmet(report) == ([], [])
    assert checks_by_id(report)["poisson-arrivals"]["met"] is None
    t51 = verdict_of(report, "5.1")
    bullets = {b["text"]: b for b in next(
        s for s in t51["statements"] if s["id"] == "ttft-parameters-defined"
    )["bullets"]}  # fmt: skip
    assert (bullets["Arrival rate:"]["met"], bullets["Concurrency:"]["met"]) == (None, True)
    assert configuration_summary(report)["load_model"] == (
        "closed-loop, concurrency 16 (draft 4.2.4)"
    )


def test_a_flagged_generator_bottleneck_fails_open_loop_isolation() -> None:
    report = full_report()
    report["run"]["load_generator"] = {
        "schedule_lag_ms": {"count": 10_000, "p50": 0.5, "p99": 10.2, "max": 31.0},
        "generator_bottleneck_flagged": True,
    }
    check = checks_by_id(report)["open-loop-isolation"]
    assert check["met"] is False
    assert check["evidence"] == (
        "open-loop poisson; schedule lag of 10000 requests P50 0.50 ms, P99 10.20 ms, max "
        "31.00 ms; flagged: the load generator fell behind its schedule (its P99 send lag over "
        "all it sent exceeded its limit), the generator, not the target, may have limited the "
        "offered load (run.load_generator.generator_bottleneck_flagged)"
    )
    assert compliance(report)["unmet_must"] == [
        "load-generator-requirements",
        "open-loop-isolation",
    ]


def test_cold_start_replaces_warm_up() -> None:
    report = full_report()
    report["run"]["warmup"] = {"mode": "cold_start", "skipped": True, "deviations": []}
    report["run"]["cold_start"] = True
    report["run"]["phases"] = {"measure": report["run"]["phases"]["measure"]}
    checks = checks_by_id(report)
    assert (checks["warmup"]["met"], checks["warmup-verified"]["met"]) == (None, None)
    assert checks["warmup"]["evidence"].startswith('not applicable: 4.5.3: "When cold start')
    assert (checks["cold-start"]["met"], checks["cold-start"]["evidence"]) == (
        True,
        "skipped: cold-start measurement declared (draft 4.5.3); no warm-up or probe request "
        "among the spans",
    )
    assert extra_unmet(report) == ([], [])
    # a cold start whose spans hold a warm-up after all
    report["run"]["phases"]["warmup"] = _phase(12, 12, 900, 1_699_999_990.0, 1_699_999_995.0)
    assert checks_by_id(report)["cold-start"]["met"] is False
    assert extra_unmet(report)[0] == ["cold-start-skips-warmup", "cold-start-indicated"]


def test_a_short_or_missing_warm_up_fails_4_5_1() -> None:
    report = full_report()
    # what the spans hold decides, not the manifest: 120 sent, 70 of them failed
    report["run"]["phases"]["warmup"] |= {"succeeded": 50, "output_tokens": 8000}
    check = checks_by_id(report)["warmup"]
    assert check["met"] is False
    assert check["evidence"] == (
        "warm-up spans: 50 of 120 requests succeeded, 8000 output tokens; the draft needs at "
        "least 100 successful requests and 10000 output tokens"
    )
    # a warm-up still in flight when the measurement began
    report["run"]["phases"]["warmup"]["ended_after_measurement_start"] = 3
    check = checks_by_id(report)["warmup-drained"]
    assert (check["met"], check["evidence"]) == (
        False,
        "from the spans: in flight when the measurement began: warmup 3 request(s)",
    )
    # no probe served: nothing shows the model loaded
    report["run"]["phases"]["probe"]["succeeded"] = 0
    assert checks_by_id(report)["warmup-model-loaded"]["met"] is False
    t51 = verdict_of(report, "5.1")
    warmup = next(s for s in t51["statements"] if s["id"] == "warmup")
    assert [b["met"] for b in warmup["bullets"]] == [False, False, False, None]
    # no warm-up at all: no evidence, not met
    report["run"]["warmup"] = None
    del report["run"]["phases"]["warmup"], report["run"]["phases"]["probe"]
    assert extra_unmet(report) == (["warmup"], ["warmup-verified"])
    assert checks_by_id(report)["warmup"]["evidence"] == (
        "no evidence: no warm-up request is among the run's spans (run.phases)"
    )


def test_a_remote_target_needs_a_declared_clock_synchronization() -> None:
    report = full_report()
    report["run"]["target"] = "http://gpu-node-1:8000"
    checks = checks_by_id(report)
    assert checks["clock-sync"]["met"] is False
    assert checks["clock-sync"]["evidence"].startswith(
        configuration_summary(report)["clock_synchronization"]
    )
    assert checks["clock-sync"]["evidence"].startswith(
        "not verified: target host gpu-node-1 is not loopback and no synchronization method"
    )
    assert checks["clock-sync-accuracy"]["met"] is False
    assert extra_unmet(report)[0] == ["ntp-accuracy", "clock-sync-stated"]
    # a method without an accuracy figure is not enough (4.7.2)
    report["run"]["sut"]["clock_sync"] = "chrony (NTP)"
    checks = checks_by_id(report)
    assert (checks["clock-sync"]["met"], checks["clock-sync"]["evidence"]) == (
        False,
        "chrony (NTP); not declared: estimated accuracy (--sut-clock-sync, "
        "--sut-clock-accuracy-ms)",
    )


@pytest.mark.parametrize(
    ("method", "accuracy_ms", "unmet_must", "unmet_should"),
    [
        ("chrony (NTP)", 2.0, [], ["network-rtt"]),
        ("chrony (NTP)", 10.0, [], ["network-rtt"]),
        ("chrony (NTP)", 10.5, ["ntp-accuracy"], ["network-rtt"]),
        ("chrony (NTP)", 0.5, [], ["ptp-sub-millisecond", "network-rtt"]),
        ("linuxptp (PTP)", 0.05, [], ["network-rtt"]),
    ],
)
def test_clock_synchronization_across_hosts_is_judged_by_its_declared_accuracy(
    method: str, accuracy_ms: float, unmet_must: list[str], unmet_should: list[str]
) -> None:
    """4.7.2 across hosts: accuracy 10 ms or better (MUST), PTP where it is sub-millisecond
    (SHOULD); a gateway on another host should report its network RTT (4.7.3)."""
    report = gateway_report()
    report["run"]["target"] = "https://gw.example.net"
    report["run"]["sut"]["clock_sync"] = {"method": method, "accuracy_ms": accuracy_ms}
    t51 = verdict_of(report, "5.1")
    assert (t51["unmet_must"], t51["unmet_should"]) == (unmet_must, unmet_should)
    assert configuration_summary(report)["clock_synchronization"] == (
        f"method: {method}; accuracy_ms: {accuracy_ms}"
    )
    report["run"]["sut"]["network_rtt_ms"] = 1.25
    assert verdict_of(report, "5.1")["unmet_should"] == unmet_should[:-1]
    assert checks_by_id(report)["network-rtt"]["evidence"] == "network RTT 1.25 ms (declared)"


@pytest.mark.parametrize(
    ("target", "loopback"),
    [
        ("http://127.0.0.1:8000", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000", True),
        ("http://10.0.0.7:8000", False),
        ("https://api.example.com", False),
    ],
)
def test_loopback_targets_share_the_host_clock(target: str, loopback: bool) -> None:
    report = full_report()
    report["run"]["target"] = target
    # 4.7.2 applies only across machines ("When load generator and SUT are on different
    # machines"): on one host it is not applicable; across hosts nothing is declared here
    assert checks_by_id(report)["clock-sync"]["met"] is (None if loopback else False)
    text = configuration_summary(report)["clock_synchronization"]
    assert ("CLOCK_MONOTONIC and CLOCK_REALTIME" in text) is loopback


def test_without_option_c_the_recommendation_does_not_apply() -> None:
    report = full_report()
    del report["metrics"]["server"]
    report["methodology"]["itl_method"]["server_option"] = None
    check = checks_by_id(report)["itl-option-c"]
    assert (check["met"], check["evidence"]) == (
        None,
        'not applicable: 4.6.3: "Option C is RECOMMENDED when available." (available: the SUT '
        "reported server-side spans)",
    )
    assert extra_unmet(report) == ([], [])
    assert configuration_summary(report)["timing_method"].endswith(
        "; server: none (no server spans joined)"
    )


def test_native_tokenizer_without_a_declaration_fails_4_4() -> None:
    report = full_report()
    report["run"]["tokenizer"] = {
        "option": "A (native)",
        "name": "the target's own tokenizer",
        "source": "prompts are sent as token ids drawn from a vocabulary of 1024",
    }
    assert extra_unmet(report) == (["tokenizer-specified", "special-tokens"], [])
    checks = checks_by_id(report)
    assert checks["token-counting-option"]["met"] is True
    assert checks["tokenizer-spec"]["evidence"].endswith(
        "; not declared: version, vocabulary size (declare with --tokenizer)"
    )
    assert checks["special-tokens"]["evidence"] == (
        "declared: not declared: BOS/EOS, system prompt, tool-call tokens"
    )


def test_short_outputs_and_few_itl_requests() -> None:
    report = full_report()
    short = (
        "3 of 80 successful requests generated fewer than 50 output tokens, the minimum for ITL "
        "statistics (5.4.2)"
    )
    report["methodology"]["deviations"] = [short]
    report["metrics"]["client"]["itl_per_request"]["max_pause_ms"]["count"] = 80
    # 5.4.2's 100 requests has no keyword: a setup parameter, weighed as SHOULD
    assert extra_unmet(report) == (["itl-output-tokens"], ["itl-request-count"])
    assert verdict_of(report, "5.1")["unmet_must"] == []
    checks = checks_by_id(report)
    assert checks["itl-request-count"]["met"] is False
    assert checks["itl-output-tokens"]["evidence"] == short
    assert checks["itl-request-count"]["evidence"] == (
        "per-request ITL statistics from 80 requests (1590000 ITL samples); the draft asks for "
        "at least 100"
    )


def test_a_dataset_workload_must_declare_its_provenance() -> None:
    report = full_report()
    spec = report["run"]["workload"]["spec"]
    spec["dataset"] = {"path": "sharegpt.json", "sha256": "ab12", "filters": {"min_tokens": 4}}
    check = checks_by_id(report)["dataset-provenance"]
    assert check["met"] is False
    assert check["evidence"] == (
        "declared: dataset sharegpt.json: version (sha256) ab12; selection not declared; "
        "preprocessing/filters {'min_tokens': 4}"
    )
    spec["dataset"]["selection"] = "seeded shuffle of the kept pairs"
    assert checks_by_id(report)["dataset-provenance"]["met"] is True


def test_configuration_summary_of_a_full_report() -> None:
    config = configuration_summary(full_report())
    assert list(config) == list(CONFIGURATION_LABELS)
    assert config == {
        "sut_boundary": "Model Engine (draft 4.1.1)",
        "target": "http://127.0.0.1:8000 (loopback)",
        "model": "tiny",
        "hardware": "1x H100 80 GB",
        "software": "vLLM 0.32.0",
        "load_generator": "otelbench 0.1.0 on AMD EPYC (2 cores)",
        "workload": (
            "synthetic-uniform: draft A.1, input uniform 128–512 tokens, output uniform 64–256 "
            "tokens (max_tokens), no prefix sharing, no system prompt"
        ),
        "seed": "42 (workload generation and arrival schedule)",
        "tokenizer": (
            "Option B (reference), cl100k_base, vocabulary 100256, source tiktoken, BOS/EOS "
            "excluded from counts, system prompt counted separately"
        ),
        "load_model": "open-loop, poisson arrivals at 2.0 req/s (draft 4.2.3)",
        "requests": "10000 measured requests (10000 succeeded, 0 failed); 10000 TTFT samples",
        "duration": "5000.0 s (run); measurement window 4999.50 s",
        "warmup": (
            "120 requests and 19200 output tokens in 31.2 s at concurrency 8, queue drained; "
            "probes stabilized, variation 4.0% (draft 4.5)"
        ),
        "prefix_caching": "disabled",
        "guardrails": (
            "none in the measured path: the Model Engine boundary excludes input and output "
            "safety filtering (draft 4.1.1)"
        ),
        "timing_method": (
            "client: arrival time of every content chunk (HTTP/1.1 Server-Sent Events "
            "(OpenAI-compatible streaming)) on the load generator's monotonic clock at µs "
            "resolution; ITL by Option B (distributed timing, draft 4.6.3), time between chunks "
            "as Option A; server: Option C, per-token engine-step timing from 10000 engine-hook "
            "spans (10000 requests joined)"
        ),
        "clock_synchronization": (
            "single host (draft 4.7.1): the target 127.0.0.1 is loopback, so the load generator "
            "and the SUT read the same CLOCK_MONOTONIC and CLOCK_REALTIME"
        ),
    }


def test_a_report_that_declared_nothing_is_not_compliant() -> None:
    """What a run always records (its request counts, duration and warm-up, none here, and the
    timing method) is all the configuration summary has of it."""
    config = configuration_summary(declared_nothing())
    assert [k for k, v in config.items() if v != NOT_DECLARED] == [
        "requests",
        "duration",
        "warmup",
        "timing_method",
        "clock_synchronization",
    ]
    assert config["warmup"] == "none: no warm-up ran before measurement"
    assert config["clock_synchronization"].startswith("not verified: the target host is not")
    result = compliance(declared_nothing())
    assert result["verdict"] == VERDICT_NOT_COMPLIANT
    assert "sut-boundary-declared" in result["unmet_must"]


def test_compliance_is_pure_and_ignores_its_own_keys() -> None:
    report = full_report()
    before = copy.deepcopy(report)
    first = compliance(report)
    assert report == before
    report["configuration"] = {"sut_boundary": "something else"}
    report["compliance"] = {"verdict": VERDICT_NOT_COMPLIANT}
    assert compliance(report) == first
    assert configuration_summary(report) == configuration_summary(before)


# --- in a built report and its Markdown ------------------------------------------------------

SCENARIO_UNMET_MUST = [
    "load-generator-requirements",
    "timing-resolution",
    "open-loop-isolation",
    "synthetic-uniform-model-engine",
    "tokenizer-specified",
    "special-tokens",
    "warmup",
    "ttft-parameters-defined",
    "ttft-request-count",
    "ttft-poisson",
    "ttft-report-includes",
    "itl-output-tokens",
]
SCENARIO_UNMET_SHOULD = [
    "timing-resolution-us",
    "warmup-verified",
    "grpc-model-engine",
    "itl-option-c",
    "itl-workload",
    "itl-load-levels",
    "itl-request-count",
]
"""The scenario's (tests/unit/query/spanstore.py): a loopback Model Engine, 4 requests of
synthetic-uniform with short outputs, no warm-up, nothing declared but the boundary; its manifest
predates the client's health and the sent lengths, and 3 gaps cannot show an arrival
distribution: each of those is not met for want of evidence."""


def test_a_built_report_carries_configuration_and_compliance(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    assert list(report)[-2:] == ["configuration", "compliance"]
    assert report["configuration"] == configuration_summary(report)
    assert report["compliance"] == compliance(report)
    c = report["compliance"]
    assert c["verdict"] == VERDICT_NOT_COMPLIANT
    assert c["unmet_must"] == SCENARIO_UNMET_MUST
    assert c["unmet_should"] == SCENARIO_UNMET_SHOULD
    checks = {check["id"]: check for check in c["checks"]}
    # the facts of the scenario (tests/unit/query/spanstore.py)
    assert checks["request-status"]["evidence"] == "4 requests: 3 succeeded, 1 failed (504: 1)"
    assert checks["sample-count-p99"]["evidence"] == (
        "4 requests, 3 TTFT samples; P99 needs at least 1000"
    )
    assert checks["itl-output-tokens"]["evidence"] == (
        "3 of 3 successful requests generated fewer than 50 output tokens, the minimum for ITL "
        "statistics (5.4.2)"
    )
    assert checks["open-loop-isolation"]["evidence"] == (
        "open-loop poisson run with no schedule lag recorded: isolation not shown"
    )
    assert checks["timing-resolution"]["evidence"] == (
        "no evidence: the run recorded no load-generator clock or event-loop timing "
        "(run.client_health is absent)"
    )
    assert checks["poisson-arrivals"]["evidence"] == (
        "no evidence: 3 gaps between sent requests (run.sent.arrivals), too few to test (at "
        "least 20); configured: poisson"
    )
    assert report["configuration"]["prefix_caching"] == NOT_DECLARED
    assert render_json(report) == render_json(build_report(scenario_store))


def test_markdown_renders_the_summary_and_the_verdict(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    md = render_markdown(report)
    config = section(md, "## Configuration summary (draft 5.1.5.1)")
    assert "| Item | Value |\n|---|---|\n" in config
    assert "| SUT configuration and boundary (4.1) | Model Engine (draft 4.1.1) |\n" in config
    assert "| Prefix caching | not declared |\n" in config
    table = section(md, "## Methodology Compliance")
    assert (
        "**Verdict: not compliant** (draft 2; the lowest of the verdicts of the tests this "
        "report stands for: 5.1 (Time to First Token), 5.4 (Inter-Token Latency "
        "Distribution)).\n"
    ) in table
    t51 = next(t for t in report["compliance"]["tests"] if t["test"] == "5.1")
    must = t51["counts"]["MUST"]
    assert (
        f"| 5.1 Time to First Token | **not compliant** | {must['met']} met, {must['unmet']} not "
        f"met, {must['not_applicable']} n/a |"
    ) in table
    assert "### 5.1 Time to First Token: not compliant\n" in table
    assert "| Not met | Section | Keyword | Evidence |\n" in table
    assert (
        "| `ttft-request-count`: MUST be at least 1000 for P99 measurement, 10000 for P99.9. | "
        "5.1.2.1 | MUST | sample-count-p99: 4 requests, 3 TTFT samples; P99 needs at least "
        "1000; sample-count-p99-9: 4 requests, 3 TTFT samples; P99.9 needs at least 10000 |\n"
    ) in table
    assert "| Check | Section | Level | Met | Evidence |\n|---|---|---|---|---|\n" in table
    assert (
        "| `sut-boundary`: The SUT boundary MUST be declared. | 4.1 | MUST | ✓ | "
        "declared: run.sut.boundary Model Engine (draft 4.1.1) |\n"
    ) in table
    assert "| `warmup-verified`: " in table
    assert (
        "| 4.5.2 | SHOULD | ✗ | no evidence: no probe latency before and after a warm-up "
        "(run.warmup) |\n"
    ) in table
    assert '| 4.7 | MUST | n/a | not applicable: 4.7.2: "When load generator and SUT' in table
    assert md.index("## Methodology\n") < md.index("## Configuration summary")
    assert md.index("## Configuration summary") < md.index("## Methodology Compliance")


def test_markdown_of_an_unconditionally_compliant_report(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    gateway = gateway_report()
    report["configuration"] = configuration_summary(gateway)
    report["compliance"] = compliance(gateway)
    md = render_markdown(report)
    assert (
        "| 5.1 Time to First Token | **unconditionally compliant** | 34 met, 0 not met, 5 n/a "
        "| 13 met, 0 not met, 4 n/a |\n"
    ) in md
    assert "### 5.1 Time to First Token: unconditionally compliant\n\nEvery applicable " in md
    assert "### 5.4 Inter-Token Latency Distribution: conditionally compliant\n" in md


def test_markdown_cells_escape_pipes(scenario_store: Path) -> None:
    report = build_report(scenario_store)
    report["configuration"] = dict(report["configuration"], model="a|b\nc")
    assert "| Model | a\\|b c |\n" in render_markdown(report)
