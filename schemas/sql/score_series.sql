-- Scores and decisions ordered for reads by (scorer, time): what dashboards and drift detection scan.
-- Each is a companion of its table, filled by a materialized view on every insert. Its key
-- (ScorerId, SpanStart, TraceId, SpanId) names the same (span, scorer) pair as the table's key, since
-- SpanStart is fixed by the span, so ReplacingMergeTree(Version) keeps the newest row of a pair here
-- too and reads through FINAL count each pair once. A pair's rows share SpanStart and so a partition:
-- FINAL need not merge across partitions.

CREATE TABLE IF NOT EXISTS {database}.scores_by_scorer (
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    SpanStart DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    Score Float64 CODEC(ZSTD(1)),
    Label LowCardinality(String) CODEC(ZSTD(1)),
    JudgeModel LowCardinality(String) CODEC(ZSTD(1)),
    InputTokens UInt64 CODEC(T64, ZSTD(1)),
    OutputTokens UInt64 CODEC(T64, ZSTD(1)),
    CostUsd Float64 CODEC(ZSTD(1)),
    LatencyMs Float64 CODEC(ZSTD(1)),
    Source LowCardinality(String) CODEC(ZSTD(1)),
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Version UInt64 CODEC(ZSTD(1)),
    ScorerVersion LowCardinality(String) CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(Version)
PARTITION BY toYYYYMM(SpanStart)
ORDER BY (ScorerId, SpanStart, TraceId, SpanId)
SETTINGS index_granularity = 8192;

-- Stores made before drift compared versions get the scorer's version (their earlier rows hold '').
ALTER TABLE {database}.scores_by_scorer
    ADD COLUMN IF NOT EXISTS ScorerVersion LowCardinality(String) CODEC(ZSTD(1)) AFTER Version;

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.scores_by_scorer_mv TO {database}.scores_by_scorer AS
SELECT ScorerId, SpanStart, TraceId, SpanId, ServiceName, AgentName, Score, Label, JudgeModel, InputTokens,
       OutputTokens, CostUsd, LatencyMs, Source, Timestamp, Version, ScorerVersion
FROM {database}.scores;

-- The view of a store made before it copied the scorer's version copies it from now on.
ALTER TABLE {database}.scores_by_scorer_mv MODIFY QUERY
SELECT ScorerId, SpanStart, TraceId, SpanId, ServiceName, AgentName, Score, Label, JudgeModel, InputTokens,
       OutputTokens, CostUsd, LatencyMs, Source, Timestamp, Version, ScorerVersion
FROM {database}.scores;

CREATE TABLE IF NOT EXISTS {database}.decisions_by_scorer (
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    SpanStart DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    Decision LowCardinality(String) CODEC(ZSTD(1)),
    Detail String CODEC(ZSTD(1)),
    Source LowCardinality(String) CODEC(ZSTD(1)),
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Version UInt64 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(Version)
PARTITION BY toYYYYMM(SpanStart)
ORDER BY (ScorerId, SpanStart, TraceId, SpanId)
SETTINGS index_granularity = 8192;

CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.decisions_by_scorer_mv TO {database}.decisions_by_scorer AS
SELECT ScorerId, SpanStart, TraceId, SpanId, ServiceName, AgentName, Decision, Detail, Source, Timestamp,
       Version
FROM {database}.score_decisions;
