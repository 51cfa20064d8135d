"""RAGAS context relevancy (VoltAgent's ``createContextRelevancyScorer``): how much of the context matters.

The judge picks the context sentences relevant to the question, each with reasons. Score = total
length of the picked sentences / length of the context text, clamped to [0, 1] (an empty context
counts as length 1). As in VoltAgent, a list context is measured as its ``JSON.stringify`` text.
Lengths are counted in UTF-16 code units, as JavaScript's ``String.length``.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, Field

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_json
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_user_message_from_run_input

EXTRACT_SENTENCES = load_prompt(__package__, "context_relevancy/extract_sentences")


class RelevantSentence(BaseModel):
    sentence: str = Field(description="The selected sentence")
    reasons: list[str] = Field(
        description="Reasons why the sentence is relevant. Explain your thinking step by step."
    )


class RelevantSentences(BaseModel):
    sentences: list[RelevantSentence] = Field(description="List of referenced sentences")


def js_length(text: str) -> int:
    """JavaScript's ``String.length``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def context_text(context: list[str]) -> str:
    return js_json(context)


def relevancy_prompt(question: str, context: str) -> str:
    return EXTRACT_SENTENCES.render(
        question=delimit("question", question), context=delimit("context", context)
    )


def coverage_ratio(context: str, sentences: list[RelevantSentence]) -> float:
    total = sum(js_length(s.sentence) for s in sentences)
    return min(max(total / (js_length(context) or 1), 0.0), 1.0)


RAGAS_CONTEXT_RELEVANCY = ScorerSpec(
    name="ragas-context-relevancy",
    former_id="contextRelevancy",
    title="Context Relevancy",
    description="RAGAS context relevancy: the share of the context relevant to the question",
)


@register(RAGAS_CONTEXT_RELEVANCY)
def create_ragas_context_relevancy_scorer(judge: Judge) -> Scorer:
    """VoltAgent's context relevancy scorer over the run's ``context``."""

    def prompt(ctx: StepContext) -> str:
        question = get_user_message_from_run_input(ctx.run) or ""
        return relevancy_prompt(question, context_text(list(ctx.run.context)))

    def generate_score(ctx: StepContext) -> float:
        picked = ctx.analyzed(RelevantSentences)
        return coverage_ratio(context_text(list(ctx.run.context)), picked.sentences)

    return (
        RAGAS_CONTEXT_RELEVANCY.create_scorer(
            needs={"input", "context"}, judge=replace(judge, instructions="")
        )
        .analyze(
            {
                "description": "Pick the context sentences relevant to the question",
                "output_schema": RelevantSentences,
                "create_prompt": prompt,
            }
        )
        .generate_score(generate_score)
    )
