-- Conversations: the runs sharing a session id (target: session rules; docs/sessions.md).
-- session_runs: one row per run that carries a session id, written before the run's round is scored,
-- so a round marked done in trace_done always has its run here. Arrived is when the run's round was
-- decided (a session is idle from its last decided run on); a later round of the same run replaces its
-- row (the newer Arrived wins). RunStart orders the turns.

CREATE TABLE IF NOT EXISTS {database}.session_runs (
    SessionId String CODEC(ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    RunStart DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Arrived DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1))
) ENGINE = ReplacingMergeTree(Arrived)
ORDER BY (SessionId, TraceId, SpanId)
SETTINGS index_granularity = 8192;

-- One row per completed scoring of a session: every run of it that arrived up to Through is scored
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
