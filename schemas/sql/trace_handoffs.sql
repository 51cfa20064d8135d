-- Traces handed from one replica to the replica that owns them: items of a trace stored by a replica
-- that does not own it (a load balancer or a Kafka partition sent them there), and traces released
-- when the live replicas change. The owner reads its rows every second and assembles those traces from
-- span_ledger. Written in the same group commit as the items, so an acknowledged item is never left
-- without an owner that knows of it.

CREATE TABLE IF NOT EXISTS {database}.trace_handoffs (
    Owner LowCardinality(String),
    Arrived DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    First DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Root UInt8,
    Sender LowCardinality(String)
) ENGINE = MergeTree()
PARTITION BY toDate(Arrived)
ORDER BY (Owner, Arrived)
TTL toDateTime(Arrived) + INTERVAL 7 DAY;
