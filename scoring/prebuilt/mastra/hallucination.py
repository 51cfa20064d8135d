"""Hallucination (Mastra's ``createHallucinationScorer``): how much of the answer the context does not back.

The judge extracts the answer's claims, then marks each ``yes`` (a hallucination: contradicts the
context or is not supported by it) or ``no``. Score = hallucinated claims / claims x ``scale``,
rounded to two decimals (higher is worse); no claims scores 0.

The context comes from ``get_context`` when given (called for the analyze and the reason step, sync
or async), else the ``context`` option, else -- our addition, Mastra's runs carry none -- the run's
own retrieved ``context``.

The prompts are ``prompts/hallucination/*.txt``; the claim extraction and the principles of the
instructions are shared word for word with faithfulness (``prompts/shared/claims/``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.judge_helpers import (
    Claims,
    YesNo,
    delimited_answers,
    delimited_lines,
    verdict_share,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


@dataclass(frozen=True)
class GetContextParams:
    """What ``get_context`` receives (Mastra's ``GetContextParams``)."""

    run: AgentRun
    results: Mapping[str, Any]
    step: Literal["analyze", "generate_reason"]
    score: float | None = None


GetContextFn = Callable[[GetContextParams], list[str] | Awaitable[list[str]]]


class HallucinationVerdict(BaseModel):
    statement: str
    verdict: YesNo
    reason: str


class HallucinationVerdicts(BaseModel):
    verdicts: list[HallucinationVerdict]


HALLUCINATION = JudgeTemplate(
    ScorerSpec(
        name="hallucination",
        former_id="hallucination-scorer",
        title="Hallucination Scorer",
        description="A scorer that evaluates the hallucination of an LLM output to an input",
    ),
    __package__,
    "hallucination",
    extract=Ask("Extract all claims from the given output", Claims),
    analyze=Ask("Score the relevance of the statements to the input", HallucinationVerdicts),
    reason=Ask("Reason about the results"),
)


@register(HALLUCINATION.spec)
def create_hallucination_scorer(
    judge: Judge,
    scale: float = 1,
    context: list[str] | None = None,
    get_context: GetContextFn | None = None,
) -> Scorer:
    """Mastra's hallucination scorer; the context from ``get_context``, ``context`` or the run."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    fixed_context = list(context) if context is not None else None

    async def context_for(ctx: StepContext, step: Literal["analyze", "generate_reason"]) -> list[str]:
        if get_context is not None:
            found = get_context(GetContextParams(ctx.run, ctx.results, step, ctx.score))
            if inspect.isawaitable(found):
                found = await found
            if not isinstance(found, list) or not all(isinstance(item, str) for item in found):
                raise TypeError("get_context must return a list of strings")
            return found
        return fixed_context if fixed_context is not None else list(ctx.run.context)

    async def analyze(ctx: StepContext) -> dict[str, str]:
        claims = ctx.preprocessed(Claims).claims
        context = await context_for(ctx, "analyze")
        return {
            "claims": delimited_lines("claims", claims),
            "claim_count": str(len(claims)),
            "context_count": str(len(context)),
            "context": delimited_lines("context", context),
        }

    def verdicts(ctx: StepContext) -> list[HallucinationVerdict]:
        return ctx.analyzed(HallucinationVerdicts).verdicts

    async def reason(ctx: StepContext) -> dict[str, str]:
        context = await context_for(ctx, "generate_reason")
        return {
            "context": delimited_lines("context", context),
            "verdicts": delimited_answers("verdicts", verdicts(ctx)),
        }

    return HALLUCINATION.scorer(
        judge,
        scale=scale,
        needs={"output"},
        analyze=analyze,
        # "yes" marks a hallucinated claim: the share of them, higher is worse.
        score=lambda ctx: verdict_share([v.verdict for v in verdicts(ctx)], scale=scale),
        reason=reason,
    )
