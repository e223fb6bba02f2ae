-- _itl_per_request_select: the end of a per-request ITL query (draft 5.4.4.2) — from the `itl`
-- arrays of the CTE `per_request`, each request's jitter (population std of its intervals, with
-- at least two) and maximum pause (its largest interval, with at least one), in ms, and one row:
-- how many requests have each and their percentiles at {levels} (the report's P50/P95/P99 of
-- metrics.*.itl_per_request), by the same type-7 interpolation as _itl_summary_select.
stats AS (
    SELECT
        length(itl)                                                       AS n,
        arrayAvg(itl)                                                     AS m,
        sqrt(arrayAvg(arrayMap(x -> (x - m) * (x - m), itl)))             AS jitter,
        arrayMax(itl)                                                     AS max_pause
    FROM per_request
    WHERE length(itl) >= 1
),
sorted AS (
    SELECT
        arraySort(groupArrayIf(jitter, n >= 2))                           AS js,
        arraySort(groupArray(max_pause))                                  AS ms,
        length(js)                                                        AS nj,
        length(ms)                                                        AS nm,
        arrayMap(q -> (greatest(nj, 1) - 1) * q, {levels:Array(Float64)}) AS hj,
        arrayMap(q -> (greatest(nm, 1) - 1) * q, {levels:Array(Float64)}) AS hm
    FROM stats
)
SELECT
    toInt64(nj)                                                           AS jitter_count,
    if(nj = 0, CAST([], 'Array(Float64)'), arrayMap(
        h -> if(h - floor(h) >= 0.5,
                js[least(toUInt64(floor(h)) + 2, nj)]
                  - (js[least(toUInt64(floor(h)) + 2, nj)] - js[toUInt64(floor(h)) + 1])
                    * (1 - (h - floor(h))),
                js[toUInt64(floor(h)) + 1]
                  + (js[least(toUInt64(floor(h)) + 2, nj)] - js[toUInt64(floor(h)) + 1])
                    * (h - floor(h))),
        hj))                                                              AS jitter_percentiles,
    toInt64(nm)                                                           AS max_pause_count,
    if(nm = 0, CAST([], 'Array(Float64)'), arrayMap(
        h -> if(h - floor(h) >= 0.5,
                ms[least(toUInt64(floor(h)) + 2, nm)]
                  - (ms[least(toUInt64(floor(h)) + 2, nm)] - ms[toUInt64(floor(h)) + 1])
                    * (1 - (h - floor(h))),
                ms[toUInt64(floor(h)) + 1]
                  + (ms[least(toUInt64(floor(h)) + 2, nm)] - ms[toUInt64(floor(h)) + 1])
                    * (h - floor(h))),
        hm))                                                              AS max_pause_percentiles
FROM sorted
