"""A host's clock evidence (otelbench.loadgen.clocksync, draft 4.7.2): the kernel's account and
an SNTP offset measured from a real SNTP server on loopback (tests/fixtures/sntp_server.py)."""

from __future__ import annotations

import socket

import pytest

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.clocksync import (
    SNTP_SAMPLES,
    clock_evidence,
    kernel_clock,
    measure_offset,
    parse_reference,
)
from tests.fixtures.sntp_server import SntpServer


def test_the_kernel_reports_its_clock_state_and_error_bounds() -> None:
    kernel = kernel_clock()
    assert kernel is not None  # Linux
    assert kernel["source"] == "adjtimex"
    assert kernel["state"] in {
        "TIME_OK",
        "TIME_INS",
        "TIME_DEL",
        "TIME_OOP",
        "TIME_WAIT",
        "TIME_ERROR",
    }
    assert kernel["max_error_ms"] >= 0
    assert kernel["est_error_ms"] >= 0
    if kernel["state"] == "TIME_ERROR":
        assert kernel["synchronised"] is False


@pytest.mark.parametrize("shift_ms", [0.0, 250.0, -1500.0])
def test_the_offset_from_a_reference_is_measured_within_its_bound(shift_ms: float) -> None:
    """The server's clock is this host's plus ``shift_ms``: the measured offset (local −
    reference) is −shift within the bound the round trip gives (plus the server's own time to
    answer, which the exchange subtracts)."""
    with SntpServer(offset_ns=int(shift_ms * 1e6)) as server:
        measured = measure_offset(server.address)
    assert measured["samples"] == SNTP_SAMPLES == server.answered
    assert measured["reference"] == server.address
    assert measured["offset_ms"] is not None
    assert measured["error_bound_ms"] is not None
    assert measured["round_trip_ms"] == pytest.approx(2 * measured["error_bound_ms"])
    assert abs(measured["offset_ms"] + shift_ms) <= measured["error_bound_ms"] + 0.001
    assert measured["stratum"] == 2


def test_an_unsynchronised_or_silent_reference_gives_no_offset_and_says_why() -> None:
    with SntpServer(leap=3) as server:
        unsynchronised = measure_offset(server.address, samples=2)
    assert unsynchronised["offset_ms"] is None
    assert unsynchronised["error"] == "the reference is not synchronised"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    silent = measure_offset(f"127.0.0.1:{port}", samples=2)
    assert (silent["offset_ms"], silent["samples"], silent["error"]) == (None, 0, "no answer")


def test_the_evidence_judges_the_measurement_against_the_draft_limit() -> None:
    with SntpServer() as near:
        good = clock_evidence(near.address)
    assert good["method"] == f"SNTP offset from {near.address}"
    assert good["accuracy_ms"] is not None
    assert good["accuracy_ms"] <= draft.CLOCK_SYNC_MAX_ERROR_MS
    assert good["within_limit"] is True
    with SntpServer(offset_ns=50_000_000) as far:  # 50 ms off
        bad = clock_evidence(far.address)
    assert bad["accuracy_ms"] is not None
    assert bad["accuracy_ms"] >= 49.0
    assert bad["within_limit"] is False
    none = clock_evidence(None)
    assert none["measured"] is None
    kernel = none["kernel"]
    assert kernel is not None
    if kernel["synchronised"]:
        assert none["accuracy_ms"] == kernel["max_error_ms"]
    else:  # this machine's kernel clock is not disciplined: no evidence either way
        assert (none["method"], none["accuracy_ms"], none["within_limit"]) == (
            "none measured",
            None,
            None,
        )


def test_references_parse_or_fail_in_one_line() -> None:
    assert parse_reference("ntp.internal") == ("ntp.internal", 123)
    assert parse_reference("10.0.0.1:1123") == ("10.0.0.1", 1123)
    with pytest.raises(ConfigError, match="expected HOST or HOST:PORT"):
        parse_reference("host:port")
