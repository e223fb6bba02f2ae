"""``otelbench test …``: the draft's test procedures on the command line (a thin layer).

``otelbench.cli`` mounts :data:`test_app` as ``otelbench test``. Commands (one per draft section)::

    otelbench test ttft                --rate R | --concurrency C          (5.1)
    otelbench test throughput          [--capacity-rps R] [--slo-ttft-p99-ms MS]
                                       [--load-model closed-loop]               (5.2)
    otelbench test throughput-latency  [--capacity-rps R] [--slo-ttft-p99-ms MS]  (5.3)
    otelbench test itl                 --saturation-rps R | --sweep 5.3/procedure.json  (5.4)
    otelbench test capacity            [--initial-concurrency 8] [--slo-ttft-p99-ms MS]  (5.5)
    otelbench test fairness            --rate R [--short-ratio 0.8]                 (5.6)
    otelbench test prefix-cache        [--config LABEL=URL|'vllm-cpu ARGS'] [--launch LABEL=CMD]
                                       [--concurrency 4 | --rate R]                 (5.7)
    otelbench test memory-pressure     [--capacity-report 5.5/procedure.json | --capacity N]
                                       [--level 1.1 …]                              (5.8)
    otelbench test long-context        [--length N …] [--max-context-len N]         (5.9)
    otelbench test guardrail-overhead  --guardrails FILE | --config LABEL=URL …     (5.10)
    otelbench test fluidity            [--decode-deadline-ms 25] [--min-fluidity 0.9]
                                       [--request-fraction 0.99]           (Etalon §4.2)

Every command takes ``--out DIR --model NAME`` and ``--target URL`` or ``--sut vllm-cpu``
(launched once for all levels; ``--vllm-arg`` adds a ``vllm serve`` argument), ``--profile
draft|quick``, the workload options of ``otelbench run`` and its ``--store`` (a DuckDB file,
``chdb:///dir`` or ``clickhouse://…``) and ``--otlp-endpoint`` (an external collector writing
``--store clickhouse://…``). It writes ``DIR/procedure.json``, ``DIR/procedure.md``,
``DIR/procedure.html``, ``DIR/spans.duckdb`` (or the ``--store``) and each level's run report
(JSON, Markdown, HTML) under ``DIR/levels/NN/``, prints ``procedure.md`` and shows its progress
on stderr. 5.7 and 5.10 run the target in several configurations and restart it between them
(:mod:`otelbench.procedures.configurations`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from otelbench.cli_options import declared_sut, json_object, key_values

__all__ = ["test_app"]

test_app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="The draft's test procedures (section 5): sequences of load levels and their report.",
)

Out = Annotated[Path, typer.Option(help="New directory for procedure.json/.md, spans, levels.")]
Model = Annotated[str, typer.Option(help="Model name to request (the target's served name).")]
Target = Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")]
Sut = Annotated[
    str | None,
    typer.Option(help="Launch the SUT once for all levels: 'vllm-cpu' (the tiny vLLM on CPU)."),
]
ProfileOpt = Annotated[
    str, typer.Option(help="Defaults: 'draft' (the draft's minimums) or 'quick' (a demo).")
]
Seed = Annotated[int, typer.Option(help="Seed of the workload and arrival schedules.")]
Workload = Annotated[str, typer.Option(help="Workload name (as for `otelbench run`).")]
WorkloadParam = Annotated[
    list[str] | None, typer.Option(help="KEY=VALUE workload parameter (repeatable; JSON values).")
]
VocabSize = Annotated[int | None, typer.Option(help="Vocabulary size for random token-id prompts.")]
IgnoreEos = Annotated[bool, typer.Option(help="Ask the server to ignore EOS (vLLM).")]
ExtraBody = Annotated[str | None, typer.Option(help="JSON object merged into every request body.")]
Timeout = Annotated[float, typer.Option(help="Per-request timeout, seconds.")]
Tokenizer = Annotated[
    str | None, typer.Option(help="Draft 4.4 tokenizer: cl100k_base, a tokenizer.json, 'server'.")
]
ColdStart = Annotated[bool, typer.Option(help="Skip the warm-up (cold-start measurement).")]
WarmupRequests = Annotated[
    int | None, typer.Option(help="Warm-up requests (default: the profile's).")
]
WarmupTokens = Annotated[
    int | None, typer.Option(help="Warm-up output tokens (default: the profile's).")
]
SpanWait = Annotated[
    float | None, typer.Option(help="Longest wait for the target's spans per level, s.")
]
MaxModelLen = Annotated[int, typer.Option(help="With --sut vllm-cpu.")]
VllmArg = Annotated[
    list[str] | None,
    typer.Option(
        help="With --sut vllm-cpu: one more `vllm serve` argument (repeatable), e.g. "
        "--vllm-arg=--num-gpu-blocks-override --vllm-arg=64."
    ),
]
Boundary = Annotated[str | None, typer.Option(help="Declare the SUT boundary (draft 4.1).")]
Hardware = Annotated[str | None, typer.Option(help="Declare the target's hardware.")]
Software = Annotated[str | None, typer.Option(help="Declare the target's software.")]
Gpus = Annotated[int, typer.Option(help="Accelerators of the SUT (tokens per GPU-second).")]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        help="Span store (default OUT/spans.duckdb): a DuckDB file, chdb:///abs/dir or "
        "clickhouse://user:password@host:port/database."
    ),
]
OtlpEndpoint = Annotated[
    str | None,
    typer.Option(
        help="Export to this OTLP/HTTP collector instead of the embedded one; it must write "
        "--store clickhouse://… (polled for each level's spans)."
    ),
]
Arrival = Annotated[str, typer.Option(help="Open-loop arrival process (poisson, uniform, …).")]
CapacityRps = Annotated[
    float | None,
    typer.Option(help="Estimated capacity, req/s (default: a closed-loop probe measures it)."),
]
ProbeConcurrency = Annotated[
    int | None, typer.Option(help="Capacity probe's concurrency (default: the profile's).")
]
ProbeRequests = Annotated[
    int | None, typer.Option(help="Capacity probe's requests (default: the profile's).")
]
LevelDuration = Annotated[
    float | None, typer.Option(help="Seconds per load level (default: the profile's).")
]
MinLevelRequests = Annotated[
    int | None, typer.Option(help="Fewest requests per level (default: the profile's).")
]
SloTtft = Annotated[float | None, typer.Option(help="SLO: TTFT P99 limit, ms.")]
SloTpot = Annotated[float | None, typer.Option(help="SLO: TPOT P99 limit, ms.")]


def _spec(
    *,
    out: Path,
    model: str,
    target: str | None,
    sut: str | None,
    profile: str,
    seed: int,
    workload: str,
    workload_param: list[str] | None,
    vocab_size: int | None,
    ignore_eos: bool,
    extra_body: str | None,
    timeout: float,
    tokenizer: str | None,
    cold_start: bool,
    warmup_requests: int | None,
    warmup_tokens: int | None,
    span_wait: float | None,
    max_model_len: int,
    vllm_arg: list[str] | None,
    sut_boundary: str | None,
    sut_hardware: str | None,
    sut_software: str | None,
    gpus: int,
    store: str | None = None,
    otlp_endpoint: str | None = None,
    config: list[str] | None = None,
    launch: list[str] | None = None,
) -> Any:
    from dataclasses import replace

    from otelbench.loadgen.runner import RunConfig
    from otelbench.procedures.base import ProcedureSpec, placeholder_load
    from otelbench.procedures.profiles import get_profile

    if sut not in (None, "vllm-cpu"):
        raise typer.BadParameter(f"unknown --sut {sut!r}; known: vllm-cpu")
    from otelbench.procedures.configurations import parse_configurations

    configurations = tuple(parse_configurations(config or [], launch or []))
    if sut is not None and target is not None:
        raise typer.BadParameter("give --target URL or --sut vllm-cpu, not both")
    if sut is None and target is None and not configurations:
        raise typer.BadParameter("give --target URL or --sut vllm-cpu (one of them)")
    prof = get_profile(profile)
    params: dict[str, Any] = {} if vocab_size is None else {"vocab_size": vocab_size}
    params.update(key_values(workload_param or [], "--workload-param"))
    body = json_object(extra_body, "--extra-body")
    warmup = None
    if not cold_start:
        warmup = prof.warmup
        if warmup_requests is not None:
            warmup = replace(warmup, min_requests=warmup_requests)
        if warmup_tokens is not None:
            warmup = replace(warmup, min_output_tokens=warmup_tokens)
    base = RunConfig(
        target=target or "",
        model=model,
        load=placeholder_load(),
        seed=seed,
        workload=workload,
        workload_params=params,
        ignore_eos=ignore_eos,
        extra_body=body,
        timeout_s=timeout,
        tokenizer=tokenizer,
        warmup=warmup,
        sut=declared_sut(sut_boundary, sut_hardware, sut_software),
    )
    if vllm_arg and not sut:
        raise typer.BadParameter("--vllm-arg needs --sut vllm-cpu (it configures the launch)")
    vllm_launch: dict[str, Any] | None = None
    if sut:
        vllm_launch = {"max_model_len": max_model_len, "served_model_name": model}
        vllm_launch["extra_args"] = tuple(vllm_arg or ())
    return ProcedureSpec(
        base=base,
        profile=prof,
        out_dir=out,
        launch_vllm_cpu=vllm_launch,
        span_wait_s=span_wait,
        gpus=gpus,
        configurations=configurations,
        store=store,
        otlp_endpoint=otlp_endpoint,
    )


def _run(procedure: Any, spec: Any) -> None:
    from otelbench.procedures.base import run_procedure

    result = run_procedure(procedure, spec)
    typer.echo(result.markdown)
    typer.echo(
        f"otelbench: procedure report written to {spec.out_dir}/procedure.json, "
        f"{spec.out_dir}/procedure.md and {spec.out_dir}/procedure.html",
        err=True,
    )
    if result.interrupted:
        raise typer.Exit(130)


@test_app.command()
def ttft(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    rate: Annotated[float | None, typer.Option(help="Open loop: arrival rate, req/s.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Closed loop: concurrency.")] = None,
    arrival: Arrival = "poisson",
    requests: Annotated[
        int | None, typer.Option(help="Requests (default: the profile's; draft 1,000).")
    ] = None,
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.1 Time to First Token: one level, the TTFT distribution and the 5.1.5 tables."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["ttft"]})
    from otelbench.procedures.ttft import TtftParams, TtftProcedure

    params = TtftParams(rate=rate, concurrency=concurrency, arrival=arrival, requests=requests)
    _run(TtftProcedure(params), spec)


@test_app.command()
def throughput(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    capacity_rps: CapacityRps = None,
    min_rps: Annotated[
        float | None, typer.Option(help="Lowest rate of the search (default 10% of capacity).")
    ] = None,
    max_rps: Annotated[
        float | None, typer.Option(help="Highest rate of the search (default 200% of capacity).")
    ] = None,
    rate_step: Annotated[
        float | None, typer.Option(help="Search resolution, req/s (default: profile × capacity).")
    ] = None,
    load_model: Annotated[
        str,
        typer.Option(help="5.2.2.2: open-loop (search the rate) or closed-loop (the concurrency)."),
    ] = "open-loop",
    min_concurrency: Annotated[
        int | None, typer.Option(help="Closed loop: lowest concurrency (default 1).")
    ] = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option(help="Closed loop: highest concurrency (default 8 × probe concurrency)."),
    ] = None,
    concurrency_step: Annotated[
        int | None, typer.Option(help="Closed loop: search resolution (default 1).")
    ] = None,
    slo_ttft_p99_ms: SloTtft = None,
    slo_tpot_p99_ms: SloTpot = None,
    level_duration: LevelDuration = None,
    min_level_requests: MinLevelRequests = None,
    probe_concurrency: ProbeConcurrency = None,
    probe_requests: ProbeRequests = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.2 Output Token Throughput: binary search for the maximum sustainable rate (open loop)
    or concurrency (closed loop)."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["throughput"]})
    from otelbench.procedures.throughput import ThroughputParams, ThroughputProcedure

    params = ThroughputParams(
        capacity_rps=capacity_rps,
        min_rps=min_rps,
        max_rps=max_rps,
        rate_step=rate_step,
        load_model=load_model,
        min_concurrency=min_concurrency,
        max_concurrency=max_concurrency,
        concurrency_step=concurrency_step,
        level_duration_s=level_duration,
        min_level_requests=min_level_requests,
        probe_concurrency=probe_concurrency,
        probe_requests=probe_requests,
        arrival=arrival,
        slo_ttft_p99_ms=slo_ttft_p99_ms,
        slo_tpot_p99_ms=slo_tpot_p99_ms,
    )
    _run(ThroughputProcedure(params), spec)


@test_app.command("throughput-latency")
def throughput_latency(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    capacity_rps: CapacityRps = None,
    slo_ttft_p99_ms: SloTtft = None,
    slo_tpot_p99_ms: SloTpot = None,
    level_duration: LevelDuration = None,
    min_level_requests: MinLevelRequests = None,
    probe_concurrency: ProbeConcurrency = None,
    probe_requests: ProbeRequests = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.3 Throughput-Latency Tradeoff: 12 open-loop levels, 10%–120% of capacity."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["throughput-latency"]})
    from otelbench.procedures.tradeoff import TradeoffParams, TradeoffProcedure

    params = TradeoffParams(
        capacity_rps=capacity_rps,
        level_duration_s=level_duration,
        min_level_requests=min_level_requests,
        probe_concurrency=probe_concurrency,
        probe_requests=probe_requests,
        arrival=arrival,
        slo_ttft_p99_ms=slo_ttft_p99_ms,
        slo_tpot_p99_ms=slo_tpot_p99_ms,
    )
    _run(TradeoffProcedure(params), spec)


@test_app.command()
def itl(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    saturation_rps: Annotated[
        float | None, typer.Option(help="Saturation throughput, req/s (levels are % of it).")
    ] = None,
    sweep: Annotated[
        Path | None, typer.Option(help="A 5.3 procedure.json: saturation = its throughput peak.")
    ] = None,
    requests: Annotated[
        int | None, typer.Option(help="Requests per level (default: the profile's; draft 100).")
    ] = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.4 Inter-Token Latency Distribution at 25/50/75/90% of saturation."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["itl"]})
    from otelbench.procedures.itl import ItlParams, ItlProcedure

    params = ItlParams(
        saturation_rps=saturation_rps, sweep=sweep, requests=requests, arrival=arrival
    )
    _run(ItlProcedure(params), spec)


@test_app.command()
def capacity(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    initial_concurrency: Annotated[int, typer.Option(help="Starting concurrency.")] = 8,
    max_concurrency: Annotated[int, typer.Option(help="Upper bound of the search.")] = 512,
    slo_ttft_p99_ms: SloTtft = None,
    requests_per_slot: Annotated[
        int | None, typer.Option(help="Completions per slot (default: profile's; draft 100).")
    ] = None,
    min_duration: Annotated[
        float | None, typer.Option(help="Seconds per level at least (default: profile's).")
    ] = None,
    resolution: Annotated[
        float | None, typer.Option(help="Convergence, × the passing concurrency (0: exact).")
    ] = None,
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.5 Concurrent Request Capacity: binary search on closed-loop concurrency."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["capacity"]})
    from otelbench.procedures.capacity import CapacityParams, CapacityProcedure

    params = CapacityParams(
        initial_concurrency=initial_concurrency,
        max_concurrency=max_concurrency,
        slo_ttft_p99_ms=slo_ttft_p99_ms,
        requests_per_slot=requests_per_slot,
        min_duration_s=min_duration,
        resolution=resolution,
    )
    _run(CapacityProcedure(params), spec)


@test_app.command()
def fairness(
    out: Out,
    model: Model,
    rate: Annotated[float, typer.Option(help="The mixed run's arrival rate, req/s.")],
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    short_ratio: Annotated[float, typer.Option(help="Share of short requests (draft 0.8).")] = 0.8,
    requests: Annotated[
        int | None,
        typer.Option(help="Mixed-run requests (default: 500 of the smaller class; draft)."),
    ] = None,
    isolated_rate: Annotated[
        float | None,
        typer.Option(help="Each class alone at this rate (default: its share of --rate)."),
    ] = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "mixed-classes",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.6 Scheduling Fairness: each request class alone, then the 80/20 mix."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["fairness"]})
    from otelbench.procedures.fairness import FairnessParams, FairnessProcedure

    params = FairnessParams(
        rate=rate,
        short_ratio=short_ratio,
        requests=requests,
        isolated_rate=isolated_rate,
        arrival=arrival,
    )
    _run(FairnessProcedure(params), spec)


@test_app.command("long-context")
def long_context(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    length: Annotated[
        list[int] | None,
        typer.Option(help="Context length, tokens (repeatable; default 1K…128K, draft 5.9.2)."),
    ] = None,
    max_context_len: Annotated[
        int | None,
        typer.Option(help="The SUT's context window (default: --max-model-len with --sut)."),
    ] = None,
    output_tokens: Annotated[int, typer.Option(help="Output tokens per request.")] = 256,
    requests: Annotated[
        int | None, typer.Option(help="Requests per length (default: the profile's; draft 20).")
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Closed-loop concurrency (draft 1-4).")] = 1,
    seed: Seed = 42,
    workload: Workload = "long-context",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.9 Long Context Scaling: one level per input length, TTFT scaling fits."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["long-context"]})
    from otelbench.procedures.long_context import (
        DRAFT_CONTEXT_LENGTHS,
        LongContextParams,
        LongContextProcedure,
    )

    if max_context_len is None and sut is not None:
        max_context_len = max_model_len
    params = LongContextParams(
        lengths=tuple(length) if length else DRAFT_CONTEXT_LENGTHS,
        max_context_len=max_context_len,
        output_tokens=output_tokens,
        requests=requests,
        concurrency=concurrency,
    )
    _run(LongContextProcedure(params), spec)


@test_app.command("prefix-cache")
def prefix_cache(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            help="A configuration: 'disabled=URL' / 'enabled=URL', or LABEL='vllm-cpu ARGS' "
            "(default with --sut vllm-cpu: --no-enable-prefix-caching / --enable-prefix-caching)."
        ),
    ] = None,
    launch: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=COMMAND that starts that configuration's URL (restarted)."),
    ] = None,
    profile: ProfileOpt = "draft",
    concurrency: Annotated[
        int | None, typer.Option(help="Closed loop: concurrency (default 4).")
    ] = None,
    rate: Annotated[float | None, typer.Option(help="Open loop: arrival rate, req/s.")] = None,
    arrival: Arrival = "poisson",
    requests: Annotated[
        int | None, typer.Option(help="Requests per level (default: the profile's; draft 1,000).")
    ] = None,
    warm: Annotated[bool, typer.Option(help="Run the warm-cache level too.")] = True,
    seed: Seed = 42,
    workload: Workload = "code-completion",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.7 Prefix Cache Effectiveness: cache disabled, then enabled cold and warm (Table 10)."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["prefix-cache"]})
    from otelbench.procedures.prefix_cache import PrefixCacheParams, PrefixCacheProcedure

    params = PrefixCacheParams(
        concurrency=concurrency, rate=rate, arrival=arrival, requests=requests, warm=warm
    )
    _run(PrefixCacheProcedure(params), spec)


@test_app.command("guardrail-overhead")
def guardrail_overhead(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    guardrails: Annotated[
        Path | None,
        typer.Option(
            help="Guardrail configuration file (the 'full' set): baseline, input, output and "
            "full derive from it (middleware in vLLM with --sut vllm-cpu, else otelbench "
            "gateway in front of --target)."
        ),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=URL (baseline, input, output, full) instead of --guardrails."),
    ] = None,
    launch: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=COMMAND that starts that configuration's URL (restarted)."),
    ] = None,
    profile: ProfileOpt = "draft",
    capacity_rps: CapacityRps = None,
    fraction: Annotated[
        list[float] | None,
        typer.Option(help="Load level as a fraction of capacity (repeatable; 0.25 0.5 0.75)."),
    ] = None,
    level_duration: LevelDuration = None,
    min_level_requests: MinLevelRequests = None,
    probe_concurrency: ProbeConcurrency = None,
    probe_requests: ProbeRequests = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "conversation",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.10 Guardrail Overhead: baseline, input, output, full filtering (Tables 13, 14)."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["guardrail-overhead"]})
    from otelbench.procedures.guardrail_overhead import (
        GUARDRAIL_FRACTIONS,
        GuardrailOverheadParams,
        GuardrailOverheadProcedure,
    )

    params = GuardrailOverheadParams(
        guardrails=guardrails,
        capacity_rps=capacity_rps,
        fractions=tuple(fraction) if fraction else GUARDRAIL_FRACTIONS,
        level_duration_s=level_duration,
        min_level_requests=min_level_requests,
        probe_concurrency=probe_concurrency,
        probe_requests=probe_requests,
        arrival=arrival,
    )
    _run(GuardrailOverheadProcedure(params), spec)


_COMMON_EXCLUDED: set[str] = set()
_OWN: dict[str, set[str]] = {
    "ttft": _COMMON_EXCLUDED | {"rate", "concurrency", "arrival", "requests"},
    "throughput": _COMMON_EXCLUDED
    | {
        "capacity_rps",
        "min_rps",
        "max_rps",
        "rate_step",
        "load_model",
        "min_concurrency",
        "max_concurrency",
        "concurrency_step",
        "slo_ttft_p99_ms",
        "slo_tpot_p99_ms",
        "level_duration",
        "min_level_requests",
        "probe_concurrency",
        "probe_requests",
        "arrival",
    },
    "throughput-latency": _COMMON_EXCLUDED
    | {
        "capacity_rps",
        "slo_ttft_p99_ms",
        "slo_tpot_p99_ms",
        "level_duration",
        "min_level_requests",
        "probe_concurrency",
        "probe_requests",
        "arrival",
    },
    "itl": _COMMON_EXCLUDED | {"saturation_rps", "sweep", "requests", "arrival"},
    "capacity": _COMMON_EXCLUDED
    | {
        "initial_concurrency",
        "max_concurrency",
        "slo_ttft_p99_ms",
        "requests_per_slot",
        "min_duration",
        "resolution",
    },
    "fairness": _COMMON_EXCLUDED | {"rate", "short_ratio", "requests", "isolated_rate", "arrival"},
    "long-context": _COMMON_EXCLUDED
    | {"length", "max_context_len", "output_tokens", "requests", "concurrency"},
    "prefix-cache": _COMMON_EXCLUDED | {"concurrency", "rate", "arrival", "requests", "warm"},
    "guardrail-overhead": _COMMON_EXCLUDED
    | {
        "guardrails",
        "capacity_rps",
        "fraction",
        "level_duration",
        "min_level_requests",
        "probe_concurrency",
        "probe_requests",
        "arrival",
    },
}
"""Each command's own options (and local names), left out of the common spec."""


# ------------------------------------------------------------------------------------------
# 5.8 Memory pressure and Etalon's fluidity capacity evaluation
# ------------------------------------------------------------------------------------------


@test_app.command("memory-pressure")
def memory_pressure(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    capacity_report: Annotated[
        Path | None, typer.Option(help="A 5.5 procedure.json: capacity = its max concurrency.")
    ] = None,
    capacity_concurrency: Annotated[
        int | None,
        typer.Option(
            "--capacity",
            help="The 5.5 capacity (max concurrency); without it or --capacity-report, 5.5's "
            "search runs first.",
        ),
    ] = None,
    level: Annotated[
        list[float] | None,
        typer.Option(help="Oversubscription level, % of capacity (repeatable; 100 110 125 150)."),
    ] = None,
    level_duration: Annotated[
        float | None,
        typer.Option(help="Seconds per level at least (default: draft 120, quick profile's)."),
    ] = None,
    min_level_requests: MinLevelRequests = None,
    max_context_len: Annotated[
        int | None,
        typer.Option(
            help="The target's context window (default: --max-model-len with --sut, else the "
            "target's /v1/models)."
        ),
    ] = None,
    output_tokens: Annotated[int, typer.Option(help="Long Context output tokens (A.5).")] = 256,
    initial_concurrency: Annotated[
        int, typer.Option(help="5.5 search (when it runs): starting concurrency.")
    ] = 8,
    max_concurrency: Annotated[
        int, typer.Option(help="5.5 search (when it runs): upper bound.")
    ] = 512,
    slo_ttft_p99_ms: Annotated[
        float | None, typer.Option(help="5.5 search (when it runs): TTFT P99 limit, ms.")
    ] = None,
    seed: Seed = 42,
    workload: Annotated[
        str, typer.Option(help="Workload (5.8.2 recommends long-context).")
    ] = "long-context",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """5.8 Memory Pressure: closed-loop levels at 100/110/125/150% of the 5.5 capacity."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["memory-pressure"]})
    from otelbench.procedures.capacity import CapacityParams
    from otelbench.procedures.memory_pressure import (
        DEFAULT_OVERSUBSCRIPTION,
        MemoryPressureParams,
        MemoryPressureProcedure,
    )

    params = MemoryPressureParams(
        capacity=capacity_concurrency,
        capacity_report=capacity_report,
        levels=tuple(v / 100.0 for v in level) if level else DEFAULT_OVERSUBSCRIPTION,
        level_duration_s=level_duration,
        min_level_requests=min_level_requests,
        workload=workload,
        max_context_len=max_context_len,
        output_tokens=output_tokens,
        search=CapacityParams(
            initial_concurrency=initial_concurrency,
            max_concurrency=max_concurrency,
            slo_ttft_p99_ms=slo_ttft_p99_ms,
        ),
    )
    _run(MemoryPressureProcedure(params), spec)


@test_app.command()
def fluidity(
    out: Out,
    model: Model,
    target: Target = None,
    sut: Sut = None,
    profile: ProfileOpt = "draft",
    decode_deadline_ms: Annotated[
        float, typer.Option(help="D_d, the per-token deadline (Etalon §4.1: 25/50/100 ms).")
    ] = 25.0,
    prefill_deadline_ms: Annotated[
        float | None,
        typer.Option(
            help="A fixed D_p for every request (default: Etalon's D_p(L) = prefill(L) + S, "
            "profiled in isolation, §4.1)."
        ),
    ] = None,
    scheduling_slack_ms: Annotated[
        float, typer.Option(help="S of the profiled D_p (Etalon §4.1: 500 ms, interactive).")
    ] = 500.0,
    profile_requests: Annotated[
        int, typer.Option(help="Isolated requests per prompt length of the profile (Etalon 10).")
    ] = 10,
    profile_length: Annotated[
        list[int] | None,
        typer.Option(help="Prompt length to profile (repeatable, >= 3; default: the workload's)."),
    ] = None,
    min_fluidity: Annotated[
        float, typer.Option(help="Fluidity-index a request must reach (Etalon §5.2: 0.9).")
    ] = 0.9,
    request_fraction: Annotated[
        float, typer.Option(help="Share of requests that must reach it (Etalon §5.2: 0.99).")
    ] = 0.99,
    capacity_rps: CapacityRps = None,
    min_rps: Annotated[
        float | None, typer.Option(help="Lowest rate of the search (default 10% of capacity).")
    ] = None,
    max_rps: Annotated[
        float | None, typer.Option(help="Highest rate of the search (default 200% of capacity).")
    ] = None,
    rate_step: Annotated[
        float | None, typer.Option(help="Search resolution, req/s (default: profile × capacity).")
    ] = None,
    level_duration: LevelDuration = None,
    min_level_requests: MinLevelRequests = None,
    probe_concurrency: ProbeConcurrency = None,
    probe_requests: ProbeRequests = None,
    arrival: Arrival = "poisson",
    seed: Seed = 42,
    workload: Workload = "synthetic-uniform",
    workload_param: WorkloadParam = None,
    vocab_size: VocabSize = None,
    ignore_eos: IgnoreEos = False,
    extra_body: ExtraBody = None,
    timeout: Timeout = 600.0,
    tokenizer: Tokenizer = None,
    cold_start: ColdStart = False,
    warmup_requests: WarmupRequests = None,
    warmup_tokens: WarmupTokens = None,
    span_wait: SpanWait = None,
    max_model_len: MaxModelLen = 1024,
    vllm_arg: VllmArg = None,
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
    store: StoreOpt = None,
    otlp_endpoint: OtlpEndpoint = None,
) -> None:
    """Etalon capacity evaluation: the highest rate meeting a fluidity-index SLO (§4.2)."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["fluidity"]})
    from otelbench.procedures.fluidity import FluidityParams, FluidityProcedure

    params = FluidityParams(
        decode_deadline_s=decode_deadline_ms / 1000.0,
        prefill_deadline_s=None if prefill_deadline_ms is None else prefill_deadline_ms / 1000.0,
        scheduling_slack_s=scheduling_slack_ms / 1000.0,
        profile_requests=profile_requests,
        profile_lengths=tuple(profile_length) if profile_length else None,
        min_fluidity=min_fluidity,
        request_fraction=request_fraction,
        capacity_rps=capacity_rps,
        min_rps=min_rps,
        max_rps=max_rps,
        rate_step=rate_step,
        level_duration_s=level_duration,
        min_level_requests=min_level_requests,
        probe_concurrency=probe_concurrency,
        probe_requests=probe_requests,
        arrival=arrival,
    )
    _run(FluidityProcedure(params), spec)


_OWN["memory-pressure"] = _COMMON_EXCLUDED | {
    "capacity_report",
    "capacity_concurrency",
    "level",
    "level_duration",
    "min_level_requests",
    "max_context_len",
    "output_tokens",
    "initial_concurrency",
    "max_concurrency",
    "slo_ttft_p99_ms",
}
_OWN["fluidity"] = _COMMON_EXCLUDED | {
    "decode_deadline_ms",
    "prefill_deadline_ms",
    "scheduling_slack_ms",
    "profile_requests",
    "profile_length",
    "min_fluidity",
    "request_fraction",
    "capacity_rps",
    "min_rps",
    "max_rps",
    "rate_step",
    "level_duration",
    "min_level_requests",
    "probe_concurrency",
    "probe_requests",
    "arrival",
}
