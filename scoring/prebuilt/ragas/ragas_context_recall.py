"""RAGAS context recall (VoltAgent's ``createContextRecallScorer``): context support for the ground truth.

The judge extracts the factual statements of the run's ``ground_truth``, then, one call per
statement, says whether the context supports it (verdict 1) or not (0). Recall = supported /
statements, where with ``partial_credit`` an unsupported verdict whose reasoning mentions "partial"
counts 0.5. With ``strictness`` > 0.5 a recall below ``strictness`` is penalised to
recall x recall / strictness. No statements scores 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class Statements(BaseModel):
    statements: list[str] = Field(description="List of factual statements extracted from the ground truth")


class RecallVerdict(BaseModel):
    verdict: Literal[0, 1] = Field(description="1 if statement is supported by context, 0 if not")
    reasoning: str = Field(description="Brief reasoning for the verdict")


RAGAS_CONTEXT_RECALL = JudgeTemplate(
    ScorerSpec(
        name="ragas-context-recall",
        former_id="contextRecall",
        title="Context Recall",
        description="RAGAS context recall: how much of the ground truth the context supports",
    ),
    __package__,
    "context_recall",
    extract=Ask(
        "Extract the factual statements of the ground truth", Statements, prompt="extract_statements"
    ),
)


def recall_score(verdicts: list[RecallVerdict], *, strictness: float, partial_credit: bool) -> float:
    if not verdicts:
        return 0.0
    supported = 0.0
    for v in verdicts:
        if v.verdict == 1:
            supported += 1
        elif partial_credit and "partial" in v.reasoning.lower():
            supported += 0.5
    recall = supported / len(verdicts)
    if strictness > 0.5:
        return min(1.0, recall if recall >= strictness else recall * (recall / strictness))
    return recall


def recall_reason(statements: list[str], verdicts: list[RecallVerdict]) -> str:
    """VoltAgent's reason: how many statements the context supports, and which it does not."""
    if not statements:
        return "No statements found in expected output to evaluate"
    supported = sum(1 for v in verdicts if v.verdict == 1)
    text = (
        f"Context recall: {supported}/{len(statements)} statements from expected output are "
        "supported by context."
    )
    missing = [s for s, v in zip(statements, verdicts, strict=True) if v.verdict == 0]
    return f"{text} Missing support for: {'; '.join(missing)}" if missing else text


def _context(ctx: StepContext) -> str:
    return delimit("context", "\n".join(ctx.run.context))


def _ground_truth(ctx: StepContext) -> str:
    truth = ctx.run.ground_truth
    return delimit("ground truth", truth if isinstance(truth, str) else "" if truth is None else str(truth))


@register(RAGAS_CONTEXT_RECALL.spec)
def create_ragas_context_recall_scorer(
    judge: Judge, strictness: float = 0.7, partial_credit: bool = False
) -> Scorer:
    """VoltAgent's context recall scorer: the run's ``ground_truth`` against its ``context``."""
    judging = RAGAS_CONTEXT_RECALL.instructed(judge)
    verify = RAGAS_CONTEXT_RECALL.prompt("verify_statement")

    async def analyze(ctx: StepContext) -> list[RecallVerdict]:
        # One call per statement, in order, as VoltAgent does.
        context = _context(ctx)
        return [
            (
                await judging.structured(
                    verify.render(context=context, statement=delimit("statement", s)), RecallVerdict
                )
            ).value
            for s in ctx.preprocessed(Statements).statements
        ]

    return (
        RAGAS_CONTEXT_RECALL.scorer(
            judge,
            needs={"context", "ground_truth"},
            extract=lambda ctx: {"context": _context(ctx), "ground_truth": _ground_truth(ctx)},
            score=lambda ctx: recall_score(
                ctx.analyzed(list), strictness=strictness, partial_credit=partial_credit
            ),
        )
        .analyze(analyze)
        .generate_reason(
            lambda ctx: recall_reason(ctx.preprocessed(Statements).statements, ctx.analyzed(list))
        )
    )
