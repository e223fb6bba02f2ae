-- run_server_requests: the server span of each of run $run_id's measured client spans (warm-up and
-- probe requests, draft 4.5, are left out, as in client_requests). A server span is the engine
-- hooks' span ($span_hook_request: per-token offsets and preemption events) or vLLM's own
-- llm_request span, and a child of the client span (same TraceId, ParentSpanId = the client's
-- SpanId) — or, behind otelbench's guardrail gateway, a child of the gateway span
-- ($span_gateway_request) that is the client span's child. At most one per client span: a hook
-- span wins over llm_request (both exist when vLLM's own tracing is on too), then the earliest.
-- parent_span_id is the CLIENT span's id either way. Token offsets arrive as JSON text and
-- are parsed here as BIGINT[]; the preemption and resumption span events are read with list
-- functions (hook-only columns are NULL, or empty lists, for an llm_request span).
-- The span is chosen on narrow rows (ids, name, start: `chosen`), and only then are its
-- SpanAttributes read, by rowid, in one streaming pass over otel_traces: a SpanAttributes map
-- carried into a join (as its build side) or a window is copied there, which costs more than
-- parsing the attributes.
WITH client AS (
    SELECT "TraceId" AS trace_id, "SpanId" AS span_id
    FROM otel_traces
    -- @include _measured_client_filter
),
parents AS (
    SELECT trace_id, span_id, span_id AS client_span_id FROM client
    UNION ALL
    SELECT g."TraceId", g."SpanId", c.span_id
    FROM otel_traces AS g
    JOIN client AS c ON g."TraceId" = c.trace_id AND g."ParentSpanId" = c.span_id
    WHERE g."SpanName" = $span_gateway_request
),
chosen AS MATERIALIZED (  -- materialized: the planner may not join otel_traces into it
    SELECT s.rowid AS row_id, p.client_span_id
    FROM otel_traces AS s
    JOIN parents AS p
      ON s."TraceId" = p.trace_id AND s."ParentSpanId" = p.span_id
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" IN ($kind_server, $kind_server_legacy)
    QUALIFY row_number() OVER (
        PARTITION BY s."TraceId", p.client_span_id
        ORDER BY s."SpanName" = $span_hook_request DESC, s."Timestamp", s."SpanId"
    ) = 1
),
server AS (
    SELECT
        s."TraceId"                                       AS trace_id,
        s."SpanId"                                        AS span_id,
        c.client_span_id                                  AS parent_span_id,
-- @include _server_span_inputs
    FROM otel_traces AS s
    JOIN chosen AS c ON c.row_id = s.rowid
    WHERE s."SpanName" IN ($span_hook_request, $span_vllm_request)
      AND s."SpanKind" IN ($kind_server, $kind_server_legacy)
)
SELECT
-- @include _server_span_columns
FROM server
ORDER BY ts, trace_id, span_id
