"""RAGAS context recall (VoltAgent's ``createContextRecallScorer``): context support for the ground truth.

The judge extracts the factual statements of the run's ``ground_truth``, then, one call per
statement, says whether the context supports it (verdict 1) or not (0). Recall = supported /
statements, where with ``partial_credit`` an unsupported verdict whose reasoning mentions "partial"
counts 0.5. With ``strictness`` > 0.5 a recall below ``strictness`` is penalised to
recall x recall / strictness. No statements scores 0.
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

INSTRUCTIONS = load_prompt(__package__, "context_recall/instructions").render()
EXTRACT_STATEMENTS = load_prompt(__package__, "context_recall/extract_statements")
VERIFY_STATEMENT = load_prompt(__package__, "context_recall/verify_statement")


class Statements(BaseModel):
    statements: list[str] = Field(description="List of factual statements extracted from the ground truth")


class RecallVerdict(BaseModel):
    verdict: Literal[0, 1] = Field(description="1 if statement is supported by context, 0 if not")
    reasoning: str = Field(description="Brief reasoning for the verdict")


def extract_prompt(context: str, ground_truth: str) -> str:
    return EXTRACT_STATEMENTS.render(
        context=delimit("context", context), ground_truth=delimit("ground truth", ground_truth)
    )


def verify_prompt(context: str, statement: str) -> str:
    return VERIFY_STATEMENT.render(
        context=delimit("context", context), statement=delimit("statement", statement)
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


def _texts(ctx: StepContext) -> tuple[str, str]:
    truth = ctx.run.ground_truth
    ground_truth = truth if isinstance(truth, str) else "" if truth is None else str(truth)
    return "\n".join(ctx.run.context), ground_truth


RAGAS_CONTEXT_RECALL = ScorerSpec(
    name="ragas-context-recall",
    former_id="contextRecall",
    title="Context Recall",
    description="RAGAS context recall: how much of the ground truth the context supports",
)


@register(RAGAS_CONTEXT_RECALL)
def create_ragas_context_recall_scorer(
    judge: Judge, strictness: float = 0.7, partial_credit: bool = False
) -> Scorer:
    """VoltAgent's context recall scorer: the run's ``ground_truth`` against its ``context``."""
    judging = replace(judge, instructions=INSTRUCTIONS)

    async def analyze(ctx: StepContext) -> list[RecallVerdict]:
        # One call per statement, in order, as VoltAgent does.
        context, _ = _texts(ctx)
        statements = ctx.preprocessed(Statements)
        return [
            (await judging.structured(verify_prompt(context, s), RecallVerdict)).value
            for s in statements.statements
        ]

    def generate_score(ctx: StepContext) -> float:
        return recall_score(ctx.analyzed(list), strictness=strictness, partial_credit=partial_credit)

    def reason(ctx: StepContext) -> str:
        statements = ctx.preprocessed(Statements).statements
        verdicts: list[RecallVerdict] = ctx.analyzed(list)
        if not statements:
            return "No statements found in expected output to evaluate"
        supported = sum(1 for v in verdicts if v.verdict == 1)
        text = (
            f"Context recall: {supported}/{len(statements)} statements from expected output are "
            "supported by context."
        )
        missing = [s for s, v in zip(statements, verdicts, strict=True) if v.verdict == 0]
        return f"{text} Missing support for: {'; '.join(missing)}" if missing else text

    return (
        RAGAS_CONTEXT_RECALL.create_scorer(needs={"context", "ground_truth"}, judge=judging)
        .preprocess(
            {
                "description": "Extract the factual statements of the ground truth",
                "output_schema": Statements,
                "create_prompt": lambda ctx: extract_prompt(*_texts(ctx)),
            }
        )
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(reason)
    )
