"""A procedure's session: ONE collector (and ONE launched SUT) for all its load levels.

::

    ProcedureSession.__enter__   embedded collector → OUT/spans.duckdb (or the --store: a DuckDB
                                 file, chdb:///dir, clickhouse://…) on a free loopback port (or
                                 --collector-port: where a running target's tracer exports);
                                 vLLM launched (optional) with its tracer pointed at that
                                 collector; preflight
    run_level() × N              one run per level (its own run id, OUT/levels/NN/run.json):
                                 execute_run → flush spans → wait for the target's spans →
                                 live report from the records in memory (levels.py); the
                                 client's spans go through a spool (OUT/spool) and its export
                                 counts to OUT/levels/NN/client_telemetry.json
    use_configuration(c)         (5.7, 5.10) stop the SUT, start configuration ``c`` (a vLLM
                                 launch with extra arguments, a user's launch command, or a
                                 running URL), preflight it; the next level warms up again
    __exit__                     stop vLLM, stop the collector (the store is now readable)
    finalize()                   every level's report from the store → OUT/levels/NN/report.*

With ``otlp_endpoint`` and a ClickHouse server store (``--otlp-endpoint URL --store
clickhouse://…``) no collector starts: an external one at URL writes the server, each level waits
for its spans by counting them in the store (by run id), and ``finalize`` reads the server (the
only external store readable while its collector runs; this path cannot be run on this machine,
which has no ClickHouse server).

Warm-up (draft 4.5) runs once, before the first level's measurement; the SUT stays warm between
levels, so later levels run without one (their run reports list "no warm-up" as the runner
always does; the procedure report states what happened instead).

Example::

    with ProcedureSession(out, base_config, progress=progress) as session:
        level = session.run_level(LoadSpec(mode="poisson", requests=60, rate=2.0), "20%")
        print(level.row["ttft_p99_ms"])
    session.finalize()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, TypedDict

from otelbench import telemetry
from otelbench.benchmark import (
    LAUNCHED_SPAN_FLUSH_WAIT_S,
    VLLM_SPAN_FLUSH_WAIT_S,
    CollectorStopped,
    EmbeddedCollector,
    SpanWatch,
    StoreSpanWatch,
    VllmLaunch,
    check_target_url,
    client_telemetry,
    config_json,
    describe_sut,
    is_server_store,
    launched_vllm,
    preflight,
    record_client_telemetry,
    store_display,
)
from otelbench.client import CompletionResult
from otelbench.errors import ConfigError, OtelbenchError
from otelbench.lifecycle import Ends
from otelbench.loadgen.affinity import away_from
from otelbench.loadgen.runner import (
    ExportSpec,
    LoadSpec,
    RunConfig,
    RunOutcome,
    check_workload,
    execute_run,
)
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.procedure import LevelRow, SutConfigurationEntry
from otelbench.model.report import Report
from otelbench.model.sut import TargetInfo
from otelbench.procedures.configurations import SutConfiguration
from otelbench.procedures.levels import level_row, run_data_from_outcome
from otelbench.query import RunData, extract_run_data, open_store
from otelbench.query.extract import is_store_url
from otelbench.render.html import render_html
from otelbench.report import render_json, render_markdown, report_from_data
from otelbench.report.plot_data import plot_data
from otelbench.spool import SpoolStats

__all__ = ["Level", "LevelMeta", "LevelOverrides", "ProcedureInterrupted", "ProcedureSession"]

NO_WARMUP_DEVIATION_PREFIX: Final = "no warm-up procedure was run"
"""How the runner's manifest words a run without warm-up (otelbench.loadgen.runner)."""


class ProcedureInterrupted(OtelbenchError):
    """Ctrl-C during a level: the procedure stops; what was measured is still reported."""


class LevelMeta(TypedDict, total=False):
    """What a procedure planned for a level (:attr:`Level.meta`): keys of the level's row in
    ``procedure.json`` (:func:`~otelbench.procedures.base.level_entry`), each declared by the
    level type of the sections that set it (:mod:`otelbench.model.procedure`)."""

    role: str
    """The level's part: a search step, the probe, a configuration's level …"""
    live_verdict: bool
    """A search level's verdict from its live row, which the search went by."""
    lower_load_level: int | None
    """5.2: the level whose TTFT P50 is the lower load of 5.2.3.1."""
    configuration: str
    """The SUT configuration it ran on (set by the session while one is in use)."""
    fraction: float
    """Of the capacity or saturation rate (5.3, 5.4, 5.10)."""
    request_class: str | None
    """5.6: the request class run alone, None for the mixed level."""
    input_tokens: int
    """The prompt length (5.9, fluidity's prefill profile)."""
    requested_tokens: int
    """5.9: the length asked for, before the model's context limit."""
    oversubscription: list[float]
    """5.8: the oversubscription level(s) asked for."""
    effective_oversubscription: float
    """5.8: the oversubscription run, ``concurrency / capacity``."""
    capacity: int
    """5.8: the capacity (max concurrency) the levels scale."""


class LevelOverrides(TypedDict, total=False):
    """The :class:`~otelbench.loadgen.runner.RunConfig` fields one level changes
    (:meth:`ProcedureSession.run_level`'s ``overrides``)."""

    workload: str
    """Another workload: one request class alone (5.6), one input length (5.9), fluidity's
    prefill profile."""
    workload_params: JsonObject
    """That workload's own parameters (``RunConfig.workload_params``: keys per workload)."""
    seed: int
    """Another seed: 5.7's warm level draws new bodies behind the same shared prefixes."""


@dataclass
class Level:
    """One load level of a procedure: its run, its row (live, then from the store)."""

    index: int
    """1-based, in the order run; the level's directory is ``levels/NN``."""
    label: str
    run_id: str
    load: LoadSpec
    out_dir: Path
    warmed: bool
    """This level's run carried the procedure's warm-up."""
    meta: LevelMeta = field(default_factory=LevelMeta)
    """What the procedure planned for the level (fraction, role in a search, …)."""
    live_row: LevelRow | None = None
    row: LevelRow | None = None
    """From the store once finalized (else the live row)."""
    report: Report | None = None
    """The run report: live (no server spans) until finalized, then from the store."""
    data: RunData | None = None
    stored: bool = False
    """``report`` and ``row`` come from the store (and the report files are written)."""
    interrupted: bool = False

    @property
    def dir_name(self) -> str:
        return f"levels/{self.index:02d}"


class ProcedureSession(Ends):
    """One collector, optionally one launched vLLM, and the procedure's levels (module doc)."""

    def __init__(
        self,
        out_dir: Path,
        base: RunConfig,
        *,
        launch_vllm_cpu: VllmLaunch | None = None,
        span_wait_s: float | None = None,
        on_status: Callable[[str], None] = lambda _msg: None,
        on_level_start: Callable[[Level], None] = lambda _level: None,
        on_result: Callable[[CompletionResult], None] | None = None,
        defer_sut: bool = False,
        store: Path | str | None = None,
        otlp_endpoint: str | None = None,
        collector_port: int = 0,
    ) -> None:
        """``defer_sut``: start no SUT and check no target on entry; the procedure calls
        :meth:`use_configuration` before its first level (5.7, 5.10). ``store``: the span store
        (default ``out_dir/spans.duckdb``); ``otlp_endpoint``: an external collector writing
        ``store``, which must then be a ClickHouse server URL (module docstring);
        ``collector_port``: the embedded collector's loopback port (0: a free one), e.g. the one
        a running target's tracer already exports to."""
        if otlp_endpoint is not None and not is_server_store(store):
            raise ConfigError(
                "--otlp-endpoint needs --store clickhouse://… (a ClickHouse server that collector "
                "writes): the procedure reads its store while that collector runs"
            )
        if otlp_endpoint is not None and collector_port:
            raise ConfigError(
                "--collector-port is the embedded collector's port: not with --otlp-endpoint"
            )
        check_workload(base)
        if launch_vllm_cpu is None and not defer_sut:
            check_target_url(base.target)
        self.out_dir = out_dir
        self.base = base
        self.launch_vllm_cpu = launch_vllm_cpu
        self.span_wait_s = span_wait_s
        self.on_status = on_status
        self.on_level_start = on_level_start
        self.on_result = on_result
        if store is None:
            store = out_dir / "spans.duckdb"
        self.store: Path | str = store if is_store_url(store) else Path(store)
        self.otlp_endpoint = otlp_endpoint
        self.collector_port = collector_port
        self.levels: list[Level] = []
        self.target_info: TargetInfo = {}
        self.collector_stats: CollectorStopped | None = None
        self.interrupted = False
        self.started_unix = time.time()
        self.finished_unix: float | None = None
        self.defer_sut = defer_sut
        self.configuration: SutConfiguration | None = None
        """The configuration the SUT now runs in (None: the one it was given)."""
        self.configurations: dict[str, SutConfigurationEntry] = {}
        """Per configuration used: how it was reached, what the target said, the SUT summary."""
        self._declared_sut = base.sut.copy()
        self._collector: EmbeddedCollector | None = None
        self._watch: SpanWatch | None = None
        self._stack = contextlib.ExitStack()
        """The running SUT (a launched vLLM or a launch command), closed on a switch or exit."""
        self._warmup_pending = base.warmup is not None
        self._away = contextlib.ExitStack()
        """``--loadgen-cpus``: this process on the other CPUs while the session is open."""

    # ------------------------------------------------------------------ life cycle
    @property
    def store_display(self) -> str:
        """The store as procedure.json names it (a ClickHouse URL without its password)."""
        return store_display(self.store, self.out_dir)

    def __enter__(self) -> ProcedureSession:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(self.store, Path) and self.store.exists():
            raise ConfigError(f"{self.store} exists: give a new --out directory for each procedure")
        # before the collector and vLLM start: they inherit the other CPUs
        self._away.enter_context(away_from(self.base.loadgen_cpus))
        try:
            return self._open()
        except BaseException:
            self._away.close()
            raise

    def _open(self) -> ProcedureSession:
        if self.otlp_endpoint is not None:
            self._watch = StoreSpanWatch(str(self.store))
            self._watch.target_spans(self.base.run_id)  # an unreachable store fails here, first
            endpoint = self.otlp_endpoint
        else:
            self._collector = EmbeddedCollector(self.store, port=self.collector_port)
            self._watch = self._collector
            self.on_status(f"starting the embedded collector → {self.store_display}")
            endpoint = self._collector.start()
        if self.defer_sut:
            return self
        try:
            if self.launch_vllm_cpu is not None:
                self.on_status("starting vLLM on CPU (about 30–60 s), once for every level")
                url = self._stack.enter_context(self._launched_vllm(endpoint))
                self.base = replace(self.base, target=url)
            self.target_info = preflight(self.base.target, self.base.model)
            sut = describe_sut(
                self.base, self.target_info, launched=self.launch_vllm_cpu is not None
            )
            self.base = replace(self.base, sut=sut)
        except BaseException:
            self._stack.close()
            self._stop_collector()
            raise
        return self

    def _end(self) -> None:
        self.finished_unix = time.time()
        try:
            self._stack.close()
        finally:
            self._stop_collector()
            self._away.close()

    def _stop_collector(self) -> None:
        if self._collector is not None:
            self.collector_stats = self._collector.stop()
        elif isinstance(self._watch, StoreSpanWatch):
            self._watch.close()

    @contextlib.contextmanager
    def _launched_vllm(
        self,
        endpoint: str,
        extra_args: tuple[str, ...] = (),
        log_name: str = "vllm.log",
        env: Mapping[str, str] | None = None,
    ) -> Iterator[str]:
        launch: VllmLaunch = {**(self.launch_vllm_cpu or {})}
        launch["extra_args"] = (*launch.get("extra_args", ()), *extra_args)
        with launched_vllm(endpoint, self.out_dir / log_name, env=env, **launch) as server:
            # The served model's own tokenizer (Option A, draft 4.4), as `otelbench run` does.
            self.base = replace(
                self.base, tokenizer=self.base.tokenizer or str(server.vllm_env.model_dir)
            )
            yield server.base_url

    def use_configuration(self, config: SutConfiguration) -> None:
        """Stop the SUT, bring up ``config`` (a restart unless it is a running URL), check it.

        The next level warms up again (the draft's procedures warm up after every restart,
        e.g. 5.7.3 step 2); the level's ``meta`` records the configuration's label.
        """
        from otelbench.sut.command import CommandServer

        endpoint = self.endpoint
        self._stack.close()  # the previous configuration's server, if otelbench started one
        self._stack = contextlib.ExitStack()
        log_name = f"sut-{config.label}.log"
        if config.vllm_args is not None:
            if self.launch_vllm_cpu is None:
                raise ConfigError(
                    f"configuration {config.label!r} launches vllm-cpu: give --sut vllm-cpu"
                )
            self.on_status(f"configuration {config.label}: starting vLLM on CPU (30–60 s)")
            url = self._stack.enter_context(
                self._launched_vllm(endpoint, config.vllm_args, log_name, config.env)
            )
        else:
            assert config.url is not None
            url = config.url
            check_target_url(url)
            if config.command is not None:
                self.on_status(f"configuration {config.label}: running its launch command")
                server = CommandServer(
                    config.command,
                    url,
                    otlp_traces_endpoint=telemetry.traces_url(endpoint),
                    env=config.env,
                    log_path=self.out_dir / log_name,
                )
                self._stack.enter_context(server)
        self.target_info = preflight(url, self.base.model)
        sut = describe_sut(
            replace(self.base, target=url, sut=self._declared_sut),
            self.target_info,
            launched=config.vllm_args is not None,
        )
        self.base = replace(self.base, target=url, sut=sut)
        self.configuration = config
        self.configurations[config.label] = {
            **config.describe(),
            "url": url,
            "target_reports": self.target_info,
            "sut": sut,
            "log": log_name if config.restarted else None,
        }
        self._warmup_pending = self.base.warmup is not None

    @property
    def endpoint(self) -> str:
        if self.otlp_endpoint is not None:
            return self.otlp_endpoint
        assert self._collector is not None, "the session is not open"
        return self._collector.endpoint

    # ------------------------------------------------------------------ levels
    def run_level(
        self,
        load: LoadSpec,
        label: str,
        meta: LevelMeta | None = None,
        *,
        overrides: LevelOverrides | None = None,
    ) -> Level:
        """Run one level and return it with its live row; raises ProcedureInterrupted on ^C.

        ``overrides``: RunConfig fields this level changes (``workload``, ``workload_params``
        …), e.g. one request class alone (5.6) or one input length (5.9).
        """
        watch = self._watch
        assert watch is not None, "run_level() outside the session"
        if not self.base.target:
            raise ConfigError("no SUT configuration is in use: call use_configuration() first")
        warm = self._warmup_pending
        config = replace(
            replace(self.base, **(overrides or {})),
            load=load,
            run_id=f"{self.base.run_id}-{len(self.levels) + 1:02d}",
            warmup=self.base.warmup if warm else None,
        )
        level = Level(
            index=len(self.levels) + 1,
            label=label,
            run_id=config.run_id,
            load=load,
            out_dir=self.out_dir / f"levels/{len(self.levels) + 1:02d}",
            warmed=warm,
            meta=meta.copy() if meta else {},
        )
        if self.configuration is not None:
            level.meta.setdefault("configuration", self.configuration.label)
        self.levels.append(level)
        level.out_dir.mkdir(parents=True, exist_ok=True)
        (level.out_dir / "run.json").write_text(json.dumps(config_json(config), indent=2) + "\n")
        self.on_level_start(level)
        # one spool for all levels: what a level could not deliver, the next one replays
        spool_stats = SpoolStats()
        provider = telemetry.make_tracer_provider(
            self.endpoint,
            run_id=config.run_id,
            spool_dir=self.out_dir / "spool",
            spool_stats=spool_stats,
        )
        before = watch.target_spans(config.run_id)
        started = time.monotonic()
        outcome: RunOutcome | None = None
        try:
            outcome = asyncio.run(
                execute_run(
                    config,
                    tracer_provider=provider,
                    on_result=self.on_result,
                    export=ExportSpec(self.endpoint, self.out_dir / "spool"),
                    spool_stats=spool_stats,
                    neighbours={"collector": self._collector.pid if self._collector else None},
                )
            )
        except KeyboardInterrupt:
            level.interrupted = self.interrupted = True
        finally:
            telemetry.shutdown(provider)
            record_client_telemetry(level.out_dir, config.run_id, spool_stats.as_dict())
            self._wait_for_target_spans(
                before, len(outcome.results) if outcome else load.requests, started, config.run_id
            )
        self._warmup_pending = False
        if outcome is None:
            raise ProcedureInterrupted("interrupted during level " + str(level.index))
        data = run_data_from_outcome(outcome)
        level.data, level.report = data, report_from_data(data)
        level.live_row = level.row = level_row(data, level.report)
        return level

    def _wait_for_target_spans(self, before: int, sent: int, started: float, run_id: str) -> None:
        watch = self._watch
        assert watch is not None
        launched = self.launch_vllm_cpu is not None or (
            self.configuration is not None and self.configuration.restarted
        )
        wait = LAUNCHED_SPAN_FLUSH_WAIT_S if launched else VLLM_SPAN_FLUSH_WAIT_S
        if self.span_wait_s is not None:
            wait = self.span_wait_s
        if wait <= 0:
            return
        traced = watch.target_spans(run_id) > before
        if traced or time.monotonic() - started < wait:
            watch.wait_for_target_spans(before + sent, wait, run_id=run_id)

    # ------------------------------------------------------------------ reports
    def finalize(self) -> None:
        """After the session: every level's report from the store, written to its directory."""
        if not self.levels or (isinstance(self.store, Path) and not self.store.exists()):
            return
        with open_store(self.store) as runner:
            for level in self.levels:
                try:
                    data = extract_run_data(runner, level.run_id)
                except OtelbenchError as exc:
                    self.on_status(f"level {level.index}: no stored run ({exc})")
                    continue
                report = report_from_data(data)
                report["run"]["client_telemetry"] = client_telemetry(level.out_dir, level.run_id)
                (level.out_dir / "report.json").write_text(render_json(report))
                (level.out_dir / "report.md").write_text(render_markdown(report))
                (level.out_dir / "report.html").write_text(
                    render_html(report, plot_data(data)), encoding="utf-8"
                )
                level.data, level.report, level.stored = data, report, True
                level.row = level_row(data, report)
