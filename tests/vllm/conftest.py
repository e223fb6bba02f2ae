"""Fixtures for tests against a real vLLM engine on CPU (``pytest tests/vllm`` or ``-m vllm``).

- ``vllm_env`` (session; set up for every test marked ``vllm``): runs ``scripts/vllm/setup.sh``,
  which is idempotent and takes a fraction of a second once the venv and tiny model exist (about
  4 min from nothing). These tests never skip for a missing environment: setup is run, or the
  session fails with setup's own output.
- ``otlp_receiver`` (session): otelbench's embedded OTLP/HTTP receiver
  (``otelbench.collector.Receiver``) on a loopback port kept for the session, writing a DuckDB
  span store that the tests query while it runs. ``otlp_receiver.lent()`` stops it and gives the
  port to a test (a collector of its own there, or nothing: the collector is down), then starts
  it again on the same port and store.
- ``vllm_server`` (session): ONE real vLLM for the whole session, shared by every test that can
  share it: the engine hooks enabled and vLLM's own tracer on, both exporting to
  ``otlp_receiver`` every 200 ms; a 512-token window and a KV cache of 18 blocks of 32 tokens
  (:data:`SHARED_KV_ARGS`: 576 tokens, so that concurrent long requests are preempted while short
  ones fit side by side); otelbench's guardrail middleware in its API server, whose filters name
  only ``tiny-guarded`` and ``tiny-raw`` (:data:`GUARDRAILS_CONFIG`: the same model under names of
  its own), so that requests to ``tiny`` pass it untouched. Keep requests few and short; a test
  that reads the server's log reads what was written since it began (:func:`log_since`). A
  procedure that needs the engine's spans in its own store runs against it with its embedded
  collector on the port ``otlp_receiver`` lends (``--collector-port``).
- ``vllm_measurements`` (session): a dict the tests fill with what they measured (start-up
  time, RSS, TTFT, tok/s); printed in the terminal summary, with the number of vLLM launches the
  session made (:class:`LaunchCounter`: counted from the processes, those of the ``otelbench``
  commands the tests run included) and the test file each began in.
- ``spooling_vllm_server`` (session): the second shared vLLM, configured as ``vllm_server``
  without the guardrail middleware and with the hooks spooling (``OTELBENCH_SPOOL_DIR``), from
  the first release asked for besides the default (0.30.0 by default; the default release when
  none is): the engine-hook tests of that release and the spool test (its collector killed for
  60 s) run on it.

vLLM launches in one run of the tier (default ``--vllm-versions``: 11), and why each is its own:

- ``vllm_server``: 1. On it, besides the tests of the server itself: the engine hooks
  (``test_engine_hooks.py``, the default release), the guardrail middleware
  (``test_guardrails_vllm.py``), the OpenAI SDK, ``otelbench watch`` and the dashboards, and the
  procedures 5.1–5.6, 5.8, 5.9 and fluidity (``test_procedures_vllm*.py``);
- ``spooling_vllm_server``: 1, another release's venv (CI runs the default release and at least
  one older one), and a spool, which the shared server runs without, as ``otelbench run --sut
  vllm-cpu`` launches it: its collector-down test proves that path counts every span it loses.
  A third release asked for gets a launch of its own in ``test_engine_hooks.py``. The hooks
  installed but not enabled are checked without a launch (vLLM's plugin loader in the venv);
- ``test_api_servers.py``: 1 (``--api-server-count 2``: the hooks' metrics then go to OTLP only,
  which the shared servers' tests read on their Prometheus ``/metrics``);
- ``test_prefix_cache_vllm.py`` (5.7) and ``test_guardrail_overhead_vllm.py`` (5.10): 2 each, the
  procedures restart the SUT per configuration by design (5.7.3: each configuration starts
  cold; 5.10: the baseline without the middleware, then with the procedure's own guardrails),
  the fewest configurations each compares;
- ``test_run_e2e.py``: 1, ``otelbench run --sut vllm-cpu``, the README's main job: the command
  launches vLLM pointed at its own embedded collector, which is what it proves;
- ``test_cancelled_requests.py``: 1 per release asked for (2), ``--max-num-seqs 2
  --max-num-batched-tokens 16``: two streams fill the engine so that a third one queues, and a
  long prompt's prefill takes 30 steps, long enough to hang up in it; the shared servers run
  vLLM's defaults, which every other test's timing assumes;
- ``test_speculative_vllm.py``: 1, n-gram speculative decoding (``--speculative-config``), which
  changes every step of every request on the server that runs it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import subprocess
import threading
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
from otelbench.sut.process import free_port
from otelbench.sut.vllm_cpu import CLI_NAME, VLLM_VERSION
from tests.conftest import hook_test_versions

REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "vllm" / "setup.sh"
SHARED_MAX_MODEL_LEN = 512
SHARED_KV_ARGS = ("--block-size", "32", "--num-gpu-blocks-override", "18")
"""The shared servers' KV cache: 18 blocks of 32 tokens (576 tokens, one 512-token request)."""
SHARED_ENV = {"OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "5"}
"""Spans exported every 200 ms; an export that cannot connect gives up within 5 s (the
collector-down test counts the failures)."""
SHARED_MODEL = "tiny"
GUARDED_MODEL = "tiny-guarded"
"""The shared server's model under a name of its own, for which the guardrail middleware runs
an input blocklist and a redacting output filter (:data:`GUARDRAILS_CONFIG`)."""
RAW_MODEL = "tiny-raw"
"""The same model, for which the middleware runs the input blocklist only."""
GUARDED_MODELS = (GUARDED_MODEL, RAW_MODEL)
GUARDRAIL_MIDDLEWARE = "otelbench.guardrails.middleware.GuardrailMiddleware"
GUARDRAILS_CONFIG = f"""
input:
  - type: blocklist
    name: banned
    keywords: [forbidden]
    models: [{GUARDED_MODEL}, {RAW_MODEL}]
output:
  - type: blocklist
    name: letters
    action: redact
    patterns: ['[A-Za-z]']
    replacement: '*'
    models: [{GUARDED_MODEL}]
"""
"""The shared server's guardrails (``$OTELBENCH_GUARDRAILS_CONFIG``): no filter names
``tiny``, so every other test's requests pass the middleware untouched."""


# ----------------------------------------------------------------------------------------------
# Measurements (printed at the end of the session: start-up time, RSS, TTFT, tok/s)
# ----------------------------------------------------------------------------------------------
_MEASUREMENTS: dict[str, Any] = {}


@pytest.fixture(scope="session")
def vllm_measurements() -> dict[str, Any]:
    """Numbers the tests measured on the real engine, printed in the terminal summary."""
    return _MEASUREMENTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _MEASUREMENTS or _LAUNCHES.launches:
        terminalreporter.section("vLLM on CPU: measured in this session")
        for key, value in _MEASUREMENTS.items():
            terminalreporter.line(f"{key}: {json.dumps(value)}")
        terminalreporter.line(_LAUNCHES.summary())


# ----------------------------------------------------------------------------------------------
# vLLM launches of the session, counted from the processes (those of `otelbench` commands that
# the tests run included)
# ----------------------------------------------------------------------------------------------
_CLI = f"/{CLI_NAME}".encode()
"""How ``VllmCpuServer``'s command names vLLM's command line (``PYTHON CLI serve …``)."""


def _proc_table() -> dict[int, tuple[int, int, bool]]:
    """pid → (parent pid, start time in clock ticks since boot, runs ``CLI serve``)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            fields = stat[stat.rindex(")") + 2 :].split()
            ppid, started = int(fields[1]), int(fields[19])
        except (OSError, ValueError, IndexError):  # gone meanwhile (a half-read file)
            continue
        serve = len(argv) > 2 and argv[1].endswith(_CLI) and argv[2] == b"serve"
        table[int(entry.name)] = (ppid, started, serve)
    return table


class LaunchCounter:
    """Polls ``/proc`` twice a second for ``vllm serve`` processes (:data:`_CLI`) descended
    from this pytest process whose parent is not one (a forked worker shares the command line),
    and notes each, once, with the test that was running (a launch lives tens of seconds)."""

    def __init__(self) -> None:
        self.launches: dict[tuple[int, int], str] = {}
        self.current = "(session set-up)"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._poll, name="vllm-launches", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.scan()

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self.scan()

    def scan(self) -> None:
        table = _proc_table()
        me = os.getpid()
        for pid, (ppid, started, serve) in table.items():
            if not serve or table.get(ppid, (0, 0, False))[2]:
                continue
            ancestor = ppid
            while ancestor not in (0, 1, me) and ancestor in table:
                ancestor = table[ancestor][0]
            if ancestor == me:
                self.launches.setdefault((pid, started), self.current)

    def summary(self) -> str:
        by_file = collections.Counter(node.split("::", 1)[0] for node in self.launches.values())
        where = ", ".join(f"{name} {n}" for name, n in sorted(by_file.items()))
        return f"vLLM launches: {len(self.launches)} ({where})"


_LAUNCHES = LaunchCounter()


@pytest.fixture(scope="session", autouse=True)
def _count_vllm_launches() -> Iterator[None]:
    _LAUNCHES.start()
    yield
    _LAUNCHES.stop()


def pytest_runtest_logstart(nodeid: str) -> None:
    _LAUNCHES.current = nodeid


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

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1].split("/", 1)[0])

    @contextlib.contextmanager
    def lent(self) -> Iterator[int]:
        """Stop the receiver and yield its port, free for a collector of the test's own (or for
        nothing: the collector is down); start it again there, on the same store, afterwards."""
        self.wait_quiet()
        self.receiver.stop()
        try:
            yield self.port
        finally:
            self.receiver.start()

    def wait_quiet(self, quiet_s: float = 1.0, timeout: float = 30.0) -> None:
        """Return once no span has arrived for ``quiet_s`` (the servers' exporters, every 200 ms,
        have sent what earlier tests caused), or at ``timeout``."""
        deadline = time.monotonic() + timeout
        count, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = self.receiver.stats().spans_accepted
            if now != count:
                count, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
            time.sleep(0.1)

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
    # a fixed port (not 0): the receiver restarts there after each loan
    with Receiver(store, port=free_port("127.0.0.1")) as receiver:
        yield SpanSink(receiver, f"http://127.0.0.1:{receiver.port}/v1/traces")
        stats = receiver.stats()
    assert stats.rejected == {}, f"the receiver rejected requests: {stats.as_dict()}"


# ----------------------------------------------------------------------------------------------
# The shared vLLM server of the session
# ----------------------------------------------------------------------------------------------
def shared_vllm(
    env: VllmEnv,
    sink: SpanSink,
    log_path: Path,
    guardrails: Path | None = None,
    spool: Path | None = None,
) -> VllmCpuServer:
    """A vLLM configured as ``vllm_server`` (module docstring) from ``env``'s release; with
    ``guardrails`` (a configuration file), running the guardrail middleware too and serving the
    model under :data:`GUARDED_MODELS`' names as well; with ``spool`` (a directory), the hooks
    spool what they cannot export there (``OTELBENCH_SPOOL_DIR``)."""
    extra_args: tuple[str, ...] = SHARED_KV_ARGS
    environment = dict(SHARED_ENV)
    if spool is not None:
        environment[semconv.ENV_SPOOL_DIR] = str(spool)
    if guardrails is not None:
        extra_args += ("--middleware", GUARDRAIL_MIDDLEWARE)
        extra_args += ("--served-model-name", SHARED_MODEL, *GUARDED_MODELS)
        environment[semconv.ENV_GUARDRAILS_CONFIG] = str(guardrails)
    return VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        served_model_name=SHARED_MODEL,
        max_model_len=SHARED_MAX_MODEL_LEN,
        extra_args=extra_args,
        otlp_traces_endpoint=sink.endpoint,
        hooks=True,
        env=environment,
        log_path=log_path,
    )


@contextlib.contextmanager
def serving(server: VllmCpuServer) -> Iterator[VllmCpuServer]:
    """Start ``server``, send it one short request, yield it; stop it and check nothing is left.

    The first forward pass of a new shape is slow (oneDNN primitives are created then), and it
    should not land in the tests' measurements. The start may take minutes on a busy shared
    machine, and every test of the server waits for it: 600 s."""
    server.start(timeout=600)
    try:
        with httpx.Client(base_url=server.base_url, timeout=60.0, trust_env=False) as client:
            warm_up = {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 4, "ignore_eos": True}
            client.post("/v1/completions", json=warm_up).raise_for_status()
        yield server
    finally:
        server.stop()
        leftovers = server.processes()
        assert not leftovers, f"vLLM processes left after stop(): {leftovers}"


def log_size(server: VllmCpuServer) -> int:
    """How much of ``server``'s log is written so far (for :func:`log_since`)."""
    assert server.log_path is not None
    return Path(server.log_path).stat().st_size


def log_since(server: VllmCpuServer, offset: int = 0) -> str:
    """``server``'s log from byte ``offset`` on (a shared server's log holds every test's)."""
    assert server.log_path is not None
    with Path(server.log_path).open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


@pytest.fixture(scope="session")
def vllm_server(
    vllm_env: VllmEnv,
    otlp_receiver: SpanSink,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[VllmCpuServer]:
    """A real vLLM serving the tiny model as ``tiny``, the hooks and vLLM's tracer exporting to
    ``otlp_receiver``, the guardrail middleware acting on :data:`GUARDED_MODELS` only (module
    docstring)."""
    workdir = tmp_path_factory.mktemp("vllm")
    guardrails = workdir / "guardrails.yaml"
    guardrails.write_text(GUARDRAILS_CONFIG)
    server = shared_vllm(vllm_env, otlp_receiver, workdir / "vllm.log", guardrails)
    with serving(server) as started:
        yield started


@dataclass(frozen=True)
class SpoolingServer:
    """``spooling_vllm_server``: the server, its release and its hooks' spool directory."""

    server: VllmCpuServer
    version: str
    spool: Path


def spooling_version(config: pytest.Config) -> str:
    """The release ``spooling_vllm_server`` runs: the first one asked for (``--vllm-versions``)
    besides the default, or the default when no other is asked for."""
    others = [v for v in hook_test_versions(config) if v != VLLM_VERSION]
    return others[0] if others else VLLM_VERSION


@pytest.fixture(scope="session")
def spooling_vllm_server(
    request: pytest.FixtureRequest,
    otlp_receiver: SpanSink,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SpoolingServer]:
    """The session's second vLLM, configured as ``vllm_server`` but without the guardrail
    middleware and with the hooks spooling (``OTELBENCH_SPOOL_DIR``), from
    :func:`spooling_version`'s release: the engine-hook tests of that release and the spool test
    (``test_spool_vllm.py``) share it."""
    version = spooling_version(request.config)
    env = set_up_vllm(version) if version != VLLM_VERSION else request.getfixturevalue("vllm_env")
    workdir = tmp_path_factory.mktemp(f"vllm-spooling-{version}")
    spool = workdir / "hook-spool"
    with serving(shared_vllm(env, otlp_receiver, workdir / "vllm.log", spool=spool)) as server:
        yield SpoolingServer(server, version, spool)
