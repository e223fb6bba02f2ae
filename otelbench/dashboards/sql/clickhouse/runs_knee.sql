-- The knee of the throughput-latency curve: the run with the highest power (Kleinrock), i.e.
-- throughput / p99 end-to-end latency; past it latency grows faster than throughput.
WITH {{> _run_points}}
SELECT
    argMax(run_id, throughput_rps / e2e_p99_s)         AS knee_run,
    argMax(throughput_rps, throughput_rps / e2e_p99_s) AS knee_rps
FROM run_points
WHERE requests > errors
