-- run_server_sources: what produced run $run_id's server timing. The server spans in the traces
-- of its measured client spans (the engine hooks' $span_hook_request spans and vLLM's own
-- $span_vllm_request spans, both counted), grouped by span name and by the resource attributes the
-- hooks put on their spans: the vLLM version, the hooks' version and their support level for that
-- release (empty for vLLM's own spans, whose resource carries none of them).
WITH client AS (
    SELECT DISTINCT "TraceId" AS trace_id
    FROM otel_traces
    -- @include _measured_client_filter
)
SELECT
    s."SpanName"                                                 AS span_name,
    coalesce(s."ResourceAttributes"[$res_vllm_version], '')      AS vllm_version,
    coalesce(s."ResourceAttributes"[$res_hooks_version], '')     AS hooks_version,
    coalesce(s."ResourceAttributes"[$res_hook_support], '')      AS support,
    count(*)::BIGINT                                             AS spans
FROM otel_traces AS s
SEMI JOIN client AS c ON s."TraceId" = c.trace_id
WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
  AND s."SpanKind" IN ($kind_server, $kind_server_legacy)
GROUP BY ALL
ORDER BY ALL
