-- (included) One row per benchmark run whose run span started in the time range: the run's
-- manifest (offered load, deviations) and its measured client requests (warm-up and probe
-- requests left out). Throughput = successful requests / the run's duration. Percentiles are
-- ClickHouse's quantileExact (an observed value, not type-7 interpolation: the report's exact
-- figures are `otelbench report`'s). Kinds and statuses are matched by both spellings (the
-- exporter's current one and the one it wrote before August 2024).
run_points AS (
    SELECT
        r.run_id                                                       AS run_id,
        r.start                                                        AS start,
        JSONExtractString(r.manifest, 'workload', 'name')              AS workload,
        JSONExtractString(r.manifest, 'model')                         AS model,
        JSONExtractFloat(r.manifest, 'load', 'rate')                   AS offered_rps,
        JSONExtractInt(r.manifest, 'load', 'concurrency')              AS concurrency,
        JSONLength(r.manifest, 'deviations')                           AS deviations,
        if(JSONHas(r.manifest, 'duration_s'),
           JSONExtractFloat(r.manifest, 'duration_s'), r.duration / 1e9) AS duration_s,
        c.requests                                                     AS requests,
        c.errors                                                       AS errors,
        (c.requests - c.errors) / duration_s                           AS throughput_rps,
        c.output_tokens / duration_s                                   AS output_tps,
        c.ttft_p50_s                                                   AS ttft_p50_s,
        c.ttft_p99_s                                                   AS ttft_p99_s,
        c.tpot_p99_s                                                   AS tpot_p99_s,
        c.e2e_p99_s                                                    AS e2e_p99_s
    FROM (
        SELECT
            SpanAttributes[{{RUN_ID}}]       AS run_id,
            SpanAttributes[{{RUN_MANIFEST}}] AS manifest,
            Timestamp                        AS start,
            Duration                         AS duration
        FROM otel_traces
        WHERE $__timeFilter_ms(Timestamp)
          AND SpanName = {{SPAN_RUN}}
          AND mapContains(SpanAttributes, {{RUN_ID}})
    ) AS r
    INNER JOIN (
        SELECT
            run_id,
            count()                              AS requests,
            countIf(NOT ok)                      AS errors,
            sumIf(output_tokens, ok)             AS output_tokens,
            quantileExact(0.5)(if(ok, ttft_s, NULL))  AS ttft_p50_s,
            quantileExact(0.99)(if(ok, ttft_s, NULL)) AS ttft_p99_s,
            quantileExact(0.99)(if(ok, tpot_s, NULL)) AS tpot_p99_s,
            quantileExact(0.99)(if(ok, e2e_s, NULL))  AS e2e_p99_s
        FROM (
            SELECT
                SpanAttributes[{{RUN_ID}}]                                          AS run_id,
                StatusCode NOT IN ({{STATUS_ERROR}}, {{STATUS_ERROR_LEGACY}})
                    AND NOT mapContains(SpanAttributes, {{ERROR_TYPE}})             AS ok,
                toInt64OrZero(SpanAttributes[{{GEN_AI_USAGE_OUTPUT_TOKENS}}])       AS output_tokens,
                toInt64OrNull(SpanAttributes[{{CLIENT_TTFT_US}}]) / 1e6             AS ttft_s,
                if(output_tokens >= 2,
                   (arrayElement(JSONExtract(SpanAttributes[{{CLIENT_CHUNK_OFFSETS_US}}],
                                             'Array(Int64)'), -1)
                    - toInt64OrNull(SpanAttributes[{{CLIENT_TTFT_US}}])) / 1e6 / (output_tokens - 1),
                   NULL)                                                            AS tpot_s,
                Duration / 1e9                                                      AS e2e_s
            FROM otel_traces
            WHERE SpanKind IN ({{SPAN_KIND_CLIENT}}, {{SPAN_KIND_CLIENT_LEGACY}})
              AND mapContains(SpanAttributes, {{RUN_ID}})
              AND (NOT mapContains(SpanAttributes, {{REQUEST_PHASE}})
                   OR SpanAttributes[{{REQUEST_PHASE}}] = {{PHASE_MEASURE}})
        )
        GROUP BY run_id
    ) AS c ON c.run_id = r.run_id
)
