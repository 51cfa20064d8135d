"""Context relevance: how relevant and how used the context was, weighted by an LLM judge's levels.

Mastra's ``createContextRelevanceScorerLLM`` ported: the judge rates each context piece
``high``/``medium``/``low``/``none`` and says whether the answer used it, and lists missing
context (analyze). The score is ``max(0, base - usage_penalty - missing_penalty) * scale`` rounded
to two decimals, where ``base`` is the mean relevance weight (high 1.0, medium 0.7, low 0.3, none
0), ``usage_penalty`` is ``unused_high_relevance_context`` (0.1) per unused high-relevance piece,
and ``missing_penalty`` is ``missing_context_per_item`` (0.15) per missing item, at most
``max_missing_context_penalty`` (0.5). Edge cases as Mastra: no context at all scores
``scale`` (the agent had nothing to use); no evaluations score 0 if context is missing, else 1.

Context comes from ``context_extractor(run)``, ``context`` or, without both, the run's own context
(see ``scoring.prebuilt.mastra.context_source``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pydantic.alias_generators import to_camel

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.mastra.context_source import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

RELEVANCE_WEIGHTS: dict[str, float] = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
# What the analyze prompt shows when there is no context (Mastra's placeholder).
NO_CONTEXT_PLACEHOLDER = load_prompt(__package__, "context_relevance/no_context_placeholder").render()

CONTEXT_RELEVANCE_INSTRUCTIONS = load_prompt(__package__, "context_relevance/instructions").render()
ANALYZE_PROMPT = load_prompt(__package__, "context_relevance/analyze")
REASON_PROMPT = load_prompt(__package__, "context_relevance/reason")
EVALUATION_PROMPT = load_prompt(__package__, "context_relevance/evaluation")
MISSING_CONTEXT_PROMPT = load_prompt(__package__, "context_relevance/missing_context")
# The reason "prompt" of a run without context: Mastra sends this text to the judge.
NO_CONTEXT_REASON_PROMPT = load_prompt(__package__, "context_relevance/no_context_reason")


class Penalties(BaseModel):
    """Mastra's penalty options; keys in snake_case or camelCase (``unusedHighRelevanceContext``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    unused_high_relevance_context: float = 0.1
    missing_context_per_item: float = 0.15
    max_missing_context_penalty: float = 0.5


class ContextEvaluation(BaseModel):
    """One context piece as the judge rated it; field names are the JSON keys Mastra asks for."""

    model_config = ConfigDict(populate_by_name=True)

    context_index: int
    context_piece: str = Field(alias="contextPiece")
    relevance_level: Literal["high", "medium", "low", "none"] = Field(alias="relevanceLevel")
    was_used: StrictBool = Field(alias="wasUsed")
    reasoning: str


class ContextRelevanceAnalysis(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    evaluations: list[ContextEvaluation]
    missing_context: list[str] = Field(default_factory=list, alias="missingContext")
    overall_assessment: str = Field(alias="overallAssessment")


def context_relevance_score(
    analysis: ContextRelevanceAnalysis | None, scale: float = 1.0, penalties: Penalties | None = None
) -> float:
    """Mastra's formula for a run that had context (see the module docstring)."""
    evaluations = analysis.evaluations if analysis else []
    missing = analysis.missing_context if analysis else []
    if not evaluations:
        # Mastra returns these unscaled and unrounded.
        return 0.0 if missing else 1.0
    rates = penalties or Penalties()
    base = sum(RELEVANCE_WEIGHTS[e.relevance_level] for e in evaluations) / (len(evaluations) * 1.0)
    unused_high = sum(e.relevance_level == "high" and not e.was_used for e in evaluations)
    usage_penalty = unused_high * rates.unused_high_relevance_context
    missing_penalty = min(len(missing) * rates.missing_context_per_item, rates.max_missing_context_penalty)
    return round_to_two_decimals(max(0.0, base - usage_penalty - missing_penalty) * (scale or 1))


def _evaluations_text(analysis: ContextRelevanceAnalysis | None) -> str:
    blocks = [
        EVALUATION_PROMPT.render(
            index=str(e.context_index),
            level=e.relevance_level,
            used="Yes" if e.was_used else "No",
            piece=e.context_piece,
            reasoning=e.reasoning,
        )
        for e in (analysis.evaluations if analysis else [])
    ]
    return delimit("evaluations", "\n\n".join(blocks))


def _missing_text(analysis: ContextRelevanceAnalysis | None) -> str:
    missing = analysis.missing_context if analysis else []
    if not missing:
        return ""
    return MISSING_CONTEXT_PROMPT.render(
        missing_context=delimit("missing context", "\n".join(f"- {m}" for m in missing))
    )


CONTEXT_RELEVANCE = ScorerSpec(
    name="context-relevance",
    former_id="context-relevance-scorer",
    title="Context Relevance (LLM)",
    description=(
        "Evaluates how relevant and useful the provided context was for generating the agent response"
    ),
)


@register(CONTEXT_RELEVANCE)
def create_context_relevance_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    penalties: Penalties | Mapping[str, float] | None = None,
) -> Scorer:
    """Mastra's LLM context relevance scorer (id ``context-relevance-scorer``), 0..``scale``."""
    check_context_options(context)
    rates = penalties if isinstance(penalties, Penalties) else Penalties.model_validate(penalties or {})

    def pieces(ctx: StepContext) -> list[str]:
        return resolve_context(ctx.run, context, context_extractor)

    def analyze_prompt(ctx: StepContext) -> str:
        return ANALYZE_PROMPT.render(
            user_query=delimit("input", get_user_message_from_run_input(ctx.run) or ""),
            agent_response=delimit("output", get_assistant_message_from_run_output(ctx.run) or ""),
            context=numbered(pieces(ctx) or [NO_CONTEXT_PLACEHOLDER]),
        )

    def score(ctx: StepContext) -> float:
        if not pieces(ctx):
            return 1.0 * (scale or 1)  # no context: the agent had to work without any
        return context_relevance_score(ctx.maybe("analyze", ContextRelevanceAnalysis), scale, rates)

    def reason_prompt(ctx: StepContext) -> str:
        if not pieces(ctx):
            return NO_CONTEXT_REASON_PROMPT.render(score=js_number(ctx.score))
        analysis = ctx.maybe("analyze", ContextRelevanceAnalysis)
        return REASON_PROMPT.render(
            user_query=delimit("input", get_user_message_from_run_input(ctx.run) or ""),
            score=js_number(ctx.score),
            scale=js_number(scale or 1),
            evaluations=_evaluations_text(analysis),
            missing=_missing_text(analysis),
        )

    return (
        CONTEXT_RELEVANCE.create_scorer(
            scale=scale or 1,
            needs=context_needs(context, context_extractor),
            judge=replace(judge, instructions=CONTEXT_RELEVANCE_INSTRUCTIONS),
        )
        .analyze(
            {
                "description": "Analyze the relevance and utility of provided context",
                "output_schema": ContextRelevanceAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(score)
        .generate_reason(
            {
                "description": "Generate human-readable explanation of context relevance evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
