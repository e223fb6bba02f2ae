-- _server_span_inputs: the columns of a server-span CTE row, read from otel_traces AS s, that
-- _server_span_columns reads besides trace_id, span_id and parent_span_id (whose source differs
-- by query): the span's name, is_hook, start, duration, attributes, token_offsets and events
-- ([name, attributes, timestamp] per span event). Included last in the SELECT list of the
-- server-span queries' CTE (run_server_requests, and the live package's
-- window_server_requests).
-- token_offsets: a hook span's token offsets matched against $re_int_array and parsed once, here,
-- so that _server_span_columns's rejection test reads the parsed list rather than matching the
-- long array a second time; NULL when the span is not a hook span or the attribute is absent or
-- rejected.
        s."SpanName"                                      AS span_name,
        s."SpanName" = $span_hook_request                 AS is_hook,
        s."Timestamp"                                     AS ts,
        s."Duration"                                      AS duration,
        s."SpanAttributes"                                AS attrs,
        CASE WHEN s."SpanName" = $span_hook_request
                  AND regexp_matches(s."SpanAttributes"[$attr_server_token_offsets_us], $re_int_array)
             THEN from_json(s."SpanAttributes"[$attr_server_token_offsets_us], '["BIGINT"]')
        END                                               AS token_offsets,
        list_zip(s."Events.Name", s."Events.Attributes", s."Events.Timestamp")  AS events
