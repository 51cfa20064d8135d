"""RAGAS context precision (VoltAgent's ``createContextPrecisionScorer``): was the context useful?

One judge call: given the question, the run's context (joined with newlines) and the answer, the
judge gives a binary verdict (1 useful, 0 not) with a reason. Score = 1 when the verdict reaches
``binary_threshold`` (default 0.5), else 0; ``weighted`` is accepted as in VoltAgent, where it
changes nothing yet. The reason is the judge's own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, Field

from scoring.judge import Judge, delimit
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = "You evaluate if context was useful for arriving at the answer"

PROMPT = """Given question, answer and context verify if the context was useful in arriving at the \
given answer. Give verdict as "1" if useful and "0" if not with json output.

Examples:

question: "who won 2020 icc world cup?"
context: "The 2022 ICC Men's T20 World Cup, held from October 16 to November 13, 2022, in Australia, \
was the eighth edition of the tournament. Originally scheduled for 2020, it was postponed due to the \
COVID-19 pandemic. England emerged victorious, defeating Pakistan by five wickets in the final to \
clinch their second ICC Men's T20 World Cup title."
answer: "England"
verification: {"reason": "the context was useful in clarifying the situation regarding the 2020 ICC \
World Cup and indicating that England was the winner of the tournament that was intended to be held \
in 2020 but actually took place in 2022.", "verdict": 1}

question: "What is the tallest mountain in the world?"
context: "The Andes is the longest continental mountain range in the world, located in South America. \
It stretches across seven countries and features many of the highest peaks in the Western \
Hemisphere."
answer: "Mount Everest."
verification: {"reason": "the provided context discusses the Andes mountain range, which does not \
include Mount Everest or directly relate to the question about the world's tallest mountain.", \
"verdict": 0}

Your actual task:"""


class PrecisionVerdict(BaseModel):
    reason: str = Field(description="Reason for verification")
    verdict: Literal[0, 1] = Field(description="Binary (0/1) verdict of verification")


def precision_prompt(question: str, context: list[str], answer: str) -> str:
    return (
        f"{PROMPT}\n\nquestion: {delimit('question', question)}\n"
        f"context: {delimit('context', chr(10).join(context))}\nanswer: {delimit('answer', answer)}"
    )


def precision_score(verdict: PrecisionVerdict, *, binary_threshold: float) -> float:
    return 1.0 if verdict.verdict >= binary_threshold else 0.0


RAGAS_CONTEXT_PRECISION = ScorerSpec(
    name="ragas-context-precision",
    id="contextPrecision",
    title="Context Precision",
    description="RAGAS context precision: was the retrieved context useful for the answer",
)


@register(RAGAS_CONTEXT_PRECISION)
def create_ragas_context_precision_scorer(
    judge: Judge, binary_threshold: float = 0.5, weighted: bool = False
) -> Scorer:
    """VoltAgent's context precision scorer over the run's ``context``."""
    del weighted  # VoltAgent's weighted mode returns the same binary verdict

    def prompt(ctx: StepContext) -> str:
        return precision_prompt(
            get_user_message_from_run_input(ctx.run) or "",
            list(ctx.run.context),
            get_assistant_message_from_run_output(ctx.run) or "",
        )

    def generate_score(ctx: StepContext) -> float:
        return precision_score(ctx.results["analyze_step_result"], binary_threshold=binary_threshold)

    return (
        RAGAS_CONTEXT_PRECISION.create_scorer(
            needs={"input", "output", "context"}, judge=replace(judge, instructions=INSTRUCTIONS)
        )
        .analyze(
            {
                "description": "Judge whether the context was useful",
                "output_schema": PrecisionVerdict,
                "create_prompt": prompt,
            }
        )
        .generate_score(generate_score)
        .generate_reason(lambda ctx: ctx.results["analyze_step_result"].reason)
    )
