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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import MastraOptions, round_to_two_decimals
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate, PromptFile
from tracescore.scoring.prebuilt.mastra.context_source import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

RELEVANCE_WEIGHTS: dict[str, float] = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}


class RelevancePenalties(MastraOptions):
    """Mastra's penalty options (``unusedHighRelevanceContext``, ... or snake_case)."""

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


CONTEXT_RELEVANCE = JudgeTemplate(
    ScorerSpec(
        name="context-relevance",
        former_id="context-relevance-scorer",
        title="Context Relevance (LLM)",
        description=(
            "Evaluates how relevant and useful the provided context was for generating the agent response"
        ),
    ),
    __package__,
    "context_relevance",
    analyze=Ask("Analyze the relevance and utility of provided context", ContextRelevanceAnalysis),
    reason=Ask("Generate human-readable explanation of context relevance evaluation"),
)


def context_relevance_score(
    analysis: ContextRelevanceAnalysis, scale: float = 1.0, penalties: RelevancePenalties | None = None
) -> float:
    """Mastra's formula for a run that had context (see the module docstring)."""
    evaluations, missing = analysis.evaluations, analysis.missing_context
    if not evaluations:
        # Mastra returns these unscaled and unrounded.
        return 0.0 if missing else 1.0
    rates = penalties or RelevancePenalties()
    base = sum(RELEVANCE_WEIGHTS[e.relevance_level] for e in evaluations) / (len(evaluations) * 1.0)
    unused_high = sum(e.relevance_level == "high" and not e.was_used for e in evaluations)
    usage_penalty = unused_high * rates.unused_high_relevance_context
    missing_penalty = min(len(missing) * rates.missing_context_per_item, rates.max_missing_context_penalty)
    return round_to_two_decimals(max(0.0, base - usage_penalty - missing_penalty) * (scale or 1))


def evaluations_text(analysis: ContextRelevanceAnalysis) -> str:
    """The judge's ratings, one block a piece, as the reason prompt shows them (as data)."""
    blocks = [
        CONTEXT_RELEVANCE.prompt("evaluation").render(
            index=str(e.context_index),
            level=e.relevance_level,
            used="Yes" if e.was_used else "No",
            piece=e.context_piece,
            reasoning=e.reasoning,
        )
        for e in analysis.evaluations
    ]
    return delimit("evaluations", "\n\n".join(blocks))


def missing_text(analysis: ContextRelevanceAnalysis) -> str:
    """The context the judge found missing, as the reason prompt lists it ("" when none)."""
    if not analysis.missing_context:
        return ""
    return CONTEXT_RELEVANCE.prompt("missing_context").render(
        missing_context=delimit("missing context", "\n".join(f"- {m}" for m in analysis.missing_context))
    )


@register(CONTEXT_RELEVANCE.spec)
def create_context_relevance_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    penalties: RelevancePenalties | Mapping[str, float] | None = None,
) -> Scorer:
    """Mastra's LLM context relevance scorer (id ``context-relevance-scorer``), 0..``scale``."""
    check_context_options(context)
    rates = (
        penalties
        if isinstance(penalties, RelevancePenalties)
        else RelevancePenalties.model_validate(penalties or {})
    )

    def pieces(ctx: StepContext) -> list[str]:
        return resolve_context(ctx.run, context, context_extractor)

    def analyze(ctx: StepContext) -> dict[str, str]:
        # Without context the judge is shown Mastra's placeholder piece.
        return {
            "context": numbered(pieces(ctx) or [CONTEXT_RELEVANCE.prompt("no_context_placeholder").render()])
        }

    def score(ctx: StepContext) -> float:
        if not pieces(ctx):
            return 1.0 * (scale or 1)  # no context: the agent had to work without any
        return context_relevance_score(ctx.analyzed(ContextRelevanceAnalysis), scale, rates)

    def reason(ctx: StepContext) -> dict[str, str] | PromptFile:
        if not pieces(ctx):
            return PromptFile("no_context_reason")  # Mastra sends this text to the judge
        analysis = ctx.analyzed(ContextRelevanceAnalysis)
        return {"evaluations": evaluations_text(analysis), "missing": missing_text(analysis)}

    return CONTEXT_RELEVANCE.scorer(
        judge,
        scale=scale,
        needs=context_needs(context, context_extractor),
        analyze=analyze,
        score=score,
        reason=reason,
    )
