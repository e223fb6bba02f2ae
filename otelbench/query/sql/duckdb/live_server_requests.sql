-- live_server_requests: the server spans of live traffic — spans whose parent is not an
-- otelbench client span (no parent, or a parent without $attr_run_id, directly or behind
-- otelbench's gateway span; probe and benchmark requests have otelbench client spans as parents
-- and are left out) — optionally only those starting within
-- [$start_unix_ns, $end_unix_ns) (NULL = open). A server span is the engine hooks' span
-- ($span_hook_request: per-token offsets and preemption events) or vLLM's own llm_request
-- span; one per request: a hook span wins over an llm_request span of the same request (same
-- parent; for root spans, the same request id), then the earliest. Columns as in
-- run_server_requests (hook-only columns NULL, or empty lists, for an llm_request span).
WITH server AS (
    SELECT
        s."TraceId"                                       AS trace_id,
        s."SpanId"                                        AS span_id,
        s."ParentSpanId"                                  AS parent_span_id,
        s."SpanName"                                      AS span_name,
        s."SpanName" = $span_hook_request                 AS is_hook,
        s."Timestamp"                                     AS ts,
        s."Duration"                                      AS duration,
        s."SpanAttributes"                                AS attrs,
        list_zip(s."Events.Name", s."Events.Attributes")  AS events
    FROM otel_traces AS s
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" = $kind_server
      AND ($start_unix_ns IS NULL OR s."Timestamp" >= make_timestamp_ns(CAST($start_unix_ns AS BIGINT)))
      AND ($end_unix_ns IS NULL OR s."Timestamp" < make_timestamp_ns(CAST($end_unix_ns AS BIGINT)))
      AND NOT EXISTS (
          SELECT 1
          FROM otel_traces AS c
          WHERE c."TraceId" = s."TraceId"
            AND c."SpanId" = s."ParentSpanId"
            AND c."SpanKind" = $kind_client
            AND c."SpanAttributes"[$attr_run_id] IS NOT NULL
      )
      AND NOT EXISTS (  -- behind otelbench's gateway: the gateway span's parent is the client
          SELECT 1
          FROM otel_traces AS g
          JOIN otel_traces AS c ON c."TraceId" = g."TraceId" AND c."SpanId" = g."ParentSpanId"
          WHERE g."TraceId" = s."TraceId"
            AND g."SpanId" = s."ParentSpanId"
            AND g."SpanName" = $span_gateway_request
            AND c."SpanKind" = $kind_client
            AND c."SpanAttributes"[$attr_run_id] IS NOT NULL
      )
    QUALIFY row_number() OVER (
        PARTITION BY CASE
            WHEN s."ParentSpanId" = '' THEN coalesce(s."SpanAttributes"[$attr_vllm_request_id], s."SpanId")
            ELSE s."TraceId" || '/' || s."ParentSpanId"
        END
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
