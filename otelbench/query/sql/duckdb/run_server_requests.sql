-- run_server_requests: the server span of each of run $run_id's measured client spans (warm-up and
-- probe requests, draft 4.5, are left out, as in client_requests). A server span is the engine
-- hooks' span ($span_hook_request: per-token offsets and preemption events) or vLLM's own
-- llm_request span, and a child of the client span (same TraceId, ParentSpanId = the client's
-- SpanId) — or, behind otelbench's guardrail gateway, a child of the gateway span
-- ($span_gateway_request) that is the client span's child. At most one per client span: a hook
-- span wins over llm_request (both exist when vLLM's own tracing is on too), then the earliest.
-- parent_span_id is the CLIENT span's id either way. Token offsets arrive as JSON text and
-- are parsed here as BIGINT[]; the preemption and resumption span events are read with list
-- functions (hook-only columns are NULL, or empty lists, for an llm_request span).
WITH client AS (
    SELECT "TraceId" AS trace_id, "SpanId" AS span_id
    FROM otel_traces
    WHERE "SpanKind" = $kind_client
      AND "SpanAttributes"[$attr_run_id] = $run_id
      AND coalesce("SpanAttributes"[$attr_request_phase], $phase_measure) = $phase_measure
),
parents AS (
    SELECT trace_id, span_id, span_id AS client_span_id FROM client
    UNION ALL
    SELECT g."TraceId", g."SpanId", c.span_id
    FROM otel_traces AS g
    JOIN client AS c ON g."TraceId" = c.trace_id AND g."ParentSpanId" = c.span_id
    WHERE g."SpanName" = $span_gateway_request
),
server AS (
    SELECT
        s."TraceId"                                       AS trace_id,
        s."SpanId"                                        AS span_id,
        p.client_span_id                                  AS parent_span_id,
        s."SpanName"                                      AS span_name,
        s."SpanName" = $span_hook_request                 AS is_hook,
        s."Timestamp"                                     AS ts,
        s."Duration"                                      AS duration,
        s."SpanAttributes"                                AS attrs,
        list_zip(s."Events.Name", s."Events.Attributes")  AS events
    FROM otel_traces AS s
    JOIN parents AS p
      ON s."TraceId" = p.trace_id AND s."ParentSpanId" = p.span_id
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" = $kind_server
    QUALIFY row_number() OVER (
        PARTITION BY s."TraceId", p.client_span_id
        ORDER BY s."SpanName" = $span_hook_request DESC, s."Timestamp", s."SpanId"
    ) = 1
)
SELECT
    trace_id,
    span_id,
    parent_span_id,
    span_name,
    epoch_ns(ts)                                                       AS start_unix_ns,
    CAST(duration AS BIGINT)                                           AS duration_ns,
    attrs[$attr_vllm_request_id]                                       AS request_id,
    CAST(attrs[$attr_vllm_ttft] AS DOUBLE)                             AS ttft_s,
    CAST(attrs[$attr_vllm_e2e] AS DOUBLE)                              AS e2e_s,
    CAST(attrs[$attr_vllm_queue] AS DOUBLE)                            AS queue_s,
    CAST(attrs[$attr_vllm_prefill] AS DOUBLE)                          AS prefill_s,
    CAST(attrs[$attr_vllm_decode] AS DOUBLE)                           AS decode_s,
    CAST(attrs[$attr_vllm_inference] AS DOUBLE)                        AS inference_s,
    CAST(attrs[$attr_vllm_prompt_tokens] AS BIGINT)                    AS prompt_tokens,
    CAST(attrs[$attr_vllm_completion_tokens] AS BIGINT)                AS completion_tokens,
    attrs[$attr_vllm_finish_reason]                                    AS finish_reason,
    CAST(attrs[$attr_cache_read_tokens] AS BIGINT)                     AS cache_read_tokens,
    CASE WHEN is_hook THEN CAST(attrs[$attr_server_preemptions] AS BIGINT) END
                                                                       AS preemptions,
    CASE WHEN is_hook THEN
        len(list_filter(events, lambda e: e[1] = $event_preemption))
    END                                                                AS preemption_events,
    CASE WHEN is_hook THEN coalesce(list_sum(list_transform(
        list_filter(events, lambda e: e[1] = $event_preemption),
        lambda e: CAST(e[2][$attr_preemption_kv_discarded] AS BIGINT)
    )), 0) END                                                         AS kv_tokens_discarded,
    CASE WHEN is_hook THEN
        coalesce(from_json(attrs[$attr_server_token_offsets_us], '["BIGINT"]'), []::BIGINT[])
    ELSE []::BIGINT[] END                                              AS token_offsets_us,
    CASE WHEN is_hook THEN CAST(attrs[$attr_server_output_phase_token] AS BIGINT) END
                                                                       AS output_phase_token,
    CASE WHEN is_hook THEN list_filter(list_transform(
        list_filter(events, lambda e: e[1] = $event_resumption),
        lambda e: CAST(e[2][$attr_preemption_stall_us] AS BIGINT)
    ), lambda x: x IS NOT NULL) ELSE []::BIGINT[] END                  AS stall_us
FROM server
ORDER BY ts, trace_id, span_id
