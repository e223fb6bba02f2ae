-- _otel_traces_json: otel_traces as the collector's ClickHouse exporter creates it in its json
-- mode (exporter/clickhouseexporter/internal/sqltemplates/traces_json_table.sql, commit
-- 39f94831a58596011d18c28e6532fe5f31d03472: ResourceAttributes, SpanAttributes and the events'
-- and links' Attributes typed JSON), presented with the columns of its Map schema (schema.sql),
-- which every query reads: the runner reads this in place of each FROM otel_traces on such a
-- store (query.clickhouse). The exporter writes each attribute map as a JSON object of typed
-- values (json.Marshal of pdata's AsRaw); ClickHouse keeps each key as a path (a key with dots,
-- gen_ai.usage.input_tokens, is one path) and renders each value as text (JSONAllValues, in the
-- order of JSONAllPaths): numbers and booleans as the Map schema's AsString writes them (a
-- double in shortest form), integer and number arrays as JSON, and string arrays as ClickHouse
-- array text, made JSON here as AsString writes them (["length"]). A map-valued attribute comes
-- back as one key per leaf (a.b), and a null one is absent; otelbench reads neither. The maps
-- are built with one lambda: resource, span, then each event's and each link's attributes.
SELECT
    Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
    arrayMap(
        j -> mapFromArrays(JSONAllPaths(j), arrayMap(
            (p, v) -> if(JSONAllPathsWithTypes(j)[p] = 'Array(Nullable(String))',
                         toJSONString(CAST(v, 'Array(Nullable(String))')), v),
            JSONAllPaths(j), JSONAllValues(j))),
        arrayConcat([t.ResourceAttributes, t.SpanAttributes], t.`Events.Attributes`,
                    t.`Links.Attributes`)
    )                                                      AS attribute_maps,
    attribute_maps[1]                                      AS ResourceAttributes,
    ScopeName, ScopeVersion,
    attribute_maps[2]                                      AS SpanAttributes,
    Duration, StatusCode, StatusMessage,
    `Events.Timestamp`, `Events.Name`,
    arraySlice(attribute_maps, 3, length(`Events.Name`))   AS `Events.Attributes`,
    `Links.TraceId`, `Links.SpanId`, `Links.TraceState`,
    arraySlice(attribute_maps, 3 + length(`Events.Name`))  AS `Links.Attributes`
FROM otel_traces AS t
