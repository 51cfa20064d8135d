-- The runs of each conversation (target: session rules; docs/sessions.md): one row per run that carries
-- a session id, written just before its round's trace_done row, so a round marked done in trace_done
-- always has its run here. Arrived is when the run's round was decided (a session is idle from its last
-- decided run on); a later round of the same run replaces its row (the newer Arrived wins). RunStart
-- orders the turns.

CREATE TABLE IF NOT EXISTS {database}.session_runs (
    SessionId String CODEC(ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    RunStart DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Arrived DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1))
) ENGINE = ReplacingMergeTree(Arrived)
ORDER BY (SessionId, TraceId, SpanId)
SETTINGS index_granularity = 8192;
