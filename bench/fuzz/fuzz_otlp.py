"""atheris (libFuzzer) harness for the OTLP/HTTP decoders: coverage-guided, for long runs.

The first input byte picks the signal (traces, metrics), the encoding (protobuf, JSON) and the
compression (none, gzip, deflate); the rest is the body. Decompressing and decoding must either
succeed or raise :class:`~otelbench.collector.otlp.OTLPDecodeError` (what the receiver answers
with 400/413/415 and counts); any other exception is a finding. Run (bench/fuzz/README.md)::

    .venv/bin/python bench/fuzz/fuzz_otlp.py -max_total_time=600 bench/fuzz/corpus/otlp
"""

from __future__ import annotations

import contextlib
import sys

import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

with atheris.instrument_imports():
    from otelbench.collector.otlp import (
        Encoding,
        OTLPDecodeError,
        decode_metrics,
        decode_traces,
        decompress,
    )

_DECODERS = (decode_traces, decode_metrics)
_ENCODINGS = (Encoding.PROTOBUF, Encoding.JSON)
_COMPRESSION = (None, "gzip", "deflate")
_LIMIT = 1 << 20


def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, body = data[0], data[1:]
    decode = _DECODERS[mode & 1]
    encoding = _ENCODINGS[(mode >> 1) & 1]
    compression = _COMPRESSION[(mode >> 2) % 3]
    with contextlib.suppress(OTLPDecodeError):
        decode(decompress(body, compression, _LIMIT), encoding)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
