-- _server_token_offsets: the `token_offsets` column of a server-span CTE that reads
-- otel_traces AS s — a hook span's token offsets matched against $re_int_array and parsed once,
-- NULL when the span is not a hook span or the attribute is absent or rejected. Included in the
-- SELECT list of the server-span queries' CTE; _server_span_columns reads it.
        CASE WHEN s."SpanName" = $span_hook_request
                  AND regexp_matches(s."SpanAttributes"[$attr_server_token_offsets_us], $re_int_array)
             THEN from_json(s."SpanAttributes"[$attr_server_token_offsets_us], '["BIGINT"]')
        END                                               AS token_offsets,
