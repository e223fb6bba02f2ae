"""Guardrails as traced events: filters, ASGI middleware for vLLM, the gateway (draft 4.8, 5.10).

Production deployments filter input and output; the draft asks for that to be disclosed (4.8.1)
and its cost measured (5.10). vLLM has no guardrail concept, so otelbench brings the place where
guardrails run and the spans that time them:

* :mod:`~otelbench.guardrails.base` — the filter interface (:class:`GuardrailFilter`, verdicts);
* :mod:`~otelbench.guardrails.filters` / :mod:`~otelbench.guardrails.classifier` — built-ins:
  ``blocklist``, ``pii``, ``max_input_length``, ``classifier`` (a moderation endpoint);
* :mod:`~otelbench.guardrails.registry` — filters by name, third-party ones by entry point;
* :mod:`~otelbench.guardrails.config` — the YAML/JSON configuration file;
* :mod:`~otelbench.guardrails.engine` — timeouts, fail-open/closed, output window, spans, metrics;
* :mod:`~otelbench.guardrails.middleware` — pure ASGI middleware (``vllm serve --middleware
  otelbench.guardrails.middleware.GuardrailMiddleware``);
* :mod:`~otelbench.guardrails.gateway` — ``otelbench gateway``, the Application Gateway SUT (4.1.2).

Importing this package loads only the standard library and opentelemetry-api (plus pyyaml when a
YAML file is read, httpx for the classifier and the gateway): it runs inside vLLM's API server.

Example::

    from otelbench.guardrails import GuardrailMiddleware, load_config

    app = GuardrailMiddleware(app, config=load_config("guardrails.yaml"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otelbench._lazy import lazy_attributes
from otelbench.guardrails.base import Action, GuardrailFilter, Stage, TextFilter, Verdict
from otelbench.guardrails.config import FilterSpec, GuardrailConfig, load_config, parse_config
from otelbench.guardrails.registry import available, filter_class, register

if TYPE_CHECKING:
    from otelbench.guardrails.gateway import GatewayApp, GatewayServer
    from otelbench.guardrails.middleware import GuardrailMiddleware

__all__ = [
    "Action",
    "FilterSpec",
    "GatewayApp",
    "GatewayServer",
    "GuardrailConfig",
    "GuardrailFilter",
    "GuardrailMiddleware",
    "Stage",
    "TextFilter",
    "Verdict",
    "available",
    "filter_class",
    "load_config",
    "parse_config",
    "register",
]

_LAZY = {
    "GatewayApp": "otelbench.guardrails.gateway",
    "GatewayServer": "otelbench.guardrails.gateway",
    "GuardrailMiddleware": "otelbench.guardrails.middleware",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
