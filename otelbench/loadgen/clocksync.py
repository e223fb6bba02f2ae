"""Evidence of a host's wall-clock synchronisation (draft 4.7.2), measured, not declared.

A run sent from several hosts (:mod:`otelbench.loadgen.shard`) shares one wall-clock start, and
its spans' timestamps are compared across hosts; draft 4.7.2 asks that NTP synchronisation
achieve 10 ms or better (MUST), PTP where sub-millisecond accuracy is needed (SHOULD), and that
the report state the method and the estimated accuracy (MUST). Each shard records two kinds of
evidence, as far as its host gives them:

* **the kernel's own account** (:func:`kernel_clock`): ``adjtimex(2)`` read-only (no privilege
  needed, and inside a container it reads the node's kernel): whether a time daemon (chrony,
  ntpd, phc2sys …) keeps the clock synchronised (``STA_UNSYNC`` clear, state not
  ``TIME_ERROR``) and the daemon's maximum and estimated error bounds;
* **a measured offset** (:func:`measure_offset`, with ``--clock-reference HOST[:PORT]``): an
  SNTP exchange (RFC 4330) with a reference every shard asks, several times; the sample with the
  shortest round trip gives the offset (wall clock − reference) and its error bound, half that
  round trip (the exchange cannot tell a one-way delay from an offset). Two shards measured
  against one reference are within the sum of their offsets and bounds of each other.

Clock domains: the wall clock (``time.time_ns``, CLOCK_REALTIME) is what is judged; the round
trip is timed on CLOCK_MONOTONIC (``time.perf_counter_ns``).

Example::

    evidence = clock_evidence("ntp.internal:123")
    evidence["within_limit"]      # True / False / None (no evidence either way)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import socket
import struct
import time
from typing import Any, Final

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.model.manifest import ClockEvidence, KernelClock, MeasuredOffset

__all__ = [
    "SNTP_SAMPLES",
    "clock_evidence",
    "kernel_clock",
    "measure_offset",
    "parse_reference",
]

SNTP_SAMPLES: Final = 8
"""Exchanges with the reference; the one with the shortest round trip is kept."""
SNTP_TIMEOUT_S: Final = 1.0
NTP_UNIX_OFFSET_S: Final = 2_208_988_800
"""Seconds from the NTP era (1900-01-01) to the Unix epoch."""
_STA_UNSYNC: Final = 0x0040
_TIME_STATES: Final = ("TIME_OK", "TIME_INS", "TIME_DEL", "TIME_OOP", "TIME_WAIT", "TIME_ERROR")


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):
    """``struct timex`` of ``<sys/timex.h>`` (Linux; 208 bytes on 64-bit)."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time", _Timeval),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("_reserved", ctypes.c_int * 11),
    ]


def kernel_clock() -> KernelClock | None:
    """The kernel's account of its wall clock's synchronisation (``adjtimex`` with no mode
    bits: a read): ``synchronised``, ``state``, ``max_error_ms`` and ``est_error_ms`` (the time
    daemon's bounds, ms); None where the call is not available (not Linux)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        adjtimex = ctypes.CDLL(name, use_errno=True).adjtimex
    except (OSError, AttributeError):
        return None
    timex = _Timex()
    state = adjtimex(ctypes.byref(timex))
    if state < 0:
        return None
    label = _TIME_STATES[state] if state < len(_TIME_STATES) else str(state)
    return {
        "source": "adjtimex",
        "synchronised": not timex.status & _STA_UNSYNC and label != "TIME_ERROR",
        "state": label,
        "max_error_ms": timex.maxerror / 1000,
        "est_error_ms": timex.esterror / 1000,
    }


def parse_reference(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (port 123 by default) of an SNTP reference."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = text.strip(), "123"
    if not host or not port.isdigit():
        raise ConfigError(f"--clock-reference {text!r}: expected HOST or HOST:PORT")
    return host, int(port)


def _ntp_to_unix_ns(raw: bytes) -> int:
    seconds: int
    fraction: int
    seconds, fraction = struct.unpack("!II", raw)
    return (seconds - NTP_UNIX_OFFSET_S) * 1_000_000_000 + (fraction * 1_000_000_000 >> 32)


def _unix_ns_to_ntp(ns: int) -> bytes:
    seconds, rest = divmod(ns, 1_000_000_000)
    return struct.pack("!II", seconds + NTP_UNIX_OFFSET_S, (rest << 32) // 1_000_000_000)


def measure_offset(reference: str, samples: int = SNTP_SAMPLES) -> MeasuredOffset:
    """This host's wall-clock offset from an SNTP ``reference`` (``HOST[:PORT]``), from the
    exchange of ``samples`` with the shortest round trip: ``offset_ms`` (local − reference),
    ``round_trip_ms``, ``error_bound_ms`` (half the round trip), the reference's ``stratum``,
    and ``samples`` answered. A reference that never answers, or answers unsynchronised
    (leap indicator 3, stratum 0), gives ``offset_ms`` None and says why in ``error``."""
    host, port = parse_reference(reference)
    name = f"{host}:{port}"
    try:
        address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    except OSError as exc:
        return _unanswered(name, f"cannot resolve {host}: {exc}")
    answered = 0
    unsynchronised = False
    best: tuple[int, int, int] | None = None  # round trip, offset (ns), stratum
    with socket.socket(address[0], socket.SOCK_DGRAM) as sock:
        sock.settimeout(SNTP_TIMEOUT_S)
        for _ in range(samples):
            with contextlib.suppress(OSError):
                sample = _exchange(sock, address[4])
                if sample is None:
                    unsynchronised = True
                    continue
                answered += 1
                if best is None or sample[0] < best[0]:
                    best = sample
    if best is None:
        why = "the reference is not synchronised" if unsynchronised else "no answer"
        return _unanswered(name, why)
    round_trip, offset, stratum = best
    return {
        "reference": name,
        "samples": answered,
        "offset_ms": offset / 1e6,
        "round_trip_ms": round_trip / 1e6,
        "error_bound_ms": round_trip / 2e6,
        "stratum": stratum,
    }


def _unanswered(reference: str, why: str) -> MeasuredOffset:
    return {
        "reference": reference,
        "samples": 0,
        "offset_ms": None,
        "round_trip_ms": None,
        "error_bound_ms": None,
        "stratum": None,
        "error": why,
    }


def _exchange(sock: socket.socket, address: tuple[Any, ...]) -> tuple[int, int, int] | None:
    """One SNTP client exchange: (round trip, offset, stratum) in ns; None when the reference
    says it is unsynchronised. Raises OSError on a timeout or a malformed answer."""
    t1_mono = time.perf_counter_ns()
    t1 = time.time_ns()
    request = b"\x23" + bytes(39) + _unix_ns_to_ntp(t1)  # LI 0, version 4, mode 3 (client)
    sock.sendto(request, address)
    while True:
        reply, _ = sock.recvfrom(512)
        if len(reply) >= 48 and reply[24:32] == request[40:48]:  # answers this request
            break
    t4_mono = time.perf_counter_ns()
    leap, stratum = reply[0] >> 6, reply[1]
    if leap == 3 or stratum == 0:
        return None
    t2, t3 = _ntp_to_unix_ns(reply[32:40]), _ntp_to_unix_ns(reply[40:48])
    t4 = t1 + (t4_mono - t1_mono)  # the reply's arrival on the wall clock read at t1
    round_trip = (t4_mono - t1_mono) - (t3 - t2)
    offset = ((t1 - t2) + (t4 - t3)) // 2
    return max(round_trip, 0), offset, stratum


def clock_evidence(reference: str | None) -> ClockEvidence:
    """A shard's clock evidence for the run manifest: the kernel's account, the offset measured
    from ``reference`` (when given), the method, the estimated accuracy (ms) and whether it is
    within draft 4.7.2's limit (:data:`otelbench.draft.CLOCK_SYNC_MAX_ERROR_MS`): judged on the
    measurement when there is one (|offset| + its bound), else on the kernel's maximum error
    when a daemon keeps the clock; None when neither says."""
    kernel = kernel_clock()
    measured = measure_offset(reference) if reference else None
    accuracy: float | None = None
    method = "none measured"
    if measured is not None and measured["offset_ms"] is not None:
        accuracy = abs(measured["offset_ms"]) + (measured["error_bound_ms"] or 0.0)
        method = f"SNTP offset from {measured['reference']}"
    elif kernel is not None and kernel["synchronised"]:
        accuracy = kernel["max_error_ms"]
        method = "kernel-disciplined clock (adjtimex maximum error)"
    return {
        "method": method,
        "accuracy_ms": accuracy,
        "within_limit": None if accuracy is None else accuracy <= draft.CLOCK_SYNC_MAX_ERROR_MS,
        "kernel": kernel,
        "measured": measured,
    }
