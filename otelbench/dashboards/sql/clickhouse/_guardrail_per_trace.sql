-- (included) Guardrail time per trace: the filters' busy time, summed per stage, in seconds.
(
    SELECT
        TraceId,
        sumIf(toInt64OrZero(SpanAttributes[{{GUARDRAIL_BUSY_US}}]),
              SpanAttributes[{{GUARDRAIL_STAGE}}] = {{GUARDRAIL_STAGE_INPUT}}) / 1e6  AS guardrail_input,
        sumIf(toInt64OrZero(SpanAttributes[{{GUARDRAIL_BUSY_US}}]),
              SpanAttributes[{{GUARDRAIL_STAGE}}] = {{GUARDRAIL_STAGE_OUTPUT}}) / 1e6 AS guardrail_output
    FROM otel_traces
    WHERE $__timeFilter_ms(Timestamp)
      AND SpanName = {{SPAN_GUARDRAIL_FILTER}}
    GROUP BY TraceId
)
