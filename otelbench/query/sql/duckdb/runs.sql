-- runs: every otelbench run span in the store, oldest first.
-- One row per run span; the manifest is the run span's JSON text, parsed by the caller.
SELECT
    "SpanAttributes"[$attr_run_id]       AS run_id,
    "SpanAttributes"[$attr_run_manifest] AS manifest,
    epoch_ns("Timestamp")                AS span_start_unix_ns,
    CAST("Duration" AS BIGINT)           AS span_duration_ns
FROM otel_traces
WHERE "SpanName" = $span_run
  AND "SpanAttributes"[$attr_run_id] IS NOT NULL
ORDER BY "Timestamp", run_id
