"""Scorers by name: what a config rule or the CLI names (``textual-difference``) -> a built ``Scorer``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError, validate_call

from scoring.judge import Judge
from scoring.prebuilt import (
    create_answer_relevancy_scorer,
    create_answer_similarity_scorer,
    create_bias_scorer,
    create_called_tool_check,
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_context_precision_scorer,
    create_context_recall_scorer,
    create_context_relevance_scorer,
    create_did_not_call_check,
    create_equals_check,
    create_exact_match_scorer,
    create_excludes_check,
    create_factuality_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_humor_scorer,
    create_includes_check,
    create_json_diff_scorer,
    create_keyword_coverage_scorer,
    create_levenshtein_scorer,
    create_list_contains_scorer,
    create_matches_check,
    create_max_tool_calls_check,
    create_moderation_scorer,
    create_multi_turn_judge_scorer,
    create_no_tool_errors_check,
    create_noise_sensitivity_scorer,
    create_numeric_diff_scorer,
    create_possible_scorer,
    create_prompt_alignment_scorer,
    create_ragas_answer_correctness_scorer,
    create_ragas_answer_relevancy_scorer,
    create_ragas_answer_similarity_scorer,
    create_ragas_context_entity_recall_scorer,
    create_ragas_context_precision_scorer,
    create_ragas_context_recall_scorer,
    create_ragas_context_relevancy_scorer,
    create_rubric_scorer,
    create_similarity_check,
    create_summarization_scorer,
    create_summary_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
    create_tool_call_accuracy_scorer_code,
    create_tool_call_accuracy_scorer_llm,
    create_tool_order_check,
    create_toxicity_scorer,
    create_trajectory_accuracy_scorer_code,
    create_trajectory_accuracy_scorer_llm,
    create_trajectory_scorer_code,
    create_translation_scorer,
    create_used_no_tools_check,
    create_voltagent_tool_call_accuracy_scorer,
)
from scoring.scorer import Scorer

ScorerFactory = Callable[..., Scorer]

# Short name -> factory. The factory's keyword parameters are the scorer's options.
SCORERS: dict[str, ScorerFactory] = {
    "textual-difference": create_textual_difference_scorer,
    "content-similarity": create_content_similarity_scorer,
    "tool-call-accuracy-code": create_tool_call_accuracy_scorer_code,
    "trajectory-accuracy-code": create_trajectory_accuracy_scorer_code,
    "trajectory-code": create_trajectory_scorer_code,
    "completeness": create_completeness_scorer,
    "keyword-coverage": create_keyword_coverage_scorer,
    "tone": create_tone_scorer,
    # Mastra's quick checks (checks.includes, ...): the short name is Mastra's id
    "check-includes": create_includes_check,
    "check-excludes": create_excludes_check,
    "check-equals": create_equals_check,
    "check-matches": create_matches_check,
    "check-similarity": create_similarity_check,
    "check-called-tool": create_called_tool_check,
    "check-did-not-call": create_did_not_call_check,
    "check-tool-order": create_tool_order_check,
    "check-max-tool-calls": create_max_tool_calls_check,
    "check-used-no-tools": create_used_no_tools_check,
    "check-no-tool-errors": create_no_tool_errors_check,
    # autoevals heuristics, as VoltAgent's scorers.exactMatch etc. (they compare with ground_truth)
    "exact-match": create_exact_match_scorer,
    "levenshtein": create_levenshtein_scorer,
    "json-diff": create_json_diff_scorer,
    "list-contains": create_list_contains_scorer,
    "numeric-diff": create_numeric_diff_scorer,
    # LLM judges: the option ``judge`` is a Judge, a model string or a dict of Judge fields
    "prompt-alignment": create_prompt_alignment_scorer,
    "tool-call-accuracy-llm": create_tool_call_accuracy_scorer_llm,
    "trajectory-accuracy-llm": create_trajectory_accuracy_scorer_llm,
    "noise-sensitivity": create_noise_sensitivity_scorer,
    "answer-relevancy": create_answer_relevancy_scorer,
    "faithfulness": create_faithfulness_scorer,
    "hallucination": create_hallucination_scorer,
    "answer-similarity": create_answer_similarity_scorer,
    "bias": create_bias_scorer,
    "toxicity": create_toxicity_scorer,
    "context-precision": create_context_precision_scorer,
    "context-relevance": create_context_relevance_scorer,
    "context-recall": create_context_recall_scorer,
    # autoevals LLM classifiers and moderation, as VoltAgent's prebuilt scorers
    "factuality": create_factuality_scorer,
    "summary": create_summary_scorer,
    "translation": create_translation_scorer,
    "humor": create_humor_scorer,
    "possible": create_possible_scorer,
    "moderation": create_moderation_scorer,
    # RAGAS-style LLM scorers, as VoltAgent's (prefixed: Mastra has scorers of similar names)
    "ragas-answer-correctness": create_ragas_answer_correctness_scorer,
    "ragas-answer-relevancy": create_ragas_answer_relevancy_scorer,
    "ragas-context-precision": create_ragas_context_precision_scorer,
    "ragas-context-recall": create_ragas_context_recall_scorer,
    "ragas-context-relevancy": create_ragas_context_relevancy_scorer,
    "ragas-context-entity-recall": create_ragas_context_entity_recall_scorer,
    "ragas-answer-similarity": create_ragas_answer_similarity_scorer,
    # VoltAgent's code tool-call accuracy (its order check differs from Mastra's tool-call-accuracy-code)
    "voltagent-tool-call-accuracy": create_voltagent_tool_call_accuracy_scorer,
    # more Mastra LLM judges: a rubric checklist, summaries, whole conversations
    "rubric": create_rubric_scorer,
    "summarization": create_summarization_scorer,
    "multi-turn-judge": create_multi_turn_judge_scorer,
}

# A scorer's own id (what Mastra and the store call it) -> its short name.
SCORER_IDS: dict[str, str] = {
    "textual-difference-scorer": "textual-difference",
    "content-similarity-scorer": "content-similarity",
    "code-tool-call-accuracy-scorer": "tool-call-accuracy-code",
    "code-trajectory-accuracy-scorer": "trajectory-accuracy-code",
    "code-trajectory-scorer": "trajectory-code",
    "completeness-scorer": "completeness",
    "keyword-coverage-scorer": "keyword-coverage",
    "tone-scorer": "tone",
    "exactMatch": "exact-match",
    "jsonDiff": "json-diff",
    "listContains": "list-contains",
    "numericDiff": "numeric-diff",
    "prompt-alignment-scorer": "prompt-alignment",
    "llm-tool-call-accuracy-scorer": "tool-call-accuracy-llm",
    "llm-trajectory-accuracy-scorer": "trajectory-accuracy-llm",
    "noise-sensitivity-scorer": "noise-sensitivity",
    "answer-relevancy-scorer": "answer-relevancy",
    "faithfulness-scorer": "faithfulness",
    "hallucination-scorer": "hallucination",
    "answer-similarity-scorer": "answer-similarity",
    "bias-scorer": "bias",
    "toxicity-scorer": "toxicity",
    "context-precision-scorer": "context-precision",
    "context-relevance-scorer": "context-relevance",
    "context-recall-scorer": "context-recall",
    "answerCorrectness": "ragas-answer-correctness",
    "answerRelevancy": "ragas-answer-relevancy",
    "contextPrecision": "ragas-context-precision",
    "contextRecall": "ragas-context-recall",
    "contextRelevancy": "ragas-context-relevancy",
    "contextEntityRecall": "ragas-context-entity-recall",
    "answerSimilarity": "ragas-answer-similarity",
    "toolCallAccuracyCode": "voltagent-tool-call-accuracy",
    "rubric-scorer": "rubric",
    "summarization-scorer": "summarization",
    "multi-turn-judge-scorer": "multi-turn-judge",
}

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _snake(option: str) -> str:
    """``expectedToolOrder`` -> ``expected_tool_order``; snake_case names pass unchanged."""
    return _CAMEL_HUMP.sub("_", option).lower()


def as_judge(spec: Judge | str | Mapping[str, Any]) -> Judge:
    """The ``judge`` option of an LLM scorer: a Judge, a model string, or a dict of Judge fields
    (``{"model": ..., "api_base": ...}``, camelCase accepted)."""
    if isinstance(spec, Judge):
        return spec
    if isinstance(spec, str):
        return Judge(spec)
    if isinstance(spec, Mapping):
        try:
            return Judge(**{_snake(key): value for key, value in spec.items()})
        except TypeError as exc:  # an unknown or missing Judge field
            raise ValueError(f"invalid judge fields {sorted(spec)}: {exc}") from exc
    raise ValueError(f"judge must be a Judge, a model string or a dict, not {type(spec).__name__}")


def build_scorer(
    name_or_id: str,
    options: Mapping[str, Any] | None = None,
    *,
    registry: Mapping[str, ScorerFactory] | None = None,
    default_judge: Judge | str | Mapping[str, Any] | None = None,
) -> Scorer:
    """Build a scorer from its short name or id, with options in snake_case or Mastra camelCase.

    ``registry`` replaces ``SCORERS`` (looked up by its keys only), e.g. for an embedding
    application's own scorers or a test's. ``default_judge`` is the judge of an LLM scorer whose
    options name none (the service's ``scoring.judge``).
    """
    factories = SCORERS if registry is None else registry
    aliases = SCORER_IDS if registry is None else {}
    short = name_or_id if name_or_id in factories else aliases.get(name_or_id)
    if short is None:
        ids = {name: scorer_id for scorer_id, name in aliases.items()}
        known = ", ".join(f"{name} ({ids[name]})" if name in ids else name for name in factories)
        raise ValueError(f"unknown scorer {name_or_id!r}; available: {known}")
    factory = factories[short]
    accepted = list(inspect.signature(factory).parameters)
    kwargs: dict[str, Any] = {}
    for option, value in (options or {}).items():
        key = _snake(option)
        if key not in accepted:
            choices = ", ".join(accepted) or "none"
            raise ValueError(f"scorer {short!r} has no option {option!r}; its options: {choices}")
        if key in kwargs:
            raise ValueError(f"scorer {short!r}: option {key!r} is given twice")
        kwargs[key] = value
    if "judge" in accepted and "judge" not in kwargs:
        if (
            default_judge is None
            and inspect.signature(factory).parameters["judge"].default is inspect.Parameter.empty
        ):
            raise ValueError(
                f"scorer {short!r} asks an LLM judge: give it the option 'judge' (a model such as "
                "'openai/gpt-4o-mini', or a dict of judge settings), or configure scoring.judge"
            )
        if default_judge is not None:
            kwargs["judge"] = default_judge
    try:
        if "judge" in kwargs:
            kwargs["judge"] = as_judge(kwargs["judge"])
        return validate_call(factory)(**kwargs)
    except ValidationError as exc:
        raise ValueError(f"scorer {short!r}: invalid options: {exc}") from exc
    except ValueError as exc:  # the factory's own check, e.g. a required option missing
        raise ValueError(f"scorer {short!r}: {exc}") from exc
