"""Fixtures for tests against a real vLLM engine on CPU (``pytest -m vllm``).

- ``vllm_env`` (session; set up for every test marked ``vllm``): runs ``scripts/vllm/setup.sh``,
  which is idempotent and takes a fraction of a second once the venv and tiny model exist (about
  4 min from nothing). These tests never skip for a missing environment: setup is run, or the
  session fails with setup's own output.
- ``otlp_receiver`` (session): otelbench's embedded OTLP/HTTP receiver
  (``otelbench.collector.Receiver``) on a loopback port, writing a DuckDB span store that the
  tests query while it runs.
- ``vllm_server`` (session): ONE real vLLM for the whole session, its tracer pointed at
  ``otlp_receiver``, exporting every 200 ms. Tests share it, so keep requests few and short.
- ``hooks_server`` (session, once per release asked for by ``--vllm-versions``: ``hooks_version``):
  a vLLM with otelbench's engine hooks enabled and a tiny KV cache (preemption on demand), also
  tracing to ``otlp_receiver``; shared by test_engine_hooks.py and test_openai_sdk_vllm.py.
- ``vllm_measurements`` (session): a dict the tests fill with what they measured (start-up
  time, RSS, TTFT, tok/s); printed in the terminal summary.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.sut import VllmCpuServer, VllmEnv
from tests.conftest import hook_test_versions

REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "vllm" / "setup.sh"


# ----------------------------------------------------------------------------------------------
# Measurements (printed at the end of the session: start-up time, RSS, TTFT, tok/s)
# ----------------------------------------------------------------------------------------------
_MEASUREMENTS: dict[str, Any] = {}


@pytest.fixture(scope="session")
def vllm_measurements() -> dict[str, Any]:
    """Numbers the tests measured on the real engine, printed in the terminal summary."""
    return _MEASUREMENTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _MEASUREMENTS:
        terminalreporter.section("vLLM on CPU: measured in this session")
        for key, value in _MEASUREMENTS.items():
            terminalreporter.line(f"{key}: {json.dumps(value)}")


# ----------------------------------------------------------------------------------------------
# vLLM environment
# ----------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _vllm_env_for_vllm_tests(request: pytest.FixtureRequest) -> None:
    """Every test marked ``vllm`` gets the environment set up first (see ``vllm_env``)."""
    if request.node.get_closest_marker("vllm") is not None:
        request.getfixturevalue("vllm_env")


def set_up_vllm(version: str | None = None) -> VllmEnv:
    """Run ``scripts/vllm/setup.sh [VERSION]`` (idempotent; a fraction of a second once done)
    and return that release's environment; fail the test with setup's output if it fails."""
    proc = subprocess.run(
        ["bash", str(SETUP_SCRIPT), *([version] if version else [])],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/vllm/setup.sh {version or ''} failed (exit {proc.returncode}); its output:\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    env = VllmEnv.for_version(version) if version else VllmEnv.default()
    if not env.ready:
        pytest.fail(f"setup.sh finished but: {'; '.join(env.problems())}", pytrace=False)
    return env


@pytest.fixture(scope="session")
def vllm_env() -> VllmEnv:
    """The vLLM venv and tiny model, set up (or brought up to date) by scripts/vllm/setup.sh."""
    return set_up_vllm()


# ----------------------------------------------------------------------------------------------
# The OTLP endpoint: otelbench's own embedded receiver, writing a DuckDB span store
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredSpan:
    """One row of ``otel_traces`` (attribute values are strings there, as the exporter's)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    """As the store spells it: ``semconv.SPAN_KIND_SERVER`` etc."""
    service_name: str
    start_unix_ns: int
    duration_ns: int
    attributes: dict[str, str]
    resource: dict[str, str]
    events: int


_SPAN_COLUMNS = """
    "SpanName", "TraceId", "SpanId", "ParentSpanId", "SpanKind", "ServiceName",
    epoch_ns("Timestamp"), "Duration", "SpanAttributes", "ResourceAttributes", len("Events.Name")
"""


@dataclass
class SpanSink:
    """The embedded receiver on a loopback port; ``endpoint`` is its OTLP/HTTP traces URL."""

    receiver: Receiver
    endpoint: str

    def spans(self, where: str = "true", params: Sequence[object] = ()) -> list[StoredSpan]:
        rows = self.receiver.store.execute(
            f"SELECT {_SPAN_COLUMNS} FROM {semconv.TABLE_TRACES} WHERE {where}", list(params)
        )
        return [
            StoredSpan(
                name=name,
                trace_id=trace_id,
                span_id=span_id,
                parent_span_id=parent_span_id,
                kind=kind,
                service_name=service_name,
                start_unix_ns=int(start_ns),
                duration_ns=int(duration_ns),
                attributes=dict(attributes),
                resource=dict(resource),
                events=int(events),
            )
            for (name, trace_id, span_id, parent_span_id, kind, service_name, start_ns,
                 duration_ns, attributes, resource, events) in rows
        ]  # fmt: skip

    def wait_for_trace(
        self, trace_id: str, count: int = 1, timeout: float = 20.0
    ) -> list[StoredSpan]:
        """The stored spans of ``trace_id``, once there are ``count`` (or whatever is there at
        ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.spans('"TraceId" = ?', [trace_id])
            if len(found) >= count or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)

    def span_names(self) -> list[str]:
        rows = self.receiver.store.execute(
            f'SELECT DISTINCT "SpanName" FROM {semconv.TABLE_TRACES} ORDER BY 1'
        )
        return [r[0] for r in rows]


@pytest.fixture(scope="session")
def otlp_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanSink]:
    store = tmp_path_factory.mktemp("spans") / "vllm-spans.duckdb"
    with Receiver(store, port=0) as receiver:
        yield SpanSink(receiver, f"http://127.0.0.1:{receiver.port}/v1/traces")
        stats = receiver.stats()
    assert stats.rejected == {}, f"the receiver rejected requests: {stats.as_dict()}"


# ----------------------------------------------------------------------------------------------
# The one vLLM server of the session
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def vllm_server(
    vllm_env: VllmEnv,
    otlp_receiver: SpanSink,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[VllmCpuServer]:
    """A real vLLM serving the tiny model as ``tiny``, tracing to ``otlp_receiver``."""
    server = VllmCpuServer(
        model_dir=vllm_env.model_dir,
        venv=vllm_env.venv,
        otlp_traces_endpoint=otlp_receiver.endpoint,
        env={"OTEL_BSP_SCHEDULE_DELAY": "200"},
        log_path=tmp_path_factory.mktemp("vllm") / "vllm.log",
    )
    server.start(timeout=240)
    try:
        # One short request first: the first forward pass of a new shape is slow (oneDNN
        # primitives are created then), and it should not land in the tests' measurements.
        with httpx.Client(base_url=server.base_url, timeout=60.0, trust_env=False) as client:
            warm_up = {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 4, "ignore_eos": True}
            client.post("/v1/completions", json=warm_up).raise_for_status()
        yield server
    finally:
        server.stop()
        leftovers = server.processes()
        assert not leftovers, f"vLLM processes left after stop(): {leftovers}"


# ----------------------------------------------------------------------------------------------
# The hooks-enabled vLLM of the session, once per release asked for (--vllm-versions)
# ----------------------------------------------------------------------------------------------
HOOKS_MODEL = "tiny"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The tests on ``hooks_server`` run once per release asked for (``--vllm-versions``)."""
    if "hooks_version" in metafunc.fixturenames:
        versions = hook_test_versions(metafunc.config)
        metafunc.parametrize("hooks_version", versions, ids=versions, scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on ``hooks_server`` run last (in their order), so that the last release's
    server, which a session fixture keeps until the session ends, is not left running beside
    the servers that other tests start."""
    items.sort(key=lambda item: "hooks_server" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def hooks_server(
    hooks_version: str, otlp_receiver: SpanSink, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmCpuServer]:
    """vLLM ``hooks_version`` with the hooks enabled and a KV cache of 10 × 32 tokens
    (preemption on demand); vLLM's own tracer is on (``--otlp-traces-endpoint``), without which
    no release passes the client's ``traceparent`` to the engine."""
    env = set_up_vllm(hooks_version)
    server = VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        max_model_len=256,
        extra_args=("--block-size", "32", "--num-gpu-blocks-override", "10"),
        otlp_traces_endpoint=otlp_receiver.endpoint,
        hooks=True,
        env={"OTEL_BSP_SCHEDULE_DELAY": "200"},
        log_path=tmp_path_factory.mktemp(f"vllm-hooks-{hooks_version}") / "vllm.log",
    )
    server.start(timeout=240)
    try:
        with httpx.Client(base_url=server.base_url, timeout=60.0, trust_env=False) as client:
            warm_up = {
                "model": HOOKS_MODEL,
                "prompt": [5, 6, 7, 8],
                "max_tokens": 4,
                "ignore_eos": True,
            }
            client.post("/v1/completions", json=warm_up).raise_for_status()
        yield server
    finally:
        server.stop()
        leftovers = server.processes()
        assert not leftovers, f"vLLM processes left after stop(): {leftovers}"
