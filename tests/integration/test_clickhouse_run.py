"""`otelbench run`, the procedures and the collector with a ClickHouse store (chdb).

Real parts only: the CLI in a child process, the embedded collector in its own child process
holding the chdb directory while it runs (chdb serves a directory to one process at a time), the
scripted server (tests/fixtures/scripted_server.py) in a third; the CLI reads the store after the
collector has stopped. The receiver test runs the receiver in this process on the process's chdb
directory (tests/unit/query/clickhouse_store.py). The ``clickhouse://`` server path cannot run
here (no ClickHouse server installs on this machine); its error handling up to the connection is
what is tested.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
from pathlib import Path

import pytest

from otelbench.benchmark import CLIENT_TELEMETRY_FILE
from otelbench.collector import Receiver
from otelbench.store import METRICS_NOT_STORED, ClickHouseSpanWriter
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer
from tests.unit.query.clickhouse_store import chdb_dir, new_database

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


_TRACES = {
    "resourceSpans": [
        {
            "resource": {"attributes": [_attr("service.name", "svc")]},
            "scopeSpans": [
                {
                    "scope": {"name": "s"},
                    "spans": [
                        {
                            "traceId": "0af7651916cd43dd8448eb211c80319c",
                            "spanId": f"b7ad6b716920333{i}",
                            "name": "op",
                            "kind": 3,
                            "startTimeUnixNano": "1700000000000000007",
                            "endTimeUnixNano": "1700000000500000007",
                            "attributes": [{"key": "n", "value": {"intValue": str(i)}}],
                        }
                        for i in range(3)
                    ],
                }
            ],
        }
    ]
}

_METRICS = {
    "resourceMetrics": [
        {
            "resource": {"attributes": [_attr("service.name", "svc")]},
            "scopeMetrics": [
                {
                    "scope": {"name": "s"},
                    "metrics": [
                        {
                            "name": "g",
                            "gauge": {
                                "dataPoints": [
                                    {"timeUnixNano": "1700000000000000000", "asDouble": 1.5},
                                    {"timeUnixNano": "1700000000000000001", "asInt": "2"},
                                ]
                            },
                        }
                    ],
                }
            ],
        }
    ]
}


def post_json(port: int, path: str, doc: object) -> tuple[int, dict[str, object]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = json.dumps(doc).encode()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def test_the_receiver_writes_spans_into_chdb_and_rejects_metric_points_visibly() -> None:
    url = f"chdb://{chdb_dir()}?database={new_database()}"
    with ClickHouseSpanWriter.open(url) as writer, Receiver(writer, port=0) as receiver:
        status, reply = post_json(receiver.port, "/v1/traces", _TRACES)
        assert (status, reply) == (200, {})
        status, reply = post_json(receiver.port, "/v1/metrics", _METRICS)
        assert status == 200
        assert reply == {
            "partialSuccess": {"rejectedDataPoints": "2", "errorMessage": METRICS_NOT_STORED}
        }
        assert writer.span_count() == 3
        assert writer.metric_points_not_stored == 2
        assert receiver.writer is writer
    stats = receiver.stats()
    assert (stats.spans_accepted, stats.metric_points_accepted) == (3, 0)
    assert stats.metric_points_rejected == 2
    assert stats.spans_by_service == {"svc": 3}
    assert stats.store_memory_bytes is None  # DuckDB's buffer manager only


@pytest.fixture(scope="module")
def chdb_run(scripted_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("chdb-run")
    script = {"script": {"name": "irregular", "tag": "chdb-run"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "20",
        "--rate", "40", "--seed", "5", "--vocab-size", "1024", "--out", str(out / "run"),
        "--extra-body", json.dumps(script), "--span-wait", "0",
        "--warmup-requests", "4", "--warmup-tokens", "0", "--store", f"chdb://{out / 'ch'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return out


def test_run_writes_and_reports_from_a_chdb_store(chdb_run: Path) -> None:
    run = chdb_run / "run"
    assert not (run / "spans.duckdb").exists()
    assert (chdb_run / "ch" / "metadata").is_dir()  # a real ClickHouse data directory
    assert json.loads((run / "run.json").read_text())["store"] == f"chdb://{chdb_run / 'ch'}"
    report = json.loads((run / "report.json").read_text())
    assert report["run"]["requests"]["succeeded"] == 20
    assert report["metrics"]["client"]["ttft_ms"]["count"] == 20
    assert report["metrics"]["client"]["itl_ms"]["count"] == 20 * 15


def test_report_command_recomputes_the_run_report_from_chdb(chdb_run: Path) -> None:
    """Byte for byte, the run's client-export counts included: those live in the run
    directory, not in the store (``otelbench.benchmark.client_telemetry``; on a busy machine
    the chdb collector can start after the first spans, which are then spooled), so the
    recomputation's directory gets the run's record as a copied run directory would."""
    again = chdb_run / "again"
    again.mkdir()
    telemetry = chdb_run / "run" / CLIENT_TELEMETRY_FILE
    if telemetry.exists():
        shutil.copy(telemetry, again / CLIENT_TELEMETRY_FILE)
    proc = otelbench("report", str(again), "--store", f"chdb://{chdb_run / 'ch'}")
    assert proc.returncode == 0, proc.stderr
    assert (again / "report.json").read_bytes() == (chdb_run / "run" / "report.json").read_bytes()


def test_a_procedure_writes_and_reports_from_a_chdb_store(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    out, store = tmp_path / "proc", f"chdb://{tmp_path / 'ch'}"
    proc = otelbench(
        "test", "ttft", "--target", scripted_server.url, "--model", "m", "--profile", "quick",
        "--requests", "10", "--rate", "20", "--vocab-size", "512", "--span-wait", "0",
        "--cold-start", "--out", str(out), "--store", store,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "procedure.json").read_text())
    assert result["store"] == store
    assert [r["report"] for r in result["runs"]] == ["levels/01/report.json"]
    assert not (out / "spans.duckdb").exists()
    level = json.loads((out / "levels" / "01" / "report.json").read_text())
    assert level["metrics"]["client"]["ttft_ms"]["count"] == 10
    run_id = level["run"]["id"]
    again = otelbench("report", str(tmp_path / "again"), "--store", store, "--run-id", run_id)
    assert again.returncode == 0, again.stderr
    recomputed = json.loads((tmp_path / "again" / "report.json").read_text())
    assert recomputed["metrics"] == level["metrics"]


def test_an_external_collector_with_an_unreachable_clickhouse_is_one_line_without_password(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    store = f"clickhouse://bench:s3cret@127.0.0.1:{free_port()}/otel"
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "2", "--rate", "10",
        "--cold-start", "--out", str(tmp_path / "run"), "--otlp-endpoint", "http://127.0.0.1:9",
        "--store", store,
    )  # fmt: skip
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("otelbench: error:")]
    assert len(errors) == 1
    assert errors[0].startswith("otelbench: error: cannot connect to ClickHouse at clickhouse://")
    assert "s3cret" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "report.json").exists()


def test_a_procedure_with_an_external_collector_needs_a_clickhouse_server_store(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    proc = otelbench(
        "test", "ttft", "--target", scripted_server.url, "--model", "m", "--profile", "quick",
        "--rate", "5", "--out", str(tmp_path / "proc"), "--otlp-endpoint", "http://127.0.0.1:9",
        "--store", str(tmp_path / "spans.duckdb"),
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "otelbench: error: --otlp-endpoint needs --store clickhouse://… (a ClickHouse server "
        "that collector writes): the procedure reads its store while that collector runs"
    )
