"""otelbench's vLLM engine hooks: the full anatomy of every request as OpenTelemetry spans.

Install into the vLLM environment (no dependencies of its own beyond what vLLM already has)::

    pip install --no-deps ./engine_hooks

and enable with ``OTELBENCH_VLLM_HOOKS=1`` plus the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (OTLP/HTTP). Each finished request then gives one SERVER
span ``otelbench.vllm.request`` (child of the client's span through the request's
``traceparent``) with queue / prefill / decode child spans, preemption and resumption events
and the per-token offsets measured in the engine (see :mod:`otelbench_vllm.hook`).

Entry points (``pyproject.toml``):

- ``vllm.general_plugins`` → :func:`register`, run by vLLM in every one of its processes: does
  nothing unless enabled; enabled, it wraps ``IterationStats`` (:mod:`._vllm_internals`).
- ``vllm.stat_logger_plugins`` → :class:`otelbench_vllm.stat_logger.OtelbenchStatLogger`
  (frontend only): logs that the hooks are active and their health counters.

Installed but not enabled, importing this package is the only cost: no wrapper, no span, no
thread. This module imports nothing heavy.
"""

from __future__ import annotations

import logging
import os

from otelbench_vllm.names import ENV_VLLM_HOOKS

__all__ = ["__version__", "enabled", "register"]

__version__ = "0.1.0"

_TRUE = frozenset({"1", "true", "yes", "on"})


def enabled() -> bool:
    """True when ``OTELBENCH_VLLM_HOOKS`` is ``1`` (or ``true``/``yes``/``on``)."""
    return os.environ.get(ENV_VLLM_HOOKS, "").strip().lower() in _TRUE


def register() -> None:
    """vLLM general-plugin entry point (every vLLM process; may run more than once).

    Example: vLLM calls it; by hand, ``OTELBENCH_VLLM_HOOKS=1 python -c
    "import otelbench_vllm; otelbench_vllm.register()"`` wraps the stats in that process.
    """
    if not enabled():
        return
    try:
        from otelbench_vllm import _vllm_internals

        _vllm_internals.install()
    except Exception:
        logging.getLogger("vllm.plugins.otelbench").exception("otelbench hooks: register failed")
