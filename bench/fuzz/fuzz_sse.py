"""atheris (libFuzzer) harness for the SSE parser: coverage-guided, for runs of minutes to hours.

Each input is split into reads at points the input itself chooses; the parser must not raise,
and the events must equal those of the same bytes fed as one read (the parser's split
invariance, also a hypothesis property in tests/unit/client/test_sse_properties.py).
Run (bench/fuzz/README.md)::

    .venv/bin/python bench/fuzz/fuzz_sse.py -max_total_time=600 bench/fuzz/corpus/sse
"""

from __future__ import annotations

import itertools
import sys

import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

with atheris.instrument_imports():
    from otelbench.client.sse import SSEEvent, SSEParser


def _feed(reads: list[bytes]) -> tuple[list[tuple[str, str, str, int | None]], int]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for i, read in enumerate(reads):
        events += parser.feed(read, i)
    discarded = parser.close()
    return [(e.data, e.event, e.id, e.retry) for e in events], discarded


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n_cuts = fdp.ConsumeIntInRange(0, 8)
    cuts = sorted(fdp.ConsumeIntInRange(0, 1 << 12) for _ in range(n_cuts))
    stream = fdp.ConsumeBytes(fdp.remaining_bytes())
    bounds = [0, *(min(c, len(stream)) for c in cuts), len(stream)]
    reads = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    if _feed(reads) != _feed([stream]):
        raise AssertionError(f"split {cuts} of {stream!r} changed the events")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
