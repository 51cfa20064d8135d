"""Context relevance: how relevant and how used the context was, weighted by an LLM judge's levels.

Mastra's ``createContextRelevanceScorerLLM`` ported: the judge rates each context piece
``high``/``medium``/``low``/``none`` and says whether the answer used it, and lists missing
context (analyze). The score is ``max(0, base - usage_penalty - missing_penalty) * scale`` rounded
to two decimals, where ``base`` is the mean relevance weight (high 1.0, medium 0.7, low 0.3, none
0), ``usage_penalty`` is ``unused_high_relevance_context`` (0.1) per unused high-relevance piece,
and ``missing_penalty`` is ``missing_context_per_item`` (0.15) per missing item, at most
``max_missing_context_penalty`` (0.5). Edge cases as Mastra: no context at all scores
``scale`` (the agent had nothing to use); no evaluations score 0 if context is missing, else 1.

Context comes from ``context_extractor(run)``, ``context`` or, without both, the run's own context
(see ``scoring.prebuilt.mastra.context_precision``).
"""

# ruff: noqa: E501  -- the prompts are Mastra's text verbatim, long lines included

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from string import Template
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pydantic.alias_generators import to_camel

from scoring.judge import Judge, delimit
from scoring.prebuilt.mastra.context_precision import (
    ContextExtractor,
    check_context_options,
    context_needs,
    numbered,
    resolve_context,
)
from scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

RELEVANCE_WEIGHTS: dict[str, float] = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
# What the analyze prompt shows when there is no context (Mastra's placeholder).
NO_CONTEXT_PLACEHOLDER = "[No context was provided for evaluation]"

CONTEXT_RELEVANCE_INSTRUCTIONS = """You are an expert context relevance evaluator. Your job is to analyze whether the provided context information was appropriate and useful for generating the agent's response to the user's query.

Key Evaluation Criteria:
1. **Relevance**: Does the context directly relate to the user's query?
2. **Utility**: Did the context help produce a better response?
3. **Completeness**: Was the context sufficient for the task?
4. **Quality**: Is the context accurate and trustworthy?

Evaluation Guidelines:
- Context that directly answers or supports the user's query should be marked as highly relevant
- Context that provides background information relevant to the query should be considered moderately relevant
- Context that is tangentially related but doesn't directly help should be marked as low relevance
- Context that is completely unrelated should be marked as irrelevant
- Consider whether missing context might have led to a better response

Be thorough and fair in your evaluation, considering both what context was provided and what might have been more useful."""

_ANALYZE_PROMPT = Template(
    """Analyze the relevance of the provided context for answering the user's query and generating the agent's response.

User Query:
${userQuery}

Agent Response:
${agentResponse}

Context pieces to evaluate:
${contextList}

For each context piece, evaluate:
1. **Relevance Level**: How relevant is it to the user's query?
   - "high": Directly addresses the query or provides essential information
   - "medium": Provides supporting or background information that's helpful
   - "low": Tangentially related but not very helpful
   - "none": Completely irrelevant or unrelated

2. **Usage**: Was this context actually used in generating the agent's response?
   - true: The response clearly incorporates or reflects this information
   - false: This information doesn't appear to be used in the response

3. **Reasoning**: Explain your assessment in detail

Also identify any missing context that should have been provided to better answer the query.

Format your response as:
{
  "evaluations": [
    {
      "context_index": 0,
      "contextPiece": "the actual text of the context piece",
      "relevanceLevel": "high/medium/low/none",
      "wasUsed": true/false,
      "reasoning": "detailed explanation of the evaluation"
    }
  ],
  "missingContext": ["list of missing information that would have been helpful"],
  "overallAssessment": "summary of the context quality and usage"
}

The number of evaluations MUST match the number of context pieces exactly.

Example:
User Query: "What are the benefits of exercise?"
Agent Response: "Regular exercise improves cardiovascular health and mental wellbeing."
Context:
[0] "Exercise strengthens the heart and improves blood circulation."
[1] "A balanced diet is important for overall health."
[2] "Regular physical activity reduces stress and anxiety levels."

{
  "evaluations": [
    {
      "context_index": 0,
      "contextPiece": "Exercise strengthens the heart and improves blood circulation.",
      "relevanceLevel": "high",
      "wasUsed": true,
      "reasoning": "This context directly supports the cardiovascular health benefit mentioned in the response"
    },
    {
      "context_index": 1,
      "contextPiece": "A balanced diet is important for overall health.",
      "relevanceLevel": "none",
      "wasUsed": false,
      "reasoning": "This context is about diet, not exercise benefits, and doesn't contribute to answering the query"
    },
    {
      "context_index": 2,
      "contextPiece": "Regular physical activity reduces stress and anxiety levels.",
      "relevanceLevel": "high",
      "wasUsed": true,
      "reasoning": "This context directly supports the mental wellbeing benefit mentioned in the response"
    }
  ],
  "missingContext": [],
  "overallAssessment": "The context is mostly high-quality with 2 out of 3 pieces being highly relevant and used in the response"
}"""
)

_REASON_PROMPT = Template(
    """Explain the context relevance score for the provided context based on its relevance and usage in generating the agent's response.

User Query:
${userQuery}

Score: ${score} out of ${scale}

Context Evaluations:
${evaluations}

${missing}

Context Relevance measures how well the provided context supports answering the user's query and generating the expected response. The score considers:
- Relevance levels (high=1.0, medium=0.7, low=0.3, none=0.0)
- Usage penalties (10% penalty per unused high-relevance context)
- Missing context penalties (up to 50% penalty for identified gaps)

Rules for explanation:
- Explain the score based on context relevance levels and usage
- Mention any penalties applied for unused relevant context or missing information
- Keep explanation concise and actionable for improving context selection
- Use the given score, don't recalculate

Format:
"The score is ${score} because {explanation of context relevance, usage, and any penalties}"

Example responses:
"The score is 0.85 because 2 out of 3 context pieces are highly relevant and used in the response, with only minor penalty for one unused medium-relevance context piece."
"The score is 1.0 because all context pieces are highly relevant to the query about exercise benefits and were effectively used in generating the comprehensive response."
"The score is 0.40 because while some context is relevant, key information about the topic was missing and one highly relevant context piece was not utilized in the response.\""""
)


class Penalties(BaseModel):
    """Mastra's penalty options; keys in snake_case or camelCase (``unusedHighRelevanceContext``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    unused_high_relevance_context: float = 0.1
    missing_context_per_item: float = 0.15
    max_missing_context_penalty: float = 0.5


class ContextEvaluation(BaseModel):
    """One context piece as the judge rated it; field names are the JSON keys Mastra asks for."""

    model_config = ConfigDict(populate_by_name=True)

    context_index: int
    context_piece: str = Field(alias="contextPiece")
    relevance_level: Literal["high", "medium", "low", "none"] = Field(alias="relevanceLevel")
    was_used: StrictBool = Field(alias="wasUsed")
    reasoning: str


class ContextRelevanceAnalysis(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    evaluations: list[ContextEvaluation]
    missing_context: list[str] = Field(default_factory=list, alias="missingContext")
    overall_assessment: str = Field(alias="overallAssessment")


def context_relevance_score(
    analysis: ContextRelevanceAnalysis | None, scale: float = 1.0, penalties: Penalties | None = None
) -> float:
    """Mastra's formula for a run that had context (see the module docstring)."""
    evaluations = analysis.evaluations if analysis else []
    missing = analysis.missing_context if analysis else []
    if not evaluations:
        # Mastra returns these unscaled and unrounded.
        return 0.0 if missing else 1.0
    rates = penalties or Penalties()
    base = sum(RELEVANCE_WEIGHTS[e.relevance_level] for e in evaluations) / (len(evaluations) * 1.0)
    unused_high = sum(e.relevance_level == "high" and not e.was_used for e in evaluations)
    usage_penalty = unused_high * rates.unused_high_relevance_context
    missing_penalty = min(len(missing) * rates.missing_context_per_item, rates.max_missing_context_penalty)
    return round_to_two_decimals(max(0.0, base - usage_penalty - missing_penalty) * (scale or 1))


def _evaluations_text(analysis: ContextRelevanceAnalysis | None) -> str:
    blocks = [
        f"[{e.context_index}] Relevance: {e.relevance_level}, Used: {'Yes' if e.was_used else 'No'}\n"
        f'   Context: "{e.context_piece}"\n'
        f"   Reasoning: {e.reasoning}"
        for e in (analysis.evaluations if analysis else [])
    ]
    return delimit("evaluations", "\n\n".join(blocks))


def _missing_text(analysis: ContextRelevanceAnalysis | None) -> str:
    missing = analysis.missing_context if analysis else []
    if not missing:
        return ""
    return "\nMissing Context Issues:\n" + delimit("missing context", "\n".join(f"- {m}" for m in missing))


CONTEXT_RELEVANCE = ScorerSpec(
    name="context-relevance",
    id="context-relevance-scorer",
    title="Context Relevance (LLM)",
    description=(
        "Evaluates how relevant and useful the provided context was for generating the agent response"
    ),
)


@register(CONTEXT_RELEVANCE)
def create_context_relevance_scorer(
    judge: Judge,
    *,
    scale: float = 1.0,
    context: list[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    penalties: Penalties | Mapping[str, float] | None = None,
) -> Scorer:
    """Mastra's LLM context relevance scorer (id ``context-relevance-scorer``), 0..``scale``."""
    check_context_options(context)
    rates = penalties if isinstance(penalties, Penalties) else Penalties.model_validate(penalties or {})

    def pieces(ctx: StepContext) -> list[str]:
        return resolve_context(ctx.run, context, context_extractor)

    def analyze_prompt(ctx: StepContext) -> str:
        return _ANALYZE_PROMPT.substitute(
            userQuery=delimit("input", get_user_message_from_run_input(ctx.run) or ""),
            agentResponse=delimit("output", get_assistant_message_from_run_output(ctx.run) or ""),
            contextList=numbered(pieces(ctx) or [NO_CONTEXT_PLACEHOLDER]),
        )

    def score(ctx: StepContext) -> float:
        if not pieces(ctx):
            return 1.0 * (scale or 1)  # no context: the agent had to work without any
        return context_relevance_score(ctx.results.get("analyze_step_result"), scale, rates)

    def reason_prompt(ctx: StepContext) -> str:
        if not pieces(ctx):
            return (
                "No context was available for evaluation. The agent response was generated without "
                f"any supporting context. Score: {js_number(ctx.score)}"
            )
        analysis: ContextRelevanceAnalysis | None = ctx.results.get("analyze_step_result")
        return _REASON_PROMPT.substitute(
            userQuery=delimit("input", get_user_message_from_run_input(ctx.run) or ""),
            score=js_number(ctx.score),
            scale=js_number(scale or 1),
            evaluations=_evaluations_text(analysis),
            missing=_missing_text(analysis),
        )

    return (
        CONTEXT_RELEVANCE.create_scorer(
            scale=scale or 1,
            needs=context_needs(context, context_extractor),
            judge=replace(judge, instructions=CONTEXT_RELEVANCE_INSTRUCTIONS),
        )
        .analyze(
            {
                "description": "Analyze the relevance and utility of provided context",
                "output_schema": ContextRelevanceAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(score)
        .generate_reason(
            {
                "description": "Generate human-readable explanation of context relevance evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
