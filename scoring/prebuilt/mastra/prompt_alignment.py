"""Prompt alignment (LLM judge): how well the answer meets the user's and/or the system's prompt.

A port of Mastra's ``createPromptAlignmentScorerLLM``: one ``analyze`` judge call scores four
dimensions (intent, requirements, completeness, appropriateness) in [0, 1]; the score is their
weighted sum (user weights 0.4/0.3/0.2/0.1, system weights 0.35/0.35/0.15/0.15; ``both`` mixes
user 70% and system 30% of the same user-weighted analysis, as Mastra does), times ``scale``,
rounded to two decimals (``prompt_alignment_analysis``). ``include_conversation_history``
(Mastra's ``includeConversationHistory``: true, or ``{"max_messages": n}``, default 10) puts the
run's remembered messages before the prompt so short replies to earlier turns ("A", "yes") are
judged against what was asked.

The prompts are ``prompts/prompt_alignment/*.txt``; what differs per evaluation mode (what is
evaluated, the four dimension instructions) is in ``prompts/prompt_alignment/<mode>/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.mastra.prompt_alignment_analysis import (
    AlignmentAnalysis,
    EvaluationMode,
    weighted_alignment,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import (
    DEFAULT_CONVERSATION_HISTORY_MESSAGES,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_conversation_history_from_run_input,
    get_user_message_from_run_input,
)

PROMPT_ALIGNMENT_INSTRUCTIONS = load_prompt(__package__, "prompt_alignment/instructions").render()
ANALYZE_PROMPT = load_prompt(__package__, "prompt_alignment/analyze")
REASON_PROMPT = load_prompt(__package__, "prompt_alignment/reason")
BREAKDOWN_PROMPT = load_prompt(__package__, "prompt_alignment/breakdown")
HISTORY_PROMPT = load_prompt(__package__, "prompt_alignment/history")
USER_PROMPT = load_prompt(__package__, "prompt_alignment/user_prompt")
SYSTEM_PROMPT = load_prompt(__package__, "prompt_alignment/system_prompt")
BREAKDOWN_MISSING = load_prompt(__package__, "prompt_alignment/breakdown_missing")
BREAKDOWN_COMPLETE = load_prompt(__package__, "prompt_alignment/breakdown_complete").render()
# Mastra's guidance on how to use the history, in the analyze prompt only.
CONVERSATION_HISTORY_GUIDANCE = load_prompt(__package__, "prompt_alignment/history_guidance").render()

# Per mode: what is evaluated (``target``), what the reason addresses (``focus``) and the four
# dimension instructions, each ``prompts/prompt_alignment/<mode>/<part>.txt``.
ModePart = Literal["target", "focus", "intent", "requirements", "completeness", "appropriateness"]


def mode_text(mode: EvaluationMode, part: ModePart) -> str:
    return load_prompt(__package__, f"prompt_alignment/{mode}/{part}").render()


def _prompt_context(
    mode: EvaluationMode, user_prompt: str, system_prompt: str, history: str | None = None
) -> str:
    """The history (when given), then the prompts the mode evaluates, a blank line apart."""
    sections = [HISTORY_PROMPT.render(history=delimit("conversation history", history))] if history else []
    if mode != "system":
        sections.append(USER_PROMPT.render(user_prompt=delimit("user prompt", user_prompt)))
    if mode != "user":
        sections.append(SYSTEM_PROMPT.render(system_prompt=delimit("system prompt", system_prompt)))
    return "\n\n".join(sections)


def create_analyze_prompt(
    user_prompt: str,
    system_prompt: str,
    agent_response: str,
    mode: EvaluationMode,
    conversation_history: str | None = None,
) -> str:
    return ANALYZE_PROMPT.render(
        target=mode_text(mode, "target"),
        prompt_context=_prompt_context(mode, user_prompt, system_prompt, conversation_history),
        agent_response=delimit("agent response", agent_response),
        history_guidance=CONVERSATION_HISTORY_GUIDANCE if conversation_history else "",
        intent=mode_text(mode, "intent"),
        requirements=mode_text(mode, "requirements"),
        completeness=mode_text(mode, "completeness"),
        appropriateness=mode_text(mode, "appropriateness"),
    )


def _breakdown(analysis: AlignmentAnalysis) -> str:
    """The analysis as the reason prompt shows it (the judge's own words are data there too)."""
    intent = analysis.intentAlignment
    requirements = analysis.requirementsFulfillment.requirements
    missing = analysis.completeness.missingElements
    appropriateness = analysis.responseAppropriateness
    return BREAKDOWN_PROMPT.render(
        intent_score=js_number(intent.score),
        primary_intent=intent.primaryIntent,
        addressed="Yes" if intent.isAddressed else "No",
        intent_reasoning=intent.reasoning,
        requirements_score=js_number(analysis.requirementsFulfillment.overallScore),
        fulfilled_count=str(sum(r.isFulfilled for r in requirements)),
        requirement_count=str(len(requirements)),
        requirement_lines="\n".join(
            f"  • {r.requirement}: {'✓' if r.isFulfilled else '✗'}" for r in requirements
        ).lstrip(),
        completeness_score=js_number(analysis.completeness.score),
        completeness_summary=(
            BREAKDOWN_MISSING.render(missing_elements=", ".join(missing)) if missing else BREAKDOWN_COMPLETE
        ),
        completeness_reasoning=analysis.completeness.reasoning,
        appropriateness_score=js_number(appropriateness.score),
        format_alignment="Aligned" if appropriateness.formatAlignment else "Misaligned",
        tone_alignment="Aligned" if appropriateness.toneAlignment else "Misaligned",
        appropriateness_reasoning=appropriateness.reasoning,
        overall_assessment=analysis.overallAssessment,
    )


def create_reason_prompt(
    user_prompt: str,
    system_prompt: str,
    score: float,
    scale: float,
    analysis: AlignmentAnalysis,
    mode: EvaluationMode,
    conversation_history: str | None = None,
) -> str:
    return REASON_PROMPT.render(
        focus=mode_text(mode, "focus"),
        prompt_context=_prompt_context(mode, user_prompt, system_prompt, conversation_history),
        score=js_number(score),
        scale=js_number(scale),
        breakdown=delimit("evaluation breakdown", _breakdown(analysis)),
    )


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
    former_id="prompt-alignment-scorer",
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
        return round_to_two_decimals(
            weighted_alignment(ctx.analyzed(AlignmentAnalysis), evaluation_mode) * scale
        )

    def reason_prompt(ctx: StepContext) -> str:
        user_prompt, system_prompt = prompts(ctx)
        return create_reason_prompt(
            user_prompt,
            system_prompt,
            ctx.scored(),
            scale,
            ctx.analyzed(AlignmentAnalysis),
            evaluation_mode,
            history(ctx),
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
