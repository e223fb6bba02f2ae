-- Capacity: the highest throughput of a run that meets the SLO (p99 TTFT <= ${slo_ttft_ms} ms,
-- p99 TPOT <= ${slo_tpot_ms} ms, no failed request). NULL when no run meets it.
WITH {{> _run_points}}
SELECT
    maxOrNull(throughput_rps)       AS capacity_rps,
    argMax(run_id, throughput_rps)  AS capacity_run
FROM run_points
WHERE errors = 0
  AND ttft_p99_s * 1e3 <= ${slo_ttft_ms}
  AND ifNull(tpot_p99_s * 1e3 <= ${slo_tpot_ms}, true)
