"""Guardrail filters by name: the built-ins, and third-party filters from entry points.

A configuration names a filter by its ``type``; :func:`filter_class` finds the class: first the
registered ones (built-ins and :func:`register`), then the entry points of group
``otelbench.guardrails`` (``semconv.ENTRY_POINT_GROUP_GUARDRAILS``). A package ships a filter with::

    # its pyproject.toml
    [project.entry-points."otelbench.guardrails"]
    toxicity = "my_pkg.filters:ToxicityFilter"

Example::

    from otelbench.guardrails.registry import filter_class, register

    @register
    class Shout(GuardrailFilter):
        type_name = "shout"
        ...

    assert filter_class("shout") is Shout
    assert filter_class("pii").__name__ == "PiiFilter"
"""

from __future__ import annotations

import importlib.metadata
from typing import TypeVar

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.guardrails.base import GuardrailFilter

__all__ = ["available", "filter_class", "register"]

F = TypeVar("F", bound=type[GuardrailFilter])

_REGISTRY: dict[str, type[GuardrailFilter]] = {}
_BUILTIN_MODULES = {
    "blocklist": ("otelbench.guardrails.filters", "BlocklistFilter"),
    "pii": ("otelbench.guardrails.filters", "PiiFilter"),
    "max_input_length": ("otelbench.guardrails.filters", "MaxInputLengthFilter"),
    "classifier": ("otelbench.guardrails.classifier", "ClassifierFilter"),
}
"""Imported on first use (the classifier imports httpx)."""


def register(cls: F) -> F:
    """Register a filter class under its ``type_name`` (usable as a class decorator)."""
    name = cls.type_name
    if not name:
        raise ConfigError(f"{cls.__qualname__} has no type_name")
    if not (isinstance(cls, type) and issubclass(cls, GuardrailFilter)):
        raise ConfigError(f"{cls!r} is not a GuardrailFilter subclass")
    _REGISTRY[name] = cls
    return cls


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    eps = importlib.metadata.entry_points(group=semconv.ENTRY_POINT_GROUP_GUARDRAILS)
    return {ep.name: ep for ep in eps}


def available() -> list[str]:
    """Every filter type name that :func:`filter_class` can find, sorted."""
    return sorted(set(_REGISTRY) | set(_BUILTIN_MODULES) | set(_entry_points()))


def filter_class(name: str) -> type[GuardrailFilter]:
    """The filter class registered as ``name``; :class:`ConfigError` names the known ones."""
    cls = _REGISTRY.get(name)
    if cls is not None:
        return cls
    if name in _BUILTIN_MODULES:
        module, attr = _BUILTIN_MODULES[name]
        builtin: type[GuardrailFilter] = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = builtin
        return builtin
    ep = _entry_points().get(name)
    if ep is None:
        raise ConfigError(f"unknown filter type {name!r} (known: {', '.join(available())})")
    try:
        loaded = ep.load()
    except Exception as exc:  # a broken third-party package: one line, not a traceback
        raise ConfigError(f"filter type {name!r}: cannot load {ep.value}: {exc}") from exc
    if not (isinstance(loaded, type) and issubclass(loaded, GuardrailFilter)):
        raise ConfigError(f"filter type {name!r}: {ep.value} is not a GuardrailFilter subclass")
    _REGISTRY[name] = loaded
    return loaded
