"""Content-Encoding decoders for the bodies the transports read: gzip, deflate, br, zstd.

The transports time and parse the *raw* network reads (before httpx decodes anything), so a
response the server compressed must be decoded here too: a gzipped JSON body or SSE stream is
otherwise unreadable to the parser, and a success would look like malformed JSON. Each read is
decoded as it arrives (incrementally), so a chunk of a compressed stream keeps the time of the
network read that brought it (a server that compresses a stream must flush per event for its
events to arrive apart, as it must for the application to see them apart).

``gzip``, ``deflate`` (zlib-wrapped, or raw as some servers send it) and ``identity`` are always
understood; ``br`` when ``brotli`` or ``brotlicffi`` is installed, ``zstd`` when ``zstandard``
is: the same packages that make httpx advertise them in ``Accept-Encoding``. Several codings
(``Content-Encoding: gzip, br``) are undone in reverse order. A coding not understood raises
:class:`UnsupportedEncoding` from :func:`decoder_for`; bad data raises :class:`DecodeFailed`.

Example::

    decoder = decoder_for("gzip")
    text = decoder.decode(first_read) + decoder.decode(second_read) + decoder.flush()
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any, Final, Protocol

__all__ = ["SUPPORTED", "DecodeFailed", "Decoder", "UnsupportedEncoding", "decoder_for"]


class UnsupportedEncoding(ValueError):
    """A ``Content-Encoding`` this process cannot decode (e.g. ``br`` without ``brotli``)."""


class DecodeFailed(ValueError):
    """The body is not valid data of its declared ``Content-Encoding``."""


class Decoder(Protocol):
    """Incremental decoding: ``decode`` each piece as it arrives, ``flush`` at the end."""

    def decode(self, data: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class _Zlib:
    """gzip (``wbits`` 16 + MAX_WBITS) or deflate: zlib-wrapped, else raw (RFC 9110 says
    zlib-wrapped; some servers send raw deflate, which browsers and httpx accept too)."""

    __slots__ = ("_first", "_obj", "_raw_fallback")

    def __init__(self, wbits: int, raw_fallback: bool) -> None:
        self._obj = zlib.decompressobj(wbits)
        self._raw_fallback = raw_fallback
        self._first = True

    def decode(self, data: bytes) -> bytes:
        first, self._first = self._first, False
        try:
            return self._obj.decompress(data)
        except zlib.error as exc:
            if first and self._raw_fallback:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                self._raw_fallback = False
                return self.decode(data)
            raise DecodeFailed(f"invalid compressed data: {exc}") from exc

    def flush(self) -> bytes:
        try:
            return self._obj.flush()
        except zlib.error as exc:
            raise DecodeFailed(f"invalid compressed data: {exc}") from exc


class _Wrapped:
    """A third-party decompressor with a ``process``/``decompress`` method and no flush."""

    __slots__ = ("_call", "_errors")

    def __init__(self, call: Callable[[bytes], bytes], errors: tuple[type[BaseException], ...]):
        self._call = call
        self._errors = errors

    def decode(self, data: bytes) -> bytes:
        try:
            return self._call(data)
        except self._errors as exc:
            raise DecodeFailed(f"invalid compressed data: {exc}") from exc

    def flush(self) -> bytes:
        return b""


class _Identity:
    __slots__ = ()

    def decode(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


class _Chain:
    """Several codings, the last applied first undone."""

    __slots__ = ("_decoders",)

    def __init__(self, decoders: list[Decoder]) -> None:
        self._decoders = decoders

    def decode(self, data: bytes) -> bytes:
        for d in self._decoders:
            data = d.decode(data)
        return data

    def flush(self) -> bytes:
        data = b""
        for d in self._decoders:
            data = d.decode(data) + d.flush() if data else d.flush()
        return data


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _brotli() -> Decoder | None:
    mod = _module("brotli", "brotlicffi")
    if mod is None:
        return None
    obj = mod.Decompressor()
    call = getattr(obj, "process", None) or obj.decompress
    return _Wrapped(call, (Exception,))


def _zstd() -> Decoder | None:
    mod = _module("zstandard")
    if mod is None:
        return None
    return _Wrapped(mod.ZstdDecompressor().decompressobj().decompress, (mod.ZstdError,))


_FACTORIES: Final[dict[str, Callable[[], Decoder | None]]] = {
    "identity": _Identity,
    "gzip": lambda: _Zlib(zlib.MAX_WBITS | 16, raw_fallback=False),
    "x-gzip": lambda: _Zlib(zlib.MAX_WBITS | 16, raw_fallback=False),
    "deflate": lambda: _Zlib(zlib.MAX_WBITS, raw_fallback=True),
    "br": _brotli,
    "zstd": _zstd,
}
SUPPORTED: Final = tuple(_FACTORIES)
"""Every coding name understood (``br`` and ``zstd`` only with their packages installed)."""


def decoder_for(content_encoding: str) -> Decoder:
    """The decoder of a ``Content-Encoding`` header value (case and spaces ignored).

    Raises :class:`UnsupportedEncoding` for a coding not understood here.

    >>> decoder_for("identity").decode(b"x")
    b'x'
    """
    names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
    decoders: list[Decoder] = []
    for name in reversed(names):
        factory = _FACTORIES.get(name)
        decoder = factory() if factory is not None else None
        if decoder is None:
            raise UnsupportedEncoding(f"cannot decode Content-Encoding {name!r}")
        if not isinstance(decoder, _Identity):
            decoders.append(decoder)
    if not decoders:
        return _Identity()
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)
