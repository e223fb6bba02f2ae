-- client_requests: one row per measured client span of run $run_id, ordered by (T_submit, TraceId,
-- SpanId). Warm-up and probe requests (draft 4.5; $attr_request_phase other than $phase_measure)
-- are left out; a span without the attribute (runs before warm-up existed) is measured.
-- Per-chunk arrays arrive as JSON text and are parsed here, as BIGINT[] lists (from_json is
-- several times faster than CAST(... AS BIGINT[]) on long arrays). A span with chunk offsets
-- but no chunk token counts gets one token per chunk.
-- Attributes are parsed leniently (see _server_span_columns.sql): a present value that does not
-- match its pattern is read as absent and named in rejected_attributes. Chunk token counts are
-- also rejected when there are not as many as chunk offsets (absent offsets count as none).
-- chunk_offsets is NULL exactly when the attribute is absent or rejected, so the rejection
-- test reads it rather than matching the long array against $re_int_array a second time.
-- chunk_tokens is EMPTY when every chunk carries one token (the extraction fills in the ones):
-- when the counts are absent or rejected, and when they are exactly one per chunk offset
-- ("[1,1,…,1]", what a stream of one token per chunk records), recognised by comparing the text
-- with that string (a memory compare) rather than matched and parsed. Millions of ones are
-- then neither built, sorted nor converted. Otherwise it has one count per chunk offset.
WITH client AS (
    SELECT
        "TraceId"                                                    AS trace_id,
        "SpanId"                                                     AS span_id,
        "Timestamp"                                                  AS ts,
        "Duration"                                                   AS duration,
        "StatusCode"                                                 AS status_code,
        "SpanAttributes"                                             AS attrs,
        CASE WHEN regexp_matches("SpanAttributes"[$attr_chunk_offsets_us], $re_int_array)
             THEN from_json("SpanAttributes"[$attr_chunk_offsets_us], '["BIGINT"]')
        END                                                          AS chunk_offsets
    FROM otel_traces
    -- @include _measured_client_filter
),
ones AS (
    SELECT
        *,
        coalesce(len(chunk_offsets) > 0
                 AND attrs[$attr_chunk_tokens]
                     = '[' || repeat('1,', len(chunk_offsets) - 1) || '1]', false)
                                                                     AS one_each
    FROM client
),
parsed AS (
    SELECT
        *,
        CASE WHEN NOT one_each AND regexp_matches(attrs[$attr_chunk_tokens], $re_int_array)
             THEN from_json(attrs[$attr_chunk_tokens], '["BIGINT"]')
        END                                                          AS tokens_parsed
    FROM ones
),
checked AS (
    SELECT
        *,
        CASE WHEN len(tokens_parsed) = len(coalesce(chunk_offsets, []::BIGINT[]))
             THEN tokens_parsed END                                  AS chunk_tokens
    FROM parsed
)
SELECT
    trace_id,
    span_id,
    epoch_ns(ts)                                                     AS submit_unix_ns,
    CAST(duration AS BIGINT)                                         AS duration_ns,
    (status_code NOT IN ($status_error, $status_error_legacy)
     AND attrs[$attr_error_type] IS NULL)                            AS ok,
    attrs[$attr_error_type]                                          AS error_type,
    CASE WHEN regexp_matches(attrs[$attr_request_index], $re_int)
         THEN CAST(attrs[$attr_request_index] AS BIGINT) END         AS request_index,
    attrs[$attr_request_class]                                       AS request_class,
    attrs[$attr_think_phase]                                         AS think_phase,
    CASE WHEN regexp_matches(attrs[$attr_output_phase_chunk], $re_int)
         THEN CAST(attrs[$attr_output_phase_chunk] AS BIGINT) END    AS output_phase_chunk,
    CASE WHEN regexp_matches(attrs[$attr_schedule_lag_us], $re_int)
         THEN CAST(attrs[$attr_schedule_lag_us] AS BIGINT) END       AS schedule_lag_us,
    CASE WHEN regexp_matches(attrs[$attr_prompt_tokens_sent], $re_int)
         THEN CAST(attrs[$attr_prompt_tokens_sent] AS BIGINT) END    AS prompt_tokens_sent,
    CASE WHEN regexp_matches(attrs[$attr_max_tokens], $re_int)
         THEN CAST(attrs[$attr_max_tokens] AS BIGINT) END            AS max_tokens,
    CASE WHEN regexp_matches(attrs[$attr_ttft_us], $re_int)
         THEN CAST(attrs[$attr_ttft_us] AS BIGINT) END               AS ttft_us,
    CASE WHEN regexp_matches(attrs[$attr_first_event_offset_us], $re_int)
         THEN CAST(attrs[$attr_first_event_offset_us] AS BIGINT) END AS first_event_offset_us,
    CASE WHEN regexp_matches(attrs[$attr_end_offset_us], $re_int)
         THEN CAST(attrs[$attr_end_offset_us] AS BIGINT) END         AS end_offset_us,
    CASE WHEN regexp_matches(attrs[$attr_input_tokens], $re_int)
         THEN CAST(attrs[$attr_input_tokens] AS BIGINT) END          AS input_tokens,
    CASE WHEN regexp_matches(attrs[$attr_output_tokens], $re_int)
         THEN CAST(attrs[$attr_output_tokens] AS BIGINT) END         AS output_tokens,
    CASE WHEN regexp_matches(attrs[$attr_finish_reasons], $re_string_array)
         THEN from_json(attrs[$attr_finish_reasons], '["VARCHAR"]')
         ELSE []::VARCHAR[] END                                      AS finish_reasons,
    CASE
        WHEN NOT one_each AND chunk_tokens IS NULL AND chunk_offsets IS NOT NULL
        THEN $one_per_chunk
        ELSE attrs[$attr_chunk_token_source]
    END                                                              AS chunk_token_source,
    coalesce(chunk_offsets, []::BIGINT[])                            AS chunk_offsets_us,
    coalesce(chunk_tokens, []::BIGINT[])                             AS chunk_tokens,
    list_filter([
        CASE WHEN NOT regexp_matches(attrs[$attr_request_index], $re_int)
             THEN $attr_request_index END,
        CASE WHEN NOT regexp_matches(attrs[$attr_output_phase_chunk], $re_int)
             THEN $attr_output_phase_chunk END,
        CASE WHEN NOT regexp_matches(attrs[$attr_schedule_lag_us], $re_int)
             THEN $attr_schedule_lag_us END,
        CASE WHEN NOT regexp_matches(attrs[$attr_prompt_tokens_sent], $re_int)
             THEN $attr_prompt_tokens_sent END,
        CASE WHEN NOT regexp_matches(attrs[$attr_max_tokens], $re_int)
             THEN $attr_max_tokens END,
        CASE WHEN NOT regexp_matches(attrs[$attr_ttft_us], $re_int)
             THEN $attr_ttft_us END,
        CASE WHEN NOT regexp_matches(attrs[$attr_first_event_offset_us], $re_int)
             THEN $attr_first_event_offset_us END,
        CASE WHEN NOT regexp_matches(attrs[$attr_end_offset_us], $re_int)
             THEN $attr_end_offset_us END,
        CASE WHEN NOT regexp_matches(attrs[$attr_input_tokens], $re_int)
             THEN $attr_input_tokens END,
        CASE WHEN NOT regexp_matches(attrs[$attr_output_tokens], $re_int)
             THEN $attr_output_tokens END,
        CASE WHEN NOT regexp_matches(attrs[$attr_finish_reasons], $re_string_array)
             THEN $attr_finish_reasons END,
        CASE WHEN chunk_offsets IS NULL AND attrs[$attr_chunk_offsets_us] IS NOT NULL
             THEN $attr_chunk_offsets_us END,
        CASE WHEN NOT one_each AND tokens_parsed IS NULL AND attrs[$attr_chunk_tokens] IS NOT NULL
                  OR tokens_parsed IS NOT NULL AND chunk_tokens IS NULL
             THEN $attr_chunk_tokens END
    ], lambda a: a IS NOT NULL)                                      AS rejected_attributes
FROM checked
ORDER BY ts, trace_id, span_id
