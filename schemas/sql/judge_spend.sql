-- Judge spend per budget, replica and UTC clock hour: each replica replaces its own rows every few
-- seconds and reads the others', so judge budgets hold across replicas and restarts
-- (scoring/runtime/judge_budgets.py). Kept 3 days; budgets look back one day.

CREATE TABLE IF NOT EXISTS {database}.judge_spend (
    Budget LowCardinality(String),
    Replica String,
    Hour DateTime('UTC'),
    Calls UInt64,
    CostUsd Float64,
    Version UInt64
) ENGINE = ReplacingMergeTree(Version)
ORDER BY (Budget, Hour, Replica)
TTL Hour + INTERVAL 3 DAY;
