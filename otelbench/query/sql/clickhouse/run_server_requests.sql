-- run_server_requests: the server span of each of run {run_id}'s measured client spans (warm-up
-- and probe requests, draft 4.5, are left out, as in client_requests) — the same rows and
-- columns as the DuckDB dialect. A server span is the engine hooks' span (span_hook_request:
-- per-token offsets and preemption events) or vLLM's own llm_request span, and a child of the
-- client span (same TraceId, ParentSpanId = the client's SpanId) — or, behind otelbench's
-- guardrail gateway, a child of the gateway span that is the client span's child. At most one
-- per client span: a hook span wins over llm_request, then the earliest. parent_span_id is the
-- CLIENT span's id either way. Token offsets arrive as JSON text (JSONExtract); preemption and
-- resumption events are read from the exporter's Nested Events columns (Events.Name,
-- Events.Attributes) with array lambdas; hook-only columns are NULL, or empty arrays, for an
-- llm_request span.
-- Latencies arrive as decimal text: SETTINGS precise_float_parsing = 1 makes toFloat64OrNull
-- round correctly, as DuckDB's CAST and Python's float() do (ClickHouse's default fast parser is
-- off by one ulp on some inputs, e.g. '0.087568' → 0.08756800000000001).
WITH
-- @include _measured_client_parents
-- @include _chosen_server_spans
server AS (
    SELECT
        s.TraceId                                   AS trace_id,
        s.SpanId                                    AS span_id,
        c.client_span_id                            AS parent_span_id,
-- @include _server_span_inputs
    -- @include _chosen_server_rows
)
SELECT
-- @include _server_span_columns
FROM server
ORDER BY ts, trace_id, span_id
LIMIT 1 BY trace_id, parent_span_id
SETTINGS precise_float_parsing = 1
