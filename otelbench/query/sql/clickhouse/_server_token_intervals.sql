-- _server_token_intervals: the CTE `per_request` — for each engine-hook server span that
-- run_server_requests picks for run {run_id}'s measured client spans (one per client span: the
-- hook span, else vLLM's llm_request span, which has no offsets), its inter-token intervals in
-- ms by Option C (draft 4.6.3: consecutive differences of otelbench.server.token_offsets_us), as
-- `itl Array(Float64)` — what the report's metrics.server.itl_ms pools. Spans with no valid
-- offsets give none. Needs the CTEs of _measured_client_parents before it; included by the
-- server ITL queries.
-- @include _chosen_server_spans
server AS (
    SELECT
        s.SpanName = {span_hook_request:String}                                    AS is_hook,
        if(match(s.SpanAttributes[{attr_server_token_offsets_us:String}], {re_int_array:String}),
           JSONExtract(s.SpanAttributes[{attr_server_token_offsets_us:String}], 'Array(Int64)'),
           CAST([], 'Array(Int64)'))                                               AS offsets
    -- @include _chosen_server_rows
    LIMIT 1 BY c.c_trace_id, c.client_span_id
),
per_request AS (
    SELECT arrayMap((a, b) -> (b - a) / 1000.0, arrayPopBack(offsets), arrayPopFront(offsets))
           AS itl
    FROM server
    WHERE is_hook AND length(offsets) > 0
),
