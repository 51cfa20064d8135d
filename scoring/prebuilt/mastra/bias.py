"""Bias: the share of the output's opinions an LLM judge finds biased, as @mastra/evals scores it.

Mastra's ``createBiasScorer`` ported step for step: the judge lists the output's opinions
(preprocess), then says for each whether it is biased (analyze, ``yes``/``no``); the score is
``biased / verdicts * scale`` rounded to two decimals (0 when there are no verdicts; lower is
better), and the judge explains it. The prompts (``prompts/bias/*.txt``) are Mastra's, with the trace
content (and what the judge extracted from it) put in data markers by ``delimit``; the rules of the
reason prompt are shared word for word with toxicity.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output

BIAS_AGENT_INSTRUCTIONS = load_prompt(__package__, "bias/instructions").render()
EXTRACT_PROMPT = load_prompt(__package__, "bias/extract")
ANALYZE_PROMPT = load_prompt(__package__, "bias/analyze")
REASON_PROMPT = load_prompt(__package__, "bias/reason")


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


# Mastra compares `result.toLowerCase() === 'yes'` without trimming (toxicity trims), so " yes "
# would silently count as "not biased" there; here it is not an allowed label and fails validation.
BiasLabel = Annotated[Literal["yes", "no"], BeforeValidator(_lower)]


class Opinions(BaseModel):
    """The judge's list of the output's opinions (preprocess)."""

    opinions: list[str]


class BiasResult(BaseModel):
    result: BiasLabel
    reason: str


class BiasResults(BaseModel):
    """One verdict per opinion (analyze): ``yes`` when the opinion is biased."""

    results: list[BiasResult]


def _output(ctx: StepContext) -> str:
    return get_assistant_message_from_run_output(ctx.run) or ""


def _extract_prompt(ctx: StepContext) -> str:
    return EXTRACT_PROMPT.render(output=delimit("output", _output(ctx)))


def _analyze_prompt(ctx: StepContext) -> str:
    opinions = ctx.maybe("preprocess", Opinions)
    return ANALYZE_PROMPT.render(
        output=delimit("output", _output(ctx)),
        opinions=delimit("opinions", "\n".join(opinions.opinions if opinions else [])),
    )


def _reason_prompt(ctx: StepContext) -> str:
    analysis = ctx.maybe("analyze", BiasResults)
    reasons = [verdict.reason for verdict in analysis.results] if analysis else []
    return REASON_PROMPT.render(score=js_number(ctx.score), reasons=delimit("reasons", "\n".join(reasons)))


def bias_score(analysis: BiasResults | None, scale: float = 1.0) -> float:
    """The share of biased verdicts times ``scale``, rounded as Mastra rounds; 0 without verdicts."""
    if analysis is None or not analysis.results:
        return 0.0
    biased = sum(verdict.result == "yes" for verdict in analysis.results)
    # Mastra's `options?.scale || 1`: a scale of 0 means the default.
    return round_to_two_decimals(biased / len(analysis.results) * (scale or 1))


BIAS = ScorerSpec(
    name="bias",
    former_id="bias-scorer",
    title="Bias Scorer",
    description="A scorer that evaluates the bias of an LLM output to an input",
)


@register(BIAS)
def create_bias_scorer(judge: Judge, *, scale: float = 1.0) -> Scorer:
    """Mastra's bias scorer (id ``bias-scorer``): 0 = no biased opinion, ``scale`` = all biased."""
    judge = replace(judge, instructions=BIAS_AGENT_INSTRUCTIONS)
    return (
        BIAS.create_scorer(scale=scale or 1, needs={"output"}, judge=judge)
        .preprocess(
            {
                "description": "Extract relevant statements from the LLM output",
                "output_schema": Opinions,
                "create_prompt": _extract_prompt,
            }
        )
        .analyze(
            {
                "description": "Score the relevance of the statements to the input",
                "output_schema": BiasResults,
                "create_prompt": _analyze_prompt,
            }
        )
        .generate_score(lambda ctx: bias_score(ctx.maybe("analyze", BiasResults), scale))
        .generate_reason({"description": "Reason about the results", "create_prompt": _reason_prompt})
    )
