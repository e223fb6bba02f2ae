-- (included) The server spans (_server_requests) of the requests the engine did not finish: the
-- engine hooks' otelbench.server.end_reason other than finished (cancelled, aborted, error),
-- with the phase each was in (unknown without one) and the work the engine spent on it, whose
-- response nobody read whole: the engine core's account (prompt tokens processed, output tokens
-- generated) and its time in model inference (first scheduling to the cut; 0 in the queue).
(
    SELECT
        Timestamp,
        SpanAttributes[{{SERVER_END_REASON}}]                              AS end_reason,
        if(SpanAttributes[{{SERVER_END_PHASE}}] = '', {{END_PHASE_UNKNOWN}},
           SpanAttributes[{{SERVER_END_PHASE}}])                           AS end_phase,
        ifNull(toInt64OrNull(SpanAttributes[{{SERVER_PROMPT_TOKENS_COMPUTED}}]), 0)
                                                                           AS prompt_tokens,
        ifNull(toInt64OrNull(SpanAttributes[{{SERVER_OUTPUT_TOKENS_GENERATED}}]), 0)
                                                                           AS output_tokens,
        ifNull(toFloat64OrNull(SpanAttributes[{{VLLM_LATENCY_INFERENCE}}]), 0)
                                                                           AS engine_s
    FROM {{> _server_requests}}
    WHERE SpanAttributes[{{SERVER_END_REASON}}] NOT IN ('', {{END_REASON_FINISHED}})
)
