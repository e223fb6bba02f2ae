"""The SUT description: what the tester declares about the system under test that otelbench
cannot see from its side of the wire (draft 4.1, 4.7.2, 4.7.3, 4.8, 5.1.2.3, 5.1.5.1).

Declared in a YAML file (``--sut-config FILE``) and by ``--sut-*`` flags, a flag replacing the
file's field. Every field is validated at once: a bad declaration gets one :class:`ConfigError`
that names every bad field and what is wrong with it. The result is the report's ``run.sut``
(``docs/report-schema.md``), which the configuration summary and the compliance checks read
(``otelbench.report``).

=====================  ====================================================  ===============
field (YAML)           value                                                 draft
=====================  ====================================================  ===============
``boundary``           Model Engine, Application Gateway, Compound System    4.1
``hardware``           accelerator type, count and memory (text)             5.1.2.3
``software``           serving software and version (text)                   5.1.5.1
``model_version``      the model's version: revision, checkpoint (text)      5.1.2.3
``quantization``       ``none`` or the scheme (``fp8``, ``awq-int4`` …)        5.1.2.3
``prefix_caching``     ``enabled`` or ``disabled`` (or a YAML bool)          5.1.2.3
``clock_sync``         ``method`` (text) and ``accuracy_ms`` (a number ≥ 0)  4.7.2
``network_rtt_ms``     measured network RTT to the SUT, ms (a number ≥ 0)     4.7.3
``guardrails``         ``input_filter`` and ``output_filter`` (a system's    4.8.1, 4.8.2
                       name or ``none``), ``default_configuration`` (bool),
                       ``comparative_run`` (where the enabled/disabled
                       comparison is, text)
=====================  ====================================================  ===============

Example (``sut.yaml``)::

    boundary: Application Gateway
    hardware: 1x NVIDIA H100 80GB
    software: vLLM 0.32.0 behind otelbench gateway
    model_version: meta-llama/Llama-3.1-8B-Instruct@0e9e39f
    quantization: none
    prefix_caching: enabled
    clock_sync: {method: chrony (NTP), accuracy_ms: 0.4}
    network_rtt_ms: 0.21
    guardrails:
      input_filter: Llama Guard 3
      output_filter: none
      default_configuration: true
      comparative_run: out/5.10/procedure.json

Usage::

    from otelbench.sut.description import sut_description

    sut = sut_description(Path("sut.yaml"), {"quantization": "fp8"})
    sut["clock_sync"]   # {'method': 'chrony (NTP)', 'accuracy_ms': 0.4}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Literal, TypeVar

from otelbench.documents import read_document
from otelbench.errors import ConfigError
from otelbench.model.sut import ClockSyncDeclaration, GuardrailsDeclaration, SutDeclaration

__all__ = ["BOUNDARIES", "FIELDS", "FLAGS", "from_flags", "sut_description"]

BOUNDARIES: Final = {
    "model engine": "Model Engine",
    "engine": "Model Engine",
    "application gateway": "Application Gateway",
    "gateway": "Application Gateway",
    "compound system": "Compound System",
    "compound": "Compound System",
}
"""The draft's three boundaries (4.1), by the names a declaration may use (any case)."""

T = TypeVar("T")


def _text(value: object) -> str:
    if (
        not isinstance(value, str | int | float)
        or isinstance(value, bool)
        or not str(value).strip()
    ):
        raise ValueError("expected non-empty text")
    return str(value).strip()


def _boundary(value: object) -> str:
    found = BOUNDARIES.get(_text(value).lower())
    if found is None:
        raise ValueError(
            f"{value!r} is not one of Model Engine, Application Gateway, Compound System"
        )
    return found


def _on_off(value: object) -> Literal["enabled", "disabled"]:
    if isinstance(value, bool):
        return "enabled" if value else "disabled"
    text = _text(value).lower()
    if text == "enabled":
        return "enabled"
    if text == "disabled":
        return "disabled"
    raise ValueError(f"{value!r}: expected enabled or disabled")


def _milliseconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("expected a number of milliseconds")
    try:
        ms = float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number of milliseconds") from None
    if not ms >= 0 or ms == float("inf"):
        raise ValueError(f"{value!r}: expected a finite number ≥ 0")
    return ms


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r}: expected true or false")
    return value


def _fields(value: object, names: tuple[str, ...], section: str) -> Mapping[str, object]:
    """A section's fields (a mapping with the given fields, all optional, none other)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping with {', '.join(names)}")
    unknown = sorted(str(k) for k in value if k not in names)
    if unknown:
        raise ValueError(f"unknown {section} field(s) {', '.join(unknown)}")
    return value


def _field(fields: Mapping[str, object], key: str, parse: Callable[[object], T]) -> T | None:
    """A section's field, validated; None when it is not given. The ValueError names it."""
    if fields.get(key) is None:
        return None
    try:
        return parse(fields[key])
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None


CLOCK_SYNC_FIELDS: Final = ("method", "accuracy_ms")
GUARDRAILS_FIELDS: Final = (
    "input_filter",
    "output_filter",
    "default_configuration",
    "comparative_run",
)


def _clock_sync(value: object) -> ClockSyncDeclaration:
    fields = _fields(value, CLOCK_SYNC_FIELDS, "clock_sync")
    out: ClockSyncDeclaration = {}
    if (method := _field(fields, "method", _text)) is not None:
        out["method"] = method
    if (accuracy := _field(fields, "accuracy_ms", _milliseconds)) is not None:
        out["accuracy_ms"] = accuracy
    return out


def _guardrails(value: object) -> GuardrailsDeclaration:
    fields = _fields(value, GUARDRAILS_FIELDS, "guardrails")
    out: GuardrailsDeclaration = {}
    if (input_filter := _field(fields, "input_filter", _text)) is not None:
        out["input_filter"] = input_filter
    if (output_filter := _field(fields, "output_filter", _text)) is not None:
        out["output_filter"] = output_filter
    if (default := _field(fields, "default_configuration", _flag)) is not None:
        out["default_configuration"] = default
    if (comparative_run := _field(fields, "comparative_run", _text)) is not None:
        out["comparative_run"] = comparative_run
    return out


FIELDS: Final = (
    "boundary",
    "hardware",
    "software",
    "model_version",
    "quantization",
    "prefix_caching",
    "clock_sync",
    "network_rtt_ms",
    "guardrails",
)
"""Every field of a SUT description (module docstring), in the order a description holds
them."""


FLAGS: Final[Mapping[str, tuple[str, ...]]] = {
    "sut_boundary": ("boundary",),
    "sut_hardware": ("hardware",),
    "sut_software": ("software",),
    "sut_model_version": ("model_version",),
    "sut_quantization": ("quantization",),
    "sut_prefix_caching": ("prefix_caching",),
    "sut_clock_sync": ("clock_sync", "method"),
    "sut_clock_accuracy_ms": ("clock_sync", "accuracy_ms"),
    "sut_input_filter": ("guardrails", "input_filter"),
    "sut_output_filter": ("guardrails", "output_filter"),
}
"""The ``--sut-*`` flags (``otelbench.cli.options.CommonOptions`` fields) and the field of a
description each one sets."""


def from_flags(values: Mapping[str, object]) -> dict[str, object]:
    """The description fields that flags given (not None) set, by :data:`FLAGS`: a raw
    description, validated with the file's by :func:`sut_description`.

    >>> from_flags({"sut_clock_sync": "chrony", "sut_clock_accuracy_ms": None})
    {'clock_sync': {'method': 'chrony'}}
    """
    out: dict[str, object] = {}
    sections: dict[str, dict[str, object]] = {}
    for flag, path in FLAGS.items():
        value = values.get(flag)
        if value is None:
            continue
        if len(path) == 1:
            out[path[0]] = value
        else:
            out[path[0]] = section = sections.setdefault(path[0], {})
            section[path[1]] = value
    return out


def _read(path: Path) -> Mapping[str, object]:
    data, _ = read_document(path, "it", f"--sut-config {path}")
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"--sut-config {path}: expected a mapping of fields, got {data!r}")
    return data


def _merge(base: Mapping[str, object], flags: Mapping[str, object]) -> dict[str, object]:
    """The file's fields with the flags' on top; a flag for a nested field (``clock_sync``,
    ``guardrails``) replaces that field of the section only."""
    out = dict(base)
    for key, value in flags.items():
        if value is None:
            continue
        section = out.get(key)
        if isinstance(value, Mapping) and isinstance(section, Mapping):
            out[key] = {**section, **{k: v for k, v in value.items() if v is not None}}
        else:
            out[key] = value
    return out


def sut_description(path: Path | None, flags: Mapping[str, object]) -> SutDeclaration:
    """The validated SUT description of the file at ``path`` (None: no file) with ``flags``
    (field → value, a raw description; None: not given) on top. Raises one
    :class:`ConfigError` that names every bad field and what is wrong with it.

    >>> sut_description(None, {"boundary": "gateway", "prefix_caching": True})
    {'boundary': 'Application Gateway', 'prefix_caching': 'enabled'}
    """
    source = f"--sut-config {path}" if path is not None else "the SUT declaration"
    merged = _merge({} if path is None else _read(path), flags)
    errors = [f"unknown field {key!r}" for key in merged if key not in FIELDS]

    def field(key: str, parse: Callable[[object], T]) -> T | None:
        try:
            return _field(merged, key, parse)
        except ValueError as exc:
            errors.append(str(exc))
            return None

    out: SutDeclaration = {}
    if (boundary := field("boundary", _boundary)) is not None:
        out["boundary"] = boundary
    if (hardware := field("hardware", _text)) is not None:
        out["hardware"] = hardware
    if (software := field("software", _text)) is not None:
        out["software"] = software
    if (model_version := field("model_version", _text)) is not None:
        out["model_version"] = model_version
    if (quantization := field("quantization", _text)) is not None:
        out["quantization"] = quantization
    if (prefix_caching := field("prefix_caching", _on_off)) is not None:
        out["prefix_caching"] = prefix_caching
    if (clock_sync := field("clock_sync", _clock_sync)) is not None:
        out["clock_sync"] = clock_sync
    if (network_rtt_ms := field("network_rtt_ms", _milliseconds)) is not None:
        out["network_rtt_ms"] = network_rtt_ms
    if (guardrails := field("guardrails", _guardrails)) is not None:
        out["guardrails"] = guardrails
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(errors))
    return out
