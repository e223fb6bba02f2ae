-- Requests the engine did not finish, per interval (by their arrival), by end reason: the
-- client hung up (cancelled), the engine aborted them, or an engine error.
SELECT
    $__timeInterval(Timestamp)                          AS time,
    countIf(end_reason = {{END_REASON_CANCELLED}})      AS cancelled,
    countIf(end_reason = {{END_REASON_ABORTED}})        AS aborted,
    countIf(end_reason = {{END_REASON_ERROR}})          AS error
FROM {{> _unfinished_requests}}
GROUP BY time
ORDER BY time
