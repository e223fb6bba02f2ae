"""``otelbench test …``: the draft's test procedures on the command line, each command generated
from its procedure's ``Params`` dataclass (:mod:`otelbench.options` metadata) and the options it
shares with ``otelbench run`` (:class:`~otelbench.cli.options.CommonOptions`).

Commands (one per draft section)::

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
``--store clickhouse://…``) or ``--collector-port PORT`` (the embedded collector listens there,
where a running ``--target``'s tracer already exports). It writes ``DIR/procedure.json``,
``DIR/procedure.md``, ``DIR/procedure.html``, ``DIR/spans.duckdb`` (or the ``--store``) and each
level's run report (JSON, Markdown, HTML) under ``DIR/levels/NN/``, prints ``procedure.md`` and
shows its progress on stderr. 5.7 and 5.10 run the target in several configurations and restart
it between them (:mod:`otelbench.procedures.configurations`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from otelbench.cli.options import (
    CommonOptions,
    Opt,
    dataclass_options,
    from_values,
    make_command,
    workload_params,
)
from otelbench.cli.run import run_config
from otelbench.options import OptionValues, option
from otelbench.procedures import (
    CapacityProcedure,
    FairnessProcedure,
    FluidityProcedure,
    GuardrailOverheadProcedure,
    ItlProcedure,
    LongContextProcedure,
    MemoryPressureProcedure,
    PrefixCacheProcedure,
    Procedure,
    ProcedureSpec,
    ThroughputProcedure,
    TradeoffProcedure,
    TtftProcedure,
)

if TYPE_CHECKING:
    from otelbench.benchmark import VllmLaunch
    from otelbench.model.jsonvalue import JsonObject

__all__ = ["ProcedureOptions", "test_app"]

# A sub-app: completion and tracebacks are the root app's (otelbench.cli.app) to set.
test_app = typer.Typer(
    no_args_is_help=True,
    help="The draft's test procedures (section 5): sequences of load levels and their report.",
)


@dataclasses.dataclass(frozen=True)
class ProcedureOptions:
    """The options of every ``otelbench test`` command that ``otelbench run`` lacks."""

    profile: str = option(
        "draft", help="Defaults: 'draft' (the draft's minimums) or 'quick' (a demo)."
    )
    vllm_arg: list[str] | None = option(
        None,
        help="With --sut vllm-cpu: one more `vllm serve` argument (repeatable), e.g. "
        "--vllm-arg=--num-gpu-blocks-override --vllm-arg=64.",
    )
    gpus: int = option(0, help="Accelerators of the SUT (tokens per GPU-second).")
    collector_port: int = option(
        0,
        help="The embedded collector's loopback port (default: a free one): the port a running "
        "--target's tracer exports to (`vllm serve --otlp-traces-endpoint "
        "http://127.0.0.1:PORT/v1/traces`), so that its spans join the levels.",
    )


@dataclasses.dataclass(frozen=True)
class ConfigurationOptions:
    """5.7's and 5.10's SUT configurations (:mod:`otelbench.procedures.configurations`)."""

    config: list[str] | None = option(None, help="A configuration: LABEL=URL (or see below).")
    launch: list[str] | None = option(
        None, help="LABEL=COMMAND that starts that configuration's URL (restarted)."
    )


_CONFIG_HELP = {
    "prefix-cache": "A configuration: 'disabled=URL' / 'enabled=URL', or LABEL='vllm-cpu ARGS' "
    "(default with --sut vllm-cpu: --no-enable-prefix-caching / --enable-prefix-caching).",
    "guardrail-overhead": "LABEL=URL (baseline, input, output, full) instead of --guardrails.",
}


def _spec(c: CommonOptions, p: ProcedureOptions, config: list[str], launch: list[str]) -> Any:
    from otelbench.procedures.base import placeholder_load
    from otelbench.procedures.configurations import parse_configurations
    from otelbench.procedures.profiles import get_profile

    if c.sut not in (None, "vllm-cpu"):
        raise typer.BadParameter(f"unknown --sut {c.sut!r}; known: vllm-cpu")
    configurations = tuple(parse_configurations(config, launch))
    if c.sut is not None and c.target is not None:
        raise typer.BadParameter("give --target URL or --sut vllm-cpu, not both")
    if c.sut is None and c.target is None and not configurations:
        raise typer.BadParameter("give --target URL or --sut vllm-cpu (one of them)")
    prof = get_profile(p.profile)
    vocab: JsonObject = {} if c.vocab_size is None else {"vocab_size": c.vocab_size}
    params = workload_params(c.workload, c.workload_param, vocab)
    warmup = None
    if not c.cold_start:
        warmup = prof.warmup
        if c.warmup_requests is not None:
            warmup = dataclasses.replace(warmup, min_requests=c.warmup_requests)
        if c.warmup_tokens is not None:
            warmup = dataclasses.replace(warmup, min_output_tokens=c.warmup_tokens)
    base = run_config(c, load=placeholder_load(), warmup=warmup, workload_params=params)
    if p.vllm_arg and not c.sut:
        raise typer.BadParameter("--vllm-arg needs --sut vllm-cpu (it configures the launch)")
    vllm_launch: VllmLaunch | None = None
    if c.sut:
        vllm_launch = {
            "max_model_len": c.max_model_len,
            "served_model_name": c.model,
            "extra_args": tuple(p.vllm_arg or ()),
        }
    return ProcedureSpec(
        base=base,
        profile=prof,
        out_dir=c.out,
        launch_vllm_cpu=vllm_launch,
        span_wait_s=c.span_wait,
        gpus=p.gpus,
        configurations=configurations,
        store=c.store,
        otlp_endpoint=c.otlp_endpoint,
        collector_port=p.collector_port,
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


def _context_window(values: OptionValues) -> None:
    """5.9: the context window defaults to ``--max-model-len`` with ``--sut``."""
    if values["max_context_len"] is None and values["sut"] is not None:
        values["max_context_len"] = values["max_model_len"]


def register(
    name: str,
    procedure: type[Procedure[Any, Any]],
    doc: str,
    *,
    workload: str = "synthetic-uniform",
    prepare: Callable[[OptionValues], None] | None = None,
) -> None:
    """Add ``otelbench test NAME``: the common options, ``procedure``'s ``Params`` fields, and
    for 5.7/5.10 ``--config``/``--launch``; ``prepare`` may adjust the values first."""
    params_cls = procedure.params_type
    common = dataclass_options(CommonOptions, defaults={"workload": workload})
    own = dataclass_options(params_cls)
    configs = []
    if name in _CONFIG_HELP:
        configs = dataclass_options(ConfigurationOptions)
        configs[0] = dataclasses.replace(configs[0], help=_CONFIG_HELP[name])
    first = [o for o in common if o.name in ("out", "model", "target", "sut")]
    rest = [o for o in common if o not in first]
    extra = dataclass_options(ProcedureOptions)
    shared = {f.name for f in dataclasses.fields(params_cls)} & {o.name for o in common}
    options: list[Opt] = [*first, *configs, extra[0], *own, *rest, *extra[1:]]

    def body(values: OptionValues) -> None:
        if prepare is not None:
            prepare(values)
        chosen: ConfigurationOptions = from_values(ConfigurationOptions, configs, values)
        spec = _spec(
            from_values(CommonOptions, common, values),
            from_values(ProcedureOptions, extra, values),
            chosen.config or [],
            chosen.launch or [],
        )
        commons = {n: values[n] for n in shared}
        _run(procedure(from_values(params_cls, own, values, **commons)), spec)

    test_app.command(name)(make_command(doc, options, body))


register(
    "ttft",
    TtftProcedure,
    "5.1 Time to First Token: one level, the TTFT distribution and the 5.1.5 tables.",
)
register(
    "throughput",
    ThroughputProcedure,
    "5.2 Output Token Throughput: binary search for the "
    "maximum sustainable rate (open loop) or concurrency (closed loop).",
)
register(
    "throughput-latency",
    TradeoffProcedure,
    "5.3 Throughput-Latency Tradeoff: 12 open-loop levels, 10%–120% of capacity.",
)
register("itl", ItlProcedure, "5.4 Inter-Token Latency Distribution at 25/50/75/90% of saturation.")
register(
    "capacity",
    CapacityProcedure,
    "5.5 Concurrent Request Capacity: binary search on closed-loop concurrency.",
)
register(
    "fairness",
    FairnessProcedure,
    "5.6 Scheduling Fairness: each request class alone, then the 80/20 mix.",
    workload="mixed-classes",
)
register(
    "prefix-cache",
    PrefixCacheProcedure,
    "5.7 Prefix Cache Effectiveness: cache disabled, then enabled cold and warm (Table 10).",
    workload="code-completion",
)
register(
    "memory-pressure",
    MemoryPressureProcedure,
    "5.8 Memory Pressure: closed-loop levels at 100/110/125/150% of the 5.5 capacity.",
    workload="long-context",
)
register(
    "long-context",
    LongContextProcedure,
    "5.9 Long Context Scaling: one level per input length, TTFT scaling fits.",
    workload="long-context",
    prepare=_context_window,
)
register(
    "guardrail-overhead",
    GuardrailOverheadProcedure,
    "5.10 Guardrail Overhead: baseline, input, output, full filtering (Tables 13, 14).",
    workload="conversation",
)
register(
    "fluidity",
    FluidityProcedure,
    "Etalon capacity evaluation: the highest rate meeting a fluidity-index SLO (§4.2).",
)
