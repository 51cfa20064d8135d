"""Ready-made scorers, each a factory returning a configured ``Scorer`` (Mastra's prebuilt set)."""

from scoring.prebuilt.answer_relevancy import create_answer_relevancy_scorer
from scoring.prebuilt.answer_similarity import create_answer_similarity_scorer
from scoring.prebuilt.bias import create_bias_scorer
from scoring.prebuilt.checks import (
    create_called_tool_check,
    create_did_not_call_check,
    create_equals_check,
    create_excludes_check,
    create_includes_check,
    create_matches_check,
    create_max_tool_calls_check,
    create_no_tool_errors_check,
    create_similarity_check,
    create_tool_order_check,
    create_used_no_tools_check,
)
from scoring.prebuilt.classifier import (
    create_factuality_scorer,
    create_humor_scorer,
    create_possible_scorer,
    create_summary_scorer,
    create_translation_scorer,
)
from scoring.prebuilt.completeness import create_completeness_scorer
from scoring.prebuilt.content_similarity import create_content_similarity_scorer
from scoring.prebuilt.context_precision import create_context_precision_scorer
from scoring.prebuilt.context_recall import create_context_recall_scorer
from scoring.prebuilt.context_relevance import create_context_relevance_scorer
from scoring.prebuilt.faithfulness import create_faithfulness_scorer
from scoring.prebuilt.hallucination import create_hallucination_scorer
from scoring.prebuilt.heuristics import (
    create_exact_match_scorer,
    create_levenshtein_scorer,
    create_numeric_diff_scorer,
)
from scoring.prebuilt.json_diff import create_json_diff_scorer
from scoring.prebuilt.keyword_coverage import create_keyword_coverage_scorer
from scoring.prebuilt.list_contains import create_list_contains_scorer
from scoring.prebuilt.moderation import create_moderation_scorer
from scoring.prebuilt.multi_turn_judge import create_multi_turn_judge_scorer
from scoring.prebuilt.noise_sensitivity import create_noise_sensitivity_scorer
from scoring.prebuilt.prompt_alignment import create_prompt_alignment_scorer
from scoring.prebuilt.ragas_answer_correctness import create_ragas_answer_correctness_scorer
from scoring.prebuilt.ragas_answer_relevancy import create_ragas_answer_relevancy_scorer
from scoring.prebuilt.ragas_answer_similarity import create_ragas_answer_similarity_scorer
from scoring.prebuilt.ragas_context_entity_recall import create_ragas_context_entity_recall_scorer
from scoring.prebuilt.ragas_context_precision import create_ragas_context_precision_scorer
from scoring.prebuilt.ragas_context_recall import create_ragas_context_recall_scorer
from scoring.prebuilt.ragas_context_relevancy import create_ragas_context_relevancy_scorer
from scoring.prebuilt.rubric import create_rubric_scorer
from scoring.prebuilt.summarization import create_summarization_scorer
from scoring.prebuilt.textual_difference import create_textual_difference_scorer
from scoring.prebuilt.tone import create_tone_scorer
from scoring.prebuilt.tool_call_accuracy import create_tool_call_accuracy_scorer_code
from scoring.prebuilt.tool_call_accuracy_llm import create_tool_call_accuracy_scorer_llm
from scoring.prebuilt.toxicity import create_toxicity_scorer
from scoring.prebuilt.trajectory import create_trajectory_scorer_code
from scoring.prebuilt.trajectory_accuracy import create_trajectory_accuracy_scorer_code
from scoring.prebuilt.trajectory_accuracy_llm import create_trajectory_accuracy_scorer_llm
from scoring.prebuilt.voltagent_tool_call_accuracy import create_voltagent_tool_call_accuracy_scorer

__all__ = [
    "create_called_tool_check",
    "create_did_not_call_check",
    "create_equals_check",
    "create_excludes_check",
    "create_includes_check",
    "create_matches_check",
    "create_max_tool_calls_check",
    "create_no_tool_errors_check",
    "create_similarity_check",
    "create_tool_order_check",
    "create_used_no_tools_check",
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
    "create_tool_call_accuracy_scorer_llm",
    "create_trajectory_accuracy_scorer_code",
    "create_trajectory_scorer_code",
    "create_trajectory_accuracy_scorer_llm",
    "create_noise_sensitivity_scorer",
    "create_prompt_alignment_scorer",
    "create_answer_relevancy_scorer",
    "create_answer_similarity_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_bias_scorer",
    "create_toxicity_scorer",
    "create_context_precision_scorer",
    "create_context_relevance_scorer",
    "create_context_recall_scorer",
    "create_factuality_scorer",
    "create_summary_scorer",
    "create_translation_scorer",
    "create_humor_scorer",
    "create_possible_scorer",
    "create_moderation_scorer",
    "create_ragas_answer_correctness_scorer",
    "create_ragas_answer_relevancy_scorer",
    "create_ragas_context_precision_scorer",
    "create_ragas_context_recall_scorer",
    "create_ragas_context_relevancy_scorer",
    "create_rubric_scorer",
    "create_summarization_scorer",
    "create_multi_turn_judge_scorer",
    "create_ragas_context_entity_recall_scorer",
    "create_ragas_answer_similarity_scorer",
    "create_voltagent_tool_call_accuracy_scorer",
]
