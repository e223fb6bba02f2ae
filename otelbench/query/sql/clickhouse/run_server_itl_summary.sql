-- run_server_itl_summary: the server ITL distribution of run {run_id}, aggregated in ClickHouse
-- (one row) — the figures of the report's metrics.server.itl_ms without moving a single token
-- offset to Python. ITL samples are the consecutive differences of each server span's per-token
-- offsets (the engine hooks' otelbench.server.token_offsets_us, Option C, draft 4.6.3), in ms,
-- over the hook spans that run_server_requests picks (one per measured client span: the hook
-- span, else none; an llm_request span has no offsets). Offsets that are not a JSON array of
-- integers (re_int_array) are none, as run_server_requests reads them (rejected there).
-- Percentiles are exact and defined as the report defines them (otelbench.metrics.summary:
-- Hyndman-Fan type 7, numpy method='linear', levels bound as {levels} = PERCENTILES / 100): the
-- samples are sorted once (arraySort(groupArray)) and interpolated with numpy's own arithmetic
-- (h = (n-1)q, i = floor(h), g = h - i; a + (b-a)g below g = 0.5, b - (b-a)(1-g) from 0.5 on).
-- quantilesExact is not used: it returns the order statistic x[floor(q n)] without
-- interpolation (P50 of 0..9 is 5, not 4.5), and quantilesExactInclusive (type 7) is missing from
-- chdb-core-lite; this formulation runs on both and on any ClickHouse server.
WITH
-- @include _measured_client_parents
server AS (
    SELECT
        s.SpanName = {span_hook_request:String}                                    AS is_hook,
        if(match(s.SpanAttributes[{attr_server_token_offsets_us:String}], {re_int_array:String}),
           JSONExtract(s.SpanAttributes[{attr_server_token_offsets_us:String}], 'Array(Int64)'),
           CAST([], 'Array(Int64)'))                                               AS offsets
    FROM otel_traces AS s
    INNER JOIN parents AS p ON s.TraceId = p.p_trace_id AND s.ParentSpanId = p.p_span_id
    WHERE s.SpanName IN ({span_hook_request:String}, {span_vllm_request:String})
      AND s.SpanKind = {kind_server:String}
    QUALIFY row_number() OVER (
        PARTITION BY s.TraceId, p.client_span_id
        ORDER BY s.SpanName = {span_hook_request:String} DESC, s.Timestamp, s.SpanId
    ) = 1
),
samples AS (
    SELECT arrayJoin(arrayMap((a, b) -> b - a, arrayPopBack(offsets), arrayPopFront(offsets)))
           / 1000.0 AS itl_ms
    FROM server
    WHERE is_hook
),
sorted AS (
    SELECT
        arraySort(groupArray(itl_ms))                                     AS xs,
        length(xs)                                                        AS n,
        arrayAvg(xs)                                                      AS m,
        arrayMap(q -> (greatest(n, 1) - 1) * q, {levels:Array(Float64)})  AS h,
        arrayMap(x -> toUInt64(floor(x)), h)                              AS i,
        arrayMap(x -> x - floor(x), h)                                    AS g
    FROM samples
)
SELECT
    toInt64(n)                                                            AS count,
    if(n = 0, NULL, m)                                                    AS mean,
    if(n = 0, NULL, sqrt(arrayAvg(arrayMap(x -> (x - m) * (x - m), xs)))) AS std,
    if(n = 0, NULL, xs[1])                                                AS min,
    if(n = 0, NULL, xs[n])                                                AS max,
    if(n = 0, CAST([], 'Array(Float64)'), arrayMap(
        (lo, hi, t) -> if(t >= 0.5, hi - (hi - lo) * (1 - t), lo + (hi - lo) * t),
        arrayMap(k -> xs[k + 1], i),
        arrayMap(k -> xs[least(k + 2, n)], i),
        g
    ))                                                                    AS percentiles
FROM sorted
