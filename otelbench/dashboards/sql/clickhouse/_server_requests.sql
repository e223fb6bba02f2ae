-- (included) The server span of each request that started in the dashboard's time range: the
-- engine hooks' span when there is one, else vLLM's own llm_request span of the same request
-- (both are children of the same client span, or roots of their own trace). SpanKind is
-- matched by both spellings: the exporter's current one and the one it wrote before August 2024.
(
    SELECT *
    FROM otel_traces
    WHERE $__timeFilter_ms(Timestamp)
      AND SpanKind IN ({{SPAN_KIND_SERVER}}, {{SPAN_KIND_SERVER_LEGACY}})
      AND SpanName IN ({{SPAN_HOOK_REQUEST}}, {{SPAN_VLLM_REQUEST}})
    ORDER BY SpanName = {{SPAN_HOOK_REQUEST}} DESC
    LIMIT 1 BY TraceId, ParentSpanId
)
