"""Bias: the share of the output's opinions an LLM judge finds biased, as @mastra/evals scores it.

Mastra's ``createBiasScorer`` ported step for step: the judge lists the output's opinions
(preprocess), then says for each whether it is biased (analyze, ``yes``/``no``); the score is
``biased / verdicts * scale`` rounded to two decimals (0 when there are no verdicts; lower is
better), and the judge explains it. The prompts (``prompts/bias/*.txt``) are Mastra's, with the trace
content (and what the judge extracted from it) put in data markers by ``delimit``; the rules of the
reason prompt are shared word for word with toxicity.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.judge_helpers import delimited_lines, verdict_share
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


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


BIAS = JudgeTemplate(
    ScorerSpec(
        name="bias",
        former_id="bias-scorer",
        title="Bias Scorer",
        description="A scorer that evaluates the bias of an LLM output to an input",
    ),
    __package__,
    "bias",
    extract=Ask("Extract relevant statements from the LLM output", Opinions),
    analyze=Ask("Score the relevance of the statements to the input", BiasResults),
    reason=Ask("Reason about the results"),
)


@register(BIAS.spec)
def create_bias_scorer(judge: Judge, *, scale: float = 1.0) -> Scorer:
    """Mastra's bias scorer (id ``bias-scorer``): 0 = no biased opinion, ``scale`` = all biased."""

    def results(ctx: StepContext) -> list[BiasResult]:
        return ctx.analyzed(BiasResults).results

    return BIAS.scorer(
        judge,
        scale=scale,
        needs={"output"},
        analyze=lambda ctx: {"opinions": delimited_lines("opinions", ctx.preprocessed(Opinions).opinions)},
        # Mastra's `options?.scale || 1`: a scale of 0 means the default.
        score=lambda ctx: verdict_share([r.result for r in results(ctx)], scale=scale or 1),
        reason=lambda ctx: {"reasons": delimited_lines("reasons", [r.reason for r in results(ctx)])},
    )
