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

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = load_prompt(__package__, "context_precision/instructions").render()
VERIFY_USEFULNESS = load_prompt(__package__, "context_precision/verify_usefulness")


class PrecisionVerdict(BaseModel):
    reason: str = Field(description="Reason for verification")
    verdict: Literal[0, 1] = Field(description="Binary (0/1) verdict of verification")


def precision_prompt(question: str, context: list[str], answer: str) -> str:
    return VERIFY_USEFULNESS.render(
        question=delimit("question", question),
        context=delimit("context", "\n".join(context)),
        answer=delimit("answer", answer),
    )


def precision_score(verdict: PrecisionVerdict, *, binary_threshold: float) -> float:
    return 1.0 if verdict.verdict >= binary_threshold else 0.0


RAGAS_CONTEXT_PRECISION = ScorerSpec(
    name="ragas-context-precision",
    former_id="contextPrecision",
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
        return precision_score(ctx.analyzed(PrecisionVerdict), binary_threshold=binary_threshold)

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
        .generate_reason(lambda ctx: ctx.analyzed(PrecisionVerdict).reason)
    )
