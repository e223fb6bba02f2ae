-- live_server_requests: vLLM llm_request spans whose parent is not an otelbench client span
-- (live traffic), optionally within [$start_unix_ns, $end_unix_ns) of span start (NULL = open).
SELECT
    s."TraceId"                                                        AS trace_id,
    s."SpanId"                                                         AS span_id,
    s."ParentSpanId"                                                   AS parent_span_id,
    epoch_ns(s."Timestamp")                                            AS start_unix_ns,
    CAST(s."Duration" AS BIGINT)                                       AS duration_ns,
    s."SpanAttributes"[$attr_vllm_request_id]                          AS request_id,
    CAST(s."SpanAttributes"[$attr_vllm_ttft] AS DOUBLE)                AS ttft_s,
    CAST(s."SpanAttributes"[$attr_vllm_e2e] AS DOUBLE)                 AS e2e_s,
    CAST(s."SpanAttributes"[$attr_vllm_queue] AS DOUBLE)               AS queue_s,
    CAST(s."SpanAttributes"[$attr_vllm_prefill] AS DOUBLE)             AS prefill_s,
    CAST(s."SpanAttributes"[$attr_vllm_decode] AS DOUBLE)              AS decode_s,
    CAST(s."SpanAttributes"[$attr_vllm_inference] AS DOUBLE)           AS inference_s,
    CAST(s."SpanAttributes"[$attr_vllm_prompt_tokens] AS BIGINT)       AS prompt_tokens,
    CAST(s."SpanAttributes"[$attr_vllm_completion_tokens] AS BIGINT)   AS completion_tokens
FROM otel_traces AS s
WHERE s."SpanName" = $span_vllm_request
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
ORDER BY s."Timestamp", s."TraceId", s."SpanId"
