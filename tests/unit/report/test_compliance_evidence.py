"""``chunking-declared`` (4.6.2) and ``first-token-definition`` (5.1.3.1) judge what the run
recorded, not the text otelbench always writes: for each, a run that meets it and one that does
not, from RunData records built by hand (``tests/unit/report/test_sections.run_data``) through
``report_from_data``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from otelbench import semconv
from otelbench.query import RunData
from otelbench.report import report_from_data
from tests.unit.report.test_sections import MS, Req, run_data

CHUNKS = [(100 * MS, 1), (120 * MS, 3), (140 * MS, 1)]


def check(data: RunData, check_id: str) -> dict[str, Any]:
    checks = {c["id"]: c for c in report_from_data(data)["compliance"]["checks"]}
    return dict(checks[check_id])


def with_client(data: RunData, **fields: Any) -> RunData:
    return dataclasses.replace(data, client=dataclasses.replace(data.client, **fields))


# ------------------------------------------------------------------------------------------
# chunking-declared (4.6.2): the run knows each chunk's token count
# ------------------------------------------------------------------------------------------


def test_chunk_token_counts_from_usage_meet_chunking_declared() -> None:
    found = check(run_data([Req(CHUNKS), Req(CHUNKS)]), "chunking-declared")
    assert found["met"] is True
    assert found["evidence"] == (
        "protocol HTTP/1.1 Server-Sent Events (OpenAI-compatible streaming); multi-token chunks "
        "(up to 3 tokens per chunk), counted from per-chunk usage on all 2 requests with content "
        "chunks; multi-token chunks handled by Option B"
    )


def test_chunks_counted_as_one_token_each_do_not_meet_chunking_declared() -> None:
    data = run_data([Req(CHUNKS), Req(CHUNKS)])
    sources = (semconv.CHUNK_TOKENS_FROM_USAGE, semconv.CHUNK_TOKENS_ONE_PER_CHUNK)
    found = check(with_client(data, chunk_token_source=sources), "chunking-declared")
    assert found["met"] is False
    assert (
        "per-chunk token counts known on 1 of 2 requests with content chunks (the rest: "
        in (found["evidence"])
    )
    assert "one_per_chunk on 1" in found["evidence"]


def test_chunking_declared_is_not_met_without_a_content_chunk() -> None:
    """No chunk received: nothing shows how chunks carried tokens, so 4.6.2 has no evidence."""
    found = check(run_data([Req([]), Req(CHUNKS, ok=False)]), "chunking-declared")
    assert (found["met"], found["evidence"]) == (
        False,
        "no evidence: no content chunk was received, so the chunking is not known",
    )


# ------------------------------------------------------------------------------------------
# first-token-definition (5.1.3.1): the first-content detection applied, on every request
# ------------------------------------------------------------------------------------------


def test_a_role_delta_before_the_content_is_skipped_and_noted() -> None:
    data = run_data([Req(CHUNKS), Req(CHUNKS)])
    # request 0's first SSE event (a role-only delta) came 30 ms before its first content
    first_event = np.array([70.0 * MS, 100.0 * MS])
    found = check(with_client(data, first_event_offset_us=first_event), "first-token-definition")
    assert found["met"] is True
    assert found["evidence"] == (
        "TTFT is the time to the first content token; 2 requests with the first event and the "
        "first content token recorded: 1 of them began with non-content events (role-only, "
        "empty or whitespace deltas) that TTFT skipped, P50 30.00 ms before the content"
    )
    report = report_from_data(with_client(data, first_event_offset_us=first_event))
    assert report["metrics"]["client"]["first_content_token"] == {
        "requests": 2,
        "first_event_recorded": 2,
        "after_non_content_events": 1,
        "non_content_lead_ms": {"count": 1, "p50": 30.0, "p95": 30.0, "p99": 30.0},
        "content_before_first_event": 0,
    }


def test_content_first_streams_meet_it_too() -> None:
    found = check(run_data([Req(CHUNKS)]), "first-token-definition")
    assert found["met"] is True
    assert found["evidence"].endswith("recorded: none began with non-content events")


def test_spans_without_the_first_event_do_not_show_the_definition_applied() -> None:
    # another producer's client spans: TTFT recorded, the first event's offset not
    data = run_data([Req(CHUNKS), Req(CHUNKS)])
    first_event = np.array([100.0 * MS, np.nan])
    found = check(with_client(data, first_event_offset_us=first_event), "first-token-definition")
    assert found["met"] is False
    assert found["evidence"].startswith(
        "of 2 requests with a TTFT, 1 lack the first SSE event's offset and 0 have content "
        "before their first event"
    )


def test_content_before_the_first_event_contradicts_the_definition() -> None:
    data = run_data([Req(CHUNKS)])
    found = check(
        with_client(data, first_event_offset_us=np.array([150.0 * MS])), "first-token-definition"
    )
    assert found["met"] is False
    assert "0 lack the first SSE event's offset and 1 have content" in found["evidence"]


def test_first_token_definition_is_not_met_without_a_ttft() -> None:
    found = check(run_data([Req([])]), "first-token-definition")
    assert (found["met"], found["evidence"]) == (
        False,
        "no evidence: no request received a content token",
    )
