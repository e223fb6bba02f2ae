-- run_client_itl_summary: run {run_id}'s client ITL distribution by Option B, aggregated in
-- ClickHouse (one row) — the figures of the report's metrics.client.itl_ms without moving the
-- chunk arrays to Python (see the two fragments for the samples and the arithmetic).
WITH
-- @include _client_token_intervals
-- @include _itl_summary_select
