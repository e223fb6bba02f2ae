-- Guardrail filters in the time range: invocations and busy time per stage and filter, with
-- their block / redact decisions.
SELECT
    SpanAttributes[{{GUARDRAIL_STAGE}}]                                        AS stage,
    SpanAttributes[{{GUARDRAIL_FILTER_NAME}}]                                  AS filter,
    count()                                                                    AS spans,
    sum(toInt64OrZero(SpanAttributes[{{GUARDRAIL_INVOCATIONS}}]))              AS invocations,
    quantileExact(0.5)(toInt64OrZero(SpanAttributes[{{GUARDRAIL_BUSY_US}}]) / 1e3)  AS busy_p50_ms,
    quantileExact(0.99)(toInt64OrZero(SpanAttributes[{{GUARDRAIL_BUSY_US}}]) / 1e3) AS busy_p99_ms,
    countIf(SpanAttributes[{{GUARDRAIL_DECISION}}] = {{DECISION_BLOCK}})       AS blocked,
    countIf(SpanAttributes[{{GUARDRAIL_DECISION}}] = {{DECISION_REDACT}})      AS redacted
FROM otel_traces
WHERE $__timeFilter_ms(Timestamp)
  AND SpanName = {{SPAN_GUARDRAIL_FILTER}}
GROUP BY stage, filter
ORDER BY stage, filter
