-- The slowest requests in the time range (server span duration, arrival -> finish), with their
-- anatomy; trace_id links to the trace datasource. status is the exporter's current spelling
-- (Error, Ok, Unset) whichever spelling the store holds; end_reason says whether the engine
-- finished the request (otelbench.server.end_reason; finished where the span has none).
SELECT
    s.TraceId                                                           AS trace_id,
    s.Timestamp                                                         AS arrival,
    s.ServiceName                                                       AS service,
    s.SpanName                                                          AS span,
    s.Duration / 1e9                                                    AS e2e,
    toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_TTFT}}])            AS ttft,
    toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_QUEUE}}])           AS queue,
    toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_PREFILL}}])         AS prefill,
    toFloat64OrNull(s.SpanAttributes[{{VLLM_LATENCY_DECODE}}])          AS decode,
    g.guardrail_input + g.guardrail_output                              AS guardrail,
    toInt64OrNull(s.SpanAttributes[{{VLLM_USAGE_COMPLETION_TOKENS}}])   AS output_tokens,
    toInt64OrNull(s.SpanAttributes[{{SERVER_PREEMPTIONS}}])             AS preemptions,
    multiIf(s.StatusCode = {{STATUS_ERROR_LEGACY}}, {{STATUS_ERROR}},
            s.StatusCode = {{STATUS_OK_LEGACY}}, {{STATUS_OK}},
            s.StatusCode = {{STATUS_UNSET_LEGACY}}, {{STATUS_UNSET}},
            s.StatusCode)                                               AS status,
    if(s.SpanAttributes[{{SERVER_END_REASON}}] = '', {{END_REASON_FINISHED}},
       s.SpanAttributes[{{SERVER_END_REASON}}])                         AS end_reason
FROM {{> _server_requests}} AS s
LEFT JOIN {{> _guardrail_per_trace}} AS g ON g.TraceId = s.TraceId
ORDER BY e2e DESC, trace_id
LIMIT 20
