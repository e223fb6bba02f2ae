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
-- @include _server_token_offsets
        list_zip(s."Events.Name", s."Events.Attributes")  AS events
    FROM otel_traces AS s
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" IN ($kind_server, $kind_server_legacy)
      AND ($start_unix_ns IS NULL OR s."Timestamp" >= make_timestamp_ns(CAST($start_unix_ns AS BIGINT)))
      AND ($end_unix_ns IS NULL OR s."Timestamp" < make_timestamp_ns(CAST($end_unix_ns AS BIGINT)))
      AND NOT EXISTS (
          SELECT 1
          FROM otel_traces AS c
          WHERE c."TraceId" = s."TraceId"
            AND c."SpanId" = s."ParentSpanId"
            AND c."SpanKind" IN ($kind_client, $kind_client_legacy)
            AND c."SpanAttributes"[$attr_run_id] IS NOT NULL
      )
      AND NOT EXISTS (  -- behind otelbench's gateway: the gateway span's parent is the client
          SELECT 1
          FROM otel_traces AS g
          JOIN otel_traces AS c ON c."TraceId" = g."TraceId" AND c."SpanId" = g."ParentSpanId"
          WHERE g."TraceId" = s."TraceId"
            AND g."SpanId" = s."ParentSpanId"
            AND g."SpanName" = $span_gateway_request
            AND c."SpanKind" IN ($kind_client, $kind_client_legacy)
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
-- @include _server_span_columns
FROM server
ORDER BY ts, trace_id, span_id
