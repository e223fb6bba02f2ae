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

-- Metrics, shaped like the exporter's otel_metrics_gauge / otel_metrics_sum /
-- otel_metrics_histogram (exporter/clickhouseexporter/internal/sql_templates/metrics_*_table.sql):
-- same column names and order. Differences: the histogram's optional Sum, Min and Max are NULL when
-- the data point leaves them unset (the exporter writes 0), and an exemplar without a trace or span
-- id has '' there (the exporter writes zeros in hex). Exponential histograms and summaries are not
-- stored.
CREATE TABLE IF NOT EXISTS otel_metrics_gauge (
    "ResourceAttributes"            MAP(VARCHAR, VARCHAR) NOT NULL,
    "ResourceSchemaUrl"             VARCHAR NOT NULL,
    "ScopeName"                     VARCHAR NOT NULL,
    "ScopeVersion"                  VARCHAR NOT NULL,
    "ScopeAttributes"               MAP(VARCHAR, VARCHAR) NOT NULL,
    "ScopeDroppedAttrCount"         UINTEGER NOT NULL,
    "ScopeSchemaUrl"                VARCHAR NOT NULL,
    "ServiceName"                   VARCHAR NOT NULL,
    "MetricName"                    VARCHAR NOT NULL,
    "MetricDescription"             VARCHAR NOT NULL,
    "MetricUnit"                    VARCHAR NOT NULL,
    "Attributes"                    MAP(VARCHAR, VARCHAR) NOT NULL,
    "StartTimeUnix"                 TIMESTAMP_NS NOT NULL,
    "TimeUnix"                      TIMESTAMP_NS NOT NULL,
    "Value"                         DOUBLE NOT NULL,
    "Flags"                         UINTEGER NOT NULL,
    "Exemplars.FilteredAttributes"  MAP(VARCHAR, VARCHAR)[] NOT NULL,
    "Exemplars.TimeUnix"            TIMESTAMP_NS[] NOT NULL,
    "Exemplars.Value"               DOUBLE[] NOT NULL,
    "Exemplars.SpanId"              VARCHAR[] NOT NULL,
    "Exemplars.TraceId"             VARCHAR[] NOT NULL
);

CREATE TABLE IF NOT EXISTS otel_metrics_sum (
    "ResourceAttributes"            MAP(VARCHAR, VARCHAR) NOT NULL,
    "ResourceSchemaUrl"             VARCHAR NOT NULL,
    "ScopeName"                     VARCHAR NOT NULL,
    "ScopeVersion"                  VARCHAR NOT NULL,
    "ScopeAttributes"               MAP(VARCHAR, VARCHAR) NOT NULL,
    "ScopeDroppedAttrCount"         UINTEGER NOT NULL,
    "ScopeSchemaUrl"                VARCHAR NOT NULL,
    "ServiceName"                   VARCHAR NOT NULL,
    "MetricName"                    VARCHAR NOT NULL,
    "MetricDescription"             VARCHAR NOT NULL,
    "MetricUnit"                    VARCHAR NOT NULL,
    "Attributes"                    MAP(VARCHAR, VARCHAR) NOT NULL,
    "StartTimeUnix"                 TIMESTAMP_NS NOT NULL,
    "TimeUnix"                      TIMESTAMP_NS NOT NULL,
    "Value"                         DOUBLE NOT NULL,
    "Flags"                         UINTEGER NOT NULL,
    "Exemplars.FilteredAttributes"  MAP(VARCHAR, VARCHAR)[] NOT NULL,
    "Exemplars.TimeUnix"            TIMESTAMP_NS[] NOT NULL,
    "Exemplars.Value"               DOUBLE[] NOT NULL,
    "Exemplars.SpanId"              VARCHAR[] NOT NULL,
    "Exemplars.TraceId"             VARCHAR[] NOT NULL,
    "AggregationTemporality"        INTEGER NOT NULL,
    "IsMonotonic"                   BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS otel_metrics_histogram (
    "ResourceAttributes"            MAP(VARCHAR, VARCHAR) NOT NULL,
    "ResourceSchemaUrl"             VARCHAR NOT NULL,
    "ScopeName"                     VARCHAR NOT NULL,
    "ScopeVersion"                  VARCHAR NOT NULL,
    "ScopeAttributes"               MAP(VARCHAR, VARCHAR) NOT NULL,
    "ScopeDroppedAttrCount"         UINTEGER NOT NULL,
    "ScopeSchemaUrl"                VARCHAR NOT NULL,
    "ServiceName"                   VARCHAR NOT NULL,
    "MetricName"                    VARCHAR NOT NULL,
    "MetricDescription"             VARCHAR NOT NULL,
    "MetricUnit"                    VARCHAR NOT NULL,
    "Attributes"                    MAP(VARCHAR, VARCHAR) NOT NULL,
    "StartTimeUnix"                 TIMESTAMP_NS NOT NULL,
    "TimeUnix"                      TIMESTAMP_NS NOT NULL,
    "Count"                         UBIGINT NOT NULL,
    "Sum"                           DOUBLE,
    "BucketCounts"                  UBIGINT[] NOT NULL,
    "ExplicitBounds"                DOUBLE[] NOT NULL,
    "Exemplars.FilteredAttributes"  MAP(VARCHAR, VARCHAR)[] NOT NULL,
    "Exemplars.TimeUnix"            TIMESTAMP_NS[] NOT NULL,
    "Exemplars.Value"               DOUBLE[] NOT NULL,
    "Exemplars.SpanId"              VARCHAR[] NOT NULL,
    "Exemplars.TraceId"             VARCHAR[] NOT NULL,
    "Flags"                         UINTEGER NOT NULL,
    "Min"                           DOUBLE,
    "Max"                           DOUBLE,
    "AggregationTemporality"        INTEGER NOT NULL
);
