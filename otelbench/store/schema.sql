-- otelbench span store, DuckDB dialect.
--
-- otel_traces has the column names, order and meaning of the OpenTelemetry Collector ClickHouse
-- exporter's table (exporter/clickhouseexporter, "otel_traces"): Timestamp is the span start in ns
-- (wall clock, UTC), Duration is in ns, attribute maps hold every value as a string (arrays as
-- JSON text, as the exporter's AsString() writes them), Events and Links are the exporter's Nested
-- columns flattened into parallel arrays, exactly how ClickHouse exposes "Events.Timestamp" etc.
CREATE TABLE IF NOT EXISTS otel_traces (
    "Timestamp"          TIMESTAMP_NS NOT NULL,
    "TraceId"            VARCHAR NOT NULL,
    "SpanId"             VARCHAR NOT NULL,
    "ParentSpanId"       VARCHAR NOT NULL,
    "TraceState"         VARCHAR NOT NULL,
    "SpanName"           VARCHAR NOT NULL,
    "SpanKind"           VARCHAR NOT NULL,
    "ServiceName"        VARCHAR NOT NULL,
    "ResourceAttributes" MAP(VARCHAR, VARCHAR) NOT NULL,
    "ScopeName"          VARCHAR NOT NULL,
    "ScopeVersion"       VARCHAR NOT NULL,
    "SpanAttributes"     MAP(VARCHAR, VARCHAR) NOT NULL,
    "Duration"           UBIGINT NOT NULL,
    "StatusCode"         VARCHAR NOT NULL,
    "StatusMessage"      VARCHAR NOT NULL,
    "Events.Timestamp"   TIMESTAMP_NS[] NOT NULL,
    "Events.Name"        VARCHAR[] NOT NULL,
    "Events.Attributes"  MAP(VARCHAR, VARCHAR)[] NOT NULL,
    "Links.TraceId"      VARCHAR[] NOT NULL,
    "Links.SpanId"       VARCHAR[] NOT NULL,
    "Links.TraceState"   VARCHAR[] NOT NULL,
    "Links.Attributes"   MAP(VARCHAR, VARCHAR)[] NOT NULL
);

-- Identifies the file as an otelbench store and records its schema version.
CREATE TABLE IF NOT EXISTS otelbench_meta (
    "key"   VARCHAR PRIMARY KEY,
    "value" VARCHAR NOT NULL
);
