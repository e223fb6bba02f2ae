-- client_requests: one row per measured client span of run {run_id}, ordered by (T_submit,
-- TraceId, SpanId) — the same rows and columns as the DuckDB dialect's client_requests.
-- Warm-up and probe requests (draft 4.5; attr_request_phase other than phase_measure) are left
-- out; a span without the attribute is measured. Per-chunk arrays arrive as JSON text and are
-- parsed with JSONExtract(..., 'Array(Int64)'). A span with chunk offsets but no chunk token
-- counts gets one token per chunk. Absent attributes are NULL (mapContains).
-- Attributes are parsed leniently (see _server_span_columns.sql): a present value that does not
-- match its pattern is read as absent and named in rejected_attributes. Chunk token counts are
-- also rejected when there are not as many as chunk offsets (absent offsets count as none).
-- chunk_tokens is EMPTY when every chunk carries one token (the extraction fills in the ones):
-- when the counts are absent or rejected, and when they are exactly one per chunk offset
-- ("[1,1,…,1]", recognised by comparing the text with that string, not matched and parsed).
WITH client AS (
    SELECT
        TraceId                                                   AS trace_id,
        SpanId                                                    AS span_id,
        Timestamp                                                 AS ts,
        Duration                                                  AS duration,
        StatusCode                                                AS status_code,
        SpanAttributes                                            AS attrs,
        match(SpanAttributes[{attr_chunk_offsets_us:String}], {re_int_array:String}) AS has_offsets,
        if(has_offsets,
           JSONExtract(SpanAttributes[{attr_chunk_offsets_us:String}], 'Array(Int64)'),
           CAST([], 'Array(Int64)'))                              AS offsets,
        notEmpty(offsets)
        AND SpanAttributes[{attr_chunk_tokens:String}]
            = concat('[', repeat('1,', length(offsets) - 1), '1]') AS one_each,
        NOT one_each
        AND match(SpanAttributes[{attr_chunk_tokens:String}], {re_int_array:String}) AS tokens_ok,
        if(tokens_ok,
           JSONExtract(SpanAttributes[{attr_chunk_tokens:String}], 'Array(Int64)'),
           CAST([], 'Array(Int64)'))                              AS tokens_parsed,
        one_each OR tokens_ok AND length(tokens_parsed) = length(offsets) AS has_tokens
    FROM otel_traces
    -- @include _measured_client_filter
)
SELECT
    trace_id,
    span_id,
    toUnixTimestamp64Nano(ts)                                             AS submit_unix_ns,
    toInt64(duration)                                                     AS duration_ns,
    (status_code NOT IN ({status_error:String}, {status_error_legacy:String})
     AND NOT mapContains(attrs, {attr_error_type:String}))                AS ok,
    if(mapContains(attrs, {attr_error_type:String}),
       attrs[{attr_error_type:String}], NULL)                             AS error_type,
    if(mapContains(attrs, {attr_request_index:String})
       AND match(attrs[{attr_request_index:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_request_index:String}]), NULL)           AS request_index,
    if(mapContains(attrs, {attr_request_class:String}),
       attrs[{attr_request_class:String}], NULL)                          AS request_class,
    if(mapContains(attrs, {attr_think_phase:String}),
       attrs[{attr_think_phase:String}], NULL)                            AS think_phase,
    if(mapContains(attrs, {attr_output_phase_chunk:String})
       AND match(attrs[{attr_output_phase_chunk:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_output_phase_chunk:String}]), NULL)      AS output_phase_chunk,
    if(mapContains(attrs, {attr_schedule_lag_us:String})
       AND match(attrs[{attr_schedule_lag_us:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_schedule_lag_us:String}]), NULL)         AS schedule_lag_us,
    if(mapContains(attrs, {attr_prompt_tokens_sent:String})
       AND match(attrs[{attr_prompt_tokens_sent:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_prompt_tokens_sent:String}]), NULL)      AS prompt_tokens_sent,
    if(mapContains(attrs, {attr_max_tokens:String})
       AND match(attrs[{attr_max_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_max_tokens:String}]), NULL)              AS max_tokens,
    if(mapContains(attrs, {attr_ttft_us:String})
       AND match(attrs[{attr_ttft_us:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_ttft_us:String}]), NULL)                 AS ttft_us,
    if(mapContains(attrs, {attr_first_event_offset_us:String})
       AND match(attrs[{attr_first_event_offset_us:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_first_event_offset_us:String}]), NULL)   AS first_event_offset_us,
    if(mapContains(attrs, {attr_end_offset_us:String})
       AND match(attrs[{attr_end_offset_us:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_end_offset_us:String}]), NULL)           AS end_offset_us,
    if(mapContains(attrs, {attr_input_tokens:String})
       AND match(attrs[{attr_input_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_input_tokens:String}]), NULL)            AS input_tokens,
    if(mapContains(attrs, {attr_output_tokens:String})
       AND match(attrs[{attr_output_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_output_tokens:String}]), NULL)           AS output_tokens,
    if(match(attrs[{attr_finish_reasons:String}], {re_string_array:String}),
       JSONExtract(attrs[{attr_finish_reasons:String}], 'Array(String)'),
       CAST([], 'Array(String)'))                                         AS finish_reasons,
    multiIf(
        has_offsets AND NOT has_tokens, {one_per_chunk:String},
        mapContains(attrs, {attr_chunk_token_source:String}),
        attrs[{attr_chunk_token_source:String}],
        NULL
    )                                                                     AS chunk_token_source,
    offsets                                                               AS chunk_offsets_us,
    if(has_tokens, tokens_parsed, CAST([], 'Array(Int64)'))               AS chunk_tokens,
    arrayFilter(a -> a != '', [
        if(mapContains(attrs, {attr_request_index:String})
           AND NOT match(attrs[{attr_request_index:String}], {re_int:String}),
           {attr_request_index:String}, ''),
        if(mapContains(attrs, {attr_output_phase_chunk:String})
           AND NOT match(attrs[{attr_output_phase_chunk:String}], {re_int:String}),
           {attr_output_phase_chunk:String}, ''),
        if(mapContains(attrs, {attr_schedule_lag_us:String})
           AND NOT match(attrs[{attr_schedule_lag_us:String}], {re_int:String}),
           {attr_schedule_lag_us:String}, ''),
        if(mapContains(attrs, {attr_prompt_tokens_sent:String})
           AND NOT match(attrs[{attr_prompt_tokens_sent:String}], {re_int:String}),
           {attr_prompt_tokens_sent:String}, ''),
        if(mapContains(attrs, {attr_max_tokens:String})
           AND NOT match(attrs[{attr_max_tokens:String}], {re_int:String}),
           {attr_max_tokens:String}, ''),
        if(mapContains(attrs, {attr_ttft_us:String})
           AND NOT match(attrs[{attr_ttft_us:String}], {re_int:String}),
           {attr_ttft_us:String}, ''),
        if(mapContains(attrs, {attr_first_event_offset_us:String})
           AND NOT match(attrs[{attr_first_event_offset_us:String}], {re_int:String}),
           {attr_first_event_offset_us:String}, ''),
        if(mapContains(attrs, {attr_end_offset_us:String})
           AND NOT match(attrs[{attr_end_offset_us:String}], {re_int:String}),
           {attr_end_offset_us:String}, ''),
        if(mapContains(attrs, {attr_input_tokens:String})
           AND NOT match(attrs[{attr_input_tokens:String}], {re_int:String}),
           {attr_input_tokens:String}, ''),
        if(mapContains(attrs, {attr_output_tokens:String})
           AND NOT match(attrs[{attr_output_tokens:String}], {re_int:String}),
           {attr_output_tokens:String}, ''),
        if(mapContains(attrs, {attr_finish_reasons:String})
           AND NOT match(attrs[{attr_finish_reasons:String}], {re_string_array:String}),
           {attr_finish_reasons:String}, ''),
        if(mapContains(attrs, {attr_chunk_offsets_us:String})
           AND NOT match(attrs[{attr_chunk_offsets_us:String}], {re_int_array:String}),
           {attr_chunk_offsets_us:String}, ''),
        if(mapContains(attrs, {attr_chunk_tokens:String}) AND NOT has_tokens,
           {attr_chunk_tokens:String}, '')
    ])                                                                    AS rejected_attributes
FROM client
ORDER BY ts, trace_id, span_id
