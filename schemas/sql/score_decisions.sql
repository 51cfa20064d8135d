-- Why each (run, scorer) pair was scored, sampled out, filtered, skipped or failed. One current
-- decision per key: ReplacingMergeTree on Version (created_at in ns), read through FINAL.

CREATE TABLE IF NOT EXISTS {database}.score_decisions (
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    Decision LowCardinality(String) CODEC(ZSTD(1)),
    Detail String CODEC(ZSTD(1)),
    SampleRate Float64 CODEC(ZSTD(1)),
    Source LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    SpanStart DateTime64(9, 'UTC') DEFAULT Timestamp CODEC(Delta(8), ZSTD(1)),
    Version UInt64 CODEC(ZSTD(1)),
    INDEX idx_timestamp Timestamp TYPE minmax GRANULARITY 1
) ENGINE = ReplacingMergeTree(Version)
ORDER BY (TraceId, SpanId, ScorerId)
SETTINGS index_granularity = 8192;

-- Stores made before the run's names, SpanStart and SessionId (as in scores) were kept get them.
ALTER TABLE {database}.score_decisions
    ADD COLUMN IF NOT EXISTS AgentName LowCardinality(String) CODEC(ZSTD(1)) AFTER Source,
    ADD COLUMN IF NOT EXISTS ServiceName LowCardinality(String) CODEC(ZSTD(1)) AFTER AgentName,
    ADD COLUMN IF NOT EXISTS SpanStart DateTime64(9, 'UTC') DEFAULT Timestamp CODEC(Delta(8), ZSTD(1))
        AFTER ServiceName,
    ADD COLUMN IF NOT EXISTS SessionId String DEFAULT '' CODEC(ZSTD(1)) AFTER Version;
