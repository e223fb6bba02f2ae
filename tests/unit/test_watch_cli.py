"""The ``watch`` and ``probe`` typer commands: every bad input is one OtelbenchError."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from otelbench import semconv
from otelbench.cli.live import probe, watch
from otelbench.errors import ConfigError, OtelbenchError, StoreError


def invoke(command: object, args: list[str]) -> BaseException | None:
    app = typer.Typer()
    app.command()(command)  # type: ignore[arg-type]
    app.command("noop")(lambda: None)  # two commands: the name is the first argument
    name = "watch" if command is watch else "probe"
    result = CliRunner().invoke(app, [name, *args])
    return result.exception


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (["--window", "5 minutes"], ConfigError, "bad duration '5 minutes'"),
        (["--listen", "9464"], ConfigError, "bad address '9464'"),
        (["--retention", "1h"], ConfigError, "--retention deletes spans"),
        (["--retention", "1m", "--otlp", "127.0.0.1:0"], ConfigError, "at least the --window"),
        (["--slo-ttft-ms", "-5"], ConfigError, "slo_ttft_s must be > 0"),
        ([], StoreError, "no span store at"),
    ],
)
def test_watch_refuses_bad_input(
    tmp_path: Path, args: list[str], error: type[OtelbenchError], message: str
) -> None:
    exc = invoke(watch, ["--store", str(tmp_path / "missing.duckdb"), *args])
    assert isinstance(exc, error)
    assert message in str(exc)


def test_probe_needs_an_otlp_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(semconv.ENV_OTLP_ENDPOINT, raising=False)
    exc = invoke(probe, ["--target", "http://127.0.0.1:9", "--model", "m"])
    assert isinstance(exc, ConfigError)
    assert "--otlp-endpoint" in str(exc)


def test_probe_refuses_a_zero_rate() -> None:
    args = ["--target", "http://127.0.0.1:9", "--model", "m", "--rate", "0"]
    exc = invoke(probe, [*args, "--otlp-endpoint", "http://127.0.0.1:9"])
    assert isinstance(exc, ConfigError)
    assert "--rate must be > 0" in str(exc)


def test_the_docs_list_every_live_metric() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "live.md").read_text(encoding="utf-8")
    names = {v for k, v in vars(semconv).items() if k.startswith("METRIC_LIVE_")}
    assert len(names) == 32
    for name in names:
        assert f"| `{name}` |" in doc, name


@pytest.mark.parametrize(
    ("store", "args", "error", "message"),
    [
        ("chdb:///x", ["--otlp", "127.0.0.1:0"], ConfigError, "--otlp runs a receiver"),
        ("clickhouse://127.0.0.1:9/otel", ["--retention", "24h"], ConfigError, "MODIFY TTL"),
        ("chdb://", [], ConfigError, "bad chdb store URL"),
        ("ftp://h/x", [], ConfigError, "unknown store URL scheme ftp://"),
        ("chdb:///nonexistent/otelbench-ch", [], StoreError, "no chdb store at"),
        ("clickhouse://u:secret@127.0.0.1:1/otel", [], StoreError, "127.0.0.1:1"),
    ],
)
def test_watch_refuses_a_clickhouse_store_it_cannot_read(
    store: str, args: list[str], error: type[OtelbenchError], message: str
) -> None:
    """A ClickHouse store is only read (no --otlp, no --retention: the table's TTL expires
    spans), and a wrong URL or an unreachable store is one error at start."""
    exc = invoke(watch, ["--store", store, "--listen", "127.0.0.1:0", *args])
    assert isinstance(exc, error)
    assert message in str(exc)
    assert "secret" not in str(exc)
