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
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import Claims, YesNo, js_json, js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = load_prompt(__package__, "hallucination/instructions").render()
EXTRACT_PROMPT = load_prompt(__package__, "hallucination/extract")
ANALYZE_PROMPT = load_prompt(__package__, "hallucination/analyze")
REASON_PROMPT = load_prompt(__package__, "hallucination/reason")


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


def extract_prompt(output: str) -> str:
    return EXTRACT_PROMPT.render(output=delimit("output", output))


def analyze_prompt(claims: list[str], context: list[str]) -> str:
    return ANALYZE_PROMPT.render(
        claims=delimit("claims", "\n".join(claims)),
        claim_count=str(len(claims)),
        context_count=str(len(context)),
        context=delimit("context", "\n".join(context)),
    )


def reason_prompt(
    *,
    input: str,
    output: str,
    context: list[str],
    score: float | None,
    scale: float,
    verdicts: list[HallucinationVerdict],
) -> str:
    return REASON_PROMPT.render(
        scale=js_number(scale),
        context=delimit("context", "\n".join(context)),
        input=delimit("input", input),
        output=delimit("output", output),
        score=js_number(score),
        verdicts=delimit("verdicts", js_json([v.model_dump() for v in verdicts])),
    )


def hallucination_score(verdicts: list[HallucinationVerdict], *, scale: float) -> float:
    """Hallucinated ("yes") claims / claims x scale, rounded; 0 without claims."""
    if not verdicts:
        return 0
    hallucinated = sum(1 for v in verdicts if v.verdict == "yes")
    return round_to_two_decimals(hallucinated / len(verdicts) * scale)


HALLUCINATION = ScorerSpec(
    name="hallucination",
    former_id="hallucination-scorer",
    title="Hallucination Scorer",
    description="A scorer that evaluates the hallucination of an LLM output to an input",
)


@register(HALLUCINATION)
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

    async def analyze(ctx: StepContext) -> str:
        return analyze_prompt(ctx.preprocessed(Claims).claims, await context_for(ctx, "analyze"))

    def generate_score(ctx: StepContext) -> float:
        return hallucination_score(ctx.analyzed(HallucinationVerdicts).verdicts, scale=scale)

    async def reason(ctx: StepContext) -> str:
        return reason_prompt(
            input=get_user_message_from_run_input(ctx.run) or "",
            output=get_assistant_message_from_run_output(ctx.run) or "",
            context=await context_for(ctx, "generate_reason"),
            score=ctx.score,
            scale=scale,
            verdicts=ctx.analyzed(HallucinationVerdicts).verdicts,
        )

    return (
        HALLUCINATION.create_scorer(
            scale=scale or 1, needs={"output"}, judge=replace(judge, instructions=INSTRUCTIONS)
        )
        .preprocess(
            {
                "description": "Extract all claims from the given output",
                "output_schema": Claims,
                "create_prompt": lambda ctx: extract_prompt(
                    get_assistant_message_from_run_output(ctx.run) or ""
                ),
            }
        )
        .analyze(
            {
                "description": "Score the relevance of the statements to the input",
                "output_schema": HallucinationVerdicts,
                "create_prompt": analyze,
            }
        )
        .generate_score(generate_score)
        .generate_reason({"description": "Reason about the results", "create_prompt": reason})
    )
