"""Lazy package attributes (PEP 562): names a package exports without importing their modules
until first use, so that importing the package (e.g. for the command line) stays cheap.

Example::

    _LAZY = {"GatewayApp": "otelbench.guardrails.gateway"}
    __getattr__ = lazy_attributes(__name__, _LAZY)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` that imports ``modules[name]`` and returns its ``name``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
