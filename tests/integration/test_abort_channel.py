"""The hooks' abort channel (``otelbench_vllm.aborts``) over real Unix datagram sockets: the
engine core's end in another process, as in vLLM, the API server's end with its thread.

The sender process imports nothing of vLLM: it reads a ``Request``-shaped object with
:func:`engine_facts` and sends it with :class:`FactsSender`, which is what the hooks' wrapper
of ``EngineCore.abort_requests`` does in vLLM's engine core process.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOKS_SRC = REPO / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:  # the hooks' package, from the source tree
    sys.path.insert(0, str(HOOKS_SRC))

from otelbench_vllm.aborts import (  # noqa: E402 - importable once HOOKS_SRC is on sys.path
    EngineFacts,
    FactsReceiver,
    FactsSender,
)

pytestmark = pytest.mark.integration

SENDER = textwrap.dedent(
    """
    import enum, sys
    from types import SimpleNamespace
    sys.path.insert(0, {hooks!r})
    from otelbench_vllm.aborts import FactsSender, engine_facts

    class RequestStatus(enum.Enum):
        WAITING = 1
        RUNNING = 2

    requests = [
        SimpleNamespace(
            request_id=f"req-{{i}}",
            status=RequestStatus.RUNNING if i % 2 else RequestStatus.WAITING,
            num_prompt_tokens=480, num_computed_tokens=16 * i, num_output_tokens=0,
            num_preemptions=0, events=[SimpleNamespace(type=1, timestamp=10.0 + i)],
            trace_headers={{"traceparent": f"00-{{i:032x}}-{{i:016x}}-01"}},
        )
        for i in range({count})
    ]
    sender = FactsSender({directory!r})
    sender.send([engine_facts(r, 20.0) for r in requests])
    sender.close()
    print(sender.sent, sender.dropped)
    """
)


class Collected:
    def __init__(self) -> None:
        self.facts: list[EngineFacts] = []
        self.ticks = 0
        self.event = threading.Event()

    def on_facts(self, facts: Iterable[EngineFacts]) -> None:
        self.facts.extend(facts)
        self.event.set()

    def on_tick(self) -> None:
        self.ticks += 1


def wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_an_engine_processes_account_reaches_the_api_servers_thread(tmp_path: Path) -> None:
    got = Collected()
    receiver = FactsReceiver(str(tmp_path), got.on_facts, got.on_tick, tick=0.05)
    try:
        count = 300  # more than one datagram holds
        script = SENDER.format(hooks=str(HOOKS_SRC), directory=str(tmp_path), count=count)
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
        )
        assert out.stdout.split() == [str(count), "0"]
        wait_for(lambda: len(got.facts) >= count)
        assert [f.engine_request_id for f in got.facts] == [f"req-{i}" for i in range(count)]
        assert got.facts[3] == EngineFacts(
            "req-3", "prefill", 480, 48, 0, 0, [(1, 13.0)],
            {"traceparent": f"00-{3:032x}-{3:016x}-01"}, 20.0,
        )  # fmt: skip
        assert got.facts[4].phase == "queue"
        wait_for(lambda: got.ticks >= 2)
        assert got.ticks >= 2  # the hook's expiry runs with no datagram coming
    finally:
        receiver.close()
    assert not Path(receiver.path).exists()


def test_a_datagram_that_is_not_an_account_is_counted_and_the_thread_goes_on(
    tmp_path: Path,
) -> None:
    got = Collected()
    receiver = FactsReceiver(str(tmp_path), got.on_facts, got.on_tick, tick=0.05)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"\x00garbage", receiver.path)
        wait_for(lambda: receiver.malformed == 1)
        assert receiver.malformed == 1
        sender = FactsSender(str(tmp_path))
        sender.send([EngineFacts("req-x", "queue", 1, 0, 0, 0, [], None, 1.0)])
        sender.close()
        assert got.event.wait(10.0)
        assert [f.engine_request_id for f in got.facts] == ["req-x"]
    finally:
        receiver.close()


def test_without_a_listening_api_server_the_account_is_dropped_and_counted(
    tmp_path: Path,
) -> None:
    sender = FactsSender(str(tmp_path))
    facts = [EngineFacts("req-y", "queue", 1, 0, 0, 0, [], None, 1.0)]
    sender.send(facts)
    assert (sender.sent, sender.dropped) == (0, 1)
    # a socket file left by an API server that died: refused, and removed
    stale = tmp_path / "api-999999.sock"
    left = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    left.bind(str(stale))
    left.close()
    assert stale.exists()
    sender.send(facts)
    sender.close()
    assert not stale.exists()
    assert sender.sent == 0
