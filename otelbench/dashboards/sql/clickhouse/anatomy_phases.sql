-- Request anatomy over time: mean seconds per request in each phase, for the requests whose
-- server span started in each interval. Queue, prefill and decode are vLLM's gen_ai.latency.*
-- keys on the server span; guardrail input/output is the guardrail filters' busy time in the same
-- trace (0 where no guardrail ran). Requests the engine finished only (a request cut short has no
-- decode time and a prefill that stops at the cut: anatomy_cut and anatomy_unread count them).
SELECT
    $__timeInterval(s.Timestamp)                                        AS time,
    avg(toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_QUEUE}}]))      AS queue,
    avg(toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_PREFILL}}]))    AS prefill,
    avg(toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_DECODE}}]))     AS decode,
    avg(g.guardrail_input)                                              AS guardrail_input,
    avg(g.guardrail_output)                                             AS guardrail_output
FROM {{> _server_requests}} AS s
LEFT JOIN {{> _guardrail_per_trace}} AS g ON g.TraceId = s.TraceId
WHERE s.SpanAttributes[{{SERVER_END_REASON}}] IN ('', {{END_REASON_FINISHED}})
GROUP BY time
ORDER BY time
