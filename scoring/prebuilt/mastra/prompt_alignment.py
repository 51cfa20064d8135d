"""Prompt alignment (LLM judge): how well the answer meets the user's and/or the system's prompt.

A port of Mastra's ``createPromptAlignmentScorerLLM``: one ``analyze`` judge call scores four
dimensions (intent, requirements, completeness, appropriateness) in [0, 1]; the score is their
weighted sum (user weights 0.4/0.3/0.2/0.1, system weights 0.35/0.35/0.15/0.15; ``both`` mixes
user 70% and system 30% of the same user-weighted analysis, as Mastra does), times ``scale``,
rounded to two decimals. ``include_conversation_history`` (Mastra's ``includeConversationHistory``:
true, or ``{"max_messages": n}``, default 10) puts the run's remembered messages before the prompt so
short replies to earlier turns ("A", "yes") are judged against what was asked.
"""

# ruff: noqa: E501 -- the prompt templates are Mastra's text, kept line for line

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool

from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import Need, StepContext
from scoring.utils import (
    DEFAULT_CONVERSATION_HISTORY_MESSAGES,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_conversation_history_from_run_input,
    get_user_message_from_run_input,
)

EvaluationMode = Literal["user", "system", "both"]
# Strict: a judge answering "0.5" or "yes" where a number or a boolean belongs is invalid.
Unit = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]

# (intent, requirements, completeness, appropriateness), Mastra's SCORING_WEIGHTS.
USER_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SYSTEM_WEIGHTS = (0.35, 0.35, 0.15, 0.15)
BOTH_USER_WEIGHT, BOTH_SYSTEM_WEIGHT = 0.7, 0.3

PROMPT_ALIGNMENT_INSTRUCTIONS = """You are an expert prompt-response alignment evaluator. Your job is to analyze how well an agent's response aligns with the user's prompt in terms of intent, requirements, completeness, and appropriateness.

Key Evaluation Dimensions:
1. **Intent Alignment**: Does the response address the core purpose of the prompt?
2. **Requirements Fulfillment**: Are all explicit and implicit requirements met?
3. **Completeness**: Is the response comprehensive and thorough?
4. **Response Appropriateness**: Does the format, tone, and style match expectations?

Evaluation Guidelines:
- Identify the primary intent and any secondary intents in the prompt
- Extract all explicit requirements (specific tasks, constraints, formats)
- Consider implicit requirements based on context and standard expectations
- Assess whether the response fully addresses the prompt or leaves gaps
- Evaluate if the response format and tone are appropriate for the request
- Be objective and focus on alignment rather than response quality

Score each dimension from 0.0 (completely misaligned) to 1.0 (perfectly aligned)."""


class IntentAlignment(BaseModel):
    score: Unit
    primaryIntent: str  # the judge's JSON keys, as in Mastra's schema
    isAddressed: StrictBool
    reasoning: str


class Requirement(BaseModel):
    requirement: str
    isFulfilled: StrictBool
    reasoning: str


class RequirementsFulfillment(BaseModel):
    requirements: list[Requirement]
    overallScore: Unit


class Completeness(BaseModel):
    score: Unit
    missingElements: list[str]
    reasoning: str


class ResponseAppropriateness(BaseModel):
    score: Unit
    formatAlignment: StrictBool
    toneAlignment: StrictBool
    reasoning: str


class AlignmentAnalysis(BaseModel):
    """The judge's analysis (Mastra's analyzeOutputSchema); every score must lie in [0, 1]."""

    intentAlignment: IntentAlignment
    requirementsFulfillment: RequirementsFulfillment
    completeness: Completeness
    responseAppropriateness: ResponseAppropriateness
    overallAssessment: str


# Per mode: what is evaluated, then the four dimension instructions (Mastra's prompt text).
_TARGET = {
    "user": "the user's prompt",
    "system": "the system's behavioral guidelines and constraints",
    "both": "both the user's prompt and the system's behavioral guidelines",
}
_GUIDE = {
    "system": (
        """- Identify the primary behavioral guidelines and constraints from the system prompt
   - Assess whether the response follows these guidelines
   - Score from 0.0 (violates system constraints) to 1.0 (perfectly follows system guidelines)""",
        """- List all system constraints and rules from the system prompt
   - Check if each constraint is respected
   - Calculate an overall score based on respected vs. total constraints""",
        """- Evaluate if the response fully adheres to all system guidelines
   - Identify any system rules that were not followed""",
        """- Check if the format/tone matches system specifications
   - Evaluate consistency with defined agent behavior""",
    ),
    "user": (
        """- Identify the primary intent of the user's prompt
   - Assess whether the response addresses this intent
   - Score from 0.0 (completely misses intent) to 1.0 (perfectly addresses intent)""",
        """- List all explicit requirements from the user prompt
   - Check if each requirement is fulfilled
   - Calculate an overall score based on fulfilled vs. total requirements""",
        """- Evaluate if the response is comprehensive for the user's request
   - Identify any missing elements that should have been included""",
        """- Check if the format matches what was requested (e.g., list, paragraph, code)
   - Evaluate if the tone is appropriate (e.g., formal, casual, technical)""",
    ),
    "both": (
        """- Identify both the user's intent AND system behavioral guidelines
   - Assess whether the response addresses user intent while following system constraints
   - Score from 0.0 (misses both) to 1.0 (perfectly addresses both)""",
        """- List requirements from BOTH user prompt and system constraints
   - Check fulfillment of each requirement
   - Calculate separate scores for user requirements and system constraints, then combine""",
        """- Evaluate completeness for both user request AND system compliance
   - Identify missing elements from either perspective""",
        """- Check format/tone for both user expectations AND system requirements
   - Evaluate if response satisfies both perspectives""",
    ),
}

_FORMAT = """Format your response as:
{
  "intentAlignment": {
    "score": 0.0-1.0,
    "primaryIntent": "the main purpose of the prompt",
    "isAddressed": true/false,
    "reasoning": "explanation of intent alignment"
  },
  "requirementsFulfillment": {
    "requirements": [
      {
        "requirement": "specific requirement from prompt",
        "isFulfilled": true/false,
        "reasoning": "explanation of fulfillment status"
      }
    ],
    "overallScore": 0.0-1.0
  },
  "completeness": {
    "score": 0.0-1.0,
    "missingElements": ["list of missing elements if any"],
    "reasoning": "explanation of completeness assessment"
  },
  "responseAppropriateness": {
    "score": 0.0-1.0,
    "formatAlignment": true/false,
    "toneAlignment": true/false,
    "reasoning": "explanation of appropriateness"
  },
  "overallAssessment": "summary of the prompt-response alignment"
}

Example:
User Prompt: "Write a Python function to calculate factorial with error handling for negative numbers."

Agent Response: "def factorial(n):
    if n < 0:
        raise ValueError('Factorial not defined for negative numbers')
    if n == 0:
        return 1
    return n * factorial(n-1)"

{
  "intentAlignment": {
    "score": 1.0,
    "primaryIntent": "Create a Python function to calculate factorial",
    "isAddressed": true,
    "reasoning": "The response provides exactly what was requested - a Python function that calculates factorial"
  },
  "requirementsFulfillment": {
    "requirements": [
      {
        "requirement": "Write a Python function",
        "isFulfilled": true,
        "reasoning": "A proper Python function is provided with correct syntax"
      },
      {
        "requirement": "Calculate factorial",
        "isFulfilled": true,
        "reasoning": "The function correctly implements factorial calculation using recursion"
      },
      {
        "requirement": "Include error handling for negative numbers",
        "isFulfilled": true,
        "reasoning": "The function raises a ValueError for negative inputs with an appropriate message"
      }
    ],
    "overallScore": 1.0
  },
  "completeness": {
    "score": 0.9,
    "missingElements": ["No docstring or comments"],
    "reasoning": "The function is complete and functional but could benefit from documentation"
  },
  "responseAppropriateness": {
    "score": 1.0,
    "formatAlignment": true,
    "toneAlignment": true,
    "reasoning": "The response is in the exact format requested (Python code) with appropriate technical implementation"
  },
  "overallAssessment": "The response perfectly aligns with the prompt, providing a correct Python factorial function with the requested error handling for negative numbers"
}"""


CONVERSATION_HISTORY_GUIDANCE = """
Note on conversation history:
- The conversation history is provided only to resolve the meaning of the current prompt. Use it to interpret short or referential prompts (e.g. "A", "yes", "the second one") against what was previously asked or offered.
- Evaluate only the agent response to the current prompt. Do not score earlier turns, and do not credit or penalise the agent for anything it said in them."""


def _prompt_context(
    mode: EvaluationMode, user_prompt: str, system_prompt: str, history: str | None = None
) -> str:
    user = "User Prompt:\n" + delimit("user prompt", user_prompt)
    system = "System Prompt:\n" + delimit("system prompt", system_prompt)
    earlier = (
        "Conversation History (prior turns, for context only):\n"
        + delimit("conversation history", history)
        + "\n\n"
        if history
        else ""
    )
    return earlier + {"user": user, "system": system, "both": f"{user}\n\n{system}"}[mode]


def create_analyze_prompt(
    user_prompt: str,
    system_prompt: str,
    agent_response: str,
    mode: EvaluationMode,
    conversation_history: str | None = None,
) -> str:
    intent, requirements, completeness, appropriateness = _GUIDE[mode]
    return f"""Analyze how well the agent's response aligns with {_TARGET[mode]} across multiple dimensions.

{_prompt_context(mode, user_prompt, system_prompt, conversation_history)}

Agent Response:
{delimit("agent response", agent_response)}
{CONVERSATION_HISTORY_GUIDANCE if conversation_history else ""}

Evaluate the following aspects:

1. **Intent Alignment**:
   {intent}
   - Provide reasoning for your assessment

2. **Requirements Fulfillment**:
   {requirements}
   - Provide reasoning for each requirement assessment

3. **Completeness**:
   {completeness}
   - Score from 0.0 (severely incomplete) to 1.0 (fully complete)
   - Provide reasoning for your assessment

4. **Response Appropriateness**:
   {appropriateness}
   - Score from 0.0 (completely inappropriate) to 1.0 (perfectly appropriate)
   - Provide reasoning for your assessment

{_FORMAT}"""


def create_reason_prompt(
    user_prompt: str,
    system_prompt: str,
    score: float,
    scale: float,
    analysis: AlignmentAnalysis,
    mode: EvaluationMode,
    conversation_history: str | None = None,
) -> str:
    requirements = analysis.requirementsFulfillment.requirements
    fulfilled = sum(r.isFulfilled for r in requirements)
    missing = analysis.completeness.missingElements
    description = {
        "system": "system behavioral guidelines and constraints",
        "user": "user's prompt",
        "both": "both user's prompt and system guidelines",
    }[mode]
    appropriateness = analysis.responseAppropriateness
    # The judge's own words from the analysis are data too when they come back in this prompt.
    breakdown = f"""- Intent Alignment (40% weight): {js_number(analysis.intentAlignment.score)}
  Primary Intent: "{analysis.intentAlignment.primaryIntent}"
  Addressed: {"Yes" if analysis.intentAlignment.isAddressed else "No"}
  {analysis.intentAlignment.reasoning}

- Requirements Fulfillment (30% weight): {js_number(analysis.requirementsFulfillment.overallScore)}
  {fulfilled} out of {len(requirements)} requirements met
  {chr(10).join(f"  • {r.requirement}: {'✓' if r.isFulfilled else '✗'}" for r in requirements).lstrip()}

- Completeness (20% weight): {js_number(analysis.completeness.score)}
  {"Missing elements: " + ", ".join(missing) if missing else "Response is complete"}
  {analysis.completeness.reasoning}

- Response Appropriateness (10% weight): {js_number(appropriateness.score)}
  Format: {"Aligned" if appropriateness.formatAlignment else "Misaligned"}
  Tone: {"Aligned" if appropriateness.toneAlignment else "Misaligned"}
  {appropriateness.reasoning}

Overall Assessment: {analysis.overallAssessment}"""
    return f"""Explain the prompt alignment score based on how well the agent's response addresses the {description}.

{_prompt_context(mode, user_prompt, system_prompt, conversation_history)}

Score: {js_number(score)} out of {js_number(scale)}

Evaluation Breakdown:
{delimit("evaluation breakdown", breakdown)}

Prompt Alignment measures how well the response addresses the user's request across intent, requirements, completeness, and appropriateness. The weighted scoring ensures primary focus on understanding and addressing the core intent while meeting specific requirements.

Rules for explanation:
- Summarize the key strengths and weaknesses of alignment
- Highlight any major misalignments that significantly impacted the score
- Be concise but comprehensive in the explanation
- Use the given score, don't recalculate

Format:
"The score is {js_number(score)} because {{explanation of alignment strengths and weaknesses based on the weighted dimensions}}\""""


def weighted_alignment(analysis: AlignmentAnalysis, mode: EvaluationMode) -> float:
    """The weighted sum of the four dimension scores for ``mode`` (before scale and rounding)."""
    dimensions = (
        analysis.intentAlignment.score,
        analysis.requirementsFulfillment.overallScore,
        analysis.completeness.score,
        analysis.responseAppropriateness.score,
    )
    weights = SYSTEM_WEIGHTS if mode == "system" else USER_WEIGHTS

    def total(ws: tuple[float, ...]) -> float:
        # Summed left to right, as Mastra's expression is, so floats match it exactly.
        result = 0.0
        for dimension, weight in zip(dimensions, ws, strict=True):
            result += dimension * weight
        return result

    if mode != "both":
        return total(weights)
    user_score = total(USER_WEIGHTS)
    system_score = user_score  # Mastra scores "both" from one analysis: system = user
    return user_score * BOTH_USER_WEIGHT + system_score * BOTH_SYSTEM_WEIGHT


def _history_messages(option: bool | Mapping[str, Any]) -> int | None:
    """How many remembered messages to show the judge (None: no history), from the option."""
    if option is False or option is None:
        return None
    if option is True:
        return DEFAULT_CONVERSATION_HISTORY_MESSAGES
    unknown = set(option) - {"max_messages", "maxMessages"}
    if unknown:
        raise ValueError(f"include_conversation_history: unknown keys {sorted(unknown)}")
    count = option.get("max_messages", option.get("maxMessages", DEFAULT_CONVERSATION_HISTORY_MESSAGES))
    if isinstance(count, bool) or not isinstance(count, int):
        raise ValueError("include_conversation_history.max_messages must be an integer")
    return count


PROMPT_ALIGNMENT = ScorerSpec(
    name="prompt-alignment",
    id="prompt-alignment-scorer",
    title="Prompt Alignment (LLM)",
    description=(
        "Evaluates how well the agent response aligns with the intent and requirements of the user prompt"
    ),
)


@register(PROMPT_ALIGNMENT)
def create_prompt_alignment_scorer(
    judge: Judge,
    scale: float = 1.0,
    evaluation_mode: EvaluationMode = "both",
    include_conversation_history: bool | Mapping[str, Any] = False,
) -> Scorer:
    """Mastra's prompt-alignment scorer (``prompt-alignment-scorer``) judged by ``judge``."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    history_messages = _history_messages(include_conversation_history)

    def history(ctx: StepContext) -> str | None:
        if history_messages is None:
            return None
        return get_conversation_history_from_run_input(ctx.run, history_messages)

    needs: tuple[Need, ...] = ("output",) if evaluation_mode == "system" else ("input", "output")
    judge = replace(judge, instructions=PROMPT_ALIGNMENT_INSTRUCTIONS)

    def prompts(ctx: StepContext) -> tuple[str, str]:
        return get_user_message_from_run_input(ctx.run) or "", get_combined_system_prompt(ctx.run) or ""

    def analyze_prompt(ctx: StepContext) -> str:
        user_prompt, system_prompt = prompts(ctx)
        response = get_assistant_message_from_run_output(ctx.run) or ""
        if evaluation_mode == "user" and not user_prompt:
            raise ValueError("User prompt is required for user prompt alignment scoring")
        if evaluation_mode == "system" and not system_prompt:
            raise ValueError("System prompt is required for system prompt alignment scoring")
        if evaluation_mode == "both" and not user_prompt and not system_prompt:
            raise ValueError("A user or system prompt is required for combined alignment scoring")
        if not response:
            raise ValueError("Agent response is required for prompt alignment scoring")
        return create_analyze_prompt(user_prompt, system_prompt, response, evaluation_mode, history(ctx))

    def score(ctx: StepContext) -> float:
        analysis: AlignmentAnalysis = ctx.results["analyze_step_result"]
        return round_to_two_decimals(weighted_alignment(analysis, evaluation_mode) * scale)

    def reason_prompt(ctx: StepContext) -> str:
        user_prompt, system_prompt = prompts(ctx)
        analysis: AlignmentAnalysis = ctx.results["analyze_step_result"]
        assert ctx.score is not None  # generate_reason runs after generate_score
        return create_reason_prompt(
            user_prompt, system_prompt, ctx.score, scale, analysis, evaluation_mode, history(ctx)
        )

    return (
        PROMPT_ALIGNMENT.create_scorer(scale=scale or 1, needs=needs, judge=judge)
        .analyze(
            {
                "description": "Analyze prompt-response alignment across multiple dimensions",
                "output_schema": AlignmentAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(score)
        .generate_reason(
            {
                "description": "Generate human-readable explanation of prompt alignment evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
