"""The chunked transfer-coding decoder of the lean HTTP/1.1 transport."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.client._http11 import _ChunkedDecoder


def encode(pieces: list[bytes], *, ext: bool = False, trailers: bool = False) -> bytes:
    out = b"".join(
        (b"%x;name=v\r\n" if ext else b"%X\r\n") % len(p) + p + b"\r\n" for p in pieces if p
    )
    return out + b"0\r\n" + (b"x-trailer: 1\r\n" if trailers else b"") + b"\r\n"


def decode(reads: list[bytes]) -> tuple[bytes, bool]:
    d = _ChunkedDecoder()
    out = b"".join(d.feed(r) for r in reads)
    return out, d.done


def test_simple_body_and_end() -> None:
    body, done = decode([b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"])
    assert (body, done) == (b"hello world", True)


def test_extensions_trailers_and_uppercase_hex() -> None:
    data = encode([b"a" * 26, b"b"], ext=True, trailers=True)
    assert decode([data]) == (b"a" * 26 + b"b", True)
    assert decode([b"1A\r\n" + b"c" * 26 + b"\r\n0\r\n\r\n"]) == (b"c" * 26, True)


def test_incomplete_is_not_done() -> None:
    assert decode([b"5\r\nhel"]) == (b"hel", False)
    assert decode([b"5\r\nhello\r\n"]) == (b"hello", False)
    assert decode([b"5\r\nhello\r\n0\r\n"]) == (b"hello", False)


@pytest.mark.parametrize(
    "bad",
    [
        b"zz\r\nhello\r\n",  # not hex
        b"5\r\nhelloXX",  # no CRLF after the data
        b"-5\r\nhello\r\n",
        b"1\r\na\r\n0\r\n\r\nextra",  # bytes after the end
        b"1" * 5000,  # a size line that never ends
    ],
)
def test_malformed_raises_value_error(bad: bytes) -> None:
    with pytest.raises(ValueError):
        decode([bad])


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=40), max_size=8),
    ext=st.booleans(),
    trailers=st.booleans(),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_any_split_decodes_the_same(
    pieces: list[bytes], ext: bool, trailers: bool, cuts: list[int]
) -> None:
    data = encode(pieces, ext=ext, trailers=trailers)
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    reads = [data[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode(reads) == (b"".join(pieces), True)
