"""Property tests: any ``data:`` payload — arbitrary JSON values, OpenAI-shaped chunks with
wrongly typed fields, text that is not JSON — has a documented outcome. ``parse_chunk`` never
raises (a malformed event is ``malformed`` with an ``error``), and the stream fold keeps its
invariants: one token count per recorded chunk, none negative, and with the ``usage`` source
their sum equals the reported output tokens."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import semconv
from otelbench.client.openai import (
    API_CHAT,
    API_COMPLETIONS,
    Chunk,
    StreamAccumulator,
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
