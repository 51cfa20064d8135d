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

from scoring.judge import Judge, delimit
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext

INSTRUCTIONS = "You evaluate how well provided context supports factual statements"

EXTRACT_PROMPT = """Given the context and ground truth (expected output), extract all factual \
statements from the ground truth.

Examples:

Context: "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It \
is named after the engineer Gustave Eiffel, whose company designed and built the tower. Constructed \
from 1887 to 1889, it was initially criticized by some of France's leading artists and intellectuals."
Ground Truth: "The Eiffel Tower was built between 1887 and 1889. It was designed by Gustave Eiffel's \
company and is located in Paris."

Statements:
- The Eiffel Tower was built between 1887 and 1889
- The Eiffel Tower was designed by Gustave Eiffel's company
- The Eiffel Tower is located in Paris

Your task:"""


class Statements(BaseModel):
    statements: list[str] = Field(description="List of factual statements extracted from the ground truth")


class RecallVerdict(BaseModel):
    verdict: Literal[0, 1] = Field(description="1 if statement is supported by context, 0 if not")
    reasoning: str = Field(description="Brief reasoning for the verdict")


def extract_prompt(context: str, ground_truth: str) -> str:
    return (
        f"{EXTRACT_PROMPT}\n\nContext: {delimit('context', context)}\n"
        f"Ground Truth: {delimit('ground truth', ground_truth)}\n\n"
        "Extract all factual statements from the ground truth:"
    )


def verify_prompt(context: str, statement: str) -> str:
    return (
        'For each statement, determine if it can be attributed to the given context. Answer with "1" '
        'if the statement is supported by the context, "0" if not.\n\n'
        f"Context: {delimit('context', context)}\n\nStatement: {delimit('statement', statement)}\n\n"
        "Analyze if this statement can be attributed to the context and provide your verdict:"
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
    id="contextRecall",
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
        statements: Statements = ctx.results["preprocess_step_result"]
        return [
            (await judging.structured(verify_prompt(context, s), RecallVerdict)).value
            for s in statements.statements
        ]

    def generate_score(ctx: StepContext) -> float:
        return recall_score(
            ctx.results["analyze_step_result"], strictness=strictness, partial_credit=partial_credit
        )

    def reason(ctx: StepContext) -> str:
        statements: list[str] = ctx.results["preprocess_step_result"].statements
        verdicts: list[RecallVerdict] = ctx.results["analyze_step_result"]
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
