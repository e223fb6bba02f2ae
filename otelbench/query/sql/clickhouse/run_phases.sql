-- run_phases: run {run_id}'s client spans by request phase (attr_request_phase: warm-up, probe,
-- measure; a span without the attribute is measured) — the same rows and columns as the DuckDB
-- dialect's run_phases: requests, successes, their output and cached prompt tokens, the first
-- submit and the last end (Unix ns), and how many ended after the first measured submit.
WITH spans AS (
    SELECT
        if(mapContains(SpanAttributes, {attr_request_phase:String}),
           SpanAttributes[{attr_request_phase:String}], {phase_measure:String})  AS phase,
        toInt64(toUnixTimestamp64Nano(Timestamp))                                AS submit_ns,
        submit_ns + toInt64(Duration)                                            AS end_ns,
        StatusCode NOT IN ({status_error:String}, {status_error_legacy:String})
        AND NOT mapContains(SpanAttributes, {attr_error_type:String})           AS ok,
        if(match(SpanAttributes[{attr_output_tokens:String}], {re_int:String}),
           toInt64OrZero(SpanAttributes[{attr_output_tokens:String}]), 0)       AS output_tokens,
        if(match(SpanAttributes[{attr_cache_read_tokens:String}], {re_int:String}),
           toInt64OrZero(SpanAttributes[{attr_cache_read_tokens:String}]), 0)   AS cached_tokens
    FROM otel_traces
    WHERE SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
      AND SpanAttributes[{attr_run_id:String}] = {run_id:String}
)
SELECT
    phase,
    toInt64(count())                                                  AS requests,
    toInt64(countIf(ok))                                              AS succeeded,
    toInt64(sumIf(output_tokens, ok))                                 AS output_tokens,
    toInt64(sumIf(cached_tokens, ok))                                 AS cached_tokens,
    toInt64(min(submit_ns))                                           AS first_submit_ns,
    toInt64(max(end_ns))                                              AS last_end_ns,
    toInt64(countIf(end_ns > (SELECT min(submit_ns) FROM spans
                              WHERE phase = {phase_measure:String}))) AS ended_after_start
FROM spans
GROUP BY phase
ORDER BY phase
