-- window_server_requests: every server span (the engine hooks' $span_hook_request, else vLLM's
-- $span_vllm_request) that ENDED within [$start_unix_ns, $end_unix_ns), with the traffic source
-- it belongs to and the value of the class attribute $class_attribute.
--
-- source: 'probe' when the client span that sent it (the parent, or the grandparent behind
-- otelbench's gateway span $span_gateway_request) carries $attr_probe_stream; 'benchmark' when
-- that client span carries $attr_run_id (an otelbench run); 'live' otherwise (no parent, or a
-- parent that is not an otelbench client span).
-- class: $class_attribute on the server span, else on its resource, else on the client span
-- (or the parent span for live traffic); NULL when none has it.
-- One row per request: a hook span wins over an llm_request span of the same request (same
-- parent; for root spans, the same gen_ai.request.id), then the earliest; a span stored twice
-- (an exporter's retry), the server span's or its parent's, still gives one row.
-- Only spans starting at most $lookback_ns before the window are considered, and their parent
-- and gateway client spans among the spans starting within $lookback_ns of that range — from
-- 2 x $lookback_ns before the window to $lookback_ns after it (cheap bounds: a parent starts
-- before its child, give or take the clock skew between hosts; in ClickHouse they skip
-- partitions and granules).
-- The ClickHouse dialect's twin (sql/clickhouse/window_server_requests.sql) returns the same rows
-- and columns; tests/integration/test_watch_clickhouse.py holds them equal.
WITH server AS (
    SELECT
        s."TraceId"                                       AS trace_id,
        s."SpanId"                                        AS span_id,
        s."ParentSpanId"                                  AS parent_span_id,
        s."StatusCode"                                    AS status_code,
        s."ResourceAttributes"                            AS resource,
-- @include _server_span_inputs
    FROM otel_traces AS s
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" IN ($kind_server, $kind_server_legacy)
      AND s."Timestamp" >= make_timestamp_ns(CAST($start_unix_ns AS BIGINT) - CAST($lookback_ns AS BIGINT))
      AND s."Timestamp" < make_timestamp_ns(CAST($end_unix_ns AS BIGINT))
      AND epoch_ns(s."Timestamp") + CAST(s."Duration" AS BIGINT) >= CAST($start_unix_ns AS BIGINT)
      AND epoch_ns(s."Timestamp") + CAST(s."Duration" AS BIGINT) < CAST($end_unix_ns AS BIGINT)
    QUALIFY row_number() OVER (
        PARTITION BY CASE
            WHEN s."ParentSpanId" = '' THEN coalesce(s."SpanAttributes"[$attr_vllm_request_id], s."SpanId")
            ELSE s."TraceId" || '/' || s."ParentSpanId"
        END
        ORDER BY s."SpanName" = $span_hook_request DESC, s."Timestamp", s."SpanId"
    ) = 1
),
joined AS (
    SELECT
        server.*,
        CASE
            WHEN p."SpanName" = $span_gateway_request THEN g."SpanAttributes"
            WHEN p."SpanKind" IN ($kind_client, $kind_client_legacy) THEN p."SpanAttributes"
        END                                               AS client_attrs,
        p."SpanAttributes"                                AS parent_attrs
    FROM server
    LEFT JOIN (SELECT * FROM otel_traces AS t WHERE t."Timestamp" >= make_timestamp_ns(
                   CAST($start_unix_ns AS BIGINT) - 2 * CAST($lookback_ns AS BIGINT))
                 AND t."Timestamp" < make_timestamp_ns(
                   CAST($end_unix_ns AS BIGINT) + CAST($lookback_ns AS BIGINT))) AS p
      ON p."TraceId" = server.trace_id AND p."SpanId" = server.parent_span_id
     AND server.parent_span_id <> ''
    LEFT JOIN (SELECT * FROM otel_traces AS t WHERE t."Timestamp" >= make_timestamp_ns(
                   CAST($start_unix_ns AS BIGINT) - 2 * CAST($lookback_ns AS BIGINT))
                 AND t."Timestamp" < make_timestamp_ns(
                   CAST($end_unix_ns AS BIGINT) + CAST($lookback_ns AS BIGINT))) AS g
      ON g."TraceId" = p."TraceId" AND g."SpanId" = p."ParentSpanId"
     AND p."SpanName" = $span_gateway_request
     AND g."SpanKind" IN ($kind_client, $kind_client_legacy)
    QUALIFY row_number() OVER (PARTITION BY server.trace_id, server.span_id) = 1
)
SELECT
    CASE
        WHEN client_attrs[$attr_probe_stream] IS NOT NULL THEN $source_probe
        WHEN client_attrs[$attr_run_id] IS NOT NULL THEN $source_benchmark
        ELSE $source_live
    END                                                                AS source,
    coalesce(attrs[$class_attribute], resource[$class_attribute],
             client_attrs[$class_attribute], parent_attrs[$class_attribute])
                                                                       AS class_value,
    status_code NOT IN ($status_error, $status_error_legacy)           AS ok,
-- @include _server_span_columns
FROM joined
ORDER BY ts, trace_id, span_id
