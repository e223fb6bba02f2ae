-- run_phases: run $run_id's client spans by request phase ($attr_request_phase: warm-up, probe,
-- measure; a span without the attribute is measured), for the warm-up's evidence (draft 4.5.1):
-- requests, those that succeeded, their output and cached prompt tokens (gen_ai.usage.*), the
-- first submit and the last end (T_submit + span duration, Unix ns), and how many of the phase's
-- requests ended after the first measured request was submitted (a warm-up still in flight when
-- the measurement began).
WITH spans AS (
    SELECT
        coalesce("SpanAttributes"[$attr_request_phase], $phase_measure)  AS phase,
        epoch_ns("Timestamp")                                             AS submit_ns,
        epoch_ns("Timestamp") + CAST("Duration" AS BIGINT)                AS end_ns,
        ("StatusCode" NOT IN ($status_error, $status_error_legacy)
         AND "SpanAttributes"[$attr_error_type] IS NULL)                  AS ok,
        CASE WHEN regexp_matches("SpanAttributes"[$attr_output_tokens], $re_int)
             THEN CAST("SpanAttributes"[$attr_output_tokens] AS BIGINT) END AS output_tokens,
        CASE WHEN regexp_matches("SpanAttributes"[$attr_cache_read_tokens], $re_int)
             THEN CAST("SpanAttributes"[$attr_cache_read_tokens] AS BIGINT) END AS cached_tokens
    FROM otel_traces
    WHERE "SpanKind" IN ($kind_client, $kind_client_legacy)
      AND "SpanAttributes"[$attr_run_id] = $run_id
),
start AS (
    SELECT min(submit_ns) AS t0 FROM spans WHERE phase = $phase_measure
)
SELECT
    phase,
    count(*)::BIGINT                                                      AS requests,
    count(*) FILTER (WHERE ok)::BIGINT                                    AS succeeded,
    coalesce(sum(output_tokens) FILTER (WHERE ok), 0)::BIGINT             AS output_tokens,
    coalesce(sum(cached_tokens) FILTER (WHERE ok), 0)::BIGINT             AS cached_tokens,
    min(submit_ns)::BIGINT                                                AS first_submit_ns,
    max(end_ns)::BIGINT                                                   AS last_end_ns,
    count(*) FILTER (WHERE end_ns > (SELECT t0 FROM start))::BIGINT       AS ended_after_start
FROM spans
GROUP BY phase
ORDER BY phase
