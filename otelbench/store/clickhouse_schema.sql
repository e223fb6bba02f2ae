-- otelbench span store, ClickHouse dialect: the OpenTelemetry Collector ClickHouse exporter's
-- traces table, exactly as the exporter creates it.
--
-- Source: open-telemetry/opentelemetry-collector-contrib,
--   exporter/clickhouseexporter/internal/sqltemplates/traces_table.sql
--   (commit f92a5763be13aeb59ecf6f8b47e31d54109191bb; older releases keep the same DDL in
--   internal/sql_templates/traces_table.sql), Apache-2.0.
-- The exporter's template has four placeholders, filled here as the exporter fills them for a
-- single server with its defaults: the table name ("otel_traces", created in the database the
-- connection uses; the exporter's default database is "otel"), no ON CLUSTER clause, the engine
-- MergeTree() and no TTL. Columns, types, codecs, skip indexes, partitioning, ordering and
-- settings are unchanged. Two things to know when reading it:
--   * Events and Links are Nested: ClickHouse exposes them as parallel arrays
--     Events.Timestamp / Events.Name / Events.Attributes (the DuckDB store mirrors exactly that);
--   * attribute maps hold every value as a string (arrays as JSON text), and a lookup of an
--     absent key gives '' — the ClickHouse queries test mapContains() to keep absent as NULL.
CREATE TABLE IF NOT EXISTS otel_traces (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1
