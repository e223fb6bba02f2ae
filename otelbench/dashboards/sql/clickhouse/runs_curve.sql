-- Throughput-latency curve: one point per run (successful requests/s against p99 TTFT and TPOT),
-- in order of offered load.
WITH {{> _run_points}}
SELECT
    throughput_rps,
    ttft_p99_s * 1e3 AS ttft_p99_ms,
    tpot_p99_s * 1e3 AS tpot_p99_ms
FROM run_points
ORDER BY offered_rps, throughput_rps
