"""RAGAS context precision (VoltAgent's ``createContextPrecisionScorer``): was the context useful?

One judge call: given the question, the run's context (joined with newlines) and the answer, the
judge gives a binary verdict (1 useful, 0 not) with a reason. Score = 1 when the verdict reaches
``binary_threshold`` (default 0.5), else 0; ``weighted`` is accepted as in VoltAgent, where it
changes nothing yet. The reason is the judge's own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, delimited_lines, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class PrecisionVerdict(BaseModel):
    reason: str = Field(description="Reason for verification")
    verdict: Literal[0, 1] = Field(description="Binary (0/1) verdict of verification")


RAGAS_CONTEXT_PRECISION = JudgeTemplate(
    ScorerSpec(
        name="ragas-context-precision",
        former_id="contextPrecision",
        title="Context Precision",
        description="RAGAS context precision: was the retrieved context useful for the answer",
    ),
    __package__,
    "context_precision",
    analyze=Ask("Judge whether the context was useful", PrecisionVerdict, prompt="verify_usefulness"),
)


def precision_score(verdict: PrecisionVerdict, *, binary_threshold: float) -> float:
    return 1.0 if verdict.verdict >= binary_threshold else 0.0


@register(RAGAS_CONTEXT_PRECISION.spec)
def create_ragas_context_precision_scorer(
    judge: Judge, binary_threshold: float = 0.5, weighted: bool = False
) -> Scorer:
    """VoltAgent's context precision scorer over the run's ``context``."""
    del weighted  # VoltAgent's weighted mode returns the same binary verdict

    def analyze(ctx: StepContext) -> dict[str, str]:
        return {
            "question": delimit("question", user_text(ctx.run)),
            "context": delimited_lines("context", ctx.run.context),
            "answer": delimit("answer", answer_text(ctx.run)),
        }

    return RAGAS_CONTEXT_PRECISION.scorer(
        judge,
        needs={"input", "output", "context"},
        analyze=analyze,
        score=lambda ctx: precision_score(ctx.analyzed(PrecisionVerdict), binary_threshold=binary_threshold),
    ).generate_reason(lambda ctx: ctx.analyzed(PrecisionVerdict).reason)
