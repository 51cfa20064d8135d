"""Ready-made scorers, each a factory returning a configured ``Scorer`` (Mastra's prebuilt set)."""

from scoring.prebuilt.content_similarity import create_content_similarity_scorer
from scoring.prebuilt.textual_difference import create_textual_difference_scorer
from scoring.prebuilt.tool_call_accuracy import create_tool_call_accuracy_scorer_code

__all__ = [
    "create_content_similarity_scorer",
    "create_textual_difference_scorer",
    "create_tool_call_accuracy_scorer_code",
]
