-- One row per completed scoring of a session (docs/sessions.md): every run of it that arrived up to Through is scored
-- (its session scores and decisions written, superseded rows removed). Written last, so a session
-- with a run that arrived after max(Through) is still to be scored.
CREATE TABLE IF NOT EXISTS {database}.session_done (
    SessionId String CODEC(ZSTD(1)),
    Through DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Decided DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(Through)
ORDER BY SessionId
SETTINGS index_granularity = 8192;
