-- run_guardrail_spans: the guardrail filter spans (span_guardrail_filter) in the traces of run
-- {run_id}'s measured client spans (warm-up and probe requests are left out, as in
-- client_requests), one row per filter, request and stage, ordered by (start, TraceId, SpanId) —
-- the same rows and columns as the DuckDB dialect. A filter span shares the client span's
-- TraceId (inside vLLM it is the client span's child, behind the gateway the gateway span's),
-- which is how it is joined (client_span_id). Per-event times arrive as JSON text
-- (JSONExtract); the resource attributes disclose the guardrail configuration (draft 4.8.1).
-- Attributes are parsed leniently (see _server_span_columns.sql): a present value that does not
-- match its pattern is read as absent and named in rejected_attributes.
WITH client AS (
    SELECT TraceId AS trace_id, SpanId AS span_id
    FROM otel_traces
    -- @include _measured_client_filter
)
SELECT
    f.TraceId                                                            AS trace_id,
    f.SpanId                                                             AS span_id,
    c.span_id                                                            AS client_span_id,
    toUnixTimestamp64Nano(f.Timestamp)                                   AS start_unix_ns,
    toInt64(f.Duration)                                                  AS duration_ns,
    if(mapContains(f.SpanAttributes, {attr_guardrail_filter_name:String}),
       f.SpanAttributes[{attr_guardrail_filter_name:String}], NULL)      AS filter_name,
    if(mapContains(f.SpanAttributes, {attr_guardrail_filter_type:String}),
       f.SpanAttributes[{attr_guardrail_filter_type:String}], NULL)      AS filter_type,
    if(mapContains(f.SpanAttributes, {attr_guardrail_stage:String}),
       f.SpanAttributes[{attr_guardrail_stage:String}], NULL)            AS stage,
    if(mapContains(f.SpanAttributes, {attr_guardrail_decision:String}),
       f.SpanAttributes[{attr_guardrail_decision:String}], NULL)         AS decision,
    if(mapContains(f.SpanAttributes, {attr_guardrail_rule:String}),
       f.SpanAttributes[{attr_guardrail_rule:String}], NULL)             AS rule,
    if(mapContains(f.SpanAttributes, {attr_guardrail_error:String}),
       f.SpanAttributes[{attr_guardrail_error:String}], NULL)            AS error,
    if(mapContains(f.SpanAttributes, {attr_guardrail_invocations:String})
       AND match(f.SpanAttributes[{attr_guardrail_invocations:String}], {re_int:String}),
       toInt64OrNull(f.SpanAttributes[{attr_guardrail_invocations:String}]), NULL)
                                                                         AS invocations,
    if(mapContains(f.SpanAttributes, {attr_guardrail_busy_us:String})
       AND match(f.SpanAttributes[{attr_guardrail_busy_us:String}], {re_int:String}),
       toInt64OrNull(f.SpanAttributes[{attr_guardrail_busy_us:String}]), NULL)
                                                                         AS busy_us,
    if(match(f.SpanAttributes[{attr_guardrail_chunk_busy_us:String}], {re_int_array:String}),
       JSONExtract(f.SpanAttributes[{attr_guardrail_chunk_busy_us:String}], 'Array(Int64)'),
       CAST([], 'Array(Int64)'))                                         AS chunk_busy_us,
    if(match(f.SpanAttributes[{attr_guardrail_output_added_us:String}], {re_int_array:String}),
       JSONExtract(f.SpanAttributes[{attr_guardrail_output_added_us:String}], 'Array(Int64)'),
       CAST([], 'Array(Int64)'))                                         AS output_added_us,
    if(mapContains(f.ResourceAttributes, {attr_guardrail_input_filters:String}),
       f.ResourceAttributes[{attr_guardrail_input_filters:String}], NULL)  AS resource_input_filters,
    if(mapContains(f.ResourceAttributes, {attr_guardrail_output_filters:String}),
       f.ResourceAttributes[{attr_guardrail_output_filters:String}], NULL) AS resource_output_filters,
    if(mapContains(f.ResourceAttributes, {attr_guardrail_config_sha256:String}),
       f.ResourceAttributes[{attr_guardrail_config_sha256:String}], NULL) AS resource_config_sha256,
    if(mapContains(f.ResourceAttributes, {attr_guardrail_block_response:String}),
       f.ResourceAttributes[{attr_guardrail_block_response:String}], NULL) AS resource_block_response,
    toString(f.ServiceName)                                              AS service_name,
    arrayFilter(a -> a != '', [
        if(mapContains(f.SpanAttributes, {attr_guardrail_invocations:String})
           AND NOT match(f.SpanAttributes[{attr_guardrail_invocations:String}], {re_int:String}),
           {attr_guardrail_invocations:String}, ''),
        if(mapContains(f.SpanAttributes, {attr_guardrail_busy_us:String})
           AND NOT match(f.SpanAttributes[{attr_guardrail_busy_us:String}], {re_int:String}),
           {attr_guardrail_busy_us:String}, ''),
        if(mapContains(f.SpanAttributes, {attr_guardrail_chunk_busy_us:String})
           AND NOT match(f.SpanAttributes[{attr_guardrail_chunk_busy_us:String}],
                         {re_int_array:String}),
           {attr_guardrail_chunk_busy_us:String}, ''),
        if(mapContains(f.SpanAttributes, {attr_guardrail_output_added_us:String})
           AND NOT match(f.SpanAttributes[{attr_guardrail_output_added_us:String}],
                         {re_int_array:String}),
           {attr_guardrail_output_added_us:String}, '')
    ])                                                                   AS rejected_attributes
FROM otel_traces AS f
INNER JOIN client AS c ON f.TraceId = c.trace_id
WHERE f.SpanName = {span_guardrail_filter:String}
ORDER BY f.Timestamp, f.TraceId, f.SpanId
