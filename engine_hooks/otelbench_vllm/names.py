"""The span, event and attribute names the hooks write, copied from ``otelbench/semconv.py``.

The hooks work without otelbench in vLLM's venv (there it is optional: only the span spool,
``OTELBENCH_SPOOL_DIR``, imports it), so they do not import its ``semconv`` module. These
constants are the same strings under the same names; otelbench's unit test
``tests/unit/engine_hooks/test_names.py`` fails when the two drift apart. Change a name in
``otelbench/semconv.py`` first, then here.
"""

from __future__ import annotations

from typing import Final

# Span and event names
SPAN_HOOK_REQUEST: Final = "otelbench.vllm.request"
SPAN_HOOK_QUEUE: Final = "otelbench.vllm.queue"
SPAN_HOOK_PREFILL: Final = "otelbench.vllm.prefill"
SPAN_HOOK_DECODE: Final = "otelbench.vllm.decode"
EVENT_PREEMPTION: Final = "otelbench.vllm.preemption"
EVENT_RESUMPTION: Final = "otelbench.vllm.resumption"

# Server span attributes (otelbench namespace)
SERVER_TOKEN_OFFSETS_US: Final = "otelbench.server.token_offsets_us"
SERVER_MONO_TO_UNIX_OFFSET_NS: Final = "otelbench.server.mono_to_unix_offset_ns"
SERVER_PREEMPTIONS: Final = "otelbench.server.preemptions"
SERVER_ENGINE_REQUEST_ID: Final = "otelbench.server.engine_request_id"
SERVER_OUTPUT_PHASE_TOKEN: Final = "otelbench.server.output_phase_token"
"""Index, in ``token_offsets_us``, of the first output token after a reasoning model's think
phase (the token after the think-end token); set only when the hooks know that token's id."""
SERVER_END_REASON: Final = "otelbench.server.end_reason"
"""``finished``, ``cancelled``, ``aborted`` or ``error`` (``otelbench/semconv.py`` explains)."""
END_REASON_FINISHED: Final = "finished"
END_REASON_CANCELLED: Final = "cancelled"
END_REASON_ABORTED: Final = "aborted"
END_REASON_ERROR: Final = "error"
SERVER_END_PHASE: Final = "otelbench.server.end_phase"
"""Where a request that did not finish was when it ended."""
END_PHASE_QUEUE: Final = "queue"
END_PHASE_PREFILL: Final = "prefill"
END_PHASE_DECODE: Final = "decode"
END_PHASE_PREEMPTED: Final = "preempted"
END_PHASE_UNKNOWN: Final = "unknown"
SERVER_PROMPT_TOKENS_COMPUTED: Final = "otelbench.server.prompt_tokens_computed"
SERVER_OUTPUT_TOKENS_GENERATED: Final = "otelbench.server.output_tokens_generated"
ERROR_TYPE: Final = "error.type"
PREEMPTION_OUTPUT_TOKENS: Final = "otelbench.preemption.output_tokens"
PREEMPTION_KV_TOKENS_DISCARDED: Final = "otelbench.preemption.kv_tokens_discarded"
PREEMPTION_STALL_US: Final = "otelbench.preemption.stall_us"

# vLLM's own server-span keys (seconds, doubles) and the GenAI conventions' cache key
VLLM_LATENCY_TTFT: Final = "gen_ai.latency.time_to_first_token"
VLLM_LATENCY_E2E: Final = "gen_ai.latency.e2e"
VLLM_LATENCY_QUEUE: Final = "gen_ai.latency.time_in_queue"
VLLM_LATENCY_PREFILL: Final = "gen_ai.latency.time_in_model_prefill"
VLLM_LATENCY_DECODE: Final = "gen_ai.latency.time_in_model_decode"
VLLM_LATENCY_INFERENCE: Final = "gen_ai.latency.time_in_model_inference"
VLLM_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
VLLM_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"
VLLM_REQUEST_ID: Final = "gen_ai.request.id"
VLLM_RESPONSE_FINISH_REASON: Final = "gen_ai.response.finish_reason"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"

# Environment
ENV_VLLM_HOOKS: Final = "OTELBENCH_VLLM_HOOKS"
ENV_VLLM_THINK_END_TOKEN_ID: Final = "OTELBENCH_VLLM_THINK_END_TOKEN_ID"
"""The id of the token that ends a reasoning model's think phase (e.g. ``</think>``)."""
ENV_VLLM_EXPORT: Final = "OTELBENCH_VLLM_EXPORT"
"""Where the engine hooks build and export their spans: ``process`` (default: the hooks' exporter
process, off vLLM's API server) or ``inprocess`` (in the API server)."""
ENV_VLLM_ITL_RECORDS: Final = "OTELBENCH_VLLM_ITL_RECORDS"
"""Inter-token gaps the engine hooks record per request in their ITL histogram (default 0: off)."""
ENV_VLLM_EXPORTER_NICE: Final = "OTELBENCH_VLLM_EXPORTER_NICE"
"""How much lower the hooks' exporter process's CPU priority is than vLLM's (default 10; 0 keeps
vLLM's)."""
ENV_VLLM_ABORT_CHANNEL: Final = "OTELBENCH_VLLM_ABORT_CHANNEL"
"""The directory of the abort channel (engine core → API servers: ``otelbench_vllm.aborts``)."""
ENV_SPOOL_DIR: Final = "OTELBENCH_SPOOL_DIR"
"""The span spool directory (``otelbench.spool``); unset: no spool, as before."""
ENV_SPOOL_MAX_BYTES: Final = "OTELBENCH_SPOOL_MAX_BYTES"
"""The bound of that spool in bytes (default 256 MiB)."""
SERVICE_VLLM: Final = "vllm"
INSTRUMENTATION_SCOPE_HOOKS: Final = "otelbench.vllm"

# Resource attributes of the hooks' spans and metrics
RESOURCE_VLLM_VERSION: Final = "otelbench.vllm.version"
"""The version of the vLLM the hooks ran in (``vllm.__version__``, e.g. ``0.32.0+cpu``)."""
RESOURCE_HOOK_SUPPORT: Final = "otelbench.hook.support"
"""How well that vLLM release is known: ``tested``, ``conformed`` or ``untested``."""
RESOURCE_TELEMETRY_DISTRO_NAME: Final = "telemetry.distro.name"
RESOURCE_TELEMETRY_DISTRO_VERSION: Final = "telemetry.distro.version"
HOOKS_DISTRIBUTION: Final = "otelbench-vllm-hooks"
"""``telemetry.distro.name`` of the hooks (OpenTelemetry's resource conventions)."""

# Metrics (recorded once per finished request; durations in seconds)
METRIC_SERVER_TTFT: Final = "gen_ai.server.time_to_first_token"
METRIC_SERVER_TPOT: Final = "gen_ai.server.time_per_output_token"
METRIC_SERVER_REQUEST_DURATION: Final = "gen_ai.server.request.duration"
METRIC_HOOK_QUEUE: Final = "otelbench.server.queue.duration"
METRIC_HOOK_PREFILL: Final = "otelbench.server.prefill.duration"
METRIC_HOOK_DECODE: Final = "otelbench.server.decode.duration"
METRIC_HOOK_ITL: Final = "otelbench.server.inter_token_latency"
METRIC_HOOK_REQUEST_PREEMPTIONS: Final = "otelbench.server.request.preemptions"
METRIC_HOOK_PREEMPTIONS: Final = "otelbench.server.preemption.count"
METRIC_SERVER_REQUESTS: Final = "otelbench.server.requests"
METRIC_HOOK_SPANS_ENDED: Final = "otelbench.hook.spans.ended"
METRIC_HOOK_SPANS_EXPORTED: Final = "otelbench.hook.spans.exported"
METRIC_HOOK_SPANS_FAILED: Final = "otelbench.hook.spans.failed"
METRIC_HOOK_SPANS_UNACCOUNTED: Final = "otelbench.hook.spans.unaccounted"
METRIC_HOOK_SPANS_DROPPED: Final = "otelbench.hook.spans.dropped"
METRIC_HOOK_RECORDS_DROPPED: Final = "otelbench.hook.records.dropped"
"""Observable counter ({request}): finished requests whose spans were never built (the queue to
the hooks' exporter process was full, or that process died). On Prometheus
``otelbench_hook_records_dropped_total``."""
PROMETHEUS_HOOK_INFO: Final = "otelbench_hook_info"
"""A prometheus_client gauge (not OpenTelemetry): the hooks' status on vLLM's ``/metrics``."""
