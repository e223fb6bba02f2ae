"""The methodology compliance of a report, a procedure or a comparison (draft 2: per test).

Pure functions of the report dicts (``docs/report-schema.md``, ``docs/procedure-schema.md``), so a
report rebuilt from the same store (``otelbench report``) recomputes them identically; the
configuration summary (5.1.5.1) the checks read is :mod:`otelbench.report.configuration`'s
(re-exported here).

* the **checks**: :data:`REQUIREMENTS` read one run's report (what it declared in ``run``,
  measured in ``metrics``, and declared about its method in ``methodology``; never
  ``configuration`` or ``compliance`` themselves); :data:`PROCEDURE_REQUIREMENTS` read a whole
  test (:class:`ProcedureFacts`: its runs and ``procedure.json`` or ``compare.json``). Each gives
  ``met`` (True, False, or None where it does not apply) with the facts as evidence, and names the
  normative statements it judges (:mod:`otelbench.report.normative` ids);
* the **verdict of a test** (:func:`verdict_for_test`) over the statements that apply to it:
  section 4's and its own section's, for its SUT boundary. A statement judged ``measured`` or
  ``declared`` is not met when any of its checks is not met; an ``enforced`` one is met by
  otelbench itself, the evidence says how:

  ====================================  ===================================================
  verdict                               rule
  ====================================  ===================================================
  ``unconditionally compliant``         every applicable MUST and SHOULD statement is met
  ``conditionally compliant``           every applicable MUST is met, some SHOULD is not
  ``not compliant``                     some MUST is not met
  ====================================  ===================================================

* :func:`compliance` — a run report, for the tests one run stands for (:data:`RUN_TESTS`: 5.1 and
  5.4); :func:`procedure_compliance` — a procedure, for its section, each run check over every
  level's report; :func:`comparison_compliance` — ``otelbench compare``, for section 6.

Usage::

    from otelbench.report import build_report
    from otelbench.report.compliance import compliance

    report = build_report("otelbench.duckdb")
    [(t["test"], t["verdict"]) for t in compliance(report)["tests"]]
    # [('5.1', 'not compliant'), ('5.4', 'not compliant')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypeVar

from otelbench import semconv
from otelbench.draft import (
    CLOCK_SYNC_MAX_ERROR_MS,
    FAIRNESS_LOAD_RANGE,
    ITL_MIN_OUTPUT_TOKENS,
    ITL_MIN_REQUESTS,
    P99_9_MIN_SAMPLES,
    P99_MIN_SAMPLES,
    THROUGHPUT_RECOMMENDED_DURATION_S,
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
from otelbench.report.normative import BY_ID, STATEMENTS, TEST_TITLES, Statement
from otelbench.report.sections import GENERATOR_BOTTLENECK_DEVIATION
from otelbench.report.types import (
    Check,
    ComplianceCounts,
    ComplianceSection,
    LevelCounts,
    StatementResult,
    TestVerdict,
    Verdict,
)

__all__ = [
    "CONFIGURATION_LABELS",
    "DRAFT_INPUT_BUCKETS",
    "NOT_DECLARED",
    "PROCEDURE_REQUIREMENTS",
    "REQUIREMENTS",
    "RUN_TESTS",
    "VERDICT_CONDITIONAL",
    "VERDICT_NOT_COMPLIANT",
    "VERDICT_UNCONDITIONAL",
    "ProcedureFacts",
    "Requirement",
    "comparison_compliance",
    "compliance",
    "configuration_summary",
    "procedure_compliance",
    "verdict_for_test",
]

Level = Literal["MUST", "SHOULD"]
Met = bool | None


VERDICT_UNCONDITIONAL: Final[Verdict] = "unconditionally compliant"
VERDICT_CONDITIONAL: Final[Verdict] = "conditionally compliant"
VERDICT_NOT_COMPLIANT: Final[Verdict] = "not compliant"


RUN_TESTS: Final = ("5.1", "5.4")
"""The tests one run stands for: TTFT (5.1) and the ITL distribution (5.4) at its load level."""

SCOPE: Final = (
    "one run at one load level, judged for the tests it stands for: TTFT (5.1) and the ITL "
    "distribution (5.4), over section 4's statements and each test's own; the load-sweep "
    "tests (5.2, 5.3, 5.5 to 5.10) are judged in their procedure reports (otelbench test)"
)
VERDICT_RULE: Final = (
    "draft 2, per test: not compliant when any applicable MUST statement is not met; "
    "conditionally compliant when every MUST is met but not every SHOULD; unconditionally "
    "compliant when every MUST and SHOULD is met. Statements that do not apply (met null) do "
    "not count. The overall verdict is the lowest of the tests'."
)


OPEN_LOOP_MODES: Final = frozenset({"poisson", "uniform", "bursty", "trace"})
_PERCENTILES: Final = (("p50", "P50"), ("p90", "P90"), ("p95", "P95"), ("p99", "P99"))
STANDARD_WORKLOADS: Final = {
    "A.1": "Synthetic-Uniform",
    "A.2": "Synthetic-Skewed",
    "A.3": "Conversation",
    "A.4": "Code Completion",
    "A.5": "Long Context",
}
"""The draft's standard workloads (4.3.2) by their Appendix A section (``spec.draft_section``)."""
_WORKLOAD_SECTIONS: Final = {
    "synthetic-uniform": "A.1",
    "synthetic-skewed": "A.2",
    "conversation": "A.3",
    "sharegpt": "A.3",
    "code-completion": "A.4",
    "long-context": "A.5",
}
"""otelbench's workloads by the Appendix A section they generate, for a report whose workload
records no ``spec.draft_section``."""
DRAFT_INPUT_BUCKETS: Final = ("0-256", "256-512", "512-1024", "1024-2048", "2048-4096", "4096+")
"""5.1.4.2's RECOMMENDED input-length buckets, as the report labels them."""
CONTENDED_WAIT_SHARE: Final = 0.05
"""A loop thread waiting for a core this share of the time or more (or the host stealing this
share of the CPU time): other processes held the cores."""
EXACT_CHUNK_TOKEN_SOURCES: Final = frozenset({semconv.CHUNK_TOKENS_FROM_USAGE})
"""``methodology.itl_method.chunk_token_sources`` that count each chunk's tokens (the others,
e.g. ``one_per_chunk``, assume them)."""
_SHORT_OUTPUT_MARKER: Final = "output tokens, the minimum for ITL statistics"
"""How the report's deviation for requests under 5.4.2's output-token minimum reads."""


# ------------------------------------------------------------------------------------------
# compliance checks (draft 2): registered, in report order
# ------------------------------------------------------------------------------------------

_F = TypeVar("_F")
Evaluate = Callable[[ReportFacts], tuple[Met, str]]


@dataclass(frozen=True)
class Requirement(Generic[_F]):
    """One check of the draft: where it is, its level, what it asks, how it is checked (over one
    run's :class:`ReportFacts`, or a whole test's :class:`ProcedureFacts`), and the normative
    statements (:mod:`otelbench.report.normative` ids) it judges."""

    id: str
    section: str
    level: Level
    text: str
    evaluate: Callable[[_F], tuple[Met, str]]
    judges: tuple[str, ...] = ()

    def check(self, facts: _F) -> Check:
        met, evidence = self.evaluate(facts)
        return {
            "id": self.id,
            "section": self.section,
            "level": self.level,
            "requirement": self.text,
            "met": met,
            "evidence": evidence,
            "judges": list(self.judges),
        }


def _registrar(
    registry: list[Requirement[_F]],
) -> Callable[..., Callable[[Callable[[_F], tuple[Met, str]]], Callable[[_F], tuple[Met, str]]]]:
    """A decorator factory that appends each decorated check to ``registry``, in order."""

    def requirement(
        id: str, section: str, level: Level, text: str, *, judges: tuple[str, ...]
    ) -> Callable[[Callable[[_F], tuple[Met, str]]], Callable[[_F], tuple[Met, str]]]:
        def register(evaluate: Callable[[_F], tuple[Met, str]]) -> Callable[[_F], tuple[Met, str]]:
            registry.append(Requirement(id, section, level, text, evaluate, judges))
            return evaluate

        return register

    return requirement


REQUIREMENTS: list[Requirement[ReportFacts]] = []
"""Every check, in the order the report lists them."""
_requirement = _registrar(REQUIREMENTS)


@_requirement(
    "sut-boundary",
    "4.1",
    "MUST",
    "The SUT boundary MUST be declared.",
    judges=("sut-boundary-declared",),
)
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
    judges=("timing-resolution", "load-generator-requirements"),
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
        advice.append(_contended_advice(f))
    return True, f"{evidence}: P99 over {limit:g} ms, chunk times were taken late; " + "; ".join(
        advice
    )


def _contended_advice(f: ReportFacts) -> str:
    """What to do when other processes held the load generator's cores: give it cores of its
    own, or, where it had them (``run.load.workers.cpus``), keep the others off them."""
    pinned = mapping(mapping(mapping(f.run.get("load")).get("workers")).get("cpus"))
    if not pinned:
        return (
            "other processes kept the load generator waiting for a core: quiet the host or "
            "give the load generator cores of its own (--loadgen-cpus)"
        )
    cpus = ",".join(str(c) for c in pinned.get("loadgen") or [])
    return (
        f"other processes kept the load generator waiting on its own CPUs (--loadgen-cpus "
        f"{cpus}): quiet the host or give it CPUs nothing else runs on"
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
    judges=("timing-resolution-us",),
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
    judges=(
        "streaming-support",
        "streaming-per-chunk",
        "output-recording",
        "load-generator-requirements",
    ),
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
    judges=("open-loop-isolation", "load-generator-requirements"),
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
    judges=("output-recording", "load-generator-requirements"),
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
    judges=("output-recording", "load-generator-requirements"),
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
    judges=("custom-workload-specified", "workload-parameters", "ttft-parameters-defined"),
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
    judges=("dataset-provenance",),
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
    judges=("deterministic-seed", "seed-reported"),
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
    judges=("request-sequence-published",),
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
    judges=("tokenizer-specified",),
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
    judges=("token-counting-option",),
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
    judges=("special-tokens",),
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
    judges=("warmup",),
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
    judges=("warmup-verified",),
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
    judges=("chunking-declared",),
)
def _chunking(f: ReportFacts) -> tuple[Met, str]:
    """Judged on what the run knows: every successful request's per-chunk token counts came
    from the server's usage (exact), so it can say whether chunks carried one or several
    tokens; counting each chunk as one token is an assumption, not a declaration."""
    itl = f.itl_method
    protocol, option = nonblank(itl.get("protocol")), nonblank(itl.get("option"))
    tpc = mapping(f.client.get("tokens_per_chunk"))
    if not f.succeeded or not integer(tpc.get("count")):
        return None, "no content chunk was received: no chunking to declare"
    sources = {str(k): integer(v) or 0 for k, v in mapping(itl.get("chunk_token_sources")).items()}
    requests = sum(sources.values())
    counted = sum(n for source, n in sources.items() if source in EXACT_CHUNK_TOKEN_SOURCES)
    most = number(tpc.get("max"))
    if most is not None and most > 1:
        chunks = f"multi-token chunks (up to {most:.0f} tokens per chunk)"
    else:
        chunks = "one token per chunk"
    handling = f"multi-token chunks handled by Option {option or NOT_DECLARED}"
    if nonblank(itl.get("server_engine_steps")):  # Option C's chunks: the engine's steps
        handling += f"; server ITL by Option C: {itl['server_engine_steps']}" + (
            ", handled as methodology.itl_method.server_multi_token_handling says"
            if itl.get("server_multi_token_handling")
            else ""
        )
    protocol_text = f"protocol {protocol or NOT_DECLARED}"
    if not requests or counted < requests:
        assumed = ", ".join(
            f"{source} on {n}"
            for source, n in sources.items()
            if source not in EXACT_CHUNK_TOKEN_SOURCES
        )
        return False, (
            f"{protocol_text}; per-chunk token counts known on {counted} of {requests} requests "
            f"with content chunks (the rest: {assumed or 'no token count source recorded'}): "
            "whether chunks carried one or several tokens is not known (the server's "
            f"continuous usage statistics give it); {handling}"
        )
    return bool(protocol and option), (
        f"{protocol_text}; {chunks}, counted from per-chunk usage on all {requests} requests "
        f"with content chunks; {handling}"
    )


@_requirement(
    "itl-method",
    "4.6.3",
    "MUST",
    "The report MUST declare which ITL option (A chunk, B distributed, C server-side) is used.",
    judges=("itl-option-declared",),
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
    judges=("itl-option-c",),
)
def _itl_option_c(f: ReportFacts) -> tuple[Met, str]:
    server = mapping(f.server)
    hooks = integer(mapping(server.get("span_sources")).get(semconv.SPAN_HOOK_REQUEST)) or 0
    intervals = integer(mapping(server.get("itl_ms")).get("count")) or 0
    claimed = f.itl_method.get("server_option") == "C"
    if claimed and intervals:
        return True, (
            f"server ITL by Option C: {intervals} per-token intervals from {hooks} engine-hook "
            "spans (metrics.server.itl_ms)"
        )
    if claimed or intervals:
        return False, (
            f"server ITL by Option C {'declared' if claimed else 'not declared'}, yet "
            f"{intervals} server per-token intervals measured"
        )
    return None, "not available: no server span with per-token timestamps was joined"


def _clock_declared(f: ReportFacts) -> tuple[str | None, float | None]:
    """The declared clock synchronization: method and estimated accuracy in ms (4.7.2)."""
    declared = f.sut.get("clock_sync")
    if isinstance(declared, Mapping):
        return nonblank(declared.get("method")), number(declared.get("accuracy_ms"))
    return declared_text(declared), None


@_requirement(
    "clock-sync",
    "4.7",
    "MUST",
    "Load generator and SUT clocks MUST be synchronized: inherent on one machine (4.7.1); "
    "across machines the report MUST state the method and accuracy (4.7.2).",
    judges=("clock-sync-stated",),
)
def _clock_sync(f: ReportFacts) -> tuple[Met, str]:
    text = clock_text(f)
    if f.loopback():
        return True, text
    method, accuracy = _clock_declared(f)
    if method is None or accuracy is None:
        missing = " and ".join(
            n for n, v in (("method", method), ("estimated accuracy", accuracy)) if v is None
        )
        return False, f"{text}; not declared: {missing} (--sut-clock-sync, --sut-clock-accuracy-ms)"
    return True, text


@_requirement(
    "clock-sync-accuracy",
    "4.7.2",
    "MUST",
    f"Across machines, clock synchronization MUST achieve {CLOCK_SYNC_MAX_ERROR_MS:g} ms or "
    "better.",
    judges=("ntp-accuracy",),
)
def _clock_sync_accuracy(f: ReportFacts) -> tuple[Met, str]:
    if f.loopback():
        return None, "single host (draft 4.7.1): one clock, nothing to synchronize"
    method, accuracy = _clock_declared(f)
    if accuracy is None:
        return False, f"no clock synchronization accuracy declared (method: {method or '?'})"
    evidence = f"{method or 'method not declared'}, declared accuracy {accuracy:g} ms"
    if accuracy > CLOCK_SYNC_MAX_ERROR_MS:
        return False, f"{evidence}: worse than the draft's {CLOCK_SYNC_MAX_ERROR_MS:g} ms"
    return True, evidence


@_requirement(
    "clock-sync-ptp",
    "4.7.2",
    "SHOULD",
    "PTP SHOULD be used when sub-millisecond accuracy is required.",
    judges=("ptp-sub-millisecond",),
)
def _clock_sync_ptp(f: ReportFacts) -> tuple[Met, str]:
    method, accuracy = _clock_declared(f)
    if f.loopback() or accuracy is None or accuracy >= 1.0:
        return None, "no sub-millisecond clock accuracy declared across hosts"
    evidence = f"{method or 'method not declared'} for a declared accuracy of {accuracy:g} ms"
    return "PTP" in (method or "").upper(), evidence


@_requirement(
    "single-host",
    "4.7.1",
    "SHOULD",
    "Load generator and SUT on one machine is RECOMMENDED for Model Engine testing.",
    judges=("single-machine-model-engine",),
)
def _single_host(f: ReportFacts) -> tuple[Met, str]:
    host = f.target_host() or "not recorded"
    if f.loopback():
        return True, f"the target {host} is loopback: one machine"
    return False, f"the target host {host} is not loopback"


@_requirement(
    "network-rtt",
    "4.7.3",
    "SHOULD",
    "Network RTT SHOULD be measured and reported separately.",
    judges=("network-rtt",),
)
def _network_rtt(f: ReportFacts) -> tuple[Met, str]:
    if f.loopback():
        return None, "single host: no network between the load generator and the SUT"
    rtt = number(f.sut.get("network_rtt_ms"))
    if rtt is None:
        return False, "no network RTT declared for a target on another host (sut network_rtt_ms)"
    return True, f"network RTT {rtt:g} ms (declared)"


@_requirement(
    "guardrail-disclosure",
    "4.8.1",
    "MUST",
    "The report MUST disclose input and output content filtering, the safety systems' names "
    "and whether requests were refused.",
    judges=("safety-accounted", "guardrail-disclosure"),
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
    judges=("first-token-definition",),
)
def _first_token(f: ReportFacts) -> tuple[Met, str]:
    """Judged on whether the definition applied: every request with a TTFT has its first SSE
    event recorded beside its first content token (``metrics.client.first_content_token``), so
    the report shows which events TTFT skipped, and none has content before its first event."""
    if nonblank(f.methodology.get("first_token_definition")) is None:
        return False, "no first token definition (methodology.first_token_definition)"
    fc = mapping(f.client.get("first_content_token"))
    requests = integer(fc.get("requests"))
    if requests is None:
        return False, (
            "the first token definition is declared, but the report has no evidence that the "
            "run applied it (metrics.client.first_content_token)"
        )
    if not requests:
        return None, "no request received a content token"
    recorded = integer(fc.get("first_event_recorded")) or 0
    contradicted = integer(fc.get("content_before_first_event")) or 0
    if recorded < requests or contradicted:
        return False, (
            f"of {requests} requests with a TTFT, {requests - recorded} lack the first SSE "
            f"event's offset and {contradicted} have content before their first event: the "
            "spans do not show that TTFT is the time to the first content token"
        )
    skipped = integer(fc.get("after_non_content_events")) or 0
    lead = mapping(fc.get("non_content_lead_ms"))
    noted = (
        f"{skipped} of them began with non-content events (role-only, empty or whitespace "
        f"deltas) that TTFT skipped, P50 {fmt(number(lead.get('p50')), 2, 'ms')} before the "
        "content"
        if skipped
        else "none began with non-content events"
    )
    return True, (
        f"TTFT is the time to the first content token; {requests} requests with the first "
        f"event and the first content token recorded: {noted}"
    )


@_requirement(
    "ttft-percentiles",
    "5.1.4.1",
    "MUST",
    "TTFT P50, P90, P95, P99 and P99.9 MUST all be reported.",
    judges=("ttft-percentiles", "ttft-report-includes"),
)
def _ttft_percentiles(f: ReportFacts) -> tuple[Met, str]:
    ttft = mapping(f.client.get("ttft_ms"))
    values = [(label, number(ttft.get(key))) for key, label in (*_PERCENTILES, ("p99_9", "P99.9"))]
    method = nonblank(f.methodology.get("percentile_method")) or "method not declared"
    shown = ", ".join(f"{label} {fmt(v, 2, 'ms')}" for label, v in values)
    return all(v is not None for _, v in values), f"{shown}; percentiles by {method}"


@_requirement(
    "sample-count-stated",
    "5.1.4.3",
    "MUST",
    "The report MUST state the sample count.",
    judges=("sample-count-stated",),
)
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
    judges=("ttft-request-count",),
)
def _sample_count_p99(f: ReportFacts) -> tuple[Met, str]:
    return _sample_count(f, P99_MIN_SAMPLES, "P99")


@_requirement(
    "sample-count-p99-9",
    "5.1.2.1",
    "MUST",
    f"The request count MUST be at least {P99_9_MIN_SAMPLES} for P99.9 (5.1.4.3).",
    judges=("ttft-request-count",),
)
def _sample_count_p99_9(f: ReportFacts) -> tuple[Met, str]:
    return _sample_count(f, P99_9_MIN_SAMPLES, "P99.9")


@_requirement(
    "itl-output-tokens",
    "5.4.2",
    "MUST",
    f"Requests MUST generate at least {ITL_MIN_OUTPUT_TOKENS} output tokens to provide "
    "meaningful ITL samples.",
    judges=("itl-output-tokens",),
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
    judges=(),
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
    judges=("ttft-parameters-defined", "ttft-report-includes"),
)
def _configuration(f: ReportFacts) -> tuple[Met, str]:
    summary: Mapping[str, object] = configuration_summary(f.report)
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


@_requirement(
    "model-identifier",
    "5.1.2.3",
    "MUST",
    "The model identifier MUST be defined: model name, version, and quantization if applicable.",
    judges=("ttft-parameters-defined",),
)
def _model_identifier(f: ReportFacts) -> tuple[Met, str]:
    fields = (
        ("name", nonblank(f.run.get("model"))),
        ("version", declared_text(f.sut.get("model_version"))),
        ("quantization", declared_text(f.sut.get("quantization"))),
    )
    shown = "; ".join(f"{label} {value or NOT_DECLARED}" for label, value in fields)
    missing = [label for label, value in fields if value is None]
    if missing:
        return False, f"{shown} (declare with --sut-model-version, --sut-quantization)"
    return True, shown


@_requirement(
    "poisson-arrivals",
    "5.1.2.2",
    "MUST",
    "An open-loop TTFT run MUST use Poisson arrivals.",
    judges=("ttft-poisson",),
)
def _poisson(f: ReportFacts) -> tuple[Met, str]:
    mode = nonblank(f.load.get("mode"))
    if mode == "closed_loop":
        return None, "closed-loop run (draft 5.1.2.2): no arrival distribution"
    return mode == "poisson", f"open-loop arrivals: {mode or 'not recorded'}"


@_requirement(
    "open-loop",
    "5.3.2",
    "MUST",
    "The throughput-latency test MUST run open loop.",
    judges=("tradeoff-open-loop",),
)
def _open_loop(f: ReportFacts) -> tuple[Met, str]:
    mode = nonblank(f.load.get("mode")) or "not recorded"
    return mode in OPEN_LOOP_MODES, f"load model: {mode}"


@_requirement(
    "cold-start",
    "4.5.3",
    "MUST",
    "A cold-start measurement MUST skip the warm-up and the report MUST say so.",
    judges=("cold-start-skips-warmup", "cold-start-indicated"),
)
def _cold_start(f: ReportFacts) -> tuple[Met, str]:
    w = mapping(f.run.get("warmup"))
    cold = w.get("mode") == "cold_start" or f.run.get("cold_start") is True
    if not cold:
        return None, "not a cold-start measurement"
    warmed = integer(w.get("requests")) or 0
    if warmed:
        return False, f"cold start declared, yet {warmed} warm-up requests ran"
    return True, warmup_text(f) or "cold-start measurement declared"


@_requirement(
    "ttft-input-buckets",
    "5.1.4.2",
    "SHOULD",
    "TTFT by input length SHOULD use the draft's buckets [0-256) … [4096+).",
    judges=("ttft-input-buckets",),
)
def _ttft_buckets(f: ReportFacts) -> tuple[Met, str]:
    if not f.succeeded:
        return None, "no successful request"
    buckets = [b for b in f.client.get("ttft_by_input_tokens") or [] if isinstance(b, Mapping)]
    labels = tuple(str(b.get("bucket")) for b in buckets)
    evidence = "buckets " + (", ".join(labels) or "none")
    return labels == DRAFT_INPUT_BUCKETS, evidence


@_requirement(
    "level-duration",
    "5.2.2.1",
    "SHOULD",
    f"A throughput load level SHOULD run {THROUGHPUT_RECOMMENDED_DURATION_S:.0f} s.",
    judges=("throughput-duration",),
)
def _level_duration(f: ReportFacts) -> tuple[Met, str]:
    duration = number(f.run.get("duration_s"))
    evidence = f"ran {fmt(duration, 1, 's')}; the draft recommends 300 s"
    return duration is not None and duration >= THROUGHPUT_RECOMMENDED_DURATION_S, evidence


def _boundary_name(f: ReportFacts) -> str:
    return nonblank(f.sut.get("boundary")) or "undeclared"


def _boundary_is(f: ReportFacts, boundary: str) -> bool:
    return nonblank(f.sut.get("boundary")) == boundary


def _protocol_check(boundary: str, marker: str) -> Evaluate:
    def evaluate(f: ReportFacts) -> tuple[Met, str]:
        if not _boundary_is(f, boundary):
            return None, f"not applicable: the boundary is {_boundary_name(f)}, not {boundary}"
        protocol = nonblank(f.itl_method.get("protocol")) or "not declared"
        return marker in protocol, f"protocol: {protocol}"

    return evaluate


_PROTOCOL_RULES: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("sse-protocol", "Application Gateway", "Server-Sent Events", "sse-application-gateway"),
    ("grpc-protocol", "Model Engine", "gRPC", "grpc-model-engine"),
)
"""4.6.1's protocol recommendations: check id, boundary, protocol, statement id."""
REQUIREMENTS.extend(
    Requirement(
        id,
        "4.6.1",
        "SHOULD",
        f"{marker} is RECOMMENDED for {boundary} testing.",
        _protocol_check(boundary, marker),
        (statement_id,),
    )
    for id, boundary, marker, statement_id in _PROTOCOL_RULES
)


def _workload_check(sections: tuple[str, ...], boundary: str | None) -> Evaluate:
    def evaluate(f: ReportFacts) -> tuple[Met, str]:
        if boundary is not None and not _boundary_is(f, boundary):
            return None, f"not applicable: the boundary is {_boundary_name(f)}, not {boundary}"
        workload = mapping(f.run.get("workload"))
        name = nonblank(workload.get("name")) or "not recorded"
        section = nonblank(mapping(workload.get("spec")).get("draft_section"))
        section = section or _WORKLOAD_SECTIONS.get(name)
        wanted = " or ".join(f"{STANDARD_WORKLOADS[s]} ({s})" for s in sections)
        evidence = f"workload {name} (draft {section or '?'}); wanted {wanted}"
        return section in sections, evidence

    return evaluate


@dataclass(frozen=True)
class _WorkloadRule:
    """A statement that names the workload a test or boundary must (or should) use."""

    id: str
    section: str
    level: Level
    sections: tuple[str, ...]
    """Appendix A sections of the accepted workloads (:data:`STANDARD_WORKLOADS`)."""
    judges: tuple[str, ...]
    boundary: str | None = None

    def requirement(self) -> Requirement[ReportFacts]:
        names = " or ".join(STANDARD_WORKLOADS[s] for s in self.sections)
        where = f" for {self.boundary} benchmarking" if self.boundary else ""
        text = f"The workload {self.level} be {names}{where} (draft {self.section})."
        evaluate = _workload_check(self.sections, self.boundary)
        return Requirement(self.id, self.section, self.level, text, evaluate, self.judges)


_WORKLOAD_RULES: Final = (
    _WorkloadRule("model-engine-workload", "4.3.2.1", "MUST", ("A.1",),
                  ("synthetic-uniform-model-engine",), "Model Engine"),
    _WorkloadRule("gateway-workload", "4.3.2.3", "SHOULD", ("A.3",),
                  ("conversation-application-gateway",), "Application Gateway"),
    _WorkloadRule("itl-workload", "5.4.2", "SHOULD", ("A.1", "A.3"), ("itl-workload",)),
    _WorkloadRule("capacity-workload", "5.5.2", "SHOULD", ("A.1",), ("capacity-workload",)),
    _WorkloadRule("fairness-workload", "5.6.2", "MUST", ("A.2",), ("fairness-workload",)),
    _WorkloadRule("prefix-cache-workload", "5.7.2", "SHOULD", ("A.4",),
                  ("prefix-cache-workload",)),
    _WorkloadRule("memory-pressure-workload", "5.8.2", "SHOULD", ("A.5",),
                  ("memory-pressure-workload",)),
    _WorkloadRule("long-context-workload", "5.9.2", "MUST", ("A.5",),
                  ("long-context-for-scaling", "long-context-workload")),
    _WorkloadRule("guardrail-overhead-workload", "5.10.2", "SHOULD", ("A.3",),
                  ("guardrail-overhead-workload",)),
)  # fmt: skip
REQUIREMENTS.extend(rule.requirement() for rule in _WORKLOAD_RULES)


def _gateway_guardrails(f: ReportFacts) -> Mapping[str, Any] | None:
    """The declared guardrails of an Application Gateway run (None: another boundary)."""
    return mapping(f.sut.get("guardrails")) if _boundary_is(f, "Application Gateway") else None


@_requirement(
    "guardrails-production",
    "4.8.2",
    "SHOULD",
    "An Application Gateway's safety systems SHOULD be enabled in their default configuration.",
    judges=("safety-default-enabled",),
)
def _guardrails_production(f: ReportFacts) -> tuple[Met, str]:
    declared = _gateway_guardrails(f)
    if declared is None:
        return None, f"not applicable: the boundary is {_boundary_name(f)}, not Application Gateway"
    enabled = [
        f"{stage} {declared[key]}"
        for stage, key in (("input", "input_filter"), ("output", "output_filter"))
        if nonblank(declared.get(key)) not in (None, "none")
    ]
    default = declared.get("default_configuration") is True
    evidence = (
        f"enabled: {', '.join(enabled) or 'none'}; default configuration "
        f"{'declared' if default else 'not declared'}"
    )
    return bool(enabled) and default, evidence


@_requirement(
    "guardrails-disabled-noted",
    "4.8.2",
    "MUST",
    "The report MUST note if an Application Gateway's safety systems are disabled.",
    judges=("safety-disabled-noted",),
)
def _guardrails_noted(f: ReportFacts) -> tuple[Met, str]:
    if _gateway_guardrails(f) is None:
        return None, f"not applicable: the boundary is {_boundary_name(f)}, not Application Gateway"
    text = guardrails_text(f)
    return text is not None, text or "guardrails not declared (--sut-input-filter, -output-)"


@_requirement(
    "guardrails-comparative",
    "4.8.2",
    "SHOULD",
    "Comparative runs with safety enabled and disabled SHOULD quantify the overhead.",
    judges=("safety-comparative-runs",),
)
def _guardrails_comparative(f: ReportFacts) -> tuple[Met, str]:
    declared = _gateway_guardrails(f)
    if declared is None:
        return None, f"not applicable: the boundary is {_boundary_name(f)}, not Application Gateway"
    where = nonblank(declared.get("comparative_run"))
    if where is None:
        return False, "no comparative run declared (guardrails.comparative_run in --sut-config)"
    return True, f"comparative run: {where}"


# ------------------------------------------------------------------------------------------
# checks of a whole test: its runs together (a procedure's levels, or one run)
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcedureFacts:
    """What a test-wide check reads: its runs' reports and, for a procedure, procedure.json."""

    runs: tuple[ReportFacts, ...]
    procedure: Mapping[str, Any] | None = None

    @property
    def levels(self) -> list[Mapping[str, Any]]:
        found = (self.procedure or {}).get("levels")
        return [lv for lv in found if isinstance(lv, Mapping)] if isinstance(found, list) else []


PROCEDURE_REQUIREMENTS: list[Requirement[ProcedureFacts]] = []
"""The checks over a whole test, in the order the report lists them (after the run checks)."""
_procedure_requirement = _registrar(PROCEDURE_REQUIREMENTS)


@_procedure_requirement(
    "itl-load-levels",
    "5.4.2",
    "SHOULD",
    "ITL SHOULD be measured at several load levels (25, 50, 75, 90 % of saturation).",
    judges=("itl-load-levels",),
)
def _itl_levels(t: ProcedureFacts) -> tuple[Met, str]:
    if t.procedure is None:
        return False, "one run at one load level (otelbench test itl runs the draft's levels)"
    labels = [str(lv.get("label")) for lv in t.levels]
    return len(labels) >= 2, f"{len(labels)} load level(s): {', '.join(labels) or 'none'}"


@_procedure_requirement(
    "fairness-load-level",
    "5.6.2",
    "SHOULD",
    "The fairness test SHOULD run at 70–90 % of saturation throughput.",
    judges=("fairness-load-level",),
)
def _fairness_level(t: ProcedureFacts) -> tuple[Met, str]:
    params = mapping((t.procedure or {}).get("parameters"))
    if not params:
        return None, "a property of the fairness procedure (otelbench test fairness)"
    rate, saturation = number(params.get("rate")), number(params.get("saturation_rps"))
    if rate is None or not saturation:
        return False, (
            f"the mixed run at {fmt(rate, 3, 'req/s')}, not related to a measured saturation "
            "throughput"
        )
    low, high = FAIRNESS_LOAD_RANGE
    share = rate / saturation
    return low <= share <= high, f"the mixed run at {share:.0%} of saturation"


@_procedure_requirement(
    "prefix-cache-configurations",
    "5.7.2",
    "MUST",
    "The prefix cache test MUST run with the cache disabled and with it enabled.",
    judges=("prefix-cache-configurations",),
)
def _prefix_configurations(t: ProcedureFacts) -> tuple[Met, str]:
    if t.procedure is None:
        return None, "a property of the prefix-cache procedure (otelbench test prefix-cache)"
    configured = sorted(mapping(mapping(t.procedure.get("configuration")).get("configurations")))
    measured = [str(lv.get("label")) for lv in t.levels if lv.get("report")]
    met = {"disabled", "enabled"} <= set(configured) and len(measured) >= 2
    return met, f"configurations {', '.join(configured) or 'none'}; levels measured: " + (
        ", ".join(measured) or "none"
    )


_EQUIVALENCE_ITEMS: Final = ("workload", "seed", "sut_boundary", "hardware", "load_model")
"""The keys of ``otelbench compare``'s checklist that draft 6.1 requires to match."""


def _per_gpu_normalized(comparison: Mapping[str, Any]) -> bool:
    systems = mapping(mapping(comparison.get("normalization")).get("systems"))
    statuses = [str(mapping(v).get("status", "")) for v in systems.values()]
    return bool(statuses) and all(s.startswith("normalized") for s in statuses)


@_procedure_requirement(
    "equivalence",
    "6.1",
    "MUST",
    "Compared systems MUST have identical workload and seeds, the same SUT boundary, "
    "comparable (or normalized) hardware, and the same load model and parameters.",
    judges=("comparison-equivalence",),
)
def _equivalence(t: ProcedureFacts) -> tuple[Met, str]:
    checklist = (t.procedure or {}).get("checklist")
    if not isinstance(checklist, list):
        return None, "not a comparison of systems (otelbench compare)"
    items = {str(c.get("item")): c for c in checklist if isinstance(c, Mapping)}
    shown, problems = [], []
    for key in _EQUIVALENCE_ITEMS:
        item = mapping(items.get(key))
        status = str(item.get("status", "not recorded"))
        label = str(item.get("label", key))
        if status != "equal" and key == "hardware" and _per_gpu_normalized(t.procedure or {}):
            status = "differs, normalized per GPU (6.2)"
        elif status != "equal":
            problems.append(f"{label} {status}")
        shown.append(f"{label}: {status}")
    evidence = "; ".join(shown)
    return not problems, evidence if not problems else f"not equivalent: {', '.join(problems)}"


@_procedure_requirement(
    "reference-tokenizer",
    "4.4.2",
    "SHOULD",
    "Cross-system comparison SHOULD count tokens with cl100k_base as the reference (Option B).",
    judges=("reference-tokenizer",),
)
def _reference_tokenizer(t: ProcedureFacts) -> tuple[Met, str]:
    if not isinstance((t.procedure or {}).get("checklist"), list):
        return None, "not a comparison of systems (otelbench compare)"
    found = [
        f"Option {tok.get('option', '?')}, {tok.get('name', NOT_DECLARED)}"
        for tok in (mapping(r.run.get("tokenizer")) for r in t.runs)
    ]
    ok = [x for x in found if x.startswith("Option B") and x.endswith("cl100k_base")]
    distinct = ", ".join(dict.fromkeys(found)) or "no run"
    return bool(found) and len(ok) == len(found), f"token counting: {distinct}"


# ------------------------------------------------------------------------------------------
# verdicts per test (draft 2), over the normative statements
# ------------------------------------------------------------------------------------------


def _checks_of(statement_id: str) -> list[str]:
    run = [r.id for r in REQUIREMENTS if statement_id in r.judges]
    return run + [r.id for r in PROCEDURE_REQUIREMENTS if statement_id in r.judges]


def _judge(s: Statement, results: Mapping[str, Mapping[str, Any]]) -> tuple[Met, str]:
    """A statement's judgement from its checks' results (enforced: met, with how)."""
    if s.judged == "enforced":
        return True, f"enforced: {s.how}"
    found = [results[c] for c in _checks_of(s.id) if c in results]
    unmet = [r for r in found if r["met"] is False]
    if unmet:
        return False, "; ".join(f"{r['id']}: {r['evidence']}" for r in unmet)
    met = [r for r in found if r["met"] is True]
    if met:
        return True, "; ".join(f"{r['id']}: {r['evidence']}" for r in met)
    if found:
        return None, "; ".join(f"{r['id']}: {r['evidence']}" for r in found)
    return False, f"not judged by this report ({s.how})"


def _verdict(unmet_must: list[str], unmet_should: list[str]) -> Verdict:
    if unmet_must:
        return VERDICT_NOT_COMPLIANT
    return VERDICT_CONDITIONAL if unmet_should else VERDICT_UNCONDITIONAL


def verdict_for_test(test: str, boundary: str | None, checks: list[Check]) -> TestVerdict:
    """The draft 2 verdict of ``test`` (``5.1`` … ``5.10``) from ``checks`` (the results of
    :data:`REQUIREMENTS` and :data:`PROCEDURE_REQUIREMENTS`): every statement of
    :mod:`otelbench.report.normative` for that test, met, not met or not applicable, with its
    evidence.

    Returns ``{test, title, verdict, counts, unmet_must, unmet_should, statements}``.
    """
    results = {c["id"]: c for c in checks}
    rows: list[StatementResult] = []
    for s in STATEMENTS:
        if test not in s.tests:
            continue
        if s.applies(test, boundary):
            met, evidence = _judge(s, results)
        else:
            met = None
            evidence = (
                f"applies to the {' and '.join(s.boundaries)} boundary only; this one is "
                f"{boundary or 'undeclared'}"
            )
        rows.append(
            {
                "id": s.id,
                "section": s.section,
                "keyword": s.keyword,
                "level": s.level,
                "statement": s.text,
                "judged": s.judged,
                "checks": _checks_of(s.id),
                "met": met,
                "evidence": evidence,
            }
        )
    counts: ComplianceCounts = {"MUST": _counts(rows, "MUST"), "SHOULD": _counts(rows, "SHOULD")}
    unmet_must = [r["id"] for r in rows if r["level"] == "MUST" and r["met"] is False]
    unmet_should = [r["id"] for r in rows if r["level"] == "SHOULD" and r["met"] is False]
    return {
        "test": test,
        "title": TEST_TITLES[test],
        "verdict": _verdict(unmet_must, unmet_should),
        "counts": counts,
        "unmet_must": unmet_must,
        "unmet_should": unmet_should,
        "statements": rows,
    }


def _counts(rows: list[StatementResult], level: Level) -> LevelCounts:
    """The statements of ``level`` met, not met and not applicable."""
    return {
        "met": sum(1 for r in rows if r["level"] == level and r["met"] is True),
        "unmet": sum(1 for r in rows if r["level"] == level and r["met"] is False),
        "not_applicable": sum(1 for r in rows if r["level"] == level and r["met"] is None),
    }


def _lowest(verdicts: list[Verdict]) -> Verdict:
    order = (VERDICT_NOT_COMPLIANT, VERDICT_CONDITIONAL, VERDICT_UNCONDITIONAL)
    return min(verdicts, key=order.index) if verdicts else VERDICT_NOT_COMPLIANT


def _relevant(check: Mapping[str, Any], tests: list[str]) -> bool:
    """Whether a check bears on one of ``tests``: it judges one of their statements, or (a
    check that judges none) its section is section 4's or one of theirs."""
    if check["judges"]:
        return any(t in BY_ID[j].tests for j in check["judges"] for t in tests)
    section = str(check["section"])
    return section.startswith("4.") or any(section.startswith(f"{t}.") for t in tests)


def _summary(scope: str, checks: list[Check], tests: list[TestVerdict]) -> ComplianceSection:
    def union(key: Literal["unmet_must", "unmet_should"]) -> list[str]:
        return list(dict.fromkeys(i for t in tests for i in t[key]))

    names = [t["test"] for t in tests]
    return {
        "scope": scope,
        "verdict_rule": VERDICT_RULE,
        "checks": [c for c in checks if _relevant(c, names)],
        "tests": tests,
        "unmet_must": union("unmet_must"),
        "unmet_should": union("unmet_should"),
        "verdict": _lowest([t["verdict"] for t in tests]),
    }


def _combine(check_id: str, per_run: list[tuple[str, Check]]) -> Check:
    """One run check over a test's runs: not met where any run fails it (those runs' evidence,
    the runs with the same evidence together), met where every run it applies to meets it, not
    applicable where it applies to none."""
    first = per_run[0][1]
    unmet = [(label, c) for label, c in per_run if c["met"] is False]
    met = [(label, c) for label, c in per_run if c["met"] is True]
    if unmet:
        shown = unmet
        value: Met = False
    elif met:
        shown, value = met[:1], True
    else:
        shown, value = per_run[:1], None
    groups: dict[str, list[str]] = {}
    for label, c in shown:
        groups.setdefault(str(c["evidence"]), []).append(label)
    prefix = "" if value is not True else f"every run it applies to ({len(met)}); "
    evidence = prefix + "; ".join(f"{', '.join(labels)}: {e}" for e, labels in groups.items())
    return {**first, "id": check_id, "met": value, "evidence": evidence}


def procedure_compliance(
    procedure: Mapping[str, Any], reports: Sequence[tuple[str, Mapping[str, Any]]]
) -> ComplianceSection:
    """The draft 2 verdict of one procedure (``procedure.json``, without its compliance) over
    section 4's statements and its own section's: every run check over its level ``reports``
    (label, report), and the test-wide checks over the procedure.

    Returns the shape of :func:`compliance` with one entry in ``tests``.
    """
    runs = [(label, ReportFacts(r)) for label, r in reports]
    checks = [
        _combine(req.id, [(label, req.check(f)) for label, f in runs])
        for req in REQUIREMENTS
        if runs
    ]
    facts = ProcedureFacts(tuple(f for _, f in runs), procedure)
    checks += [req.check(facts) for req in PROCEDURE_REQUIREMENTS]
    sut = mapping(mapping(procedure.get("configuration")).get("sut"))
    test = str(procedure.get("draft_section"))
    tests = (
        [verdict_for_test(test, nonblank(sut.get("boundary")), checks)]
        if test in TEST_TITLES
        else []
    )
    scope = (
        f"the procedure's {len(runs)} run(s) together: section 4's statements and section "
        f"{test}'s; a run check is met only where every run it applies to meets it"
    )
    return _summary(scope, checks, tests)


def comparison_compliance(
    comparison: Mapping[str, Any], reports: Sequence[Mapping[str, Any]]
) -> ComplianceSection:
    """The draft 2 verdict of a multi-system comparison (test ``6``: ``otelbench compare``'s
    result without its compliance, and every compared run's report).

    Returns the shape of :func:`compliance` with one entry in ``tests``.
    """
    facts = ProcedureFacts(tuple(ReportFacts(r) for r in reports), comparison)
    checks = [req.check(facts) for req in PROCEDURE_REQUIREMENTS]
    scope = (
        f"a comparison of {len(reports)} runs: the multi-system statements (section 6) and "
        "4.4.2's reference tokenizer for cross-system comparison"
    )
    return _summary(scope, checks, [verdict_for_test("6", None, checks)])


def compliance(report: Mapping[str, Any]) -> ComplianceSection:
    """The report's methodology compliance: every check and the verdict of each test the run
    stands for (:data:`RUN_TESTS`).

    Returns ``{scope, verdict_rule, checks, tests, unmet_must, unmet_should, verdict}``; each
    check is ``{id, section, level, requirement, met, evidence, judges}`` with ``met`` True, False
    or None (not applicable); each test ``{test, title, verdict, counts, unmet_must,
    unmet_should, statements}`` (:func:`verdict_for_test`); ``verdict`` is the lowest of the tests'.
    Pure: the same report gives the same result.

    >>> result = compliance(report)  # doctest: +SKIP
    >>> [(t["test"], t["verdict"]) for t in result["tests"]]  # doctest: +SKIP
    [('5.1', 'not compliant'), ('5.4', 'conditionally compliant')]
    """
    facts = ReportFacts(report)
    checks = [r.check(facts) for r in REQUIREMENTS]
    checks += [r.check(ProcedureFacts((facts,))) for r in PROCEDURE_REQUIREMENTS]
    boundary = nonblank(facts.sut.get("boundary"))
    tests = [verdict_for_test(test, boundary, checks) for test in RUN_TESTS]
    return _summary(SCOPE, checks, tests)
