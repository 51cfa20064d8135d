"""Context precision: Mean Average Precision of the context pieces an LLM judge finds relevant.

Mastra's ``createContextPrecisionScorer`` ported: the judge gives each context piece a ``yes``/``no``
verdict on whether it helps produce the output (analyze); verdicts are sorted by ``context_index``
and the score is MAP -- the mean, over the relevant pieces, of the precision at each relevant
position -- times ``scale``, rounded to two decimals; 0 when no piece is relevant or there are no
verdicts. Relevant pieces early in the list score higher.

The context is ``context`` (fixed pieces) or ``context_extractor(run)``, as in Mastra; without
either (Mastra requires one) the run's own retrieved ``context`` is used, and the scorer then
``needs`` it. An empty ``context`` option is refused; an empty context at run time fails the run.
"""

from __future__ import annotations

from pydantic import BaseModel

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import YesNo, js_pretty_json, round_to_two_decimals
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.mastra.context_source import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class ContextVerdict(BaseModel):
    context_index: int
    verdict: YesNo
    reason: str


class ContextVerdicts(BaseModel):
    """One verdict per context piece (analyze): ``yes`` when the piece is relevant."""

    verdicts: list[ContextVerdict]


CONTEXT_PRECISION = JudgeTemplate(
    ScorerSpec(
        name="context-precision",
        former_id="context-precision-scorer",
        title="Context Precision Scorer",
        description=(
            "A scorer that evaluates the relevance and precision of retrieved context nodes for generating "
            "expected outputs"
        ),
    ),
    __package__,
    "context_precision",
    analyze=Ask(
        "Evaluate the relevance of each context piece for generating the expected output", ContextVerdicts
    ),
    reason=Ask("Reason about the context precision results"),
)


def sorted_verdicts(analysis: ContextVerdicts) -> list[ContextVerdict]:
    return sorted(analysis.verdicts, key=lambda v: v.context_index)


def context_precision_score(analysis: ContextVerdicts, scale: float = 1.0) -> float:
    """Mean Average Precision over the verdicts in ``context_index`` order, times ``scale``."""
    sum_precision = 0.0
    relevant = 0
    for position, verdict in enumerate(sorted_verdicts(analysis), start=1):
        if verdict.verdict == "yes":
            relevant += 1
            sum_precision += relevant / position  # precision at this position
    if relevant == 0:
        return 0.0
    return round_to_two_decimals(sum_precision / relevant * (scale or 1))


@register(CONTEXT_PRECISION.spec)
def create_context_precision_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
) -> Scorer:
    """Mastra's context precision scorer (id ``context-precision-scorer``), 0..``scale``."""
    check_context_options(context)

    def analyze(ctx: StepContext) -> dict[str, str]:
        pieces = resolve_context(ctx.run, context, context_extractor)
        if not pieces:
            raise ValueError("No context available for evaluation")
        return {"context": numbered(pieces)}

    def reason(ctx: StepContext) -> dict[str, str]:
        verdicts = [v.model_dump() for v in sorted_verdicts(ctx.analyzed(ContextVerdicts))]
        return {
            "context": numbered(resolve_context(ctx.run, context, context_extractor)),
            "verdicts": delimit("verdicts", js_pretty_json(verdicts)),
        }

    return CONTEXT_PRECISION.scorer(
        judge,
        scale=scale,
        needs=context_needs(context, context_extractor),
        analyze=analyze,
        score=lambda ctx: context_precision_score(ctx.analyzed(ContextVerdicts), scale),
        reason=reason,
    )
