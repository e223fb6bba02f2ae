"""The ``otelbench`` command line: a thin layer that builds configuration and calls the library.

Every error otelbench raises on purpose ends in one line on stderr and exit code 1; usage errors
exit 2 (typer's convention). Commands:

- ``otelbench run``        run a benchmark against a target and write the reports
- ``otelbench report DIR`` recompute the reports from the stored spans alone
- ``otelbench collector``  run the embedded OTLP/HTTP collector standalone
- ``otelbench compare``    compare systems from their runs' reports (draft section 6)
- ``otelbench test NAME``  a test procedure of draft section 5 (``ttft``, ``throughput``,
  ``throughput-latency``, ``itl``, ``capacity``): load levels and the section's report
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from otelbench.cli_options import declared_sut, json_object, key_values
from otelbench.cli_options import prompt_format as parse_prompt_format
from otelbench.dashboards.push import dashboards_app
from otelbench.errors import ConfigError, OtelbenchError
from otelbench.guardrails.cli import gateway
from otelbench.live.cli import probe, watch
from otelbench.procedures.cli import test_app

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="OpenTelemetry-based benchmarking of LLM serving, by the IETF methodology draft.",
)
app.add_typer(test_app, name="test")
app.command("gateway")(gateway)
app.command("watch")(watch)
app.command("probe")(probe)
app.add_typer(dashboards_app, name="dashboards")


def _fail(message: str) -> None:
    typer.echo(f"otelbench: error: {message}", err=True)
    raise typer.Exit(1)


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


@app.command()
def run(
    out: Annotated[Path, typer.Option(help="Directory for spans.duckdb, report.json, report.md.")],
    model: Annotated[str, typer.Option(help="Model name to request (the target's served name).")],
    requests: Annotated[int, typer.Option(help="Number of requests to send.")] = 100,
    target: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    rate: Annotated[
        float | None, typer.Option(help="Open loop: mean arrival rate, requests/s.")
    ] = None,
    arrival: Annotated[
        str,
        typer.Option(help="Open-loop arrival process: poisson, uniform, bursty or trace."),
    ] = "poisson",
    burst_cv: Annotated[
        float | None,
        typer.Option(help="bursty: coefficient of variation of the gaps (default 3; 1 = Poisson)."),
    ] = None,
    trace_file: Annotated[
        Path | None,
        typer.Option(help="trace: file of send times, seconds (one per line or a JSON list)."),
    ] = None,
    time_scale: Annotated[
        float | None, typer.Option(help="trace: multiply the file's times by this.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Closed loop: requests kept in flight.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the workload and the arrival schedule.")] = 42,
    workload: Annotated[
        str,
        typer.Option(
            help="Workload: synthetic-uniform, synthetic-skewed, conversation, sharegpt, "
            "code-completion, long-context, mixed-classes, file (draft Appendix A)."
        ),
    ] = "synthetic-uniform",
    workload_file: Annotated[
        Path | None,
        typer.Option(help="Workload file (YAML/JSON, draft 4.3.1); implies --workload file."),
    ] = None,
    workload_param: Annotated[
        list[str] | None,
        typer.Option(
            help="KEY=VALUE parameter of the workload (repeatable; VALUE read as JSON when it "
            "parses, e.g. max_context_len=1024 or path=sharegpt.json)."
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="Draft 4.4: cl100k_base (Option B), a tokenizer.json path, or 'server' (the "
            "target's /tokenize). Text workloads tokenize with it; the report declares it."
        ),
    ] = None,
    prompt_format: Annotated[
        str,
        typer.Option(
            help="'token_ids' (token-exact, the default) or 'text' (ids decoded by --tokenizer, "
            "for paths that read text, e.g. guardrails)."
        ),
    ] = "token_ids",
    cold_start: Annotated[
        bool, typer.Option(help="Skip the warm-up and report a cold-start measurement (4.5.3).")
    ] = False,
    warmup_requests: Annotated[
        int, typer.Option(help="Warm-up: at least this many requests (draft 4.5: 100).")
    ] = 100,
    warmup_tokens: Annotated[
        int, typer.Option(help="Warm-up: at least this many output tokens (draft 4.5: 10,000).")
    ] = 10_000,
    vocab_size: Annotated[
        int | None,
        typer.Option(help="Vocabulary size for random token-id prompts (default: draft A.1's)."),
    ] = None,
    ignore_eos: Annotated[
        bool, typer.Option(help="Ask the server to ignore EOS so outputs reach max_tokens (vLLM).")
    ] = False,
    extra_body: Annotated[
        str | None,
        typer.Option(help="JSON object merged into every request body (server-specific fields)."),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(help="Export spans to this OTLP/HTTP collector instead of the embedded one."),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            help="Span store: a DuckDB file (default OUT/spans.duckdb), chdb:///abs/dir or "
            "clickhouse://user:password@host:port/database. With --otlp-endpoint: the store "
            "that collector writes (a ClickHouse server is polled for the run's spans)."
        ),
    ] = None,
    sut: Annotated[
        str | None,
        typer.Option(help="Launch the system under test: 'vllm-cpu' starts the tiny vLLM on CPU."),
    ] = None,
    max_model_len: Annotated[int, typer.Option(help="With --sut vllm-cpu.")] = 1024,
    sut_boundary: Annotated[
        str | None,
        typer.Option(help="Declare the SUT boundary (draft 4.1): Model Engine, Gateway, Compound."),
    ] = None,
    sut_hardware: Annotated[
        str | None, typer.Option(help="Declare the target's hardware for the report.")
    ] = None,
    sut_software: Annotated[
        str | None, typer.Option(help="Declare the target's software and version.")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds.")] = 600.0,
    span_wait: Annotated[
        float | None,
        typer.Option(help="Longest wait for the target's spans after the load, s (default: auto)."),
    ] = None,
    spool_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where client spans wait while the collector is unreachable (default OUT/spool)."
        ),
    ] = None,
) -> None:
    """Run a benchmark and write OUT/report.json, report.md and report.html."""
    from otelbench.benchmark import run_benchmark
    from otelbench.loadgen.runner import LoadSpec, RunConfig
    from otelbench.loadgen.warmup import WarmupSpec

    if rate is not None and concurrency is not None:
        raise typer.BadParameter("give one of --rate (open loop) or --concurrency, not both")
    if rate is None and concurrency is None and arrival != "trace":
        raise typer.BadParameter("give --rate (open loop) or --concurrency (closed loop)")
    arrival_params: dict[str, Any] = {}
    if burst_cv is not None:
        arrival_params["cv"] = burst_cv
    if trace_file is not None:
        arrival_params["path"] = trace_file
    if time_scale is not None:
        arrival_params["time_scale"] = time_scale
    if sut not in (None, "vllm-cpu"):
        raise typer.BadParameter(f"unknown --sut {sut!r}; known: vllm-cpu")
    if sut is None and target is None:
        raise typer.BadParameter("give --target URL (or --sut vllm-cpu to launch one)")
    load = LoadSpec(
        mode="closed_loop" if concurrency is not None else arrival,  # type: ignore[arg-type]
        requests=requests,
        rate=rate,
        concurrency=concurrency,
        arrival_params=arrival_params if concurrency is None else {},
    )
    params: dict[str, Any] = {} if vocab_size is None else {"vocab_size": vocab_size}
    if workload_file is not None:
        workload, params["path"] = "file", str(workload_file)
    params.update(key_values(workload_param or [], "--workload-param"))
    warmup = WarmupSpec(
        cold_start=cold_start, min_requests=warmup_requests, min_output_tokens=warmup_tokens
    )
    body = json_object(extra_body, "--extra-body")
    config = RunConfig(
        target=target or "",
        model=model,
        load=load,
        seed=seed,
        workload=workload,
        workload_params=params,
        ignore_eos=ignore_eos,
        extra_body=body,
        timeout_s=timeout,
        tokenizer=tokenizer,
        prompt_format=parse_prompt_format(prompt_format),
        warmup=warmup,
        sut=declared_sut(sut_boundary, sut_hardware, sut_software),
    )
    launch = {"max_model_len": max_model_len, "served_model_name": model} if sut else None
    with _Progress(requests) as progress:
        result = run_benchmark(
            config,
            out,
            otlp_endpoint=otlp_endpoint,
            store=store,
            launch_vllm_cpu=launch,
            on_result=progress.result,
            on_status=progress.status,
            span_wait_s=span_wait,
            spool_dir=spool_dir,
        )
    if result.report_md is not None:
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
    outcome = result.outcome
    if outcome is not None and outcome.results and not any(r.ok for r in outcome.results):
        kinds = sorted({r.error_type or "error" for r in outcome.results})
        _fail(f"all {len(outcome.results)} requests failed ({', '.join(kinds)})")


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="A run directory written by `otelbench run`.")],
    store: Annotated[
        str | None,
        typer.Option(
            help="Span store: a DuckDB file (default: DIRECTORY/spans.duckdb), "
            "chdb:///abs/dir (ClickHouse in-process; ?database=NAME picks a database) or "
            "clickhouse://user:password@host:port/database (a ClickHouse server; "
            "clickhouses:// for TLS)."
        ),
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="Which run (default: the latest).")] = None,
) -> None:
    """Recompute report.json, report.md and report.html from the stored spans alone.

    A DuckDB store that a running collector writes is read from a snapshot the collector takes
    (otelbench/store/duckdb_store.py); stderr says when it was taken.
    """
    from otelbench.benchmark import write_reports
    from otelbench.query.extract import is_store_url
    from otelbench.store.duckdb import snapshot_if_written, snapshot_note

    target: str | Path
    if store is not None and is_store_url(store):
        target = store
    else:
        target = Path(store) if store is not None else directory / "spans.duckdb"
        if not target.exists():
            raise ConfigError(f"no span store at {target}")
    directory.mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_if_written(target) if isinstance(target, Path) else None
    try:
        _, markdown = write_reports(directory, snapshot.path if snapshot else target, run_id)
    finally:
        if snapshot is not None:
            snapshot.path.unlink(missing_ok=True)
    typer.echo(markdown)
    if snapshot is not None:
        note = snapshot_note(snapshot.taken_unix_ns)
        typer.echo(f"otelbench: {target} is being written by its collector: {note}", err=True)


@app.command()
def collector(
    store: Annotated[
        str,
        typer.Option(
            help="Span store to write: a DuckDB file, chdb:///abs/dir (ClickHouse in-process) or "
            "clickhouse://user:password@host:port/database (a ClickHouse server)."
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for OTLP/HTTP (0 picks a free one).")] = 4318,
    rotel: Annotated[
        bool,
        typer.Option(
            help="Put rotel in front (collectors/README.md): OTLP/HTTP on --port and OTLP/gRPC "
            "on --grpc-port, forwarded to the embedded receiver on an internal port."
        ),
    ] = False,
    grpc_port: Annotated[int, typer.Option(help="With --rotel: port for OTLP/gRPC.")] = 4317,
    auth_token_file: Annotated[
        Path | None,
        typer.Option(
            help="Require 'Authorization: Bearer <token>' with the token in this file "
            "(default: $OTELBENCH_RECEIVER_TOKEN if set, else no authentication)."
        ),
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="Serve HTTPS with this PEM certificate (and --tls-key).")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option(help="The PEM private key of --tls-cert.")] = None,
    rate_limit: Annotated[
        float | None,
        typer.Option(help="Requests per second allowed per client IP (beyond: HTTP 429)."),
    ] = None,
    rate_burst: Annotated[
        int | None,
        typer.Option(help="Requests a client IP may send at once (default: 2 s of --rate-limit)."),
    ] = None,
) -> None:
    """Run the embedded OTLP/HTTP collector until interrupted (docs/security.md: access)."""
    from otelbench.collector import Receiver, serve
    from otelbench.collector.access import ENV_RECEIVER_TOKEN, Access

    access = Access.from_options(
        token_file=auth_token_file,
        token_env_var=ENV_RECEIVER_TOKEN,
        tls_cert=tls_cert,
        tls_key=tls_key,
        rate_per_s=rate_limit,
        rate_burst=rate_burst,
    )

    def announce(receiver: Receiver) -> None:
        scheme = "https" if receiver.tls is not None else "http"
        typer.echo(
            f"otelbench collector: receiver on {scheme}://{host}:{receiver.port} → "
            f"{receiver.writer.path}",
            err=True,
        )

    if not rotel:
        serve(
            store,
            host=host,
            port=port,
            on_ready=announce,
            auth_token=access.token,
            tls=access.tls,
            rate_limit=access.rate_limit,
        )
        return
    if access != Access():
        raise ConfigError(
            "--rotel forwards to the receiver unauthenticated: configure access on rotel instead "
            f"(no --auth-token-file, ${ENV_RECEIVER_TOKEN}, --tls-* or --rate-* with --rotel)"
        )
    from otelbench.collector.rotel import RotelCollector

    def front(receiver: Receiver) -> RotelCollector:
        collector = RotelCollector(
            f"http://{host}:{receiver.port}", host=host, grpc_port=grpc_port, http_port=port
        )
        collector.start()
        typer.echo(
            f"otelbench collector: rotel on {collector.base_url} (OTLP/HTTP) and "
            f"{collector.grpc_endpoint} (OTLP/gRPC)",
            err=True,
        )
        return collector

    serve(store, host=host, port=0, on_ready=announce, front=front)


@app.command()
def compare(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Run directories or report.json files. SYSTEM=PATH names the run's system; "
            "other runs are grouped by --group (default: run.sut.software, run.model, "
            "run.target). The first system is the baseline."
        ),
    ],
    group: Annotated[
        str | None,
        typer.Option(
            help="Group runs into systems by these comma-separated report keys, "
            "e.g. run.sut.hardware or run.model,run.load.rate."
        ),
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option(
            help="SYSTEM=N: a system's GPU count (its name or id A, B, …) for output tokens "
            "per GPU-second (draft 6.2); overrides run.sut.hardware. Repeatable."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Directory for compare.json and compare.md.")
    ] = None,
    confidence: Annotated[
        float, typer.Option(help="Confidence level of the bootstrap intervals.")
    ] = 0.95,
    alpha: Annotated[float, typer.Option(help="Significance level of the tests.")] = 0.05,
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and of a sampled permutation test.")
    ] = 0,
) -> None:
    """Compare systems from the report.json files of their runs (draft section 6)."""
    from otelbench.compare import compare_command

    raise typer.Exit(
        compare_command(
            runs,
            group_by=group,
            gpus=gpus or [],
            out=out,
            confidence=confidence,
            alpha=alpha,
            seed=seed,
        )
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning otelbench errors into one line and exit code 1."""
    try:
        rc = app(args=argv, standalone_mode=False)  # click returns typer.Exit's code here
        sys.exit(rc if isinstance(rc, int) else 0)
    except OtelbenchError as exc:
        typer.echo(f"otelbench: error: {exc}", err=True)
        sys.exit(1)
    except typer.Abort:
        typer.echo("otelbench: aborted", err=True)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors (typer bundles its own click)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            typer.echo(f"otelbench: error: {exc}", err=True)
        sys.exit(int(getattr(exc, "exit_code", 2)))
    except Exception as exc:  # anything unexpected: one line, no traceback
        if os.environ.get("OTELBENCH_DEBUG"):
            raise
        typer.echo(
            f"otelbench: internal error: {type(exc).__name__}: {exc} "
            "(set OTELBENCH_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(70)


if __name__ == "__main__":
    main()
