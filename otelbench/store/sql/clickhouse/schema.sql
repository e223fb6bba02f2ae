-- otelbench span store, ClickHouse dialect: the OpenTelemetry Collector ClickHouse exporter's
-- traces table, exactly as the exporter creates it.
--
-- Source: open-telemetry/opentelemetry-collector-contrib,
--   exporter/clickhouseexporter/internal/sqltemplates/traces_table.sql
--   (commit 2bf6b9e1f8c8716ab54eaac1635e56b4d0649900; collectors/README.md says what else was
--   read and what the exporter writes into each column), Apache-2.0.
-- The exporter's template (Go text/template) is filled here as the exporter fills it for a single
-- server with its defaults: the table name ("otel_traces", created in the database the
-- connection uses; the exporter's default database is "otel"), no ON CLUSTER clause, the engine
-- MergeTree(), no TTL, and the bloom-filter skip indexes. On ClickHouse 26.2 or newer the exporter
-- creates text indexes (TYPE text(tokenizer = 'array')) over the same columns instead, and older
-- exporter releases created the table without the two ALIAS columns, the span-name index and the
-- final Timestamp in ORDER BY: the columns the queries read are the same in all of them.
-- Columns, types, codecs, skip indexes, partitioning, keys and settings are the template's.
-- Two things to know when reading it:
--   * Events and Links are Nested: ClickHouse exposes them as parallel arrays
--     Events.Timestamp / Events.Name / Events.Attributes (the DuckDB store mirrors exactly that);
--   * attribute maps hold every value as a string (arrays as JSON text), and a lookup of an
--     absent key gives '' — the ClickHouse queries test mapContains() to keep absent as NULL.
CREATE TABLE IF NOT EXISTS otel_traces (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
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
    Duration UInt64 CODEC(T64, ZSTD(1)),
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
    ResourceAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2), CAST(ResourceAttributes, 'Array(Tuple(String, String))')),
    SpanAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2), CAST(SpanAttributes, 'Array(Tuple(String, String))')),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1,
    INDEX idx_lower_span_name lower(SpanName) TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 8
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
PRIMARY KEY (ServiceName, SpanName, toDateTime(Timestamp))
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1
