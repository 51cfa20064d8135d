"""Ready-made scorers, each a factory returning a configured ``Scorer`` (Mastra's prebuilt set)."""

from scoring.prebuilt.completeness import create_completeness_scorer
from scoring.prebuilt.content_similarity import create_content_similarity_scorer
from scoring.prebuilt.heuristics import (
    create_exact_match_scorer,
    create_levenshtein_scorer,
    create_numeric_diff_scorer,
)
from scoring.prebuilt.json_diff import create_json_diff_scorer
from scoring.prebuilt.keyword_coverage import create_keyword_coverage_scorer
from scoring.prebuilt.list_contains import create_list_contains_scorer
from scoring.prebuilt.textual_difference import create_textual_difference_scorer
from scoring.prebuilt.tone import create_tone_scorer
from scoring.prebuilt.tool_call_accuracy import create_tool_call_accuracy_scorer_code

__all__ = [
    "create_completeness_scorer",
    "create_exact_match_scorer",
    "create_json_diff_scorer",
    "create_keyword_coverage_scorer",
    "create_levenshtein_scorer",
    "create_list_contains_scorer",
    "create_numeric_diff_scorer",
    "create_tone_scorer",
    "create_content_similarity_scorer",
    "create_textual_difference_scorer",
    "create_tool_call_accuracy_scorer_code",
]
