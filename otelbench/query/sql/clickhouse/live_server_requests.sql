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
      AND s.SpanKind IN ({kind_server:String}, {kind_server_legacy:String})
      AND ({start_unix_ns:Nullable(Int64)} IS NULL
           OR s.Timestamp >= fromUnixTimestamp64Nano(assumeNotNull({start_unix_ns:Nullable(Int64)})))
      AND ({end_unix_ns:Nullable(Int64)} IS NULL
           OR s.Timestamp < fromUnixTimestamp64Nano(assumeNotNull({end_unix_ns:Nullable(Int64)})))
      AND (s.TraceId, s.ParentSpanId) NOT IN (
          SELECT TraceId, SpanId
          FROM otel_traces
          WHERE SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
            AND mapContains(SpanAttributes, {attr_run_id:String})
      )
      AND (s.TraceId, s.ParentSpanId) NOT IN (  -- behind otelbench's gateway
          SELECT g.TraceId, g.SpanId
          FROM otel_traces AS g
          INNER JOIN otel_traces AS c ON c.TraceId = g.TraceId AND c.SpanId = g.ParentSpanId
          WHERE g.SpanName = {span_gateway_request:String}
            AND c.SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
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
-- @include _server_span_columns
FROM server
ORDER BY ts, trace_id, span_id
SETTINGS precise_float_parsing = 1
