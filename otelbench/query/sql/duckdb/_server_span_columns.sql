-- _server_span_columns: the server-span record's columns (query.records.ServerRequests),
-- included by the server-span queries after their SELECT; they read a CTE row with trace_id,
-- span_id, parent_span_id and the columns of _server_span_inputs (ts, duration, attrs, events
-- ([name, attributes, timestamp] per span event), is_hook and token_offsets).
-- Attributes are parsed leniently: a value is cast only when it matches its pattern
-- ($re_int, $re_number, $re_int_array: query.extract.PATTERN_PARAMETERS, the same in both
-- dialects); a present value that does not is read as absent and its attribute name is listed
-- in rejected_attributes (once per span, or once per event for event attributes), which the
-- extraction counts. Hook-only attributes are parsed, and rejected, on hook spans only; an end
-- reason or end phase ($re_end_reason, $re_end_phase) is one of semconv's values.
-- The token offsets are matched and parsed once, in the CTE (_server_span_inputs), so the
-- rejection test reads the parsed list rather than matching the long array a second time.
    trace_id,
    span_id,
    parent_span_id,
    span_name,
    epoch_ns(ts)                                                       AS start_unix_ns,
    CAST(duration AS BIGINT)                                           AS duration_ns,
    attrs[$attr_vllm_request_id]                                       AS request_id,
    CASE WHEN regexp_matches(attrs[$attr_vllm_ttft], $re_number)
         THEN CAST(attrs[$attr_vllm_ttft] AS DOUBLE) END               AS ttft_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_e2e], $re_number)
         THEN CAST(attrs[$attr_vllm_e2e] AS DOUBLE) END                AS e2e_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_queue], $re_number)
         THEN CAST(attrs[$attr_vllm_queue] AS DOUBLE) END              AS queue_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_prefill], $re_number)
         THEN CAST(attrs[$attr_vllm_prefill] AS DOUBLE) END            AS prefill_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_decode], $re_number)
         THEN CAST(attrs[$attr_vllm_decode] AS DOUBLE) END             AS decode_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_inference], $re_number)
         THEN CAST(attrs[$attr_vllm_inference] AS DOUBLE) END          AS inference_s,
    CASE WHEN regexp_matches(attrs[$attr_vllm_prompt_tokens], $re_int)
         THEN CAST(attrs[$attr_vllm_prompt_tokens] AS BIGINT) END      AS prompt_tokens,
    CASE WHEN regexp_matches(attrs[$attr_vllm_completion_tokens], $re_int)
         THEN CAST(attrs[$attr_vllm_completion_tokens] AS BIGINT) END  AS completion_tokens,
    attrs[$attr_vllm_finish_reason]                                    AS finish_reason,
    CASE WHEN regexp_matches(attrs[$attr_cache_read_tokens], $re_int)
         THEN CAST(attrs[$attr_cache_read_tokens] AS BIGINT) END       AS cache_read_tokens,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_preemptions], $re_int)
         THEN CAST(attrs[$attr_server_preemptions] AS BIGINT) END      AS preemptions,
    CASE WHEN is_hook THEN
        len(list_filter(events, lambda e: e[1] = $event_preemption))
    END                                                                AS preemption_events,
    CASE WHEN is_hook THEN coalesce(list_sum(list_transform(
        list_filter(events, lambda e: e[1] = $event_preemption),
        lambda e: CASE WHEN regexp_matches(e[2][$attr_preemption_kv_discarded], $re_int)
                       THEN CAST(e[2][$attr_preemption_kv_discarded] AS BIGINT) END
    )), 0) END                                                         AS kv_tokens_discarded,
    coalesce(token_offsets, []::BIGINT[])                              AS token_offsets_us,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_output_phase_token], $re_int)
         THEN CAST(attrs[$attr_server_output_phase_token] AS BIGINT) END
                                                                       AS output_phase_token,
    CASE WHEN is_hook THEN list_transform(
        list_filter(events, lambda e: e[1] = $event_resumption
                    AND regexp_matches(e[2][$attr_preemption_stall_us], $re_int)),
        lambda e: CAST(e[2][$attr_preemption_stall_us] AS BIGINT)
    ) ELSE []::BIGINT[] END                                            AS stall_us,
    CASE WHEN is_hook THEN list_transform(
        list_filter(events, lambda e: e[1] = $event_preemption),
        lambda e: (epoch_ns(e[3]) - epoch_ns(ts)) // 1000
    ) ELSE []::BIGINT[] END                                            AS preemption_offset_us,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_end_reason], $re_end_reason)
         THEN attrs[$attr_server_end_reason] END                       AS end_reason,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_end_phase], $re_end_phase)
         THEN attrs[$attr_server_end_phase] END                        AS end_phase,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_prompt_tokens_computed], $re_int)
         THEN CAST(attrs[$attr_server_prompt_tokens_computed] AS BIGINT) END
                                                                       AS prompt_tokens_computed,
    CASE WHEN is_hook AND regexp_matches(attrs[$attr_server_output_tokens_generated], $re_int)
         THEN CAST(attrs[$attr_server_output_tokens_generated] AS BIGINT) END
                                                                       AS output_tokens_generated,
    list_concat(
        list_filter([
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_ttft], $re_number)
                 THEN $attr_vllm_ttft END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_e2e], $re_number)
                 THEN $attr_vllm_e2e END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_queue], $re_number)
                 THEN $attr_vllm_queue END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_prefill], $re_number)
                 THEN $attr_vllm_prefill END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_decode], $re_number)
                 THEN $attr_vllm_decode END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_inference], $re_number)
                 THEN $attr_vllm_inference END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_prompt_tokens], $re_int)
                 THEN $attr_vllm_prompt_tokens END,
            CASE WHEN NOT regexp_matches(attrs[$attr_vllm_completion_tokens], $re_int)
                 THEN $attr_vllm_completion_tokens END,
            CASE WHEN NOT regexp_matches(attrs[$attr_cache_read_tokens], $re_int)
                 THEN $attr_cache_read_tokens END,
            CASE WHEN is_hook AND NOT regexp_matches(attrs[$attr_server_preemptions], $re_int)
                 THEN $attr_server_preemptions END,
            CASE WHEN is_hook AND token_offsets IS NULL
                      AND attrs[$attr_server_token_offsets_us] IS NOT NULL
                 THEN $attr_server_token_offsets_us END,
            CASE WHEN is_hook
                      AND NOT regexp_matches(attrs[$attr_server_output_phase_token], $re_int)
                 THEN $attr_server_output_phase_token END,
            CASE WHEN is_hook
                      AND NOT regexp_matches(attrs[$attr_server_end_reason], $re_end_reason)
                 THEN $attr_server_end_reason END,
            CASE WHEN is_hook
                      AND NOT regexp_matches(attrs[$attr_server_end_phase], $re_end_phase)
                 THEN $attr_server_end_phase END,
            CASE WHEN is_hook
                      AND NOT regexp_matches(attrs[$attr_server_prompt_tokens_computed], $re_int)
                 THEN $attr_server_prompt_tokens_computed END,
            CASE WHEN is_hook
                      AND NOT regexp_matches(attrs[$attr_server_output_tokens_generated], $re_int)
                 THEN $attr_server_output_tokens_generated END
        ], lambda a: a IS NOT NULL),
        CASE WHEN is_hook THEN list_transform(
            list_filter(events, lambda e: e[1] = $event_preemption
                        AND NOT regexp_matches(e[2][$attr_preemption_kv_discarded], $re_int)),
            lambda e: $attr_preemption_kv_discarded
        ) ELSE []::VARCHAR[] END,
        CASE WHEN is_hook THEN list_transform(
            list_filter(events, lambda e: e[1] = $event_resumption
                        AND NOT regexp_matches(e[2][$attr_preemption_stall_us], $re_int)),
            lambda e: $attr_preemption_stall_us
        ) ELSE []::VARCHAR[] END
    )                                                                  AS rejected_attributes
