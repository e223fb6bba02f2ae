"""Every compliance check can pass and can fail (draft 2's verdict is only as good as its checks).

For each check of :data:`~otelbench.report.compliance.REQUIREMENTS` (one run's report) and
:data:`~otelbench.report.compliance.PROCEDURE_REQUIREMENTS` (a whole test: a procedure or a
comparison), :data:`RUN_CASES` and :data:`PROCEDURE_CASES` hold one set of facts that meets it and
one that does not, each a small change of the hand-built reports of ``test_compliance``; a test
fails when a check has no case, so a new check comes with both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from otelbench.model.conform import conforms
from otelbench.model.report import ReportBody
from otelbench.report.compliance import (
    PROCEDURE_REQUIREMENTS,
    REQUIREMENTS,
    ProcedureFacts,
)
from otelbench.report.configuration import ReportFacts
from tests.unit.report.test_compliance import full_report, gateway_report, input_bucket

Report = dict[str, Any]
Mutate = Callable[[Report], None]

SHORT_OUTPUTS = (
    "3 of 80 successful requests generated fewer than 50 output tokens, the minimum for ITL "
    "statistics (5.4.2)"
)


def _walk(report: Report, path: str) -> tuple[dict[str, Any], str]:
    *parents, leaf = path.split(".")
    node = report
    for key in parents:
        node = node[key]
    return node, leaf


def put(path: str, value: Any) -> Mutate:
    def mutate(report: Report) -> None:
        node, leaf = _walk(report, path)
        node[leaf] = copy.deepcopy(value)

    return mutate


def drop(path: str) -> Mutate:
    def mutate(report: Report) -> None:
        node, leaf = _walk(report, path)
        del node[leaf]

    return mutate


def both(*steps: Mutate) -> Mutate:
    def mutate(report: Report) -> None:
        for step in steps:
            step(report)

    return mutate


def keep(report: Report) -> None:
    """No change: the base report meets the check."""


def workload(section: str) -> Mutate:
    return put("run.workload.spec.draft_section", section)


REMOTE = put("run.target", "http://gpu-node-1:8000")
PREFIX_CACHED = both(
    put("run.sut.prefix_caching", "enabled"),
    put("run.workload.spec.system_prompt", {"tokens": 200, "share": 0.5, "shared_prefix": True}),
)
"""Prefix caching enabled and a workload that shares a prefix: 4.5.1 item 4 applies."""
REPOSITORY_CONTEXTS = both(
    workload("A.4"),
    put("run.sent.prompt_tokens", {"count": 10_000, "min": 530, "max": 2040, "mean": 900.0,
                                   "p50": 880}),
)  # fmt: skip
LONG_CONTEXT = both(
    workload("A.5"),
    put("run.sent.prompt_tokens", {"count": 160, "min": 1024, "max": 16384, "mean": 6000.0,
                                   "p50": 4096}),
    put("run.sent.max_tokens", {"count": 160, "min": 256, "max": 256, "mean": 256.0, "p50": 256}),
)  # fmt: skip
COLD = both(
    put(
        "run.warmup",
        {"mode": "cold_start", "skipped": True, "reason": "--cold-start", "deviations": []},
    ),
    put("run.cold_start", True),
)

RUN_CASES: dict[str, tuple[Callable[[], Report], Mutate, Mutate]] = {
    "sut-boundary": (full_report, keep, drop("run.sut.boundary")),
    "timing-resolution": (full_report, keep, put("run.client_health", None)),
    "timing-resolution-us": (
        full_report, keep, put("run.client_health.clock.resolution_ns", 1_000_000.0)
    ),
    "streaming-per-chunk": (full_report, keep, put("metrics.client.tokens_per_chunk.count", 0)),
    "open-loop-isolation": (
        full_report, keep, put("run.load_generator", None)
    ),
    "request-timestamps": (full_report, keep, put("metrics.client.e2e_ms.count", 9_000)),
    "request-status": (full_report, keep, put("run.requests.failed", 3)),
    "token-counts": (full_report, keep, put("metrics.client.throughput.output_tokens", 0)),
    "workload-input": (full_report, keep, drop("run.workload.spec.input.unit")),
    "workload-output": (full_report, keep, drop("run.workload.spec.output.control")),
    "workload-content": (full_report, keep, drop("run.workload.spec.system_prompt")),
    "workload-prefix-sharing": (
        full_report, keep, put("run.workload.spec.prefix_sharing", {"ratio": 0.5})
    ),
    "dataset-provenance": (
        full_report,
        put(
            "run.workload.spec.dataset",
            {"path": "a.json", "sha256": "ab12", "selection": "first 500", "filters": {}},
        ),
        put("run.workload.spec.dataset", {"path": "a.json", "sha256": "ab12"}),
    ),
    "seed-reported": (full_report, keep, put("run.seed", None)),
    "request-sequence-reproducible": (full_report, keep, put("run.otelbench_version", None)),
    "tokenizer-spec": (full_report, keep, drop("run.tokenizer.version")),
    "token-counting-option": (full_report, keep, put("run.tokenizer", None)),
    "special-tokens": (full_report, keep, drop("run.tokenizer.bos_eos")),
    "warmup": (full_report, keep, put("run.phases.warmup.succeeded", 20)),
    "warmup-model-loaded": (full_report, keep, put("run.phases.probe.succeeded", 0)),
    "warmup-drained": (
        full_report, keep, put("run.phases.probe.ended_after_measurement_start", 1)
    ),
    "warmup-cache-populated": (
        full_report,
        both(PREFIX_CACHED, put("run.phases.warmup.cached_tokens", 6_000)),
        PREFIX_CACHED,
    ),
    "warmup-verified": (
        full_report, keep, put("run.warmup.probe_after.latency_ms", [800.0, 1000.0, 790.0])
    ),
    "chunking-declared": (
        full_report,
        keep,
        put("methodology.itl_method.chunk_token_sources", {"usage": 9_000, "one_per_chunk": 1_000}),
    ),
    "itl-method": (full_report, keep, put("methodology.itl_method.option", "D")),
    "itl-option-c": (full_report, keep, drop("metrics.server.itl_ms")),
    "clock-sync": (
        full_report,
        both(REMOTE, put("run.sut.clock_sync", {"method": "chrony (NTP)", "accuracy_ms": 2})),
        REMOTE,
    ),
    "clock-sync-accuracy": (
        full_report,
        both(REMOTE, put("run.sut.clock_sync", {"method": "chrony (NTP)", "accuracy_ms": 2})),
        both(REMOTE, put("run.sut.clock_sync", {"method": "chrony (NTP)", "accuracy_ms": 20})),
    ),
    "clock-sync-ptp": (
        full_report,
        both(REMOTE, put("run.sut.clock_sync", {"method": "linuxptp", "accuracy_ms": 0.05})),
        both(REMOTE, put("run.sut.clock_sync", {"method": "chrony", "accuracy_ms": 0.5})),
    ),
    "single-host": (full_report, keep, REMOTE),
    "network-rtt": (full_report, both(REMOTE, put("run.sut.network_rtt_ms", 0.3)), REMOTE),
    "guardrail-disclosure": (full_report, keep, drop("run.sut.boundary")),
    "first-token-definition": (
        full_report, keep, put("metrics.client.first_content_token.first_event_recorded", 9_990)
    ),
    "ttft-percentiles": (full_report, keep, put("metrics.client.ttft_ms.p99_9", None)),
    "sample-count-stated": (full_report, keep, put("metrics.client.ttft_ms.count", 0)),
    "sample-count-p99": (full_report, keep, put("metrics.client.ttft_ms.count", 999)),
    "sample-count-p99-9": (full_report, keep, put("metrics.client.ttft_ms.count", 9_999)),
    "itl-output-tokens": (full_report, keep, put("methodology.deviations", [SHORT_OUTPUTS])),
    "itl-request-count": (
        full_report, keep, put("metrics.client.itl_per_request.max_pause_ms.count", 80)
    ),
    "configuration-summary": (full_report, keep, drop("run.sut.prefix_caching")),
    "model-identifier": (full_report, keep, drop("run.sut.model_version")),
    "poisson-arrivals": (full_report, keep, put("run.sent.arrivals.ks_p_value", 0.001)),
    "open-loop": (full_report, keep, put("run.load.mode", "closed_loop")),
    "cold-start": (
        full_report, both(COLD, drop("run.phases.warmup"), drop("run.phases.probe")), COLD
    ),
    "ttft-input-buckets": (
        full_report, keep, put("metrics.client.ttft_by_input_tokens", [input_bucket("0-1000", 0)])
    ),
    "level-duration": (full_report, keep, put("run.duration_s", 120.0)),
    "sse-protocol": (
        gateway_report, keep, put("methodology.itl_method.protocol", "WebSocket")
    ),
    "grpc-protocol": (
        full_report, put("methodology.itl_method.protocol", "gRPC streaming"), keep
    ),
    "model-engine-workload": (full_report, keep, put("run.sent.prompt_tokens.min", 8)),
    "gateway-workload": (gateway_report, keep, drop("run.workload.spec.dataset")),
    "itl-workload": (full_report, keep, workload("A.2")),
    "capacity-workload": (full_report, keep, put("run.sent.max_tokens.max", 1024)),
    "fairness-workload": (full_report, workload("A.2"), keep),
    "prefix-cache-workload": (full_report, REPOSITORY_CONTEXTS, workload("A.4")),
    "memory-pressure-workload": (full_report, LONG_CONTEXT, workload("A.5")),
    "long-context-workload": (
        full_report, LONG_CONTEXT, both(LONG_CONTEXT, put("run.sent.max_tokens.min", 64))
    ),
    "guardrail-overhead-workload": (gateway_report, keep, workload("A.1")),
    "guardrails-production": (
        gateway_report, keep, put("run.sut.guardrails.default_configuration", False)
    ),
    "guardrails-disabled-noted": (gateway_report, keep, drop("run.sut.guardrails")),
    "guardrails-comparative": (
        gateway_report, keep, drop("run.sut.guardrails.comparative_run")
    ),
}  # fmt: skip


def classes(**counts: int) -> dict[str, Any]:
    """``metrics.classes`` of a run with ``counts`` successful requests by class."""
    row = {"count": 0, "p50": 100.0, "p95": 150.0, "p99": 200.0}
    return {
        "reference": "short",
        "jain_index": 0.9,
        "jain_requests": sum(counts.values()),
        "starvation_factor": 5.0,
        "requests_without_class": 0,
        "by_class": {
            name: {
                "count": n,
                **{m: {**row, "count": n} for m in ("ttft_ms", "tpot_ms", "e2e_ms", "itl_ms")},
                "starvation_rate": 0.0,
            }
            for name, n in counts.items()
        },
    }


NONCONFORMING: frozenset[str] = frozenset({"itl-method", "workload-prefix-sharing"})
"""The checks whose failing case is a report the report's types rule out (``itl-method``: an
ITL option otelbench never writes, so only another producer's report can fail it;
``workload-prefix-sharing``: a prefix sharing without its length, which otelbench's workloads
always declare)."""


EQUAL = [
    {"item": k, "label": k, "status": "equal"}
    for k in ("workload", "seed", "sut_boundary", "hardware", "load_model")
]


def _levels(n: int) -> list[dict[str, Any]]:
    return [{"label": f"{10 * (i + 1)}%", "report": f"levels/{i:02}/report.json"} for i in range(n)]


def _cache_table(cached: int) -> list[dict[str, Any]]:
    return [
        {"role": "disabled", "cache_hit_rate": cached / 10_000, "cached_tokens": cached},
        {"role": "cold", "cache_hit_rate": 0.6, "cached_tokens": 6_000},
    ]


CACHE_CONFIGURED = {
    "configuration": {"configurations": {"disabled": {}, "enabled": {}}},
    "levels": [
        {"label": "cache disabled", "report": "levels/00/report.json"},
        {"label": "cache (cold)", "report": "levels/01/report.json"},
    ],
}
OPEN_RANGE = {"load_model": "open-loop", "min_rps": 1.0, "max_rps": 12.0, "rate_step": 0.5}

PROCEDURE_CASES: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
    "itl-load-levels": ({"levels": [{"label": "25%"}, {"label": "50%"}]}, None),
    "fairness-load-level": (
        {"parameters": {"rate": 8.0, "saturation_rps": 10.0}},
        {"parameters": {"rate": 8.0}},
    ),
    "fairness-class-requests": ({"levels": _levels(2)}, {"levels": _levels(2)}),
    "level-min-duration": ({"levels": _levels(2)}, {"levels": _levels(2)}),
    "tradeoff-load-levels": ({"levels": _levels(10)}, {"levels": _levels(9)}),
    "search-range": (
        {"parameters": OPEN_RANGE},
        {"parameters": {**OPEN_RANGE, "rate_step": None}},
    ),
    "prefix-cache-configurations": (
        {**CACHE_CONFIGURED, "table": _cache_table(0)},
        # a "disabled" cache that served 1,200 prefix tokens was not disabled
        {**CACHE_CONFIGURED, "table": _cache_table(1_200)},
    ),
    "equivalence": (
        {"checklist": EQUAL},
        {"checklist": [dict(EQUAL[0], status="differs"), *EQUAL[1:]]},
    ),
    "reference-tokenizer": ({"checklist": EQUAL}, {"checklist": EQUAL, "tokenizer": "A"}),
}
"""procedure.json (or compare.json) that meets the check, and one that does not; for
``reference-tokenizer`` the failing case's runs count tokens natively (Option A); the checks of
:data:`PROCEDURE_RUNS` judge the runs too."""

PROCEDURE_RUNS: dict[str, tuple[Mutate, Mutate]] = {
    "fairness-class-requests": (
        put("metrics.classes", classes(short=800, long=520)),
        put("metrics.classes", classes(short=800, long=200)),
    ),
    "level-min-duration": (put("run.duration_s", 61.5), put("run.duration_s", 45.0)),
}
"""How the two runs of :data:`PROCEDURE_CASES` differ where a check reads the runs: the meeting
case's and the failing case's."""


def test_every_check_has_a_passing_and_a_failing_case() -> None:
    assert sorted(RUN_CASES) == sorted(r.id for r in REQUIREMENTS)
    assert sorted(PROCEDURE_CASES) == sorted(r.id for r in PROCEDURE_REQUIREMENTS)


@pytest.mark.parametrize("check_id", list(RUN_CASES))
def test_a_run_check_passes_and_fails(check_id: str) -> None:
    requirement = next(r for r in REQUIREMENTS if r.id == check_id)
    base, meet, miss = RUN_CASES[check_id]
    met, unmet = base(), base()
    meet(met)
    miss(unmet)
    assert conforms(met, ReportBody) == []
    assert conforms(unmet, ReportBody) == [] or check_id in NONCONFORMING
    passed = requirement.check(ReportFacts(met))
    failed = requirement.check(ReportFacts(unmet))
    assert passed["met"] is True, passed["evidence"]
    assert failed["met"] is False, failed["evidence"]
    assert passed["evidence"] != failed["evidence"]


def _test_facts(runs: tuple[ReportFacts, ...], given: dict[str, Any] | None) -> ProcedureFacts:
    """A test's facts: ``given`` is compare.json where it has a checklist, else procedure.json."""
    if given is not None and "checklist" in given:
        return ProcedureFacts(runs, comparison=given)
    return ProcedureFacts(runs, given)


@pytest.mark.parametrize("check_id", list(PROCEDURE_CASES))
def test_a_procedure_check_passes_and_fails(check_id: str) -> None:
    requirement = next(r for r in PROCEDURE_REQUIREMENTS if r.id == check_id)
    meeting, missing = PROCEDURE_CASES[check_id]
    native = full_report()
    native["run"]["tokenizer"]["option"] = "A (native)"
    meet, miss = PROCEDURE_RUNS.get(check_id, (keep, keep))
    met, unmet = full_report(), full_report()
    meet(met)
    miss(unmet)
    assert conforms(met, ReportBody) == conforms(unmet, ReportBody) == []
    runs = (ReportFacts(met), ReportFacts(met))
    failing_runs = (
        (ReportFacts(native),)
        if missing and missing.get("tokenizer")
        else (ReportFacts(met), ReportFacts(unmet))
    )
    passed = requirement.check(_test_facts(runs, meeting))
    failed = requirement.check(_test_facts(failing_runs, missing))
    assert passed["met"] is True, passed["evidence"]
    assert failed["met"] is False, failed["evidence"]


def test_hardware_that_differs_is_equivalent_once_normalized_per_gpu() -> None:
    """Draft 6.1: comparable hardware, or normalized by hardware capability (6.2)."""
    requirement = next(r for r in PROCEDURE_REQUIREMENTS if r.id == "equivalence")
    checklist = [dict(c, status="differs") if c["item"] == "hardware" else c for c in EQUAL]
    comparison: dict[str, Any] = {"checklist": checklist}
    result = requirement.check(ProcedureFacts((), comparison=comparison))
    assert (result["met"], result["evidence"]) == (False, "not equivalent: hardware differs")
    comparison["normalization"] = {
        "systems": {"a": {"status": "normalized: 1 GPU"}, "b": {"status": "normalized: 2 GPUs"}}
    }
    result = requirement.check(ProcedureFacts((), comparison=comparison))
    assert result["met"] is True
    assert "hardware: differs, normalized per GPU (6.2)" in result["evidence"]
