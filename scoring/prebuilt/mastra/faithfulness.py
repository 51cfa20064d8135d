"""Faithfulness (Mastra's ``createFaithfulnessScorer``): how much of the answer the context supports.

The judge extracts the answer's claims, then checks each against the context: ``yes`` (supported),
``no`` (contradicted) or ``unsure`` (not in the context). Score = yes / claims x ``scale``, rounded to
two decimals; no claims scores 0.

The context is the ``context`` option when given (as in Mastra), else the run's own retrieved
``context``, else the results of the run's tool calls (Mastra's fallback). The run's context is our
addition: Mastra's runs do not carry one.

The prompts are ``prompts/faithfulness/*.txt``; the claim extraction and the principles of the
instructions are shared word for word with hallucination (``prompts/shared/claims/``).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    Claims,
    YesNoUnsure,
    js_json,
    js_number,
    round_to_two_decimals,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

INSTRUCTIONS = load_prompt(__package__, "faithfulness/instructions").render()
EXTRACT_PROMPT = load_prompt(__package__, "faithfulness/extract")
ANALYZE_PROMPT = load_prompt(__package__, "faithfulness/analyze")
REASON_PROMPT = load_prompt(__package__, "faithfulness/reason")


class FaithfulnessVerdict(BaseModel):
    verdict: YesNoUnsure
    reason: str


class FaithfulnessVerdicts(BaseModel):
    verdicts: list[FaithfulnessVerdict]


def extract_prompt(output: str) -> str:
    return EXTRACT_PROMPT.render(output=delimit("output", output))


def analyze_prompt(claims: list[str], context: list[str]) -> str:
    return ANALYZE_PROMPT.render(
        context=delimit("context", "\n".join(context)),
        claim_count=str(len(claims)),
        claims=delimit("claims", "\n".join(claims)),
    )


def reason_prompt(
    *,
    input: str,
    output: str,
    context: list[str],
    score: float | None,
    scale: float,
    verdicts: list[FaithfulnessVerdict],
) -> str:
    return REASON_PROMPT.render(
        scale=js_number(scale),
        context=delimit("context", "\n".join(context)),
        input=delimit("input", input),
        output=delimit("output", output),
        score=js_number(score),
        verdicts=delimit("verdicts", js_json([v.model_dump() for v in verdicts])),
    )


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
    former_id="faithfulness-scorer",
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
        return analyze_prompt(ctx.preprocessed(Claims).claims, context_of(ctx.run))

    def generate_score(ctx: StepContext) -> float:
        return faithfulness_score(ctx.analyzed(FaithfulnessVerdicts).verdicts, scale=scale)

    def reason(ctx: StepContext) -> str:
        return reason_prompt(
            input=get_user_message_from_run_input(ctx.run) or "",
            output=get_assistant_message_from_run_output(ctx.run) or "",
            context=context_of(ctx.run),
            score=ctx.score,
            scale=scale,
            verdicts=ctx.analyzed(FaithfulnessVerdicts).verdicts,
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
