"""Ready-made scorers, by family; each module registers its scorers where they are defined.

Import a factory from here (``from tracescore.scoring.prebuilt import create_textual_difference_scorer``)
or from its module. Type checkers read each factory's own signature from the imports below; at run
time a name is looked up in the registry on first use, so importing this package imports no scorer.
A test checks that ``__all__`` names every registered factory and that type checkers see each one's
signature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracescore.scoring.prebuilt.registry import ScorerFactory, find_factory

if TYPE_CHECKING:
    from tracescore.scoring.prebuilt.checks.output_checks import (
        create_equals_check,
        create_excludes_check,
        create_includes_check,
        create_matches_check,
        create_similarity_check,
    )
    from tracescore.scoring.prebuilt.checks.tool_checks import (
        create_called_tool_check,
        create_did_not_call_check,
        create_max_tool_calls_check,
        create_no_tool_errors_check,
        create_tool_order_check,
        create_used_no_tools_check,
    )
    from tracescore.scoring.prebuilt.classifiers.autoevals_classifiers import (
        create_factuality_scorer,
        create_humor_scorer,
        create_possible_scorer,
        create_summary_scorer,
        create_translation_scorer,
    )
    from tracescore.scoring.prebuilt.classifiers.moderation import create_moderation_scorer
    from tracescore.scoring.prebuilt.heuristic.autoevals_heuristics import (
        create_exact_match_scorer,
        create_levenshtein_scorer,
        create_numeric_diff_scorer,
    )
    from tracescore.scoring.prebuilt.heuristic.completeness import create_completeness_scorer
    from tracescore.scoring.prebuilt.heuristic.content_similarity import create_content_similarity_scorer
    from tracescore.scoring.prebuilt.heuristic.conversation_heuristics import (
        create_conversation_length_scorer,
        create_conversation_turns_scorer,
        create_repeated_requests_scorer,
        create_time_to_resolution_scorer,
        create_tool_error_rate_scorer,
    )
    from tracescore.scoring.prebuilt.heuristic.json_diff import create_json_diff_scorer
    from tracescore.scoring.prebuilt.heuristic.keyword_coverage import create_keyword_coverage_scorer
    from tracescore.scoring.prebuilt.heuristic.list_contains import create_list_contains_scorer
    from tracescore.scoring.prebuilt.heuristic.textual_difference import create_textual_difference_scorer
    from tracescore.scoring.prebuilt.heuristic.tone import create_tone_scorer
    from tracescore.scoring.prebuilt.mastra.answer_relevancy import create_answer_relevancy_scorer
    from tracescore.scoring.prebuilt.mastra.answer_similarity import create_answer_similarity_scorer
    from tracescore.scoring.prebuilt.mastra.bias import create_bias_scorer
    from tracescore.scoring.prebuilt.mastra.context_precision import create_context_precision_scorer
    from tracescore.scoring.prebuilt.mastra.context_recall import create_context_recall_scorer
    from tracescore.scoring.prebuilt.mastra.context_relevance import create_context_relevance_scorer
    from tracescore.scoring.prebuilt.mastra.faithfulness import create_faithfulness_scorer
    from tracescore.scoring.prebuilt.mastra.hallucination import create_hallucination_scorer
    from tracescore.scoring.prebuilt.mastra.multi_turn_judge import create_multi_turn_judge_scorer
    from tracescore.scoring.prebuilt.mastra.noise_sensitivity import create_noise_sensitivity_scorer
    from tracescore.scoring.prebuilt.mastra.prompt_alignment import create_prompt_alignment_scorer
    from tracescore.scoring.prebuilt.mastra.rubric import create_rubric_scorer
    from tracescore.scoring.prebuilt.mastra.summarization import create_summarization_scorer
    from tracescore.scoring.prebuilt.mastra.toxicity import create_toxicity_scorer
    from tracescore.scoring.prebuilt.ragas.ragas_answer_correctness import (
        create_ragas_answer_correctness_scorer,
    )
    from tracescore.scoring.prebuilt.ragas.ragas_answer_relevancy import create_ragas_answer_relevancy_scorer
    from tracescore.scoring.prebuilt.ragas.ragas_answer_similarity import (
        create_ragas_answer_similarity_scorer,
    )
    from tracescore.scoring.prebuilt.ragas.ragas_context_entity_recall import (
        create_ragas_context_entity_recall_scorer,
    )
    from tracescore.scoring.prebuilt.ragas.ragas_context_precision import (
        create_ragas_context_precision_scorer,
    )
    from tracescore.scoring.prebuilt.ragas.ragas_context_recall import create_ragas_context_recall_scorer
    from tracescore.scoring.prebuilt.ragas.ragas_context_relevancy import (
        create_ragas_context_relevancy_scorer,
    )
    from tracescore.scoring.prebuilt.trajectory.tool_call_accuracy import (
        create_tool_call_accuracy_scorer_code,
    )
    from tracescore.scoring.prebuilt.trajectory.tool_call_accuracy_llm import (
        create_tool_call_accuracy_scorer_llm,
    )
    from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy import (
        create_trajectory_accuracy_scorer_code,
    )
    from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy_llm import (
        create_trajectory_accuracy_scorer_llm,
    )
    from tracescore.scoring.prebuilt.trajectory.unified import create_trajectory_scorer_code
    from tracescore.scoring.prebuilt.trajectory.voltagent_tool_call_accuracy import (
        create_voltagent_tool_call_accuracy_scorer,
    )

__all__ = [
    "create_answer_relevancy_scorer",
    "create_answer_similarity_scorer",
    "create_bias_scorer",
    "create_called_tool_check",
    "create_completeness_scorer",
    "create_content_similarity_scorer",
    "create_context_precision_scorer",
    "create_context_recall_scorer",
    "create_context_relevance_scorer",
    "create_conversation_length_scorer",
    "create_conversation_turns_scorer",
    "create_did_not_call_check",
    "create_equals_check",
    "create_exact_match_scorer",
    "create_excludes_check",
    "create_factuality_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_humor_scorer",
    "create_includes_check",
    "create_json_diff_scorer",
    "create_keyword_coverage_scorer",
    "create_levenshtein_scorer",
    "create_list_contains_scorer",
    "create_matches_check",
    "create_max_tool_calls_check",
    "create_moderation_scorer",
    "create_multi_turn_judge_scorer",
    "create_no_tool_errors_check",
    "create_noise_sensitivity_scorer",
    "create_numeric_diff_scorer",
    "create_possible_scorer",
    "create_prompt_alignment_scorer",
    "create_ragas_answer_correctness_scorer",
    "create_ragas_answer_relevancy_scorer",
    "create_ragas_answer_similarity_scorer",
    "create_ragas_context_entity_recall_scorer",
    "create_ragas_context_precision_scorer",
    "create_ragas_context_recall_scorer",
    "create_ragas_context_relevancy_scorer",
    "create_repeated_requests_scorer",
    "create_rubric_scorer",
    "create_similarity_check",
    "create_summarization_scorer",
    "create_summary_scorer",
    "create_textual_difference_scorer",
    "create_time_to_resolution_scorer",
    "create_tone_scorer",
    "create_tool_call_accuracy_scorer_code",
    "create_tool_call_accuracy_scorer_llm",
    "create_tool_error_rate_scorer",
    "create_tool_order_check",
    "create_toxicity_scorer",
    "create_trajectory_accuracy_scorer_code",
    "create_trajectory_accuracy_scorer_llm",
    "create_trajectory_scorer_code",
    "create_translation_scorer",
    "create_used_no_tools_check",
    "create_voltagent_tool_call_accuracy_scorer",
]


def __getattr__(name: str) -> ScorerFactory:
    factory = find_factory(name)
    if factory is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return factory


def __dir__() -> list[str]:
    return __all__
