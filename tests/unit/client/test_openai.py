"""What an OpenAI-compatible chunk means: content or not, finish, usage, tokens per chunk."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench import semconv
from otelbench.client.openai import (
    Chunk,
    StreamAccumulator,
    api_for_path,
    operation_name,
    parse_chunk,
    parse_response_body,
)


def cmpl(
    text: str | None, *, finish: str | None = None, usage: dict[str, Any] | None = None
) -> str:
    obj: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "m",
        "choices": [] if text is None else [{"index": 0, "text": text, "finish_reason": finish}],
    }
    if usage is not None:
        obj["usage"] = usage
    return json.dumps(obj)


def chat(delta: dict[str, Any], *, finish: str | None = None, usage: int | None = None) -> str:
    obj: dict[str, Any] = {
        "id": "chatcmpl-1",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        obj["usage"] = {"prompt_tokens": 3, "completion_tokens": usage, "total_tokens": 3 + usage}
    return json.dumps(obj)


def u(ct: int) -> dict[str, int]:
    return {"prompt_tokens": 5, "completion_tokens": ct, "total_tokens": 5 + ct}


def test_paths_and_operations() -> None:
    assert api_for_path("/v1/completions") == "completions"
    assert api_for_path("/v1/chat/completions") == "chat"
    assert api_for_path("/proxy/openai/v1/chat/completions") == "chat"
    assert api_for_path("/v1/models") is None
    assert operation_name("chat") == semconv.OPERATION_CHAT == "chat"
    assert operation_name("completions") == semconv.OPERATION_TEXT_COMPLETION == "text_completion"


def test_completions_content_whitespace_and_empty() -> None:
    assert parse_chunk(cmpl(" Hello"), "completions") == Chunk(
        has_text=True, is_content=True, response_id="cmpl-1", model="m", last_choice=0
    )
    ws = parse_chunk(cmpl(" \n\t"), "completions")
    assert (ws.has_text, ws.is_content) == (True, False)
    empty = parse_chunk(cmpl(""), "completions")
    assert (empty.has_text, empty.is_content) == (False, False)


def test_chat_role_only_content_and_reasoning() -> None:
    role = parse_chunk(chat({"role": "assistant", "content": ""}), "chat")
    assert (role.role_only, role.has_text, role.is_content) == (True, False, False)
    role2 = parse_chunk(chat({"role": "assistant"}), "chat")
    assert role2.role_only
    assert not role2.has_text
    c = parse_chunk(chat({"content": "Hi"}), "chat")
    assert (c.role_only, c.has_text, c.is_content) == (False, True, True)
    both = parse_chunk(chat({"role": "assistant", "content": "Hi"}), "chat")
    assert (both.role_only, both.is_content) == (False, True)
    r = parse_chunk(chat({"reasoning_content": "Let me think"}), "chat")
    assert r.is_content
    # a chat chunk read as completions has no "text"
    assert not parse_chunk(chat({"content": "Hi"}), "completions").has_text


def test_finish_usage_and_cached_tokens() -> None:
    usage = {
        "prompt_tokens": 11,
        "completion_tokens": 4,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 8},
    }
    c = parse_chunk(cmpl("", finish="stop", usage=usage), "completions")
    assert (c.finish_reason, c.prompt_tokens, c.completion_tokens, c.cached_tokens) == (
        "stop",
        11,
        4,
        8,
    )
    usage_only = parse_chunk(cmpl(None, usage=u(9)), "completions")
    assert (usage_only.has_text, usage_only.completion_tokens) == (False, 9)


def test_done_malformed_and_error_events() -> None:
    assert parse_chunk("[DONE]", "chat") == Chunk(done=True)
    bad = parse_chunk('{"choices": [', "chat")
    assert bad.malformed
    assert bad.error == "data event is not valid JSON"
    assert parse_chunk("[1, 2]", "chat").malformed
    err = parse_chunk('{"error": {"message": "boom", "code": 500}}', "chat")
    assert err.malformed
    assert err.error is not None
    assert "boom" in err.error
    # odd but valid shapes never raise
    for data in ('{"choices": "x"}', '{"choices": [1, null]}', '{"usage": 3}', "{}", '"str"'):
        parse_chunk(data, "completions")
        parse_chunk(data, "chat")


def test_only_choice_index_zero_counts() -> None:
    data = json.dumps({"choices": [{"index": 1, "text": "other"}, {"index": 0, "text": ""}]})
    assert not parse_chunk(data, "completions").has_text


def test_non_streaming_body() -> None:
    body = json.dumps(
        {
            "id": "chatcmpl-9",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    ).encode()
    c = parse_response_body(body, "chat")
    assert (c.response_id, c.is_content, c.completion_tokens) == ("chatcmpl-9", True, 2)
    assert parse_response_body(b"<html>", "chat").malformed


# -- the fold -----------------------------------------------------------------------------------


def fold(api: str, events: list[tuple[str, int]]) -> StreamAccumulator:
    acc = StreamAccumulator(api, t0_mono_ns=1_000_000)  # type: ignore[arg-type]
    for data, t_us in events:
        acc.on_event(data, 1_000_000 + t_us * 1000)
    return acc


def test_whitespace_first_chunk_is_not_ttft_but_its_token_counts_usage() -> None:
    acc = fold(
        "completions",
        [
            (cmpl(" ", usage=u(1)), 5_000),
            (cmpl("Hello", usage=u(2)), 40_000),
            (cmpl(" world", usage=u(3), finish="length"), 50_000),
            (cmpl(None, usage=u(3)), 50_010),
            ("[DONE]", 50_020),
        ],
    )
    assert acc.first_event_offset_us == 5_000
    assert acc.ttft_us == 40_000
    assert acc.offsets_us == [40_000, 50_000]
    assert acc.chunk_tokens() == ([2, 1], semconv.CHUNK_TOKENS_FROM_USAGE)
    assert (acc.chunks_total, acc.completion_tokens, acc.prompt_tokens) == (5, 3, 5)
    assert (acc.finish_reason, acc.done) == ("length", True)
    assert acc.stream_error(0) is None


def test_whitespace_first_chunk_one_per_chunk() -> None:
    acc = fold(
        "completions",
        [
            (cmpl(" "), 5_000),
            (cmpl("Hello"), 40_000),
            (cmpl(" world", finish="stop"), 50_000),
            (cmpl(None, usage=u(3)), 50_010),  # include_usage without continuous stats
            ("[DONE]", 50_020),
        ],
    )
    assert acc.ttft_us == 40_000
    assert acc.chunk_tokens() == ([2, 1], semconv.CHUNK_TOKENS_ONE_PER_CHUNK)
    assert acc.completion_tokens == 3  # the final usage total is still recorded


def test_role_only_first_delta_sets_first_event_not_ttft() -> None:
    acc = fold(
        "chat",
        [
            (chat({"role": "assistant", "content": ""}, usage=0), 2_000),
            (chat({"content": "Hi"}, usage=1), 30_000),
            (chat({"content": "!"}, usage=2, finish="stop"), 31_000),
            ("[DONE]", 31_100),
        ],
    )
    assert (acc.first_event_offset_us, acc.ttft_us) == (2_000, 30_000)
    assert acc.chunk_tokens() == ([1, 1], semconv.CHUNK_TOKENS_FROM_USAGE)


def test_whitespace_after_first_content_is_a_recorded_chunk() -> None:
    acc = fold(
        "completions",
        [
            (cmpl("A", usage=u(1)), 10),
            (cmpl("\n\n", usage=u(2)), 20),
            (cmpl("B", usage=u(3)), 30),
        ],
    )
    assert acc.offsets_us == [10, 20, 30]
    assert acc.chunk_tokens()[0] == [1, 1, 1]


def test_multi_token_chunks_and_held_back_and_trailing_tokens() -> None:
    acc = fold(
        "completions",
        [
            (cmpl("A B C", usage=u(3)), 10),
            (cmpl("", usage=u(5)), 20),  # 2 tokens with no text yet (held back)
            (cmpl("D E", usage=u(7)), 30),  # ...arrive with this text
            (cmpl("", usage=u(8), finish="stop"), 40),  # EOS: no text
            (cmpl(None, usage=u(8)), 41),
            ("[DONE]", 42),
        ],
    )
    assert acc.offsets_us == [10, 30]
    tokens, source = acc.chunk_tokens()
    assert (tokens, source) == ([3, 5], semconv.CHUNK_TOKENS_FROM_USAGE)
    assert sum(tokens) == acc.completion_tokens == 8


def test_mixed_usage_falls_back_to_one_per_chunk() -> None:
    acc = fold("completions", [(cmpl("A", usage=u(1)), 10), (cmpl("B"), 20)])
    assert acc.chunk_tokens() == ([1, 1], semconv.CHUNK_TOKENS_ONE_PER_CHUNK)


def test_reasoning_field_think_phase_then_output() -> None:
    acc = fold(
        "chat",
        [
            (chat({"role": "assistant", "content": ""}), 5),
            (chat({"reasoning_content": "Let"}), 10),
            (chat({"reasoning_content": " me think"}), 20),
            (chat({"content": "\n\n"}), 30),  # whitespace: still not the first output token
            (chat({"content": "Paris"}), 40),
            (chat({"content": "."}, finish="stop"), 50),
            ("[DONE]", 51),
        ],
    )
    assert acc.offsets_us == [10, 20, 30, 40, 50]
    assert acc.ttft_us == 10  # the first token, whatever its phase
    assert (acc.think_phase, acc.output_phase_index) == (semconv.THINK_PHASE_ENDED, 3)


def test_think_marker_in_text_with_and_without_output_after_it() -> None:
    acc = fold(
        "completions",
        [(cmpl("<think>a"), 10), (cmpl(" b</think>"), 20), (cmpl("Answer"), 30)],
    )
    assert (acc.think_phase, acc.output_phase_index) == (semconv.THINK_PHASE_ENDED, 2)
    # No opening marker, output in the same chunk as the closing one.
    acc = fold("completions", [(cmpl("a"), 10), (cmpl("b</think> Yes"), 20), (cmpl("!"), 30)])
    assert (acc.think_phase, acc.output_phase_index) == (semconv.THINK_PHASE_ENDED, 1)


def test_unterminated_think_phase_and_no_think_phase() -> None:
    acc = fold("chat", [(chat({"reasoning": "hmm"}), 10), (chat({"reasoning": "..."}), 20)])
    assert (acc.think_phase, acc.output_phase_index) == (semconv.THINK_PHASE_UNTERMINATED, None)
    acc = fold("completions", [(cmpl("<think> no end"), 10), (cmpl("at all"), 20)])
    assert (acc.think_phase, acc.output_phase_index) == (None, None)  # no marker: no phase
    acc = fold("chat", [(chat({"content": "Hi"}), 10), (chat({"content": "!"}), 20)])
    assert (acc.think_phase, acc.output_phase_index) == (None, None)


def test_no_content_at_all() -> None:
    acc = fold("chat", [(chat({"role": "assistant"}), 10), ("[DONE]", 20)])
    assert (acc.ttft_us, acc.first_event_offset_us, acc.chunks_total) == (None, 10, 2)
    assert acc.chunk_tokens() == ([], semconv.CHUNK_TOKENS_ONE_PER_CHUNK)


def test_stream_errors() -> None:
    assert fold("completions", [(cmpl("A"), 1)]).stream_error(0) is not None  # no end at all
    # a finish_reason with a clean EOF is a complete stream even without [DONE]
    assert fold("completions", [(cmpl("A", finish="stop"), 1)]).stream_error(0) is None
    # ...unless the stream was cut inside the next event
    assert fold("completions", [(cmpl("A", finish="stop"), 1)]).stream_error(1) is not None
    bad = fold("completions", [(cmpl("A"), 1), ("{oops", 2), (cmpl("B"), 3), ("[DONE]", 4)])
    assert bad.malformed == 1
    assert bad.stream_error(0) == "data event is not valid JSON"
    assert bad.offsets_us == [1, 3]  # the stream goes on being measured


@st.composite
def usage_streams(draw: st.DrawFn) -> list[tuple[str, int]]:
    kinds = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["content", "ws", "empty", "role", "usage"]), st.integers(0, 4)
            ),
            max_size=30,
        )
    )
    events: list[tuple[str, int]] = []
    ct = 0
    for i, (kind, k) in enumerate(kinds):
        if kind == "role":
            events.append((chat({"role": "assistant", "content": ""}, usage=ct), i))
            continue
        if kind != "usage":
            ct += k
        text = {"content": "tok", "ws": " ", "empty": "", "usage": None}[kind]
        delta = {} if text is None else {"content": text}
        events.append((chat(delta, usage=ct), i))
    return events


@settings(max_examples=200, deadline=None)
@given(usage_streams())
def test_usage_tokens_sum_to_the_total(events: list[tuple[str, int]]) -> None:
    acc = fold("chat", events)
    tokens, source = acc.chunk_tokens()
    assert len(tokens) == len(acc.offsets_us)
    if tokens:
        assert source == semconv.CHUNK_TOKENS_FROM_USAGE
        assert sum(tokens) == acc.completion_tokens
        assert min(tokens) >= 0
    assert acc.offsets_us == sorted(acc.offsets_us)
