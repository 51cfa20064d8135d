-- Human labels: one row per (trace, span, name, annotator). A person who labels the same unit again
-- under the same name replaces their earlier label: ReplacingMergeTree keeps the row with the highest
-- Version (when the label was given, in ns; on a tie the last insert), and every read goes through
-- FINAL. AnnotationId is derived from the key, so a label sent twice (an OTLP retry, a replay) is one
-- row. Name is the scorer id the label judges alongside; Value is NULL for a label without a number.
-- Source: api (POST /api/annotations) or otlp (gen_ai.evaluation.result with an annotator).

CREATE TABLE IF NOT EXISTS {database}.annotations (
    AnnotationId String CODEC(ZSTD(1)),
    Timestamp DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    Name LowCardinality(String) CODEC(ZSTD(1)),
    Value Nullable(Float64) CODEC(ZSTD(1)),
    Label LowCardinality(String) CODEC(ZSTD(1)),
    Annotator String CODEC(ZSTD(1)),
    Comment String CODEC(ZSTD(1)),
    Source LowCardinality(String) CODEC(ZSTD(1)),
    Stored DateTime64(9, 'UTC') CODEC(Delta(8), ZSTD(1)),
    Version UInt64 CODEC(ZSTD(1)),
    INDEX idx_name Name TYPE set(0) GRANULARITY 4
) ENGINE = ReplacingMergeTree(Version)
ORDER BY (TraceId, SpanId, Name, Annotator)
SETTINGS index_granularity = 8192;
