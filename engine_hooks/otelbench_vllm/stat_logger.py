"""The ``vllm.stat_logger_plugins`` entry point: the hooks' presence in vLLM's frontend.

vLLM builds one instance per engine in the frontend (API server) process. It keeps vLLM's
per-request stats flowing even under ``--disable-log-stats`` (vLLM turns stats on when a custom
stat logger exists; the hooks' data come from those stats), makes sure the ``IterationStats``
wrappers are installed in this process (when ``VLLM_PLUGINS`` left the general plugin out), tells
the hook whether client trace headers can reach it (only with vLLM's own tracer on, which
``vllm_config`` says), and logs the hooks' health every log interval. Not enabled, every
method returns at once.

Note: because vLLM switches stats on for any custom stat logger, an installed but disabled hook
costs vLLM's own per-step stats bookkeeping on a server started with ``--disable-log-stats``
(and nothing on a server with stats on, vLLM's default).
"""

from __future__ import annotations

import logging
from typing import Any

from vllm.v1.metrics.loggers import StatLoggerBase

from otelbench_vllm import enabled
from otelbench_vllm.names import RESOURCE_VLLM_VERSION

__all__ = ["OtelbenchStatLogger"]

_log = logging.getLogger("vllm.plugins.otelbench")


_published = False


def _publish_info_once(attributes: dict[str, str]) -> None:
    """``otelbench_hook_info`` once per process (vLLM builds a stat logger per engine)."""
    global _published
    if not _published:
        _published = True
        from otelbench_vllm.export import publish_hook_info

        publish_hook_info(attributes)


def _tracer_on(vllm_config: Any) -> bool:
    """Whether vLLM's own tracer is on (``--otlp-traces-endpoint``): the client's trace headers
    reach the engine only then (``_vllm_internals.TRACE_HEADERS_ALWAYS_SINCE``). Unknown (no such
    config) counts as on: no warning."""
    observability = getattr(vllm_config, "observability_config", None)
    if observability is None:
        return True
    return getattr(observability, "otlp_traces_endpoint", None) is not None


class OtelbenchStatLogger(StatLoggerBase):
    """Logs ``otelbench hooks: active ...`` once and the hooks' counters when they change."""

    def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
        self.engine_index = engine_index
        self._hook = None
        self._last: dict[str, int] = {}
        if enabled():
            from otelbench_vllm import _vllm_internals

            self._hook = _vllm_internals.install()
            if self._hook is not None:
                version = self._hook.resource_attributes.get(RESOURCE_VLLM_VERSION, "")
                needs = _vllm_internals.needs_tracing_flag(version)
                self._hook.trace_headers_need_tracer = needs and not _tracer_on(vllm_config)
                _publish_info_once(self._hook.resource_attributes)

    def record(
        self,
        scheduler_stats: Any,
        iteration_stats: Any,
        mm_cache_stats: Any = None,
        engine_idx: int = 0,
    ) -> None:
        return None

    def log_engine_initialized(self) -> None:
        if self._hook is not None:
            _log.info(
                "otelbench hooks: active (engine %d; vLLM %s, %s): one otelbench.vllm.request "
                "span per request, mono→unix offset %d ns now",
                self.engine_index,
                self._hook.resource_attributes.get(RESOURCE_VLLM_VERSION, "?"),
                self._hook.support,
                self._hook.current_offset_ns(),
            )

    def log(self) -> None:
        if self._hook is None:
            return
        now = self._hook.stats.as_dict()
        if now != self._last:
            self._last = now
            _log.info("otelbench hooks: %s", " ".join(f"{k}={v}" for k, v in now.items()))
