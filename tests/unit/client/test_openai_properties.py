"""Property tests: any ``data:`` payload — arbitrary JSON values, OpenAI-shaped chunks with
wrongly typed fields, text that is not JSON — has a documented outcome. ``parse_chunk`` never
raises (a malformed event is ``malformed`` with an ``error``), and the stream fold keeps its
invariants: one token count per recorded chunk, none negative, and with the ``usage`` source
their sum equals the reported output tokens. The typed fast path (msgspec) takes every chunk of
the usual shape and gives exactly the facts of the exact path (``json`` and ``_facts``); any
other payload it declines."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import semconv
from otelbench.client.openai import (
    _FAST_MAX_CHARS,
    API_CHAT,
    API_COMPLETIONS,
    Chunk,
    StreamAccumulator,
    _exact_chunk,
    _fast_chunk,
    parse_chunk,
    parse_response_body,
)

PROPS = settings(max_examples=150, deadline=None)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["", " ", "\n", "hi", "</think>", "a</think> b", semconv.THINK_END_MARKER]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
# the same without infinities: json.dumps writes them as Infinity, which is not JSON (RFC 8259)
# and which the fast path leaves to the exact path, as it should (any payload: the test below)
standard_json_values = st.recursive(
    scalars.filter(lambda v: not (isinstance(v, float) and math.isinf(v))),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
_WORDS = ["choices", "index", "text", "delta", "message", "content", "reasoning_content",
          "reasoning", "role", "finish_reason", "usage", "completion_tokens", "prompt_tokens",
          "prompt_tokens_details", "cached_tokens", "id", "model", "error"]  # fmt: skip
# OpenAI-shaped objects whose fields may hold any value (so the deep branches are reached)
shaped = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_WORDS), inner, max_size=5)
    ),
    max_leaves=20,
)
payloads = st.one_of(
    json_values.map(json.dumps),
    shaped.map(json.dumps),
    st.text(max_size=30),
    st.just("[DONE]"),
    st.just("[" * 5000),  # deeper than the JSON parser's recursion limit
)
apis = st.sampled_from([API_CHAT, API_COMPLETIONS])


def _documented(chunk: Chunk) -> None:
    if chunk.malformed:
        assert isinstance(chunk.error, str)
        assert chunk.error
    for name in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        value = getattr(chunk, name)
        assert value is None or type(value) is int, name
    assert chunk.is_content <= chunk.has_text


@PROPS
@given(data=payloads, api=apis)
def test_any_payload_has_a_documented_outcome(data: str, api: Any) -> None:
    chunk = parse_chunk(data, api)
    _documented(chunk)
    assert chunk.done == (data == "[DONE]")
    body = parse_response_body(data.encode("utf-8", "surrogatepass"), api)
    _documented(body)


@PROPS
@given(body=st.binary(max_size=64), api=apis)
def test_any_response_body_bytes_have_a_documented_outcome(body: bytes, api: Any) -> None:
    _documented(parse_response_body(body, api))


@PROPS
@given(events=st.lists(st.tuples(payloads, st.integers(0, 10**6)), max_size=12), api=apis)
def test_the_stream_fold_keeps_its_invariants(events: list[tuple[str, int]], api: Any) -> None:
    acc = StreamAccumulator(api, t0_mono_ns=0)
    mono = 0
    for data, step in events:
        mono += step
        acc.on_event(data, mono)
    tokens, source = acc.chunk_tokens()
    assert len(tokens) == len(acc.offsets_us)
    assert all(t >= 0 for t in tokens)
    assert acc.offsets_us == sorted(acc.offsets_us)
    assert source in (semconv.CHUNK_TOKENS_FROM_USAGE, semconv.CHUNK_TOKENS_ONE_PER_CHUNK)
    if source == semconv.CHUNK_TOKENS_FROM_USAGE and tokens:
        assert sum(tokens) == acc.completion_tokens  # the documented identity
    assert acc.chunks_total == len(events)
    error = acc.stream_error(0)
    assert error is None or isinstance(error, str)


# -- the typed fast path (msgspec) against the exact path (json + _facts) ----------------------

maybe_str = st.one_of(st.none(), st.text(max_size=6), st.sampled_from([" ", "\n\t", "a</think>"]))
maybe_int = st.one_of(st.none(), st.integers(0, 2**64))
_deltas = st.fixed_dictionaries(
    {},
    optional={
        "content": maybe_str,
        "reasoning_content": maybe_str,
        "reasoning": maybe_str,
        "role": st.one_of(st.none(), st.just("assistant")),
    },
)
_choices = st.fixed_dictionaries(
    {},
    optional={
        "index": st.integers(0, 2),
        "text": maybe_str,
        "delta": _deltas,
        "finish_reason": maybe_str,
        "logprobs": st.none(),
        "stop_reason": st.one_of(st.none(), st.integers(0, 5)),
    },
)
_usages = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": maybe_int,
        "completion_tokens": maybe_int,
        "total_tokens": maybe_int,
        "prompt_tokens_details": st.one_of(
            st.none(), st.fixed_dictionaries({}, optional={"cached_tokens": maybe_int})
        ),
    },
)
# chunks of the shape a server streams: every field the fast path reads of its usual type
typed_chunks = st.fixed_dictionaries(
    {"choices": st.lists(_choices, max_size=3)},
    optional={
        "id": st.text(max_size=12),
        "object": st.sampled_from(["text_completion", "chat.completion.chunk"]),
        "created": st.integers(0, 2**40),
        "model": st.one_of(st.none(), st.text(max_size=12)),
        "usage": st.one_of(st.none(), _usages),
        "extra": standard_json_values,
    },
)


def _encode(obj: Any, compact: bool, ascii_only: bool) -> str:
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(obj, separators=separators, ensure_ascii=ascii_only)


@PROPS
@given(obj=typed_chunks, api=apis, compact=st.booleans(), ascii_only=st.booleans())
def test_the_fast_path_takes_usual_chunks_and_agrees_with_the_exact_path(
    obj: dict[str, Any], api: Any, compact: bool, ascii_only: bool
) -> None:
    data = _encode(obj, compact, ascii_only)
    fast = _fast_chunk(data, api)
    if len(data) <= _FAST_MAX_CHARS:
        assert fast is not None
    if fast is not None:
        assert fast == _exact_chunk(data, api)
        assert fast == parse_chunk(data, api)


@PROPS
@given(data=payloads, api=apis)
def test_the_fast_path_never_disagrees_with_the_exact_path(data: str, api: Any) -> None:
    """Any payload (wrong types, other values, not JSON): the fast path declines it (None) or
    gives exactly the exact path's facts."""
    fast = _fast_chunk(data, api)
    if fast is not None:
        assert fast == _exact_chunk(data, api)


@pytest.mark.parametrize(
    "data",
    [
        '{"choices":[{"index":0,"text":"a"}],"usage":{"completion_tokens":1.0}}',  # float
        '{"choices":[{"index":0,"text":"a"}],"usage":{"completion_tokens":true}}',  # bool
        '{"choices":[{"index":0,"text":"a"}],"x":' + "9" * 5000 + "}",  # json refuses the int
        '{"choices":[{"index":0,"text":"a"}],"x":' + "[" * 995 + "]" * 995 + "}",  # deep
        '{"choices":[{"index":0,"text":"a"}],"choices":{"index":0}}',  # duplicate key
        '{"error":{"message":"boom"}}',
        '{"choices":[{"index":0,"text":"a"}],"x":NaN}',
        '{"choices":[{"index":0,"text":"\\ud800"}]}',  # a lone surrogate
    ],
)
def test_unusual_payloads_have_the_exact_paths_outcome(data: str) -> None:
    for api in (API_CHAT, API_COMPLETIONS):
        assert parse_chunk(data, api) == _exact_chunk(data, api)
