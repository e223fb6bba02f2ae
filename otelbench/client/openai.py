"""What an OpenAI-compatible response says, chunk by chunk: pure functions and a fold, no I/O.

Two endpoints are understood: ``/v1/completions`` (text in ``choices[0].text``) and
``/v1/chat/completions`` (text in ``choices[0].delta.content``, or ``choices[0].message.content``
when not streaming). Only the choice with ``index`` 0 is read (``n > 1`` is not supported).

Example::

    acc = StreamAccumulator("chat", t0_mono_ns=submit_ns)
    for event in parser.feed(raw, now_ns):
        acc.on_event(event.data, event.mono_ns)
    tokens, source = acc.chunk_tokens()

**Content chunks and the first token (draft 5.1.3.1).** A chunk is *content* when its text holds at
least one non-whitespace character. The first content chunk is the first token (TTFT). Before it,
role-only deltas, empty text, whitespace-only text, usage-only chunks (``choices: []``) and SSE
comments are not the first token; the first ``data:`` event of any kind sets the separate
first-event time (``gen_ai.response.time_to_first_chunk``).

**Which chunks get an arrival offset.** From the first content chunk on, every chunk with non-empty
text is recorded (offset and token count), whitespace-only text included: a ``"\\n\\n"`` token in
the middle of an answer is a token that arrived, and dropping it would double the next inter-token
gap.
Chunks with no text (role-only, empty text, usage-only, a bare finish chunk) are never recorded.

**Token counts per recorded chunk (draft 4.6.2: how multi-token chunks are handled).**

* ``usage`` source — the server sent ``usage.completion_tokens`` on every recorded chunk (vLLM's
  ``stream_options.continuous_usage_stats``): a chunk's tokens are the growth of
  ``completion_tokens`` since the previous recorded chunk. So tokens carried by chunks that are not
  recorded fold forward into the next recorded chunk: a whitespace-only first chunk's token is
  counted in the first content chunk (it arrived no later than that), and an empty-text chunk's
  held-back tokens in the next text chunk. Tokens reported after the last recorded chunk (e.g. an
  EOS token in a bare finish chunk, or the final usage-only chunk) are added to the last recorded
  chunk. Hence ``sum(chunk_tokens) == output_tokens`` whenever at least one chunk was recorded.
* ``one_per_chunk`` source — otherwise: each recorded chunk counts 1, and whitespace-only chunks
  before the first content chunk add 1 each to the first content chunk (empty-text chunks add 0).
  The final ``usage`` total, when the server sends one, is still reported as the output token
  count.

Reasoning text (``delta.reasoning_content`` / ``delta.reasoning``) counts as text like ``content``;
tool-call deltas do not.

**Think and output phases (reasoning-phase ADR-0005).** A reasoning model first streams a *think*
phase, then the user-visible output. The phase boundary is found without keeping any text: a
chunk whose text comes from a reasoning field (and has no ``content``) is a think chunk; in plain
text, a chunk containing ``</think>`` ends the think phase (everything before it was thinking,
whether or not ``<think>`` opened it), and the chunk itself is output when non-whitespace text
follows the marker. The first content chunk of the output phase is recorded by its index among
the recorded chunks (``output_phase_index``); ``think_phase`` says ``ended``, ``unterminated`` (the
stream stopped inside the think phase, e.g. at ``max_tokens``) or None (no think phase: TTOT is
TTFT).

These per-chunk counts support the draft's Option A (time between chunks, with the chunk-size
distribution) and Option B (a chunk's arrival time given to each of its tokens) in 4.6.3.

**Malformed data.** A ``data:`` event that is not JSON (and not ``[DONE]``), or a JSON error object
(``{"error": ...}``, as vLLM sends mid-stream), is counted and makes the request fail with
``error.type = stream_error``; nothing here raises on bad input.

**Cost per event.** A chunk of the usual shape (a ``choices`` list of objects, every field read of
its usual type, at most 1,024 characters) is decoded by msgspec straight into the fields read:
~1.2 µs, against ~4 µs for ``json.loads`` and walking its dicts. Any other payload takes the
exact path, ``json.loads`` and :func:`_facts`, so it has the outcome described above; property
tests hold the two paths to identical facts.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from otelbench import semconv

__all__ = [
    "API_CHAT",
    "API_COMPLETIONS",
    "MAX_CHOICES",
    "Api",
    "Chunk",
    "StreamAccumulator",
    "api_for_path",
    "finish_reasons",
    "operation_name",
    "parse_chunk",
    "parse_response_body",
]

Api = Literal["completions", "chat"]
API_COMPLETIONS: Api = "completions"
API_CHAT: Api = "chat"

DONE = "[DONE]"


def api_for_path(path: str) -> Api | None:
    """Which API a request path targets: ``.../chat/completions``, ``.../completions`` or None."""
    if path.endswith("/chat/completions"):
        return API_CHAT
    if path.endswith("/completions"):
        return API_COMPLETIONS
    return None


def operation_name(api: Api) -> str:
    """``gen_ai.operation.name`` for an API: ``chat`` or ``text_completion``."""
    return semconv.OPERATION_CHAT if api == API_CHAT else semconv.OPERATION_TEXT_COMPLETION


@dataclass(slots=True)
class Chunk:
    """The facts of one ``data:`` event (or of a whole non-streaming body). Never holds text."""

    done: bool = False
    """The event was ``[DONE]``."""
    malformed: bool = False
    """Not JSON, not a JSON object, or an error object; ``error`` says which."""
    error: str | None = None
    has_text: bool = False
    """Choice 0 carries non-empty text."""
    is_content: bool = False
    """Choice 0's text holds a non-whitespace character (a content token, draft 5.1.3.1)."""
    role_only: bool = False
    """A chat delta that sets the role and carries no text."""
    reasoning: bool = False
    """The text came from a reasoning field (``reasoning_content``/``reasoning``), not content."""
    think_end: bool = False
    """The text contains the ``</think>`` marker."""
    output_after_marker: bool = False
    """Non-whitespace text follows the ``</think>`` marker in this chunk."""
    finish_reason: str | None = None
    response_id: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    """``usage.completion_tokens_details.reasoning_tokens``."""
    system_fingerprint: str | None = None
    service_tier: str | None = None
    last_choice: int = -1
    """The highest choice ``index`` seen (below ``MAX_CHOICES``; -1: none)."""
    finishes: tuple[tuple[int, str], ...] = ()
    """``(index, finish_reason)`` of every choice that carries one, in order."""


MAX_CHOICES = 128
"""Choice indices from this on are ignored (a bound on ``gen_ai.response.finish_reasons``)."""


def _int_or_none(value: Any) -> int | None:
    return value if type(value) is int else None


def _facts(obj: Any, api: Api, message_key: str) -> Chunk:
    """The facts of any decoded JSON value (the exact path: whatever the value's shape)."""
    if not isinstance(obj, dict):
        return Chunk(malformed=True, error="data is not a JSON object")
    chunk = Chunk()
    rid = obj.get("id")
    if isinstance(rid, str):
        chunk.response_id = rid
    model = obj.get("model")
    if isinstance(model, str):
        chunk.model = model
    for key in ("system_fingerprint", "service_tier"):
        value = obj.get(key)
        if isinstance(value, str):
            setattr(chunk, key, value)
    usage = obj.get("usage")
    if isinstance(usage, dict):
        chunk.prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
        chunk.completion_tokens = _int_or_none(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            chunk.cached_tokens = _int_or_none(details.get("cached_tokens"))
        out_details = usage.get("completion_tokens_details")
        if isinstance(out_details, dict):
            chunk.reasoning_tokens = _int_or_none(out_details.get("reasoning_tokens"))
    choices = obj.get("choices")
    if choices is None and "error" in obj:
        err = obj["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        chunk.malformed = True
        chunk.error = f"error event from the target: {str(msg)[:200]}"
        return chunk
    if not isinstance(choices, list):
        return chunk
    choice: Any = None
    finishes = []
    for c in choices:
        if not isinstance(c, dict):
            continue
        index = c.get("index", 0)
        if choice is None and index == 0:
            choice = c
        if type(index) is int and 0 <= index < MAX_CHOICES:
            chunk.last_choice = max(chunk.last_choice, index)
            reason = c.get("finish_reason")
            if isinstance(reason, str):
                finishes.append((index, reason))
    chunk.finishes = tuple(finishes)
    if choice is None:
        return chunk
    reason = choice.get("finish_reason")
    if isinstance(reason, str):
        chunk.finish_reason = reason
    text: Any
    if api == API_CHAT:
        delta = choice.get(message_key)
        if isinstance(delta, dict):
            text = _chat_text(
                chunk,
                delta.get("content"),
                delta.get("reasoning_content"),
                delta.get("reasoning"),
                delta.get("role"),
            )
        else:
            text = None
    else:
        text = choice.get("text")
    _text_facts(chunk, text)
    return chunk


def _chat_text(
    chunk: Chunk, content: Any, reasoning_content: Any, reasoning: Any, role: Any
) -> Any:
    """A chat delta's text. Reasoning models stream their thinking as ``reasoning_content``
    (vLLM) or ``reasoning``: generated tokens too, so they count as text."""
    text = content or reasoning_content or reasoning
    chunk.reasoning = bool(text) and not content
    if not text and role is not None:
        chunk.role_only = True
    return text


def _text_facts(chunk: Chunk, text: Any) -> None:
    if isinstance(text, str) and text:
        chunk.has_text = True
        chunk.is_content = not text.isspace()
        if semconv.THINK_END_MARKER in text:
            chunk.think_end = True
            after = text.rsplit(semconv.THINK_END_MARKER, 1)[1]
            chunk.output_after_marker = bool(after) and not after.isspace()


# -- the typed fast path ---------------------------------------------------------------------------
# The usual chunk, decoded by msgspec straight into the few fields read above, without building
# the dicts of the whole object; anything it does not take as that shape goes the exact path.


class _Details(msgspec.Struct, gc=False):
    cached_tokens: int | None = None


class _OutDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _Details | None = None
    completion_tokens_details: _OutDetails | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    role: str | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    finish_reason: str | None = None
    text: str | None = None
    delta: _Delta | None = None


class _Event(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None
    usage: _Usage | None = None
    choices: list[_Choice] | None = None


_EVENT = msgspec.json.Decoder(_Event)
_FAST_MAX_CHARS = min(1024, sys.get_int_max_str_digits() or 1024)
"""Longer events take the exact path. So no event decoded by the fast path nests deeply enough
to meet the recursion limit (msgspec's and the ``json`` module's differ by a few levels), or
holds an integer longer than ``json`` accepts (``sys.get_int_max_str_digits()``, at least 640)."""


def _fast_chunk(data: str, api: Api) -> Chunk | None:
    """The facts of a chunk of the usual shape, equal to ``_facts(json.loads(data))``'s; None when
    the data is not of that shape (a value of another type, no ``choices`` list, bad JSON …)."""
    if len(data) > _FAST_MAX_CHARS:
        return None
    try:
        ev = _EVENT.decode(data)
    except (ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
        return None
    choices = ev.choices
    if choices is None:
        return None  # an error object, or no choices: the exact path says which
    chunk = Chunk(
        response_id=ev.id,
        model=ev.model,
        system_fingerprint=ev.system_fingerprint,
        service_tier=ev.service_tier,
    )
    usage = ev.usage
    if usage is not None:
        chunk.prompt_tokens = usage.prompt_tokens
        chunk.completion_tokens = usage.completion_tokens
        if usage.prompt_tokens_details is not None:
            chunk.cached_tokens = usage.prompt_tokens_details.cached_tokens
        if usage.completion_tokens_details is not None:
            chunk.reasoning_tokens = usage.completion_tokens_details.reasoning_tokens
    first: _Choice | None = None
    finishes = []
    for c in choices:
        if first is None and c.index == 0:
            first = c
        if 0 <= c.index < MAX_CHOICES:
            chunk.last_choice = max(chunk.last_choice, c.index)
            if c.finish_reason is not None:
                finishes.append((c.index, c.finish_reason))
    chunk.finishes = tuple(finishes)
    if first is None:
        return chunk
    choice = first
    chunk.finish_reason = choice.finish_reason
    if api == API_CHAT:
        d = choice.delta
        text = (
            None
            if d is None
            else _chat_text(chunk, d.content, d.reasoning_content, d.reasoning, d.role)
        )
    else:
        text = choice.text
    _text_facts(chunk, text)
    return chunk


def parse_chunk(data: str, api: Api) -> Chunk:
    """Interpret one SSE ``data:`` payload of a streamed response. Never raises.

    >>> parse_chunk('{"choices":[{"index":0,"delta":{"role":"assistant"}}]}', "chat").role_only
    True
    """
    if data == DONE:
        return Chunk(done=True)
    fast = _fast_chunk(data, api)
    return fast if fast is not None else _exact_chunk(data, api)


def _exact_chunk(data: str, api: Api) -> Chunk:
    """``parse_chunk`` of any payload but ``[DONE]``, through ``json`` and :func:`_facts`."""
    try:
        obj = json.loads(data)
    except ValueError:
        return Chunk(malformed=True, error="data event is not valid JSON")
    except RecursionError:
        return Chunk(malformed=True, error="data event is JSON nested too deeply")
    return _facts(obj, api, "delta")


def finish_reasons(
    finishes: dict[int, str], last_choice: int, requested: int, failed: bool
) -> list[str]:
    """``gen_ai.response.finish_reasons``: one per choice, in index order, for every choice seen
    or requested (``n``); a choice without a finish reason is ``"error"`` when the call failed
    (the conventions: a reason expected but not received), and left out otherwise (a server
    that sent none). Empty when there is nothing to say.

    >>> finish_reasons({0: "stop"}, 1, 2, failed=True)
    ['stop', 'error']
    """
    count = min(
        max(last_choice + 1, requested if failed else 0, max(finishes, default=-1) + 1), MAX_CHOICES
    )
    out = []
    for i in range(count):
        reason = finishes.get(i)
        if reason is None:
            if not failed:
                continue
            reason = semconv.FINISH_REASON_ERROR
        out.append(reason)
    return out


def parse_response_body(body: bytes, api: Api) -> Chunk:
    """Interpret a whole non-streaming body (``choices[0].text`` / ``.message.content``)."""
    try:
        obj = json.loads(body)
    except ValueError:
        return Chunk(malformed=True, error="response body is not valid JSON")
    except RecursionError:
        return Chunk(malformed=True, error="response body is JSON nested too deeply")
    return _facts(obj, api, "message")


class StreamAccumulator:
    """Folds a stream's ``data:`` events into per-request timing and usage (see the module doc).

    Offsets are integer microseconds since ``t0_mono_ns`` (T_submit). Per event the work is one JSON
    parse and O(1) appends to two int lists.
    """

    __slots__ = (
        "_cum",
        "_cum_known",
        "api",
        "cached_tokens",
        "chunks_total",
        "completion_tokens",
        "done",
        "error",
        "event_offsets_us",
        "finish_reason",
        "finishes",
        "first_event_offset_us",
        "last_choice",
        "leading_non_content",
        "malformed",
        "offsets_us",
        "output_phase_index",
        "prompt_tokens",
        "reasoning_tokens",
        "response_id",
        "response_model",
        "service_tier",
        "system_fingerprint",
        "t0_mono_ns",
        "think_seen",
    )

    def __init__(self, api: Api, t0_mono_ns: int) -> None:
        self.api: Api = api
        self.t0_mono_ns = t0_mono_ns
        self.chunks_total = 0
        self.first_event_offset_us: int | None = None
        self.event_offsets_us: list[int] = []
        """Arrival of every chunk (``data:`` event but ``[DONE]``): the conventions' chunks."""
        self.offsets_us: list[int] = []
        self._cum: list[int] = []
        """``completion_tokens`` as of each recorded chunk (the usage token source)."""
        self._cum_known = True
        self.leading_non_content = 0
        """Whitespace-only text chunks seen before the first content chunk."""
        self.done = False
        self.finish_reason: str | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.reasoning_tokens: int | None = None
        self.system_fingerprint: str | None = None
        self.service_tier: str | None = None
        self.finishes: dict[int, str] = {}
        """Each choice's finish reason, by index."""
        self.last_choice = -1
        self.malformed = 0
        self.error: str | None = None
        self.think_seen = False
        self.output_phase_index: int | None = None
        """Index in ``offsets_us`` of the first output-phase content chunk after a think phase."""

    @property
    def think_phase(self) -> str | None:
        """``ended``, ``unterminated``, or None when no think phase was seen (module doc)."""
        if not self.think_seen:
            return None
        if self.output_phase_index is None:
            return semconv.THINK_PHASE_UNTERMINATED
        return semconv.THINK_PHASE_ENDED

    @property
    def ttft_us(self) -> int | None:
        """Offset of the first content chunk (draft 5.1.3.1), or None."""
        return self.offsets_us[0] if self.offsets_us else None

    def on_event(self, data: str, mono_ns: int) -> None:
        """Account one ``data:`` event completed at ``mono_ns``."""
        self.chunks_total += 1
        offset = (mono_ns - self.t0_mono_ns) // 1000
        if self.first_event_offset_us is None:
            self.first_event_offset_us = offset
        c = parse_chunk(data, self.api)
        if c.done:
            self.done = True
            return
        self.event_offsets_us.append(offset)
        if c.malformed:
            self.malformed += 1
            if self.error is None:
                self.error = c.error
            return
        if c.response_id is not None and self.response_id is None:
            self.response_id = c.response_id
        if c.model is not None and self.response_model is None:
            self.response_model = c.model
        if c.finish_reason is not None:
            self.finish_reason = c.finish_reason
        if c.finishes:
            self.finishes.update(c.finishes)
        if c.last_choice > self.last_choice:
            self.last_choice = c.last_choice
        if c.reasoning_tokens is not None:
            self.reasoning_tokens = c.reasoning_tokens
        if c.system_fingerprint is not None:
            self.system_fingerprint = c.system_fingerprint
        if c.service_tier is not None:
            self.service_tier = c.service_tier
        if c.prompt_tokens is not None:
            self.prompt_tokens = c.prompt_tokens
        if c.cached_tokens is not None:
            self.cached_tokens = c.cached_tokens
        ct = c.completion_tokens
        if ct is not None and (self.completion_tokens is None or ct > self.completion_tokens):
            self.completion_tokens = ct
        if not c.has_text:
            return
        if not self.offsets_us and not c.is_content:
            self.leading_non_content += 1
            return
        self.offsets_us.append(offset)
        if self.output_phase_index is None:
            if c.reasoning or (c.think_end and not c.output_after_marker):
                self.think_seen = True
            elif c.think_end or (self.think_seen and c.is_content):
                self.think_seen = True
                self.output_phase_index = len(self.offsets_us) - 1
        if ct is None:
            self._cum_known = False
            self._cum.append(-1)
        else:
            self._cum.append(ct)

    def chunk_tokens(self) -> tuple[list[int], str]:
        """Tokens per recorded chunk and their source (``usage`` or ``one_per_chunk``)."""
        n = len(self._cum)
        if n == 0:
            return [], semconv.CHUNK_TOKENS_ONE_PER_CHUNK
        if self._cum_known:
            cum = self._cum
            tokens = [cum[0], *(cum[i] - cum[i - 1] for i in range(1, n))]
            if min(tokens) >= 0:
                total = self.completion_tokens or 0
                if total > cum[-1]:
                    tokens[-1] += total - cum[-1]
                return tokens, semconv.CHUNK_TOKENS_FROM_USAGE
        tokens = [1] * n
        tokens[0] += self.leading_non_content
        return tokens, semconv.CHUNK_TOKENS_ONE_PER_CHUNK

    def stream_error(self, discarded_at_eof: int) -> str | None:
        """Why the finished stream counts as failed (``error.type = stream_error``), or None."""
        if self.error is not None:
            return self.error
        if self.done:
            return None
        if discarded_at_eof:
            return "stream ended inside an event (cut before [DONE])"
        if self.finish_reason is None:
            return "stream ended before [DONE] or a finish_reason"
        return None
