"""Property test on a real receiver (loopback, port 0): any garbage request between two good
batches — random bytes, a mutated valid request, wrongly typed OTLP/JSON — is answered 400 and
counted as ``malformed`` (or, when it happens to be valid OTLP, 200), the receiver keeps
serving, and every span of the good batches is stored: nothing stored is lost."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.collector import Receiver
from tests.integration.test_receiver_robustness import JSON, PB, batch

pytestmark = pytest.mark.integration

_GOOD = batch(0)
garbage = st.one_of(
    st.tuples(st.binary(max_size=256), st.sampled_from([PB, JSON])),
    st.tuples(
        st.tuples(st.integers(0, len(_GOOD) - 1), st.integers(0, 255)).map(
            lambda pv: _GOOD[: pv[0]] + bytes([pv[1]]) + _GOOD[pv[0] + 1 :]
        ),
        st.just(PB),
    ),
    st.tuples(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=6),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
            max_leaves=8,
        ).map(lambda v: json.dumps({"resourceSpans": v}).encode()),
        st.just(JSON),
    ),
)


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    path: Path = tmp_path_factory.mktemp("garbage") / "spans.duckdb"
    with Receiver(path, port=0, max_body_bytes=64 << 10) as r:
        yield r


def _post(port: int, body: bytes, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/traces", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


_SEQ = iter(range(1, 10**9))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=garbage)
def test_garbage_between_good_batches_loses_nothing(
    receiver: Receiver, request: tuple[bytes, dict[str, str]]
) -> None:
    body, headers = request
    n = next(_SEQ)
    before_count = receiver.store.span_count()
    before_malformed = receiver.stats().rejected.get("malformed", 0)
    assert _post(receiver.port, batch(1000 * n), PB) == 200
    status = _post(receiver.port, body, headers)
    assert _post(receiver.port, batch(1000 * n + 500), PB) == 200
    after = receiver.store.span_count()
    malformed = receiver.stats().rejected.get("malformed", 0) - before_malformed
    assert status in (200, 400)
    if status == 400:
        assert malformed == 1
        assert after == before_count + 6  # both good batches, and nothing else, stored
    else:  # the garbage was valid OTLP: it may have stored spans of its own
        assert malformed == 0
        assert after >= before_count + 6
