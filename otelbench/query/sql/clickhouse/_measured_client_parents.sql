-- _measured_client_parents: the CTEs `client` (run {run_id}'s measured client spans: warm-up and
-- probe requests left out) and `parents` (each client span, and the gateway span that is its
-- child, keyed by the client span's id): what a server span may be the child of. Included by
-- the server-span queries of a run right after their WITH.
client AS (
    SELECT TraceId AS trace_id, SpanId AS span_id
    FROM otel_traces
    -- @include _measured_client_filter
),
parents AS (
    SELECT trace_id AS p_trace_id, span_id AS p_span_id, span_id AS client_span_id FROM client
    UNION ALL
    SELECT g.TraceId AS p_trace_id, g.SpanId AS p_span_id, c.span_id AS client_span_id
    FROM otel_traces AS g
    INNER JOIN client AS c ON g.TraceId = c.trace_id AND g.ParentSpanId = c.span_id
    WHERE g.SpanName = {span_gateway_request:String}
),
