-- _server_span_inputs: the columns of a server-span CTE row, read from otel_traces AS s, that
-- _server_span_columns reads besides trace_id, span_id and parent_span_id (whose source differs
-- by query): the span's name, is_hook, start, duration, attributes and its Nested Events
-- columns. Included last in the SELECT list of the server-span queries' CTE
-- (run_server_requests, and the live package's window_server_requests).
        s.SpanName                                  AS span_name,
        s.SpanName = {span_hook_request:String}     AS is_hook,
        s.Timestamp                                 AS ts,
        s.Duration                                  AS duration,
        s.SpanAttributes                            AS attrs,
        s.`Events.Name`                             AS event_names,
        s.`Events.Attributes`                       AS event_attrs,
        s.`Events.Timestamp`                        AS event_ts
