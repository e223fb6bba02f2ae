"""Crash consistency: ``kill -9`` the collector while it ingests at full rate, restart, count.

Several senders post OTLP/HTTP protobuf batches back to back over keep-alive connections. Every
batch is one trace: its spans share a trace id, which is the batch's identity in the store, and
each carries 150 token offsets like an engine-hook server span (so a batch takes milliseconds to
commit and the kill often lands inside an insert, a commit or an automatic checkpoint). At a
random moment (seeded) the collector is killed with SIGKILL, then restarted on the same store;
three rounds. Afterwards every trace id is counted (``nothing lost``, issue 8):

* a batch answered 2xx is in the store in full;
* a batch sent but not answered (the connection died) is wholly present or wholly absent;
* no batch is ever partly stored, and nothing is stored that was never sent.

Meanwhile a reader asks for snapshots (``POST /otelbench/snapshot``) back to back, so kills also
land in the middle of a copy: every snapshot it gets holds whole batches only, and the restarted
collector removes the copies the killed one left behind.
"""

from __future__ import annotations

import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2 as c
from opentelemetry.proto.resource.v1 import resource_pb2 as r
from opentelemetry.proto.trace.v1 import trace_pb2 as t

from otelbench import semconv
from otelbench.store import SpanStore

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PB = {"Content-Type": "application/x-protobuf"}
T0 = 1_700_000_000_000_000_000
SENDERS = 4
ROUNDS = 3
OFFSETS = 150
MIN_SPANS, MAX_SPANS = 20, 120


PLACEHOLDER = b"\xa5" * 16  # the template's trace id, replaced by each batch's own


def batch_template(n_spans: int) -> bytes:
    """An ExportTraceServiceRequest of ``n_spans`` server spans of trace :data:`PLACEHOLDER`."""
    offsets = c.AnyValue(
        array_value=c.ArrayValue(values=[c.AnyValue(int_value=900 * k) for k in range(OFFSETS)])
    )
    spans = [
        t.Span(
            trace_id=PLACEHOLDER,
            span_id=(i + 1).to_bytes(8, "big"),
            name=semconv.SPAN_HOOK_REQUEST,
            kind=t.Span.SPAN_KIND_SERVER,
            start_time_unix_nano=T0 + i,
            end_time_unix_nano=T0 + i + 150_000_000,
            attributes=[
                c.KeyValue(key=semconv.SERVER_TOKEN_OFFSETS_US, value=offsets),
                c.KeyValue(key=semconv.VLLM_REQUEST_ID, value=c.AnyValue(string_value=f"r{i}")),
            ],
        )
        for i in range(n_spans)
    ]
    resource = r.Resource(
        attributes=[c.KeyValue(key="service.name", value=c.AnyValue(string_value="vllm"))]
    )
    request = ExportTraceServiceRequest(
        resource_spans=[t.ResourceSpans(resource=resource, scope_spans=[t.ScopeSpans(spans=spans)])]
    )
    body = request.SerializeToString()
    assert body.count(PLACEHOLDER) == n_spans
    return body


TEMPLATES = {n: batch_template(n) for n in range(MIN_SPANS, MAX_SPANS + 1)}


@dataclass
class Ledger:
    """What the senders sent: batch id → span count, and which batches were answered 2xx."""

    sizes: dict[int, int] = field(default_factory=dict)
    acked: set[int] = field(default_factory=set)
    refused: Counter[int] = field(default_factory=Counter)
    snapshots_checked: int = 0
    partial_in_snapshots: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def send_until_dead(port: int, ids: range, rng: random.Random, ledger: Ledger) -> None:
    """Post batches ``ids`` back to back on one keep-alive connection until it fails."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for batch_id in ids:
            n = rng.randint(MIN_SPANS, MAX_SPANS)
            body = TEMPLATES[n].replace(PLACEHOLDER, batch_id.to_bytes(16, "big"))
            with ledger.lock:
                ledger.sizes[batch_id] = n
            conn.request("POST", "/v1/traces", body=body, headers=PB)
            response = conn.getresponse()
            response.read()
            with ledger.lock:
                if 200 <= response.status < 300:
                    ledger.acked.add(batch_id)
                else:
                    ledger.refused[response.status] += 1
    except (OSError, http.client.HTTPException):
        return  # the collector died under us: this batch's fate is unknown
    finally:
        conn.close()


def snapshot_until_dead(port: int, ledger: Ledger) -> None:
    """Ask for snapshots back to back and check each holds whole batches only."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while True:
            conn.request("POST", "/otelbench/snapshot", b"")
            response = conn.getresponse()
            answer = json.loads(response.read())
            assert response.status == 200, answer
            path = Path(answer["path"])
            with duckdb.connect(str(path), read_only=True) as con:
                counts = con.execute(
                    'SELECT "TraceId", count(*) FROM otel_traces GROUP BY "TraceId"'
                ).fetchall()
            path.unlink()
            with ledger.lock:
                ledger.snapshots_checked += 1
                for trace_id, n in counts:
                    batch_id = int(trace_id, 16)
                    if n != ledger.sizes.get(batch_id):
                        ledger.partial_in_snapshots[batch_id] = n
    except (OSError, http.client.HTTPException):
        return  # the collector died under us
    finally:
        conn.close()


def start_collector(store: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.collector", "--store", str(store), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"collector did not start: {proc.communicate(timeout=30)}"
    ready: dict[str, Any] = json.loads(line)
    return proc, int(ready["port"])


def test_sigkill_at_random_moments_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    store = tmp_path / "spans.duckdb"
    rng = random.Random(8)
    ledger = Ledger()
    next_id = 1
    killed_with_unanswered = 0
    for _ in range(ROUNDS):
        unanswered_before = len(ledger.sizes) - len(ledger.acked)
        proc, port = start_collector(store)  # opens (and recovers) what the last kill left
        try:
            senders = []
            for s in range(SENDERS):
                ids = range(next_id + s * 100_000, next_id + (s + 1) * 100_000)
                seeded = random.Random(rng.random())
                senders.append(
                    threading.Thread(target=send_until_dead, args=(port, ids, seeded, ledger))
                )
            next_id += SENDERS * 100_000
            senders.append(threading.Thread(target=snapshot_until_dead, args=(port, ledger)))
            for sender in senders:
                sender.start()
            time.sleep(rng.uniform(0.4, 2.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            for sender in senders:
                sender.join(timeout=60)
            assert not any(sender.is_alive() for sender in senders)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        killed_with_unanswered += len(ledger.sizes) - len(ledger.acked) > unanswered_before

    # one more restart: the collector opens the store after the last kill, then stops cleanly
    proc, _ = start_collector(store)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    with SpanStore.open(store, read_only=True) as reopened:
        stored = {
            int.from_bytes(bytes.fromhex(trace_id), "big"): n
            for trace_id, n in reopened.execute(
                'SELECT "TraceId", count(*) FROM otel_traces GROUP BY "TraceId"'
            )
        }
        [(bad_offsets,)] = reopened.execute(
            'SELECT count(*) FROM otel_traces WHERE len("SpanAttributes"[$k]::BIGINT[]) <> $n',
            {"k": semconv.SERVER_TOKEN_OFFSETS_US, "n": OFFSETS},
        )
    assert ledger.refused == Counter()  # the collector never refused a well-formed batch
    assert len(ledger.acked) > 10 * ROUNDS  # the senders really ran between kills
    assert killed_with_unanswered == ROUNDS  # every kill caught batches in flight
    missing = {b: ledger.sizes[b] for b in ledger.acked if stored.get(b) != ledger.sizes[b]}
    assert missing == {}, "acknowledged batches missing or incomplete"
    partial = {b: (n, ledger.sizes.get(b)) for b, n in stored.items() if n != ledger.sizes.get(b)}
    assert partial == {}, "batches partly stored, or stored but never sent"
    assert bad_offsets == 0
    assert ledger.snapshots_checked > 0  # the reader really read snapshots between kills
    assert ledger.partial_in_snapshots == {}
    assert [p.name for p in tmp_path.iterdir() if ".snapshot-" in p.name] == []
