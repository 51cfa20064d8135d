-- The durable low watermark of each scoring owner: every trace whose items all arrived before
-- Watermark is decided. Recovery scans span_ledger from there; newer rows replace older ones.

CREATE TABLE IF NOT EXISTS {database}.ingest_watermarks (
    Owner String,
    Watermark DateTime64(9, 'UTC'),
    Updated DateTime64(9, 'UTC')
) ENGINE = ReplacingMergeTree(Updated)
ORDER BY Owner;
