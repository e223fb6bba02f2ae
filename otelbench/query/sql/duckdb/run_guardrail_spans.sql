-- run_guardrail_spans: the guardrail filter spans ($span_guardrail_filter) in the traces of run
-- $run_id's measured client spans (warm-up and probe requests are left out, as in
-- client_requests), one row per filter, request and stage, ordered by (start, TraceId, SpanId).
-- Inside vLLM a filter span is the client span's child; behind otelbench's gateway it is the
-- gateway span's child: either way it shares the client span's TraceId, which is how it is
-- joined (client_span_id). Per-event times arrive as JSON text and are parsed here as BIGINT[]:
-- chunk_busy_us is the filter's own, output_added_us the whole output stage's (the same array on
-- every output span of a response). The resource attributes disclose the guardrail configuration (draft 4.8.1).
-- Attributes are parsed leniently (see _server_span_columns.sql): a present value that does not
-- match its pattern is read as absent and named in rejected_attributes.
WITH client AS (
    SELECT "TraceId" AS trace_id, "SpanId" AS span_id
    FROM otel_traces
    -- @include _measured_client_filter
)
SELECT
    f."TraceId"                                                       AS trace_id,
    f."SpanId"                                                        AS span_id,
    c.span_id                                                         AS client_span_id,
    epoch_ns(f."Timestamp")                                           AS start_unix_ns,
    CAST(f."Duration" AS BIGINT)                                      AS duration_ns,
    f."SpanAttributes"[$attr_guardrail_filter_name]                   AS filter_name,
    f."SpanAttributes"[$attr_guardrail_filter_type]                   AS filter_type,
    f."SpanAttributes"[$attr_guardrail_stage]                         AS stage,
    f."SpanAttributes"[$attr_guardrail_decision]                      AS decision,
    f."SpanAttributes"[$attr_guardrail_rule]                          AS rule,
    f."SpanAttributes"[$attr_guardrail_error]                         AS error,
    CASE WHEN regexp_matches(f."SpanAttributes"[$attr_guardrail_invocations], $re_int)
         THEN CAST(f."SpanAttributes"[$attr_guardrail_invocations] AS BIGINT) END
                                                                      AS invocations,
    CASE WHEN regexp_matches(f."SpanAttributes"[$attr_guardrail_busy_us], $re_int)
         THEN CAST(f."SpanAttributes"[$attr_guardrail_busy_us] AS BIGINT) END
                                                                      AS busy_us,
    CASE WHEN regexp_matches(f."SpanAttributes"[$attr_guardrail_chunk_busy_us], $re_int_array)
         THEN from_json(f."SpanAttributes"[$attr_guardrail_chunk_busy_us], '["BIGINT"]')
         ELSE []::BIGINT[] END                                        AS chunk_busy_us,
    CASE WHEN regexp_matches(f."SpanAttributes"[$attr_guardrail_output_added_us], $re_int_array)
         THEN from_json(f."SpanAttributes"[$attr_guardrail_output_added_us], '["BIGINT"]')
         ELSE []::BIGINT[] END                                        AS output_added_us,
    f."ResourceAttributes"[$attr_guardrail_input_filters]             AS resource_input_filters,
    f."ResourceAttributes"[$attr_guardrail_output_filters]            AS resource_output_filters,
    f."ResourceAttributes"[$attr_guardrail_config_sha256]             AS resource_config_sha256,
    f."ResourceAttributes"[$attr_guardrail_block_response]            AS resource_block_response,
    f."ServiceName"                                                   AS service_name,
    list_filter([
        CASE WHEN NOT regexp_matches(f."SpanAttributes"[$attr_guardrail_invocations], $re_int)
             THEN $attr_guardrail_invocations END,
        CASE WHEN NOT regexp_matches(f."SpanAttributes"[$attr_guardrail_busy_us], $re_int)
             THEN $attr_guardrail_busy_us END,
        CASE WHEN NOT regexp_matches(f."SpanAttributes"[$attr_guardrail_chunk_busy_us],
                                     $re_int_array)
             THEN $attr_guardrail_chunk_busy_us END,
        CASE WHEN NOT regexp_matches(f."SpanAttributes"[$attr_guardrail_output_added_us],
                                     $re_int_array)
             THEN $attr_guardrail_output_added_us END
    ], lambda a: a IS NOT NULL)                                       AS rejected_attributes
FROM otel_traces AS f
JOIN client AS c ON f."TraceId" = c.trace_id
WHERE f."SpanName" = $span_guardrail_filter
ORDER BY f."Timestamp", f."TraceId", f."SpanId"
