"""The guardrail filter interface: what a filter sees, what it decides (draft 4.8, 5.10).

A filter gets the request's texts (input stage: every prompt string or message text, in order)
or the response's text (output stage: one string, the current chunk or sliding window) and
returns a :class:`Verdict`: allow, block, or redact (with the replacement texts). It never sees
token ids, headers or anything it did not ask for.

Example (a third-party filter; register it under an entry point of group
``otelbench.guardrails``, or with :func:`otelbench.guardrails.registry.register`)::

    from otelbench.guardrails.base import GuardrailFilter, Verdict

    class NoShouting(GuardrailFilter):
        type_name = "no_shouting"
        inline = True                       # pure, linear-time: run it in the event loop

        def __init__(self, *, min_len: int = 8) -> None:
            self.min_len = min_len

        def check(self, texts, stage):
            for text in texts:
                if len(text) >= self.min_len and text.isupper():
                    return Verdict.block("shouting")
            return Verdict.ALLOW

``check`` may be a plain function or a coroutine function. A coroutine runs in the server's event
loop under the filter's timeout. A plain function runs in a worker thread under the timeout,
unless the class sets ``inline = True`` (the built-ins, whose work is linear in the text), in
which case it runs in the event loop and its timeout is checked once it returns.
Constructor keyword arguments are the filter's configuration (:mod:`~otelbench.guardrails.config`).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from otelbench import semconv
from otelbench.errors import ConfigError

__all__ = ["Action", "GuardrailFilter", "Stage", "TextFilter", "Verdict"]


class Stage(enum.StrEnum):
    """Where a filter runs: on the request before the engine, or on the streamed response."""

    INPUT = semconv.GUARDRAIL_STAGE_INPUT
    OUTPUT = semconv.GUARDRAIL_STAGE_OUTPUT


class Action(enum.StrEnum):
    """A filter's decision. Order of strength: block > redact > allow."""

    ALLOW = semconv.DECISION_ALLOW
    REDACT = semconv.DECISION_REDACT
    BLOCK = semconv.DECISION_BLOCK


_STRENGTH = {Action.ALLOW: 0, Action.REDACT: 1, Action.BLOCK: 2}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one filter invocation decided.

    ``rule`` names the rule that fired (never the matched text). ``texts`` holds, for a redact,
    the replacement of every text the filter was given (same length and order).
    """

    action: Action
    rule: str | None = None
    texts: tuple[str, ...] | None = None
    redactions: int = 0

    ALLOW: ClassVar[Verdict]

    @classmethod
    def block(cls, rule: str) -> Verdict:
        return cls(Action.BLOCK, rule)

    @classmethod
    def redact(cls, rule: str, texts: Sequence[str], redactions: int = 1) -> Verdict:
        return cls(Action.REDACT, rule, tuple(texts), redactions)

    def stronger_than(self, other: Action) -> bool:
        return _STRENGTH[self.action] > _STRENGTH[other]


Verdict.ALLOW = Verdict(Action.ALLOW)


class GuardrailFilter(ABC):
    """A guardrail filter. Subclasses set ``type_name`` and implement :meth:`check`.

    ``stages`` lists where the filter may be configured; ``inline`` says a synchronous
    ``check`` is cheap and bounded enough to run in the event loop (see the module docstring).
    """

    type_name: ClassVar[str] = ""
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.INPUT, Stage.OUTPUT})
    inline: ClassVar[bool] = False
    system: str | None = None
    """The name of the safety system behind the filter when known (e.g. ``"Llama Guard 3"``),
    disclosed in the resource attributes (draft 4.8.1)."""

    @abstractmethod
    def check(self, texts: Sequence[str], stage: Stage) -> Verdict | Awaitable[Verdict]:
        """Decide on ``texts`` (input: every prompt or message text; output: one window)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release what the filter holds (connections); called when the server shuts down."""


class TextFilter(GuardrailFilter):
    """A filter that judges each text alone: implement :meth:`inspect`; the built-ins use it.

    ``inspect`` returns None (allow), or ``(rule, replacement or None, count)``: a replacement
    means redact, None means block. With ``action="block"`` a redaction becomes a block.
    """

    inline = True

    def __init__(self, *, action: str = "block") -> None:
        if action not in (Action.BLOCK.value, Action.REDACT.value):
            raise ConfigError(f"action: want block or redact, got {action!r}")
        self.action = Action(action)

    @abstractmethod
    def inspect(self, text: str) -> tuple[str, str | None, int] | None:
        """None, or (rule, the redacted text or None to block, redactions)."""

    def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        out: list[str] | None = None
        rule: str | None = None
        count = 0
        for i, text in enumerate(texts):
            found = self.inspect(text)
            if found is None:
                continue
            fired, replacement, n = found
            if replacement is None or self.action is Action.BLOCK:
                return Verdict.block(fired)
            if out is None:
                out = list(texts)
                rule = fired
            out[i] = replacement
            count += n
        if out is None or rule is None:
            return Verdict.ALLOW
        return Verdict.redact(rule, out, count)
