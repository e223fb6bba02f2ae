"""The engine core's account of an aborted request, and the channel that takes it to the API
servers.

Why: vLLM's frontend (the API server's ``OutputProcessor``) learns a request's engine events —
QUEUED, SCHEDULED, PREEMPTED, with their ``time.monotonic()`` timestamps — and its trace headers
only with the request's first output, and a long prompt's prefill gives no output until its last
chunk. So when a client hangs up before the first token, the frontend cannot tell whether its
request was still queued or already in prefill, how much of the prompt the engine computed, or
which trace it belongs to. The engine core knows: its ``Request`` holds the status, the events
not yet sent, ``num_computed_tokens``, ``num_output_tokens``, ``num_preemptions`` and the trace
headers. When the frontend aborts a request it tells the engine core afterwards
(``AsyncLLM.abort``: ``output_processor.abort_requests`` first, then
``engine_core.abort_requests_async``), and the engine core's ``EngineCore.abort_requests`` runs
the abort. The hooks wrap that method (``_vllm_internals``): before vLLM's own code frees the
requests, :func:`engine_facts` reads each one into an :class:`EngineFacts`, and
:class:`FactsSender` sends them to every API server of this vLLM; the API server's
:class:`FactsReceiver` hands them to :meth:`otelbench_vllm.hook.RequestHook.on_engine_facts`,
which completes the request's server span. vLLM has no channel for this (its outputs for an
aborted request are dropped by the frontend), so the hooks bring their own:

- a private directory (mode 0700), ``$OTELBENCH_VLLM_ABORT_CHANNEL``, made by the hooks in the
  first vLLM process they load in (``vllm serve``'s main process, before it starts the engine
  core and any further API server, which inherit the variable: :func:`channel_dir`);
- one Unix datagram socket per API server process in it, ``api-<pid>.sock``, bound at the
  process's first abort (before the engine core hears of it);
- the engine core sends each batch of facts, JSON-encoded, to every socket there, without
  blocking: a full socket buffer drops the datagram (the span is then completed from the
  frontend's knowledge alone, its phase ``unknown`` when no token had been seen).

Cost: nothing per token or per step. Per aborted request, in the engine core: a dict lookup, a
tuple and its share of one ``json.dumps`` and one ``sendto`` per API server (a few µs); in the
API server: one datagram read on the hooks' own thread.

Not covered: engine cores on other hosts (multi-node data parallel): their facts cannot reach the
API server, whose spans of aborted requests then carry what the frontend saw.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from otelbench_vllm import names

__all__ = [
    "MAX_DATAGRAM_FACTS",
    "EngineFacts",
    "FactsReceiver",
    "FactsSender",
    "channel_dir",
    "decode_facts",
    "encode_facts",
    "engine_facts",
    "phase_of",
]

_log = logging.getLogger("vllm.plugins.otelbench")

MAX_DATAGRAM_FACTS = 128
"""Facts per datagram at most (about 250 bytes each, well under a Unix socket's buffer)."""

_SOCKET_PREFIX = "api-"
_SOCKET_SUFFIX = ".sock"

# vLLM's RequestStatus member names (vllm/v1/request.py, the same in 0.29-0.33)
_RUNNING = "RUNNING"
_PREEMPTED = "PREEMPTED"


class EngineFacts(NamedTuple):
    """One aborted request as the engine core saw it when the abort reached it."""

    engine_request_id: str
    phase: str
    """:func:`phase_of`: ``queue``, ``prefill``, ``decode`` or ``preempted``."""
    num_prompt_tokens: int
    num_computed_tokens: int
    """Tokens (prompt, then output) whose KV the engine computed, prefix-cache hits included."""
    num_output_tokens: int
    num_preemptions: int
    events: Sequence[tuple[int, float]]
    """The request's engine events not yet sent to the frontend: (type, monotonic s)."""
    trace_headers: dict[str, str] | None
    abort_ts: float
    """The engine core's ``time.monotonic()`` when the abort reached it (s)."""


def phase_of(status_name: str, num_output_tokens: int) -> str:
    """Where a request was when it ended, from vLLM's ``RequestStatus`` name and its output
    tokens: ``preempted`` (waiting again after a preemption), ``decode`` (output tokens made),
    ``prefill`` (running, no output token yet) or ``queue`` (waiting, never scheduled)."""
    if status_name == _PREEMPTED:
        return names.END_PHASE_PREEMPTED
    if num_output_tokens > 0:
        return names.END_PHASE_DECODE
    if status_name == _RUNNING:
        return names.END_PHASE_PREFILL
    return names.END_PHASE_QUEUE


def engine_facts(request: Any, now: float) -> EngineFacts:
    """An engine-core ``vllm.v1.request.Request`` read into :class:`EngineFacts` (``now``: the
    engine core's ``time.monotonic()``)."""
    outputs = int(request.num_output_tokens)
    status = getattr(request.status, "name", str(request.status))
    headers = request.trace_headers
    return EngineFacts(
        str(request.request_id),
        phase_of(status, outputs),
        int(request.num_prompt_tokens),
        int(request.num_computed_tokens),
        outputs,
        int(request.num_preemptions),
        [(int(e.type), float(e.timestamp)) for e in request.events],
        dict(headers) if headers else None,
        now,
    )


def encode_facts(facts: Sequence[EngineFacts]) -> bytes:
    """A datagram's payload: the facts as a JSON array of arrays."""
    return json.dumps(facts, separators=(",", ":")).encode()


def decode_facts(payload: bytes) -> list[EngineFacts]:
    """The facts of one datagram (:func:`encode_facts`); ``ValueError`` when it is not one."""
    rows = json.loads(payload)
    if not isinstance(rows, list):
        raise ValueError("not a list of engine facts")
    facts = []
    for row in rows:
        rid, phase, prompt, computed, outputs, preemptions, events, headers, abort_ts = row
        facts.append(
            EngineFacts(
                str(rid),
                str(phase),
                int(prompt),
                int(computed),
                int(outputs),
                int(preemptions),
                [(int(t), float(ts)) for t, ts in events],
                {str(k): str(v) for k, v in headers.items()} if headers else None,
                float(abort_ts),
            )
        )
    return facts


def channel_dir(create: bool = False) -> str | None:
    """The abort channel's directory, ``$OTELBENCH_VLLM_ABORT_CHANNEL``. With ``create`` and the
    variable unset, make a private one, put it in the environment (so that the processes this one
    starts inherit it) and remove it at this process's exit."""
    found = os.environ.get(names.ENV_VLLM_ABORT_CHANNEL)
    if found or not create:
        return found or None
    made = tempfile.mkdtemp(prefix="otelbench-vllm-aborts-")
    os.environ[names.ENV_VLLM_ABORT_CHANNEL] = made
    atexit.register(shutil.rmtree, made, True)
    return made


class FactsSender:
    """The engine core's end: sends each batch of facts to every API server's socket."""

    def __init__(self, directory: str) -> None:
        self._dir = directory
        self._sock: socket.socket | None = None
        self.sent = 0
        self.dropped = 0
        self._warned = False

    def _socket(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.setblocking(False)
            self._sock = sock
        return self._sock

    def _targets(self) -> list[str]:
        try:
            with os.scandir(self._dir) as entries:
                return [
                    e.path
                    for e in entries
                    if e.name.startswith(_SOCKET_PREFIX) and e.name.endswith(_SOCKET_SUFFIX)
                ]
        except OSError:
            return []

    def close(self) -> None:
        """Close the socket (the engine core's lives as long as the process)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def send(self, facts: Sequence[EngineFacts]) -> None:
        """Send ``facts`` (never blocks, never raises: a datagram that cannot go is counted)."""
        if not facts:
            return
        targets = self._targets()
        if not targets:
            self.dropped += len(facts)
            return
        sock = self._socket()
        for start in range(0, len(facts), MAX_DATAGRAM_FACTS):
            chunk = facts[start : start + MAX_DATAGRAM_FACTS]
            payload = encode_facts(chunk)
            for path in targets:
                try:
                    sock.sendto(payload, path)
                    self.sent += len(chunk)
                except ConnectionRefusedError:
                    # a socket left by an API server that died: nobody will read it again
                    with contextlib.suppress(OSError):
                        Path(path).unlink()
                except OSError as exc:  # buffer full (EAGAIN), or the socket went away
                    self.dropped += len(chunk)
                    if not self._warned:
                        self._warned = True
                        _log.warning(
                            "otelbench hooks: an abort account could not reach an API server "
                            "(%s); its span keeps what the frontend saw (logged once)",
                            exc,
                        )


class FactsReceiver:
    """The API server's end: a datagram socket in the channel directory and a daemon thread that
    reads it. ``on_facts`` gets each datagram's facts; ``on_tick`` is called after each
    datagram and at least every ``tick`` seconds (the hook expires what waited too long)."""

    def __init__(
        self,
        directory: str,
        on_facts: Callable[[Iterable[EngineFacts]], None],
        on_tick: Callable[[], None],
        tick: float = 0.25,
    ) -> None:
        self.path = str(Path(directory) / f"{_SOCKET_PREFIX}{os.getpid()}{_SOCKET_SUFFIX}")
        self._on_facts = on_facts
        self._on_tick = on_tick
        self._tick = tick
        self.malformed = 0
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        with contextlib.suppress(FileNotFoundError):
            Path(self.path).unlink()
        sock.bind(self.path)
        sock.settimeout(tick)
        self._sock = sock
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="otelbench-hooks-aborts", daemon=True
        )
        self._thread.start()
        atexit.register(self.close)

    def _run(self) -> None:
        sock = self._sock
        last_tick = time.monotonic()
        while not self._stop.is_set():
            try:
                payload = sock.recv(1 << 20)
            except TimeoutError:
                payload = None
            except OSError:
                if self._stop.is_set():
                    return
                payload = None
            if payload:
                try:
                    facts = decode_facts(payload)
                except (ValueError, TypeError):
                    self.malformed += 1
                else:
                    self._safely(self._on_facts, facts)
            now = time.monotonic()
            if payload or now - last_tick >= self._tick:
                last_tick = now
                self._safely(self._on_tick)

    @staticmethod
    def _safely(func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except Exception:  # noqa: BLE001 - telemetry never stops; the hook counts its own errors
            _log.exception("otelbench hooks: abort channel callback failed")

    def close(self) -> None:
        """Stop the thread and remove the socket (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        with contextlib.suppress(OSError):
            self._sock.close()
        self._thread.join(timeout=2.0)
        with contextlib.suppress(OSError):
            Path(self.path).unlink()
