-- run_server_itl_per_request: run {run_id}'s per-request server ITL jitter and maximum pause
-- (draft 5.4.4.2, Option C), aggregated in ClickHouse (one row) — the figures of the report's
-- metrics.server.itl_per_request.
WITH
-- @include _measured_client_parents
-- @include _server_token_intervals
-- @include _itl_per_request_select
