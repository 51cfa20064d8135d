-- One row per decided assembly round of a trace: every run the trace's items up to Through (an
-- Arrived of span_ledger) complete has its decisions written. Written after the decisions, so a trace
-- with items that arrived after max(Through) is still to be scored.

CREATE TABLE IF NOT EXISTS {database}.trace_done (
    TraceId String CODEC(ZSTD(1)),
    Through DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Decided DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Reason LowCardinality(String) CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(Through)
ORDER BY TraceId
SETTINGS index_granularity = 8192;
