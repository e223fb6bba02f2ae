-- (included) The server span of each request that started in the dashboard's time range: the
-- engine hooks' span when there is one, else vLLM's own llm_request span of the same request
-- (both are children of the same client span, or roots of their own trace).
(
    SELECT *
    FROM otel_traces
    WHERE $__timeFilter_ms(Timestamp)
      AND SpanKind = {{SPAN_KIND_SERVER}}
      AND SpanName IN ({{SPAN_HOOK_REQUEST}}, {{SPAN_VLLM_REQUEST}})
    ORDER BY SpanName = {{SPAN_HOOK_REQUEST}} DESC
    LIMIT 1 BY TraceId, ParentSpanId
)
