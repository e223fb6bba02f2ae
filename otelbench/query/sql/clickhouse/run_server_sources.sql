-- run_server_sources: what produced run {run_id}'s server timing. The server spans in the traces
-- of its measured client spans (the engine hooks' spans and vLLM's own llm_request spans, both
-- counted), grouped by span name and by the resource attributes the hooks put on their spans: the
-- vLLM version, the hooks' version and their support level for that release (empty for vLLM's own
-- spans, whose resource carries none of them).
SELECT
    SpanName                                           AS span_name,
    ResourceAttributes[{res_vllm_version:String}]      AS vllm_version,
    ResourceAttributes[{res_hooks_version:String}]     AS hooks_version,
    ResourceAttributes[{res_hook_support:String}]      AS support,
    toInt64(count())                                   AS spans
FROM otel_traces
WHERE SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
  AND SpanKind IN ({kind_server:String}, {kind_server_legacy:String})
  AND TraceId IN (
      SELECT TraceId
      FROM otel_traces
      -- @include _measured_client_filter
  )
GROUP BY span_name, vllm_version, hooks_version, support
ORDER BY span_name, vllm_version, hooks_version, support
