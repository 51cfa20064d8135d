-- Spans with their scores as span attributes, after the GenAI semantic conventions' evaluation result
-- (gen_ai.evaluation.result): every score of a span adds gen_ai.evaluation.<ScorerId>.score, .label
-- and .explanation to its SpanAttributes. Unscored spans keep their attributes unchanged. Scores are
-- read with FINAL so a replayed score appears once.

CREATE VIEW IF NOT EXISTS {database}.otel_traces_scored AS
SELECT
    t.* REPLACE (mapConcat(t.SpanAttributes, s.EvaluationAttributes) AS SpanAttributes)
FROM {database}.otel_traces AS t
LEFT JOIN (
    SELECT
        TraceId,
        SpanId,
        CAST(
            mapFromArrays(
                arrayFlatten(groupArray([
                    concat('gen_ai.evaluation.', ScorerId, '.score'),
                    concat('gen_ai.evaluation.', ScorerId, '.label'),
                    concat('gen_ai.evaluation.', ScorerId, '.explanation')
                ])),
                arrayFlatten(groupArray([toString(Score), toString(Label), Reason]))
            ),
            'Map(LowCardinality(String), String)'
        ) AS EvaluationAttributes
    FROM {database}.scores FINAL
    GROUP BY TraceId, SpanId
) AS s ON t.TraceId = s.TraceId AND t.SpanId = s.SpanId
-- A Map cannot be Nullable: unmatched spans must get an empty map whatever the server default is.
SETTINGS join_use_nulls = 0;
