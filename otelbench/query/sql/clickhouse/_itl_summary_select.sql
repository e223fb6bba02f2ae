-- _itl_summary_select: the end of an ITL summary query — pools the `itl` arrays of the CTE
-- `per_request` and returns one row: count, mean, population std, min, max and `percentiles` at
-- {levels} (otelbench.draft.PERCENTILES / 100), as otelbench.metrics.summary.summarize computes them.
-- Percentiles are exact Hyndman-Fan type 7 (numpy method='linear'), with numpy's own arithmetic:
-- the samples are sorted once and interpolated (h = (n-1)q, i = floor(h), g = h - i;
-- a + (b-a)g below g = 0.5, b - (b-a)(1-g) from 0.5 on), which runs on chdb-core-lite (no
-- quantilesExactInclusive) and on any ClickHouse server. Mean and std are sums in another order
-- than numpy's: equal to numpy's within float rounding (relative 1e-12 on these data).
samples AS (
    SELECT arrayJoin(itl) AS itl_ms FROM per_request
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
