-- _chosen_server_spans: the CTE `chosen` — the server span of each of run {run_id}'s measured
-- client spans, by the columns that identify it (c_trace_id, c_span_id, c_parent_id,
-- c_span_name, c_ts) and its client span's id: the engine hooks' span wins over vLLM's
-- llm_request span, then the earliest. Needs the CTEs of _measured_client_parents before it;
-- included by run_server_requests and the server ITL queries, which join otel_traces back on
-- those columns (_chosen_server_rows) and read only the chosen rows' attributes (LIMIT 1 BY
-- keeps one of identical duplicates, as row_number() does). Ranking narrow rows: ranking the
-- wide ones moved every span's attribute text through the window's sort (0.95 s against 0.35 s
-- for 50,000 requests of 100 tokens).
chosen AS (
    SELECT
        s.TraceId                                   AS c_trace_id,
        s.SpanId                                    AS c_span_id,
        s.ParentSpanId                              AS c_parent_id,
        s.SpanName                                  AS c_span_name,
        s.Timestamp                                 AS c_ts,
        p.client_span_id                            AS client_span_id
    FROM otel_traces AS s
    INNER JOIN parents AS p ON s.TraceId = p.p_trace_id AND s.ParentSpanId = p.p_span_id
    WHERE s.SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
      AND s.SpanKind IN ({kind_server:String}, {kind_server_legacy:String})
    QUALIFY row_number() OVER (
        PARTITION BY s.TraceId, p.client_span_id
        ORDER BY s.SpanName = {span_hook_request:String} DESC, s.Timestamp, s.SpanId
    ) = 1
),
