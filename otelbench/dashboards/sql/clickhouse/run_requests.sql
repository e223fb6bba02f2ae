-- One run (${run}): every measured request's TTFT and end-to-end latency at its submit time.
SELECT
    Timestamp                                                  AS time,
    toInt64OrNull(SpanAttributes[{{CLIENT_TTFT_US}}]) / 1e3    AS ttft_ms,
    Duration / 1e6                                             AS e2e_ms
FROM otel_traces
WHERE SpanKind IN ({{SPAN_KIND_CLIENT}}, {{SPAN_KIND_CLIENT_LEGACY}})
  AND SpanAttributes[{{RUN_ID}}] = ${run:singlequote}
  AND (NOT mapContains(SpanAttributes, {{REQUEST_PHASE}})
       OR SpanAttributes[{{REQUEST_PHASE}}] = {{PHASE_MEASURE}})
ORDER BY time
