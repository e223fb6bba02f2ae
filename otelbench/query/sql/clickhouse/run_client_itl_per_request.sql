-- run_client_itl_per_request: run {run_id}'s per-request client ITL jitter and maximum pause
-- (draft 5.4.4.2, Option B), aggregated in ClickHouse (one row) — the figures of the report's
-- metrics.client.itl_per_request.
WITH
-- @include _client_token_intervals
-- @include _itl_per_request_select
