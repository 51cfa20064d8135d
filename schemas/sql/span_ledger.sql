-- tracescore's own typed copy of every accepted span and log record, with the time it was accepted.
-- It is the truth the scorer recovers from: otel_traces keeps attribute values as strings (the
-- collector's schema), so a trace is reassembled from these bodies (the span or record as JSON, typed
-- as it arrived). Arrived is stamped by the group commit that stored the item; a trace is undecided
-- while it has items that arrived after its last trace_done row.

CREATE TABLE IF NOT EXISTS {database}.span_ledger (
    TraceId String CODEC(ZSTD(1)),
    Arrived DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Kind Enum8('span' = 1, 'log' = 2),
    SpanId String CODEC(ZSTD(1)),
    EndedRoot UInt8,
    Body String CODEC(ZSTD(3)),
    INDEX idx_arrived Arrived TYPE minmax GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Arrived)
ORDER BY (TraceId, Arrived)
SETTINGS index_granularity = 8192;
