-- run_server_requests: the vLLM llm_request spans that are children of run $run_id's client spans
-- (same TraceId, ParentSpanId = the client's SpanId), at most one per client span (the earliest).
WITH client AS (
    SELECT "TraceId" AS trace_id, "SpanId" AS span_id
    FROM otel_traces
    WHERE "SpanKind" = $kind_client
      AND "SpanAttributes"[$attr_run_id] = $run_id
)
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
JOIN client AS c
  ON s."TraceId" = c.trace_id AND s."ParentSpanId" = c.span_id
WHERE s."SpanName" = $span_vllm_request
  AND s."SpanKind" = $kind_server
QUALIFY row_number() OVER (
    PARTITION BY s."TraceId", s."ParentSpanId" ORDER BY s."Timestamp", s."SpanId"
) = 1
ORDER BY s."Timestamp", s."TraceId", s."SpanId"
