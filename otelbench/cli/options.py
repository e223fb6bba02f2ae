"""The options shared by the commands, and the machinery that makes typer options of dataclass
fields (their help, name and unit in :mod:`otelbench.options` metadata).

:class:`CommonOptions` are the options of ``otelbench run`` and every ``otelbench test`` command
(target, workload, request, warm-up, SUT and store); :func:`dataclass_options` lists the options of
a dataclass's fields and :func:`make_command` builds a typer command function from such lists, its
signature made with :class:`inspect.Parameter` and ``typer.Option``; the values typer does not
parse (``KEY=VALUE`` lists, JSON objects, ``--prompt-format``) are parsed by
:mod:`otelbench.options`. The HTTPS options of the servers (``otelbench collector``,
``otelbench gateway``) sit here too: :data:`TlsCert`, :data:`TlsKey`.

Example::

    opts = dataclass_options(CommonOptions)
    command = make_command("Run it.", opts, lambda values: print(values["model"]))
    typer.Typer().command("x")(command)
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from otelbench.errors import ConfigError
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.sut import SutDeclaration
from otelbench.options import (
    METADATA_KEY,
    OptionMeta,
    OptionValue,
    OptionValues,
    key_values,
    option,
)
from otelbench.sut.description import FLAGS, from_flags, sut_description

__all__ = [
    "CommonOptions",
    "Opt",
    "TlsCert",
    "TlsKey",
    "dataclass_options",
    "declared_sut",
    "from_values",
    "make_command",
    "workload_params",
]

TlsCert = Annotated[
    Path | None, typer.Option(help="Serve HTTPS with this PEM certificate (and --tls-key).")
]
"""``--tls-cert`` of a server command."""
TlsKey = Annotated[Path | None, typer.Option(help="The PEM private key of --tls-cert.")]
"""``--tls-key`` of a server command."""


LOADGEN_CPUS_HELP: Final = (
    "CPUs of the load generator's own, e.g. 0, 0-3 or 0,2,4-7: each measuring event loop on one "
    "of them; the collector, a launched SUT and the rest of otelbench on the other CPUs (the "
    "report reads both back)."
)


@dataclasses.dataclass(frozen=True)
class CommonOptions:
    """The options ``otelbench run`` and every ``otelbench test`` command share."""

    out: Path = option(
        help="New directory for the spans and the reports (run: report.json/.md/.html; test: "
        "procedure.json/.md/.html and levels/)."
    )
    model: str = option(help="Model name to request (the target's served name).")
    target: str | None = option(None, help="Base URL of an OpenAI-compatible server.")
    sut: str | None = option(
        None,
        help="Launch the system under test: 'vllm-cpu' starts the tiny vLLM on CPU (once for "
        "all levels of a procedure).",
    )
    seed: int = option(42, help="Seed of the workload and the arrival schedules.")
    workload: str = option(
        "synthetic-uniform",
        help="Workload: synthetic-uniform, synthetic-skewed, conversation, sharegpt, "
        "code-completion, long-context, mixed-classes, file (draft Appendix A).",
    )
    workload_param: list[str] | None = option(
        None,
        help="KEY=VALUE parameter of the workload (repeatable; VALUE read as JSON when it "
        "parses, e.g. max_context_len=1024 or path=sharegpt.json).",
    )
    vocab_size: int | None = option(
        None, help="Vocabulary size for random token-id prompts (default: draft A.1's)."
    )
    ignore_eos: bool = option(
        False, help="Ask the server to ignore EOS so outputs reach max_tokens (vLLM)."
    )
    extra_body: str | None = option(
        None, help="JSON object merged into every request body (server-specific fields)."
    )
    timeout: float = option(600.0, help="Per-request timeout, seconds.")
    tokenizer: str | None = option(
        None,
        help="Draft 4.4: cl100k_base (Option B), a tokenizer.json path, or 'server' (the "
        "target's /tokenize). Text workloads tokenize with it; the report declares it.",
    )
    cold_start: bool = option(
        False, help="Skip the warm-up and report a cold-start measurement (4.5.3)."
    )
    warmup_requests: int | None = option(
        None,
        help="Warm-up: at least this many requests (run: draft 4.5's 100; test: the profile's).",
    )
    warmup_tokens: int | None = option(
        None,
        help="Warm-up: at least this many output tokens (run: draft 4.5's 10,000; test: the "
        "profile's).",
    )
    span_wait: float | None = option(
        None,
        help="Longest wait for the target's spans after the load (of each level), s "
        "(default: auto).",
    )
    workers: int | None = option(
        None,
        help="Load-generator processes sharing the measured load (default: from the cores and "
        "the load; the report says which).",
    )
    loadgen_cpus: str | None = option(None, help=LOADGEN_CPUS_HELP)
    max_model_len: int = option(1024, help="With --sut vllm-cpu.")
    sut_boundary: str | None = option(
        None, help="Declare the SUT boundary (draft 4.1): Model Engine, Gateway, Compound."
    )
    sut_hardware: str | None = option(None, help="Declare the target's hardware for the report.")
    sut_software: str | None = option(None, help="Declare the target's software and version.")
    sut_config: Path | None = option(
        None,
        help="YAML file declaring the SUT (otelbench.sut.description); --sut-* flags replace "
        "its fields.",
    )
    sut_model_version: str | None = option(None, help="Declare the model's version (5.1.2.3).")
    sut_quantization: str | None = option(None, help="Declare its quantization, or none.")
    sut_prefix_caching: str | None = option(None, help="Declare prefix caching: enabled/disabled.")
    sut_clock_sync: str | None = option(None, help="Declare the clock sync method (4.7.2).")
    sut_clock_accuracy_ms: float | None = option(None, help="Declare its accuracy, ms (4.7.2).")
    sut_input_filter: str | None = option(None, help="Declare the input safety filter, or none.")
    sut_output_filter: str | None = option(None, help="Declare the output safety filter, or none.")
    store: str | None = option(
        None,
        help="Span store: a DuckDB file (default OUT/spans.duckdb), chdb:///abs/dir or "
        "clickhouse://user:password@host:port/database. With --otlp-endpoint: the store "
        "that collector writes (a ClickHouse server is polled for the run's spans).",
    )
    otlp_endpoint: str | None = option(
        None,
        help="Export spans to this OTLP/HTTP collector instead of the embedded one; it must "
        "write --store.",
    )


@dataclasses.dataclass(frozen=True)
class Opt:
    """One command-line option made from a dataclass field (or a nested dataclass's field)."""

    name: str
    """The parameter name; typer's option is ``--`` + it with ``-`` for ``_``."""
    hint: Any
    default: Any
    help: str
    field: str
    """The field it sets (in ``nested`` when that is not None)."""
    scale: float | None = None
    repeatable: bool = False
    nested: str | None = None


def _is_tuple(hint: Any) -> Any:
    """``T`` when ``hint`` is ``tuple[T, ...]`` (or that or None), else None."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for arg in args:
        if typing.get_origin(arg) is tuple:
            return typing.get_args(arg)[0]
    return None


def dataclass_options(
    cls: type[Any], *, defaults: OptionValues | None = None, nested: str | None = None
) -> list[Opt]:
    """The options of ``cls``'s fields that carry :mod:`otelbench.options` metadata, in field
    order; ``defaults`` overrides some (by option name). A tuple field is a repeatable option
    (default None: the field's own default); a scaled field's default is shown scaled."""
    hints = typing.get_type_hints(cls)
    out: list[Opt] = []
    for f in dataclasses.fields(cls):
        meta: OptionMeta | None = f.metadata.get(METADATA_KEY)
        if meta is None or meta.common:
            continue
        if meta.nested_help is not None:
            for sub in dataclass_options(hints[f.name], nested=f.name):
                if sub.name in meta.nested_help:
                    out.append(dataclasses.replace(sub, help=meta.nested_help[sub.name]))
            continue
        item = _is_tuple(hints[f.name])
        name = meta.name or f.name
        default: Any
        if item is not None:
            hint, default = list[item] | None, None  # type: ignore[valid-type]
        else:
            hint = hints[f.name]
            default = f.default
            if default is dataclasses.MISSING:
                default = inspect.Parameter.empty
            elif meta.scale is not None and default is not None:
                default = default * meta.scale
        if defaults and name in defaults:
            default = defaults[name]
        out.append(
            Opt(name, hint, default, meta.help, f.name, meta.scale, item is not None, nested)
        )
    return out


def from_values(
    cls: type[Any], options: Sequence[Opt], values: Mapping[str, OptionValue], **extra: object
) -> Any:
    """``cls`` built from the command's option ``values`` (the inverse of the options' scale and
    repetition) and ``extra`` fields; a repeatable option not given leaves the field's default."""
    kwargs: dict[str, object] = dict(extra)  # passed on to cls, whose fields made the options
    nested: dict[str, dict[str, object]] = {}
    for o in options:
        value: object = values[o.name]
        if o.repeatable:
            if not isinstance(value, list) or not value:
                continue
            value = tuple(v / o.scale for v in value) if o.scale else tuple(value)
        elif o.scale is not None and isinstance(value, int | float):  # a scaled field: a number
            value = value / o.scale
        (nested.setdefault(o.nested, {}) if o.nested else kwargs)[o.field] = value
    hints = typing.get_type_hints(cls)
    for name, sub in nested.items():
        kwargs[name] = hints[name](**sub)
    return cls(**kwargs)


def make_command(doc: str, options: Sequence[Opt], body: Callable[[OptionValues], None]) -> Any:
    """A typer command function whose options are ``options`` and that calls ``body`` with
    the values by option name (its signature built with :class:`inspect.Parameter`)."""
    params = [
        inspect.Parameter(
            o.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=o.default,
            annotation=Annotated[o.hint, typer.Option(help=o.help)],
        )
        for o in options
    ]

    def command(**values: OptionValue) -> None:
        body(values)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = doc
    return command


def workload_params(workload: str, items: list[str] | None, base: JsonObject) -> JsonObject:
    """``base`` (set by other options) updated with the ``--workload-param`` ``items``; a name the
    workload does not take or a mistyped value is a usage error (exit 2) listing what it takes."""
    from otelbench.loadgen.workloads import check_workload_params, workload_parameters

    params = {**base, **key_values(items or [], "--workload-param")}
    workload_parameters(workload)
    try:
        check_workload_params(workload, params, complete=False)
    except ConfigError as err:
        raise typer.BadParameter(str(err), param_hint="'--workload-param'") from None
    return params


def declared_sut(c: CommonOptions) -> SutDeclaration:
    """The SUT as the user declared it: ``--sut-config`` with the ``--sut-*`` flags on top
    (validated: :func:`otelbench.sut.description.sut_description`)."""
    return sut_description(c.sut_config, from_flags({f: getattr(c, f) for f in FLAGS}))
