"""Where scores go besides the store: OTLP evaluation events (``evaluation_events``)."""

from tracescore.ingest.score_export.evaluation_events import (
    EvaluationEventExporter,
    ExportingScoreSink,
    exporting,
)

__all__ = ["EvaluationEventExporter", "ExportingScoreSink", "exporting"]
