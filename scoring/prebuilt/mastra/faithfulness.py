"""Faithfulness (Mastra's ``createFaithfulnessScorer``): how much of the answer the context supports.

The judge extracts the answer's claims, then checks each against the context: ``yes`` (supported),
``no`` (contradicted) or ``unsure`` (not in the context). Score = yes / claims x ``scale``, rounded to
two decimals; no claims scores 0.

The context is the ``context`` option when given (as in Mastra), else the run's own retrieved
``context``, else the results of the run's tool calls (Mastra's fallback). The run's context is our
addition: Mastra's runs do not carry one.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from schemas import AgentRun
from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import Claims, YesNoUnsure, js_json, js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = """You are a precise and thorough faithfulness evaluator. Your job is to determine \
if LLM outputs \
are factually consistent with the provided context, focusing on claim verification.

Key Principles:
1. First extract all claims from the output (both factual and speculative)
2. Then verify each extracted claim against the provided context
3. Consider a claim truthful if it is explicitly supported by the context
4. Consider a claim contradictory if it directly conflicts with the context
5. Consider a claim unsure if it is not mentioned in the context
6. Empty outputs should be handled as having no claims
7. Focus on factual consistency, not relevance or completeness
8. Never use prior knowledge in judgments
9. Claims with speculative language (may, might, possibly) should be marked as "unsure\""""


class FaithfulnessVerdict(BaseModel):
    verdict: YesNoUnsure
    reason: str


class FaithfulnessVerdicts(BaseModel):
    verdicts: list[FaithfulnessVerdict]


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

Please return only JSON format with "claims" array.
Return empty list for empty input.

Text:
{delimit("output", output)}

JSON:"""


def analyze_prompt(claims: list[str], context: list[str]) -> str:
    return f"""Verify each claim against the provided context. Determine if each claim is supported by, \
contradicts, or is not mentioned in the context.

Context:
{delimit("context", chr(10).join(context))}

Number of claims: {len(claims)}

Claims to verify:
{delimit("claims", chr(10).join(claims))}

For each claim, provide a verdict and reasoning. The verdict must be one of:
- "yes" if the claim is supported by the context
- "no" if the claim directly contradicts the context
- "unsure" if the claim is not mentioned in the context or cannot be verified

The number of verdicts MUST MATCH the number of claims exactly.

Format:
{{
    "verdicts": [
        {{
            "claim": "claim text",
            "verdict": "yes/no/unsure",
            "reason": "explanation of verification"
        }}
    ]
}}

Rules:
- Only use information from the provided context
- Mark claims as "no" ONLY if they directly contradict the context
- Mark claims as "yes" if they are explicitly supported by the context
- Mark claims as "unsure" if they are not mentioned in the context
- Claims with speculative language (may, might, possibly) should be marked as "unsure"
- Never use prior knowledge in your judgment
- Provide clear reasoning for each verdict
- Be specific about where in the context the claim is supported or contradicted

Example:
Context: "The Tesla Model S was launched in 2012. The car has a maximum range of 375 miles and comes with \
advanced autopilot features."
Claims: ["The Tesla Model S was launched in 2012", "The Tesla Model S has a range of 405 miles", \
"The car might \
get software updates"]
{{
    "verdicts": [
        {{
            "claim": "The Tesla Model S was launched in 2012",
            "verdict": "yes",
            "reason": "This is explicitly stated in the context"
        }},
        {{
            "claim": "The Tesla Model S has a range of 405 miles",
            "verdict": "no",
            "reason": "The context states the maximum range is 375 miles, contradicting the claim \
of 405 miles"
        }},
        {{
            "claim": "The car might get software updates",
            "verdict": "unsure",
            "reason": "This is speculative and not mentioned in the context"
        }}
    ]
}}"""


def reason_prompt(
    *,
    input: str,
    output: str,
    context: list[str],
    score: float | None,
    scale: float,
    verdicts: list[FaithfulnessVerdict],
) -> str:
    verdicts_json = js_json([v.model_dump() for v in verdicts])
    return f"""Explain the faithfulness score 0 is the lowest and {js_number(scale)} is the highest \
for the LLM's \
response using this context:

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
- Explain score based on ratio of supported claims ("yes" verdicts) to total claims
- Focus on factual consistency with context
- Keep explanation concise and focused
- Use given score, don't recalculate
- Explain both supported and contradicted aspects
- For mixed cases, explain the balance
- If no contradictions, use a positive but professional tone
- Base explanation only on the verified claims, not prior knowledge

Format:
"The score is {{score}} because {{explanation of faithfulness}}"

Example Responses:
"The score is 1.0 because all claims made in the output are supported by the provided context"
"The score is 0.5 because while half of the claims are supported by the context, the remaining claims either \
contradict the context or cannot be verified\""""


def tool_result_context(run: AgentRun) -> list[str]:
    """Mastra's ``getToolInvocationContext``: each finished tool call's result as JSON."""
    return [
        js_json(call.result)
        for message in run.output
        if message.role == "assistant"
        for call in message.tool_invocations
        if call.state == "result"
    ]


def faithfulness_score(verdicts: list[FaithfulnessVerdict], *, scale: float) -> float:
    """Supported claims / claims x scale, rounded; 0 without claims."""
    if not verdicts:
        return 0
    supported = sum(1 for v in verdicts if v.verdict == "yes")
    return round_to_two_decimals(supported / len(verdicts) * scale)


FAITHFULNESS = ScorerSpec(
    name="faithfulness",
    id="faithfulness-scorer",
    title="Faithfulness Scorer",
    description="A scorer that evaluates the faithfulness of an LLM output to an input",
)


@register(FAITHFULNESS)
def create_faithfulness_scorer(judge: Judge, scale: float = 1, context: list[str] | None = None) -> Scorer:
    """Mastra's faithfulness scorer; ``context`` replaces the run's context and tool results."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    fixed_context = list(context) if context is not None else None

    def context_of(run: AgentRun) -> list[str]:
        if fixed_context is not None:
            return fixed_context
        return list(run.context) or tool_result_context(run)

    def analyze(ctx: StepContext) -> str:
        claims: Claims = ctx.results["preprocess_step_result"]
        return analyze_prompt(claims.claims, context_of(ctx.run))

    def generate_score(ctx: StepContext) -> float:
        return faithfulness_score(ctx.results["analyze_step_result"].verdicts, scale=scale)

    def reason(ctx: StepContext) -> str:
        return reason_prompt(
            input=get_user_message_from_run_input(ctx.run) or "",
            output=get_assistant_message_from_run_output(ctx.run) or "",
            context=context_of(ctx.run),
            score=ctx.score,
            scale=scale,
            verdicts=ctx.results["analyze_step_result"].verdicts,
        )

    return (
        FAITHFULNESS.create_scorer(
            scale=scale or 1, needs={"output"}, judge=replace(judge, instructions=INSTRUCTIONS)
        )
        .preprocess(
            {
                "description": "Extract relevant statements from the LLM output",
                "output_schema": Claims,
                "create_prompt": lambda ctx: extract_prompt(
                    get_assistant_message_from_run_output(ctx.run) or ""
                ),
            }
        )
        .analyze(
            {
                "description": "Score the relevance of the statements to the input",
                "output_schema": FaithfulnessVerdicts,
                "create_prompt": analyze,
            }
        )
        .generate_score(generate_score)
        .generate_reason({"description": "Reason about the results", "create_prompt": reason})
    )
