-- How well each scorer agrees with the people who label its units: one row per scorer per agreement
-- pass, over the window of scores it names (scoring time), with the pairs it found (a human annotation
-- and the score of the same trace, span and scorer id), Cohen's kappa for labels, Spearman's rho and the
-- mean absolute error for values, each with its confidence interval, the same for the window before,
-- the one-sided p-value of a drop against it, and the state: ok, below (under a set level), dropped
-- (significantly worse than the window before) or insufficient (too few pairs). NaN where a measure
-- has too few pairs. Dashboards and alert rules read the newest row of each scorer (argMax on CheckedAt).

CREATE TABLE IF NOT EXISTS {database}.judge_agreement (
    CheckedAt DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    ScorerId LowCardinality(String) CODEC(ZSTD(1)),
    WindowStart DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    WindowEnd DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    Annotators UInt32,
    LabelPairs UInt64 CODEC(T64, ZSTD(1)),
    Kappa Float64 CODEC(ZSTD(1)),
    KappaLow Float64 CODEC(ZSTD(1)),
    KappaHigh Float64 CODEC(ZSTD(1)),
    ScorePairs UInt64 CODEC(T64, ZSTD(1)),
    Spearman Float64 CODEC(ZSTD(1)),
    SpearmanLow Float64 CODEC(ZSTD(1)),
    SpearmanHigh Float64 CODEC(ZSTD(1)),
    Mae Float64 CODEC(ZSTD(1)),
    MaeLow Float64 CODEC(ZSTD(1)),
    MaeHigh Float64 CODEC(ZSTD(1)),
    PreviousLabelPairs UInt64 CODEC(T64, ZSTD(1)),
    PreviousKappa Float64 CODEC(ZSTD(1)),
    PreviousScorePairs UInt64 CODEC(T64, ZSTD(1)),
    PreviousSpearman Float64 CODEC(ZSTD(1)),
    PreviousMae Float64 CODEC(ZSTD(1)),
    DropPValue Float64 CODEC(ZSTD(1)),
    State LowCardinality(String) CODEC(ZSTD(1)),
    Reasons Array(String) CODEC(ZSTD(1))
) ENGINE = MergeTree
PARTITION BY toYYYYMM(CheckedAt)
ORDER BY (ScorerId, CheckedAt)
TTL toDateTime(CheckedAt) + INTERVAL 90 DAY;
