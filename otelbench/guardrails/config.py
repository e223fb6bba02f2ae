"""The guardrail configuration file (YAML or JSON), validated eagerly into typed settings.

A bad file gets ONE :class:`~otelbench.errors.ConfigError` that names the file and the field
(``guardrails.yaml: input[1].timeout_ms: want a number > 0, got 'fast'``). Format::

    block_response: error        # error (HTTP error, OpenAI-style body) | completion (refusal)
    block_status: 400            # HTTP status of a block_response=error refusal
    refusal_message: "I can't help with that."
    output_window: 32            # characters held back for output filters (0: per chunk)
    timeout_ms: 1000             # default per-filter timeout
    on_error: closed             # default: a filter that fails or times out blocks (open: allows)
    input:                       # run on the request, in order, before the engine sees it
      - type: max_input_length
        max_chars: 20000
      - type: blocklist
        name: banned-words       # the name on spans and metrics (default: the type)
        keywords: [forbidden]
        patterns: ['\\bsecret-\\d+']
    output:                      # run on the streamed response
      - type: pii
        kinds: [email, card]
        models: [tiny]           # only for requests to these models (default: all)
        timeout_ms: 50
        on_error: open

Every filter entry takes ``type`` (a name from :mod:`~otelbench.guardrails.registry`), ``name``,
``timeout_ms``, ``on_error`` (``open`` | ``closed``) and ``models``; the other keys are the filter
class's keyword arguments. Draft 4.8.1 asks for the configuration to be disclosed:
:meth:`GuardrailConfig.resource_attributes` gives it as resource attributes.

Example::

    cfg = load_config("guardrails.yaml")
    print(cfg.input[0].name, cfg.output_window, cfg.sha256[:12])
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from opentelemetry.util.types import AttributeValue

from otelbench import semconv
from otelbench.documents import read_document
from otelbench.errors import ConfigError
from otelbench.guardrails.base import GuardrailFilter, Stage
from otelbench.guardrails.registry import filter_class

__all__ = ["FilterSpec", "GuardrailConfig", "config_from_env", "load_config", "parse_config"]

OnError = Literal["open", "closed"]
BlockResponse = Literal["error", "completion"]

DEFAULT_TIMEOUT_MS = 1000.0
DEFAULT_ON_ERROR: OnError = "closed"
DEFAULT_REFUSAL = "I'm sorry, but I can't help with that request."
_TOP_KEYS = (
    "version",
    "block_response",
    "block_status",
    "refusal_message",
    "output_window",
    "timeout_ms",
    "on_error",
    "input",
    "output",
)
_COMMON_KEYS = ("type", "name", "timeout_ms", "on_error", "models")


@dataclass(frozen=True)
class FilterSpec:
    """One configured filter: where it runs, its limits, and the built filter itself."""

    type: str
    name: str
    stage: Stage
    timeout_s: float
    on_error: OnError
    models: frozenset[str] | None
    """None: every model; else only requests whose ``model`` is in the set."""
    filter: GuardrailFilter = field(compare=False, repr=False)

    def applies_to(self, model: str | None) -> bool:
        return self.models is None or (model is not None and model in self.models)


@dataclass(frozen=True)
class GuardrailConfig:
    """The whole guardrail configuration. ``GuardrailConfig()`` is "no guardrails"."""

    input: tuple[FilterSpec, ...] = ()
    output: tuple[FilterSpec, ...] = ()
    output_window: int = 0
    block_response: BlockResponse = "error"
    block_status: int = 400
    refusal_message: str = DEFAULT_REFUSAL
    sha256: str = ""
    """SHA-256 of the file's bytes (empty when built in code)."""
    source: str | None = None

    @property
    def filters(self) -> tuple[FilterSpec, ...]:
        return self.input + self.output

    def resource_attributes(self) -> dict[str, AttributeValue]:
        """The configuration disclosed as resource attributes (draft 4.8.1)."""
        systems = [f"{s.type}:{s.name}" for s in self.filters]
        systems += [s.filter.system for s in self.filters if s.filter.system]
        return {
            semconv.RESOURCE_GUARDRAIL_INPUT_ENABLED: bool(self.input),
            semconv.RESOURCE_GUARDRAIL_OUTPUT_ENABLED: bool(self.output),
            semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS: [s.name for s in self.input],
            semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS: [s.name for s in self.output],
            semconv.RESOURCE_GUARDRAIL_SYSTEMS: systems,
            semconv.RESOURCE_GUARDRAIL_BLOCK_RESPONSE: self.block_response,
            semconv.RESOURCE_GUARDRAIL_CONFIG_SHA256: self.sha256,
        }


def _number(value: Any, where: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: want a number > 0, got {value!r}")
    if positive and not value > 0:
        raise ConfigError(f"{where}: want a number > 0, got {value!r}")
    return float(value)


def _choice(value: Any, where: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError(f"{where}: want one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _unknown(keys: Any, known: Sequence[str], where: str) -> None:
    for key in keys:
        if key not in known:
            raise ConfigError(f"{where}{key}: unknown field (known: {', '.join(sorted(known))})")


def _filter_params(cls: type[GuardrailFilter]) -> tuple[list[str], list[str], bool]:
    """(all keyword parameters, the required ones, accepts **kwargs) of ``cls.__init__``."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [
        p.name
        for p in params
        if p.default is p.empty and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return names, required, any(p.kind is p.VAR_KEYWORD for p in params)


def _build_filter(
    entry: Any, stage: Stage, index: int, defaults: tuple[float, OnError]
) -> FilterSpec:
    where = f"{stage.value}[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: want a mapping with at least 'type', got {entry!r}")
    if "type" not in entry:
        raise ConfigError(f"{where}.type: missing (the filter's registered name)")
    ftype = entry["type"]
    if not isinstance(ftype, str):
        raise ConfigError(f"{where}.type: want a string, got {ftype!r}")
    try:
        cls = filter_class(ftype)
    except ConfigError as exc:
        raise ConfigError(f"{where}.type: {exc}") from None
    if stage not in cls.stages:
        raise ConfigError(f"{where}.type: {ftype!r} is not an {stage.value} filter")
    name = entry.get("name", ftype)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name: want a non-empty string, got {name!r}")
    timeout_s = defaults[0]
    if "timeout_ms" in entry:
        timeout_s = _number(entry["timeout_ms"], f"{where}.timeout_ms") / 1000.0
    on_error: OnError = defaults[1]
    if "on_error" in entry:
        on_error = _choice(entry["on_error"], f"{where}.on_error", ("open", "closed"))  # type: ignore[assignment]
    models: frozenset[str] | None = None
    if "models" in entry:
        raw = entry["models"]
        if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
            raise ConfigError(f"{where}.models: want a list of model names, got {raw!r}")
        models = frozenset(raw)
    params = {k: v for k, v in entry.items() if k not in _COMMON_KEYS}
    names, required, var_kw = _filter_params(cls)
    if not var_kw:
        _unknown(params, [*_COMMON_KEYS, *names], f"{where}.")
    for req in required:
        if req not in params:
            raise ConfigError(f"{where}.{req}: missing (required by filter type {ftype!r})")
    try:
        built = cls(**params)
    except ConfigError as exc:
        raise ConfigError(f"{where}.{exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: filter type {ftype!r} rejected its settings: {exc}") from None
    return FilterSpec(ftype, name, stage, timeout_s, on_error, models, built)


def parse_config(data: Any, source: str = "<config>", sha256: str = "") -> GuardrailConfig:
    """Validate a parsed YAML/JSON document (a mapping) into a :class:`GuardrailConfig`."""
    try:
        return _parse(data, sha256, source)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _parse(data: Any, sha256: str, source: str) -> GuardrailConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"want a mapping at the top level, got {type(data).__name__}")
    _unknown(data, _TOP_KEYS, "")
    if data.get("version", 1) != 1:
        raise ConfigError(f"version: only version 1 is known, got {data['version']!r}")
    timeout_s = DEFAULT_TIMEOUT_MS / 1000.0
    if "timeout_ms" in data:
        timeout_s = _number(data["timeout_ms"], "timeout_ms") / 1000.0
    on_error: OnError = DEFAULT_ON_ERROR
    if "on_error" in data:
        on_error = _choice(data["on_error"], "on_error", ("open", "closed"))  # type: ignore[assignment]
    block_response: BlockResponse = "error"
    if "block_response" in data:
        block_response = _choice(  # type: ignore[assignment]
            data["block_response"], "block_response", ("error", "completion")
        )
    status = data.get("block_status", 400)
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ConfigError(f"block_status: want an HTTP status 400..599, got {status!r}")
    refusal = data.get("refusal_message", DEFAULT_REFUSAL)
    if not isinstance(refusal, str):
        raise ConfigError(f"refusal_message: want a string, got {refusal!r}")
    window = data.get("output_window", 0)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ConfigError(f"output_window: want an integer ≥ 0 (characters), got {window!r}")
    stages: dict[Stage, tuple[FilterSpec, ...]] = {}
    for stage in (Stage.INPUT, Stage.OUTPUT):
        raw = data.get(stage.value) or []
        if not isinstance(raw, list):
            raise ConfigError(f"{stage.value}: want a list of filters, got {raw!r}")
        specs = tuple(_build_filter(e, stage, i, (timeout_s, on_error)) for i, e in enumerate(raw))
        seen: set[str] = set()
        for i, spec in enumerate(specs):
            if spec.name in seen:
                raise ConfigError(f"{stage.value}[{i}].name: {spec.name!r} is used twice")
            seen.add(spec.name)
        stages[stage] = specs
    return GuardrailConfig(
        input=stages[Stage.INPUT],
        output=stages[Stage.OUTPUT],
        output_window=window,
        block_response=block_response,
        block_status=status,
        refusal_message=refusal,
        sha256=sha256,
        source=source,
    )


def load_config(path: str | os.PathLike[str]) -> GuardrailConfig:
    """Read and validate a YAML (``.yaml``/``.yml``) or JSON file."""
    p = Path(path)
    data, raw = read_document(p, "guardrail configuration")
    return parse_config(data, str(p), hashlib.sha256(raw).hexdigest())


def config_from_env(environ: Mapping[str, str] | None = None) -> GuardrailConfig:
    """The configuration named by ``$OTELBENCH_GUARDRAILS_CONFIG``; ConfigError when unset."""
    env = os.environ if environ is None else environ
    path = env.get(semconv.ENV_GUARDRAILS_CONFIG)
    if not path:
        raise ConfigError(
            f"{semconv.ENV_GUARDRAILS_CONFIG} is not set: point it at a guardrail "
            "configuration file (YAML or JSON; an empty file means no filters)"
        )
    return load_config(path)
