-- Every run in the time range, compared: offered load, throughput, latency percentiles and the
-- verdicts. slo: p99 TTFT <= ${slo_ttft_ms} ms and p99 TPOT <= ${slo_tpot_ms} ms with no failed
-- request; methodology: the run manifest declares no deviation from the draft.
WITH {{> _run_points}}
SELECT
    run_id, start, workload, model, offered_rps, concurrency, requests, errors,
    throughput_rps, output_tps,
    ttft_p50_s * 1e3                                                  AS ttft_p50_ms,
    ttft_p99_s * 1e3                                                  AS ttft_p99_ms,
    tpot_p99_s * 1e3                                                  AS tpot_p99_ms,
    if(errors = 0 AND ttft_p99_s * 1e3 <= ${slo_ttft_ms}
       AND ifNull(tpot_p99_s * 1e3 <= ${slo_tpot_ms}, true), 'pass', 'fail') AS slo,
    if(deviations = 0, 'compliant', concat(toString(deviations), ' deviation(s)')) AS methodology
FROM run_points
ORDER BY start
