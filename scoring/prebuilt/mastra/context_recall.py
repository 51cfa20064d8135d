"""Context recall: the share of the ground truth's claims an LLM judge finds in the context.

Mastra's ``createContextRecallScorer`` ported: the judge splits the run's ``ground_truth`` into
atomic claims (preprocess), then says for each whether the retrieved context supports it
(analyze, ``yes``/``no``); the score is ``min(1, attributed / claims) * scale`` rounded to two
decimals, and 0 when the run has no ground truth or the judge finds no claims. A ground truth that
is not a string is sent as JSON, as Mastra does.

Context comes from ``context_extractor(run)``, ``context`` or, without both, the run's own context
(see ``scoring.prebuilt.mastra.context_source``); an empty context is judged as such (Mastra does not
refuse it: every claim is then unattributable).
"""

from __future__ import annotations

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    Claims,
    YesNo,
    js_pretty_json,
    js_text,
    js_truthy,
    round_to_two_decimals,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.mastra.context_source import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class ClaimVerdict(BaseModel):
    verdict: YesNo
    reason: str


class ClaimVerdicts(BaseModel):
    """One verdict per claim (analyze): ``yes`` when the context supports the claim."""

    verdicts: list[ClaimVerdict]


CONTEXT_RECALL = JudgeTemplate(
    ScorerSpec(
        name="context-recall",
        former_id="context-recall-scorer",
        title="Context Recall Scorer",
        description=(
            "A scorer that evaluates how well retrieved context covers the claims in a ground-truth "
            "reference answer"
        ),
    ),
    __package__,
    "context_recall",
    extract=Ask("Extract atomic claims from the ground-truth answer", Claims),
    analyze=Ask("Check if each ground-truth claim is attributable to the retrieval context", ClaimVerdicts),
    reason=Ask("Explain the context recall evaluation results"),
)


def ground_truth_text(run: AgentRun) -> str:
    """The run's ground truth as Mastra sends it: a string as is, anything else as JSON, none as ""."""
    return js_text(run.ground_truth) if js_truthy(run.ground_truth) else ""


def context_recall_score(run: AgentRun, claims: Claims, analysis: ClaimVerdicts, scale: float = 1.0) -> float:
    """``min(1, attributed / claims) * scale``; 0 without ground truth or claims."""
    if not js_truthy(run.ground_truth) or not claims.claims:
        return 0.0
    attributed = sum(v.verdict == "yes" for v in analysis.verdicts)
    # min(1, ...): a judge answering more verdicts than claims cannot push recall above 1.
    return round_to_two_decimals(min(1.0, attributed / len(claims.claims)) * (scale or 1))


@register(CONTEXT_RECALL.spec)
def create_context_recall_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
) -> Scorer:
    """Mastra's context recall scorer (id ``context-recall-scorer``), 0..``scale``."""
    check_context_options(context)

    def context_of(ctx: StepContext) -> str:
        return numbered(resolve_context(ctx.run, context, context_extractor))

    def ground_truth(ctx: StepContext) -> str:
        return delimit("ground truth", ground_truth_text(ctx.run))

    def analyze(ctx: StepContext) -> dict[str, str]:
        claims = ctx.preprocessed(Claims).claims
        return {
            "context": context_of(ctx),
            "claim_count": str(len(claims)),
            "claims": delimit("claims", "\n".join(f"[{i}] {claim}" for i, claim in enumerate(claims))),
        }

    def reason(ctx: StepContext) -> dict[str, str]:
        verdicts = [v.model_dump() for v in ctx.analyzed(ClaimVerdicts).verdicts]
        return {
            "ground_truth": ground_truth(ctx),
            "context": context_of(ctx),
            "verdicts": delimit("verdicts", js_pretty_json(verdicts)),
        }

    return CONTEXT_RECALL.scorer(
        judge,
        scale=scale,
        needs=(context_needs(context, context_extractor) - {"input", "output"}) | {"ground_truth"},
        extract=lambda ctx: {"ground_truth": ground_truth(ctx)},
        analyze=analyze,
        score=lambda ctx: context_recall_score(
            ctx.run, ctx.preprocessed(Claims), ctx.analyzed(ClaimVerdicts), scale
        ),
        reason=reason,
    )
