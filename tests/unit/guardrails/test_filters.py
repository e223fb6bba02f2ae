"""The built-in filters: blocklist, PII (with the Luhn check), maximum input length."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.errors import ConfigError
from otelbench.guardrails.base import Action, Stage, Verdict
from otelbench.guardrails.filters import (
    BlocklistFilter,
    MaxInputLengthFilter,
    PiiFilter,
    luhn_valid,
)

VALID_CARDS = ["4111111111111111", "5555555555554444", "378282246310005", "6011111111111117"]


def test_luhn_known_numbers() -> None:
    assert all(luhn_valid(c) for c in VALID_CARDS)
    assert not luhn_valid("4111111111111112")
    assert not luhn_valid("1234567812345678")


@given(st.text(alphabet="0123456789", min_size=12, max_size=18))
def test_luhn_exactly_one_check_digit_fits(body: str) -> None:
    fits = [d for d in "0123456789" if luhn_valid(body + d)]
    assert len(fits) == 1


def test_blocklist_keyword_blocks_whole_words_case_insensitively() -> None:
    f = BlocklistFilter(keywords=["forbidden", "bad thing"])
    assert f.check(["this is FORBIDDEN here"], Stage.INPUT) == Verdict(Action.BLOCK, "keyword[0]")
    assert f.check(["a Bad Thing"], Stage.INPUT).rule == "keyword[1]"
    assert f.check(["unforbiddenly fine"], Stage.INPUT) is Verdict.ALLOW
    assert f.check(["ok", "second text is forbidden"], Stage.INPUT).action is Action.BLOCK


def test_blocklist_case_sensitive_and_patterns() -> None:
    f = BlocklistFilter(keywords=["Secret"], patterns=[r"id-\d{3}"], case_sensitive=True)
    assert f.check(["secret"], Stage.INPUT) is Verdict.ALLOW
    assert f.check(["see id-123"], Stage.INPUT) == Verdict(Action.BLOCK, "pattern[0]")


def test_blocklist_redact_replaces_every_match_in_every_text() -> None:
    f = BlocklistFilter(patterns=[r"\d+"], action="redact", replacement="#")
    v = f.check(["a1b22", "none", "3"], Stage.OUTPUT)
    assert v == Verdict(Action.REDACT, "pattern[0]", ("a#b#", "none", "#"), 3)


def test_blocklist_rejects_bad_settings() -> None:
    with pytest.raises(ConfigError, match=r"^patterns\[0\]: not a regular expression"):
        BlocklistFilter(patterns=["("])
    with pytest.raises(ConfigError, match=r"^keywords: give at least one"):
        BlocklistFilter()
    with pytest.raises(ConfigError, match=r"^action: want block or redact"):
        BlocklistFilter(keywords=["x"], action="allow")


@pytest.mark.parametrize(
    ("text", "redacted", "rule"),
    [
        ("mail me at jane.doe+x@mail.example.org today", "mail me at [EMAIL] today", "email"),
        ("call +1 415-555-0132 now", "call [PHONE] now", "phone"),
        ("or (415) 555-0132", "or [PHONE]", "phone"),
        ("UK +44 20 7946 0958.", "UK [PHONE].", "phone"),
        ("card 4111 1111 1111 1111 ok", "card [CARD] ok", "card"),
        ("card 4111-1111-1111-1111", "card [CARD]", "card"),
        ("amex 378282246310005", "amex [CARD]", "card"),
    ],
)
def test_pii_redacts(text: str, redacted: str, rule: str) -> None:
    v = PiiFilter().check([text], Stage.OUTPUT)
    assert (v.action, v.texts, v.rule) == (Action.REDACT, (redacted,), rule)


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112 failed",  # Luhn fails: not a card
        "version 1.2.3 on 2024-11-23",
        "12 345 678 items",
        "no at sign here",
        "a@b",  # no top-level domain
    ],
)
def test_pii_leaves_non_pii_alone(text: str) -> None:
    assert PiiFilter().check([text], Stage.OUTPUT) is Verdict.ALLOW


def test_pii_kinds_and_block_action() -> None:
    only_mail = PiiFilter(kinds=["email"])
    assert only_mail.check(["4111111111111111"], Stage.OUTPUT) is Verdict.ALLOW
    blocker = PiiFilter(action="block")
    assert blocker.check(["x 5555555555554444"], Stage.INPUT) == Verdict(Action.BLOCK, "card")
    counted = PiiFilter().check(["a@b.io and c@d.io, 4111111111111111"], Stage.OUTPUT)
    assert counted.redactions == 3
    assert counted.rule == "card"
    with pytest.raises(ConfigError, match=r"^kinds\[1\]: 'ssn' is not one of"):
        PiiFilter(kinds=["email", "ssn"])


def test_max_input_length_counts_all_texts() -> None:
    f = MaxInputLengthFilter(max_chars=10)
    assert f.check(["12345", "12345"], Stage.INPUT) is Verdict.ALLOW
    assert f.check(["12345", "123456"], Stage.INPUT) == Verdict(Action.BLOCK, "max_chars")
    assert f.stages == frozenset({Stage.INPUT})
    with pytest.raises(ConfigError, match=r"^max_chars: want an integer"):
        MaxInputLengthFilter(max_chars=-1)
