"""Faithfulness (Mastra's ``createFaithfulnessScorer``): how much of the answer the context supports.

The judge extracts the answer's claims, then checks each against the context: ``yes`` (supported),
``no`` (contradicted) or ``unsure`` (not in the context). Score = yes / claims x ``scale``, rounded to
two decimals; no claims scores 0.

The context is the ``context`` option when given (as in Mastra), else the run's own retrieved
``context``, else the results of the run's tool calls (Mastra's fallback). The run's context is our
addition: Mastra's runs do not carry one.

The prompts are ``prompts/faithfulness/*.txt``; the claim extraction and the principles of the
instructions are shared word for word with hallucination (``prompts/shared/claims/``).
"""

from __future__ import annotations

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.judge_helpers import (
    Claims,
    YesNoUnsure,
    delimited_answers,
    delimited_lines,
    js_json,
    verdict_share,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class FaithfulnessVerdict(BaseModel):
    verdict: YesNoUnsure
    reason: str


class FaithfulnessVerdicts(BaseModel):
    verdicts: list[FaithfulnessVerdict]


FAITHFULNESS = JudgeTemplate(
    ScorerSpec(
        name="faithfulness",
        former_id="faithfulness-scorer",
        title="Faithfulness Scorer",
        description="A scorer that evaluates the faithfulness of an LLM output to an input",
    ),
    __package__,
    "faithfulness",
    extract=Ask("Extract relevant statements from the LLM output", Claims),
    analyze=Ask("Score the relevance of the statements to the input", FaithfulnessVerdicts),
    reason=Ask("Reason about the results"),
)


def tool_result_context(run: AgentRun) -> list[str]:
    """Mastra's ``getToolInvocationContext``: each finished tool call's result as JSON."""
    return [
        js_json(call.result)
        for message in run.output
        if message.role == "assistant"
        for call in message.tool_invocations
        if call.state == "result"
    ]


@register(FAITHFULNESS.spec)
def create_faithfulness_scorer(judge: Judge, scale: float = 1, context: list[str] | None = None) -> Scorer:
    """Mastra's faithfulness scorer; ``context`` replaces the run's context and tool results."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    fixed_context = list(context) if context is not None else None

    def context_of(ctx: StepContext) -> str:
        if fixed_context is not None:
            return delimited_lines("context", fixed_context)
        return delimited_lines("context", list(ctx.run.context) or tool_result_context(ctx.run))

    def analyze(ctx: StepContext) -> dict[str, str]:
        claims = ctx.preprocessed(Claims).claims
        return {
            "context": context_of(ctx),
            "claim_count": str(len(claims)),
            "claims": delimited_lines("claims", claims),
        }

    def verdicts(ctx: StepContext) -> list[FaithfulnessVerdict]:
        return ctx.analyzed(FaithfulnessVerdicts).verdicts

    return FAITHFULNESS.scorer(
        judge,
        scale=scale,
        needs={"output"},
        analyze=analyze,
        score=lambda ctx: verdict_share([v.verdict for v in verdicts(ctx)], scale=scale),
        reason=lambda ctx: {
            "context": context_of(ctx),
            "verdicts": delimited_answers("verdicts", verdicts(ctx)),
        },
    )
