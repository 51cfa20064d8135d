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

# ruff: noqa: E501  -- the prompts are Mastra's text verbatim, long lines included

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from string import Template

from pydantic import BaseModel

from schemas import AgentRun
from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import YesNo, js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import Need, StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

ContextExtractor = Callable[[AgentRun], list[str]]

CONTEXT_PRECISION_AGENT_INSTRUCTIONS = """You are a precise context precision evaluator. Your job is to determine if context nodes are relevant for generating the expected output based on the input query.

Key Principles:
1. Evaluate each context piece independently for relevance to the input-output pair
2. Consider relevance as the ability of the context to contribute to generating the expected output
3. Mark context as relevant only if it directly supports or informs the expected output
4. Consider the input query when determining relevance
5. Focus on practical utility for output generation, not just topical similarity
6. Be strict in your evaluation - context must be clearly useful for generating the output
7. Context that provides background but doesn't directly contribute should be marked as not relevant"""

_ANALYZE_PROMPT = Template(
    """Evaluate the relevance of each context piece for generating the expected output given the input query.

Input Query:
${input}

Expected Output:
${output}

Context pieces to evaluate:
${context}

For each context piece, determine if it is relevant for generating the expected output. A context piece is relevant if:
- It provides information that directly supports or informs the expected output
- It contains facts, data, or details that are needed to answer the input query
- It contributes to the accuracy or completeness of the expected output

Mark as "yes" only if the context piece is clearly useful for generating the output.
Mark as "no" if the context piece does not contribute to generating the expected output.

Format your response as:
{
  "verdicts": [
    {
      "context_index": 0,
      "verdict": "yes/no",
      "reason": "explanation of why this context is or isn't relevant"
    }
  ]
}

The number of verdicts MUST match the number of context pieces exactly.

Example:
Input: "What are the benefits of exercise?"
Output: "Regular exercise improves cardiovascular health and mental wellbeing."
Context:
[0] "Exercise strengthens the heart and improves blood circulation."
[1] "A balanced diet is important for health."
[2] "Regular physical activity reduces stress and anxiety."

{
  "verdicts": [
    {
      "context_index": 0,
      "verdict": "yes",
      "reason": "This context directly supports the cardiovascular health benefit mentioned in the output"
    },
    {
      "context_index": 1,
      "verdict": "no",
      "reason": "This context is about diet, not exercise benefits, and doesn't contribute to the expected output"
    },
    {
      "context_index": 2,
      "verdict": "yes",
      "reason": "This context directly supports the mental wellbeing benefit mentioned in the output"
    }
  ]
}"""
)

_REASON_PROMPT = Template(
    """Explain the context precision score for the retrieved context based on its relevance to generating the expected output.

Input Query:
${input}

Expected Output:
${output}

Context pieces:
${context}

Score: ${score} out of ${scale}
Verdicts:
${verdicts}

Context Precision measures how relevant and precise the retrieved context nodes are for generating the expected output. The score is calculated using Mean Average Precision (MAP) which:
- Gives binary relevance scores (1 for relevant, 0 for irrelevant)
- Weights earlier positions more heavily in the scoring
- Rewards having relevant context early in the sequence

Rules for explanation:
- Explain the score based on which context pieces were relevant and their positions
- Mention how the positioning affects the MAP score
- Keep explanation concise and focused on context quality
- Use the given score, don't recalculate
- Focus on how well the context supports generating the expected output

Format:
"The score is ${score} because {explanation of context precision and positioning}"

Example responses:
"The score is 0.75 because the first and third contexts are highly relevant to the benefits mentioned in the output, while the second and fourth contexts are not directly related to exercise benefits. The relevant contexts are well-positioned at the beginning and middle of the sequence."
"The score is 1.0 because all context pieces are relevant for generating the expected output and are optimally ordered."
"The score is 0.33 because only the first context piece is relevant to the query, and the remaining contexts don't contribute to generating the expected output about exercise benefits.\""""
)


class ContextVerdict(BaseModel):
    context_index: int
    verdict: YesNo
    reason: str


class ContextVerdicts(BaseModel):
    """One verdict per context piece (analyze): ``yes`` when the piece is relevant."""

    verdicts: list[ContextVerdict]


def check_context_options(context: Sequence[str] | None) -> None:
    """Mastra's check: a ``context`` option, when given, must not be empty."""
    if context is not None and len(context) == 0:
        raise ValueError("Context array cannot be empty if provided")


def context_needs(context: Sequence[str] | None, extractor: ContextExtractor | None) -> set[Need]:
    """What a context scorer reads: the run's own context only when no option supplies one."""
    needs: set[Need] = {"input", "output"}
    return needs if context is not None or extractor is not None else needs | {"context"}


def resolve_context(
    run: AgentRun, context: Sequence[str] | None, extractor: ContextExtractor | None
) -> list[str]:
    """The context to judge: the extractor's (Mastra's precedence), the option's, else the run's."""
    if extractor is not None:
        return list(extractor(run))
    if context is not None:
        return list(context)
    return list(run.context)


def numbered(context: Sequence[str]) -> str:
    """Context pieces as Mastra lists them (``[index] piece`` per line), inside data markers."""
    return delimit("context", "\n".join(f"[{index}] {piece}" for index, piece in enumerate(context)))


def sorted_verdicts(analysis: ContextVerdicts | None) -> list[ContextVerdict]:
    return sorted(analysis.verdicts, key=lambda v: v.context_index) if analysis else []


def context_precision_score(analysis: ContextVerdicts | None, scale: float = 1.0) -> float:
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


CONTEXT_PRECISION = ScorerSpec(
    name="context-precision",
    id="context-precision-scorer",
    title="Context Precision Scorer",
    description=(
        "A scorer that evaluates the relevance and precision of retrieved context nodes for generating "
        "expected outputs"
    ),
)


@register(CONTEXT_PRECISION)
def create_context_precision_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
) -> Scorer:
    """Mastra's context precision scorer (id ``context-precision-scorer``), 0..``scale``."""
    check_context_options(context)

    def texts(ctx: StepContext) -> tuple[str, str, list[str]]:
        return (
            get_user_message_from_run_input(ctx.run) or "",
            get_assistant_message_from_run_output(ctx.run) or "",
            resolve_context(ctx.run, context, context_extractor),
        )

    def analyze_prompt(ctx: StepContext) -> str:
        question, answer, pieces = texts(ctx)
        if not pieces:
            raise ValueError("No context available for evaluation")
        return _ANALYZE_PROMPT.substitute(
            input=delimit("input", question), output=delimit("output", answer), context=numbered(pieces)
        )

    def reason_prompt(ctx: StepContext) -> str:
        question, answer, pieces = texts(ctx)
        verdicts = [v.model_dump() for v in sorted_verdicts(ctx.results.get("analyze_step_result"))]
        return _REASON_PROMPT.substitute(
            input=delimit("input", question),
            output=delimit("output", answer),
            context=numbered(pieces),
            score=js_number(ctx.score),
            scale=js_number(scale or 1),
            verdicts=delimit("verdicts", json.dumps(verdicts, indent=2, ensure_ascii=False)),
        )

    return (
        CONTEXT_PRECISION.create_scorer(
            scale=scale or 1,
            needs=context_needs(context, context_extractor),
            judge=replace(judge, instructions=CONTEXT_PRECISION_AGENT_INSTRUCTIONS),
        )
        .analyze(
            {
                "description": "Evaluate the relevance of each context piece for generating the expected output",
                "output_schema": ContextVerdicts,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(lambda ctx: context_precision_score(ctx.results.get("analyze_step_result"), scale))
        .generate_reason(
            {"description": "Reason about the context precision results", "create_prompt": reason_prompt}
        )
    )
