"""Answer relevancy (Mastra's ``createAnswerRelevancyScorer``): how much of the answer addresses the question.

The judge splits the answer into statements, then labels each ``yes`` (answers the question),
``unsure`` (partly relevant) or ``no``. Score = (yes + uncertainty_weight x unsure) / statements,
times ``scale``, rounded to two decimals; no statements scores 0. The prompts are
``prompts/answer_relevancy/*.txt``.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import YesNoUnsure, js_json, js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = load_prompt(__package__, "answer_relevancy/instructions").render()
EXTRACT_PROMPT = load_prompt(__package__, "answer_relevancy/extract")
ANALYZE_PROMPT = load_prompt(__package__, "answer_relevancy/analyze")
REASON_PROMPT = load_prompt(__package__, "answer_relevancy/reason")


class Statements(BaseModel):
    statements: list[str]


class RelevancyResult(BaseModel):
    result: YesNoUnsure
    reason: str


class RelevancyResults(BaseModel):
    results: list[RelevancyResult]


def extract_prompt(output: str) -> str:
    return EXTRACT_PROMPT.render(output=delimit("output", output))


def score_prompt(input_json: str, statements: list[str]) -> str:
    return ANALYZE_PROMPT.render(
        input=delimit("input", input_json),
        statement_count=str(len(statements)),
        statements=delimit("statements", "\n".join(statements)),
    )


def reason_prompt(
    *, input: str, output: str, score: float | None, results: list[RelevancyResult], scale: float
) -> str:
    return REASON_PROMPT.render(
        scale=js_number(scale),
        input=delimit("input", input),
        output=delimit("output", output),
        score=js_number(score),
        results=delimit("results", js_json([r.model_dump() for r in results])),
    )


def relevancy_score(results: list[RelevancyResult], *, uncertainty_weight: float, scale: float) -> float:
    """(yes + uncertainty_weight x unsure) / len(results) x scale, rounded; 0 without results."""
    if not results:
        return 0
    relevant = sum(
        1.0 if r.result == "yes" else uncertainty_weight if r.result == "unsure" else 0.0 for r in results
    )
    return round_to_two_decimals(relevant / len(results) * scale)


ANSWER_RELEVANCY = ScorerSpec(
    name="answer-relevancy",
    former_id="answer-relevancy-scorer",
    title="Answer Relevancy Scorer",
    description="A scorer that evaluates the relevancy of an LLM output to an input",
)


@register(ANSWER_RELEVANCY)
def create_answer_relevancy_scorer(judge: Judge, uncertainty_weight: float = 0.3, scale: float = 1) -> Scorer:
    """Mastra's answer relevancy scorer; ``judge`` answers with these instructions."""
    if not 0 <= uncertainty_weight <= 1:
        raise ValueError("uncertainty_weight must lie in [0, 1]")
    if scale <= 0:
        raise ValueError("scale must be > 0")

    def analyze(ctx: StepContext) -> str:
        question = get_user_message_from_run_input(ctx.run) or ""
        return score_prompt(js_json(question), ctx.preprocessed(Statements).statements)

    def generate_score(ctx: StepContext) -> float:
        analysis = ctx.analyzed(RelevancyResults)
        return relevancy_score(analysis.results, uncertainty_weight=uncertainty_weight, scale=scale)

    def reason(ctx: StepContext) -> str:
        return reason_prompt(
            input=get_user_message_from_run_input(ctx.run) or "",
            output=get_assistant_message_from_run_output(ctx.run) or "",
            score=ctx.score,
            results=ctx.analyzed(RelevancyResults).results,
            scale=scale,
        )

    return (
        ANSWER_RELEVANCY.create_scorer(
            scale=scale or 1, needs={"input", "output"}, judge=replace(judge, instructions=INSTRUCTIONS)
        )
        .preprocess(
            {
                "description": "Extract relevant statements from the LLM output",
                "output_schema": Statements,
                "create_prompt": lambda ctx: extract_prompt(
                    get_assistant_message_from_run_output(ctx.run) or ""
                ),
            }
        )
        .analyze(
            {
                "description": "Score the relevance of the statements to the input",
                "output_schema": RelevancyResults,
                "create_prompt": analyze,
            }
        )
        .generate_score(generate_score)
        .generate_reason({"description": "Reason about the results", "create_prompt": reason})
    )
