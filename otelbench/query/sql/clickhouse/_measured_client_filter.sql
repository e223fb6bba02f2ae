-- _measured_client_filter: the WHERE clause that keeps run {run_id}'s measured client spans of
-- otel_traces: warm-up and probe requests (draft 4.5; attr_request_phase other than
-- phase_measure) are left out, and a span without the attribute is measured. Included right
-- after a `FROM otel_traces` by every query of a run's requests.
WHERE SpanKind IN ({kind_client:String}, {kind_client_legacy:String})
  AND SpanAttributes[{attr_run_id:String}] = {run_id:String}
  AND (NOT mapContains(SpanAttributes, {attr_request_phase:String})
       OR SpanAttributes[{attr_request_phase:String}] = {phase_measure:String})
