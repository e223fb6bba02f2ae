"""The built-in guardrail filters that need no model: blocklist, PII, maximum input length.

All three are :class:`~otelbench.guardrails.base.TextFilter` s: pure, linear in the text, run in
the event loop (``inline``). The classifier filter, which calls a moderation endpoint, lives in
:mod:`~otelbench.guardrails.classifier`.

Example::

    from otelbench.guardrails.filters import PiiFilter
    from otelbench.guardrails.base import Stage

    v = PiiFilter().check(["mail me: a.b@example.org"], Stage.OUTPUT)
    assert v.texts == ("mail me: [EMAIL]",) and v.rule == "email"

Rules (the span's ``otelbench.guardrail.rule``): ``keyword[i]`` / ``pattern[i]`` (index in the
configured list), ``email`` / ``phone`` / ``card``, ``max_chars``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from otelbench.errors import ConfigError
from otelbench.guardrails.base import Stage, TextFilter, Verdict

__all__ = ["BlocklistFilter", "MaxInputLengthFilter", "PiiFilter", "luhn_valid"]


class BlocklistFilter(TextFilter):
    """Keywords (whole words, case-insensitive by default) and regular expressions.

    ``action="block"`` (default) refuses; ``action="redact"`` replaces each match with
    ``replacement``.
    """

    type_name = "blocklist"

    def __init__(
        self,
        *,
        keywords: Sequence[str] = (),
        patterns: Sequence[str] = (),
        case_sensitive: bool = False,
        whole_words: bool = True,
        action: str = "block",
        replacement: str = "[REDACTED]",
    ) -> None:
        super().__init__(action=action)
        if not keywords and not patterns:
            raise ConfigError("keywords: give at least one keyword or pattern")
        flags = 0 if case_sensitive else re.IGNORECASE
        self.replacement = replacement
        self._rules: list[tuple[str, re.Pattern[str]]] = []
        for i, kw in enumerate(keywords):
            if not isinstance(kw, str) or not kw:
                raise ConfigError(f"keywords[{i}]: want a non-empty string")
            body = re.escape(kw)
            if whole_words:
                body = rf"(?<!\w){body}(?!\w)"
            self._rules.append((f"keyword[{i}]", re.compile(body, flags)))
        for i, pat in enumerate(patterns):
            try:
                self._rules.append((f"pattern[{i}]", re.compile(pat, flags)))
            except (re.error, TypeError) as exc:
                raise ConfigError(f"patterns[{i}]: not a regular expression: {exc}") from None

    def inspect(self, text: str) -> tuple[str, str | None, int] | None:
        first: str | None = None
        total = 0
        for rule, rx in self._rules:
            if self.action.value == "block":
                if rx.search(text):
                    return rule, None, 1
                continue
            text, n = rx.subn(self.replacement, text)
            if n:
                total += n
                first = first or rule
        return None if first is None else (first, text, total)


_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_PHONE = re.compile(
    r"(?<![\w+])(?<!\d[ .-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])"
    r"\d{3,4}[ .-]\d{4}(?!\w)(?![ .-]\d)"
)
"""A phone number: separators required, and not part of a longer run of digit groups."""
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
PII_KINDS = ("card", "email", "phone")
"""In the order they are applied (cards first: a card number also looks like a phone number)."""


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a string of digits (payment card numbers).

    >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
    (True, False)
    """
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


class PiiFilter(TextFilter):
    """E-mail addresses, phone numbers and payment card numbers (13–19 digits, spaces or
    dashes allowed, Luhn checksum required). Redacts by default (``[EMAIL]``, ``[PHONE]``,
    ``[CARD]``); ``action="block"`` refuses instead."""

    type_name = "pii"

    def __init__(
        self,
        *,
        kinds: Sequence[str] = PII_KINDS,
        action: str = "redact",
        replacement: str = "[{KIND}]",
    ) -> None:
        super().__init__(action=action)
        for i, kind in enumerate(kinds):
            if kind not in PII_KINDS:
                raise ConfigError(f"kinds[{i}]: {kind!r} is not one of {', '.join(PII_KINDS)}")
        self.kinds = [k for k in PII_KINDS if k in kinds]
        if not self.kinds:
            raise ConfigError("kinds: give at least one of " + ", ".join(PII_KINDS))
        self.replacement = replacement

    def _sub(self, kind: str) -> str:
        return self.replacement.replace("{KIND}", kind.upper()).replace("{kind}", kind)

    def inspect(self, text: str) -> tuple[str, str | None, int] | None:
        first: str | None = None
        total = 0
        for kind in self.kinds:
            if kind == "card":
                text, n = self._cards(text)
            else:
                rx = _EMAIL if kind == "email" else _PHONE
                text, n = rx.subn(self._sub(kind), text)
            if n:
                if self.action.value == "block":
                    return kind, None, n
                total += n
                first = first or kind
        return None if first is None else (first, text, total)

    def _cards(self, text: str) -> tuple[str, int]:
        if not any(c.isdigit() for c in text):
            return text, 0
        count = 0
        repl = self._sub("card")

        def sub(m: re.Match[str]) -> str:
            nonlocal count
            digits = m.group().replace(" ", "").replace("-", "")
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                count += 1
                return repl
            return m.group()

        return _CARD.sub(sub, text), count


class MaxInputLengthFilter(TextFilter):
    """Refuses a request whose texts hold more than ``max_chars`` characters in all (input only;
    a prompt given as token ids has no text and is not counted)."""

    type_name = "max_input_length"
    stages = frozenset({Stage.INPUT})

    def __init__(self, *, max_chars: int) -> None:
        super().__init__(action="block")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
            raise ConfigError(f"max_chars: want an integer ≥ 0, got {max_chars!r}")
        self.max_chars = max_chars

    def inspect(self, text: str) -> tuple[str, str | None, int] | None:
        return ("max_chars", None, 1) if len(text) > self.max_chars else None

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        if sum(len(t) for t in texts) > self.max_chars:
            return Verdict.block("max_chars")
        return Verdict.ALLOW
