-- One row per (span, scorer). Replays write the same key again: ReplacingMergeTree keeps the row with
-- the highest Version (the record's created_at in ns; on a tie the last insert), and every read goes
-- through FINAL so a replayed score is never counted twice, even before a background merge.
-- SpanStart is when the scored span started: the same on every replay, so the companion table
-- scores_by_scorer (score_series.sql) can order the same rows by (scorer, time) and still deduplicate.

CREATE TABLE IF NOT EXISTS {database}.scores (
    ScoreId String CODEC(ZSTD(1)),
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    ScorerVersion LowCardinality(String) CODEC(ZSTD(1)),
    Score Float64 CODEC(ZSTD(1)),
    Label LowCardinality(String) CODEC(ZSTD(1)),
    Reason String CODEC(ZSTD(1)),
    StepResults String CODEC(ZSTD(1)),
    JudgeModel LowCardinality(String) CODEC(ZSTD(1)),
    InputTokens UInt64 CODEC(T64, ZSTD(1)),
    OutputTokens UInt64 CODEC(T64, ZSTD(1)),
    CostUsd Float64 CODEC(ZSTD(1)),
    LatencyMs Float64 CODEC(ZSTD(1)),
    SampleRate Float64 CODEC(ZSTD(1)),
    Source LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    SpanStart DateTime64(9, 'UTC') DEFAULT Timestamp CODEC(Delta(8), ZSTD(1)),
    Version UInt64 CODEC(ZSTD(1)),
    INDEX idx_score_id ScoreId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_timestamp Timestamp TYPE minmax GRANULARITY 1
) ENGINE = ReplacingMergeTree(Version)
ORDER BY (TraceId, SpanId, ScorerId)
SETTINGS index_granularity = 8192;

-- Stores made before SpanStart existed get it; their rows read their Timestamp instead. SessionId: the
-- conversation of a session score (target: session), empty on every other row; older stores get it too.
ALTER TABLE {database}.scores ADD COLUMN IF NOT EXISTS SpanStart DateTime64(9, 'UTC') DEFAULT Timestamp
    CODEC(Delta(8), ZSTD(1)) AFTER ServiceName,
    ADD COLUMN IF NOT EXISTS SessionId String DEFAULT '' CODEC(ZSTD(1)) AFTER Version;
