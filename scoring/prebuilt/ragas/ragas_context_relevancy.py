"""RAGAS context relevancy (VoltAgent's ``createContextRelevancyScorer``): how much of the context matters.

The judge picks the context sentences relevant to the question, each with reasons. Score = total
length of the picked sentences / length of the context text, clamped to [0, 1] (an empty context
counts as length 1). As in VoltAgent, a list context is measured as its ``JSON.stringify`` text.
Lengths are counted in UTF-16 code units, as JavaScript's ``String.length``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_json, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class RelevantSentence(BaseModel):
    sentence: str = Field(description="The selected sentence")
    reasons: list[str] = Field(
        description="Reasons why the sentence is relevant. Explain your thinking step by step."
    )


class RelevantSentences(BaseModel):
    sentences: list[RelevantSentence] = Field(description="List of referenced sentences")


RAGAS_CONTEXT_RELEVANCY = JudgeTemplate(
    ScorerSpec(
        name="ragas-context-relevancy",
        former_id="contextRelevancy",
        title="Context Relevancy",
        description="RAGAS context relevancy: the share of the context relevant to the question",
    ),
    __package__,
    "context_relevancy",
    analyze=Ask(
        "Pick the context sentences relevant to the question", RelevantSentences, prompt="extract_sentences"
    ),
    instructions_file=None,  # VoltAgent sends the prompt alone
)


def js_length(text: str) -> int:
    """JavaScript's ``String.length``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def coverage_ratio(context: str, sentences: list[RelevantSentence]) -> float:
    total = sum(js_length(s.sentence) for s in sentences)
    return min(max(total / (js_length(context) or 1), 0.0), 1.0)


@register(RAGAS_CONTEXT_RELEVANCY.spec)
def create_ragas_context_relevancy_scorer(judge: Judge) -> Scorer:
    """VoltAgent's context relevancy scorer over the run's ``context``."""

    def context_text(ctx: StepContext) -> str:
        return js_json(list(ctx.run.context))

    return RAGAS_CONTEXT_RELEVANCY.scorer(
        judge,
        needs={"input", "context"},
        analyze=lambda ctx: {
            "question": delimit("question", user_text(ctx.run)),
            "context": delimit("context", context_text(ctx)),
        },
        score=lambda ctx: coverage_ratio(context_text(ctx), ctx.analyzed(RelevantSentences).sentences),
    )
