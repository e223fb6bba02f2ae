-- store_bytes (ClickHouse dialect): the bytes on disk of {table_traces}'s active parts in the
-- store's database (the one the connection uses), i.e. the size the table's TTL bounds.
-- sum() over no parts is 0.
SELECT toInt64(sum(bytes_on_disk)) AS bytes
FROM system.parts
WHERE active AND database = currentDatabase() AND table = {table_traces:String}
