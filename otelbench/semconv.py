"""Every span, attribute, event and metric name otelbench emits or reads, defined once.

Sources, in order of preference (``shared/research/anchors.md`` §3–4):

1. the OpenTelemetry GenAI semantic conventions (``gen_ai.*``), for client spans;
2. vLLM's own ``gen_ai.latency.*`` keys for server spans, so vLLM's ``llm_request`` span and
   the engine hooks' spans read alike (vLLM still uses the deprecated ``gen_ai.usage.prompt_tokens``
   / ``completion_tokens`` names there, and we read them as they are);
3. the ``otelbench.*`` namespace for everything the conventions lack.

Clock domains are part of the name: ``*_unix_ns`` is wall clock (``time.time_ns()``),
``*_mono_ns`` is ``CLOCK_MONOTONIC`` (``time.perf_counter_ns()``/``time.monotonic_ns()``), and
``*_offset_us`` is integer microseconds since the start of the owning span, measured on the
monotonic clock of the process that emitted the span.

Per-chunk and per-token timing travels as one integer-array attribute per span (never one span
or span event per token). In the ``otel_traces`` store, where attribute values are strings, an
array arrives as JSON text (``"[812,10240,20511]"``) that DuckDB casts with ``::BIGINT[]`` and
ClickHouse reads with ``JSONExtract(..., 'Array(Int64)')``.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# Service and scope names
# --------------------------------------------------------------------------------------------
SERVICE_CLIENT: Final = "otelbench-client"
"""``service.name`` of the load generator's spans."""
INSTRUMENTATION_SCOPE: Final = "otelbench"

# --------------------------------------------------------------------------------------------
# Span names
# --------------------------------------------------------------------------------------------
SPAN_RUN: Final = "otelbench.run"
"""One INTERNAL span per benchmark run; carries the run manifest (``otelbench.run.*``)."""
SPAN_VLLM_REQUEST: Final = "llm_request"
"""vLLM's own per-request SERVER span (``vllm/v1/engine/output_processor.py: do_tracing``)."""


def client_span_name(operation: str, model: str) -> str:
    """GenAI semconv span name: ``"{gen_ai.operation.name} {gen_ai.request.model}"``."""
    return f"{operation} {model}"


# --------------------------------------------------------------------------------------------
# GenAI semantic conventions (client span)
# --------------------------------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
OPERATION_CHAT: Final = "chat"
OPERATION_TEXT_COMPLETION: Final = "text_completion"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
PROVIDER_OPENAI: Final = "openai"
"""``gen_ai.provider.name`` for an OpenAI-compatible API (the conventions' advice when the real
product behind the API is unknown to the client, as with vLLM)."""
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
"""Bool, set (``true``) only on streamed requests, as the conventions say."""
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
"""String array, one per choice in index order; ``"error"`` for a choice whose finish reason was
expected but not received (the call failed, was cancelled, or the stream was cut)."""
FINISH_REASON_ERROR: Final = "error"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
GEN_AI_REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
"""Int, set when the request asks for ``n`` != 1 choices."""
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
"""``text`` or ``json``, set when the request names an output format (``response_format``)."""
OUTPUT_TYPE_TEXT: Final = "text"
OUTPUT_TYPE_JSON: Final = "json"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
OPENAI_REQUEST_SERVICE_TIER: Final = "openai.request.service_tier"
OPENAI_RESPONSE_SERVICE_TIER: Final = "openai.response.service_tier"
OPENAI_RESPONSE_SYSTEM_FINGERPRINT: Final = "openai.response.system_fingerprint"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
"""Seconds (double) from T_submit to the first SSE event of any kind (semconv's 'first chunk')."""
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"
ERROR_TYPE_TIMEOUT: Final = "timeout"
"""``error.type`` of a read, write or pool timeout (connect timeouts are ``unreachable``,
``errors.TargetUnreachable.error_type``)."""
ERROR_TYPE_CANCELLED: Final = "cancelled"
"""``error.type`` when the caller cancelled the request or closed the response before its end."""
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
HTTP_REQUEST_RESEND_COUNT: Final = "http.request.resend_count"
"""Int, client span: the request is the N-th resend of the same call (the ``openai`` SDK's
retries, from its ``x-stainless-retry-count`` header); absent on the first attempt."""

# --------------------------------------------------------------------------------------------
# GenAI client metrics (otelbench.client.metrics), recorded by the instrumented transports when a
# meter provider records. Names, units and attributes: open-telemetry/semantic-conventions-genai
# at commit 066d4a7f (docs/reference/semconv-genai/; tests/unit/client/test_semconv_genai.py).
# The v1.41.0 names (the last in open-telemetry/semantic-conventions) stay behind
# OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_legacy (those only) or gen_ai_legacy/dup (both).
# --------------------------------------------------------------------------------------------
METRIC_CLIENT_INFERENCE_DURATION: Final = "gen_ai.client.inference.duration"
"""Histogram (s): T_submit → end of the response (the span's duration), every call."""
METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.inference.time_to_first_chunk"
"""Histogram (s), streamed calls: T_submit → the first chunk (SSE ``data:`` event) of any kind."""
METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK: Final = (
    "gen_ai.client.inference.time_per_output_chunk"
)
"""Histogram (s), streamed calls: for every chunk after the first (each SSE ``data:`` event but
``[DONE]``: text, role-only, tool-call and usage chunks alike), the gap from the previous one."""
METRIC_CLIENT_USAGE_INPUT_TOKENS: Final = "gen_ai.client.inference.usage.input_tokens"
"""Counter ({token}) by ``gen_ai.token.modality``: input tokens, cached included; every call (0
with modality ``unknown`` when no usage came)."""
METRIC_CLIENT_USAGE_OUTPUT_TOKENS: Final = "gen_ai.client.inference.usage.output_tokens"
METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS: Final = (
    "gen_ai.client.inference.usage.cache_read.input_tokens"
)
METRIC_CLIENT_USAGE_REASONING_OUTPUT_TOKENS: Final = (
    "gen_ai.client.inference.usage.reasoning.output_tokens"
)
METRIC_CLIENT_OPERATION_INPUT_TOKENS: Final = "gen_ai.client.inference.operation.input_tokens"
"""Histogram ({token}) with ``error.type``: input tokens per call, every call (0 without usage)."""
METRIC_CLIENT_OPERATION_OUTPUT_TOKENS: Final = "gen_ai.client.inference.operation.output_tokens"
METRIC_CLIENT_TIME_PER_OUTPUT_TEXT_CHUNK: Final = "otelbench.client.time_per_output_text_chunk"
"""Histogram (s), streamed calls, otelbench's own: for each chunk *carrying text* after the
first, the gap from the previous one (the span's ``chunk_offsets_us``; what
``gen_ai.client.operation.time_per_output_chunk`` held in otelbench before it counted every
chunk as the conventions say)."""
GEN_AI_TOKEN_MODALITY: Final = "gen_ai.token.modality"
TOKEN_MODALITY_TEXT: Final = "text"
"""The completions API's tokens (text in, text out)."""
TOKEN_MODALITY_UNKNOWN: Final = "unknown"
"""Chat tokens (OpenAI's usage does not split its totals by modality), and the 0 of a call
without usage."""

ENV_SEMCONV_OPT_IN: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
OPT_IN_GEN_AI_LEGACY: Final = "gen_ai_legacy"
"""In ``OTEL_SEMCONV_STABILITY_OPT_IN``: the v1.41.0 GenAI client metric names only."""
OPT_IN_GEN_AI_LEGACY_DUP: Final = "gen_ai_legacy/dup"
"""In ``OTEL_SEMCONV_STABILITY_OPT_IN``: the v1.41.0 names and today's, both."""

# The v1.41.0 names (open-telemetry/semantic-conventions, model/gen-ai/deprecated/).
METRIC_CLIENT_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
"""Legacy histogram (s): as ``gen_ai.client.inference.duration``."""
METRIC_CLIENT_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
"""Legacy histogram ({token}): input and output tokens (``gen_ai.token.type``), when reported."""
METRIC_CLIENT_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
"""Legacy histogram (s): as ``gen_ai.client.inference.time_to_first_chunk``."""
METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.operation.time_per_output_chunk"
"""Legacy histogram (s): as ``gen_ai.client.inference.time_per_output_chunk`` (every chunk)."""
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

# --------------------------------------------------------------------------------------------
# otelbench client-span attributes (draft Appendix B.1.1, 4.2.6, 4.6.2)
# --------------------------------------------------------------------------------------------
CLIENT_FIRST_EVENT_OFFSET_US: Final = "otelbench.client.first_event_offset_us"
"""T_submit → first SSE ``data:`` event of any kind (role-only and whitespace included; comment
lines are not events)."""
CLIENT_TTFT_US: Final = "otelbench.client.ttft_us"
"""T_submit → first *content* token (draft 5.1.3.1). Absent when no content arrived."""
CLIENT_HEADERS_OFFSET_US: Final = "otelbench.client.headers_offset_us"
"""T_submit → response headers received."""
CLIENT_END_OFFSET_US: Final = "otelbench.client.end_offset_us"
"""T_submit → last byte of the response (end of stream or error)."""
CLIENT_CHUNK_OFFSETS_US: Final = "otelbench.client.chunk_offsets_us"
"""Int array: arrival offset of every content chunk since T_submit."""
CLIENT_CHUNK_TOKENS: Final = "otelbench.client.chunk_tokens"
"""Int array, same length as the offsets: tokens carried by each content chunk."""
CLIENT_CHUNK_TOKEN_SOURCE: Final = "otelbench.client.chunk_token_source"
"""How chunk token counts were obtained: ``usage`` (continuous usage stats) or ``one_per_chunk``."""
CLIENT_CHUNKS_TOTAL: Final = "otelbench.client.chunks_total"
"""Every ``data:`` event received, content or not."""
CLIENT_SUBMIT_MONO_NS: Final = "otelbench.client.submit_mono_ns"
"""T_submit on the client's monotonic clock (joins the span to the fixture's send log in tests)."""

CLIENT_THINK_PHASE: Final = "otelbench.client.think_phase"
"""Set when the response had a reasoning model's think phase: ``ended`` (output followed) or
``unterminated`` (the stream ended inside it). Absent: no think phase was seen."""
CLIENT_OUTPUT_PHASE_CHUNK: Final = "otelbench.client.output_phase_chunk"
"""Index, in ``chunk_offsets_us``, of the first output-phase content chunk after the think
phase (ADR-0005's first output token); absent unless ``think_phase`` is ``ended``."""
THINK_PHASE_ENDED: Final = "ended"
THINK_PHASE_UNTERMINATED: Final = "unterminated"
THINK_END_MARKER: Final = "</think>"
"""The text marker that ends a think phase streamed as ordinary text (completions API)."""

CHUNK_TOKENS_FROM_USAGE: Final = "usage"
CHUNK_TOKENS_ONE_PER_CHUNK: Final = "one_per_chunk"

# --------------------------------------------------------------------------------------------
# otelbench run and request identity (load generator)
# --------------------------------------------------------------------------------------------
RUN_ID: Final = "otelbench.run.id"
RUN_MANIFEST: Final = "otelbench.run.manifest"
"""JSON text of the whole run manifest (target, model, workload, seed, load, timing); on
SPAN_RUN."""
WORKLOAD_NAME: Final = "otelbench.workload.name"
REQUEST_CLASS: Final = "otelbench.request.class"
REQUEST_INDEX: Final = "otelbench.request.index"
REQUEST_PHASE: Final = "otelbench.request.phase"
"""Which phase of the run sent the request: ``warmup``, ``probe`` (warm-up's stabilization probes,
draft 4.5) or ``measure``. Only ``measure`` requests are measured; spans without it (older runs)
count as ``measure``."""
PHASE_WARMUP: Final = "warmup"
PHASE_PROBE: Final = "probe"
PHASE_MEASURE: Final = "measure"
REQUEST_SCHEDULED_OFFSET_US: Final = "otelbench.request.scheduled_offset_us"
"""Open loop: when the schedule said to send, µs since the run's start (monotonic)."""
REQUEST_SCHEDULE_LAG_US: Final = "otelbench.request.schedule_lag_us"
"""Open loop: actual send time minus scheduled send time (draft 4.2.5)."""
REQUEST_PROMPT_TOKENS: Final = "otelbench.request.prompt_tokens"
"""How many prompt tokens the load generator sent (the workload item's token ids, before any
decoding to text): the input length actually sent (draft 4.3.2, Appendix A)."""
LOADGEN_WORKER: Final = "otelbench.loadgen.worker"
"""Which load-generating worker process sent the request (0 … N−1; ``otelbench run --workers``)."""
LOADGEN_SHARD: Final = "otelbench.loadgen.shard"
"""Which shard of a run sent from several hosts sent the request, or ran the run span
(0 … N−1; ``otelbench run --shard I/N``); absent on a run from one host."""
WARMUP_SHARD: Final = 0
"""The shard of a run sent from several hosts that warms the target up (draft 4.5) before the
agreed start; its run manifest is the run's (:mod:`otelbench.query.shards`)."""

# --------------------------------------------------------------------------------------------
# Server span attributes as vLLM writes them (seconds, doubles) — anchors.md §4.1
# --------------------------------------------------------------------------------------------
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

# --------------------------------------------------------------------------------------------
# Store: table and SpanKind / StatusCode spellings (OTel Collector ClickHouse exporter)
# --------------------------------------------------------------------------------------------
# The exporter writes pdata's ``SpanKind.String()`` / ``StatusCode.String()`` ("Server",
# "Error"; opentelemetry-collector-contrib exporter/clickhouseexporter/exporter_traces.go), and
# has since pull request 34799 (August 2024). Before it wrote traceutil.SpanKindStr /
# StatusCodeStr, the proto enum names ("SPAN_KIND_SERVER", "STATUS_CODE_ERROR"): the *_LEGACY
# spellings, which otelbench wrote too until it followed. otelbench writes the current spellings
# into every store (DuckDB and ClickHouse alike) and reads both: a query matches a kind or status
# by each spelling in its *_SPELLINGS tuple, so stores written before the change still read.
TABLE_TRACES: Final = "otel_traces"
TABLE_METRICS_GAUGE: Final = "otel_metrics_gauge"
TABLE_METRICS_SUM: Final = "otel_metrics_sum"
TABLE_METRICS_HISTOGRAM: Final = "otel_metrics_histogram"
SPAN_KIND_UNSPECIFIED: Final = "Unspecified"
SPAN_KIND_INTERNAL: Final = "Internal"
SPAN_KIND_SERVER: Final = "Server"
SPAN_KIND_CLIENT: Final = "Client"
SPAN_KIND_PRODUCER: Final = "Producer"
SPAN_KIND_CONSUMER: Final = "Consumer"
STATUS_UNSET: Final = "Unset"
STATUS_OK: Final = "Ok"
STATUS_ERROR: Final = "Error"

SPAN_KIND_UNSPECIFIED_LEGACY: Final = "SPAN_KIND_UNSPECIFIED"
SPAN_KIND_INTERNAL_LEGACY: Final = "SPAN_KIND_INTERNAL"
SPAN_KIND_SERVER_LEGACY: Final = "SPAN_KIND_SERVER"
SPAN_KIND_CLIENT_LEGACY: Final = "SPAN_KIND_CLIENT"
SPAN_KIND_PRODUCER_LEGACY: Final = "SPAN_KIND_PRODUCER"
SPAN_KIND_CONSUMER_LEGACY: Final = "SPAN_KIND_CONSUMER"
STATUS_UNSET_LEGACY: Final = "STATUS_CODE_UNSET"
STATUS_OK_LEGACY: Final = "STATUS_CODE_OK"
STATUS_ERROR_LEGACY: Final = "STATUS_CODE_ERROR"

# Every spelling a store may hold for a kind or status, the current one first.
SPAN_KIND_UNSPECIFIED_SPELLINGS: Final = (SPAN_KIND_UNSPECIFIED, SPAN_KIND_UNSPECIFIED_LEGACY)
SPAN_KIND_INTERNAL_SPELLINGS: Final = (SPAN_KIND_INTERNAL, SPAN_KIND_INTERNAL_LEGACY)
SPAN_KIND_SERVER_SPELLINGS: Final = (SPAN_KIND_SERVER, SPAN_KIND_SERVER_LEGACY)
SPAN_KIND_CLIENT_SPELLINGS: Final = (SPAN_KIND_CLIENT, SPAN_KIND_CLIENT_LEGACY)
SPAN_KIND_PRODUCER_SPELLINGS: Final = (SPAN_KIND_PRODUCER, SPAN_KIND_PRODUCER_LEGACY)
SPAN_KIND_CONSUMER_SPELLINGS: Final = (SPAN_KIND_CONSUMER, SPAN_KIND_CONSUMER_LEGACY)
STATUS_UNSET_SPELLINGS: Final = (STATUS_UNSET, STATUS_UNSET_LEGACY)
STATUS_OK_SPELLINGS: Final = (STATUS_OK, STATUS_OK_LEGACY)
STATUS_ERROR_SPELLINGS: Final = (STATUS_ERROR, STATUS_ERROR_LEGACY)

SPAN_KINDS: Final = (
    SPAN_KIND_UNSPECIFIED,
    SPAN_KIND_INTERNAL,
    SPAN_KIND_SERVER,
    SPAN_KIND_CLIENT,
    SPAN_KIND_PRODUCER,
    SPAN_KIND_CONSUMER,
)
"""The kinds as otelbench writes them, indexed by the OTLP ``Span.SpanKind`` enum value."""
STATUS_CODES: Final = (STATUS_UNSET, STATUS_OK, STATUS_ERROR)
"""The statuses as otelbench writes them, indexed by the OTLP ``Status.StatusCode`` value."""
CURRENT_SPELLING: Final = {
    legacy: current
    for current, legacy in (
        SPAN_KIND_UNSPECIFIED_SPELLINGS,
        SPAN_KIND_INTERNAL_SPELLINGS,
        SPAN_KIND_SERVER_SPELLINGS,
        SPAN_KIND_CLIENT_SPELLINGS,
        SPAN_KIND_PRODUCER_SPELLINGS,
        SPAN_KIND_CONSUMER_SPELLINGS,
        STATUS_UNSET_SPELLINGS,
        STATUS_OK_SPELLINGS,
        STATUS_ERROR_SPELLINGS,
    )
}
"""Legacy spelling → current spelling, for Python code that compares a kind or status read from
a store: ``CURRENT_SPELLING.get(kind, kind) == SPAN_KIND_SERVER``."""

# --------------------------------------------------------------------------------------------
# Environment variables otelbench reads (explicit argument > environment > default)
# --------------------------------------------------------------------------------------------
ENV_OTLP_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
ENV_OTLP_TRACES_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENV_CLIENT_SIGNALS: Final = "OTELBENCH_CLIENT_SIGNALS"
"""What the instrumented client transports emit: ``all`` (default), ``spans`` or ``metrics``
(otelbench.client.others: beside another instrumentation of the ``openai`` SDK)."""

# --------------------------------------------------------------------------------------------
# Engine hooks: the server span per request emitted inside vLLM (engine_hooks/, Option C timing)
# --------------------------------------------------------------------------------------------
# The hooks run in vLLM's venv, which has no otelbench: engine_hooks/otelbench_vllm/names.py
# holds copies of these strings, and tests/unit/engine_hooks/test_names.py checks they agree.
# The server span also carries vLLM's keys above (VLLM_LATENCY_*, VLLM_USAGE_*, VLLM_REQUEST_ID,
# VLLM_RESPONSE_FINISH_REASON) and GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS.
SPAN_HOOK_REQUEST: Final = "otelbench.vllm.request"
"""SERVER span per request: starts at vLLM's frontend arrival time, ends when the request
finished (vLLM's stats timestamp of that step); child of the client span via ``traceparent``,
a root span when the request carried none."""
SPAN_HOOK_QUEUE: Final = "otelbench.vllm.queue"
"""Child span: engine-core QUEUED → first SCHEDULED (vLLM's ``time_in_queue``)."""
SPAN_HOOK_PREFILL: Final = "otelbench.vllm.prefill"
"""Child span: first SCHEDULED → first token's step (preemptions during prefill included)."""
SPAN_HOOK_DECODE: Final = "otelbench.vllm.decode"
"""Child span: first token's step → last token's step (preemptions during decode included)."""
EVENT_PREEMPTION: Final = "otelbench.vllm.preemption"
"""Span event on SPAN_HOOK_REQUEST at each PREEMPTED engine event."""
EVENT_RESUMPTION: Final = "otelbench.vllm.resumption"
"""Span event at the first SCHEDULED engine event after a preemption."""
SERVER_TOKEN_OFFSETS_US: Final = "otelbench.server.token_offsets_us"
"""Int array: for every output token, µs from arrival to the engine step that produced it
(tokens of one step share the step's timestamp). Length = output tokens."""
SERVER_MONO_TO_UNIX_OFFSET_NS: Final = "otelbench.server.mono_to_unix_offset_ns"
"""``time.time_ns() - time.monotonic_ns()`` read in vLLM's frontend when the request's record
was made: the offset used to put the engine's monotonic timestamps on the wall clock."""
SERVER_PREEMPTIONS: Final = "otelbench.server.preemptions"
"""Int: the request's PREEMPTED events (= the number of EVENT_PREEMPTION events)."""
SERVER_ENGINE_REQUEST_ID: Final = "otelbench.server.engine_request_id"
"""vLLM's internal request id (the external ``gen_ai.request.id`` plus a random suffix)."""
SERVER_OUTPUT_PHASE_TOKEN: Final = "otelbench.server.output_phase_token"
"""Index, in ``token_offsets_us``, of the first output token after a reasoning model's think
phase (the token after the think-end token); set only when the hooks know that token's id."""
SERVER_END_REASON: Final = "otelbench.server.end_reason"
"""What ended the request in the engine, on every hook span: ``finished`` (the engine finished it:
stop, length, repetition), ``cancelled`` (vLLM's frontend aborted it: the client disconnected or
the request's task failed), ``aborted`` (the engine aborted it itself: finish reason ``abort``
from the engine core, e.g. at shutdown) or ``error`` (finish reason ``error``, or the engine
died). Spans written before the hooks knew cancellations lack it: read ``finished`` then, or the
finish reason's ``abort``/``error``."""
END_REASON_FINISHED: Final = "finished"
END_REASON_CANCELLED: Final = "cancelled"
END_REASON_ABORTED: Final = "aborted"
END_REASON_ERROR: Final = "error"
END_REASONS: Final = (
    END_REASON_FINISHED,
    END_REASON_CANCELLED,
    END_REASON_ABORTED,
    END_REASON_ERROR,
)
SERVER_END_PHASE: Final = "otelbench.server.end_phase"
"""Where a request that did not finish was when it ended (absent on finished requests):
``queue`` (waiting, never scheduled), ``prefill`` (scheduled, no output token yet), ``decode``
(output tokens generated), ``preempted`` (waiting again after a preemption) or ``unknown``
(the engine core's account did not reach the hooks and the frontend had seen no token)."""
END_PHASE_QUEUE: Final = "queue"
END_PHASE_PREFILL: Final = "prefill"
END_PHASE_DECODE: Final = "decode"
END_PHASE_PREEMPTED: Final = "preempted"
END_PHASE_UNKNOWN: Final = "unknown"
END_PHASES: Final = (
    END_PHASE_QUEUE,
    END_PHASE_PREFILL,
    END_PHASE_DECODE,
    END_PHASE_PREEMPTED,
    END_PHASE_UNKNOWN,
)
SERVER_PROMPT_TOKENS_COMPUTED: Final = "otelbench.server.prompt_tokens_computed"
"""Int, on requests that did not finish: prompt tokens the engine had processed when the request
ended (vLLM's ``num_computed_tokens`` up to the prompt length: prefill done, prefix-cache hits
included), from the engine core's account; the whole prompt once decoding had begun."""
SERVER_OUTPUT_TOKENS_GENERATED: Final = "otelbench.server.output_tokens_generated"
"""Int, on requests that did not finish: output tokens the engine generated, whether or not they
reached vLLM's frontend (``gen_ai.usage.completion_tokens`` counts those that did)."""
PREEMPTION_OUTPUT_TOKENS: Final = "otelbench.preemption.output_tokens"
"""On EVENT_PREEMPTION: output tokens generated before it (vLLM V1 keeps them; not lost)."""
PREEMPTION_KV_TOKENS_DISCARDED: Final = "otelbench.preemption.kv_tokens_discarded"
"""On EVENT_PREEMPTION: prompt + output tokens whose KV cache was freed and is recomputed on
resumption (vLLM V1 preempts by recomputation; prefix-cache hits may save part of it)."""
PREEMPTION_STALL_US: Final = "otelbench.preemption.stall_us"
"""On EVENT_RESUMPTION: µs from the preemption to this resumption."""
ENV_VLLM_HOOKS: Final = "OTELBENCH_VLLM_HOOKS"
"""``1`` enables the engine hooks in a vLLM process where they are installed."""
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
"""The directory of the hooks' abort channel (engine core → API servers); set by the hooks in
vLLM's first process and inherited by the others (``otelbench_vllm.aborts``)."""
ENV_SPOOL_DIR: Final = "OTELBENCH_SPOOL_DIR"
"""The engine hooks' span spool directory (:mod:`otelbench.spool`); unset: no spool."""
ENV_SPOOL_MAX_BYTES: Final = "OTELBENCH_SPOOL_MAX_BYTES"
"""The bound of that spool in bytes (default 256 MiB)."""
SERVICE_VLLM: Final = "vllm"
"""``service.name`` of the hooks' spans when ``OTEL_SERVICE_NAME`` is unset."""
INSTRUMENTATION_SCOPE_HOOKS: Final = "otelbench.vllm"
RESOURCE_VLLM_VERSION: Final = "otelbench.vllm.version"
"""Resource attribute of the hooks' spans: the vLLM version they ran in (``0.32.0+cpu``)."""
RESOURCE_HOOK_SUPPORT: Final = "otelbench.hook.support"
"""Resource attribute of the hooks' spans: ``tested`` (that release runs in otelbench's vLLM test
tier), ``conformed`` (its sources pass ``scripts/vllm/conformance.sh``) or ``untested``."""
RESOURCE_TELEMETRY_DISTRO_NAME: Final = "telemetry.distro.name"
RESOURCE_TELEMETRY_DISTRO_VERSION: Final = "telemetry.distro.version"
HOOKS_DISTRIBUTION: Final = "otelbench-vllm-hooks"
"""``telemetry.distro.name`` on the hooks' resource; ``telemetry.distro.version`` is theirs."""

# --------------------------------------------------------------------------------------------
# Engine hooks: metrics (OpenTelemetry metrics API, recorded once per finished request)
# --------------------------------------------------------------------------------------------
# Copied into engine_hooks/otelbench_vllm/names.py like the span names above. Durations are in
# seconds (unit ``s``); on Prometheus they read ``<name with _ for .>_seconds_bucket`` etc.
METRIC_SERVER_TTFT: Final = "gen_ai.server.time_to_first_token"
"""Histogram (s): arrival → first token's step (vLLM's ``first_token_latency``)."""
METRIC_SERVER_TPOT: Final = "gen_ai.server.time_per_output_token"
"""Histogram (s): (last − first token's step) / (output tokens − 1), requests with ≥ 2 tokens."""
METRIC_SERVER_REQUEST_DURATION: Final = "gen_ai.server.request.duration"
"""Histogram (s): arrival → finish (the server span's ``gen_ai.latency.e2e``)."""
METRIC_HOOK_QUEUE: Final = "otelbench.server.queue.duration"
"""Histogram (s): engine-core QUEUED → first SCHEDULED."""
METRIC_HOOK_PREFILL: Final = "otelbench.server.prefill.duration"
"""Histogram (s): first SCHEDULED → first token's step."""
METRIC_HOOK_DECODE: Final = "otelbench.server.decode.duration"
"""Histogram (s): first token's step → last token's step."""
METRIC_HOOK_ITL: Final = "otelbench.server.inter_token_latency"
"""Histogram (s): every gap between consecutive output-token steps of a request (recorded at
the request's finish from its token timestamps; tokens of one step give a 0 gap)."""
METRIC_HOOK_REQUEST_PREEMPTIONS: Final = "otelbench.server.request.preemptions"
"""Histogram ({preemption}): preemptions per finished request."""
METRIC_HOOK_PREEMPTIONS: Final = "otelbench.server.preemption.count"
"""Counter ({preemption}): preemptions of finished requests."""
METRIC_SERVER_REQUESTS: Final = "otelbench.server.requests"
"""Counter ({request}): requests the hooks ended a span for, by ``otelbench.server.end_reason``
and, for those that did not finish, ``otelbench.server.end_phase``
(``otelbench_server_requests_total`` on Prometheus)."""
METRIC_HOOK_SPANS_ENDED: Final = "otelbench.hook.spans.ended"
"""Observable counter ({span}): spans the hooks ended (handed to the span processor)."""
METRIC_HOOK_SPANS_EXPORTED: Final = "otelbench.hook.spans.exported"
"""Observable counter ({span}): spans the exporter reported exported."""
METRIC_HOOK_SPANS_FAILED: Final = "otelbench.hook.spans.failed"
"""Observable counter ({span}): spans whose export failed or raised."""
METRIC_HOOK_SPANS_UNACCOUNTED: Final = "otelbench.hook.spans.unaccounted"
"""Observable up-down counter ({span}): ended − exported − failed, i.e. still queued or dropped
by a full batch-processor queue (the SDK does not count drops separately)."""
METRIC_HOOK_SPANS_DROPPED: Final = "otelbench.hook.spans.dropped"
"""Observable counter ({span}): spans dropped because the span spool was full (its bound,
``OTELBENCH_SPOOL_MAX_BYTES``); Prometheus ``otelbench_hook_spans_dropped_total``."""
METRIC_HOOK_RECORDS_DROPPED: Final = "otelbench.hook.records.dropped"
"""Observable counter ({request}): finished requests whose spans were never built (the queue to
the hooks' exporter process was full, or that process died). On Prometheus
``otelbench_hook_records_dropped_total``."""
PROMETHEUS_HOOK_INFO: Final = "otelbench_hook_info"
"""A prometheus_client gauge on vLLM's ``/metrics`` (not an OpenTelemetry instrument, so that it
is served with several API servers too): value 1 per API server process where the hooks are active,
labels ``vllm_version``, ``hooks_version``, ``support`` and ``metrics`` (where the hooks' metrics
go: ``prometheus``, ``prometheus+otlp``, ``otlp`` or ``none``)."""

# --------------------------------------------------------------------------------------------
# Guardrails: filter spans, gateway span, metrics, resource attributes (otelbench.guardrails)
# --------------------------------------------------------------------------------------------
# Draft 4.8 (disclosure) and 5.10 (overhead). The filter spans are children of the request's
# span: of the gateway span in ``otelbench gateway``, of the incoming ``traceparent`` (the client
# span) inside vLLM. Text (prompt, completion, matched words) is never recorded.
SERVICE_GUARDRAILS: Final = "otelbench-guardrails"
"""``service.name`` of the guardrail middleware's spans inside another server (vLLM)."""
SERVICE_GATEWAY: Final = "otelbench-gateway"
"""``service.name`` of ``otelbench gateway``'s spans."""
INSTRUMENTATION_SCOPE_GUARDRAILS: Final = "otelbench.guardrails"
ENV_GUARDRAILS_CONFIG: Final = "OTELBENCH_GUARDRAILS_CONFIG"
"""Path of the guardrail configuration file (YAML/JSON) the middleware loads."""
ENTRY_POINT_GROUP_GUARDRAILS: Final = "otelbench.guardrails"
"""Entry-point group of third-party guardrail filters (``name = "pkg.module:FilterClass"``)."""

SPAN_GUARDRAIL_FILTER: Final = "otelbench.guardrail.filter"
"""INTERNAL span, one per filter per request and stage. Input stage: one invocation. Output
stage: the span runs from the filter's first to its last invocation on the response (per chunk or
per window) and sums them up (``invocations``, ``busy_us``, ``chunk_busy_us``)."""
SPAN_GATEWAY_REQUEST: Final = "otelbench.gateway.request"
"""SERVER span, one per request through ``otelbench gateway``: parent of its filter spans."""
GUARDRAIL_FILTER_NAME: Final = "otelbench.guardrail.filter.name"
"""The filter's configured name (default: its type)."""
GUARDRAIL_FILTER_TYPE: Final = "otelbench.guardrail.filter.type"
"""The registry name of the filter's class: ``blocklist``, ``pii``, ``max_input_length``,
``classifier`` or a third-party name."""
GUARDRAIL_STAGE: Final = "otelbench.guardrail.stage"
"""``input`` or ``output``."""
GUARDRAIL_STAGE_INPUT: Final = "input"
GUARDRAIL_STAGE_OUTPUT: Final = "output"
GUARDRAIL_DECISION: Final = "otelbench.guardrail.decision"
"""``allow``, ``block`` or ``redact`` (output span: the strongest over its invocations)."""
DECISION_ALLOW: Final = "allow"
DECISION_BLOCK: Final = "block"
DECISION_REDACT: Final = "redact"
GUARDRAIL_RULE: Final = "otelbench.guardrail.rule"
"""The rule that fired (``keyword[2]``, ``pattern[0]``, ``email``, ``card``, ``max_chars``, a
moderation category …), never the matched text; absent when the filter allowed."""
GUARDRAIL_ERROR: Final = "otelbench.guardrail.error"
"""Why the filter gave no verdict: ``timeout`` or the exception's class name; the decision then
follows ``on_error``."""
GUARDRAIL_ON_ERROR: Final = "otelbench.guardrail.on_error"
"""``open`` (allow) or ``closed`` (block): what a timeout or error of this filter decides."""
GUARDRAIL_INVOCATIONS: Final = "otelbench.guardrail.invocations"
"""Int: times the filter ran for this request and stage (1 on input)."""
GUARDRAIL_BUSY_US: Final = "otelbench.guardrail.busy_us"
"""Int µs: time spent in the filter, summed over its invocations."""
GUARDRAIL_CHUNK_BUSY_US: Final = "otelbench.guardrail.chunk_busy_us"
"""Int array, output span: µs the filter took on each SSE event it saw, in stream order."""
GUARDRAIL_REDACTIONS: Final = "otelbench.guardrail.redactions"
"""Int, input span: the matches the filter replaced (output spans have none: in window mode
the held-back text is scanned again with each event)."""
GUARDRAIL_WINDOW_CHARS: Final = "otelbench.guardrail.window_chars"
"""Int, output span: characters held back for the sliding window (0: per chunk)."""
GUARDRAIL_REFUSED: Final = "otelbench.guardrail.refused"
"""Bool, gateway span: the request was refused by a guardrail."""
GUARDRAIL_REFUSED_STAGE: Final = "otelbench.guardrail.refused.stage"
GUARDRAIL_REFUSED_FILTER: Final = "otelbench.guardrail.refused.filter"
GUARDRAIL_OUTPUT_ADDED_US: Final = "otelbench.guardrail.output.added_us"
"""Int array, on the gateway span and on every output filter span of the response (the same
value: a stage total, not per filter): µs the output stage held each SSE body message (all
filters, SSE parsing and re-encoding), in stream order."""
GATEWAY_UPSTREAM_URL: Final = "otelbench.gateway.upstream.url"
GATEWAY_UPSTREAM_STATUS_CODE: Final = "otelbench.gateway.upstream.status_code"
GATEWAY_UPSTREAM_HEADERS_OFFSET_US: Final = "otelbench.gateway.upstream.headers_offset_us"
"""Int µs from the gateway span's start to the upstream's response headers."""
GATEWAY_UPSTREAM_FIRST_BODY_OFFSET_US: Final = "otelbench.gateway.upstream.first_body_offset_us"
"""Int µs from the gateway span's start to the first body bytes from the upstream."""
GATEWAY_UPSTREAM_END_OFFSET_US: Final = "otelbench.gateway.upstream.end_offset_us"
GATEWAY_UPSTREAM_BODY_READS: Final = "otelbench.gateway.upstream.body_reads"
"""Int: body reads forwarded from the upstream (one SSE write each, unless they coalesce)."""
GATEWAY_ERROR_UNREACHABLE: Final = "upstream_unreachable"
"""``error.type`` (gateway span) when the upstream refused or failed the connection (HTTP 502)."""
GATEWAY_ERROR_TIMEOUT: Final = "upstream_timeout"
"""``error.type`` (gateway span) when the upstream's headers did not come in time (HTTP 504)."""
GATEWAY_ERROR_STREAM: Final = "upstream_stream_error"
"""``error.type`` (gateway span) when the upstream's response broke off mid-body."""
GATEWAY_ERROR_UNAUTHORIZED: Final = "unauthorized"
"""``error.type`` (gateway span) of a request without the gateway's API key (HTTP 401)."""

# Resource attributes: the guardrail configuration, disclosed (draft 4.8.1).
RESOURCE_GUARDRAIL_INPUT_ENABLED: Final = "otelbench.guardrail.input.enabled"
RESOURCE_GUARDRAIL_OUTPUT_ENABLED: Final = "otelbench.guardrail.output.enabled"
RESOURCE_GUARDRAIL_INPUT_FILTERS: Final = "otelbench.guardrail.input.filters"
"""String array: the input filters' names, in order."""
RESOURCE_GUARDRAIL_OUTPUT_FILTERS: Final = "otelbench.guardrail.output.filters"
RESOURCE_GUARDRAIL_SYSTEMS: Final = "otelbench.guardrail.systems"
"""String array: ``type:name`` of every filter, plus a classifier's ``system`` (Llama Guard …)."""
RESOURCE_GUARDRAIL_CONFIG_SHA256: Final = "otelbench.guardrail.config.sha256"
RESOURCE_GUARDRAIL_BLOCK_RESPONSE: Final = "otelbench.guardrail.block_response"
"""``error`` (HTTP error with an OpenAI-style body) or ``completion`` (a refusal completion)."""

# Metrics (OpenTelemetry metrics API; attributes: stage, filter name, decision).
METRIC_GUARDRAIL_FILTER_DURATION: Final = "otelbench.guardrail.filter.duration"
"""Histogram (s): one filter invocation."""
METRIC_GUARDRAIL_REFUSALS: Final = "otelbench.guardrail.refusals"
"""Counter ({request}): requests refused, by ``otelbench.guardrail.stage`` and filter name."""
METRIC_GUARDRAIL_OUTPUT_ADDED: Final = "otelbench.guardrail.output.added_latency"
"""Histogram (s): time the output stage held one SSE body message (all output filters)."""
FINISH_REASON_CONTENT_FILTER: Final = "content_filter"
"""``finish_reason`` of a refusal completion (OpenAI's value for filtered output)."""
ERROR_CODE_CONTENT_FILTER: Final = "content_filter"
"""``error.code`` in the OpenAI-style error body of a blocked request."""
ENV_GATEWAY_API_KEY: Final = "OTELBENCH_GATEWAY_API_KEY"
"""The API key ``otelbench gateway`` requires (``Authorization: Bearer <key>``), when set."""

# --------------------------------------------------------------------------------------------
# Live: continuous benchmarking beside live traffic (otelbench.live: ``watch`` and ``probe``)
# --------------------------------------------------------------------------------------------
# ``otelbench probe`` sends a low-rate benchmark stream through the load generator; every span
# its tracer starts (run span, client spans) carries PROBE_STREAM, so the server span that is a
# child of a probe client span (via ``traceparent``) is told apart from live traffic by its
# parent. ``otelbench watch`` computes windowed metrics per traffic source and serves them on a
# Prometheus ``/metrics`` endpoint: every series below is over the sliding window (the requests
# whose server span ENDED within it), labelled ``source``; ``quantile`` is a type-7 percentile
# (metrics.summary) as a fraction, e.g. ``0.99``, of a summary that holds its quantiles only.
SERVICE_PROBE: Final = "otelbench-probe"
"""``service.name`` of ``otelbench probe``'s spans."""
PROBE_STREAM: Final = "otelbench.probe.stream"
"""On every span of a probe stream (run and client spans): the stream's name."""
SOURCE_LIVE: Final = "live"
"""Server spans without an otelbench client parent: production traffic."""
SOURCE_PROBE: Final = "probe"
"""Server spans whose client span carries PROBE_STREAM."""
SOURCE_BENCHMARK: Final = "benchmark"
"""Server spans whose client span belongs to another otelbench run (``otelbench run``/``test``)."""
CLASS_NONE: Final = "(none)"
"""The ``class`` label of requests without the class attribute."""

LABEL_SOURCE: Final = "source"
LABEL_QUANTILE: Final = "quantile"
LABEL_CLASS: Final = "class"
LABEL_SLO: Final = "slo"
"""``ttft``, ``tpot`` or ``all`` (both)."""
LABEL_DECODE_DEADLINE: Final = "decode_deadline_seconds"
"""Etalon's decode deadline D_d of a fluidity series."""
LABEL_OVER: Final = "over"
"""What Jain's index is taken over: ``ttft`` or ``tpot`` (each class's mean)."""
LABEL_END_REASON: Final = "end_reason"
"""Why the engine did not finish a request: ``cancelled``, ``aborted`` or ``error``
(:data:`SERVER_END_REASON`)."""
LABEL_END_PHASE: Final = "end_phase"
"""Where the request was when it was cut (:data:`SERVER_END_PHASE`; ``unknown`` without one)."""

METRIC_LIVE_REQUESTS: Final = "otelbench_live_requests"
"""Gauge ({request}): requests in the window (successful, failed and cut short)."""
METRIC_LIVE_ERRORS: Final = "otelbench_live_errors"
"""Gauge ({request}): requests in the window whose server span has status Error."""
METRIC_LIVE_CUT_REQUESTS: Final = "otelbench_live_cut_requests"
"""Gauge ({request}), by end reason and end phase: requests in the window the engine did not
finish (cancelled, aborted, error), every pair exposed, 0 included."""
METRIC_LIVE_UNREAD_PROMPT_TOKENS: Final = "otelbench_live_unread_prompt_tokens"
"""Gauge ({token}): prompt tokens the engine processed for the window's cut requests."""
METRIC_LIVE_UNREAD_OUTPUT_TOKENS: Final = "otelbench_live_unread_output_tokens"
"""Gauge ({token}): output tokens the engine generated for the window's cut requests."""
METRIC_LIVE_UNREAD_ENGINE_SECONDS: Final = "otelbench_live_unread_engine_seconds"
"""Gauge (s): request-seconds the window's cut requests spent in the engine (the sum of their
``gen_ai.latency.time_in_model_inference``: first scheduling → cut)."""
METRIC_LIVE_REQUEST_RATE: Final = "otelbench_live_requests_per_second"
"""Gauge: requests in the window / window length."""
METRIC_LIVE_OUTPUT_TOKEN_RATE: Final = "otelbench_live_output_tokens_per_second"
"""Gauge: output tokens of the window's successful requests / window length."""
METRIC_LIVE_TTFT: Final = "otelbench_live_ttft_seconds"
"""Summary (s), quantiles only: server TTFT (arrival → first token; ``gen_ai.latency.*``)."""
METRIC_LIVE_ITL: Final = "otelbench_live_itl_seconds"
"""Summary (s), quantiles only: gaps between consecutive output-token steps (hook token offsets)."""
METRIC_LIVE_TPOT: Final = "otelbench_live_tpot_seconds"
"""Summary (s), quantiles only: (last − first token) / (output tokens − 1) per request."""
METRIC_LIVE_E2E: Final = "otelbench_live_e2e_seconds"
"""Summary (s), quantiles only: server request duration (arrival → finish)."""
METRIC_LIVE_QUEUE: Final = "otelbench_live_queue_seconds"
"""Summary (s), quantiles only: queued → first scheduled (TTFT's queue component)."""
METRIC_LIVE_PREFILL: Final = "otelbench_live_prefill_seconds"
"""Summary (s), quantiles only: first scheduled → first token (TTFT's prefill component)."""
METRIC_LIVE_FLUIDITY: Final = "otelbench_live_fluidity_index"
"""Summary (1), quantiles only (0.01, 0.05, 0.5), by decode deadline: Etalon's fluidity-index."""
METRIC_LIVE_FLUID_FRACTION: Final = "otelbench_live_fluid_requests_ratio"
"""Gauge (1), by decode deadline: fraction of requests with a fluidity-index >= 0.9."""
METRIC_LIVE_FLUID_TOKEN_RATE: Final = "otelbench_live_fluid_token_rate_tokens_per_second"
"""Gauge: Etalon's fluid token generation rate (1 / the smallest D_d for 99 % fluid requests)."""
METRIC_LIVE_PREEMPTED_RATIO: Final = "otelbench_live_preempted_requests_ratio"
"""Gauge (1): preempted requests / requests with preemption data (hook spans)."""
METRIC_LIVE_PREEMPTION_RATE: Final = "otelbench_live_preemptions_per_second"
"""Gauge: preemptions of the window's requests / window length."""
METRIC_LIVE_JAIN: Final = "otelbench_live_jain_index"
"""Gauge (1), by ``over``: Jain's index across classes of each class's mean TTFT or TPOT."""
METRIC_LIVE_CLASS_REQUESTS: Final = "otelbench_live_class_requests"
"""Gauge ({request}), by class: requests in the window per class."""
METRIC_LIVE_SLO_ATTAINMENT: Final = "otelbench_live_slo_attainment_ratio"
"""Gauge (1), by slo: requests meeting the SLO / requests (failed or cut requests never meet
it)."""
METRIC_LIVE_GOODPUT: Final = "otelbench_live_goodput_requests_per_second"
"""Gauge: requests meeting every configured SLO / window length."""
METRIC_LIVE_GOODPUT_TOKENS: Final = "otelbench_live_goodput_tokens_per_second"
"""Gauge: output tokens of the requests meeting every configured SLO / window length."""
METRIC_LIVE_WINDOW: Final = "otelbench_live_window_seconds"
"""Gauge (s): the sliding window's length."""
METRIC_LIVE_SLO_TARGET: Final = "otelbench_live_slo_target_seconds"
"""Gauge (s), by slo: the configured SLO thresholds."""
METRIC_LIVE_REFRESH_TIMESTAMP: Final = "otelbench_live_refresh_timestamp_seconds"
"""Gauge (s, Unix time): end of the window of the last successful refresh."""
METRIC_LIVE_REFRESH_DURATION: Final = "otelbench_live_refresh_duration_seconds"
"""Gauge (s): wall time of the last refresh (query + metrics)."""
METRIC_LIVE_REFRESH_SPANS: Final = "otelbench_live_refresh_spans"
"""Gauge ({span}): server spans the last refresh read."""
METRIC_LIVE_REFRESH_ERRORS: Final = "otelbench_live_refresh_errors_total"
"""Counter: refreshes that failed (the previous values stay exposed)."""
METRIC_LIVE_STORE_BYTES: Final = "otelbench_live_store_bytes"
"""Gauge (By): size of the span store: the DuckDB file (+ WAL), or the active parts of ClickHouse's
``otel_traces``."""
METRIC_LIVE_RETENTION_DELETED: Final = "otelbench_live_retention_deleted_spans_total"
"""Counter: spans deleted by the retention policy."""
