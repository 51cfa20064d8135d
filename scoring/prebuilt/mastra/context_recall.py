"""Context recall: the share of the ground truth's claims an LLM judge finds in the context.

Mastra's ``createContextRecallScorer`` ported: the judge splits the run's ``ground_truth`` into
atomic claims (preprocess), then says for each whether the retrieved context supports it
(analyze, ``yes``/``no``); the score is ``min(1, attributed / claims) * scale`` rounded to two
decimals, and 0 when the run has no ground truth or the judge finds no claims. A ground truth that
is not a string is sent as JSON, as Mastra does.

Context comes from ``context_extractor(run)``, ``context`` or, without both, the run's own context
(see ``scoring.prebuilt.mastra.context_precision``); an empty context is judged as such (Mastra does not
refuse it: every claim is then unattributable).
"""

# ruff: noqa: E501  -- the prompts are Mastra's text verbatim, long lines included

from __future__ import annotations

import json
from dataclasses import replace
from string import Template
from typing import Any

from pydantic import BaseModel

from schemas import AgentRun
from scoring.judge import Judge, delimit
from scoring.prebuilt.mastra.context_precision import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from scoring.prebuilt.judge_helpers import Claims, YesNo, js_json, js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext

CONTEXT_RECALL_AGENT_INSTRUCTIONS = """You are a precise context recall evaluator. Your job is to determine if the retrieved context contains enough information to support all the claims in a ground-truth reference answer.

Key Principles:
1. First extract all atomic claims/sentences from the ground-truth answer
2. Then verify each claim against the provided retrieval context
3. A claim is attributable if any part of the retrieval context directly supports it
4. A claim is not attributable if no part of the retrieval context mentions or implies it
5. Focus on information coverage, not exact wording
6. Be strict in attribution - the context must actually contain supporting information
7. Never use prior knowledge in judgments - only use the provided context"""

_EXTRACT_PROMPT = Template(
    """Extract all atomic claims from the given ground-truth answer. A claim is any single statement that asserts one piece of information.

Guidelines for claim extraction:
- Break down compound statements into individual claims
- Each claim should be self-contained and verifiable independently
- Include all factual assertions, including numbers, dates, and quantities
- Keep relationships between entities intact within each claim
- Exclude questions, commands, and purely stylistic text
- Preserve the original meaning without adding interpretation

Example:
Text: "Albert Einstein was born on 14 March 1879 in Ulm, Germany. He developed the theory of relativity and won the Nobel Prize in Physics in 1921."

{
    "claims": [
        "Albert Einstein was born on 14 March 1879",
        "Albert Einstein was born in Ulm, Germany",
        "Albert Einstein developed the theory of relativity",
        "Albert Einstein won the Nobel Prize in Physics",
        "Albert Einstein won the Nobel Prize in 1921"
    ]
}

Please return only JSON format with "claims" array.
Return empty list for empty input.

Ground-Truth Answer:
${groundTruth}

JSON:
"""
)

_ANALYZE_PROMPT = Template(
    """Determine if each claim from the ground-truth answer can be attributed to the provided retrieval context. A claim is attributable if any part of the context directly supports or contains the information in that claim.

Retrieval Context:
${context}

Number of claims: ${claim_count}

Claims to verify:
${claims}

For each claim, provide a verdict and reasoning. The verdict must be one of:
- "yes" if the claim can be attributed to information in the retrieval context
- "no" if the claim cannot be attributed to any part of the retrieval context

The number of verdicts MUST MATCH the number of claims exactly.

Format:
{
    "verdicts": [
        {
            "verdict": "yes/no",
            "reason": "explanation of why this claim is or isn't attributable to the context"
        }
    ]
}

Rules:
- Only use information from the provided retrieval context
- Mark claims as "yes" if the context contains supporting information, even if the wording differs
- Mark claims as "no" if the context does not mention or imply the information
- Never use prior knowledge in your judgment
- Provide clear reasoning that references specific context pieces

Example:
Context:
[0] "Albert Einstein was born on 14 March 1879 in Ulm, Germany."
[1] "Einstein published his theory of special relativity in 1905."

Claims:
[0] "Albert Einstein was born on 14 March 1879"
[1] "Albert Einstein won the Nobel Prize in 1921"

{
    "verdicts": [
        {
            "verdict": "yes",
            "reason": "Context node [0] explicitly states Einstein was born on 14 March 1879"
        },
        {
            "verdict": "no",
            "reason": "No part of the retrieval context mentions Einstein winning the Nobel Prize"
        }
    ]
}"""
)

_REASON_PROMPT = Template(
    """Explain the context recall score for the retrieval context based on how well it covers the claims in the ground-truth answer.

Ground-Truth Answer:
${groundTruth}

Retrieval Context:
${context}

Score: ${score} out of ${scale}
Verdicts:
${verdicts}

Context Recall measures what fraction of the ground-truth answer's claims are supported by the retrieved context. The score is calculated as:
- Extract all claims from the ground-truth answer
- Check each claim against the retrieval context
- Score = (attributed claims / total claims) × scale

Rules for explanation:
- Explain which claims were and were not found in the context
- Mention specific context pieces that supported attributed claims
- Highlight what information was missing for unattributed claims
- Keep explanation concise and focused on coverage gaps
- Use the given score, don't recalculate

Format:
"The score is ${score} because {explanation of context recall}"

Example responses:
"The score is 0.67 because 2 out of 3 ground-truth claims are supported by the retrieval context. The claims about Einstein's birthdate and birthplace are covered by context node [0], but the claim about the Nobel Prize is not mentioned in any context node."
"The score is 1.0 because all claims in the ground-truth answer are fully supported by the retrieval context."
"The score is 0.0 because none of the ground-truth claims could be attributed to the retrieval context.\""""
)


class ClaimVerdict(BaseModel):
    verdict: YesNo
    reason: str


class ClaimVerdicts(BaseModel):
    """One verdict per claim (analyze): ``yes`` when the context supports the claim."""

    verdicts: list[ClaimVerdict]


def _js_falsy(value: Any) -> bool:
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
    id="context-recall-scorer",
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
        return _EXTRACT_PROMPT.substitute(groundTruth=delimit("ground truth", ground_truth_text(ctx.run)))

    def analyze_prompt(ctx: StepContext) -> str:
        extracted: Claims | None = ctx.results.get("preprocess_step_result")
        claims = extracted.claims if extracted else []
        return _ANALYZE_PROMPT.substitute(
            context=numbered(resolve_context(ctx.run, context, context_extractor)),
            claim_count=len(claims),
            claims=delimit("claims", "\n".join(f"[{i}] {claim}" for i, claim in enumerate(claims))),
        )

    def score(ctx: StepContext) -> float:
        return context_recall_score(
            ctx.run, ctx.results.get("preprocess_step_result"), ctx.results.get("analyze_step_result"), scale
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis: ClaimVerdicts | None = ctx.results.get("analyze_step_result")
        verdicts = [v.model_dump() for v in analysis.verdicts] if analysis else []
        return _REASON_PROMPT.substitute(
            groundTruth=delimit("ground truth", ground_truth_text(ctx.run)),
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
