"""``otelbench dashboards push`` against a recording fake of Grafana's HTTP API.

A fake only because the real thing cannot be had: Grafana cannot be installed on this machine
(not in apt; the PyPI and npm ``grafana`` packages are empty placeholders). The fake is a real
loopback HTTP server (port 0) that records every request grafana-client sends and answers as
Grafana's API documents (404 for an unknown datasource or folder, 200 with a small JSON body
otherwise). The tests assert the requests' methods, paths, auth header and payloads; they cannot
show that a real Grafana accepts the dashboards or renders them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from otelbench.cli.dashboards import dashboards_app
from otelbench.dashboards import names
from otelbench.dashboards.push import (
    GrafanaPushError,
    PushConfig,
    push_dashboards,
)
from otelbench.errors import ConfigError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
JSON_DIR = REPO / "dashboards" / "json"
TOKEN = "glsa_test-token"


class FakeGrafana:
    """Records (method, path, Authorization, JSON body); ``existing`` datasource / folder UIDs
    answer 200 to GET, others 404; ``fail_status`` makes every request fail with it."""

    def __init__(self, existing: set[str], fail_status: int | None = None) -> None:
        self.calls: list[tuple[str, str, str | None, Any]] = []
        self.existing = existing
        self.fail_status = fail_status
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                fake.calls.append((self.command, self.path, self.headers["Authorization"], body))
                status, answer = fake.answer(self.command, self.path)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        if self.fail_status is not None:
            return self.fail_status, {"message": "invalid API key"}
        if method == "GET":
            uid = path.rsplit("/", 1)[1]
            if uid in self.existing:
                return 200, {"uid": uid}
            return 404, {"message": "not found"}
        return 200, {"status": "success", "uid": "x", "id": 1}


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    fake = FakeGrafana(existing={names.DATASOURCE_PROMETHEUS})
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


def test_push_provisions_datasources_folder_and_dashboards(grafana: FakeGrafana) -> None:
    result = push_dashboards(
        PushConfig(
            grafana_url=grafana.url,
            token=TOKEN,
            dashboards_dir=JSON_DIR,
            prometheus_url="http://prom:9090",
            clickhouse_host="ch",
            tempo_url="http://tempo:3200",
        )
    )
    assert {auth for _, _, auth, _ in grafana.calls} == {f"Bearer {TOKEN}"}
    assert [(m, p) for m, p, _, _ in grafana.calls] == [
        ("GET", "/api/datasources/uid/otelbench-prometheus"),
        ("PUT", "/api/datasources/uid/otelbench-prometheus"),
        ("GET", "/api/datasources/uid/otelbench-clickhouse"),
        ("POST", "/api/datasources"),
        ("GET", "/api/datasources/uid/otelbench-tempo"),
        ("POST", "/api/datasources"),
        ("GET", "/api/folders/otelbench"),
        ("POST", "/api/folders"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
    ]
    bodies = [body for _, _, _, body in grafana.calls]
    prom, clickhouse, tempo = bodies[1], bodies[3], bodies[5]
    assert (prom["uid"], prom["type"], prom["url"]) == (
        "otelbench-prometheus",
        "prometheus",
        "http://prom:9090",
    )
    assert (clickhouse["uid"], clickhouse["type"]) == (
        "otelbench-clickhouse",
        "grafana-clickhouse-datasource",
    )
    assert clickhouse["jsonData"]["host"] == "ch"
    assert clickhouse["jsonData"]["defaultDatabase"] == "otel"
    assert (tempo["uid"], tempo["type"], tempo["url"]) == (
        "otelbench-tempo",
        "tempo",
        "http://tempo:3200",
    )
    assert bodies[7] == {"title": "otelbench", "uid": "otelbench"}
    pushed = bodies[8:]
    assert [b["dashboard"]["uid"] for b in pushed] == [
        "otelbench-application-clients",
        "otelbench-benchmark-runs",
        "otelbench-request-anatomy",
        "otelbench-serving-overview",
    ]
    for body in pushed:
        assert body["overwrite"] is True
        assert body["folderUid"] == "otelbench"
        assert body["dashboard"]["id"] is None
        committed = json.loads(
            (JSON_DIR / f"{body['dashboard']['uid'].removeprefix('otelbench-')}.json").read_text()
        )
        assert {**committed, "id": None} == body["dashboard"]
        # every query names one of the pushed datasources by UID
        uids = {
            t["datasource"]["uid"]
            for p in body["dashboard"]["panels"]
            for t in p.get("targets", [])
        }
        assert uids <= {names.DATASOURCE_PROMETHEUS, names.DATASOURCE_CLICKHOUSE}
    assert result.datasources_created == ("otelbench-clickhouse", "otelbench-tempo")
    assert result.datasources_updated == ("otelbench-prometheus",)
    assert result.folder_created is True


def test_cli_push_without_datasources(grafana: FakeGrafana) -> None:
    """Registered as otelbench.cli registers it: ``app.add_typer(dashboards_app, name=...)``."""
    grafana.existing.add(names.FOLDER_UID)
    app = typer.Typer()
    app.command("version")(lambda: None)
    app.add_typer(dashboards_app, name="dashboards")
    outcome = CliRunner().invoke(
        app,
        ["dashboards", "push", "--grafana", grafana.url, "--token", TOKEN,
         "--dashboards-dir", str(JSON_DIR), "--no-datasources"],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert "pushed 4 dashboards" in outcome.output
    assert [(m, p) for m, p, _, _ in grafana.calls] == [
        ("GET", "/api/folders/otelbench"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
    ]


def _raw_sql(value: Any) -> list[str]:
    """Every ``rawSql`` string of a dashboard model."""
    if isinstance(value, dict):
        own = [value["rawSql"]] if isinstance(value.get("rawSql"), str) else []
        return own + [sql for v in value.values() for sql in _raw_sql(v)]
    return [sql for v in value for sql in _raw_sql(v)] if isinstance(value, list) else []


def test_cli_push_for_the_exporters_json_schema(grafana: FakeGrafana) -> None:
    """``--traces-schema json``: every ClickHouse query reads the JSON table through the query
    layer's relation (the rows it gives: ``tests/unit/test_dashboards_sql.py``); the rest of
    each dashboard is the committed JSON."""
    grafana.existing.add(names.FOLDER_UID)
    app = typer.Typer()
    app.command("version")(lambda: None)
    app.add_typer(dashboards_app, name="dashboards")
    outcome = CliRunner().invoke(
        app,
        ["dashboards", "push", "--grafana", grafana.url, "--token", TOKEN,
         "--dashboards-dir", str(JSON_DIR), "--no-datasources", "--traces-schema", "json"],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    pushed = [body["dashboard"] for m, _, _, body in grafana.calls if m == "POST"]
    committed = {
        model["uid"]: model
        for model in (json.loads(p.read_text(encoding="utf-8")) for p in JSON_DIR.glob("*.json"))
    }
    assert len(pushed) == len(committed) == 4
    relation = "FROM (SELECT Timestamp, TraceId, SpanId, ParentSpanId, TraceState"
    with_sql = 0
    for model in pushed:
        sqls = _raw_sql(model)
        unread = [q for q in sqls if "FROM otel_traces" in q.replace("FROM otel_traces AS t", "")]
        assert unread == [], model["uid"]  # no query reads the table itself
        assert (_raw_sql(committed[model["uid"]]) != sqls) == bool(sqls)
        with_sql += any(relation in sql for sql in sqls)
        assert {k: v for k, v in model.items() if k not in ("panels", "templating", "id")} == {
            k: v for k, v in committed[model["uid"]].items() if k not in ("panels", "templating")
        }
    assert with_sql == 2  # request anatomy and benchmark runs (serving overview: PromQL only)
    with pytest.raises(ConfigError, match="--traces-schema 'jsonb' is not one of map: "):
        PushConfig(grafana_url=grafana.url, token=TOKEN, traces_schema="jsonb")


def test_refused_token_is_one_line_error() -> None:
    fake = FakeGrafana(existing=set(), fail_status=401)
    fake.thread.start()
    try:
        with pytest.raises(GrafanaPushError) as err:
            push_dashboards(PushConfig(grafana_url=fake.url, token="bad", dashboards_dir=JSON_DIR))
    finally:
        fake.server.shutdown()
        fake.server.server_close()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"Grafana at {fake.url} refused datasource otelbench-prometheus: ")
    assert "HTTP 401" in message


def test_unreachable_grafana_and_bad_input_are_one_line_errors(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(GrafanaPushError, match=r"^cannot reach Grafana at http://127\.0\.0\.1"):
        push_dashboards(
            PushConfig(grafana_url=f"http://127.0.0.1:{port}", token="t", dashboards_dir=JSON_DIR)
        )
    with pytest.raises(ConfigError, match="is not an http"):
        PushConfig(grafana_url="grafana:3000", token="t")
    with pytest.raises(ConfigError, match="no dashboard JSON"):
        push_dashboards(PushConfig(grafana_url="http://g:3000", token="t", dashboards_dir=tmp_path))
