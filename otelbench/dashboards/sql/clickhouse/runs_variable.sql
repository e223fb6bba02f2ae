-- The `run` variable: the run ids whose run span started in the time range, newest first.
SELECT SpanAttributes[{{RUN_ID}}] AS run_id
FROM otel_traces
WHERE $__timeFilter_ms(Timestamp)
  AND SpanName = {{SPAN_RUN}}
  AND mapContains(SpanAttributes, {{RUN_ID}})
ORDER BY Timestamp DESC
