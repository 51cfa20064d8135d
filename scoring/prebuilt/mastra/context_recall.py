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

import json
from dataclasses import replace

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import Claims, YesNo, js_json, js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.mastra.context_source import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

CONTEXT_RECALL_AGENT_INSTRUCTIONS = load_prompt(__package__, "context_recall/instructions").render()
EXTRACT_PROMPT = load_prompt(__package__, "context_recall/extract")
ANALYZE_PROMPT = load_prompt(__package__, "context_recall/analyze")
REASON_PROMPT = load_prompt(__package__, "context_recall/reason")


class ClaimVerdict(BaseModel):
    verdict: YesNo
    reason: str


class ClaimVerdicts(BaseModel):
    """One verdict per claim (analyze): ``yes`` when the context supports the claim."""

    verdicts: list[ClaimVerdict]


def _js_falsy(value: object) -> bool:
    """``!value`` in JavaScript for JSON values: null, false, "", 0 (an empty list or object is truthy)."""
    if value is None or value is False or value == "":
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def ground_truth_text(run: AgentRun) -> str:
    """The run's ground truth as Mastra sends it: a string as is, anything else as JSON, none as ""."""
    truth = run.ground_truth
    if _js_falsy(truth):
        return ""
    return truth if isinstance(truth, str) else js_json(truth)


def context_recall_score(
    run: AgentRun, claims: Claims | None, analysis: ClaimVerdicts | None, scale: float = 1.0
) -> float:
    """``min(1, attributed / claims) * scale``; 0 without ground truth or claims."""
    if _js_falsy(run.ground_truth):
        return 0.0
    total = len(claims.claims) if claims else 0
    if total == 0:
        return 0.0
    attributed = sum(v.verdict == "yes" for v in (analysis.verdicts if analysis else []))
    # min(1, ...): a judge answering more verdicts than claims cannot push recall above 1.
    return round_to_two_decimals(min(1.0, attributed / total) * (scale or 1))


CONTEXT_RECALL = ScorerSpec(
    name="context-recall",
    former_id="context-recall-scorer",
    title="Context Recall Scorer",
    description=(
        "A scorer that evaluates how well retrieved context covers the claims in a ground-truth "
        "reference answer"
    ),
)


@register(CONTEXT_RECALL)
def create_context_recall_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
) -> Scorer:
    """Mastra's context recall scorer (id ``context-recall-scorer``), 0..``scale``."""
    check_context_options(context)

    def extract_prompt(ctx: StepContext) -> str:
        return EXTRACT_PROMPT.render(ground_truth=delimit("ground truth", ground_truth_text(ctx.run)))

    def analyze_prompt(ctx: StepContext) -> str:
        extracted = ctx.maybe("preprocess", Claims)
        claims = extracted.claims if extracted else []
        return ANALYZE_PROMPT.render(
            context=numbered(resolve_context(ctx.run, context, context_extractor)),
            claim_count=str(len(claims)),
            claims=delimit("claims", "\n".join(f"[{i}] {claim}" for i, claim in enumerate(claims))),
        )

    def score(ctx: StepContext) -> float:
        return context_recall_score(
            ctx.run, ctx.maybe("preprocess", Claims), ctx.maybe("analyze", ClaimVerdicts), scale
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis = ctx.maybe("analyze", ClaimVerdicts)
        verdicts = [v.model_dump() for v in analysis.verdicts] if analysis else []
        return REASON_PROMPT.render(
            ground_truth=delimit("ground truth", ground_truth_text(ctx.run)),
            context=numbered(resolve_context(ctx.run, context, context_extractor)),
            score=js_number(ctx.score),
            scale=js_number(scale or 1),
            verdicts=delimit("verdicts", json.dumps(verdicts, indent=2, ensure_ascii=False)),
        )

    return (
        CONTEXT_RECALL.create_scorer(
            scale=scale or 1,
            needs=(context_needs(context, context_extractor) - {"input", "output"}) | {"ground_truth"},
            judge=replace(judge, instructions=CONTEXT_RECALL_AGENT_INSTRUCTIONS),
        )
        .preprocess(
            {
                "description": "Extract atomic claims from the ground-truth answer",
                "output_schema": Claims,
                "create_prompt": extract_prompt,
            }
        )
        .analyze(
            {
                "description": "Check if each ground-truth claim is attributable to the retrieval context",
                "output_schema": ClaimVerdicts,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(score)
        .generate_reason(
            {"description": "Explain the context recall evaluation results", "create_prompt": reason_prompt}
        )
    )
