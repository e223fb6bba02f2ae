-- Per-token stall heatmap: every gap between consecutive output-token steps of the hook spans
-- (otelbench.server.token_offsets_us), placed at the wall time of the later token and counted in
-- buckets whose upper bounds (ms) are the column names (Grafana heatmap, "le" layout). Requests
-- the engine finished only, as the report's server ITL.
SELECT
    $__timeInterval(token_time)             AS time,
    countIf(gap_ms <= 5)                    AS `5`,
    countIf(gap_ms > 5 AND gap_ms <= 10)    AS `10`,
    countIf(gap_ms > 10 AND gap_ms <= 25)   AS `25`,
    countIf(gap_ms > 25 AND gap_ms <= 50)   AS `50`,
    countIf(gap_ms > 50 AND gap_ms <= 100)  AS `100`,
    countIf(gap_ms > 100 AND gap_ms <= 250) AS `250`,
    countIf(gap_ms > 250 AND gap_ms <= 1000) AS `1000`,
    countIf(gap_ms > 1000)                  AS `+Inf`
FROM (
    SELECT
        fromUnixTimestamp64Nano(toUnixTimestamp64Nano(Timestamp) + gap.2 * 1000) AS token_time,
        gap.1 / 1e3                                                            AS gap_ms
    FROM otel_traces
    ARRAY JOIN arrayMap(
        (a, b) -> (b - a, b),
        arrayPopBack(JSONExtract(SpanAttributes[{{SERVER_TOKEN_OFFSETS_US}}], 'Array(Int64)')),
        arrayPopFront(JSONExtract(SpanAttributes[{{SERVER_TOKEN_OFFSETS_US}}], 'Array(Int64)'))
    ) AS gap
    WHERE $__timeFilter_ms(Timestamp)
      AND SpanName = {{SPAN_HOOK_REQUEST}}
      AND SpanAttributes[{{SERVER_END_REASON}}] IN ('', {{END_REASON_FINISHED}})
)
GROUP BY time
ORDER BY time
