"""Property tests on arbitrary bytes: the SSE parser never raises, and how a byte stream is split
into reads never changes the events it yields (test_sse.py builds well-formed streams; these
feed anything: invalid UTF-8, NUL, lone CR, CR/LF mixes, huge lines)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.client.sse import SSEEvent, SSEParser

PROPS = settings(max_examples=150, deadline=None)

# Pieces that exercise every branch: line ends of all kinds, field names, a BOM, bytes that are
# not UTF-8, and free bytes.
_MARKERS = [
    b"\n", b"\r", b"\r\n", b"\n\r", b"data:", b"data: ", b"event:", b"id:", b"retry:", b":",
    b" ", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xa9", b"\x00", b"[DONE]", b"123",
]  # fmt: skip
_PIECES = st.one_of(st.sampled_from(_MARKERS), st.binary(max_size=16))
streams = st.lists(_PIECES, max_size=60).map(b"".join)


def _facts(events: list[SSEEvent]) -> list[tuple[str, str, str, int | None]]:
    return [(e.data, e.event, e.id, e.retry) for e in events]


def _feed(reads: list[bytes]) -> tuple[list[SSEEvent], SSEParser, int]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for i, read in enumerate(reads):
        events += parser.feed(read, i)
    return events, parser, parser.close()


@PROPS
@given(stream=streams, data=st.data())
def test_any_split_of_any_bytes_yields_the_same_events(stream: bytes, data: st.DataObject) -> None:
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=12))))
    bounds = [0, *cuts, len(stream)]
    reads = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    whole, one, discarded_one = _feed([stream])
    split, many, discarded_many = _feed(reads)
    assert _facts(split) == _facts(whole)
    assert discarded_many == discarded_one
    assert (many.events, many.comments, many.bytes) == (one.events, one.comments, len(stream))
    # every read stamps only events it completed, in order
    assert [e.mono_ns for e in split] == sorted(e.mono_ns for e in split)


@PROPS
@given(stream=streams)
def test_byte_by_byte_equals_one_read_for_any_bytes(stream: bytes) -> None:
    whole, _, discarded = _feed([stream])
    by_byte, _, discarded_by_byte = _feed([bytes([b]) for b in stream])
    assert _facts(by_byte) == _facts(whole)
    assert discarded_by_byte == discarded


@PROPS
@given(lines=st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
                      min_size=1, max_size=8),
       ends=st.lists(st.sampled_from([b"\n", b"\r", b"\r\n"]), min_size=9, max_size=9))  # fmt: skip
def test_cr_lf_and_crlf_line_ends_are_the_same(lines: list[bytes], ends: list[bytes]) -> None:
    """Any mix of line terminators gives the events plain LF gives."""
    body = [b"data: " + line for line in lines]
    mixed = b"".join(line + ends[i] for i, line in enumerate(body)) + ends[-1] + b"\n"
    plain = b"".join(line + b"\n" for line in body) + b"\n\n"
    events, _, _ = _feed([mixed])
    want, _, _ = _feed([plain])
    assert _facts(events) == _facts(want)
    assert len(events) == 1
    assert events[0].data == "\n".join(line.decode("utf-8", "replace") for line in lines)


@settings(max_examples=10, deadline=None)
@given(size=st.integers(1 << 16, 1 << 20), fill=st.binary(min_size=1, max_size=3), data=st.data())
def test_a_huge_line_is_one_event_however_it_is_read(
    size: int, fill: bytes, data: st.DataObject
) -> None:
    payload = (fill * (size // len(fill) + 1))[:size].replace(b"\n", b"x").replace(b"\r", b"x")
    stream = b"data: " + payload + b"\n\n"
    step = data.draw(st.integers(1 << 10, 1 << 16))
    events, parser, discarded = _feed([stream[i : i + step] for i in range(0, len(stream), step)])
    assert len(events) == 1
    assert events[0].data == payload.decode("utf-8", "replace")
    assert discarded == 0
    assert parser.bytes == len(stream)
