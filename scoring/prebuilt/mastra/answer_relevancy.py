"""Answer relevancy (Mastra's ``createAnswerRelevancyScorer``): how much of the answer addresses the question.

The judge splits the answer into statements, then labels each ``yes`` (answers the question),
``unsure`` (partly relevant) or ``no``. Score = (yes + uncertainty_weight x unsure) / statements,
times ``scale``, rounded to two decimals; no statements scores 0. The prompts are
``prompts/answer_relevancy/*.txt``.
"""

from __future__ import annotations

from pydantic import BaseModel

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    YesNoUnsure,
    delimited_answers,
    delimited_lines,
    js_json,
    user_text,
    verdict_share,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class Statements(BaseModel):
    statements: list[str]


class RelevancyResult(BaseModel):
    result: YesNoUnsure
    reason: str


class RelevancyResults(BaseModel):
    results: list[RelevancyResult]


ANSWER_RELEVANCY = JudgeTemplate(
    ScorerSpec(
        name="answer-relevancy",
        former_id="answer-relevancy-scorer",
        title="Answer Relevancy Scorer",
        description="A scorer that evaluates the relevancy of an LLM output to an input",
    ),
    __package__,
    "answer_relevancy",
    extract=Ask("Extract relevant statements from the LLM output", Statements),
    analyze=Ask("Score the relevance of the statements to the input", RelevancyResults),
    reason=Ask("Reason about the results"),
)


@register(ANSWER_RELEVANCY.spec)
def create_answer_relevancy_scorer(judge: Judge, uncertainty_weight: float = 0.3, scale: float = 1) -> Scorer:
    """Mastra's answer relevancy scorer; ``judge`` answers with these instructions."""
    if not 0 <= uncertainty_weight <= 1:
        raise ValueError("uncertainty_weight must lie in [0, 1]")
    if scale <= 0:
        raise ValueError("scale must be > 0")
    counts = {"yes": 1.0, "unsure": uncertainty_weight}

    def analyze(ctx: StepContext) -> dict[str, str]:
        statements = ctx.preprocessed(Statements).statements
        return {
            # The question goes to this prompt as its JSON string, as Mastra sends it.
            "input": delimit("input", js_json(user_text(ctx.run))),
            "statement_count": str(len(statements)),
            "statements": delimited_lines("statements", statements),
        }

    def results(ctx: StepContext) -> list[RelevancyResult]:
        return ctx.analyzed(RelevancyResults).results

    return ANSWER_RELEVANCY.scorer(
        judge,
        scale=scale,
        needs={"input", "output"},
        analyze=analyze,
        score=lambda ctx: verdict_share([r.result for r in results(ctx)], scale=scale, counts=counts),
        reason=lambda ctx: {"results": delimited_answers("results", results(ctx))},
    )
