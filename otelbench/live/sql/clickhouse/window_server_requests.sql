-- window_server_requests (ClickHouse dialect): the rows and columns of the DuckDB dialect's query
-- (sql/duckdb/window_server_requests.sql, whose header defines them) over the exporter's
-- otel_traces:
-- every server span ({span_hook_request}, else {span_vllm_request}) that ENDED within
-- [{start_unix_ns}, {end_unix_ns}), one per request, with its traffic source and the value of
-- the class attribute {class_attribute}.
--
-- What differs from DuckDB, and why:
--   * an absent map key reads as '' in ClickHouse, so every lookup tests mapContains() first
--     and "absent" stays NULL (class_value) or false (source);
--   * the parent and the client behind otelbench's gateway are joined from two small CTEs
--     selected with (TraceId, SpanId) IN (...) (which the table's TraceId bloom-filter index can
--     serve); an unmatched LEFT JOIN row carries empty values (not NULL), which the lookups
--     treat as absent, and ANY keeps one row per server span when a parent was stored twice
--     (an exporter's retry);
--   * the window and the parents' bounds are compared on Timestamp itself (the table is
--     partitioned by toDate(Timestamp) and its ORDER BY ends with toDateTime(Timestamp), so
--     partitions and granules outside them are skipped);
--   * SETTINGS precise_float_parsing = 1: latencies arrive as decimal text and must round as
--     DuckDB's CAST does (see otelbench/query/sql/clickhouse/run_server_requests.sql).
WITH server AS (
    SELECT
        s.TraceId                                   AS trace_id,
        s.SpanId                                    AS span_id,
        s.ParentSpanId                              AS parent_span_id,
        s.StatusCode                                AS status_code,
        s.ResourceAttributes                        AS resource,
-- @include _server_span_inputs
    FROM otel_traces AS s
    WHERE s.SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
      AND s.SpanKind IN ({kind_server:String}, {kind_server_legacy:String})
      AND s.Timestamp >= fromUnixTimestamp64Nano({start_unix_ns:Int64} - {lookback_ns:Int64})
      AND s.Timestamp < fromUnixTimestamp64Nano({end_unix_ns:Int64})
      AND toUnixTimestamp64Nano(s.Timestamp) + toInt64(s.Duration) >= {start_unix_ns:Int64}
      AND toUnixTimestamp64Nano(s.Timestamp) + toInt64(s.Duration) < {end_unix_ns:Int64}
    QUALIFY row_number() OVER (
        PARTITION BY if(
            s.ParentSpanId = '',
            if(mapContains(s.SpanAttributes, {attr_vllm_request_id:String}),
               s.SpanAttributes[{attr_vllm_request_id:String}], s.SpanId),
            concat(s.TraceId, '/', s.ParentSpanId)
        )
        ORDER BY s.SpanName = {span_hook_request:String} DESC, s.Timestamp, s.SpanId
    ) = 1
),
bounded AS (  -- where parents and gateway clients are looked for (the DuckDB query's bounds)
    SELECT TraceId, SpanId, ParentSpanId, SpanName, SpanKind, SpanAttributes
    FROM otel_traces
    WHERE Timestamp >= fromUnixTimestamp64Nano({start_unix_ns:Int64} - 2 * {lookback_ns:Int64})
      AND Timestamp < fromUnixTimestamp64Nano({end_unix_ns:Int64} + {lookback_ns:Int64})
),
parents AS (
    SELECT TraceId, SpanId, ParentSpanId, SpanName, SpanKind, SpanAttributes
    FROM bounded
    WHERE (TraceId, SpanId) IN (
        SELECT trace_id, parent_span_id FROM server WHERE parent_span_id != ''
    )
),
gateway_clients AS (
    SELECT TraceId, SpanId, SpanAttributes
    FROM bounded
    WHERE SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
      AND (TraceId, SpanId) IN (
          SELECT TraceId, ParentSpanId FROM parents
          WHERE SpanName = {span_gateway_request:String}
      )
),
joined AS (
    SELECT
        server.trace_id                             AS trace_id,
        server.span_id                              AS span_id,
        server.parent_span_id                       AS parent_span_id,
        server.span_name                            AS span_name,
        server.is_hook                              AS is_hook,
        server.ts                                   AS ts,
        server.duration                             AS duration,
        server.status_code                          AS status_code,
        server.attrs                                AS attrs,
        server.resource                             AS resource,
        server.event_names                          AS event_names,
        server.event_attrs                          AS event_attrs,
        server.event_ts                             AS event_ts,
        p.SpanName = {span_gateway_request:String}  AS behind_gateway,
        p.SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
                                                    AS parent_is_client,
        p.SpanAttributes                            AS parent_attrs,
        g.SpanAttributes                            AS gateway_client_attrs
    FROM server
    LEFT ANY JOIN parents AS p
      ON p.TraceId = server.trace_id AND p.SpanId = server.parent_span_id
    LEFT ANY JOIN gateway_clients AS g
      ON g.TraceId = p.TraceId AND g.SpanId = p.ParentSpanId
)
SELECT
    multiIf(
        if(behind_gateway, mapContains(gateway_client_attrs, {attr_probe_stream:String}),
           parent_is_client AND mapContains(parent_attrs, {attr_probe_stream:String})),
        {source_probe:String},
        if(behind_gateway, mapContains(gateway_client_attrs, {attr_run_id:String}),
           parent_is_client AND mapContains(parent_attrs, {attr_run_id:String})),
        {source_benchmark:String},
        {source_live:String}
    )                                                                      AS source,
    multiIf(
        mapContains(attrs, {class_attribute:String}), attrs[{class_attribute:String}],
        mapContains(resource, {class_attribute:String}), resource[{class_attribute:String}],
        behind_gateway AND mapContains(gateway_client_attrs, {class_attribute:String}),
        gateway_client_attrs[{class_attribute:String}],
        mapContains(parent_attrs, {class_attribute:String}), parent_attrs[{class_attribute:String}],
        NULL
    )                                                                      AS class_value,
    status_code NOT IN ({status_error:String}, {status_error_legacy:String})  AS ok,
-- @include _server_span_columns
FROM joined
ORDER BY ts, trace_id, span_id
SETTINGS precise_float_parsing = 1
