-- live_server_requests: the server spans of live traffic — spans whose parent is not an
-- otelbench client span (no parent, or a parent without attr_run_id, directly or behind
-- otelbench's gateway span; probe and benchmark requests have otelbench client spans as parents
-- and are left out) — optionally only those starting within [start_unix_ns, end_unix_ns)
-- (NULL = open). A server span is the engine hooks' span (span_hook_request) or vLLM's own
-- llm_request span; one per request: a hook span wins over an llm_request span of the same
-- request (same parent; for root spans, the same request id), then the earliest. Same rows and
-- columns as the DuckDB dialect (those of run_server_requests). The window is compared on
-- Timestamp itself so that the table's ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
-- prunes granules; "no otelbench client parent" is a tuple NOT IN (ClickHouse's correlated
-- subqueries are limited).
-- Latencies arrive as decimal text: SETTINGS precise_float_parsing = 1 makes toFloat64OrNull
-- round correctly, as DuckDB's CAST and Python's float() do (ClickHouse's default fast parser is
-- off by one ulp on some inputs, e.g. '0.087568' → 0.08756800000000001).
WITH server AS (
    SELECT
        s.TraceId                                   AS trace_id,
        s.SpanId                                    AS span_id,
        s.ParentSpanId                              AS parent_span_id,
        s.SpanName                                  AS span_name,
        s.SpanName = {span_hook_request:String}     AS is_hook,
        s.Timestamp                                 AS ts,
        s.Duration                                  AS duration,
        s.SpanAttributes                            AS attrs,
        s.`Events.Name`                             AS event_names,
        s.`Events.Attributes`                       AS event_attrs
    FROM otel_traces AS s
    WHERE s.SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
      AND s.SpanKind = {kind_server:String}
      AND ({start_unix_ns:Nullable(Int64)} IS NULL
           OR s.Timestamp >= fromUnixTimestamp64Nano(assumeNotNull({start_unix_ns:Nullable(Int64)})))
      AND ({end_unix_ns:Nullable(Int64)} IS NULL
           OR s.Timestamp < fromUnixTimestamp64Nano(assumeNotNull({end_unix_ns:Nullable(Int64)})))
      AND (s.TraceId, s.ParentSpanId) NOT IN (
          SELECT TraceId, SpanId
          FROM otel_traces
          WHERE SpanKind = {kind_client:String}
            AND mapContains(SpanAttributes, {attr_run_id:String})
      )
      AND (s.TraceId, s.ParentSpanId) NOT IN (  -- behind otelbench's gateway
          SELECT g.TraceId, g.SpanId
          FROM otel_traces AS g
          INNER JOIN otel_traces AS c ON c.TraceId = g.TraceId AND c.SpanId = g.ParentSpanId
          WHERE g.SpanName = {span_gateway_request:String}
            AND c.SpanKind = {kind_client:String}
            AND mapContains(c.SpanAttributes, {attr_run_id:String})
      )
    QUALIFY row_number() OVER (
        PARTITION BY if(
            s.ParentSpanId = '',
            if(mapContains(s.SpanAttributes, {attr_vllm_request_id:String}),
               s.SpanAttributes[{attr_vllm_request_id:String}], s.SpanId),
            concat(s.TraceId, '/', s.ParentSpanId)
        )
        ORDER BY s.SpanName = {span_hook_request:String} DESC, s.Timestamp, s.SpanId
    ) = 1
)
SELECT
    trace_id,
    span_id,
    parent_span_id,
    toString(span_name)                                                    AS span_name,
    toUnixTimestamp64Nano(ts)                                              AS start_unix_ns,
    toInt64(duration)                                                      AS duration_ns,
    if(mapContains(attrs, {attr_vllm_request_id:String}),
       attrs[{attr_vllm_request_id:String}], NULL)                         AS request_id,
    if(mapContains(attrs, {attr_vllm_ttft:String}),
       toFloat64OrNull(attrs[{attr_vllm_ttft:String}]), NULL)              AS ttft_s,
    if(mapContains(attrs, {attr_vllm_e2e:String}),
       toFloat64OrNull(attrs[{attr_vllm_e2e:String}]), NULL)               AS e2e_s,
    if(mapContains(attrs, {attr_vllm_queue:String}),
       toFloat64OrNull(attrs[{attr_vllm_queue:String}]), NULL)             AS queue_s,
    if(mapContains(attrs, {attr_vllm_prefill:String}),
       toFloat64OrNull(attrs[{attr_vllm_prefill:String}]), NULL)           AS prefill_s,
    if(mapContains(attrs, {attr_vllm_decode:String}),
       toFloat64OrNull(attrs[{attr_vllm_decode:String}]), NULL)            AS decode_s,
    if(mapContains(attrs, {attr_vllm_inference:String}),
       toFloat64OrNull(attrs[{attr_vllm_inference:String}]), NULL)         AS inference_s,
    if(mapContains(attrs, {attr_vllm_prompt_tokens:String}),
       toInt64OrNull(attrs[{attr_vllm_prompt_tokens:String}]), NULL)       AS prompt_tokens,
    if(mapContains(attrs, {attr_vllm_completion_tokens:String}),
       toInt64OrNull(attrs[{attr_vllm_completion_tokens:String}]), NULL)   AS completion_tokens,
    if(mapContains(attrs, {attr_vllm_finish_reason:String}),
       attrs[{attr_vllm_finish_reason:String}], NULL)                      AS finish_reason,
    if(mapContains(attrs, {attr_cache_read_tokens:String}),
       toInt64OrNull(attrs[{attr_cache_read_tokens:String}]), NULL)        AS cache_read_tokens,
    if(is_hook AND mapContains(attrs, {attr_server_preemptions:String}),
       toInt64OrNull(attrs[{attr_server_preemptions:String}]), NULL)       AS preemptions,
    if(is_hook, toInt64(countEqual(event_names, {event_preemption:String})), NULL)
                                                                           AS preemption_events,
    if(is_hook, arraySum(
        (n, a) -> if(n = {event_preemption:String},
                     toInt64OrZero(a[{attr_preemption_kv_discarded:String}]), toInt64(0)),
        event_names, event_attrs
    ), NULL)                                                               AS kv_tokens_discarded,
    if(is_hook,
       JSONExtract(attrs[{attr_server_token_offsets_us:String}], 'Array(Int64)'),
       CAST([], 'Array(Int64)'))                                           AS token_offsets_us,
    if(is_hook AND mapContains(attrs, {attr_server_output_phase_token:String}),
       toInt64OrNull(attrs[{attr_server_output_phase_token:String}]), NULL) AS output_phase_token,
    if(is_hook, arrayMap(
        a -> toInt64OrZero(a[{attr_preemption_stall_us:String}]),
        arrayFilter(
            (a, n) -> n = {event_resumption:String}
                      AND mapContains(a, {attr_preemption_stall_us:String}),
            event_attrs, event_names
        )
    ), CAST([], 'Array(Int64)'))                                           AS stall_us
FROM server
ORDER BY ts, trace_id, span_id
SETTINGS precise_float_parsing = 1
