"""The methodology compliance of a report, a procedure or a comparison (draft 2: per test).

Pure functions of the run reports (:class:`~otelbench.model.report.ReportBody`,
``docs/report-schema.md``) and the procedure dicts (``docs/procedure-schema.md``), so a report
rebuilt from the same store (``otelbench report``) recomputes them identically; the
configuration summary (5.1.5.1) the checks read is :mod:`otelbench.report.configuration`'s
(re-exported here).

* the **checks**: :data:`REQUIREMENTS` read one run's report (what it declared in ``run``,
  measured in ``metrics``, and declared about its method in ``methodology``; never
  ``configuration`` or ``compliance`` themselves); :data:`PROCEDURE_REQUIREMENTS` read a whole
  test (:class:`ProcedureFacts`: its runs and ``procedure.json`` or ``compare.json``). Each gives
  ``met`` (True or False) with the facts as evidence, and names the normative statements it
  judges (:mod:`otelbench.draft.statements` ids). A check judges evidence the run produced: where
  the evidence is absent (no successful request, no ``client_health``, no span of a phase) it is
  not met and says what is missing. Its ``met`` is None only where the registry's condition of
  what it judges (``draft.statements.CONDITIONS``: "For open-loop:", "When using dataset-derived
  workloads" …) does not hold for the run, decided here from the run's facts
  (:data:`CONDITION_HOLDS`), never by the check itself. Evidence that only a declaration can give
  (the tokenizer, the SUT's facts) is labelled ``declared``, and every field the statement names
  is required;
* the **verdict of a test** (:func:`verdict_for_test`) over the statements that apply to it:
  section 4's and its own section's, for its SUT boundary, less those another of its sentences
  overrides and those whose condition does not hold. A statement judged ``measured`` or
  ``declared`` is not met when any of its checks is not met, or when it has no evidence at all;
  an umbrella statement is met when every bullet that applies is; an ``enforced`` one is a
  capability of otelbench itself, the evidence says what and where:

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
from typing import Any, Final, Generic, Literal, TypeVar, cast

from otelbench import draft, semconv
from otelbench.draft.statements import (
    ALL_STATEMENTS,
    BY_ID,
    CONDITIONS,
    TEST_TITLES,
    Bullet,
    Statement,
)
from otelbench.metrics.latency import input_bucket_labels
from otelbench.metrics.warmup import probe_variation
from otelbench.model import report as rt
from otelbench.model.compare import CompareBody
from otelbench.model.procedure import LevelEntry, PrefixCacheSection, ProcedureReport
from otelbench.model.report import (
    BulletResult,
    Check,
    ComplianceCounts,
    ComplianceSection,
    LevelCounts,
    StatementResult,
    TestVerdict,
    Verdict,
)
from otelbench.model.sut import GuardrailsDeclaration
from otelbench.query.shards import LATE_START_MS
from otelbench.render.format import fmt, integer, nonblank, number
from otelbench.report.configuration import (
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

__all__ = [
    "CONDITION_HOLDS",
    "DRAFT_INPUT_BUCKETS",
    "NOT_DECLARED",
    "POISSON_MIN_GAPS",
    "POISSON_MIN_P_VALUE",
    "PROCEDURE_REQUIREMENTS",
    "REQUIREMENTS",
    "RUN_TESTS",
    "VERDICT_CONDITIONAL",
    "VERDICT_NOT_COMPLIANT",
    "VERDICT_UNCONDITIONAL",
    "WARMUP_CHECKS",
    "ProcedureFacts",
    "Requirement",
    "comparison_compliance",
    "compliance",
    "condition_holds",
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
    "compliant when every MUST and SHOULD is met. A statement that applies and has no evidence "
    "is not met. Statements that do not apply (met null: another test or boundary, overridden by "
    "the test's own sentence, or a condition of the draft's that the run does not meet) do not "
    "count; setup parameters (limits the draft states without a keyword) weigh as SHOULD. The "
    "overall verdict is the lowest of the tests'."
)


OPEN_LOOP_MODES: Final = frozenset({"poisson", "uniform", "bursty", "trace"})
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
DRAFT_INPUT_BUCKETS: Final = input_bucket_labels(draft.TTFT_INPUT_BUCKET_EDGES)
"""5.1.4.2's RECOMMENDED input-length buckets, as the report labels them."""
CONTENDED_WAIT_SHARE: Final = 0.05
"""A loop thread waiting for a core this share of the time or more (or the host stealing this
share of the CPU time): other processes held the cores."""
EXACT_CHUNK_TOKEN_SOURCES: Final = frozenset({semconv.CHUNK_TOKENS_FROM_USAGE})
"""``methodology.itl_method.chunk_token_sources`` that count each chunk's tokens (the others,
e.g. ``one_per_chunk``, assume them)."""
POISSON_MIN_GAPS: Final = 20
"""Fewer gaps between sent requests than this cannot show an arrival distribution (5.1.2.2)."""
POISSON_MIN_P_VALUE: Final = 0.01
"""The Kolmogorov–Smirnov test's significance level for 5.1.2.2's Poisson arrivals: gaps whose
p-value against the exponential at the declared rate is below it are not exponential."""
_SHORT_OUTPUT_MARKER: Final = "output tokens, the minimum for ITL statistics"
"""How the report's deviation for requests under 5.4.2's output-token minimum reads."""
WARMUP_CHECKS: Final = frozenset(
    {"warmup", "warmup-model-loaded", "warmup-drained", "warmup-cache-populated",
     "warmup-verified"}
)  # fmt: skip
"""The checks of 4.5.1's and 4.5.2's warm-up: a procedure judges them on the levels that warmed
the SUT up (:func:`procedure_compliance`)."""


# ------------------------------------------------------------------------------------------
# compliance checks (draft 2): registered, in report order
# ------------------------------------------------------------------------------------------

_F = TypeVar("_F", bound="ReportFacts | ProcedureFacts")
Evaluate = Callable[[ReportFacts], tuple[bool, str]]


def _placement(
    judges: tuple[str, ...], section: str | None, level: Level | None
) -> tuple[str, Level]:
    """A check's draft section and level: its own where it gives them, else those of the one
    statement it judges (:class:`Requirement` ensures there is one)."""
    if section is not None and level is not None:
        return section, level
    judged = BY_ID[judges[0]]
    return section or judged.section, level or judged.level


@dataclass(frozen=True)
class Requirement(Generic[_F]):
    """One check of the draft: what it asks (its own short text, narrower than the statements
    it judges), how it is checked (over one run's :class:`ReportFacts`, or a whole test's
    :class:`ProcedureFacts`), and the normative statements (:mod:`otelbench.draft.statements`
    ids) it judges.

    The statements place it: a check of exactly one statement has that statement's section and
    level (:attr:`section`, :attr:`level`), unless it gives its own (``own_section``,
    ``own_level``) with an ``override`` saying why, e.g. the narrower subsection it measures; a
    check of several statements, or of none (judged through an umbrella's bullets only), gives
    its own section and level."""

    id: str
    text: str
    evaluate: Callable[[_F], tuple[bool, str]]
    judges: tuple[str, ...] = ()
    condition: str | None = None
    """The registry's condition (``draft.statements.CONDITIONS``) of what it judges: where it does
    not hold for the run, the check is not applicable (met None) and says so."""
    own_section: str | None = None
    """Its section where it is not its one statement's (or where it judges several, or none)."""
    own_level: Level | None = None
    """Its level where it is not its one statement's (or where it judges several, or none)."""
    override: str = ""
    """Why a check of one statement gives its own section or level (one line)."""

    def __post_init__(self) -> None:
        own = self.own_section is not None or self.own_level is not None
        if len(self.judges) == 1:
            if own != bool(self.override):
                raise ValueError(
                    f"check {self.id}: a section or level of its own goes with an override "
                    "reason, and an override reason with a section or level of its own"
                )
        elif self.own_section is None or self.own_level is None or self.override:
            raise ValueError(
                f"check {self.id} judges {len(self.judges)} statements: it gives its own "
                "section and level, and no override"
            )

    @property
    def section(self) -> str:
        """The draft section it is listed under."""
        return _placement(self.judges, self.own_section, self.own_level)[0]

    @property
    def level(self) -> Level:
        """Its level: MUST or SHOULD."""
        return _placement(self.judges, self.own_section, self.own_level)[1]

    def check_judges(self) -> list[str]:
        """The statements it judges: its own, and the umbrellas whose bullets name it."""
        return [*self.judges, *_UMBRELLAS.get(self.id, ())]

    def check(self, facts: _F) -> Check:
        met: Met
        if self.condition is not None and not condition_holds(self.condition, facts):
            met, evidence = None, f"not applicable: {CONDITIONS[self.condition]}"
        else:
            met, evidence = self.evaluate(facts)
        return {
            "id": self.id,
            "section": self.section,
            "level": self.level,
            "requirement": self.text,
            "met": met,
            "evidence": evidence,
            "judges": self.check_judges(),
        }


def _registrar(
    registry: list[Requirement[_F]],
) -> Callable[..., Callable[[Callable[[_F], tuple[bool, str]]], Callable[[_F], tuple[bool, str]]]]:
    """A decorator factory that appends each decorated check to ``registry``, in order: its id,
    its text, the statements it judges and, where it does not judge exactly one, its section and
    level (or, where it does, an override of them with the reason; :class:`Requirement`)."""

    def requirement(
        id: str,
        text: str,
        *,
        judges: tuple[str, ...],
        section: str | None = None,
        level: Level | None = None,
        override: str = "",
        condition: str | None = None,
    ) -> Callable[[Callable[[_F], tuple[bool, str]]], Callable[[_F], tuple[bool, str]]]:
        def register(
            evaluate: Callable[[_F], tuple[bool, str]],
        ) -> Callable[[_F], tuple[bool, str]]:
            registry.append(
                Requirement(
                    id,
                    text,
                    evaluate,
                    judges,
                    condition,
                    own_section=section,
                    own_level=level,
                    override=override,
                )
            )
            return evaluate

        return register

    return requirement


REQUIREMENTS: list[Requirement[ReportFacts]] = []
"""Every check, in the order the report lists them."""
_requirement = _registrar(REQUIREMENTS)


@_requirement(
    "sut-boundary",
    "The SUT boundary MUST be declared.",
    judges=("sut-boundary-declared",),
)
def _sut_boundary(f: ReportFacts) -> tuple[bool, str]:
    boundary = boundary_text(f)
    if boundary is None:
        return False, "no SUT boundary declared (run.sut.boundary is absent; --sut-boundary)"
    return True, f"declared: run.sut.boundary {boundary}"


_NO_CLOCK: Final = (
    "no evidence: the run recorded no load-generator clock or event-loop timing "
    "(run.client_health is absent)"
)


def _clock_steps(f: ReportFacts) -> tuple[float, float, str] | None:
    """The client clock's resolution and median read delay (ns), with their evidence, from
    ``run.client_health.clock`` (None: not measured)."""
    health = f.run["client_health"]
    clock = None if health is None else health.get("clock")
    if clock is None:
        return None
    reads = clock["read_delay_ns"]
    read = reads["p50"]
    if read is None:
        return None
    resolution = max(clock["resolution_ns"], clock["clock_getres_ns"] or 0.0)
    evidence = (
        f"{clock['clock']} ({clock['implementation']}): "
        f"resolution {resolution:g} ns as the clock reports it, back-to-back reads P50 "
        f"{read:g} ns, P99 {fmt(reads['p99'], 0, 'ns')} (measured)"
    )
    return resolution, read, evidence


@_requirement(
    "timing-resolution",
    f"The load generator MUST measure time with a resolution of {draft.TIMING_RESOLUTION_MS:g} ms "
    "or better.",
    judges=("timing-resolution",),
)
def _timing_resolution(f: ReportFacts) -> tuple[bool, str]:
    """Judged on what the run measured of itself (``run.client_health``): the clock's reported
    resolution and read delay, and how late its event loops took the timestamps (a chunk is
    stamped when the loop gets to it: lateness over :data:`otelbench.draft.TIMING_RESOLUTION_MS`
    breaks the resolution whatever the clock's)."""
    steps = _clock_steps(f)
    late, health = _loop_lateness(f)
    if steps is None or health is None:
        return False, _NO_CLOCK
    resolution, read, clock = steps
    coarse = max(resolution, read) > draft.TIMING_RESOLUTION_MS * 1e6  # ns
    evidence = f"{clock}; {health}"
    if coarse:
        return False, (
            f"{evidence}: the clock itself is coarser than {draft.TIMING_RESOLUTION_MS:g} ms"
        )
    shards = f.run.get("shards")
    if shards is not None:  # every host keeps time, or the run does not
        ok, per_shard = _shards_timing(shards, _health_limit(f))
        return ok and not late, f"{evidence}; {per_shard}"
    return not late, evidence


def _health_limit(f: ReportFacts) -> float:
    """The loop-lateness P99 limit the run's ``client_health`` states (ms)."""
    health = f.run["client_health"]
    return draft.TIMING_RESOLUTION_MS if health is None else health["limit_ms"]


def _missing_shards(shards: rt.Shards) -> str:
    missing = shards["missing"]
    if not missing:
        return ""
    return (
        f"; shard(s) {', '.join(map(str, missing))} of {shards['count']}: no evidence (no run span)"
    )


def _shards_timing(shards: rt.Shards, limit: float) -> tuple[bool, str]:
    """Draft 4.2.1 per shard of a run sent from several hosts: each host's own event-loop
    lateness P99 within ``limit``; a shard with no run span has no evidence."""
    rows = shards["rows"]
    late = [r["index"] for r in rows if (r["loop_lateness_p99_ms"] or 0.0) > limit]
    unmeasured = [r["index"] for r in rows if r["loop_lateness_p99_ms"] is None]
    figures = ", ".join(f"{r['index']} {fmt(r['loop_lateness_p99_ms'], 3, 'ms')}" for r in rows)
    text = f"per shard (run.shards), loop lateness P99: {figures}" + _missing_shards(shards)
    if late:
        text += f"; over {limit:g} ms on shard(s) {', '.join(map(str, late))}"
    ok = not late and not unmeasured and not shards["missing"]
    return ok, text


def _loop_lateness(f: ReportFacts) -> tuple[bool, str | None]:
    """Whether the load generator's event loops ran too late to time to 1 ms (loop lateness P99
    over ``run.client_health``'s limit), with the evidence and what to do; (False, None) when
    the run did not measure it."""
    health = f.run["client_health"]
    if health is None:
        return False, None
    lateness = health["loop_lateness_ms"]
    p99, limit = lateness["p99"], health["limit_ms"]
    if p99 is None:
        return False, None
    cpus = [w["cpu"] for w in health["workers"]]
    busiest = max((c["utilization"] or 0.0 for c in cpus), default=0.0)
    waited = max((c["runqueue_wait_share"] or 0.0 for c in cpus), default=0.0)
    stolen = max((c["host_steal_share"] or 0.0 for c in cpus), default=0.0)
    evidence = (
        f"event-loop lateness over {len(cpus)} worker(s): P50 "
        f"{fmt(lateness['p50'], 3, 'ms')}, P99 {fmt(p99, 3, 'ms')}, max "
        f"{fmt(lateness['max'], 3, 'ms')}; busiest worker's CPU {busiest:.0%} of a "
        f"core, longest wait for a core {waited:.0%} of the time"
        + (f", {stolen:.0%} of the CPU time taken by the host (steal)" if stolen >= 0.005 else "")
        + _read_delay(health)
        + _gc_pauses(health, limit)
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
    workers = None if f.load is None else f.load.get("workers")
    pinned = None if workers is None else workers.get("cpus")
    if pinned is None:
        return (
            "other processes kept the load generator waiting for a core: quiet the host or "
            "give the load generator cores of its own (--loadgen-cpus)"
        )
    cpus = ",".join(str(c) for c in pinned["loadgen"])
    return (
        f"other processes kept the load generator waiting on its own CPUs (--loadgen-cpus "
        f"{cpus}): quiet the host or give it CPUs nothing else runs on"
    )


def _gc_pauses(health: rt.ClientHealth, limit: float) -> str:
    """The load generator's own garbage-collection pauses over ``limit`` ms, where it counted
    them and had any."""
    pauses = health.get("gc_pauses")
    if pauses is None or not pauses["over_limit"]:
        return ""
    return (
        f"; its garbage collector paused it {pauses['over_limit']} time(s) for over {limit:g} ms, "
        f"longest {fmt(pauses['max_ms'], 1, 'ms')} ({pauses['full']} full collection(s) in all)"
    )


def _read_delay(health: rt.ClientHealth) -> str:
    reads = health["read_delay_ms"]
    if not reads["count"]:
        return ""
    return (
        f"; data waited in the kernel before being read P99 "
        f"{fmt(reads['p99'], 3, 'ms')}, max {fmt(reads['max'], 3, 'ms')}"
    )


@_requirement(
    "timing-resolution-us",
    "Microsecond resolution is RECOMMENDED for ITL measurement.",
    judges=("timing-resolution-us",),
)
def _timing_resolution_us(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the clock the run measured: its reported resolution and back-to-back read
    delay within 1 µs (the chunk arrival offsets are then stored as integer µs)."""
    steps = _clock_steps(f)
    if steps is None:
        return False, _NO_CLOCK
    resolution, read, clock = steps
    if max(resolution, read) > 1000.0:
        return False, f"{clock}: coarser than 1 µs"
    return True, f"{clock}; chunk arrival offsets stored as integer µs"


@_requirement(
    "streaming-per-chunk",
    "The load generator MUST use a streaming protocol and record the arrival time of each "
    "token or chunk, not only the complete response.",
    judges=("streaming-support", "streaming-per-chunk"),
    section="4.2.2",
    level="MUST",
)
def _streaming(f: ReportFacts) -> tuple[bool, str]:
    protocol = nonblank(f.itl_method["protocol"])
    chunks = f.client["tokens_per_chunk"]["count"]
    if not f.succeeded:
        return False, _no_success("no chunk arrival time was recorded")
    if protocol is None or not chunks:
        return False, (
            f"protocol {protocol or 'not declared'}; {chunks} content chunk arrival times "
            f"for {f.succeeded} successful requests"
        )
    return True, (
        f"{protocol}; arrival times of {chunks} content chunks of {f.succeeded} successful "
        "requests recorded"
    )


@_requirement(
    "open-loop-isolation",
    "In open-loop mode, slow responses MUST NOT delay the submission of later requests.",
    judges=("open-loop-isolation",),
    condition="open-loop",
)
def _open_loop_isolation(f: ReportFacts) -> tuple[bool, str]:
    mode = f.mode
    if mode not in OPEN_LOOP_MODES:
        return False, f"load model {mode or 'not recorded'}: open-loop isolation not shown"
    gen = f.run["load_generator"]
    if gen is None:
        return False, f"open-loop {mode} run with no schedule lag recorded: isolation not shown"
    lag = gen["schedule_lag_ms"]
    facts = (
        f"open-loop {mode}; schedule lag of {lag['count']} requests P50 "
        f"{fmt(lag['p50'], 2, 'ms')}, P99 {fmt(lag['p99'], 2, 'ms')}, max "
        f"{fmt(lag['max'], 2, 'ms')}"
    )
    ok, per_shard = True, ""
    shards = f.run.get("shards")
    if shards is not None:  # every host kept its part of the schedule, or the run did not
        ok, text = _shards_schedule(shards)
        per_shard = f"; {text}"
    if gen["generator_bottleneck_flagged"] is True:
        return False, (
            f"{facts}; flagged: the load generator fell behind its schedule (its P99 send lag "
            "over all it sent exceeded its limit), the generator, not the target, may have "
            f"limited the offered load (run.load_generator.generator_bottleneck_flagged){per_shard}"
        )
    if shards is not None:
        return ok, f"{facts}{per_shard}"
    return True, f"{facts}; sends are scheduled independently of responses, not flagged"


def _shards_schedule(shards: rt.Shards) -> tuple[bool, str]:
    """Draft 4.2.5 per shard: no shard fell behind its schedule, started late for the agreed
    start (:data:`otelbench.query.shards.LATE_START_MS`) or sent nothing that was stored."""
    rows = shards["rows"]
    flagged = [r["index"] for r in rows if r["generator_bottleneck"]]
    late = [r["index"] for r in rows if (r["start_late_ms"] or 0.0) > LATE_START_MS]
    figures = ", ".join(
        f"{r['index']} {fmt(r['schedule_lag_p99_ms'], 2, 'ms')}"
        + (f" (started {fmt(r['start_late_ms'], 1, 'ms')} late)" if r["index"] in late else "")
        for r in rows
    )
    text = f"per shard (run.shards), schedule lag P99: {figures}" + _missing_shards(shards)
    if flagged:
        text += f"; fell behind its schedule: shard(s) {', '.join(map(str, flagged))}"
    return not flagged and not late and not shards["missing"], text


def _no_success(missing: str) -> str:
    return f"no evidence: no request succeeded, so {missing}"


@_requirement(
    "request-timestamps",
    "The load generator MUST record each request's submission, first token and final token "
    "timestamps.",
    judges=(),
    section="4.2.6",
    level="MUST",
)
def _request_timestamps(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the stored spans: every successful request has T_submit and its final token
    time (the end-to-end latency's samples) and, where content came, its first token time (the
    TTFT samples)."""
    if not f.succeeded:
        return False, _no_success("no first or final token time was recorded")
    e2e = f.client["e2e_ms"]["count"]
    ttft = f.ttft_samples
    evidence = (
        f"of {f.succeeded} successful requests, {e2e} with submission and final token times "
        f"(metrics.client.e2e_ms), {ttft} with their first token time (metrics.client.ttft_ms)"
    )
    return e2e == f.succeeded and ttft > 0, evidence


@_requirement(
    "request-status",
    "The load generator MUST record each request's success or failure status.",
    judges=(),
    section="4.2.6",
    level="MUST",
)
def _request_status(f: ReportFacts) -> tuple[bool, str]:
    r = f.requests
    total, ok, failed, by_type = r["total"], r["succeeded"], r["failed"], r["failed_by_type"]
    types = ", ".join(f"{k}: {v}" for k, v in by_type.items())
    evidence = f"{total} requests: {ok} succeeded, {failed} failed" + (
        f" ({types})" if types else ""
    )
    if ok + failed != total or sum(by_type.values()) != failed:
        return False, f"{evidence}; the counts do not add up"
    return True, evidence


@_requirement(
    "token-counts",
    "The load generator MUST record each request's input and output token counts.",
    judges=(),
    section="4.2.6",
    level="MUST",
)
def _token_counts(f: ReportFacts) -> tuple[bool, str]:
    if not f.succeeded:
        return False, _no_success("no token was counted")
    with_input = sum(b["count"] for b in f.client["ttft_by_input_tokens"])
    ttft = f.ttft_samples
    output = f.client["throughput"]["output_tokens"]
    evidence = (
        f"input token counts for {with_input} of {ttft} requests with a TTFT; "
        f"{output} output tokens counted over {f.succeeded} successful requests"
    )
    return (with_input == ttft and output > 0), evidence


_LENGTH_PARAMETERS: Final = frozenset(
    {"min", "max", "mean", "std", "mu", "sigma", "value", "values", "quantiles", "empirical",
     "target_lengths", "bounds"}
)  # fmt: skip
"""4.3.1's length parameters: "mean, std, min, max, or histogram" (and a fixed value)."""


def _length_missing(spec: rt.LengthSpec | None, *, control: bool) -> list[str]:
    """What a 4.3.1 length distribution (None: none declared) lacks: type, parameters, unit (and
    the output's control method). A distribution "per class" is specified by its request
    classes."""
    declared: Mapping[str, object] = {} if spec is None else spec
    if declared.get("distribution") == "per class":
        return []
    missing = [
        label
        for label, present in (
            ("distribution type", bool(nonblank(declared.get("distribution")))),
            ("parameters", bool(_LENGTH_PARAMETERS & set(declared))),
            ("unit", bool(nonblank(declared.get("unit")))),
            ("control method", not control or bool(nonblank(declared.get("control")))),
        )
        if not present
    ]
    return missing


def _content_missing(spec: rt.WorkloadSpec) -> list[str]:
    described = nonblank(spec.get("input", {}).get("content")) or nonblank(
        spec.get("content", {}).get("domain")
    )
    return [
        label
        for label, present in (
            ("content (domain)", described is not None),
            ("system prompt presence", "system_prompt" in spec),
        )
        if not present
    ]


def _prefix_missing(spec: rt.WorkloadSpec) -> list[str]:
    if "prefix_sharing" not in spec:
        return ["prefix sharing"]
    sharing = spec["prefix_sharing"]
    if not sharing:
        return []  # declared: none
    return [
        label
        for label, present in (
            ("fraction of requests sharing", number(sharing.get("ratio")) is not None),
            ("shared prefix length", bool(sharing.get("length"))),
        )
        if not present
    ]


_WORKLOAD_ITEMS: Final[tuple[tuple[str, str, Callable[[rt.WorkloadSpec], list[str]]], ...]] = (
    ("workload-input", "its input length distribution (type, parameters, unit)",
     lambda spec: _length_missing(spec.get("input"), control=False)),
    ("workload-output", "its output length distribution (type, parameters, control method, unit)",
     lambda spec: _length_missing(spec.get("output"), control=True)),
    ("workload-content", "its content characteristics (domain, system prompt presence)",
     _content_missing),
    ("workload-prefix-sharing", "its prefix sharing (fraction, shared prefix length)",
     _prefix_missing),
)  # fmt: skip
"""4.3.1's four items, each a check of the workload's specification."""


def _workload_item(missing_of: Callable[[rt.WorkloadSpec], list[str]]) -> Evaluate:
    def evaluate(f: ReportFacts) -> tuple[bool, str]:
        spec = f.spec
        text = workload_text(f) or "no workload recorded"
        if not spec:
            return False, f"declared: {text}; no workload specification (run.workload.spec)"
        missing = missing_of(spec)
        if missing:
            return False, f"declared: {text}; the spec lacks: {', '.join(missing)}"
        return True, f"declared: {text}"

    return evaluate


REQUIREMENTS.extend(
    Requirement(
        id,
        f"Each workload MUST specify {what}.",
        _workload_item(missing_of),
        ("custom-workload-specified",),
        own_section="4.3.1",
        override="it checks one item of 4.3.1's list, which details 4.3's full specification",
    )
    for id, what, missing_of in _WORKLOAD_ITEMS
)


@_requirement(
    "dataset-provenance",
    "A dataset-derived workload MUST specify the dataset version, subset selection and "
    "preprocessing.",
    judges=("dataset-provenance",),
    condition="dataset-derived",
)
def _dataset_provenance(f: ReportFacts) -> tuple[bool, str]:
    dataset = _dataset(f)
    version = dataset.get("sha256") or dataset.get("version")
    selection, filters = dataset.get("selection"), dataset.get("filters")
    evidence = (
        f"declared: dataset {dataset.get('path', '?')}: version (sha256) "
        f"{version or NOT_DECLARED}; "
        f"selection {selection or NOT_DECLARED}; preprocessing/filters "
        f"{filters if filters is not None else NOT_DECLARED}"
    )
    return bool(version and selection and filters is not None), evidence


@_requirement(
    "seed-reported",
    "Workload generation MUST use a deterministic random seed, and the seed MUST be reported.",
    judges=("deterministic-seed", "seed-reported"),
    section="4.3.3",
    level="MUST",
)
def _seed_reported(f: ReportFacts) -> tuple[bool, str]:
    seed = f.run["seed"]
    if seed is None:
        return False, "no seed recorded (run.seed)"
    arrival = None if f.load is None else integer(f.load.get("arrival", {}).get("seed"))
    schedule = f", arrival schedule seed {arrival}" if arrival is not None else ""
    return True, f"run seed {seed}{schedule}"


@_requirement(
    "request-sequence-reproducible",
    "Testers SHOULD publish the exact request sequences or the generation code with fixed seeds.",
    judges=("request-sequence-published",),
)
def _request_sequence(f: ReportFacts) -> tuple[bool, str]:
    seed = f.run["seed"]
    version = nonblank(f.run["otelbench_version"])
    name = f.workload_name
    if seed is None or version is None or name is None:
        return False, (
            f"generator otelbench {version or '?'}, workload {name or '?'}, seed "
            f"{seed if seed is not None else '?'}: the request sequence cannot be regenerated"
        )
    return True, f"regenerable: otelbench {version} workload {name!r} with seed {seed}"


@_requirement(
    "tokenizer-spec",
    "The report MUST specify the tokenizer's name and version, vocabulary size and source.",
    judges=(),
    section="4.4.1",
    level="MUST",
)
def _tokenizer_spec(f: ReportFacts) -> tuple[bool, str]:
    tok = f.run["tokenizer"]
    fields = (
        ("name", None if tok is None else tok["name"]),
        ("version", None if tok is None else tok.get("version")),
        ("vocabulary size", None if tok is None else tok.get("vocab_size")),
        ("source", None if tok is None else tok["source"]),
    )
    missing = [label for label, value in fields if not value]
    text = tokenizer_text(f) or "no tokenizer declared"
    version = None if tok is None else nonblank(tok.get("version"))
    shown = f"declared: {text}" + (f", version {version}" if version else "")
    if missing:
        return False, f"{shown}; not declared: {', '.join(missing)} (declare with --tokenizer)"
    return True, shown


@_requirement(
    "token-counting-option",
    "The report MUST declare the token counting method: Option A (native) or B (reference).",
    judges=("token-counting-option",),
)
def _token_counting(f: ReportFacts) -> tuple[bool, str]:
    tok = f.run["tokenizer"]
    if tok is None:
        return False, "no token counting option declared (run.tokenizer.option)"
    return True, f"declared: Option {tok['option']}"


@_requirement(
    "special-tokens",
    "The report MUST specify the handling of BOS/EOS, system prompt and tool-call tokens.",
    judges=(),
    section="4.4.3",
    level="MUST",
)
def _special_tokens(f: ReportFacts) -> tuple[bool, str]:
    tok = f.run["tokenizer"]
    fields = (
        ("BOS/EOS", None if tok is None else tok.get("bos_eos")),
        ("system prompt", None if tok is None else tok.get("system_prompt")),
        ("tool-call tokens", None if tok is None else tok.get("tool_call_formatting")),
    )
    declared = [f"{label} {value}" for label, value in fields if value]
    missing = [label for label, value in fields if not value]
    if missing:
        have = f"{'; '.join(declared)}; " if declared else ""
        return False, f"declared: {have}not declared: {', '.join(missing)}"
    return True, "declared: " + "; ".join(declared)


def _phase(f: ReportFacts, name: str) -> rt.Phase | None:
    """``run.phases[name]``: the run's client spans of that request phase (None: none)."""
    return f.run["phases"].get(name)


@_requirement(
    "warmup",
    f"Before measurement, testers MUST process at least {draft.WARMUP_MIN_REQUESTS} requests or "
    f"{draft.WARMUP_MIN_OUTPUT_TOKENS:,} output tokens, whichever is greater.",
    judges=(),
    section="4.5.1",
    level="MUST",
    condition="warm-start",
)
def _warmup(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the warm-up's spans (``run.phases.warmup``): only successful requests count
    (a failed request processed nothing), and their output tokens as the spans' usage gives
    them; "whichever is greater" means both floors."""
    spans = _phase(f, semconv.PHASE_WARMUP)
    if spans is None:
        return False, "no evidence: no warm-up request is among the run's spans (run.phases)"
    ok, tokens = spans["succeeded"], spans["output_tokens"]
    evidence = (
        f"warm-up spans: {ok} of {spans['requests']} requests succeeded, {tokens} output tokens"
    )
    if ok >= draft.WARMUP_MIN_REQUESTS and tokens >= draft.WARMUP_MIN_OUTPUT_TOKENS:
        return True, evidence
    return False, (
        f"{evidence}; the draft needs at least {draft.WARMUP_MIN_REQUESTS} successful requests and "
        f"{draft.WARMUP_MIN_OUTPUT_TOKENS} output tokens"
    )


@_requirement(
    "warmup-model-loaded",
    "Before measurement, testers MUST load the model fully into accelerator memory.",
    judges=(),
    section="4.5.1",
    level="MUST",
    condition="warm-start",
)
def _warmup_model_loaded(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the probes: a model that served the probe requests (sent alone, before and
    after the warm-up) was loaded; none succeeding shows nothing served."""
    probes = _phase(f, semconv.PHASE_PROBE)
    if probes is None or not probes["succeeded"]:
        return False, (
            f"no evidence: none of the {0 if probes is None else probes['requests']} probe "
            "requests succeeded, so nothing shows the model loaded and serving"
        )
    return True, (
        f"{probes['succeeded']} of {probes['requests']} probe requests served before measurement"
    )


@_requirement(
    "warmup-drained",
    "Before measurement, testers MUST wait for the request queue to drain completely.",
    judges=(),
    section="4.5.1",
    level="MUST",
    condition="warm-start",
)
def _warmup_drained(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the spans: no warm-up or probe request ended after the first measured request
    was submitted (its end is T_submit + the span's duration)."""
    phases = [(n, _phase(f, n)) for n in (semconv.PHASE_WARMUP, semconv.PHASE_PROBE)]
    seen = [(n, p) for n, p in phases if p is not None]
    measure = _phase(f, semconv.PHASE_MEASURE)
    if not seen or measure is None:
        return False, "no evidence: the spans hold no warm-up or no measured request (run.phases)"
    late = {n: p["ended_after_measurement_start"] for n, p in seen}
    last = max(p["last_end_unix"] for _, p in seen)
    start = measure["first_submit_unix"]
    evidence = (
        f"the last warm-up or probe request ended {1000 * (start - last):.1f} ms before the "
        "first measured request was submitted"
        if not any(late.values())
        else "in flight when the measurement began: "
        + ", ".join(f"{n} {k} request(s)" for n, k in late.items() if k)
    )
    return not any(late.values()), f"from the spans: {evidence}"


@_requirement(
    "warmup-cache-populated",
    "If prefix caching is enabled and being tested, the warm-up MUST populate the cache with "
    "representative prefixes.",
    judges=(),
    section="4.5.1",
    level="MUST",
    condition="prefix-cache-tested",
)
def _warmup_cache(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the warm-up's and probes' spans: the server reported prompt tokens served from
    its cache (``gen_ai.usage.cache_read.input_tokens``), so the workload's shared prefixes were
    in it before measurement."""
    phases = {n: _phase(f, n) for n in (semconv.PHASE_WARMUP, semconv.PHASE_PROBE)}
    cached = {n: 0 if p is None else p["cached_tokens"] for n, p in phases.items()}
    evidence = ", ".join(f"{n} {k}" for n, k in cached.items())
    if not any(cached.values()):
        return False, (
            f"no evidence of a populated cache: cached prompt tokens reported by the server: "
            f"{evidence}"
        )
    return True, f"cached prompt tokens reported by the server before measurement: {evidence}"


@_requirement(
    "warmup-verified",
    "Warm-up completion SHOULD be verified: probe latency before and after, less than "
    f"{draft.WARMUP_STABILIZATION_THRESHOLD:.0%} variation across consecutive probes.",
    judges=(),
    section="4.5.2",
    level="SHOULD",
    condition="warm-start",
)
def _warmup_verified(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the probes' measured latencies (``run.warmup.probe_after.latency_ms``): their
    largest distance from their median, under the draft's
    :data:`otelbench.draft.WARMUP_STABILIZATION_THRESHOLD`."""
    w = f.warm()
    before, after = (None, None) if w is None else (w["probe_before"], w["probe_after"])
    if before is None or after is None:
        return False, "no evidence: no probe latency before and after a warm-up (run.warmup)"
    latencies = after["latency_ms"]
    variation = probe_variation(latencies) if latencies else after["variation"]
    evidence = (
        f"probe median latency {fmt(before['median_latency_ms'], 2, 'ms')} before, "
        f"{fmt(after['median_latency_ms'], 2, 'ms')} after; variation across "
        f"consecutive probes {'n/a' if variation is None else f'{variation:.1%}'}"
    )
    stable = variation is not None and variation < draft.WARMUP_STABILIZATION_THRESHOLD
    return stable, evidence + (": stabilized" if stable else ": NOT stabilized")


@_requirement(
    "chunking-declared",
    "The report MUST specify the protocol, whether chunks carry one or several tokens, and "
    "how multi-token chunks are handled for ITL.",
    judges=(),
    section="4.6.2",
    level="MUST",
)
def _chunking(f: ReportFacts) -> tuple[bool, str]:
    """Judged on what the run knows: every successful request's per-chunk token counts came
    from the server's usage (exact), so it can say whether chunks carried one or several
    tokens; counting each chunk as one token is an assumption, not a declaration."""
    itl = f.itl_method
    protocol, option = nonblank(itl["protocol"]), nonblank(itl["option"])
    tpc = f.client["tokens_per_chunk"]
    if not f.succeeded or not tpc["count"]:
        return False, "no evidence: no content chunk was received, so the chunking is not known"
    sources = itl["chunk_token_sources"]
    requests = sum(sources.values())
    counted = sum(n for source, n in sources.items() if source in EXACT_CHUNK_TOKEN_SOURCES)
    most = tpc["max"]
    if most is not None and most > 1:
        chunks = f"multi-token chunks (up to {most:.0f} tokens per chunk)"
    else:
        chunks = "one token per chunk"
    handling = f"multi-token chunks handled by Option {option or NOT_DECLARED}"
    engine_steps = itl.get("server_engine_steps")
    if nonblank(engine_steps):  # Option C's chunks: the engine's steps
        handling += f"; server ITL by Option C: {engine_steps}" + (
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
    "The report MUST declare which ITL option (A chunk, B distributed, C server-side) is used.",
    judges=("itl-option-declared",),
)
def _itl_method(f: ReportFacts) -> tuple[bool, str]:
    itl = f.itl_method
    option = itl["option"]
    if option not in ("A", "B", "C"):
        return False, "no ITL option declared (methodology.itl_method.option)"
    server = itl["server_option"]
    also = f"; server ITL by Option {server}" if server else ""
    name = nonblank(itl["name"])
    return True, f"client ITL by Option {option}{': ' + name if name else ''}{also}"


@_requirement(
    "itl-option-c",
    "Option C (server-side per-token timing) is RECOMMENDED when available.",
    judges=("itl-option-c",),
    condition="option-c-available",
)
def _itl_option_c(f: ReportFacts) -> tuple[bool, str]:
    server = f.server
    itl = None if server is None else server.get("itl_ms")
    hooks = 0 if server is None else server["span_sources"].get(semconv.SPAN_HOOK_REQUEST, 0)
    intervals = 0 if itl is None else itl["count"]
    claimed = f.itl_method["server_option"] == "C"
    if claimed and intervals:
        return True, (
            f"server ITL by Option C: {intervals} per-token intervals from {hooks} engine-hook "
            "spans (metrics.server.itl_ms)"
        )
    return False, (
        f"server spans were joined ({hooks} with per-token timing), server ITL by Option C "
        f"{'declared' if claimed else 'not declared'}, {intervals} server per-token intervals "
        "measured (the engine hooks give them)"
    )


def _clock_declared(f: ReportFacts) -> tuple[str | None, float | None]:
    """The declared clock synchronization: method and estimated accuracy in ms (4.7.2)."""
    declared = f.sut.get("clock_sync")
    if isinstance(declared, Mapping):
        return nonblank(declared.get("method")), number(declared.get("accuracy_ms"))
    return declared_text(declared), None


@_requirement(
    "clock-sync",
    "Load generator and SUT clocks MUST be synchronized: inherent on one machine (4.7.1); "
    "across machines the report MUST state the method and accuracy (4.7.2).",
    judges=("clock-sync-stated",),
    section="4.7",
    override="its text covers 4.7 as a whole: one machine (4.7.1) and several (4.7.2)",
    condition="distributed",
)
def _clock_sync(f: ReportFacts) -> tuple[bool, str]:
    shards = f.run.get("shards")
    if shards is not None:  # stated by each host's measurement
        _, measured = _shards_clock(shards)
        stated = all(r["clock"]["accuracy_ms"] is not None for r in shards["rows"])
        return stated and not shards["missing"], measured
    text = clock_text(f)
    method, accuracy = _clock_declared(f)
    if method is None or accuracy is None:
        missing = " and ".join(
            n for n, v in (("method", method), ("estimated accuracy", accuracy)) if v is None
        )
        return False, f"{text}; not declared: {missing} (--sut-clock-sync, --sut-clock-accuracy-ms)"
    return True, f"declared: {text}"


@_requirement(
    "clock-sync-accuracy",
    f"Across machines, clock synchronization MUST achieve {draft.CLOCK_SYNC_MAX_ERROR_MS:g} ms or "
    "better.",
    judges=("ntp-accuracy",),
    condition="distributed",
)
def _clock_sync_accuracy(f: ReportFacts) -> tuple[bool, str]:
    shards = f.run.get("shards")
    if shards is not None:  # judged on each host's measured evidence, not a declaration
        return _shards_clock(shards)
    method, accuracy = _clock_declared(f)
    if accuracy is None:
        return False, f"no clock synchronization accuracy declared (method: {method or '?'})"
    evidence = f"declared: {method or 'method not declared'}, accuracy {accuracy:g} ms"
    if accuracy > draft.CLOCK_SYNC_MAX_ERROR_MS:
        return False, f"{evidence}: worse than the draft's {draft.CLOCK_SYNC_MAX_ERROR_MS:g} ms"
    return True, evidence


def _shards_clock(shards: rt.Shards) -> tuple[bool, str]:
    """Draft 4.7.2 per shard, measured (:mod:`otelbench.loadgen.clocksync`): every host's
    clock within the limit by its own evidence; a shard without evidence, or with no run span,
    is not shown to be."""
    rows = shards["rows"]
    figures = "; ".join(
        f"{r['index']} {r['clock']['method']}, accuracy {fmt(r['clock']['accuracy_ms'], 3, 'ms')}"
        for r in rows
    )
    text = f"measured per shard (run.shards): {figures}" + _missing_shards(shards)
    outside = [r["index"] for r in rows if r["clock"]["within_limit"] is False]
    unknown = [r["index"] for r in rows if r["clock"]["within_limit"] is None]
    if outside:
        text += (
            f"; worse than {draft.CLOCK_SYNC_MAX_ERROR_MS:g} ms on shard(s) "
            f"{', '.join(map(str, outside))}"
        )
    if unknown:
        text += f"; no clock evidence from shard(s) {', '.join(map(str, unknown))}"
    return not outside and not unknown and not shards["missing"], text


@_requirement(
    "clock-sync-ptp",
    "PTP SHOULD be used when sub-millisecond accuracy is required.",
    judges=("ptp-sub-millisecond",),
    condition="sub-millisecond",
)
def _clock_sync_ptp(f: ReportFacts) -> tuple[bool, str]:
    method, accuracy = _clock_declared(f)
    evidence = f"declared: {method or 'method not declared'} for an accuracy of {accuracy:g} ms"
    return "PTP" in (method or "").upper(), evidence


@_requirement(
    "single-host",
    "Load generator and SUT on one machine is RECOMMENDED for Model Engine testing.",
    judges=("single-machine-model-engine",),
)
def _single_host(f: ReportFacts) -> tuple[bool, str]:
    host = f.target_host() or "not recorded"
    if f.loopback():
        return True, f"the target {host} is loopback: one machine"
    return False, f"the target host {host} is not loopback"


@_requirement(
    "network-rtt",
    "Network RTT SHOULD be measured and reported separately.",
    judges=("network-rtt",),
    condition="distributed",
)
def _network_rtt(f: ReportFacts) -> tuple[bool, str]:
    rtt = f.sut.get("network_rtt_ms")
    if rtt is None:
        return False, "no network RTT declared for a target on another host (sut network_rtt_ms)"
    return True, f"network RTT {rtt:g} ms (declared)"


@_requirement(
    "guardrail-disclosure",
    "The report MUST disclose input and output content filtering, the safety systems' names "
    "and whether requests were refused.",
    judges=("safety-accounted",),
    section="4.8.1",
    override="it checks 4.8.1's list of what to disclose, by which 4.8's statement is met",
)
def _guardrail_disclosure(f: ReportFacts) -> tuple[bool, str]:
    """Every item 4.8.1 names: input filtering and output filtering enabled or not (declared,
    measured from guardrail spans, or none by the Model Engine boundary's definition) with the
    systems' names where any is enabled; the refusals are ``request-status``'s counts."""
    guardrails = guardrails_text(f)
    failed = f.requests["failed"]
    by_type = ", ".join(f"{k}: {v}" for k, v in f.requests["failed_by_type"].items())
    refused = f"; failed requests: {failed}" + (f" ({by_type})" if by_type else "")
    if guardrails is None:
        boundary = nonblank(f.sut.get("boundary")) or "undeclared"
        return False, f"guardrails not declared for the {boundary} boundary{refused}"
    declared = f.sut.get("guardrails")
    if isinstance(declared, Mapping):
        missing = [
            label
            for key, label in (
                ("input_filter", "input filtering"),
                ("output_filter", "output filtering"),
            )
            if key not in declared
        ]
        if missing:
            return False, f"declared: {guardrails}; not declared: {', '.join(missing)}{refused}"
        return True, f"declared: {guardrails}{refused}"
    return True, f"{guardrails}{refused}"


@_requirement(
    "first-token-definition",
    "The report MUST say whether TTFT is the time to any token or to the first content token.",
    judges=("first-token-definition",),
)
def _first_token(f: ReportFacts) -> tuple[bool, str]:
    """Judged on whether the definition applied: every request with a TTFT has its first SSE
    event recorded beside its first content token (``metrics.client.first_content_token``), so
    the report shows which events TTFT skipped, and none has content before its first event."""
    if nonblank(f.methodology["first_token_definition"]) is None:
        return False, "no first token definition (methodology.first_token_definition)"
    fc = f.client["first_content_token"]
    requests = fc["requests"]
    if not requests:
        return False, "no evidence: no request received a content token"
    recorded = fc["first_event_recorded"]
    contradicted = fc["content_before_first_event"]
    if recorded < requests or contradicted:
        return False, (
            f"of {requests} requests with a TTFT, {requests - recorded} lack the first SSE "
            f"event's offset and {contradicted} have content before their first event: the "
            "spans do not show that TTFT is the time to the first content token"
        )
    skipped = fc["after_non_content_events"]
    noted = (
        f"{skipped} of them began with non-content events (role-only, empty or whitespace "
        f"deltas) that TTFT skipped, P50 {fmt(fc['non_content_lead_ms']['p50'], 2, 'ms')} "
        "before the content"
        if skipped
        else "none began with non-content events"
    )
    return True, (
        f"TTFT is the time to the first content token; {requests} requests with the first "
        f"event and the first content token recorded: {noted}"
    )


@_requirement(
    "ttft-percentiles",
    "TTFT P50, P90, P95, P99 and P99.9 MUST all be reported.",
    judges=("ttft-percentiles",),
)
def _ttft_percentiles(f: ReportFacts) -> tuple[bool, str]:
    ttft = f.client["ttft_ms"]
    values = [
        ("P50", ttft["p50"]),
        ("P90", ttft["p90"]),
        ("P95", ttft["p95"]),
        ("P99", ttft["p99"]),
        ("P99.9", ttft["p99_9"]),
    ]
    method = nonblank(f.methodology["percentile_method"]) or "method not declared"
    shown = ", ".join(f"{label} {fmt(v, 2, 'ms')}" for label, v in values)
    return all(v is not None for _, v in values), f"{shown}; percentiles by {method}"


@_requirement(
    "sample-count-stated",
    "The report MUST state the sample count.",
    judges=("sample-count-stated",),
)
def _sample_count_stated(f: ReportFacts) -> tuple[bool, str]:
    n = f.ttft_samples
    if not n:
        return False, "no TTFT sample to count (metrics.client.ttft_ms.count)"
    return True, f"{n} TTFT samples (metrics.client.ttft_ms.count)"


def _sample_count(f: ReportFacts, needed: int, label: str) -> tuple[bool, str]:
    n = f.ttft_samples
    total = f.requests["total"]
    evidence = f"{total} requests, {n} TTFT samples; {label} needs at least {needed}"
    return n >= needed, evidence


@_requirement(
    "sample-count-p99",
    f"The request count MUST be at least {draft.P99_MIN_SAMPLES} for P99 (P99 within 10% at 95% "
    "confidence, 5.1.4.3).",
    judges=("ttft-request-count",),
)
def _sample_count_p99(f: ReportFacts) -> tuple[bool, str]:
    return _sample_count(f, draft.P99_MIN_SAMPLES, "P99")


@_requirement(
    "sample-count-p99-9",
    f"The request count MUST be at least {draft.P99_9_MIN_SAMPLES} for P99.9 (5.1.4.3).",
    judges=("ttft-request-count",),
)
def _sample_count_p99_9(f: ReportFacts) -> tuple[bool, str]:
    return _sample_count(f, draft.P99_9_MIN_SAMPLES, "P99.9")


@_requirement(
    "itl-output-tokens",
    f"Requests MUST generate at least {draft.ITL_MIN_OUTPUT_TOKENS} output tokens to provide "
    "meaningful ITL samples.",
    judges=("itl-output-tokens",),
)
def _itl_output_tokens(f: ReportFacts) -> tuple[bool, str]:
    if not f.succeeded:
        return False, _no_success("no output token was generated")
    short = next((d for d in f.deviations if _SHORT_OUTPUT_MARKER in d), None)
    if short is not None:
        return False, short
    return True, (
        f"every one of the {f.succeeded} successful requests generated at least "
        f"{draft.ITL_MIN_OUTPUT_TOKENS} output tokens"
    )


@_requirement(
    "itl-request-count",
    f"At least {draft.ITL_MIN_REQUESTS} requests for per-request ITL statistics (a setup parameter "
    "without a BCP 14 keyword: weighed as SHOULD).",
    judges=("itl-request-count",),
)
def _itl_request_count(f: ReportFacts) -> tuple[bool, str]:
    n = f.client["itl_per_request"]["max_pause_ms"]["count"]
    samples = f.client["itl_ms"]["count"]
    evidence = (
        f"per-request ITL statistics from {n} requests ({samples} ITL samples); the draft "
        f"asks for at least {draft.ITL_MIN_REQUESTS}"
    )
    return n >= draft.ITL_MIN_REQUESTS, evidence


@_requirement(
    "configuration-summary",
    "The report MUST include SUT boundary, model and hardware, workload, load model, request "
    "count and duration, warm-up, prefix caching state and guardrail configuration.",
    judges=(),
    section="5.1.5.1",
    level="MUST",
)
def _configuration(f: ReportFacts) -> tuple[bool, str]:
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
    missing = [rt.CONFIGURATION_LABELS[k] for k in required if summary[k] == NOT_DECLARED]
    if missing:
        return False, f"not declared: {', '.join(missing)}"
    return True, f"all {len(required)} items declared (configuration)"


@_requirement(
    "model-identifier",
    "The model identifier MUST be defined: model name, version, and quantization if applicable.",
    judges=(),
    section="5.1.2.3",
    level="MUST",
)
def _model_identifier(f: ReportFacts) -> tuple[bool, str]:
    fields = (
        ("name", nonblank(f.run["model"])),
        ("version", declared_text(f.sut.get("model_version"))),
        ("quantization", declared_text(f.sut.get("quantization"))),
    )
    shown = "declared: " + "; ".join(f"{label} {value or NOT_DECLARED}" for label, value in fields)
    missing = [label for label, value in fields if value is None]
    if missing:
        return False, f"{shown} (declare with --sut-model-version, --sut-quantization)"
    return True, shown


@_requirement(
    "poisson-arrivals",
    "An open-loop TTFT run MUST use Poisson arrivals.",
    judges=("ttft-poisson",),
    condition="open-loop",
)
def _poisson(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the gaps between the requests actually sent (``run.sent.arrivals``), whatever
    the configured arrival process: Poisson when their coefficient of variation is within
    ``3/√n`` of 1 and a Kolmogorov–Smirnov test against the exponential at the declared rate
    keeps them (p ≥ :data:`POISSON_MIN_P_VALUE`), over the run's own sample of gaps."""
    mode = f.mode or "not recorded"
    fit = f.run["sent"]["arrivals"]
    gaps = 0 if fit is None else fit["gaps"]
    if fit is None or gaps < POISSON_MIN_GAPS:
        return False, (
            f"no evidence: {gaps} gaps between sent requests (run.sent.arrivals), too few to "
            f"test (at least {POISSON_MIN_GAPS}); configured: {mode}"
        )
    cv, tolerance = fit["cv"], fit["cv_tolerance"]
    d, p = fit["ks_statistic"], fit["ks_p_value"]
    rate = fit["tested_rate_per_s"]
    evidence = (
        f"measured over the {gaps} gaps between the requests sent: rate "
        f"{fmt(fit['measured_rate_per_s'], 2, 'req/s')}, coefficient of variation "
        f"{cv:.3f} (Poisson: 1 ± {tolerance:.3f}), Kolmogorov–Smirnov against the exponential "
        f"at {fmt(rate, 2, 'req/s')}: D = {d:.4f}, p = {p:.3g}; configured: {mode}"
    )
    poisson = abs(cv - 1.0) <= tolerance and p >= POISSON_MIN_P_VALUE
    return poisson, evidence + ("" if poisson else ": the gaps sent are not exponential")


@_requirement(
    "open-loop",
    "The throughput-latency test MUST run open loop.",
    judges=("tradeoff-open-loop",),
)
def _open_loop(f: ReportFacts) -> tuple[bool, str]:
    mode = f.mode or "not recorded"
    return mode in OPEN_LOOP_MODES, f"load model: {mode}"


@_requirement(
    "cold-start",
    "A cold-start measurement MUST skip the warm-up and the report MUST say so.",
    judges=("cold-start-skips-warmup", "cold-start-indicated"),
    section="4.5.3",
    level="MUST",
    condition="cold-start",
)
def _cold_start(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the spans: no warm-up or probe request of the run was sent."""
    phases = {n: _phase(f, n) for n in (semconv.PHASE_WARMUP, semconv.PHASE_PROBE)}
    sent = {n: 0 if p is None else p["requests"] for n, p in phases.items()}
    if any(sent.values()):
        shown = ", ".join(f"{k} {n}" for n, k in sent.items() if k)
        return False, f"cold start declared, yet the spans hold warm-up requests: {shown}"
    return True, (warmup_text(f) or "cold-start measurement declared") + (
        "; no warm-up or probe request among the spans"
    )


@_requirement(
    "ttft-input-buckets",
    f"TTFT by input length SHOULD use the draft's buckets [{DRAFT_INPUT_BUCKETS[0]}) … "
    f"[{DRAFT_INPUT_BUCKETS[-1]}).",
    judges=("ttft-input-buckets",),
)
def _ttft_buckets(f: ReportFacts) -> tuple[bool, str]:
    if not f.succeeded:
        return False, _no_success("no TTFT was bucketed")
    labels = tuple(b["bucket"] for b in f.client["ttft_by_input_tokens"])
    evidence = "buckets " + (", ".join(labels) or "none")
    return labels == DRAFT_INPUT_BUCKETS, evidence


@_requirement(
    "level-duration",
    f"A throughput load level SHOULD run {draft.THROUGHPUT_RECOMMENDED_DURATION_S:.0f} s.",
    judges=("throughput-duration",),
)
def _level_duration(f: ReportFacts) -> tuple[bool, str]:
    duration = f.run["duration_s"]
    evidence = (
        f"ran {fmt(duration, 1, 's')}; the draft recommends "
        f"{draft.THROUGHPUT_RECOMMENDED_DURATION_S:.0f} s"
    )
    return duration >= draft.THROUGHPUT_RECOMMENDED_DURATION_S, evidence


def _protocol_check(marker: str) -> Evaluate:
    def evaluate(f: ReportFacts) -> tuple[bool, str]:
        protocol = nonblank(f.itl_method["protocol"]) or "not declared"
        chunks = f.client["tokens_per_chunk"]["count"]
        if not chunks:
            return False, f"no evidence: no content chunk was received over {protocol}"
        return marker in protocol, f"{chunks} content chunks received over {protocol}"

    return evaluate


_PROTOCOL_RULES: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("sse-protocol", "Application Gateway", "Server-Sent Events", "sse-application-gateway"),
    ("grpc-protocol", "Model Engine", "gRPC", "grpc-model-engine"),
)
"""4.6.1's protocol recommendations: check id, boundary, protocol, statement id."""
REQUIREMENTS.extend(
    Requirement(
        id,
        f"{marker} is RECOMMENDED for {boundary} testing.",
        _protocol_check(marker),
        (statement_id,),
    )
    for id, boundary, marker, statement_id in _PROTOCOL_RULES
)


@dataclass(frozen=True)
class _Signature:
    """What Appendix A fixes of a workload's requests, to judge what a run sent: the prompt
    lengths and ``max_tokens`` ranges (inclusive; None: the draft gives none), and whether the
    requests must come from a dataset (A.3's ShareGPT conversations, not a synthetic stand-in)."""

    prompt: tuple[int, int] | None = None
    max_tokens: tuple[int, int] | None = None
    dataset: bool = False


_SIGNATURES: Final[Mapping[str, _Signature]] = {
    "A.1": _Signature(prompt=(128, 512), max_tokens=(64, 256)),  # A.1.1, A.1.2
    "A.2": _Signature(prompt=(1, 4096), max_tokens=(1, 2048)),  # 4.3.2.2: capped log-normals
    "A.3": _Signature(dataset=True),  # A.3.1: ShareGPT conversations
    "A.4": _Signature(prompt=(512, 10**9)),  # A.4.2: a 512–1024-token repository context
    "A.5": _Signature(  # A.5, 5.9.2: 1K … 128K
        prompt=(draft.LONG_CONTEXT_LENGTHS[0], 10**9),
        max_tokens=(draft.LONG_CONTEXT_OUTPUT_TOKENS, draft.LONG_CONTEXT_OUTPUT_TOKENS),
    ),
}
"""Each Appendix A workload's measurable signature."""


def _range_text(lengths: rt.SentLengths) -> str:
    return (
        f"{fmt(lengths['min'], 0)}–{fmt(lengths['max'], 0)} "
        f"(P50 {fmt(lengths['p50'], 0)}) over {lengths['count']}"
    )


def _dataset(f: ReportFacts) -> rt.DatasetSpec:
    """``run.workload.spec.dataset``: the dataset a workload was drawn from (empty: none)."""
    return f.spec.get("dataset") or {}


def _signature_misses(f: ReportFacts, section: str) -> list[str]:
    """How what the run sent departs from Appendix A ``section``'s signature (empty: it fits)."""
    sig, sent = _SIGNATURES[section], f.run["sent"]
    misses = []
    for label, key, lengths, bounds in (
        ("prompt lengths", "prompt_tokens", sent["prompt_tokens"], sig.prompt),
        ("max_tokens", "max_tokens", sent["max_tokens"], sig.max_tokens),
    ):
        if bounds is None:
            continue
        lo, hi = lengths["min"], lengths["max"]
        if not lengths["count"] or lo is None or hi is None:
            misses.append(f"no {label} recorded (run.sent.{key})")
        elif lo < bounds[0] or hi > bounds[1]:
            misses.append(f"{label} sent {_range_text(lengths)}, outside {bounds[0]}–{bounds[1]}")
    if sig.dataset and (f.spec.get("synthetic") is True or not _dataset(f)):
        misses.append("not drawn from a dataset (a synthetic stand-in: random token ids)")
    return misses


def _workload_check(sections: tuple[str, ...]) -> Evaluate:
    """Judged on the workload the run declares (its Appendix A section) and on what it sent: the
    prompt lengths and ``max_tokens`` of every measured request within the section's signature
    (:data:`_SIGNATURES`), a dataset where the draft's workload is one."""

    def evaluate(f: ReportFacts) -> tuple[bool, str]:
        name = f.workload_name or "not recorded"
        section = nonblank(f.spec.get("draft_section")) or _WORKLOAD_SECTIONS.get(name)
        wanted = " or ".join(f"{STANDARD_WORKLOADS[s]} ({s})" for s in sections)
        sent = f.run["sent"]
        shown = (
            f"workload {name} (declared draft {section or '?'}); sent prompt lengths "
            f"{_range_text(sent['prompt_tokens'])}, max_tokens "
            f"{_range_text(sent['max_tokens'])}; wanted {wanted}"
        )
        if section not in sections:
            return False, shown
        misses = _signature_misses(f, section)
        return not misses, shown + ("; " + "; ".join(misses) if misses else "")

    return evaluate


@dataclass(frozen=True)
class _WorkloadRule:
    """A statement that names the workload a test or boundary must (or should) use."""

    id: str
    sections: tuple[str, ...]
    """Appendix A sections of the accepted workloads (:data:`STANDARD_WORKLOADS`)."""
    judges: tuple[str, ...]
    boundary: str | None = None
    section: str | None = None
    """Its draft section and level where it judges several statements (else its statement's)."""
    level: Level | None = None

    def requirement(self) -> Requirement[ReportFacts]:
        section, level = _placement(self.judges, self.section, self.level)
        names = " or ".join(STANDARD_WORKLOADS[s] for s in self.sections)
        where = f" for {self.boundary} benchmarking" if self.boundary else ""
        text = f"The workload {level} be {names}{where} (draft {section})."
        evaluate = _workload_check(self.sections)
        return Requirement(
            self.id, text, evaluate, self.judges, own_section=self.section, own_level=self.level
        )


_WORKLOAD_RULES: Final = (
    _WorkloadRule("model-engine-workload", ("A.1",), ("synthetic-uniform-model-engine",),
                  "Model Engine"),
    _WorkloadRule("gateway-workload", ("A.3",), ("conversation-application-gateway",),
                  "Application Gateway"),
    _WorkloadRule("itl-workload", ("A.1", "A.3"), ("itl-workload",)),
    _WorkloadRule("capacity-workload", ("A.1",), ("capacity-workload",)),
    _WorkloadRule("fairness-workload", ("A.2",), ("fairness-workload",)),
    _WorkloadRule("prefix-cache-workload", ("A.4",), ("prefix-cache-workload",)),
    _WorkloadRule("memory-pressure-workload", ("A.5",), ("memory-pressure-workload",)),
    _WorkloadRule("long-context-workload", ("A.5",),
                  ("long-context-for-scaling", "long-context-workload"),
                  section="5.9.2", level="MUST"),
    _WorkloadRule("guardrail-overhead-workload", ("A.3",), ("guardrail-overhead-workload",)),
)  # fmt: skip
REQUIREMENTS.extend(rule.requirement() for rule in _WORKLOAD_RULES)


def _declared_guardrails(f: ReportFacts) -> GuardrailsDeclaration:
    """The declared guardrails (``run.sut.guardrails``; empty when none were declared as an
    object, e.g. a declaration in words)."""
    declared = f.sut.get("guardrails")
    return declared if isinstance(declared, dict) else {}


def _filters(declared: GuardrailsDeclaration) -> tuple[tuple[str, str | None], ...]:
    """The declared input and output filters, by stage (None: not declared)."""
    return (("input", declared.get("input_filter")), ("output", declared.get("output_filter")))


def _filter_on(value: Any) -> bool:
    """Whether a declared filter is enabled: named, and not ``none``/``disabled``/false."""
    return value is not False and nonblank(value) not in (None, "none", "disabled", "false")


@_requirement(
    "guardrails-production",
    "An Application Gateway's safety systems SHOULD be enabled in their default configuration.",
    judges=("safety-default-enabled",),
)
def _guardrails_production(f: ReportFacts) -> tuple[bool, str]:
    declared = _declared_guardrails(f)
    enabled = [f"{stage} {name}" for stage, name in _filters(declared) if _filter_on(name)]
    default = declared.get("default_configuration") is True
    evidence = (
        f"declared: enabled {', '.join(enabled) or 'none'}; default configuration "
        f"{'declared' if default else 'not declared'}"
    )
    return bool(enabled) and default, evidence


@_requirement(
    "guardrails-disabled-noted",
    "The report MUST note if an Application Gateway's safety systems are disabled.",
    judges=("safety-disabled-noted",),
)
def _guardrails_noted(f: ReportFacts) -> tuple[bool, str]:
    text = guardrails_text(f)
    return text is not None, text or "guardrails not declared (--sut-input-filter, -output-)"


@_requirement(
    "guardrails-comparative",
    "Comparative runs with safety enabled and disabled SHOULD quantify the overhead.",
    judges=("safety-comparative-runs",),
)
def _guardrails_comparative(f: ReportFacts) -> tuple[bool, str]:
    """Judged on the comparative run's own report, read when this run was made
    (``run.sut.guardrails.comparative``): a run of the same workload and seed with the safety
    systems disabled (the overhead is the TTFT difference), or a guardrail-overhead procedure
    with its baseline configuration."""
    declared = _declared_guardrails(f)
    where = nonblank(declared.get("comparative_run"))
    other = declared.get("comparative")
    if where is None:
        return False, "no comparative run declared (guardrails.comparative_run in --sut-config)"
    if other is None or other["read"] is not True:
        reason = None if other is None else other.get("reason")
        return False, f"comparative run {where} declared, but no report was read there" + (
            f" ({reason})" if reason else ""
        )
    if other["kind"] == "procedure":
        configurations = [str(c) for c in other.get("configurations") or []]
        return "baseline" in configurations, (
            f"comparative procedure {other.get('path')}: configurations "
            f"{', '.join(configurations) or 'none'}"
        )
    theirs = other.get("declared")
    theirs = theirs if isinstance(theirs, dict) else {}  # declared as text, or not at all
    disabled = bool(theirs) and not any(_filter_on(name) for _, name in _filters(theirs))
    workload = None if f.workload is None else f.workload["name"]
    same = other.get("workload") == workload and other.get("seed") == f.run["seed"]
    here, there = f.client["ttft_ms"]["p50"], number(other.get("ttft_p50_ms"))
    overhead = f"{here - there:+.2f} ms" if here is not None and there is not None else "n/a"
    evidence = (
        f"comparative run {other.get('run_id')} ({other.get('path')}): guardrails "
        f"{other.get('guardrails') or NOT_DECLARED}; workload {other.get('workload')} seed "
        f"{other.get('seed')}; TTFT P50 overhead with safety enabled {overhead}"
    )
    problems = [
        text
        for text, bad in (
            ("its safety systems were not declared disabled", not disabled),
            (f"not the same workload and seed as this run ({workload}, {f.run['seed']})",
             not same),
        )
        if bad
    ]  # fmt: skip
    return not problems, evidence + (f": {'; '.join(problems)}" if problems else "")


# ------------------------------------------------------------------------------------------
# checks of a whole test: its runs together (a procedure's levels, or one run)
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcedureFacts:
    """What a test-wide check reads: its runs' reports and, for a procedure, procedure.json
    (without its ``compliance``), for a comparison (section 6), compare.json (likewise); one
    run alone has neither."""

    runs: tuple[ReportFacts, ...]
    procedure: ProcedureReport | None = None
    comparison: CompareBody | None = None

    @property
    def levels(self) -> list[LevelEntry]:
        """``procedure.json``'s ``levels`` (empty: none, or not a procedure)."""
        return [] if self.procedure is None else self.procedure.get("levels") or []

    @property
    def parameters(self) -> Mapping[str, object]:
        """``procedure.json``'s effective ``parameters`` (empty: none, or not a procedure)."""
        return {} if self.procedure is None else self.procedure.get("parameters") or {}


PROCEDURE_REQUIREMENTS: list[Requirement[ProcedureFacts]] = []
"""The checks over a whole test, in the order the report lists them (after the run checks)."""
_procedure_requirement = _registrar(PROCEDURE_REQUIREMENTS)


@_procedure_requirement(
    "itl-load-levels",
    "ITL SHOULD be measured at several load levels "
    f"({', '.join(f'{100 * x:g}' for x in draft.ITL_LOAD_FRACTIONS)} % of saturation).",
    judges=("itl-load-levels",),
)
def _itl_levels(t: ProcedureFacts) -> tuple[bool, str]:
    if t.procedure is None and t.comparison is None:
        return False, "one run at one load level (otelbench test itl runs the draft's levels)"
    labels = [str(lv.get("label")) for lv in t.levels]
    return len(labels) >= 2, f"{len(labels)} load level(s): {', '.join(labels) or 'none'}"


@_procedure_requirement(
    "fairness-load-level",
    f"The fairness test SHOULD run at {100 * draft.FAIRNESS_LOAD_RANGE[0]:g}–"
    f"{100 * draft.FAIRNESS_LOAD_RANGE[1]:g} % of saturation throughput.",
    judges=("fairness-load-level",),
)
def _fairness_level(t: ProcedureFacts) -> tuple[bool, str]:
    params = t.parameters
    rate, saturation = number(params.get("rate")), number(params.get("saturation_rps"))
    if rate is None or not saturation:
        return False, (
            f"the mixed run at {fmt(rate, 3, 'req/s')}, not related to a measured saturation "
            "throughput"
        )
    low, high = draft.FAIRNESS_LOAD_RANGE
    share = rate / saturation
    return low <= share <= high, f"the mixed run at {share:.0%} of saturation"


@_procedure_requirement(
    "fairness-class-requests",
    f"At least {draft.FAIRNESS_CLASS_REQUESTS} requests per class (a setup parameter without a "
    "BCP 14 keyword: weighed as SHOULD).",
    judges=("fairness-class-requests",),
)
def _fairness_class_requests(t: ProcedureFacts) -> tuple[bool, str]:
    """Judged on the runs' measured classes (``metrics.classes.by_class``): every run that
    mixed two or more classes has at least :data:`otelbench.draft.FAIRNESS_CLASS_REQUESTS`
    successful requests of each (a run of one class alone, an isolated baseline, when no run
    mixed them)."""
    counts = [
        {k: v["count"] for k, v in classes["by_class"].items()}
        for classes in (r.report["metrics"].get("classes") for r in t.runs)
        if classes is not None and classes["by_class"]
    ]
    if not counts:
        return False, "no evidence: no run measured requests by class (metrics.classes)"
    mixed = [c for c in counts if len(c) >= 2] or counts
    fewest = min(mixed, key=lambda c: min(c.values()))
    shown = ", ".join(f"{k} {n}" for k, n in fewest.items())
    return min(fewest.values()) >= draft.FAIRNESS_CLASS_REQUESTS, (
        f"measured requests per class (the run with the fewest of {len(mixed)}): {shown}; the "
        f"draft asks for at least {draft.FAIRNESS_CLASS_REQUESTS} per class"
    )


def _level_durations(t: ProcedureFacts) -> list[tuple[str, float]]:
    """Each run's measured duration (``run.duration_s``), by the procedure's level label."""
    labels = [str(lv.get("label")) for lv in t.levels if lv.get("report")]
    if len(labels) != len(t.runs):
        labels = [f"run {i + 1}" for i in range(len(t.runs))]
    return [(label, r.run["duration_s"]) for label, r in zip(labels, t.runs, strict=True)]


@_procedure_requirement(
    "level-min-duration",
    f"Each load level MUST run at least {draft.LEVEL_MIN_DURATION_S:.0f} s (5.2.2.1's test "
    "duration, a parameter 5.2.2 MUST define; 5.3.2 states the same minimum per load level).",
    judges=("tradeoff-level-duration",),
    section="5.2.2.1",
    level="MUST",
    override="it is also the test duration item (5.2.2.1) of 5.2.2's MUST list of parameters",
)
def _level_min_duration(t: ProcedureFacts) -> tuple[bool, str]:
    """Judged on every level's measured duration, not on the duration asked for."""
    durations = _level_durations(t)
    if not durations:
        return False, "no evidence: no load level was measured"
    short = [(label, d) for label, d in durations if d < draft.LEVEL_MIN_DURATION_S]
    shown = ", ".join(f"{label} {fmt(d, 1, 's')}" for label, d in (short or durations))
    if short:
        return False, f"levels shorter than {draft.LEVEL_MIN_DURATION_S:.0f} s as measured: {shown}"
    return True, f"every level ran {draft.LEVEL_MIN_DURATION_S:.0f} s or more as measured: {shown}"


@_procedure_requirement(
    "tradeoff-load-levels",
    f"At least {draft.SWEEP_MIN_LEVELS} load levels (a setup parameter without a BCP 14 keyword: "
    "weighed as SHOULD).",
    judges=("tradeoff-load-levels",),
)
def _tradeoff_levels(t: ProcedureFacts) -> tuple[bool, str]:
    measured = [str(lv.get("label")) for lv in t.levels if lv.get("report")]
    return len(measured) >= draft.SWEEP_MIN_LEVELS, (
        f"{len(measured)} load level(s) measured; the draft asks for at least "
        f"{draft.SWEEP_MIN_LEVELS}"
    )


_SEARCH_PARAMETERS: Final = {
    "open-loop": ("min_rps", "max_rps", "rate_step"),
    "closed-loop": ("min_concurrency", "max_concurrency", "concurrency_step"),
}
"""5.2.2.2's range and increment, by load model, as ``procedure.json``'s parameters name them."""


@_procedure_requirement(
    "search-range",
    "The throughput test MUST define its load model's range and increment (and its SLOs when "
    "given).",
    judges=(),
    section="5.2.2.2",
    level="MUST",
)
def _search_range(t: ProcedureFacts) -> tuple[bool, str]:
    params = t.parameters
    model = str(params.get("load_model", "open-loop"))
    names = _SEARCH_PARAMETERS.get(model, ())
    values = {n: params.get(n) for n in names}
    slos = {n: params.get(n) for n in ("slo_ttft_p99_ms", "slo_tpot_p99_ms") if params.get(n)}
    shown = ", ".join(f"{n} {v}" for n, v in {**values, **slos}.items())
    missing = [n for n, v in values.items() if v is None]
    if not names or missing:
        return False, f"{model}: not defined: {', '.join(missing) or 'the load model'}"
    return True, f"declared: {model}, {shown}"


@_procedure_requirement(
    "prefix-cache-configurations",
    "The prefix cache test MUST run with the cache disabled and with it enabled.",
    judges=("prefix-cache-configurations",),
)
def _prefix_configurations(t: ProcedureFacts) -> tuple[bool, str]:
    """Judged on the levels measured, and on the disabled configuration's measured cache hit
    rate (``table``'s ``cache_hit_rate`` and ``cached_tokens``, from the engine's cached-token
    counts): a "disabled" cache that served prefix tokens was not disabled."""
    procedure = t.procedure
    configurations = (
        None if procedure is None else (procedure.get("configuration") or {}).get("configurations")
    )
    configured = sorted(configurations or {})
    measured = [str(lv.get("label")) for lv in t.levels if lv.get("report")]
    # a 5.7 procedure.json holds PrefixCacheSection's keys beside the envelope's
    section = cast("PrefixCacheSection | None", t.procedure)
    rows = [] if section is None else section.get("table") or []
    disabled = next((r for r in rows if r.get("role") == "disabled"), None)
    shown = f"configurations {', '.join(configured) or 'none'}; levels measured: " + (
        ", ".join(measured) or "none"
    )
    if not {"disabled", "enabled"} <= set(configured) or len(measured) < 2:
        return False, shown
    hit, cached = (
        (None, None)
        if disabled is None
        else (number(disabled.get("cache_hit_rate")), integer(disabled.get("cached_tokens")))
    )
    if hit is None or cached is None:
        return False, (
            f"{shown}; no evidence that the cache was disabled: the disabled level has no "
            "measured cache hit rate (no server span with cached-token counts)"
        )
    return cached == 0, (
        f"{shown}; the disabled level's measured cache hit rate {hit:.1%} ({cached} cached "
        "prompt tokens)" + ("" if cached == 0 else ": the cache was not disabled")
    )


_EQUIVALENCE_ITEMS: Final = ("workload", "seed", "sut_boundary", "hardware", "load_model")
"""The keys of ``otelbench compare``'s checklist that draft 6.1 requires to match."""


def _per_gpu_normalized(comparison: CompareBody) -> bool:
    normalization = comparison.get("normalization")
    systems = {} if normalization is None else normalization.get("systems") or {}
    statuses = [v.get("status", "") for v in systems.values()]
    return bool(statuses) and all(s.startswith("normalized") for s in statuses)


@_procedure_requirement(
    "equivalence",
    "Compared systems MUST have identical workload and seeds, the same SUT boundary, "
    "comparable (or normalized) hardware, and the same load model and parameters.",
    judges=(),
    section="6.1",
    level="MUST",
)
def _equivalence(t: ProcedureFacts) -> tuple[bool, str]:
    checklist = None if t.comparison is None else t.comparison.get("checklist")
    if t.comparison is None or checklist is None:
        return False, "no evidence: no comparison checklist (otelbench compare)"
    items = {c["item"]: c for c in checklist}
    shown, problems = [], []
    for key in _EQUIVALENCE_ITEMS:
        item = items.get(key)
        status: str = "not recorded" if item is None else item["status"]
        label = key if item is None else item["label"]
        if status != "equal" and key == "hardware" and _per_gpu_normalized(t.comparison):
            status = "differs, normalized per GPU (6.2)"
        elif status != "equal":
            problems.append(f"{label} {status}")
        shown.append(f"{label}: {status}")
    evidence = "; ".join(shown)
    return not problems, evidence if not problems else f"not equivalent: {', '.join(problems)}"


@_procedure_requirement(
    "reference-tokenizer",
    "Cross-system comparison SHOULD count tokens with cl100k_base as the reference (Option B).",
    judges=("reference-tokenizer",),
)
def _reference_tokenizer(t: ProcedureFacts) -> tuple[bool, str]:
    found = [
        f"Option ?, {NOT_DECLARED}" if tok is None else f"Option {tok['option']}, {tok['name']}"
        for tok in (r.run["tokenizer"] for r in t.runs)
    ]
    ok = [x for x in found if x.startswith("Option B") and x.endswith("cl100k_base")]
    distinct = ", ".join(dict.fromkeys(found)) or "no run"
    return bool(found) and len(ok) == len(found), f"token counting: {distinct}"


# ------------------------------------------------------------------------------------------
# verdicts per test (draft 2), over the normative statements
# ------------------------------------------------------------------------------------------


# --- conditions (normative.CONDITIONS), decided from the run's facts -----------------------


def _cold(f: ReportFacts) -> bool:
    w = f.run["warmup"]
    return (w is not None and w["mode"] == "cold_start") or f.run["cold_start"] is True


def _prefix_cache_tested(f: ReportFacts) -> bool:
    """Prefix caching declared enabled, and a workload that shares prefixes (4.5.1 item 4)."""
    declared = f.sut.get("prefix_caching")
    enabled = declared is True or str(declared or "").lower().startswith("enabled")
    return enabled and bool(f.spec.get("prefix_sharing") or f.spec.get("system_prompt"))


def _sub_millisecond(f: ReportFacts) -> bool:
    accuracy = _clock_declared(f)[1]
    return not f.loopback() and accuracy is not None and accuracy < 1.0


CONDITION_HOLDS: Final[Mapping[str, Callable[[ReportFacts], bool]]] = {
    "open-loop": lambda f: f.mode != "closed_loop",
    "closed-loop": lambda f: f.mode == "closed_loop",
    "dataset-derived": lambda f: bool(_dataset(f)),
    "warm-start": lambda f: not _cold(f),
    "cold-start": _cold,
    "prefix-cache-tested": _prefix_cache_tested,
    "option-c-available": lambda f: f.server is not None,
    # a run sent from several hosts shares one wall-clock start across machines
    "distributed": lambda f: not f.loopback() or f.run.get("shards") is not None,
    "sub-millisecond": _sub_millisecond,
    "slo-specified": lambda f: False,
}
"""Whether each of the registry's conditions (``draft.statements.CONDITIONS``) holds for one run. A
test holds a condition when one of its runs does; ``slo-specified`` is the procedure's
(:func:`condition_holds`)."""


def condition_holds(condition: str, facts: ReportFacts | ProcedureFacts) -> bool:
    """Whether ``condition`` holds for one run's facts, or for a test (any of its runs; a
    throughput procedure's SLOs for ``slo-specified``).

    >>> condition_holds("open-loop", ReportFacts(report))  # doctest: +SKIP
    True
    """
    if isinstance(facts, ReportFacts):
        return CONDITION_HOLDS[condition](facts)
    if condition == "slo-specified":
        params = facts.parameters
        return any(params.get(k) is not None for k in ("slo_ttft_p99_ms", "slo_tpot_p99_ms"))
    return any(CONDITION_HOLDS[condition](r) for r in facts.runs)


# --- statements: checks, bullets, judgement ------------------------------------------------


def _bullet_checks(s: Statement) -> list[str]:
    return list(dict.fromkeys(c for b in s.bullets for c in b.checks))


def _checks_of(statement_id: str) -> list[str]:
    run = [r.id for r in REQUIREMENTS if statement_id in r.judges]
    direct = run + [r.id for r in PROCEDURE_REQUIREMENTS if statement_id in r.judges]
    return list(dict.fromkeys([*direct, *_bullet_checks(BY_ID[statement_id])]))


def _umbrellas() -> dict[str, tuple[str, ...]]:
    """Check id → the umbrella statements whose bullets it judges."""
    found: dict[str, list[str]] = {}
    for s in ALL_STATEMENTS:
        for check in _bullet_checks(s):
            found.setdefault(check, []).append(s.id)
    return {k: tuple(v) for k, v in found.items()}


_UMBRELLAS: dict[str, tuple[str, ...]] = {}
"""Check id → the umbrella statements it judges through their bullets (filled below)."""


def _from_checks(ids: Sequence[str], results: Mapping[str, Check]) -> tuple[Met, str]:
    """Met, not met (with the unmet checks' evidence) or without evidence (None) from ``ids``'
    results; not-applicable results are no evidence."""
    found = [results[c] for c in ids if c in results]
    unmet = [r for r in found if r["met"] is False]
    if unmet:
        return False, "; ".join(f"{r['id']}: {r['evidence']}" for r in unmet)
    met = [r for r in found if r["met"] is True]
    if met:
        return True, "; ".join(f"{r['id']}: {r['evidence']}" for r in met)
    return None, "; ".join(f"{r['id']}: {r['evidence']}" for r in found)


def _judge_bullet(
    b: Bullet,
    results: Mapping[str, Check],
    statements: Mapping[str, StatementResult],
    facts: ProcedureFacts,
) -> BulletResult:
    met: Met
    if b.condition is not None and not condition_holds(b.condition, facts):
        met, evidence = None, f"not applicable: {CONDITIONS[b.condition]}"
    elif b.statements:
        judged = [statements[i] for i in b.statements if statements[i]["met"] is not None]
        unmet = [r["id"] for r in judged if r["met"] is False]
        met = not unmet if judged else None
        evidence = (
            f"not met: {', '.join(unmet)}"
            if unmet
            else f"met: {', '.join(r['id'] for r in judged)}"
            if judged
            else "none of its statements applies"
        )
    else:
        met, evidence = _from_checks(b.checks, results)
        if met is None:
            met, evidence = False, f"no evidence ({evidence or 'no check result'})"
    return {
        "section": b.section,
        "text": b.text,
        "checks": list(b.checks or b.statements),
        "met": met,
        "evidence": evidence,
    }


def _judge(
    s: Statement,
    results: Mapping[str, Check],
    statements: Mapping[str, StatementResult],
    facts: ProcedureFacts,
) -> tuple[Met, str, list[BulletResult]]:
    """A statement's judgement: an enforced one is otelbench's capability (the evidence says
    what and where); one whose condition does not hold is not applicable; an umbrella is met
    when every bullet that applies is; any other when its checks are met, and not met when any
    is not or when none has evidence."""
    if s.judged == "enforced":
        return True, f"enforced: {s.how}", []
    if s.condition is not None and not condition_holds(s.condition, facts):
        return None, f"not applicable: {CONDITIONS[s.condition]}", []
    if s.bullets:
        bullets = [_judge_bullet(b, results, statements, facts) for b in s.bullets]
        unmet = [b for b in bullets if b["met"] is False]
        judged = [b for b in bullets if b["met"] is not None]
        groups: dict[str, list[str]] = {}
        for b in unmet or judged:
            groups.setdefault(b["evidence"], []).append(b["text"])
        evidence = (
            next(iter(groups))
            if len(groups) == 1 and len(unmet or judged) == len(judged)
            else "; ".join(f"[{' | '.join(texts)}] {e}" for e, texts in groups.items())
        )
        if not judged:
            return False, f"no evidence: none of its items applies ({s.how})", bullets
        return not unmet, evidence, bullets
    met, evidence = _from_checks(_checks_of(s.id), results)
    if met is None:
        return (
            False,
            f"no evidence: {evidence or 'no check judges it in this report'} ({s.how})",
            [],
        )
    return met, evidence, []


def _verdict(unmet_must: list[str], unmet_should: list[str]) -> Verdict:
    if unmet_must:
        return VERDICT_NOT_COMPLIANT
    return VERDICT_CONDITIONAL if unmet_should else VERDICT_UNCONDITIONAL


def _out_of_scope(s: Statement, test: str, boundary: str | None) -> str:
    """Why ``s`` does not apply to ``test`` at ``boundary`` by the registry's scope."""
    if test in s.overrides:
        other = BY_ID[s.overrides[test]]
        return f"overridden for {test} by {other.section}: {other.text!r}"
    return (
        f"applies to the {' and '.join(s.boundaries)} boundary only; this one is "
        f"{boundary or 'undeclared'}"
    )


def verdict_for_test(
    test: str, boundary: str | None, checks: list[Check], facts: ProcedureFacts
) -> TestVerdict:
    """The draft 2 verdict of ``test`` (``5.1`` … ``5.10``, ``6``) from ``checks`` (the results
    of :data:`REQUIREMENTS` and :data:`PROCEDURE_REQUIREMENTS`) over the run(s) of ``facts``:
    every statement of :mod:`otelbench.draft.statements` for that test (and its setup limits),
    met, not met or not applicable (by the registry's scope and conditions only), with its
    evidence and, for an umbrella, its bullets.

    Returns ``{test, title, verdict, counts, unmet_must, unmet_should, statements}``.
    """
    results = {c["id"]: c for c in checks}
    rows: dict[str, StatementResult] = {}
    ordered = [s for s in ALL_STATEMENTS if test in s.tests]
    # 4.2's umbrella is judged by its subsections' statements: those first
    for s in sorted(ordered, key=lambda s: any(b.statements for b in s.bullets)):
        bullets: list[BulletResult] = []
        met: Met
        if s.applies(test, boundary):
            met, evidence, bullets = _judge(s, results, rows, facts)
        else:
            met, evidence = None, _out_of_scope(s, test, boundary)
        rows[s.id] = {
            "id": s.id,
            "section": s.section,
            "keyword": s.keyword,
            "level": s.level,
            "statement": s.text,
            "judged": s.judged,
            "checks": _checks_of(s.id),
            "met": met,
            "evidence": evidence,
            "bullets": bullets,
        }
    listed = [rows[s.id] for s in ordered]
    counts: ComplianceCounts = {
        "MUST": _counts(listed, "MUST"),
        "SHOULD": _counts(listed, "SHOULD"),
    }
    unmet_must = [r["id"] for r in listed if r["level"] == "MUST" and r["met"] is False]
    unmet_should = [r["id"] for r in listed if r["level"] == "SHOULD" and r["met"] is False]
    return {
        "test": test,
        "title": TEST_TITLES[test],
        "verdict": _verdict(unmet_must, unmet_should),
        "counts": counts,
        "unmet_must": unmet_must,
        "unmet_should": unmet_should,
        "statements": listed,
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


def _relevant(check: Check, tests: list[str]) -> bool:
    """Whether a check bears on one of ``tests``: it judges one of their statements, or (a
    check that judges none) its section is section 4's or one of theirs."""
    if check["judges"]:
        return any(t in BY_ID[j].tests for j in check["judges"] for t in tests)
    section = check["section"]
    return section.startswith("4.") or any(section.startswith(f"{t}.") for t in tests)


def _scoped(check: Check, boundary: str | None) -> Check:
    """``check`` as the registry scopes it: not applicable where every statement it judges is
    for another boundary (the gRPC, Conversation and guardrail statements of one boundary)."""
    judged = [BY_ID[j] for j in check["judges"]]
    if not judged or not all(s.boundaries and boundary not in s.boundaries for s in judged):
        return check
    boundaries = " and ".join(dict.fromkeys(b for s in judged for b in s.boundaries))
    reason = f"applies to the {boundaries} boundary only; this one is {boundary or 'undeclared'}"
    return {**check, "met": None, "evidence": f"not applicable: {reason}"}


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
    procedure: ProcedureReport, reports: Sequence[tuple[str, rt.ReportBody]]
) -> ComplianceSection:
    """The draft 2 verdict of one procedure (``procedure.json``, without its compliance) over
    section 4's statements and its own section's: every run check over its level ``reports``
    (label, report), and the test-wide checks over the procedure.

    Returns the shape of :func:`compliance` with one entry in ``tests``.
    """
    runs = [(label, ReportFacts(r)) for label, r in reports]
    # the draft's procedures warm up once, then run every level (5.2.3 step 2, 5.4.3 step 1 …;
    # 5.7 and 5.10 once per SUT configuration): 4.5's checks judge the levels that warmed up
    warmed = [(label, f) for label, f in runs if _phase(f, semconv.PHASE_WARMUP) is not None]
    warmed = warmed or runs[:1]
    checks = [
        _combine(
            req.id,
            [(label, req.check(f)) for label, f in (warmed if req.id in WARMUP_CHECKS else runs)],
        )
        for req in REQUIREMENTS
        if runs
    ]
    facts = ProcedureFacts(tuple(f for _, f in runs), procedure)
    checks += [req.check(facts) for req in PROCEDURE_REQUIREMENTS]
    sut = (procedure.get("configuration") or {}).get("sut") or {}
    checks = [_scoped(c, nonblank(sut.get("boundary"))) for c in checks]
    test = str(procedure.get("draft_section"))
    tests = (
        [verdict_for_test(test, nonblank(sut.get("boundary")), checks, facts)]
        if test in TEST_TITLES
        else []
    )
    scope = (
        f"the procedure's {len(runs)} run(s) together: section 4's statements and section "
        f"{test}'s; a run check is met only where every run it applies to meets it (4.5's "
        "warm-up checks: every run that warmed the SUT up, the first if none did)"
    )
    return _summary(scope, checks, tests)


def comparison_compliance(
    comparison: CompareBody, reports: Sequence[rt.ReportBody]
) -> ComplianceSection:
    """The draft 2 verdict of a multi-system comparison (test ``6``: ``otelbench compare``'s
    result without its compliance, and every compared run's report).

    Returns the shape of :func:`compliance` with one entry in ``tests``.
    """
    facts = ProcedureFacts(tuple(ReportFacts(r) for r in reports), comparison=comparison)
    checks = [req.check(facts) for req in PROCEDURE_REQUIREMENTS]
    scope = (
        f"a comparison of {len(reports)} runs: the multi-system statements (section 6) and "
        "4.4.2's reference tokenizer for cross-system comparison"
    )
    return _summary(scope, checks, [verdict_for_test("6", None, checks, facts)])


def compliance(report: rt.ReportBody) -> ComplianceSection:
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
    test_facts = ProcedureFacts((facts,))
    checks = [r.check(facts) for r in REQUIREMENTS]
    checks += [r.check(test_facts) for r in PROCEDURE_REQUIREMENTS]
    boundary = nonblank(facts.sut.get("boundary"))
    checks = [_scoped(c, boundary) for c in checks]
    tests = [verdict_for_test(test, boundary, checks, test_facts) for test in RUN_TESTS]
    return _summary(SCOPE, checks, tests)


_UMBRELLAS.update(_umbrellas())
