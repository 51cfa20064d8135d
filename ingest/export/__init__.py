"""Where scores go besides the store: OTLP evaluation events (``evaluation_events``)."""

from tracescore.ingest.export.evaluation_events import EvaluationEventExporter, ExportingScoreSink, exporting

__all__ = ["EvaluationEventExporter", "ExportingScoreSink", "exporting"]
