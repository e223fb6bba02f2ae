"""`otelbench run` and `otelbench report` end to end against the scripted SSE server.

Real parts only: the CLI in a child process, the embedded collector in its own child process,
the scripted server (tests/fixtures/scripted_server.py) in a third, and the DuckDB file they
leave behind, read here directly with SQL.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from otelbench import semconv
from tests.fixtures.cli import otelbench
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = pytest.mark.timing


def client_spans(store: Path, phase: str | None = semconv.PHASE_MEASURE) -> list[dict[str, Any]]:
    """The client spans of the store (of one request phase; None: all), in submit order."""
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            """SELECT "TraceId", "SpanId", "SpanAttributes", "StatusCode" FROM otel_traces
               WHERE "SpanKind" = ? ORDER BY "Timestamp" """,
            [semconv.SPAN_KIND_CLIENT],
        ).fetchall()
    spans = [{"trace_id": r[0], "span_id": r[1], "attrs": dict(r[2]), "status": r[3]} for r in rows]
    return [s for s in spans if phase is None or s["attrs"].get(semconv.REQUEST_PHASE) == phase]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def poisson_run(scripted_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("poisson")
    script = {"script": {"name": "irregular", "tag": "pipeline-poisson"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "40",
        "--rate", "40", "--seed", "3", "--vocab-size", "1024", "--out", str(out),
        "--extra-body", json.dumps(script), "--span-wait", "0",
        "--warmup-requests", "8", "--warmup-tokens", "0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return out


def test_run_writes_store_and_reports(poisson_run: Path) -> None:
    assert (poisson_run / "spans.duckdb").exists()
    report = json.loads((poisson_run / "report.json").read_text())
    assert report["run"]["requests"] == {
        "total": 40,
        "succeeded": 40,
        "failed": 0,
        "failed_by_type": {},
    }
    assert report["run"]["seed"] == 3
    assert report["run"]["workload"]["name"] == "synthetic-uniform"
    assert report["run"]["workload"]["spec"]["input"]["vocab_size"] == 1024
    assert report["run"]["load"]["mode"] == "poisson"
    assert report["run"]["load"]["rate"] == 40
    assert report["metrics"]["client"]["ttft_ms"]["count"] == 40
    # 16 chunks per request, one token each: 15 intervals per request.
    assert report["metrics"]["client"]["itl_ms"]["count"] == 40 * 15
    assert "server" not in report["metrics"] or report["metrics"]["server"] is None
    markdown = (poisson_run / "report.md").read_text()
    assert "TTFT P99" in markdown
    page = (poisson_run / "report.html").read_text()
    assert page.count(' data-plot="') == 10  # every plot, drawn or marked not measured
    assert "<script src=" not in page  # self-contained: no external script
    assert "<link " not in page  # ... nor stylesheet


def test_warmup_requests_are_sent_traced_and_left_out_of_the_report(poisson_run: Path) -> None:
    """Draft 4.5 through the CLI: 8 warm-up requests and 5 probes before and after, each span
    marked with its phase; the report counts the 40 measured requests only."""
    phases = Counter(
        s["attrs"][semconv.REQUEST_PHASE] for s in client_spans(poisson_run / "spans.duckdb", None)
    )
    assert phases == {semconv.PHASE_MEASURE: 40, semconv.PHASE_WARMUP: 8, semconv.PHASE_PROBE: 10}
    measured = client_spans(poisson_run / "spans.duckdb")
    warmup = client_spans(poisson_run / "spans.duckdb", semconv.PHASE_WARMUP)
    first_measured = min(int(s["attrs"][semconv.CLIENT_SUBMIT_MONO_NS]) for s in measured)
    assert all(int(s["attrs"][semconv.CLIENT_SUBMIT_MONO_NS]) < first_measured for s in warmup)
    manifest = json.loads((poisson_run / "run.json").read_text())
    assert manifest["warmup"]["min_requests"] == 8


def test_stored_ttft_and_itl_match_the_servers_actual_send_times(
    poisson_run: Path, scripted_server: ScriptedServer
) -> None:
    """The whole pipeline (client → OTLP → collector → DuckDB) keeps the client's timing:
    stored offsets match the fixture's actual send times within 1 ms (draft 4.2.1)."""
    spans = client_spans(poisson_run / "spans.duckdb")
    assert len(spans) == 40
    errors: list[int] = []
    for span in spans:
        attrs = span["attrs"]
        entry = scripted_server.entry(attrs[semconv.GEN_AI_RESPONSE_ID])
        submit = int(attrs[semconv.CLIENT_SUBMIT_MONO_NS])
        # The fixture's t_before_ns: it began writing the event's last byte then; nothing can
        # arrive earlier, and a late arrival is the client's (or the kernel's) delay.
        sent = [(e[4] - submit) // 1000 for e in entry["events"] if e[0] == "content"]
        offsets = json.loads(attrs[semconv.CLIENT_CHUNK_OFFSETS_US])
        assert len(offsets) == len(sent) == 16
        assert int(attrs[semconv.CLIENT_TTFT_US]) == offsets[0]
        errors += [o - s for o, s in zip(offsets, sent, strict=True)]
    errors.sort()
    assert errors[0] >= -1, "a chunk cannot arrive before it was sent"
    median, p99 = errors[len(errors) // 2], errors[int(len(errors) * 0.99)]
    # The strict every-sample bound is test_client_fidelity's; here the pipeline must keep the
    # client's numbers: typical error well under 1 ms after storage and extraction.
    assert median < 1000, f"median arrival error {median} µs (p99 {p99}, worst {errors[-1]})"
    assert p99 < 5000, f"p99 arrival error {p99} µs (worst {errors[-1]})"


def test_report_command_recomputes_identical_reports(poisson_run: Path, tmp_path: Path) -> None:
    before = (poisson_run / "report.json").read_text()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "spans.duckdb").write_bytes((poisson_run / "spans.duckdb").read_bytes())
    proc = otelbench("report", str(copy))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((copy / "report.json").read_text()) == json.loads(before)
    assert (copy / "report.md").read_text() == (poisson_run / "report.md").read_text()


def test_open_loop_never_waits_for_slow_responses(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """Draft 4.2.5: every response takes 1.5 s, the schedule lasts about 0.5 s; the sends keep
    to the schedule anyway (schedule lag stays small), so all requests are in flight at once."""
    script = {"script": {"name": "fixed", "ttft_ms": 1500, "n": 2, "tag": "pipeline-slow"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "20",
        "--rate", "40", "--arrival", "uniform", "--vocab-size", "1024", "--out", str(tmp_path),
        "--extra-body", json.dumps(script), "--span-wait", "0", "--cold-start",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    entries = scripted_server.log(tag="pipeline-slow")
    assert len(entries) == 20
    received = sorted(e["t_recv_ns"] for e in entries)
    first_content = min(e["events"][0][2] for e in entries)
    assert received[-1] < first_content, "a send waited for a response"
    lags = [
        int(s["attrs"][semconv.REQUEST_SCHEDULE_LAG_US])
        for s in client_spans(tmp_path / "spans.duckdb")
    ]
    assert len(lags) == 20
    assert max(lags) < 50_000, f"schedule lag up to {max(lags)} µs"
    scheduled = sorted(
        int(s["attrs"][semconv.REQUEST_SCHEDULED_OFFSET_US])
        for s in client_spans(tmp_path / "spans.duckdb")
    )
    assert scheduled == [i * 25_000 for i in range(20)]  # uniform at 40/s: every 25 ms


def test_closed_loop_keeps_concurrency(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    script = {"script": {"name": "fixed", "ttft_ms": 100, "n": 2, "tag": "pipeline-closed"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "12",
        "--concurrency", "3", "--vocab-size", "1024", "--out", str(tmp_path),
        "--extra-body", json.dumps(script), "--span-wait", "0", "--cold-start",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    entries = scripted_server.log(tag="pipeline-closed")
    assert len(entries) == 12
    intervals = [(e["t_recv_ns"], e["events"][-1][2]) for e in entries]
    peak = max(sum(1 for s, e in intervals if s <= t < e) for t, _ in intervals)
    assert peak == 3
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run"]["load"]["mode"] == "closed_loop"
    assert report["run"]["load"]["concurrency"] == 3


def test_failed_requests_are_counted_and_reported(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    script = {"script": {"name": "error_500", "tag": "pipeline-500"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "5",
        "--rate", "50", "--vocab-size", "1024", "--out", str(tmp_path),
        "--extra-body", json.dumps(script), "--span-wait", "0", "--cold-start",
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "otelbench: error: all 5 requests failed (500)"
    assert "Traceback" not in proc.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run"]["requests"]["failed"] == 5
    assert report["run"]["requests"]["failed_by_type"] == {"500": 5}
    assert report["metrics"]["client"]["ttft_ms"]["count"] == 0


def test_cut_streams_fail_with_stream_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    script = {"script": {"name": "cut", "tag": "pipeline-cut"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "4",
        "--rate", "50", "--vocab-size", "1024", "--out", str(tmp_path),
        "--extra-body", json.dumps(script), "--span-wait", "0", "--cold-start",
    )  # fmt: skip
    assert proc.returncode == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run"]["requests"]["failed_by_type"] == {"stream_error": 4}
    spans = client_spans(tmp_path / "spans.duckdb")
    assert {s["status"] for s in spans} == {semconv.STATUS_ERROR}
    # What arrived before the cut is kept: three content chunks per request.
    assert all(len(json.loads(s["attrs"][semconv.CLIENT_CHUNK_OFFSETS_US])) == 3 for s in spans)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "http://127.0.0.1:{port}"], "cannot reach target http://127.0.0.1:{port}"),
        (["--target", "ftp://example"], "target must be an http(s) URL"),
        (["--target", "http://127.0.0.1:{port}", "--workload", "nope"], "unknown workload 'nope'"),
        (["--target", "http://127.0.0.1:{port}", "--extra-body", "[1"], "--extra-body is not"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(args: list[str], message: str, tmp_path: Path) -> None:
    port = free_port()
    args = [a.format(port=port) for a in args]
    proc = otelbench(
        "run", "--model", "m", "--requests", "3", "--rate", "5", "--out", str(tmp_path), *args
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("otelbench: error: " + message.format(port=port)), lines
    assert "Traceback" not in proc.stderr


def test_a_collector_that_cannot_start_stops_the_run_with_its_reason(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """The load does not wait for the embedded collector's start-up; when the collector then
    fails (here its store is not a DuckDB file), the run stops early with the collector's own
    reason and says where the spans it had exported are kept."""
    store = tmp_path / "not-ours.duckdb"
    store.write_bytes(b"this is not a duckdb file at all" * 100)
    script = {"script": {"n": 2, "ttft_ms": 1, "itl_ms": 1, "tag": "pipeline-no-collector"}}
    proc = otelbench(
        "run", "--target", scripted_server.url, "--model", "m", "--requests", "400",
        "--rate", "20", "--vocab-size", "1024", "--out", str(tmp_path / "out"),
        "--store", str(store), "--extra-body", json.dumps(script), "--cold-start",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("otelbench: error: the embedded collector did not start: "), last
    assert "not a DuckDB database" in last
    assert f"spool {tmp_path / 'out' / 'spool'}" in last
    assert "Traceback" not in proc.stderr
    # the schedule (400 requests over 20 s) was cut short, not sent to no collector
    assert len(scripted_server.log(tag="pipeline-no-collector")) < 400


def test_usage_error_exits_2_without_a_traceback(tmp_path: Path) -> None:
    proc = otelbench("run", "--model", "m", "--out", str(tmp_path), "--target", "http://x")
    assert proc.returncode == 2, proc.stderr
    assert "give --rate (open loop) or --concurrency (closed loop)" in proc.stderr
    assert "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_on_a_store_that_is_not_ours(tmp_path: Path) -> None:
    (tmp_path / "spans.duckdb").write_bytes(b"this is not a duckdb file at all" * 100)
    proc = otelbench("report", str(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.startswith("otelbench: error: ")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_report_on_a_missing_store(tmp_path: Path) -> None:
    proc = otelbench("report", str(tmp_path / "nothing"))
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == f"otelbench: error: no span store at {tmp_path / 'nothing' / 'spans.duckdb'}"
    )
