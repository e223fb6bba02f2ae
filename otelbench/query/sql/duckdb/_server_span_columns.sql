-- _server_span_columns: the server-span record's columns (query.records.ServerRequests),
-- included by the server-span queries after their SELECT; they read a CTE row with ts,
-- duration, attrs, events, is_hook (see run_server_requests.sql).
    trace_id,
    span_id,
    parent_span_id,
    span_name,
    epoch_ns(ts)                                                       AS start_unix_ns,
    CAST(duration AS BIGINT)                                           AS duration_ns,
    attrs[$attr_vllm_request_id]                                       AS request_id,
    CAST(attrs[$attr_vllm_ttft] AS DOUBLE)                             AS ttft_s,
    CAST(attrs[$attr_vllm_e2e] AS DOUBLE)                              AS e2e_s,
    CAST(attrs[$attr_vllm_queue] AS DOUBLE)                            AS queue_s,
    CAST(attrs[$attr_vllm_prefill] AS DOUBLE)                          AS prefill_s,
    CAST(attrs[$attr_vllm_decode] AS DOUBLE)                           AS decode_s,
    CAST(attrs[$attr_vllm_inference] AS DOUBLE)                        AS inference_s,
    CAST(attrs[$attr_vllm_prompt_tokens] AS BIGINT)                    AS prompt_tokens,
    CAST(attrs[$attr_vllm_completion_tokens] AS BIGINT)                AS completion_tokens,
    attrs[$attr_vllm_finish_reason]                                    AS finish_reason,
    CAST(attrs[$attr_cache_read_tokens] AS BIGINT)                     AS cache_read_tokens,
    CASE WHEN is_hook THEN CAST(attrs[$attr_server_preemptions] AS BIGINT) END
                                                                       AS preemptions,
    CASE WHEN is_hook THEN
        len(list_filter(events, lambda e: e[1] = $event_preemption))
    END                                                                AS preemption_events,
    CASE WHEN is_hook THEN coalesce(list_sum(list_transform(
        list_filter(events, lambda e: e[1] = $event_preemption),
        lambda e: CAST(e[2][$attr_preemption_kv_discarded] AS BIGINT)
    )), 0) END                                                         AS kv_tokens_discarded,
    CASE WHEN is_hook THEN
        coalesce(from_json(attrs[$attr_server_token_offsets_us], '["BIGINT"]'), []::BIGINT[])
    ELSE []::BIGINT[] END                                              AS token_offsets_us,
    CASE WHEN is_hook THEN CAST(attrs[$attr_server_output_phase_token] AS BIGINT) END
                                                                       AS output_phase_token,
    CASE WHEN is_hook THEN list_filter(list_transform(
        list_filter(events, lambda e: e[1] = $event_resumption),
        lambda e: CAST(e[2][$attr_preemption_stall_us] AS BIGINT)
    ), lambda x: x IS NOT NULL) ELSE []::BIGINT[] END                  AS stall_us
