-- What the LLM judges of one (run, scorer) decision were sent and answered, kept when
-- scoring.record_judge_io is on: Exchanges is a JSON list of {model, operation, messages, answer,
-- error}, the prompts as sent (after redaction). One current row per key, as score_decisions:
-- ReplacingMergeTree on Version (the decision's created_at in ns), read through FINAL.

CREATE TABLE IF NOT EXISTS {database}.judge_io (
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    Decision LowCardinality(String) CODEC(ZSTD(1)),
    Exchanges String CODEC(ZSTD(3)),
    Version UInt64 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(Version)
ORDER BY (TraceId, SpanId, ScorerId)
SETTINGS index_granularity = 8192;
