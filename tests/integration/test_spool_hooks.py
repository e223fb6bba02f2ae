"""The hooks' span spool (``OTELBENCH_SPOOL_DIR``): wired from the environment, counted in
``HookStats`` and on the hooks' meter as ``otelbench.hook.spans.dropped``, replayed to a real
receiver once it listens."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otelbench import semconv
from otelbench.collector import Receiver

HOOKS_SRC = Path(__file__).resolve().parents[2] / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:  # the hooks' package, from the source tree
    sys.path.insert(0, str(HOOKS_SRC))

from otelbench_vllm.export import (  # noqa: E402 - importable once HOOKS_SRC is on sys.path
    SPOOL_SLOT_PREFIX,
    make_tracer_provider,
    metrics_destinations,
    prometheus_reader_available,
)
from otelbench_vllm.hook import HookStats  # noqa: E402
from otelbench_vllm.metrics import HookMetrics  # noqa: E402

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dropped_metric(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == semconv.METRIC_HOOK_SPANS_DROPPED:
                    return int(metric.data.data_points[0].value)  # type: ignore[union-attr]
    raise AssertionError("no dropped-spans metric")


def test_spool_from_env_counts_spooled_dropped_and_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}/v1/traces")
    monkeypatch.setenv(semconv.ENV_SPOOL_DIR, str(tmp_path / "spool"))
    monkeypatch.setenv(semconv.ENV_SPOOL_MAX_BYTES, "1500")
    stats = HookStats()
    reader = InMemoryMetricReader()
    HookMetrics(MeterProvider(metric_readers=[reader]), stats)
    provider = make_tracer_provider(stats)
    tracer = provider.get_tracer("t")
    for batch in range(6):  # nothing listens: batches are spooled until the bound
        for i in range(5):
            tracer.start_span(f"s{batch}-{i}").end()
            stats.add("spans_ended")
        provider.force_flush()
    assert stats.spans_spooled > 0
    assert stats.spans_dropped > 0
    assert stats.spans_spooled + stats.spans_dropped == 30
    assert stats.spans_exported == stats.spans_spooled  # delivered or spooled
    assert stats.spans_export_failed == stats.spans_dropped
    assert stats.spans_unaccounted == 0
    assert dropped_metric(reader) == stats.spans_dropped

    with Receiver(tmp_path / "spans.duckdb", port=port) as receiver:
        deadline = time.monotonic() + 10
        while stats.spans_replayed < stats.spans_spooled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert receiver.stats().spans_accepted == stats.spans_spooled
    provider.shutdown()
    assert stats.spans_replayed == stats.spans_spooled
    assert stats.as_dict()["spans_dropped"] == stats.spans_dropped


def test_an_unusable_spool_directory_falls_back_to_plain_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(semconv.ENV_SPOOL_DIR, str(blocker / "spool"))
    stats = HookStats()
    provider = make_tracer_provider(stats)
    assert "no span spool in" in caplog.text
    provider.shutdown()


def test_each_process_of_several_api_servers_spools_to_a_slot_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two providers stand for two API server processes (the spool's lock is an ``flock`` on an
    open file description, so two spools in one process exclude each other as two processes do):
    each takes its own ``api-server-N`` slot; once the first stops, its slot is taken again and
    what it left there is replayed."""
    port = free_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}/v1/traces")
    monkeypatch.setenv(semconv.ENV_SPOOL_DIR, str(tmp_path / "spool"))
    first, second = HookStats(), HookStats()
    providers = [make_tracer_provider(first), make_tracer_provider(second)]
    for n, provider in enumerate(providers, start=1):
        for i in range(n):
            provider.get_tracer("t").start_span(f"p{n}-{i}").end()
        provider.force_flush()
    slots = sorted(p.name for p in (tmp_path / "spool").iterdir())
    assert slots == [f"{SPOOL_SLOT_PREFIX}0", f"{SPOOL_SLOT_PREFIX}1"]
    for slot in slots:
        assert list((tmp_path / "spool" / slot).glob("segment-*.otlp")), slot
    assert (first.spans_spooled, second.spans_spooled) == (1, 2)
    providers[0].shutdown()  # the first API server stops; its slot keeps its span

    again = HookStats()
    with Receiver(tmp_path / "spans.duckdb", port=port) as receiver:
        restarted = make_tracer_provider(again)  # takes slot 0 and replays it
        deadline = time.monotonic() + 10
        while receiver.stats().spans_accepted < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert receiver.stats().spans_accepted == 3
        restarted.shutdown()
        providers[1].shutdown()
    assert again.spans_replayed == 1
    assert second.spans_replayed == 2


@pytest.mark.parametrize(
    ("multiprocess", "otlp", "expected"),
    [(False, False, "prometheus"), (False, True, "prometheus+otlp"), (True, True, "otlp"),
     (True, False, "none")],
)  # fmt: skip
def test_the_hook_info_says_where_the_metrics_go(
    monkeypatch: pytest.MonkeyPatch, multiprocess: bool, otlp: bool, expected: str
) -> None:
    """``otelbench_hook_info{metrics=...}``: Prometheus only with one API server and the
    Prometheus reader's package installed (it is not in otelbench's own env, so "prometheus"
    drops out here), OTLP only with an endpoint."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", raising=False)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    if multiprocess:
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/tmp/prometheus-multiproc")
    if otlp:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:1/v1/metrics")
    if not prometheus_reader_available():
        expected = "+".join(p for p in expected.split("+") if p != "prometheus") or "none"
    assert metrics_destinations() == expected
