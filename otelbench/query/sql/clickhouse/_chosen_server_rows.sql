-- _chosen_server_rows: otel_traces (as `s`) joined back to the CTE `chosen` of
-- _chosen_server_spans (as `c`) on the columns that identify each chosen server span, so that
-- only the chosen rows' attributes are read. Included after the SELECT list of a CTE over the
-- chosen spans (run_server_requests).
FROM otel_traces AS s
INNER JOIN chosen AS c
    ON s.TraceId = c.c_trace_id AND s.SpanId = c.c_span_id
   AND s.ParentSpanId = c.c_parent_id AND s.SpanName = c.c_span_name AND s.Timestamp = c.c_ts
WHERE s.SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
  AND s.SpanKind IN ({kind_server:String}, {kind_server_legacy:String})
