-- run_target_span_count: how many spans of run {run_id}'s traces came from the target (every
-- service but the load generator's own, {service_client}) — what `otelbench run --otlp-endpoint`
-- and the procedures poll while an external collector writes the store, to learn that the
-- target's spans have arrived (the embedded collector answers this from its counters instead).
-- A trace belongs to the run when one of its client spans carries the run id; warm-up and probe
-- requests count too (their server spans arrive on the same schedule).
SELECT toInt64(count()) AS spans
FROM otel_traces
WHERE ServiceName != {service_client:String}
  AND TraceId IN (
      SELECT TraceId
      FROM otel_traces
      WHERE SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
        AND SpanAttributes[{attr_run_id:String}] = {run_id:String}
  )
