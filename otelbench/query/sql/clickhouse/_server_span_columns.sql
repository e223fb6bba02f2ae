-- _server_span_columns: the server-span record's columns (query.records.ServerRequests),
-- included by the server-span queries after their SELECT; they read a CTE row with ts,
-- duration, attrs, events, is_hook (see run_server_requests.sql).
    trace_id,
    span_id,
    parent_span_id,
    toString(span_name)                                                    AS span_name,
    toUnixTimestamp64Nano(ts)                                              AS start_unix_ns,
    toInt64(duration)                                                      AS duration_ns,
    if(mapContains(attrs, {attr_vllm_request_id:String}),
       attrs[{attr_vllm_request_id:String}], NULL)                         AS request_id,
    if(mapContains(attrs, {attr_vllm_ttft:String}),
       toFloat64OrNull(attrs[{attr_vllm_ttft:String}]), NULL)              AS ttft_s,
    if(mapContains(attrs, {attr_vllm_e2e:String}),
       toFloat64OrNull(attrs[{attr_vllm_e2e:String}]), NULL)               AS e2e_s,
    if(mapContains(attrs, {attr_vllm_queue:String}),
       toFloat64OrNull(attrs[{attr_vllm_queue:String}]), NULL)             AS queue_s,
    if(mapContains(attrs, {attr_vllm_prefill:String}),
       toFloat64OrNull(attrs[{attr_vllm_prefill:String}]), NULL)           AS prefill_s,
    if(mapContains(attrs, {attr_vllm_decode:String}),
       toFloat64OrNull(attrs[{attr_vllm_decode:String}]), NULL)            AS decode_s,
    if(mapContains(attrs, {attr_vllm_inference:String}),
       toFloat64OrNull(attrs[{attr_vllm_inference:String}]), NULL)         AS inference_s,
    if(mapContains(attrs, {attr_vllm_prompt_tokens:String}),
       toInt64OrNull(attrs[{attr_vllm_prompt_tokens:String}]), NULL)       AS prompt_tokens,
    if(mapContains(attrs, {attr_vllm_completion_tokens:String}),
       toInt64OrNull(attrs[{attr_vllm_completion_tokens:String}]), NULL)   AS completion_tokens,
    if(mapContains(attrs, {attr_vllm_finish_reason:String}),
       attrs[{attr_vllm_finish_reason:String}], NULL)                      AS finish_reason,
    if(mapContains(attrs, {attr_cache_read_tokens:String}),
       toInt64OrNull(attrs[{attr_cache_read_tokens:String}]), NULL)        AS cache_read_tokens,
    if(is_hook AND mapContains(attrs, {attr_server_preemptions:String}),
       toInt64OrNull(attrs[{attr_server_preemptions:String}]), NULL)       AS preemptions,
    if(is_hook, toInt64(countEqual(event_names, {event_preemption:String})), NULL)
                                                                           AS preemption_events,
    if(is_hook, arraySum(
        (n, a) -> if(n = {event_preemption:String},
                     toInt64OrZero(a[{attr_preemption_kv_discarded:String}]), toInt64(0)),
        event_names, event_attrs
    ), NULL)                                                               AS kv_tokens_discarded,
    if(is_hook,
       JSONExtract(attrs[{attr_server_token_offsets_us:String}], 'Array(Int64)'),
       CAST([], 'Array(Int64)'))                                           AS token_offsets_us,
    if(is_hook AND mapContains(attrs, {attr_server_output_phase_token:String}),
       toInt64OrNull(attrs[{attr_server_output_phase_token:String}]), NULL) AS output_phase_token,
    if(is_hook, arrayMap(
        a -> toInt64OrZero(a[{attr_preemption_stall_us:String}]),
        arrayFilter(
            (a, n) -> n = {event_resumption:String}
                      AND mapContains(a, {attr_preemption_stall_us:String}),
            event_attrs, event_names
        )
    ), CAST([], 'Array(Int64)'))                                           AS stall_us
