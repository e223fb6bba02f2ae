-- runs: every otelbench run span in the store, oldest first (ClickHouse dialect, over the
-- exporter's otel_traces; see otelbench/store/sql/clickhouse/schema.sql).
-- A Map lookup of an absent key gives '' in ClickHouse, not NULL: every optional attribute is
-- read as if(mapContains(m, k), m[k], NULL) so that absent stays NULL, as in the DuckDB dialect.
SELECT
    SpanAttributes[{attr_run_id:String}]                                  AS run_id,
    if(mapContains(SpanAttributes, {attr_run_manifest:String}),
       SpanAttributes[{attr_run_manifest:String}], NULL)                  AS manifest,
    toUnixTimestamp64Nano(Timestamp)                                      AS span_start_unix_ns,
    toInt64(Duration)                                                     AS span_duration_ns
FROM otel_traces
WHERE SpanName = {span_run:String}
  AND mapContains(SpanAttributes, {attr_run_id:String})
ORDER BY Timestamp, run_id
