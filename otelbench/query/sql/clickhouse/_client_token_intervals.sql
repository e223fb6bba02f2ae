-- _client_token_intervals: the CTE `per_request` — for each measured, successful client span of
-- run {run_id} (the spans client_requests reads with ok true), its inter-token intervals in ms
-- by Option B (draft 4.6.3: a chunk of N tokens arriving at T gives N tokens arriving at T, so
-- the tokens of one chunk are 0 ms apart), as `itl Array(Float64)` — what the report's
-- metrics.client.itl_ms pools (otelbench.metrics.token_arrival_times, consecutive_intervals).
-- Chunk arrays are parsed as client_requests parses them: offsets that do not match their
-- pattern are none, and token counts that do not (or are not one per offset) are one per chunk.
-- The tokens are not expanded one by one: over the chunks that carry tokens, a request's
-- intervals are the gaps between consecutive chunks (each chunk's first token) and one 0 for
-- every further token of a chunk — the same multiset of intervals, in another order (which no
-- figure computed from them depends on, but for float rounding in sums).
-- Included by the client ITL queries right after their WITH.
per_request AS (
    SELECT
        arrayConcat(
            arrayWithConstant(toUInt64(arraySum(toks) - length(toks)), toFloat64(0)),
            arrayMap((a, b) -> (b - a) / 1000.0, arrayPopBack(offs), arrayPopFront(offs))
        )                                                                  AS itl
    FROM (
        SELECT
            if(match(SpanAttributes[{attr_chunk_offsets_us:String}], {re_int_array:String}),
               JSONExtract(SpanAttributes[{attr_chunk_offsets_us:String}], 'Array(Int64)'),
               CAST([], 'Array(Int64)'))                                   AS offsets,
            if(match(SpanAttributes[{attr_chunk_tokens:String}], {re_int_array:String}),
               JSONExtract(SpanAttributes[{attr_chunk_tokens:String}], 'Array(Int64)'),
               CAST([], 'Array(Int64)'))                                   AS tokens_parsed,
            if(length(tokens_parsed) = length(offsets),
               tokens_parsed, arrayMap(x -> toInt64(1), offsets))          AS tokens,
            arrayFilter((o, t) -> t > 0, offsets, tokens)                  AS offs,
            arrayFilter(t -> t > 0, tokens)                                AS toks
        FROM otel_traces
        -- @include _measured_client_filter
          AND StatusCode NOT IN ({status_error:String}, {status_error_legacy:String})
          AND NOT mapContains(SpanAttributes, {attr_error_type:String})
    )
),
