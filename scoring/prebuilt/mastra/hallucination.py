"""Hallucination (Mastra's ``createHallucinationScorer``): how much of the answer the context does not back.

The judge extracts the answer's claims, then marks each ``yes`` (a hallucination: contradicts the
context or is not supported by it) or ``no``. Score = hallucinated claims / claims x ``scale``,
rounded to two decimals (higher is worse); no claims scores 0.

The context comes from ``get_context`` when given (called for the analyze and the reason step, sync
or async), else the ``context`` option, else -- our addition, Mastra's runs carry none -- the run's
own retrieved ``context``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from schemas import AgentRun
from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import Claims, YesNo, js_json, js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = """You are a precise and thorough hallucination evaluator. Your job is to determine \
if an LLM's \
output contains information not supported by or contradicts the provided context.

Key Principles:
1. First extract all claims from the output (both factual and speculative)
2. Then verify each extracted claim against the provided context
3. Consider it a hallucination if a claim contradicts the context
4. Consider it a hallucination if a claim makes assertions not supported by context
5. Empty outputs should be handled as having no hallucinations
6. Speculative language (may, might, possibly) about facts IN the context is NOT a hallucination
7. Speculative language about facts NOT in the context IS a hallucination
8. Never use prior knowledge in judgments - only use what's explicitly stated in context
9. The following are NOT hallucinations:
   - Using less precise dates (e.g., year when context gives month)
   - Reasonable numerical approximations
   - Omitting additional details while maintaining factual accuracy
10. Subjective claims ("made history", "pioneering", "leading") are hallucinations unless explicitly stated \
in context"""


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
    return f"""Extract all claims from the given output. A claim is any statement that asserts information, \
including both factual and speculative assertions.

Guidelines for claim extraction:
- Break down compound statements into individual claims
- Include all statements that assert information
- Include both definitive and speculative claims (using words like may, might, could)
- Extract specific details like numbers, dates, and quantities
- Keep relationships between entities
- Include predictions and possibilities
- Extract claims with their full context
- Exclude only questions and commands

===== Example =====
Example:
Text: "The Tesla Model S was launched in 2012 and has a range of 405 miles. The car can accelerate \
from 0 to 60 \
mph in 1.99 seconds. I think it might be the best electric car ever made and could receive major \
updates next \
year."

{{
    "claims": [
        "The Tesla Model S was launched in 2012",
        "The Tesla Model S has a range of 405 miles",
        "The Tesla Model S can accelerate from 0 to 60 mph in 1.99 seconds",
        "The Tesla Model S might be the best electric car ever made",
        "The Tesla Model S could receive major updates next year"
    ]
}}
Note: All assertions are included, even speculative ones, as they need to be verified against the context.

===== END OF EXAMPLE ======
Please return only JSON format with "claims" array.
Return empty list for empty OUTPUT.

Output:
{delimit("output", output)}

# Important Instructions
- If the output above is empty (contains no text), you MUST return exactly this JSON: {{"claims": []}}
- Only extract claims if there is actual text in the output section

JSON:"""


def analyze_prompt(claims: list[str], context: list[str]) -> str:
    return f"""Verify if the claims contain any information not supported by or contradicting the provided \
context. A hallucination occurs when a claim either:
1. Contradicts the context
2. Makes assertions not supported by the context

Claims to verify:
{delimit("claims", chr(10).join(claims))}

Number of claims: {len(claims)}

Number of context statements: {len(context)}

Context statements:
{delimit("context", chr(10).join(context))}

For each claim, determine if it is supported by the context. When evaluating:

1. NOT Hallucinations:
   - Using less precise dates (e.g., year when context gives month)
   - Reasonable numerical approximations
   - Omitting additional details while maintaining factual accuracy
   - Speculative language about facts present in context

2. ARE Hallucinations:
   - Claims that contradict the context
   - Assertions not supported by context
   - Speculative claims about facts not in context
   - Subjective claims not explicitly supported by context

=== Example ===
Context: [
  "SpaceX achieved first successful landing in December 2015.",
  "Their reusable rocket technology reduced launch costs by 30%."
]
Claims: [
  "SpaceX made history in 2015",
  "SpaceX had pioneering reusable rockets",
  "reusable rockets significantly cut costs",
  "They might expand operations globally"
]
{{
    "verdicts": [
        {{
            "statement": "SpaceX made history in 2015",
            "verdict": "yes",
            "reason": "The subjective claim 'made history' and the year are not supported by context"
        }},
        {{
            "statement": "SpaceX had pioneering reusable rockets",
            "verdict": "yes",
            "reason": "The subjective claim 'pioneering' is not supported by context"
        }},
        {{
            "statement": "reusable rockets significantly cut costs",
            "verdict": "no",
            "reason": "Context supports that costs were reduced by 30%, this is a reasonable paraphrase"
        }},
        {{
            "statement": "They might expand operations globally",
            "verdict": "yes",
            "reason": "This speculative claim about facts not in context is a hallucination"
        }}
    ]
}}

Rules:
- Mark as hallucination if information contradicts context
- Mark as hallucination if assertions aren't supported by context
- Every factual claim must be verified
- Never use prior knowledge in your judgment
- Provide clear reasoning for each verdict
- Be specific about what information is or isn't supported by context
- Allow reasonable approximations and less precise dates

Format:
{{
    "verdicts": [
        {{
            "statement": "individual claim",
            "verdict": "yes/no",
            "reason": "explanation of whether the claim is supported by context"
        }}
    ]
}}

If there are no claims, return an empty array for verdicts."""


def reason_prompt(
    *,
    input: str,
    output: str,
    context: list[str],
    score: float | None,
    scale: float,
    verdicts: list[HallucinationVerdict],
) -> str:
    verdicts_json = js_json([v.model_dump() for v in verdicts])
    return f"""Explain the hallucination score where 0 is the lowest and {js_number(scale)} is the \
highest for \
the LLM's response using this context:
Context:
{delimit("context", chr(10).join(context))}
Input:
{delimit("input", input)}
Output:
{delimit("output", output)}
Score: {js_number(score)}
Verdicts:
{delimit("verdicts", verdicts_json)}
Rules:
- Explain score based on ratio of contradicted statements to total statements
- Focus on factual inconsistencies with context
- Keep explanation concise and focused
- Use given score, don't recalculate
- Explain both contradicted and non-contradicted aspects
- For mixed cases, explain the balance
- Base explanation only on the verified statements, not prior knowledge
Format:
"The score is {{score}} because {{explanation of hallucination}}"

Example Responses:
"The score is 0.0 because none of the statements from the context were contradicted by the output"
"The score is 0.5 because half of the statements from the context were directly contradicted by \
claims in the \
output\""""


def hallucination_score(verdicts: list[HallucinationVerdict], *, scale: float) -> float:
    """Hallucinated ("yes") claims / claims x scale, rounded; 0 without claims."""
    if not verdicts:
        return 0
    hallucinated = sum(1 for v in verdicts if v.verdict == "yes")
    return round_to_two_decimals(hallucinated / len(verdicts) * scale)


HALLUCINATION = ScorerSpec(
    name="hallucination",
    id="hallucination-scorer",
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
        claims: Claims = ctx.results["preprocess_step_result"]
        return analyze_prompt(claims.claims, await context_for(ctx, "analyze"))

    def generate_score(ctx: StepContext) -> float:
        return hallucination_score(ctx.results["analyze_step_result"].verdicts, scale=scale)

    async def reason(ctx: StepContext) -> str:
        return reason_prompt(
            input=get_user_message_from_run_input(ctx.run) or "",
            output=get_assistant_message_from_run_output(ctx.run) or "",
            context=await context_for(ctx, "generate_reason"),
            score=ctx.score,
            scale=scale,
            verdicts=ctx.results["analyze_step_result"].verdicts,
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
