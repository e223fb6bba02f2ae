-- client_requests: one row per measured client span of run $run_id, ordered by (T_submit, TraceId,
-- SpanId). Warm-up and probe requests (draft 4.5; $attr_request_phase other than $phase_measure)
-- are left out; a span without the attribute (runs before warm-up existed) is measured.
-- Per-chunk arrays arrive as JSON text and are parsed here, as BIGINT[] lists (from_json is
-- several times faster than CAST(... AS BIGINT[]) on long arrays). A span with chunk offsets
-- but no chunk token counts gets one token per chunk.
WITH client AS (
    SELECT
        "TraceId"                                                    AS trace_id,
        "SpanId"                                                     AS span_id,
        "Timestamp"                                                  AS ts,
        "Duration"                                                   AS duration,
        "StatusCode"                                                 AS status_code,
        "SpanAttributes"                                             AS attrs,
        from_json("SpanAttributes"[$attr_chunk_offsets_us], '["BIGINT"]') AS chunk_offsets,
        from_json("SpanAttributes"[$attr_chunk_tokens], '["BIGINT"]')     AS chunk_tokens
    FROM otel_traces
    WHERE "SpanKind" = $kind_client
      AND "SpanAttributes"[$attr_run_id] = $run_id
      AND coalesce("SpanAttributes"[$attr_request_phase], $phase_measure) = $phase_measure
)
SELECT
    trace_id,
    span_id,
    epoch_ns(ts)                                                     AS submit_unix_ns,
    CAST(duration AS BIGINT)                                         AS duration_ns,
    (status_code <> $status_error AND attrs[$attr_error_type] IS NULL) AS ok,
    attrs[$attr_error_type]                                          AS error_type,
    CAST(attrs[$attr_request_index] AS BIGINT)                       AS request_index,
    attrs[$attr_request_class]                                       AS request_class,
    attrs[$attr_think_phase]                                         AS think_phase,
    CAST(attrs[$attr_output_phase_chunk] AS BIGINT)                  AS output_phase_chunk,
    CAST(attrs[$attr_schedule_lag_us] AS BIGINT)                     AS schedule_lag_us,
    CAST(attrs[$attr_ttft_us] AS BIGINT)                             AS ttft_us,
    CAST(attrs[$attr_first_event_offset_us] AS BIGINT)               AS first_event_offset_us,
    CAST(attrs[$attr_end_offset_us] AS BIGINT)                       AS end_offset_us,
    CAST(attrs[$attr_input_tokens] AS BIGINT)                        AS input_tokens,
    CAST(attrs[$attr_output_tokens] AS BIGINT)                       AS output_tokens,
    coalesce(from_json(attrs[$attr_finish_reasons], '["VARCHAR"]'), []::VARCHAR[])
                                                                     AS finish_reasons,
    CASE
        WHEN chunk_tokens IS NULL AND chunk_offsets IS NOT NULL THEN $one_per_chunk
        ELSE attrs[$attr_chunk_token_source]
    END                                                              AS chunk_token_source,
    coalesce(chunk_offsets, []::BIGINT[])                            AS chunk_offsets_us,
    coalesce(chunk_tokens, list_transform(chunk_offsets, lambda x: 1), []::BIGINT[])
                                                                     AS chunk_tokens
FROM client
ORDER BY ts, trace_id, span_id
