"""The scripted SSE server (tests/fixtures/scripted_server.py) with the peer benchmark's presets.

Peer tools send their own request bodies, so they cannot pass a ``script`` field; the scripted
server then plays the preset named like the request's model. This wrapper adds the two presets
bench/peers.py uses and starts the server exactly as ``scripted_server.py`` would
(``LISTENING <host> <port>`` on stdout; ``GET /_log`` has every send time):

* ``pitfalls``: every pitfall at once. A whitespace-only ``" "`` chunk at 5 ms, a keep-alive
  comment at 15 ms, the first content token at 40 ms, then 10 ms gaps with one 110 ms stall after
  content chunk 12, and every 7th chunk carrying two tokens. A client that times the first
  chunk with ``choices`` reports a TTFT about 35 ms short; one that drops the comment's framing
  loses events; one that times per chunk without token counts miscounts the two-token chunks.
* ``fast``: capacity: 32 one-token chunks, first at 5 ms, 2 ms apart, no pitfalls.
* ``long``: saturation: 256 one-token chunks, first at 5 ms, 2 ms apart: long streams, so that
  closed-loop concurrency can load the server until it, or the client, runs out of CPU.

Usage: ``python bench/peers/truth_server.py [--port 0] [--cpu N]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fixtures import scripted_server  # noqa: E402

PITFALLS: dict[str, Any] = {
    "n": 24,
    "ws_first_ms": 5.0,
    "keepalive_ms": [15.0],
    "ttft_ms": 40.0,
    "itl_ms": 10.0,
    "stall_at": 12,
    "stall_ms": 110.0,
    "tokens": [1, 1, 1, 1, 1, 1, 2],
}
FAST: dict[str, Any] = {"n": 32, "ttft_ms": 5.0, "itl_ms": 2.0}
LONG: dict[str, Any] = {"n": 256, "ttft_ms": 5.0, "itl_ms": 2.0}
IDLE: dict[str, Any] = {"n": 2, "ttft_ms": 4000.0, "itl_ms": 1.0}

scripted_server.PRESETS.update({"pitfalls": PITFALLS, "fast": FAST, "long": LONG, "idle": IDLE})

if __name__ == "__main__":
    scripted_server.main()
