"""The report's methodology compliance (draft 2).

A pure function of the report dict (``docs/report-schema.md``), so a report rebuilt from the same
store (``otelbench report``) recomputes it identically; the configuration summary (5.1.5.1) it
checks is :mod:`otelbench.report.configuration`'s (re-exported here):

* :func:`compliance` — one check per MUST or SHOULD requirement of the draft that a single run at
  one load level can satisfy or fail (test setup, section 4; the TTFT test's and the ITL test's
  single-run requirements, 5.1 and 5.4), each with the facts of the report as evidence, and the
  verdict of draft section 2:

  ====================================  ===================================================
  verdict                               rule
  ====================================  ===================================================
  ``unconditionally compliant``         every applicable MUST and SHOULD check is met
  ``conditionally compliant``           every applicable MUST is met, some SHOULD is not
  ``not compliant``                     some MUST is not met
  ====================================  ===================================================

  A check whose requirement does not apply to the run (a closed loop has no open-loop isolation
  to show) has ``met`` = None and does not count. Requirements without a BCP 14 keyword that the
  report already treats as thresholds (5.4.2's 100 requests) are SHOULD, and say so.

The checks are registered in :data:`REQUIREMENTS`, in report order. A check reads the report's
facts only: what the run declared (``run``), measured (``metrics``) and declared about its
method (``methodology``); it never reads ``configuration`` or ``compliance`` themselves.

Usage::

    from otelbench.report import build_report
    from otelbench.report.compliance import compliance
    from otelbench.report.configuration import configuration_summary

    report = build_report("otelbench.duckdb")
    configuration_summary(report)["sut_boundary"]   # 'Model Engine (draft 4.1.1)'
    compliance(report)["verdict"]                   # 'not compliant'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from otelbench import semconv
from otelbench.draft import (
    ITL_MIN_OUTPUT_TOKENS,
    ITL_MIN_REQUESTS,
    P99_9_MIN_SAMPLES,
    P99_MIN_SAMPLES,
    WARMUP_MIN_OUTPUT_TOKENS,
    WARMUP_MIN_REQUESTS,
    WARMUP_STABILIZATION_THRESHOLD,
)
from otelbench.report.access import fmt, integer, mapping, nonblank, number
from otelbench.report.configuration import (
    CONFIGURATION_LABELS,
    NOT_DECLARED,
    ReportFacts,
    boundary_text,
    clock_text,
    configuration_summary,
    declared_text,
    guardrails_text,
    tokenizer_text,
    warmup_text,
    workload_text,
)
from otelbench.report.sections import GENERATOR_BOTTLENECK_DEVIATION

__all__ = [
    "CONFIGURATION_LABELS",
    "NOT_DECLARED",
    "REQUIREMENTS",
    "VERDICT_CONDITIONAL",
    "VERDICT_NOT_COMPLIANT",
    "VERDICT_UNCONDITIONAL",
    "Requirement",
    "compliance",
    "configuration_summary",
]

Level = Literal["MUST", "SHOULD"]
Met = bool | None


VERDICT_UNCONDITIONAL: Final = "unconditionally compliant"
VERDICT_CONDITIONAL: Final = "conditionally compliant"
VERDICT_NOT_COMPLIANT: Final = "not compliant"


SCOPE: Final = (
    "one run at one load level: the draft's test setup requirements (section 4) and the "
    "single-run requirements of the TTFT test (5.1) and the ITL distribution test (5.4); the "
    "load-sweep tests (5.2, 5.3, 5.5), multi-run comparisons (6) and renderer-only items (plots, "
    "5.1.5.4) are out of scope"
)
VERDICT_RULE: Final = (
    "draft 2: not compliant when any MUST is not met; conditionally compliant when every MUST "
    "is met but not every SHOULD; unconditionally compliant when every MUST and SHOULD is met. "
    "Checks that do not apply (met null) do not count."
)


OPEN_LOOP_MODES: Final = frozenset({"poisson", "uniform", "bursty", "trace"})
_PERCENTILES: Final = (("p50", "P50"), ("p90", "P90"), ("p95", "P95"), ("p99", "P99"))
CONTENDED_WAIT_SHARE: Final = 0.05
"""A loop thread waiting for a core this share of the time or more (or the host stealing this
share of the CPU time): other processes held the cores."""
_SHORT_OUTPUT_MARKER: Final = "output tokens, the minimum for ITL statistics"
"""How the report's deviation for requests under 5.4.2's output-token minimum reads."""


# ------------------------------------------------------------------------------------------
# compliance checks (draft 2): registered, in report order
# ------------------------------------------------------------------------------------------

Evaluate = Callable[[ReportFacts], tuple[Met, str]]


@dataclass(frozen=True)
class Requirement:
    """One requirement of the draft: where it is, its level, what it asks, how it is checked."""

    id: str
    section: str
    level: Level
    text: str
    evaluate: Evaluate

    def check(self, facts: ReportFacts) -> dict[str, Any]:
        met, evidence = self.evaluate(facts)
        return {
            "id": self.id,
            "section": self.section,
            "level": self.level,
            "requirement": self.text,
            "met": met,
            "evidence": evidence,
        }


REQUIREMENTS: list[Requirement] = []
"""Every check, in the order the report lists them."""


def _requirement(id: str, section: str, level: Level, text: str) -> Callable[[Evaluate], Evaluate]:
    def register(evaluate: Evaluate) -> Evaluate:
        REQUIREMENTS.append(Requirement(id, section, level, text, evaluate))
        return evaluate

    return register


@_requirement("sut-boundary", "4.1", "MUST", "The SUT boundary MUST be declared.")
def _sut_boundary(f: ReportFacts) -> tuple[Met, str]:
    boundary = boundary_text(f)
    if boundary is None:
        return False, "no SUT boundary declared (run.sut.boundary is absent; --sut-boundary)"
    return True, f"run.sut.boundary: {boundary}"


def _client_clock(f: ReportFacts) -> str | None:
    clock = nonblank(mapping(f.methodology.get("clock_domains")).get("client"))
    if clock is None or "monotonic" not in clock or "µs" not in clock:
        return None
    return clock


@_requirement(
    "timing-resolution",
    "4.2.1",
    "MUST",
    "The load generator MUST measure time with a resolution of 1 ms or better.",
)
def _timing_resolution(f: ReportFacts) -> tuple[Met, str]:
    if _client_clock(f) is None:
        return False, "the report does not declare the client clock (methodology.clock_domains)"
    clock = "client times are integer µs offsets on the load generator's monotonic clock"
    late, health = _loop_lateness(f)
    return not late, f"{clock}; {health}" if health else clock


def _loop_lateness(f: ReportFacts) -> tuple[bool, str | None]:
    """Whether the load generator's event loops ran too late to time to 1 ms (loop lateness P99
    over ``run.client_health``'s limit), with the evidence and what to do; (False, None) when
    the run did not measure it."""
    health = mapping(f.run.get("client_health"))
    lateness = mapping(health.get("loop_lateness_ms"))
    p99, limit = number(lateness.get("p99")), number(health.get("limit_ms"))
    if p99 is None or limit is None:
        return False, None
    cpus = [mapping(mapping(w).get("cpu")) for w in health.get("workers") or []]
    busiest = max((number(c.get("utilization")) or 0.0 for c in cpus), default=0.0)
    waited = max((number(c.get("runqueue_wait_share")) or 0.0 for c in cpus), default=0.0)
    stolen = max((number(c.get("host_steal_share")) or 0.0 for c in cpus), default=0.0)
    evidence = (
        f"event-loop lateness over {len(cpus)} worker(s): P50 "
        f"{fmt(number(lateness.get('p50')), 3, 'ms')}, P99 {fmt(p99, 3, 'ms')}, max "
        f"{fmt(number(lateness.get('max')), 3, 'ms')}; busiest worker's CPU {busiest:.0%} of a "
        f"core, longest wait for a core {waited:.0%} of the time"
        + (f", {stolen:.0%} of the CPU time taken by the host (steal)" if stolen >= 0.005 else "")
        + _read_delay(health)
    )
    if p99 <= limit:
        return False, f"{evidence} (P99 within {limit:g} ms)"
    advice = [f"run more load-generator workers (e.g. --workers {2 * len(cpus)})"]
    if waited >= CONTENDED_WAIT_SHARE or stolen >= CONTENDED_WAIT_SHARE:
        advice.append(
            "other processes kept the load generator waiting for a core: quiet the host or "
            "give the load generator cores of its own"
        )
    return True, f"{evidence}: P99 over {limit:g} ms, chunk times were taken late; " + "; ".join(
        advice
    )


def _read_delay(health: Mapping[str, Any]) -> str:
    reads = mapping(health.get("read_delay_ms"))
    if not integer(reads.get("count")):
        return ""
    return (
        f"; data waited in the kernel before being read P99 "
        f"{fmt(number(reads.get('p99')), 3, 'ms')}, max {fmt(number(reads.get('max')), 3, 'ms')}"
    )


@_requirement(
    "timing-resolution-us",
    "4.2.1",
    "SHOULD",
    "Microsecond resolution is RECOMMENDED for ITL measurement.",
)
def _timing_resolution_us(f: ReportFacts) -> tuple[Met, str]:
    if _client_clock(f) is None:
        return False, "the report does not declare a µs client clock (methodology.clock_domains)"
    return True, "chunk arrival offsets, and so ITL, are recorded in µs"


@_requirement(
    "streaming-per-chunk",
    "4.2.2",
    "MUST",
    "The load generator MUST use a streaming protocol and record the arrival time of each "
    "token or chunk, not only the complete response.",
)
def _streaming(f: ReportFacts) -> tuple[Met, str]:
    protocol = nonblank(f.itl_method.get("protocol"))
    chunks = integer(mapping(f.client.get("tokens_per_chunk")).get("count"))
    if not f.succeeded:
        return None, "no successful request: nothing was streamed"
    if protocol is None or not chunks:
        return False, (
            f"protocol {protocol or 'not declared'}; {chunks or 0} content chunk arrival times "
            f"for {f.succeeded} successful requests"
        )
    return True, (
        f"{protocol}; arrival times of {chunks} content chunks of {f.succeeded} successful "
        "requests recorded"
    )


@_requirement(
    "open-loop-isolation",
    "4.2.5",
    "MUST",
    "In open-loop mode, slow responses MUST NOT delay the submission of later requests.",
)
def _open_loop_isolation(f: ReportFacts) -> tuple[Met, str]:
    mode = nonblank(f.load.get("mode"))
    if mode == "closed_loop":
        return None, "closed-loop run (draft 4.2.4): no arrival schedule to keep"
    if mode not in OPEN_LOOP_MODES:
        return False, f"load model {mode or 'not recorded'}: open-loop isolation not shown"
    gen = mapping(f.run.get("load_generator"))
    lag = mapping(gen.get("schedule_lag_ms"))
    if not lag:
        return False, f"open-loop {mode} run with no schedule lag recorded: isolation not shown"
    facts = (
        f"open-loop {mode}; schedule lag of {lag.get('count')} requests P50 "
        f"{fmt(number(lag.get('p50')), 2, 'ms')}, P99 {fmt(number(lag.get('p99')), 2, 'ms')}, max "
        f"{fmt(number(lag.get('max')), 2, 'ms')}"
    )
    if gen.get("generator_bottleneck_flagged"):
        flagged = next(
            (d for d in f.deviations if d.startswith(GENERATOR_BOTTLENECK_DEVIATION)),
            GENERATOR_BOTTLENECK_DEVIATION,
        )
        return False, f"{facts}; {flagged}"
    return True, f"{facts}; sends are scheduled independently of responses, not flagged"


@_requirement(
    "request-status",
    "4.2.6",
    "MUST",
    "The load generator MUST record each request's success or failure status.",
)
def _request_status(f: ReportFacts) -> tuple[Met, str]:
    r = f.requests
    total, ok, failed = (
        integer(r.get("total")),
        integer(r.get("succeeded")),
        integer(r.get("failed")),
    )
    by_type = mapping(r.get("failed_by_type"))
    if total is None or ok is None or failed is None:
        return False, "run.requests does not count successes and failures"
    types = ", ".join(f"{k}: {v}" for k, v in by_type.items())
    evidence = f"{total} requests: {ok} succeeded, {failed} failed" + (
        f" ({types})" if types else ""
    )
    if ok + failed != total or sum(v for v in by_type.values() if isinstance(v, int)) != failed:
        return False, f"{evidence}; the counts do not add up"
    return True, evidence


@_requirement(
    "token-counts",
    "4.2.6",
    "MUST",
    "The load generator MUST record each request's input and output token counts.",
)
def _token_counts(f: ReportFacts) -> tuple[Met, str]:
    if not f.succeeded:
        return None, "no successful request to count tokens of"
    buckets = f.client.get("ttft_by_input_tokens")
    with_input = sum(integer(b.get("count")) or 0 for b in buckets or [] if isinstance(b, Mapping))
    ttft = f.ttft_samples or 0
    output = integer(mapping(f.client.get("throughput")).get("output_tokens")) or 0
    evidence = (
        f"input token counts for {with_input} of {ttft} requests with a TTFT; "
        f"{output} output tokens counted over {f.succeeded} successful requests"
    )
    return (with_input == ttft and output > 0), evidence


@_requirement(
    "workload-spec",
    "4.3.1",
    "MUST",
    "The workload MUST be fully specified: input and output length distributions, content, "
    "prefix sharing.",
)
def _workload_spec(f: ReportFacts) -> tuple[Met, str]:
    spec = mapping(mapping(f.run.get("workload")).get("spec"))
    text = workload_text(f) or "no workload recorded"
    missing = [
        name
        for name, present in (
            ("input distribution", bool(mapping(spec.get("input")).get("distribution"))),
            ("output distribution", bool(mapping(spec.get("output")).get("distribution"))),
            ("content", bool(mapping(spec.get("input")).get("content") or spec.get("content"))),
            ("prefix sharing", "prefix_sharing" in spec),
        )
        if not present
    ]
    if missing:
        return False, f"{text}; the spec lacks: {', '.join(missing)}"
    return True, text


@_requirement(
    "dataset-provenance",
    "4.3.3",
    "MUST",
    "A dataset-derived workload MUST specify the dataset version, subset selection and "
    "preprocessing.",
)
def _dataset_provenance(f: ReportFacts) -> tuple[Met, str]:
    dataset = mapping(mapping(mapping(f.run.get("workload")).get("spec")).get("dataset"))
    if not dataset:
        return None, "the workload is not dataset-derived"
    version = dataset.get("sha256") or dataset.get("version")
    selection, filters = dataset.get("selection"), dataset.get("filters")
    evidence = (
        f"dataset {dataset.get('path', '?')}: version (sha256) {version or NOT_DECLARED}; "
        f"selection {selection or NOT_DECLARED}; preprocessing/filters "
        f"{filters if filters is not None else NOT_DECLARED}"
    )
    return bool(version and selection and filters is not None), evidence


@_requirement(
    "seed-reported",
    "4.3.3",
    "MUST",
    "Workload generation MUST use a deterministic random seed, and the seed MUST be reported.",
)
def _seed_reported(f: ReportFacts) -> tuple[Met, str]:
    seed = integer(f.run.get("seed"))
    if seed is None:
        return False, "no seed recorded (run.seed)"
    arrival = integer(mapping(f.load.get("arrival")).get("seed"))
    schedule = f", arrival schedule seed {arrival}" if arrival is not None else ""
    return True, f"run seed {seed}{schedule}"


@_requirement(
    "request-sequence-reproducible",
    "4.3.3",
    "SHOULD",
    "Testers SHOULD publish the exact request sequences or the generation code with fixed seeds.",
)
def _request_sequence(f: ReportFacts) -> tuple[Met, str]:
    seed = integer(f.run.get("seed"))
    version = nonblank(f.run.get("otelbench_version"))
    name = nonblank(mapping(f.run.get("workload")).get("name"))
    if seed is None or version is None or name is None:
        return False, (
            f"generator otelbench {version or '?'}, workload {name or '?'}, seed "
            f"{seed if seed is not None else '?'}: the request sequence cannot be regenerated"
        )
    return True, f"regenerable: otelbench {version} workload {name!r} with seed {seed}"


@_requirement(
    "tokenizer-spec",
    "4.4.1",
    "MUST",
    "The report MUST specify the tokenizer's name and version, vocabulary size and source.",
)
def _tokenizer_spec(f: ReportFacts) -> tuple[Met, str]:
    tok = mapping(f.run.get("tokenizer"))
    missing = [
        label
        for key, label in (
            ("name", "name"),
            ("vocab_size", "vocabulary size"),
            ("source", "source"),
        )
        if not tok.get(key)
    ]
    text = tokenizer_text(f) or "no tokenizer declared"
    if missing:
        return False, f"{text}; not declared: {', '.join(missing)} (declare with --tokenizer)"
    return True, text


@_requirement(
    "token-counting-option",
    "4.4.2",
    "MUST",
    "The report MUST declare the token counting method: Option A (native) or B (reference).",
)
def _token_counting(f: ReportFacts) -> tuple[Met, str]:
    option = nonblank(mapping(f.run.get("tokenizer")).get("option"))
    if option is None or option[0] not in "AB":
        return False, "no token counting option declared (run.tokenizer.option)"
    return True, f"Option {option}"


@_requirement(
    "special-tokens",
    "4.4.3",
    "MUST",
    "The report MUST specify the handling of BOS/EOS, system prompt and tool-call tokens.",
)
def _special_tokens(f: ReportFacts) -> tuple[Met, str]:
    tok = mapping(f.run.get("tokenizer"))
    fields = (
        ("bos_eos", "BOS/EOS"),
        ("system_prompt", "system prompt"),
        ("tool_call_formatting", "tool-call tokens"),
    )
    declared = [f"{label} {tok[key]}" for key, label in fields if tok.get(key)]
    missing = [label for key, label in fields if not tok.get(key)]
    if missing:
        have = f"{'; '.join(declared)}; " if declared else ""
        return False, f"{have}not declared: {', '.join(missing)}"
    return True, "; ".join(declared)


@_requirement(
    "warmup",
    "4.5.1",
    "MUST",
    f"Before measurement, testers MUST warm up with at least {WARMUP_MIN_REQUESTS} requests or "
    f"{WARMUP_MIN_OUTPUT_TOKENS:,} output tokens (whichever is greater) and drain the queue, "
    "or skip warm-up and declare a cold-start measurement (4.5.3).",
)
def _warmup(f: ReportFacts) -> tuple[Met, str]:
    w = mapping(f.run.get("warmup"))
    text = warmup_text(f)
    if w.get("mode") == "cold_start" or (not w and f.run.get("cold_start") is True):
        return True, text or "cold-start measurement declared"
    if w.get("mode") != "warm":
        return False, "no warm-up was run and no cold-start measurement was declared"
    requests = integer(w.get("requests")) or 0
    tokens = integer(w.get("output_tokens")) or 0
    met = (
        requests >= WARMUP_MIN_REQUESTS
        and tokens >= WARMUP_MIN_OUTPUT_TOKENS
        and w.get("drained") is not False
    )
    floors = (
        f"; the draft needs at least {WARMUP_MIN_REQUESTS} requests and "
        f"{WARMUP_MIN_OUTPUT_TOKENS} output tokens"
    )
    return met, f"{text}{'' if met else floors}"


@_requirement(
    "warmup-verified",
    "4.5.2",
    "SHOULD",
    "Warm-up completion SHOULD be verified: probe latency before and after, less than "
    f"{WARMUP_STABILIZATION_THRESHOLD:.0%} variation across consecutive probes.",
)
def _warmup_verified(f: ReportFacts) -> tuple[Met, str]:
    w = mapping(f.run.get("warmup"))
    if w.get("mode") == "cold_start" or (not w and f.run.get("cold_start") is True):
        return None, "cold-start measurement: no warm-up to verify"
    if w.get("mode") != "warm":
        return False, "no warm-up, so no verification"
    before, after = mapping(w.get("probe_before")), mapping(w.get("probe_after"))
    variation = number(after.get("variation"))
    evidence = (
        f"probe median latency {fmt(number(before.get('median_latency_ms')), 2, 'ms')} before, "
        f"{fmt(number(after.get('median_latency_ms')), 2, 'ms')} after; variation across "
        f"consecutive probes {'n/a' if variation is None else f'{variation:.1%}'}"
    )
    return bool(w.get("stabilized")), evidence + (
        ": stabilized" if w.get("stabilized") else ": NOT stabilized"
    )


@_requirement(
    "chunking-declared",
    "4.6.2",
    "MUST",
    "The report MUST specify the protocol, whether chunks carry one or several tokens, and "
    "how multi-token chunks are handled for ITL.",
)
def _chunking(f: ReportFacts) -> tuple[Met, str]:
    itl = f.itl_method
    protocol, option = nonblank(itl.get("protocol")), nonblank(itl.get("option"))
    tpc = mapping(f.client.get("tokens_per_chunk"))
    most = number(tpc.get("max"))
    if not integer(tpc.get("count")):
        chunks = "no content chunks"
    elif itl.get("chunk_token_source") == "one_per_chunk":
        chunks = "each chunk counted as one token (no per-chunk usage)"
    elif most is not None and most > 1:
        chunks = f"multi-token chunks (up to {most:.0f} tokens per chunk)"
    else:
        chunks = "one token per chunk"
    evidence = (
        f"protocol {protocol or NOT_DECLARED}; {chunks}; multi-token chunks handled by "
        f"Option {option or NOT_DECLARED}"
    )
    return bool(protocol and option), evidence


@_requirement(
    "itl-method",
    "4.6.3",
    "MUST",
    "The report MUST declare which ITL option (A chunk, B distributed, C server-side) is used.",
)
def _itl_method(f: ReportFacts) -> tuple[Met, str]:
    itl = f.itl_method
    option = nonblank(itl.get("option"))
    if option not in ("A", "B", "C"):
        return False, "no ITL option declared (methodology.itl_method.option)"
    server = itl.get("server_option")
    also = f"; server ITL by Option {server}" if server else ""
    name = nonblank(itl.get("name"))
    return True, f"client ITL by Option {option}{': ' + name if name else ''}{also}"


@_requirement(
    "itl-option-c",
    "4.6.3",
    "SHOULD",
    "Option C (server-side per-token timing) is RECOMMENDED when available.",
)
def _itl_option_c(f: ReportFacts) -> tuple[Met, str]:
    if f.itl_method.get("server_option") == "C":
        hooks = integer(
            mapping(mapping(f.server).get("span_sources")).get(semconv.SPAN_HOOK_REQUEST)
        )
        return True, f"server ITL by Option C from {hooks} engine-hook spans (metrics.server)"
    return None, "not available: no server span with per-token timestamps was joined"


@_requirement(
    "clock-sync",
    "4.7",
    "MUST",
    "Load generator and SUT clocks MUST be synchronized: inherent on one machine (4.7.1); "
    "across machines the report MUST state the method and accuracy (4.7.2).",
)
def _clock_sync(f: ReportFacts) -> tuple[Met, str]:
    text = clock_text(f)
    return (f.loopback() or declared_text(f.sut.get("clock_sync")) is not None), text


@_requirement(
    "guardrail-disclosure",
    "4.8.1",
    "MUST",
    "The report MUST disclose input and output content filtering, the safety systems' names "
    "and whether requests were refused.",
)
def _guardrail_disclosure(f: ReportFacts) -> tuple[Met, str]:
    guardrails = guardrails_text(f)
    failed = integer(f.requests.get("failed"))
    by_type = ", ".join(f"{k}: {v}" for k, v in mapping(f.requests.get("failed_by_type")).items())
    refused = f"; failed requests: {failed}" + (f" ({by_type})" if by_type else "")
    if guardrails is None:
        boundary = nonblank(f.sut.get("boundary")) or "undeclared"
        return False, f"guardrails not declared for the {boundary} boundary{refused}"
    return True, f"{guardrails}{refused}"


@_requirement(
    "first-token-definition",
    "5.1.3.1",
    "MUST",
    "The report MUST say whether TTFT is the time to any token or to the first content token.",
)
def _first_token(f: ReportFacts) -> tuple[Met, str]:
    if nonblank(f.methodology.get("first_token_definition")) is None:
        return False, "no first token definition (methodology.first_token_definition)"
    return True, "TTFT is the time to the first content token (methodology.first_token_definition)"


@_requirement(
    "ttft-percentiles",
    "5.1.4.1",
    "MUST",
    "TTFT P50, P90, P95, P99 and P99.9 MUST all be reported.",
)
def _ttft_percentiles(f: ReportFacts) -> tuple[Met, str]:
    ttft = mapping(f.client.get("ttft_ms"))
    values = [(label, number(ttft.get(key))) for key, label in (*_PERCENTILES, ("p99_9", "P99.9"))]
    method = nonblank(f.methodology.get("percentile_method")) or "method not declared"
    shown = ", ".join(f"{label} {fmt(v, 2, 'ms')}" for label, v in values)
    return all(v is not None for _, v in values), f"{shown}; percentiles by {method}"


@_requirement("sample-count-stated", "5.1.4.3", "MUST", "The report MUST state the sample count.")
def _sample_count_stated(f: ReportFacts) -> tuple[Met, str]:
    n = f.ttft_samples
    if n is None:
        return False, "no TTFT sample count (metrics.client.ttft_ms.count)"
    return True, f"{n} TTFT samples (metrics.client.ttft_ms.count)"


def _sample_count(f: ReportFacts, needed: int, label: str) -> tuple[Met, str]:
    n = f.ttft_samples or 0
    total = integer(f.requests.get("total"))
    evidence = f"{total} requests, {n} TTFT samples; {label} needs at least {needed}"
    return n >= needed, evidence


@_requirement(
    "sample-count-p99",
    "5.1.2.1",
    "MUST",
    f"The request count MUST be at least {P99_MIN_SAMPLES} for P99 (P99 within 10% at 95% "
    "confidence, 5.1.4.3).",
)
def _sample_count_p99(f: ReportFacts) -> tuple[Met, str]:
    return _sample_count(f, P99_MIN_SAMPLES, "P99")


@_requirement(
    "sample-count-p99-9",
    "5.1.2.1",
    "MUST",
    f"The request count MUST be at least {P99_9_MIN_SAMPLES} for P99.9 (5.1.4.3).",
)
def _sample_count_p99_9(f: ReportFacts) -> tuple[Met, str]:
    return _sample_count(f, P99_9_MIN_SAMPLES, "P99.9")


@_requirement(
    "itl-output-tokens",
    "5.4.2",
    "MUST",
    f"Requests MUST generate at least {ITL_MIN_OUTPUT_TOKENS} output tokens to provide "
    "meaningful ITL samples.",
)
def _itl_output_tokens(f: ReportFacts) -> tuple[Met, str]:
    if not f.succeeded:
        return None, "no successful request"
    short = next((d for d in f.deviations if _SHORT_OUTPUT_MARKER in d), None)
    if short is not None:
        return False, short
    return True, (
        f"every one of the {f.succeeded} successful requests generated at least "
        f"{ITL_MIN_OUTPUT_TOKENS} output tokens"
    )


@_requirement(
    "itl-request-count",
    "5.4.2",
    "SHOULD",
    f"At least {ITL_MIN_REQUESTS} requests for per-request ITL statistics (a setup parameter "
    "without a BCP 14 keyword: checked as SHOULD).",
)
def _itl_request_count(f: ReportFacts) -> tuple[Met, str]:
    per_request = mapping(f.client.get("itl_per_request"))
    n = integer(mapping(per_request.get("max_pause_ms")).get("count")) or 0
    samples = integer(mapping(f.client.get("itl_ms")).get("count")) or 0
    evidence = (
        f"per-request ITL statistics from {n} requests ({samples} ITL samples); the draft "
        f"asks for at least {ITL_MIN_REQUESTS}"
    )
    return n >= ITL_MIN_REQUESTS, evidence


@_requirement(
    "configuration-summary",
    "5.1.5.1",
    "MUST",
    "The report MUST include SUT boundary, model and hardware, workload, load model, request "
    "count and duration, warm-up, prefix caching state and guardrail configuration.",
)
def _configuration(f: ReportFacts) -> tuple[Met, str]:
    summary = configuration_summary(f.report)
    required = (
        "sut_boundary",
        "model",
        "hardware",
        "workload",
        "load_model",
        "requests",
        "duration",
        "warmup",
        "prefix_caching",
        "guardrails",
    )
    missing = [CONFIGURATION_LABELS[k] for k in required if summary[k] == NOT_DECLARED]
    if missing:
        return False, f"not declared: {', '.join(missing)}"
    return True, f"all {len(required)} items declared (configuration)"


def compliance(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report's methodology compliance: every check of :data:`REQUIREMENTS` and the verdict.

    Returns ``{scope, verdict_rule, checks, counts, unmet_must, unmet_should, verdict}``; each
    check is ``{id, section, level, requirement, met, evidence}`` with ``met`` True, False or None
    (not applicable). Pure: the same report gives the same result.

    >>> result = compliance(report)  # doctest: +SKIP
    >>> result["verdict"], result["unmet_must"]  # doctest: +SKIP
    ('not compliant', ['sample-count-p99', 'sample-count-p99-9'])
    """
    facts = ReportFacts(report)
    checks = [r.check(facts) for r in REQUIREMENTS]
    counts = {
        level: {
            "met": sum(1 for c in checks if c["level"] == level and c["met"] is True),
            "unmet": sum(1 for c in checks if c["level"] == level and c["met"] is False),
            "not_applicable": sum(1 for c in checks if c["level"] == level and c["met"] is None),
        }
        for level in ("MUST", "SHOULD")
    }
    unmet_must = [c["id"] for c in checks if c["level"] == "MUST" and c["met"] is False]
    unmet_should = [c["id"] for c in checks if c["level"] == "SHOULD" and c["met"] is False]
    if unmet_must:
        verdict = VERDICT_NOT_COMPLIANT
    elif unmet_should:
        verdict = VERDICT_CONDITIONAL
    else:
        verdict = VERDICT_UNCONDITIONAL
    return {
        "scope": SCOPE,
        "verdict_rule": VERDICT_RULE,
        "checks": checks,
        "counts": counts,
        "unmet_must": unmet_must,
        "unmet_should": unmet_should,
        "verdict": verdict,
    }
