-- The requests the engine did not finish in the time range, by end reason and the phase they
-- were in, with the work the engine spent on them for nobody: prompt tokens processed, output
-- tokens generated and request-seconds in the engine (shared with the batch's other requests).
SELECT
    end_reason,
    end_phase,
    count()                                             AS requests,
    sum(prompt_tokens)                                  AS prompt_tokens_processed,
    sum(output_tokens)                                  AS output_tokens_generated,
    sum(engine_s)                                       AS engine_request_s
FROM {{> _unfinished_requests}}
GROUP BY end_reason, end_phase
ORDER BY end_reason, end_phase
