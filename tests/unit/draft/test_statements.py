"""The registry of normative statements against the draft text the repository ships.

``docs/reference/methodology-draft.txt`` is the draft (draft-gaikwad-llm-benchmarking-
methodology-00, its text rendering). The test finds every sentence of sections 4–6 that carries
a requirement keyword (BCP 14: MUST, MUST NOT, REQUIRED, SHALL, SHALL NOT, SHOULD, SHOULD NOT,
RECOMMENDED, NOT RECOMMENDED; MAY and OPTIONAL state no requirement) and fails when one has no
registry entry with the same section, keyword and wording, or an entry has no such sentence.
The umbrella statements' bullets, the setup limits, the conditions and the overriding sentences
are held against the same text.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from pathlib import Path

import pytest

from otelbench.draft.statements import (
    ALL_STATEMENTS,
    ALL_TESTS,
    BY_ID,
    CONDITIONS,
    SETUP_LIMITS,
    SETUP_PARAMETER,
    STATEMENTS,
    TEST_TITLES,
    read_statements,
    statement,
    statements_for,
)
from otelbench.report.compliance import CONDITION_HOLDS, PROCEDURE_REQUIREMENTS, REQUIREMENTS

DRAFT = Path(__file__).parents[3] / "docs" / "reference" / "methodology-draft.txt"

KEYWORD = re.compile(
    r"\b(MUST NOT|MUST|REQUIRED|SHALL NOT|SHALL|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED)\b"
)
HEADING = re.compile(r"^(\d+(?:\.\d+)*)\. \S")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"])")


def keyword_sentences(text: str) -> list[tuple[str, list[str], str]]:
    """(section, keywords, sentence) of every keyword sentence of sections 4–6, in order."""
    found: list[tuple[str, list[str], str]] = []
    section: str | None = None
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading:
            section = heading.group(1)
            continue
        if section is None or not 4 <= int(section.split(".")[0]) <= 6:
            continue
        body = line.strip().removeprefix("•").strip()
        for sentence in SENTENCE_END.split(body):
            keywords = KEYWORD.findall(sentence)
            if keywords:
                found.append((section, keywords, sentence))
    return found


def test_the_shipped_draft_is_the_methodology_draft() -> None:
    text = DRAFT.read_text(encoding="utf-8")
    assert "draft-gaikwad-llm-benchmarking-methodology-00" in text
    assert "4. Test Setup" in text
    assert "6.4. Fair Comparison Checklist" in text


def test_every_keyword_sentence_of_sections_4_to_6_has_its_entry() -> None:
    sentences = keyword_sentences(DRAFT.read_text(encoding="utf-8"))
    assert all(len(k) == 1 for _, k, _ in sentences), "a sentence with two keywords"
    draft = Counter((section, k[0], text) for section, k, text in sentences)
    registry = Counter((s.section, s.keyword, s.text) for s in STATEMENTS)
    assert draft - registry == Counter(), "keyword sentences without a registry entry"
    assert registry - draft == Counter(), "registry entries the draft does not have"
    # the registry keeps the draft's order
    assert [(s.section, s.text) for s in STATEMENTS] == [(sec, t) for sec, _, t in sentences]


def test_the_count_48_must_level_and_26_should_level() -> None:
    levels = Counter(s.level for s in STATEMENTS)
    assert levels == {"MUST": 48, "SHOULD": 26}
    assert Counter(s.keyword for s in STATEMENTS) == {
        "MUST": 39,
        "MUST NOT": 2,
        "REQUIRED": 7,
        "SHOULD": 8,
        "RECOMMENDED": 18,
    }


def test_keyword_sentences_are_found_where_the_text_puts_them() -> None:
    """The extraction itself: a sentence with a keyword in a bullet, a lowercase 'required'
    (no keyword), MAY (no requirement), another section's keyword."""
    text = "\n".join(
        [
            "3.1. Scope",
            "Testers MUST read this.",
            "4.2.9. Example",
            "  • Testers SHOULD do a. Then b is REQUIRED. At least 5 are required.",
            "Testers MAY skip it.",
            "7. Security Considerations",
            "Nothing MUST happen here.",
        ]
    )
    assert keyword_sentences(text) == [
        ("4.2.9", ["SHOULD"], "Testers SHOULD do a."),
        ("4.2.9", ["REQUIRED"], "Then b is REQUIRED."),
    ]


def test_ids_are_unique_and_every_test_is_known() -> None:
    assert len(BY_ID) == len(ALL_STATEMENTS) == len(STATEMENTS) + len(SETUP_LIMITS)
    for s in ALL_STATEMENTS:
        assert set(s.tests) <= set(TEST_TITLES), s.id
        assert set(s.boundaries) <= {"Model Engine", "Application Gateway", "Compound System"}
        assert s.how, s.id
    # section 4 applies to every test unless it names its own; a section 5.x statement to 5.x
    for s in ALL_STATEMENTS:
        top = s.section.split(".")
        if top[0] == "5":
            assert s.tests == (f"5.{top[1]}",), s.id


def test_every_measured_or_declared_statement_has_a_check_and_every_check_a_statement() -> None:
    checks = [*REQUIREMENTS, *PROCEDURE_REQUIREMENTS]
    ids = {c.id for c in checks}
    judged = {sid for c in checks for sid in c.judges}
    assert judged <= set(BY_ID), judged - set(BY_ID)
    in_bullets = {c for s in ALL_STATEMENTS for b in s.bullets for c in b.checks}
    assert in_bullets <= ids, in_bullets - ids
    for s in ALL_STATEMENTS:
        if s.judged == "enforced":
            assert s.id not in judged, f"{s.id} is enforced, yet judged"
            assert not s.bullets, f"{s.id} is enforced, yet has bullets"
        elif s.bullets:
            assert s.id not in judged, f"{s.id}: an umbrella is judged through its bullets"
            for b in s.bullets:
                assert bool(b.checks) != bool(b.statements), (s.id, b.text)
                assert set(b.statements) <= set(BY_ID), (s.id, b.text)
        else:
            assert s.id in judged, f"{s.id} is {s.judged} but no check judges it"
    # every check judges a statement, directly or through an umbrella's bullet
    assert [c.id for c in checks if not c.judges and c.id not in in_bullets] == []


def _draft_lines() -> list[tuple[str, str]]:
    """(section, line without its list marker) of every non-empty line of sections 4–6."""
    out, section = [], ""
    for line in DRAFT.read_text(encoding="utf-8").splitlines():
        heading = HEADING.match(line)
        if heading:
            section = heading.group(1)
        body = re.sub(r"^\s*(•|\d+\.)\s+(?=\D)", "", line) if not heading else line
        if body.strip():
            out.append((section, body.strip()))
    return out


def test_every_umbrella_carries_its_bullets_as_the_draft_words_them() -> None:
    """Each bullet is a line of the draft (its list marker dropped) in its section, after the
    umbrella's sentence and in the draft's order; where the umbrella is followed by a list, the
    registry has every item of it."""
    lines = _draft_lines()
    umbrellas = [s for s in STATEMENTS if s.bullets]
    assert {s.id for s in umbrellas} == {
        "load-generator-requirements", "output-recording", "workload-parameters",
        "tokenizer-specified", "special-tokens", "warmup", "warmup-verified",
        "chunking-declared", "guardrail-disclosure", "ttft-parameters-defined",
        "ttft-report-includes", "throughput-parameters-defined", "comparison-equivalence",
    }  # fmt: skip
    for s in umbrellas:
        at = next(i for i, (sec, text) in enumerate(lines) if sec == s.section and s.text in text)
        position = at
        for b in s.bullets:
            found = next(
                (i for i in range(position + 1, len(lines)) if lines[i] == (b.section, b.text)),
                None,
            )
            assert found is not None, (s.id, b.section, b.text)
            position = found
        raw = DRAFT.read_text(encoding="utf-8").splitlines()
        start = next(i for i, line in enumerate(raw) if s.text in line)
        listed = []
        for line in raw[start + 1 :]:
            item = re.match(r"^\s*(?:•|\d+\.)\s+(.*)$", line)
            if item is None:
                break
            listed.append(item.group(1).strip())
        if listed:
            assert [b.text for b in s.bullets] == listed, s.id


def test_setup_limits_and_conditions_quote_the_draft() -> None:
    """A setup limit is a line of its section without a keyword; every condition quotes the
    draft; every overriding sentence is the test's own statement of a workload."""
    lines = _draft_lines()
    for s in SETUP_LIMITS:
        assert s.keyword == SETUP_PARAMETER
        assert s.level == "SHOULD"
        assert (s.section, s.text) in lines, s.id
        assert not KEYWORD.search(s.text), s.id
    text = " ".join(DRAFT.read_text(encoding="utf-8").split())
    for condition, words in CONDITIONS.items():
        for quoted in re.findall(r'"([^"]+)"', words):
            assert quoted in text, (condition, quoted)
    assert set(CONDITION_HOLDS) == set(CONDITIONS)
    used = {s.condition for s in ALL_STATEMENTS} | {
        b.condition for s in ALL_STATEMENTS for b in s.bullets
    }
    assert used - {None} == set(CONDITIONS)
    # an overriding sentence is the test's own workload statement, of at least the weight of
    # the boundary statement it overrides
    for s in ALL_STATEMENTS:
        for test, other in s.overrides.items():
            theirs = BY_ID[other]
            assert theirs.tests == (test,), (s.id, test)
            assert theirs.id.endswith("-workload"), (s.id, test)
            assert s.level == "SHOULD" or theirs.level == "MUST", (s.id, test)


def test_every_enforced_statement_names_where_otelbench_does_it() -> None:
    """An enforced statement is a capability of otelbench itself: its ``how`` names the module
    and attribute that provide it, and they exist."""
    for s in ALL_STATEMENTS:
        if s.judged != "enforced":
            continue
        where = re.findall(r"\((otelbench[\w.]*):(\w+)", s.how)
        assert where, s.id
        for module, attribute in where:
            assert hasattr(importlib.import_module(module), attribute), (s.id, module, attribute)


@pytest.mark.parametrize(
    ("test", "boundary", "present", "absent"),
    [
        ("5.1", "Model Engine", "synthetic-uniform-model-engine", "sse-application-gateway"),
        ("5.1", "Application Gateway", "safety-comparative-runs", "grpc-model-engine"),
        ("5.9", "Model Engine", "long-context-workload", "synthetic-uniform-model-engine"),
        ("5.7", "Model Engine", "synthetic-uniform-model-engine", "sse-application-gateway"),
        ("5.10", "Model Engine", "synthetic-uniform-model-engine", "grpc-model-engine" + "-x"),
        (
            "5.7",
            "Application Gateway",
            "safety-comparative-runs",
            "conversation-application-gateway",
        ),
        ("5.4", "Application Gateway", "conversation-application-gateway", "grpc-model-engine"),
        ("5.3", None, "tradeoff-level-duration", "itl-request-count"),
        ("5.6", None, "fairness-workload", "sut-boundary-declared" + "-nowhere"),
        ("6", "Model Engine", "comparison-equivalence", "warmup"),
    ],
)
def test_statements_for_a_test_and_boundary(
    test: str, boundary: str | None, present: str, absent: str
) -> None:
    ids = [s.id for s in statements_for(test, boundary)]
    assert present in ids
    assert absent not in ids


def test_section_4_applies_to_every_section_5_test() -> None:
    assert statement("warmup").tests == ALL_TESTS == tuple(f"5.{i}" for i in range(1, 11))
    assert statement("ttft-poisson").text == "Poisson (REQUIRED), uniform, or bursty."
    with pytest.raises(KeyError):
        statement("no-such-statement")


GOOD = """
[[statement]]
id = "x"
section = "4.1"
keyword = "MUST"
text = "It MUST."
judged = "measured"
how = "a check"
"""


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('tests = ["5.1"]\ncolour = "red"', "x: unknown keys ['colour'], missing keys []"),
        ('condition = "sunny"', "x: condition 'sunny' is not one of CONDITIONS"),
        ('boundaries = ["Client"]', "x: boundaries ['Client'] are not"),
        (
            '[[statement.bullets]]\ntext = "An item"',
            "x, a bullet: unknown keys [], missing keys ['section']",
        ),
    ],
)
def test_a_malformed_record_is_refused_by_name(extra: str, problem: str) -> None:
    """statements.toml is data a maintainer edits by hand: a typo fails at import, naming the
    record, not later as a statement that silently applies nowhere."""
    (good,) = read_statements(GOOD, "statement")
    assert (good.id, good.level, good.tests, good.overrides) == ("x", "MUST", ALL_TESTS, {})
    with pytest.raises(ValueError, match=re.escape(problem)):
        read_statements(GOOD + extra + "\n", "statement")
    missing = GOOD.replace('judged = "measured"\n', "")
    with pytest.raises(ValueError, match=re.escape("x: unknown keys [], missing keys ['judged']")):
        read_statements(missing, "statement")
