"""The registry of the draft's normative statements: every BCP 14 keyword sentence of sections
4–6 (draft 2: compliance is judged per test over these statements).

Each :class:`Statement` is one sentence of the draft that carries a requirement keyword (MUST,
MUST NOT, REQUIRED: level MUST; SHOULD, RECOMMENDED: level SHOULD), worded as the draft words it
(``docs/reference/methodology-draft.txt``; a unit test reads that text and fails when a keyword
sentence has no entry here, or an entry no sentence). For each it says:

* ``tests`` — the tests it applies to: the draft's tests ``5.1`` … ``5.10`` (a section 4
  statement applies to every test unless it names its own) and ``6`` for a multi-system
  comparison (``otelbench compare``);
* ``boundaries`` — the SUT boundaries (draft 4.1) it applies to; empty: every boundary;
* ``judged`` — how a report judges it:

  ==================  ==========================================================================
  ``measured``        from the run's own records, by the compliance checks that name it
                      (``otelbench.report.compliance``), with their evidence
  ``declared``        from what the tester declared (``--sut-config``, ``--sut-*``), by the
                      checks that name it, the declaration shown as evidence
  ``enforced``        by otelbench itself, whatever the run: ``how`` says how (a capability of
                      the load generator, a definition of a metric, a renderer's table)
  ==================  ==========================================================================

* ``condition`` — where the draft's own words restrict a statement to some runs ("When using
  dataset-derived workloads", "For open-loop:", "when available"): the id of that condition in
  :data:`CONDITIONS`, which quotes the draft; the compliance module decides from the run's facts
  whether it holds;
* ``overrides`` — for a statement about a boundary (4.3.2.1, 4.3.2.3), the tests whose own section
  states a conflicting requirement of at least the same weight, with the id of that sentence: the
  statement applies to every other test at its boundary;
* ``bullets`` — for an umbrella sentence ("The test report MUST specify:"), the items under it as
  the draft words them (:class:`Bullet`, each tested against the draft text), each judged by the
  checks (or the statements) it names: the statement is met when every bullet that applies is.

Besides the keyword sentences, :data:`SETUP_LIMITS` holds the numeric minimums the draft states in
a test's *Setup Parameters* without a BCP 14 keyword (5.3.2's 60 s per level and 10 levels,
5.4.2's 100 requests, 5.6.2's 500 requests per class): judged like statements, labelled
``setup parameter`` and weighed as SHOULD (draft 2 defines compliance by the keywords only).
(5.2.2.1's 60 s minimum is a bullet of 5.2.2's MUST umbrella instead.)

A statement outside a test's ``tests``, ``boundaries``, ``overrides`` or ``condition`` is not
applicable to that test's verdict; the verdict lists it as such, with the reason
(``otelbench.report.compliance``). Nothing else makes a statement not applicable: a statement
that applies and lacks its evidence is not met.

Usage::

    from otelbench.draft.statements import STATEMENTS, statement, statements_for

    statement("ttft-poisson").text          # 'Poisson (REQUIRED), uniform, or bursty.'
    [s.id for s in statements_for("5.9", "Model Engine")][:2]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "ALL_STATEMENTS",
    "ALL_TESTS",
    "BY_ID",
    "CONDITIONS",
    "KEYWORD_LEVEL",
    "SETUP_LIMITS",
    "SETUP_PARAMETER",
    "STATEMENTS",
    "TEST_TITLES",
    "Bullet",
    "Judged",
    "Keyword",
    "Statement",
    "statement",
    "statements_for",
]

SETUP_PARAMETER: Final = "setup parameter"
"""The keyword column of a :data:`SETUP_LIMITS` entry: a limit stated without a BCP 14 keyword."""
Keyword = Literal["MUST", "MUST NOT", "REQUIRED", "SHOULD", "RECOMMENDED", "setup parameter"]
Judged = Literal["measured", "declared", "enforced"]

KEYWORD_LEVEL: Final[Mapping[str, Literal["MUST", "SHOULD"]]] = {
    "MUST": "MUST",
    "MUST NOT": "MUST",
    "REQUIRED": "MUST",
    "SHOULD": "SHOULD",
    "RECOMMENDED": "SHOULD",
    SETUP_PARAMETER: "SHOULD",
}
"""BCP 14: MUST NOT and REQUIRED weigh as MUST, RECOMMENDED as SHOULD (draft 2); a setup
parameter's limit, which has no keyword, as SHOULD."""

TEST_TITLES: Final[Mapping[str, str]] = {
    "5.1": "Time to First Token",
    "5.2": "Output Token Throughput",
    "5.3": "Throughput-Latency Tradeoff",
    "5.4": "Inter-Token Latency Distribution",
    "5.5": "Concurrent Request Capacity",
    "5.6": "Scheduling Fairness",
    "5.7": "Prefix Cache Effectiveness",
    "5.8": "Memory Pressure Behavior",
    "5.9": "Long Context Scaling",
    "5.10": "Guardrail Overhead",
    "6": "Multi-System Comparison",
}
"""The tests a verdict is given for (draft 2: compliance is per test)."""

ALL_TESTS: Final = tuple(t for t in TEST_TITLES if t != "6")
"""The draft's section 5 tests: where a section 4 statement applies unless it says otherwise."""

ME, AG = "Model Engine", "Application Gateway"

CONDITIONS: Final[Mapping[str, str]] = {
    "open-loop": '4.2.5: "in open-loop mode"; 5.1.2.2: "For open-loop:"',
    "closed-loop": '5.1.2.2, 5.2.2.2: "For closed-loop:"',
    "dataset-derived": '4.3.3: "When using dataset-derived workloads (ShareGPT, HumanEval)"',
    "warm-start": '4.5.3: "When cold start performance is being measured (Model Load Time, Cold '
    'Start Latency), warm-up MUST be skipped." (so 4.5.1 and 4.5.2 apply to every other run)',
    "cold-start": '4.5.3: "When cold start performance is being measured (Model Load Time, Cold '
    'Start Latency)"',
    "prefix-cache-tested": '4.5.1 item 4: "If prefix caching is enabled and being tested"',
    "option-c-available": '4.6.3: "Option C is RECOMMENDED when available." (available: the '
    "SUT reported server-side spans)",
    "distributed": '4.7.2: "When load generator and SUT are on different machines:"; 4.7.3: '
    '"where network latency is significant"',
    "sub-millisecond": '4.7.2: "when sub-millisecond accuracy is required" (a declared '
    "accuracy under 1 ms across machines)",
    "slo-specified": '5.2.2.3: "Latency Constraint (Optional)"',
}
"""The draft's conditions on its statements and bullets, by id, with the words that set them;
:mod:`otelbench.report.compliance` decides from a run's facts whether each holds."""


@dataclass(frozen=True)
class Bullet:
    """One item under an umbrella statement, as the draft words it (its list marker dropped),
    in the draft's ``section``; judged by its ``checks`` (compliance check ids) or, for 4.2's
    umbrella over its subsections, by the ``statements`` it names; ``condition`` as for a
    statement."""

    section: str
    text: str
    checks: tuple[str, ...] = ()
    statements: tuple[str, ...] = ()
    condition: str | None = None


@dataclass(frozen=True)
class Statement:
    """One normative sentence of the draft (module docstring)."""

    id: str
    section: str
    keyword: Keyword
    text: str
    judged: Judged
    tests: tuple[str, ...] = ALL_TESTS
    boundaries: tuple[str, ...] = ()
    how: str = ""
    """For ``enforced``: how otelbench meets it, and where (a capability of otelbench itself);
    for the others: what is judged (the checks give the evidence)."""
    condition: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    """Test → the id of that test's own sentence that overrides this boundary statement."""
    bullets: tuple[Bullet, ...] = ()

    @property
    def level(self) -> Literal["MUST", "SHOULD"]:
        return KEYWORD_LEVEL[self.keyword]

    def applies(self, test: str, boundary: str | None) -> bool:
        """Whether it applies to ``test`` at ``boundary`` by its scope (an undeclared boundary:
        only the statements for every boundary); its ``condition`` is the run's to decide."""
        if test not in self.tests or test in self.overrides:
            return False
        return not self.boundaries or boundary in self.boundaries


def _s(
    id: str,
    section: str,
    keyword: Keyword,
    text: str,
    judged: Judged,
    how: str,
    *,
    tests: tuple[str, ...] = ALL_TESTS,
    boundaries: tuple[str, ...] = (),
    condition: str | None = None,
    overrides: Mapping[str, str] | None = None,
    bullets: tuple[Bullet, ...] = (),
) -> Statement:
    return Statement(
        id, section, keyword, text, judged, tests, boundaries, how, condition, overrides or {},
        bullets,
    )  # fmt: skip


def _b(section: str, text: str, *checks: str, condition: str | None = None) -> Bullet:
    return Bullet(section, text, checks, condition=condition)


def _sub(section: str, heading: str, *statements: str) -> Bullet:
    """A bullet of 4.2's umbrella: one of its subsections, judged by its MUST statements."""
    return Bullet(section, f"{section}. {heading}", statements=statements)


_CAPABILITY = "a capability of otelbench's load generator, whatever the run: "
_WORKLOAD_CHECKS: Final = (
    "workload-input",
    "workload-output",
    "workload-content",
    "workload-prefix-sharing",
)
"""The checks of 4.3.1's four items (``otelbench.report.compliance``), in the draft's order."""

STATEMENTS: Final[tuple[Statement, ...]] = (
    # ---- 4.1 System Under Test configurations
    _s("sut-boundary-declared", "4.1", "MUST",
       "The System Under Test (SUT) boundary MUST be declared before benchmarking.",
       "declared", "the tester's --sut-boundary (or the SUT description file)"),
    # ---- 4.2 Load generator
    _s("load-generator-requirements", "4.2", "MUST",
       "It MUST satisfy the following requirements.",
       "measured", "the MUST statements of 4.2.1–4.2.6, subsection by subsection",
       bullets=(
           _sub("4.2.1", "Timing Resolution", "timing-resolution"),
           _sub("4.2.2", "Streaming Support", "streaming-support", "streaming-per-chunk"),
           _sub("4.2.3", "Open-Loop Load Generation", "open-loop-support", "poisson-supported"),
           _sub("4.2.4", "Closed-Loop Load Generation", "closed-loop-support"),
           _sub("4.2.5", "Request Isolation", "open-loop-isolation",
                "asynchronous-implementation"),
           _sub("4.2.6", "Output Recording", "output-recording"),
       )),
    _s("timing-resolution", "4.2.1", "MUST",
       "The load generator MUST measure time with resolution of 1 millisecond or better.",
       "measured", "the load generator's clock (its reported resolution and measured read "
       "delay) and its event loops' measured lateness (run.client_health)"),
    _s("timing-resolution-us", "4.2.1", "RECOMMENDED",
       "Microsecond resolution is RECOMMENDED for ITL measurement.",
       "measured", "the clock's reported resolution and measured read delay, within 1 µs"),
    _s("streaming-support", "4.2.2", "MUST",
       "The load generator MUST support streaming response protocols (SSE, WebSocket, or gRPC "
       "streaming).",
       "measured", "the run streamed its responses"),
    _s("streaming-per-chunk", "4.2.2", "MUST",
       "It MUST record the arrival time of each token or chunk, not only the complete response.",
       "measured", "the run's recorded chunk arrival times"),
    _s("open-loop-support", "4.2.3", "MUST",
       "The load generator MUST support open-loop load generation where request arrival times "
       "are determined by a specified distribution independent of response times.",
       "enforced", _CAPABILITY + "--rate with --arrival poisson, uniform, bursty or trace "
       "schedules every send before the load starts (otelbench.loadgen.arrivals:ARRIVALS)"),
    _s("poisson-supported", "4.2.3", "MUST",
       "Poisson arrivals MUST be supported.",
       "enforced", _CAPABILITY + "--arrival poisson, the default of `otelbench run --rate` "
       "(otelbench.loadgen.arrivals:ARRIVALS)"),
    _s("uniform-bursty-supported", "4.2.3", "RECOMMENDED",
       "Uniform and bursty arrival patterns are RECOMMENDED.",
       "enforced", _CAPABILITY + "--arrival uniform and --arrival bursty, gamma gaps "
       "(otelbench.loadgen.arrivals:ARRIVALS)"),
    _s("closed-loop-support", "4.2.4", "MUST",
       "The load generator MUST support closed-loop load generation where a fixed number of "
       "concurrent requests are maintained.",
       "enforced", _CAPABILITY + "--concurrency N keeps N requests in flight "
       "(otelbench.loadgen.share:measure_share)"),
    _s("open-loop-isolation", "4.2.5", "MUST NOT",
       "The load generator MUST NOT allow slow responses to delay the submission of subsequent "
       "requests in open-loop mode.",
       "measured", "the run's schedule lag and the generator-bottleneck flag",
       condition="open-loop"),
    _s("asynchronous-implementation", "4.2.5", "REQUIRED",
       "Asynchronous or multi-threaded implementation is REQUIRED.",
       "enforced", _CAPABILITY + "an asyncio load generator, one task per request "
       "(otelbench.loadgen.share:measure_share)"),
    _s("output-recording", "4.2.6", "MUST",
       "The load generator MUST record for each request:",
       "measured", "what the stored spans hold for every request",
       bullets=(
           _b("4.2.6", "Request submission timestamp", "request-timestamps"),
           _b("4.2.6", "First token arrival timestamp", "request-timestamps"),
           _b("4.2.6", "Each subsequent token arrival timestamp", "streaming-per-chunk"),
           _b("4.2.6", "Final token arrival timestamp", "request-timestamps"),
           _b("4.2.6", "Total input token count", "token-counts"),
           _b("4.2.6", "Total output token count", "token-counts"),
           _b("4.2.6", "Request success/failure status", "request-status"),
       )),
    # ---- 4.3 Reference workloads
    _s("custom-workload-specified", "4.3", "MUST",
       "Testers MAY use custom workloads but MUST fully specify them.",
       "measured", "the workload specification in the report"),
    _s("workload-parameters", "4.3.1", "MUST",
       "Each workload MUST specify:",
       "declared", "the workload specification the run was generated from, field by field",
       bullets=(
           *(_b("4.3.1", item, check) for item, check in zip(
               ("Input length distribution:", "Output length distribution:",
                "Content characteristics:", "Prefix sharing:"), _WORKLOAD_CHECKS, strict=True)),
       )),
    _s("synthetic-uniform-model-engine", "4.3.2.1", "REQUIRED",
       "It is REQUIRED for Model Engine benchmarking.",
       "measured", "the prompt lengths and max_tokens the run sent are A.1's",
       boundaries=(ME,),
       overrides={"5.6": "fairness-workload", "5.9": "long-context-workload"}),
    _s("conversation-application-gateway", "4.3.2.3", "RECOMMENDED",
       "This workload is RECOMMENDED for Application Gateway benchmarking.",
       "measured", "the run sent ShareGPT conversations (A.3)", boundaries=(AG,),
       overrides={"5.5": "capacity-workload", "5.6": "fairness-workload",
                  "5.7": "prefix-cache-workload", "5.8": "memory-pressure-workload",
                  "5.9": "long-context-workload"}),
    _s("long-context-for-scaling", "4.3.2.5", "REQUIRED",
       "This workload is REQUIRED for Long Context Scaling tests.",
       "measured", "the run sent A.5's lengths", tests=("5.9",)),
    _s("deterministic-seed", "4.3.3", "MUST",
       "Testers MUST use deterministic random seeds for workload generation.",
       "measured", "the seed the workload and arrival schedule were generated from"),
    _s("seed-reported", "4.3.3", "MUST",
       "The seed MUST be reported.",
       "measured", "run.seed"),
    _s("request-sequence-published", "4.3.3", "SHOULD",
       "Testers SHOULD publish the exact request sequences used, or provide generation code "
       "with fixed seeds.",
       "measured", "generator version, workload and seed that regenerate the sequence"),
    _s("dataset-provenance", "4.3.3", "MUST",
       "When using dataset-derived workloads (ShareGPT, HumanEval), testers MUST specify the "
       "dataset version, subset selection method, and any preprocessing applied.",
       "declared", "the dataset's sha256, selection and filters", condition="dataset-derived"),
    # ---- 4.4 Tokenization
    _s("tokenizer-specified", "4.4.1", "MUST",
       "The test report MUST specify:",
       "declared", "the tokenizer's declaration, field by field",
       bullets=(
           _b("4.4.1", 'Tokenizer name and version (e.g., "cl100k_base", "Llama-3 tokenizer")',
              "tokenizer-spec"),
           _b("4.4.1", "Vocabulary size", "tokenizer-spec"),
           _b("4.4.1", "Source (Hugging Face model ID, tiktoken name, or custom)",
              "tokenizer-spec"),
       )),
    _s("token-counting-option", "4.4.2", "MUST",
       "The test report MUST declare which option is used.",
       "declared", "run.tokenizer.option"),
    _s("reference-tokenizer", "4.4.2", "RECOMMENDED",
       "Option B with cl100k_base (GPT-4 tokenizer) as reference is RECOMMENDED for "
       "cross-system comparison.",
       "measured", "every compared run counted tokens with cl100k_base (Option B)",
       tests=("6",)),
    _s("special-tokens", "4.4.3", "MUST",
       "The test report MUST specify handling of:",
       "declared", "the tokenizer's declaration, item by item",
       bullets=(
           _b("4.4.3", "BOS/EOS tokens (included or excluded from counts)", "special-tokens"),
           _b("4.4.3", "System prompt tokens (counted separately or included)",
              "special-tokens"),
           _b("4.4.3", "Tool/function call formatting tokens", "special-tokens"),
       )),
    # ---- 4.5 Warm-up
    _s("warmup", "4.5.1", "MUST",
       "Before measurement begins, testers MUST:",
       "measured", "the warm-up's and the probes' spans", condition="warm-start",
       bullets=(
           _b("4.5.1", "Load the model fully into accelerator memory", "warmup-model-loaded"),
           _b("4.5.1", "Process at least 100 requests or 10,000 output tokens, whichever is "
              "greater", "warmup"),
           _b("4.5.1", "Wait for request queue to drain completely", "warmup-drained"),
           _b("4.5.1", "If prefix caching is enabled and being tested, populate the cache with "
              "representative prefixes", "warmup-cache-populated",
              condition="prefix-cache-tested"),
       )),
    _s("warmup-verified", "4.5.2", "SHOULD",
       "Testers SHOULD verify warm-up completion by:",
       "measured", "probe latency before and after the warm-up", condition="warm-start",
       bullets=(
           _b("4.5.2", "Measuring latency for a probe request before and after warm-up",
              "warmup-verified"),
           _b("4.5.2", "Confirming latency stabilization (less than 10% variation across "
              "consecutive probe requests)", "warmup-verified"),
       )),
    _s("cold-start-skips-warmup", "4.5.3", "MUST",
       "When cold start performance is being measured (Model Load Time, Cold Start Latency), "
       "warm-up MUST be skipped.",
       "measured", "a cold-start run sent no warm-up request", condition="cold-start"),
    _s("cold-start-indicated", "4.5.3", "MUST",
       "The test report MUST clearly indicate cold start measurement.",
       "measured", "run.warmup.mode cold_start", condition="cold-start"),
    # ---- 4.6 Streaming protocol
    _s("sse-application-gateway", "4.6.1", "RECOMMENDED",
       "RECOMMENDED for Application Gateway testing.",
       "measured", "the run streamed over Server-Sent Events", boundaries=(AG,)),
    _s("grpc-model-engine", "4.6.1", "RECOMMENDED",
       "RECOMMENDED for Model Engine testing.",
       "measured", "the run streamed over gRPC", boundaries=(ME,)),
    _s("chunking-declared", "4.6.2", "MUST",
       "The test report MUST specify:",
       "measured", "protocol, tokens per chunk and the ITL handling of multi-token chunks",
       bullets=(
           _b("4.6.2", "Protocol used", "chunking-declared"),
           _b("4.6.2", "Whether each chunk contains exactly one token or potentially multiple "
              "tokens", "chunking-declared"),
           _b("4.6.2", "How multi-token chunks are handled for ITL calculation",
              "chunking-declared"),
       )),
    _s("itl-option-declared", "4.6.3", "MUST",
       "The test report MUST declare which option is used.",
       "measured", "methodology.itl_method.option"),
    _s("itl-option-c", "4.6.3", "RECOMMENDED",
       "Option C is RECOMMENDED when available.",
       "measured", "server ITL from engine-hook per-token timestamps",
       condition="option-c-available"),
    # ---- 4.7 Clock synchronization
    _s("single-machine-model-engine", "4.7.1", "RECOMMENDED",
       "This configuration is RECOMMENDED for Model Engine testing.",
       "measured", "the target is a loopback address", boundaries=(ME,)),
    _s("ntp-accuracy", "4.7.2", "MUST",
       "NTP synchronization MUST achieve accuracy of 10ms or better",
       "declared", "the declared clock synchronization accuracy, for a target on another host",
       condition="distributed"),
    _s("ptp-sub-millisecond", "4.7.2", "SHOULD",
       "PTP synchronization SHOULD be used when sub-millisecond accuracy is required",
       "declared", "the declared method, where the declared accuracy is under 1 ms",
       condition="sub-millisecond"),
    _s("clock-sync-stated", "4.7.2", "MUST",
       "The test report MUST state the synchronization method and estimated accuracy",
       "declared", "the declared clock synchronization method and accuracy",
       condition="distributed"),
    _s("network-rtt", "4.7.3", "SHOULD",
       "Testers SHOULD measure and report network RTT separately",
       "declared", "the declared network RTT, for an Application Gateway on another host",
       boundaries=(AG,), condition="distributed"),
    _s("latency-adjustment-documented", "4.7.3", "MUST",
       "Any latency adjustment MUST be documented in the test report",
       "enforced", "otelbench subtracts no network latency from any measurement: every "
       "latency is reported as measured (otelbench.metrics:ttft_decomposition reports the "
       "network share beside it, never instead)"),
    _s("timestamp-precision", "4.7.4", "MUST",
       "All timestamps MUST be recorded in a format with at least millisecond precision.",
       "enforced", "spans carry Unix epoch nanoseconds (OTLP); chunk arrivals are µs offsets "
       "(otelbench.semconv:CLIENT_CHUNK_OFFSETS_US)"),
    _s("timestamp-format", "4.7.4", "RECOMMENDED",
       "ISO 8601 with milliseconds (YYYY-MM-DDTHH:MM:SS.sssZ) or Unix epoch with milliseconds "
       "is RECOMMENDED.",
       "enforced", "spans carry Unix epoch nanoseconds; reports Unix epoch seconds as floats "
       "(otelbench.report.build:report_from_data)"),
    # ---- 4.8 Safety and guardrails
    _s("safety-accounted", "4.8", "MUST",
       "Benchmarking MUST account for these systems.",
       "declared", "the guardrail configuration, declared or measured from guardrail spans"),
    _s("guardrail-disclosure", "4.8.1", "MUST",
       "The test report MUST disclose:",
       "declared", "input and output filtering, the safety systems' names, refusals",
       bullets=(
           _b("4.8.1", "Whether input content filtering is enabled", "guardrail-disclosure"),
           _b("4.8.1", "Whether output content filtering is enabled", "guardrail-disclosure"),
           _b("4.8.1", 'Names of safety systems if known (e.g., "Llama Guard")',
              "guardrail-disclosure"),
           _b("4.8.1", "Whether any requests were refused during testing", "request-status"),
       )),
    _s("safety-default-enabled", "4.8.2", "SHOULD",
       "Safety systems SHOULD be enabled in their default configuration",
       "declared", "the declared guardrails of an Application Gateway", boundaries=(AG,)),
    _s("safety-disabled-noted", "4.8.2", "MUST",
       "The test report MUST note if safety systems are disabled",
       "declared", "the guardrails of an Application Gateway, enabled or disabled",
       boundaries=(AG,)),
    _s("safety-comparative-runs", "4.8.2", "SHOULD",
       "Testers SHOULD run comparative tests with safety enabled and disabled to quantify "
       "overhead",
       "measured", "the comparative run's report, read when the run was made: safety "
       "disabled there, the same workload", boundaries=(AG,)),
    # ---- 5.1 Time to First Token
    _s("ttft-parameters-defined", "5.1.2", "MUST",
       "The following parameters MUST be defined:",
       "measured", "the parameters of 5.1.2.1–5.1.2.3, item by item", tests=("5.1",),
       bullets=(
           _b("5.1.2.1", "Workload:", *_WORKLOAD_CHECKS),
           _b("5.1.2.1", "Request count:", "request-status"),
           _b("5.1.2.2", "Load model:", "configuration-summary"),
           _b("5.1.2.2", "Arrival rate:", "configuration-summary", condition="open-loop"),
           _b("5.1.2.2", "Arrival distribution:", "configuration-summary", condition="open-loop"),
           _b("5.1.2.2", "Concurrency:", "configuration-summary", condition="closed-loop"),
           _b("5.1.2.3", "SUT configuration:", "sut-boundary"),
           _b("5.1.2.3", "Model identifier:", "model-identifier"),
           _b("5.1.2.3", "Hardware:", "configuration-summary"),
           _b("5.1.2.3", "Prefix caching:", "configuration-summary"),
       )),
    _s("ttft-request-count", "5.1.2.1", "MUST",
       "MUST be at least 1000 for P99 measurement, 10000 for P99.9.",
       "measured", "the TTFT sample count", tests=("5.1",)),
    _s("ttft-poisson", "5.1.2.2", "REQUIRED",
       "Poisson (REQUIRED), uniform, or bursty.",
       "measured", "the gaps between the requests actually sent fit the exponential at the "
       "declared rate", tests=("5.1",), condition="open-loop"),
    _s("first-token-definition", "5.1.3.1", "MUST",
       "If the system emits non-content tokens before content, the test report MUST note this "
       "and specify whether TTFT measures time to any token or time to first content token.",
       "measured", "the report's first token definition", tests=("5.1",)),
    _s("ttft-percentiles", "5.1.4.1", "MUST",
       "All percentiles MUST be reported.",
       "measured", "TTFT P50, P90, P95, P99, P99.9", tests=("5.1",)),
    _s("ttft-input-buckets", "5.1.4.2", "RECOMMENDED",
       "RECOMMENDED buckets: [0-256), [256-512), [512-1024), [1024-2048), [2048-4096), [4096+) "
       "tokens.",
       "measured", "TTFT by input length in the draft's buckets", tests=("5.1",)),
    _s("sample-count-stated", "5.1.4.3", "MUST",
       "The test report MUST state the sample count.",
       "measured", "metrics.client.ttft_ms.count", tests=("5.1",)),
    _s("ttft-report-includes", "5.1.5", "MUST",
       "The test report MUST include:",
       "measured", "the configuration summary and the results (5.1.5.1–5.1.5.3)",
       tests=("5.1",),
       bullets=(
           Bullet("5.1.5.1", "5.1.5.1. Configuration Summary", ("configuration-summary",)),
           Bullet("5.1.5.2", "5.1.5.2. Results Table", ("ttft-percentiles",)),
           Bullet("5.1.5.3", "5.1.5.3. TTFT by Input Length", ("token-counts",)),
       )),
    _s("ttft-results-table", "5.1.5.2", "SHOULD",
       "The results SHOULD be reported in tabular format:",
       "enforced", "report.md and report.html render Table 1's rows (requests, TTFT P50–P99.9, "
       "mean, min, max) (otelbench.report.markdown:render_markdown)", tests=("5.1",)),
    _s("ttft-distribution-plot", "5.1.5.4", "SHOULD",
       "Testers SHOULD include a histogram or CDF plot of the TTFT distribution.",
       "enforced", "report.html plots the TTFT histogram and CDF "
       "(otelbench.report.html:render_html)", tests=("5.1",)),
    # ---- 5.2 Output Token Throughput
    _s("throughput-parameters-defined", "5.2.2", "MUST",
       "The following parameters MUST be defined:",
       "measured", "the parameters of 5.2.2.1–5.2.2.3, item by item, each level's duration "
       "as measured", tests=("5.2",),
       bullets=(
           _b("5.2.2.1", "Workload:", *_WORKLOAD_CHECKS),
           _b("5.2.2.1", "Test duration:", "level-min-duration"),
           _b("5.2.2.2", "Load model:", "configuration-summary"),
           _b("5.2.2.2", "Arrival rate range:", "search-range", condition="open-loop"),
           _b("5.2.2.2", "Rate increment:", "search-range", condition="open-loop"),
           _b("5.2.2.2", "Concurrency range:", "search-range", condition="closed-loop"),
           _b("5.2.2.2", "Concurrency increment:", "search-range", condition="closed-loop"),
           _b("5.2.2.3", "TTFT SLO:", "search-range", condition="slo-specified"),
           _b("5.2.2.3", "TPOT SLO:", "search-range", condition="slo-specified"),
       )),
    _s("throughput-duration", "5.2.2.1", "RECOMMENDED",
       "RECOMMENDED 300 seconds for stable measurement.",
       "measured", "every load level ran at least 300 s", tests=("5.2",)),
    # ---- 5.3 Throughput-Latency Tradeoff
    _s("tradeoff-open-loop", "5.3.2", "REQUIRED",
       "Open-loop is REQUIRED for this test.",
       "measured", "every load level ran open loop", tests=("5.3",)),
    # ---- 5.4 Inter-Token Latency Distribution
    _s("itl-workload", "5.4.2", "RECOMMENDED",
       "Synthetic-Uniform or Conversation workload RECOMMENDED.",
       "measured", "the workload is Synthetic-Uniform (A.1) or Conversation (A.3)",
       tests=("5.4",)),
    _s("itl-output-tokens", "5.4.2", "MUST",
       "Requests MUST generate at least 50 output tokens to provide meaningful ITL samples.",
       "measured", "every successful request's output token count", tests=("5.4",)),
    _s("itl-load-levels", "5.4.2", "RECOMMENDED",
       "Multiple load levels RECOMMENDED: 25%, 50%, 75%, 90% of saturation.",
       "measured", "the load levels run (one run is one level)", tests=("5.4",)),
    _s("itl-excludes-ttft", "5.4.3", "MUST NOT",
       "The interval between request submission and first token (TTFT) MUST NOT be included "
       "in ITL calculation.",
       "enforced", "ITL is computed from the arrival times of the chunks after the first; "
       "T_submit never enters it (otelbench.metrics:consecutive_intervals)", tests=("5.4",)),
    # ---- 5.5 Concurrent Request Capacity
    _s("capacity-workload", "5.5.2", "RECOMMENDED",
       "Synthetic-Uniform RECOMMENDED for controlled testing.",
       "measured", "the workload is Synthetic-Uniform (A.1)", tests=("5.5",)),
    # ---- 5.6 Scheduling Fairness
    _s("fairness-workload", "5.6.2", "REQUIRED",
       "Synthetic-Skewed REQUIRED.",
       "measured", "the workload is Synthetic-Skewed (A.2)", tests=("5.6",)),
    _s("fairness-load-level", "5.6.2", "RECOMMENDED",
       "70-90% of saturation throughput RECOMMENDED to create contention.",
       "measured", "the mixed level's load as a fraction of saturation", tests=("5.6",)),
    # ---- 5.7 Prefix Cache Effectiveness
    _s("prefix-cache-workload", "5.7.2", "RECOMMENDED",
       "Code Completion workload RECOMMENDED (high prefix sharing).",
       "measured", "the workload is Code Completion (A.4)", tests=("5.7",)),
    _s("prefix-cache-configurations", "5.7.2", "MUST",
       "Test MUST run in two configurations: cache disabled (baseline) and cache enabled.",
       "measured", "both configurations measured, the disabled one's measured cache hit rate "
       "zero", tests=("5.7",)),
    # ---- 5.8 Memory Pressure Behavior
    _s("memory-pressure-workload", "5.8.2", "RECOMMENDED",
       "Long Context workload RECOMMENDED to create memory pressure.",
       "measured", "the workload is Long Context (A.5)", tests=("5.8",)),
    # ---- 5.9 Long Context Scaling
    _s("long-context-workload", "5.9.2", "REQUIRED",
       "Long Context workload REQUIRED.",
       "measured", "the workload is Long Context (A.5)", tests=("5.9",)),
    # ---- 5.10 Guardrail Overhead
    _s("guardrail-overhead-workload", "5.10.2", "RECOMMENDED",
       "Conversation workload RECOMMENDED.",
       "measured", "the workload is Conversation (A.3)", tests=("5.10",)),
    # ---- 6 Multi-system comparison
    _s("comparison-equivalence", "6.1", "MUST",
       "Testers MUST ensure:",
       "measured", "otelbench compare's equivalence checklist", tests=("6",),
       bullets=(
           _b("6.1", "Identical workload (same requests in same order with same seeds)",
              "equivalence"),
           _b("6.1", "Equivalent SUT boundary (all systems at same boundary)", "equivalence"),
           _b("6.1", "Comparable hardware (or normalize by hardware capability)", "equivalence"),
           _b("6.1", "Same load model and parameters", "equivalence"),
       )),
)  # fmt: skip
"""Every normative statement of draft sections 4–6, in the draft's order."""

SETUP_LIMITS: Final[tuple[Statement, ...]] = (
    _s("tradeoff-level-duration", "5.3.2", SETUP_PARAMETER,
       "Minimum 60 seconds per load level.",
       "measured", "every load level's measured duration", tests=("5.3",)),
    _s("tradeoff-load-levels", "5.3.2", SETUP_PARAMETER,
       "At least 10 load levels spanning from low load (10% of estimated capacity) to "
       "saturation.",
       "measured", "the load levels measured", tests=("5.3",)),
    _s("itl-request-count", "5.4.2", SETUP_PARAMETER,
       "At least 100 requests for per-request statistics, yielding 5000+ ITL samples.",
       "measured", "the requests with per-request ITL statistics, and the ITL samples",
       tests=("5.4",)),
    _s("fairness-class-requests", "5.6.2", SETUP_PARAMETER,
       "At least 500 requests per class.",
       "measured", "the measured requests of each class", tests=("5.6",)),
)  # fmt: skip
"""The keyword-less limits of the tests' setup parameters (module docstring), as the draft
words them."""

ALL_STATEMENTS: Final[tuple[Statement, ...]] = (*STATEMENTS, *SETUP_LIMITS)
"""What a verdict judges: the keyword statements and the setup limits."""

BY_ID: Final[Mapping[str, Statement]] = {s.id: s for s in ALL_STATEMENTS}


def statement(id: str) -> Statement:
    """The statement registered under ``id`` (KeyError for an unknown id)."""
    return BY_ID[id]


def statements_for(test: str, boundary: str | None) -> list[Statement]:
    """The statements and setup limits that apply to ``test`` (``5.1`` … ``5.10``, ``6``) at
    ``boundary`` by their scope, in the draft's order."""
    return [s for s in ALL_STATEMENTS if s.applies(test, boundary)]
