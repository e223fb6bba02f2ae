-- _server_span_columns: the server-span record's columns (query.records.ServerRequests),
-- included by the server-span queries after their SELECT; they read a CTE row with trace_id,
-- span_id, parent_span_id and the columns of _server_span_inputs (ts, duration, attrs,
-- event_names, event_attrs, event_ts, is_hook).
-- Attributes are parsed leniently, as in the DuckDB dialect: a value is converted only when it
-- matches its pattern (re_int, re_number, re_int_array: query.extract.PATTERN_PARAMETERS, the
-- same in both dialects, so both accept the same text); a present value that does not is read
-- as absent and its attribute name is listed in rejected_attributes (once per span, or once per
-- event for event attributes), which the extraction counts. Hook-only attributes are parsed,
-- and rejected, on hook spans only; an end reason or end phase (re_end_reason, re_end_phase) is
-- one of semconv's values.
    trace_id,
    span_id,
    parent_span_id,
    toString(span_name)                                                    AS span_name,
    toUnixTimestamp64Nano(ts)                                              AS start_unix_ns,
    toInt64(duration)                                                      AS duration_ns,
    if(mapContains(attrs, {attr_vllm_request_id:String}),
       attrs[{attr_vllm_request_id:String}], NULL)                         AS request_id,
    if(mapContains(attrs, {attr_vllm_ttft:String})
       AND match(attrs[{attr_vllm_ttft:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_ttft:String}]), NULL)              AS ttft_s,
    if(mapContains(attrs, {attr_vllm_e2e:String})
       AND match(attrs[{attr_vllm_e2e:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_e2e:String}]), NULL)               AS e2e_s,
    if(mapContains(attrs, {attr_vllm_queue:String})
       AND match(attrs[{attr_vllm_queue:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_queue:String}]), NULL)             AS queue_s,
    if(mapContains(attrs, {attr_vllm_prefill:String})
       AND match(attrs[{attr_vllm_prefill:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_prefill:String}]), NULL)           AS prefill_s,
    if(mapContains(attrs, {attr_vllm_decode:String})
       AND match(attrs[{attr_vllm_decode:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_decode:String}]), NULL)            AS decode_s,
    if(mapContains(attrs, {attr_vllm_inference:String})
       AND match(attrs[{attr_vllm_inference:String}], {re_number:String}),
       toFloat64OrNull(attrs[{attr_vllm_inference:String}]), NULL)         AS inference_s,
    if(mapContains(attrs, {attr_vllm_prompt_tokens:String})
       AND match(attrs[{attr_vllm_prompt_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_vllm_prompt_tokens:String}]), NULL)
                                                                           AS prompt_tokens,
    if(mapContains(attrs, {attr_vllm_completion_tokens:String})
       AND match(attrs[{attr_vllm_completion_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_vllm_completion_tokens:String}]), NULL)
                                                                           AS completion_tokens,
    if(mapContains(attrs, {attr_vllm_finish_reason:String}),
       attrs[{attr_vllm_finish_reason:String}], NULL)                      AS finish_reason,
    if(mapContains(attrs, {attr_cache_read_tokens:String})
       AND match(attrs[{attr_cache_read_tokens:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_cache_read_tokens:String}]), NULL)
                                                                           AS cache_read_tokens,
    if(is_hook AND mapContains(attrs, {attr_server_preemptions:String})
       AND match(attrs[{attr_server_preemptions:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_server_preemptions:String}]), NULL)
                                                                           AS preemptions,
    if(is_hook, toInt64(countEqual(event_names, {event_preemption:String})), NULL)
                                                                           AS preemption_events,
    if(is_hook, arraySum(
        (n, a) -> if(n = {event_preemption:String}
                     AND match(a[{attr_preemption_kv_discarded:String}], {re_int:String}),
                     toInt64OrZero(a[{attr_preemption_kv_discarded:String}]), toInt64(0)),
        event_names, event_attrs
    ), NULL)                                                               AS kv_tokens_discarded,
    if(is_hook AND match(attrs[{attr_server_token_offsets_us:String}], {re_int_array:String}),
       JSONExtract(attrs[{attr_server_token_offsets_us:String}], 'Array(Int64)'),
       CAST([], 'Array(Int64)'))                                           AS token_offsets_us,
    if(is_hook AND mapContains(attrs, {attr_server_output_phase_token:String})
       AND match(attrs[{attr_server_output_phase_token:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_server_output_phase_token:String}]), NULL)
                                                                           AS output_phase_token,
    if(is_hook, arrayMap(
        a -> toInt64OrZero(a[{attr_preemption_stall_us:String}]),
        arrayFilter(
            (a, n) -> n = {event_resumption:String}
                      AND match(a[{attr_preemption_stall_us:String}], {re_int:String}),
            event_attrs, event_names
        )
    ), CAST([], 'Array(Int64)'))                                           AS stall_us,
    if(is_hook, arrayMap(
        t -> intDiv(toUnixTimestamp64Nano(t) - toUnixTimestamp64Nano(ts), 1000),
        arrayFilter((t, n) -> n = {event_preemption:String}, event_ts, event_names)
    ), CAST([], 'Array(Int64)'))                                           AS preemption_offset_us,
    if(is_hook AND mapContains(attrs, {attr_server_end_reason:String})
       AND match(attrs[{attr_server_end_reason:String}], {re_end_reason:String}),
       attrs[{attr_server_end_reason:String}], NULL)                       AS end_reason,
    if(is_hook AND mapContains(attrs, {attr_server_end_phase:String})
       AND match(attrs[{attr_server_end_phase:String}], {re_end_phase:String}),
       attrs[{attr_server_end_phase:String}], NULL)                        AS end_phase,
    if(is_hook AND mapContains(attrs, {attr_server_prompt_tokens_computed:String})
       AND match(attrs[{attr_server_prompt_tokens_computed:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_server_prompt_tokens_computed:String}]), NULL)
                                                                           AS prompt_tokens_computed,
    if(is_hook AND mapContains(attrs, {attr_server_output_tokens_generated:String})
       AND match(attrs[{attr_server_output_tokens_generated:String}], {re_int:String}),
       toInt64OrNull(attrs[{attr_server_output_tokens_generated:String}]), NULL)
                                                                           AS output_tokens_generated,
    arrayConcat(
        arrayFilter(a -> a != '', [
            if(mapContains(attrs, {attr_vllm_ttft:String})
               AND NOT match(attrs[{attr_vllm_ttft:String}], {re_number:String}),
               {attr_vllm_ttft:String}, ''),
            if(mapContains(attrs, {attr_vllm_e2e:String})
               AND NOT match(attrs[{attr_vllm_e2e:String}], {re_number:String}),
               {attr_vllm_e2e:String}, ''),
            if(mapContains(attrs, {attr_vllm_queue:String})
               AND NOT match(attrs[{attr_vllm_queue:String}], {re_number:String}),
               {attr_vllm_queue:String}, ''),
            if(mapContains(attrs, {attr_vllm_prefill:String})
               AND NOT match(attrs[{attr_vllm_prefill:String}], {re_number:String}),
               {attr_vllm_prefill:String}, ''),
            if(mapContains(attrs, {attr_vllm_decode:String})
               AND NOT match(attrs[{attr_vllm_decode:String}], {re_number:String}),
               {attr_vllm_decode:String}, ''),
            if(mapContains(attrs, {attr_vllm_inference:String})
               AND NOT match(attrs[{attr_vllm_inference:String}], {re_number:String}),
               {attr_vllm_inference:String}, ''),
            if(mapContains(attrs, {attr_vllm_prompt_tokens:String})
               AND NOT match(attrs[{attr_vllm_prompt_tokens:String}], {re_int:String}),
               {attr_vllm_prompt_tokens:String}, ''),
            if(mapContains(attrs, {attr_vllm_completion_tokens:String})
               AND NOT match(attrs[{attr_vllm_completion_tokens:String}], {re_int:String}),
               {attr_vllm_completion_tokens:String}, ''),
            if(mapContains(attrs, {attr_cache_read_tokens:String})
               AND NOT match(attrs[{attr_cache_read_tokens:String}], {re_int:String}),
               {attr_cache_read_tokens:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_preemptions:String})
               AND NOT match(attrs[{attr_server_preemptions:String}], {re_int:String}),
               {attr_server_preemptions:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_token_offsets_us:String})
               AND NOT match(attrs[{attr_server_token_offsets_us:String}], {re_int_array:String}),
               {attr_server_token_offsets_us:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_output_phase_token:String})
               AND NOT match(attrs[{attr_server_output_phase_token:String}], {re_int:String}),
               {attr_server_output_phase_token:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_end_reason:String})
               AND NOT match(attrs[{attr_server_end_reason:String}], {re_end_reason:String}),
               {attr_server_end_reason:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_end_phase:String})
               AND NOT match(attrs[{attr_server_end_phase:String}], {re_end_phase:String}),
               {attr_server_end_phase:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_prompt_tokens_computed:String})
               AND NOT match(attrs[{attr_server_prompt_tokens_computed:String}], {re_int:String}),
               {attr_server_prompt_tokens_computed:String}, ''),
            if(is_hook AND mapContains(attrs, {attr_server_output_tokens_generated:String})
               AND NOT match(attrs[{attr_server_output_tokens_generated:String}], {re_int:String}),
               {attr_server_output_tokens_generated:String}, '')
        ]),
        if(is_hook, arrayMap(a -> {attr_preemption_kv_discarded:String}, arrayFilter(
            (a, n) -> n = {event_preemption:String}
                      AND mapContains(a, {attr_preemption_kv_discarded:String})
                      AND NOT match(a[{attr_preemption_kv_discarded:String}], {re_int:String}),
            event_attrs, event_names
        )), CAST([], 'Array(String)')),
        if(is_hook, arrayMap(a -> {attr_preemption_stall_us:String}, arrayFilter(
            (a, n) -> n = {event_resumption:String}
                      AND mapContains(a, {attr_preemption_stall_us:String})
                      AND NOT match(a[{attr_preemption_stall_us:String}], {re_int:String}),
            event_attrs, event_names
        )), CAST([], 'Array(String)'))
    )                                                                      AS rejected_attributes
