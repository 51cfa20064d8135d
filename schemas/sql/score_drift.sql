-- What each drift pass found: one row per (scorer, service, agent) series per pass, with the windows
-- compared, their sizes and every statistic, the series' p-value (the smallest of its tests, adjusted
-- for all tests of the pass: Benjamini-Hochberg), the effect that decided it, and its state.
-- State: drifted, ok, or insufficient (too few scores in a window to test). Dashboards and alert rules
-- read the newest row of each series (argMax on CheckedAt) of Kind 'drift'.
-- Kind 'version_change' rows say a series' span holds scores of an earlier scorer version
-- (PreviousVersion) than its current one (ScorerVersion, since VersionChangedAt): Baseline* describe
-- the earlier version's scores, Window* the current one's, MannWhitneyPValue the shift; never drifted.

CREATE TABLE IF NOT EXISTS {database}.score_drift (
    CheckedAt DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    BaselineStart DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    BaselineEnd DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    WindowStart DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    WindowEnd DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    BaselineN UInt64 CODEC(T64, ZSTD(1)),
    WindowN UInt64 CODEC(T64, ZSTD(1)),
    BaselineMean Float64 CODEC(ZSTD(1)),
    WindowMean Float64 CODEC(ZSTD(1)),
    BaselineSd Float64 CODEC(ZSTD(1)),
    WindowSd Float64 CODEC(ZSTD(1)),
    MeanShiftSd Float64 CODEC(ZSTD(1)),
    KsStatistic Float64 CODEC(ZSTD(1)),
    KsPValue Float64 CODEC(ZSTD(1)),
    MannWhitneyPValue Float64 CODEC(ZSTD(1)),
    Psi Float64 CODEC(ZSTD(1)),
    PsiPValue Float64 CODEC(ZSTD(1)),
    BaselinePassRate Float64 CODEC(ZSTD(1)),
    WindowPassRate Float64 CODEC(ZSTD(1)),
    PassRatePValue Float64 CODEC(ZSTD(1)),
    BaselineFailureRate Float64 CODEC(ZSTD(1)),
    WindowFailureRate Float64 CODEC(ZSTD(1)),
    FailureRatePValue Float64 CODEC(ZSTD(1)),
    Cusum Float64 CODEC(ZSTD(1)),
    CusumAlarm UInt8,
    PValue Float64 CODEC(ZSTD(1)),
    Effect Float64 CODEC(ZSTD(1)),
    Drifted UInt8,
    Severity LowCardinality(String) CODEC(ZSTD(1)),
    State LowCardinality(String) CODEC(ZSTD(1)),
    Reasons Array(String) CODEC(ZSTD(1)),
    Kind LowCardinality(String) DEFAULT 'drift' CODEC(ZSTD(1)),
    ScorerVersion LowCardinality(String) CODEC(ZSTD(1)),
    PreviousVersion LowCardinality(String) CODEC(ZSTD(1)),
    VersionChangedAt Nullable(DateTime64(3, 'UTC')) CODEC(ZSTD(1))
) ENGINE = MergeTree
PARTITION BY toYYYYMM(CheckedAt)
ORDER BY (ScorerId, ServiceName, AgentName, CheckedAt)
TTL toDateTime(CheckedAt) + INTERVAL 90 DAY;

-- Stores made before drift compared scorer versions: their rows are drift findings of an unknown version.
ALTER TABLE {database}.score_drift
    ADD COLUMN IF NOT EXISTS Kind LowCardinality(String) DEFAULT 'drift' CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS ScorerVersion LowCardinality(String) CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS PreviousVersion LowCardinality(String) CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS VersionChangedAt Nullable(DateTime64(3, 'UTC')) CODEC(ZSTD(1));

-- Every drift notification attempted: what was sent where, and whether it arrived.
CREATE TABLE IF NOT EXISTS {database}.drift_notifications (
    SentAt DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Webhook LowCardinality(String) CODEC(ZSTD(1)),
    Kind LowCardinality(String) CODEC(ZSTD(1)),
    Series Array(String) CODEC(ZSTD(1)),
    Attempts UInt16,
    Delivered UInt8,
    Error String CODEC(ZSTD(1)),
    Payload String CODEC(ZSTD(1))
) ENGINE = MergeTree
PARTITION BY toYYYYMM(SentAt)
ORDER BY (Webhook, SentAt)
TTL toDateTime(SentAt) + INTERVAL 90 DAY;
