"""The registry of the draft's normative statements: every BCP 14 keyword sentence of sections
4–6 (draft 2: compliance is judged per test over these statements).

The statements are data: ``statements.toml`` beside this module holds them, one record each in
the draft's order; this module reads it once, checks every record (its keys, keyword, judgement,
boundaries and conditions) and serves them as :class:`Statement` values.

Each :class:`Statement` is one sentence of the draft that carries a requirement keyword (MUST,
MUST NOT, REQUIRED: level MUST; SHOULD, RECOMMENDED: level SHOULD), worded as the draft words it
(``docs/reference/methodology-draft.txt``; a unit test reads that text and fails when a keyword
sentence has no record here, or a record no sentence). For each it says:

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

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypedDict, get_args, get_type_hints

__all__ = [
    "ALL_STATEMENTS",
    "ALL_TESTS",
    "BOUNDARIES",
    "BY_ID",
    "CONDITIONS",
    "KEYWORD_LEVEL",
    "SETUP_LIMITS",
    "SETUP_PARAMETER",
    "STATEMENTS",
    "TEST_TITLES",
    "Bullet",
    "BulletRecord",
    "Judged",
    "Keyword",
    "Statement",
    "StatementRecord",
    "read_statements",
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

BOUNDARIES: Final = ("Model Engine", "Application Gateway")
"""The SUT boundaries a statement may be restricted to (draft 4.1)."""

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


class _BulletFields(TypedDict):
    section: str
    text: str


class BulletRecord(_BulletFields, total=False):
    """A bullet as ``statements.toml`` writes it (the fields of :class:`Bullet`)."""

    checks: list[str]
    statements: list[str]
    condition: str


class _StatementFields(TypedDict):
    id: str
    section: str
    keyword: Keyword
    text: str
    judged: Judged
    how: str


class StatementRecord(_StatementFields, total=False):
    """A ``[[statement]]`` or ``[[setup_limit]]`` of ``statements.toml`` (the fields of
    :class:`Statement`; ``tests`` omitted: :data:`ALL_TESTS`). Two classes, because this module
    reads its annotations as strings, where ``NotRequired`` is not seen."""

    tests: list[str]
    boundaries: list[str]
    condition: str
    overrides: dict[str, str]
    bullets: list[BulletRecord]


def _statement(raw: StatementRecord) -> Statement:
    where = f"{_FILE.name}: {raw.get('id', 'a record without an id')}"
    _check_keys(raw, StatementRecord, where)
    if raw["keyword"] not in get_args(Keyword) or raw["judged"] not in get_args(Judged):
        raise ValueError(f"{where}: keyword {raw['keyword']!r} or judged {raw['judged']!r}")
    if not set(raw.get("boundaries", ())) <= set(BOUNDARIES):
        raise ValueError(f"{where}: boundaries {raw.get('boundaries')} are not {BOUNDARIES}")
    return Statement(
        raw["id"],
        raw["section"],
        raw["keyword"],
        raw["text"],
        raw["judged"],
        tuple(raw.get("tests", ALL_TESTS)),
        tuple(raw.get("boundaries", ())),
        raw["how"],
        _condition(raw.get("condition"), where),
        raw.get("overrides", {}),
        tuple(_bullet(b, f"{where}, a bullet") for b in raw.get("bullets", ())),
    )


def _bullet(raw: BulletRecord, where: str) -> Bullet:
    _check_keys(raw, BulletRecord, where)
    return Bullet(
        raw["section"],
        raw["text"],
        tuple(raw.get("checks", ())),
        tuple(raw.get("statements", ())),
        _condition(raw.get("condition"), where),
    )


def _check_keys(raw: Mapping[str, object], record: Any, where: str) -> None:
    """Every key of ``raw`` is a field of TypedDict ``record``, and every required one is there."""
    unknown = sorted(set(raw) - set(get_type_hints(record)))
    missing = sorted(set(record.__required_keys__) - set(raw))
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")


def _condition(value: str | None, where: str) -> str | None:
    if value is not None and value not in CONDITIONS:
        raise ValueError(f"{where}: condition {value!r} is not one of CONDITIONS")
    return value


def read_statements(text: str, table: str) -> tuple[Statement, ...]:
    """The statements of array ``table`` (``statement``, ``setup_limit``) of TOML ``text``, each
    record checked (ValueError naming the record and what is wrong with it)."""
    return tuple(map(_statement, tomllib.loads(text)[table]))


_FILE: Final = Path(__file__).with_name("statements.toml")
_TEXT: Final = _FILE.read_text(encoding="utf-8")

STATEMENTS: Final[tuple[Statement, ...]] = read_statements(_TEXT, "statement")
"""Every normative statement of draft sections 4–6, in the draft's order."""

SETUP_LIMITS: Final[tuple[Statement, ...]] = read_statements(_TEXT, "setup_limit")
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
