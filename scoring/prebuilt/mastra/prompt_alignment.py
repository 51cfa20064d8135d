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
from typing import Any, Literal

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import Need, StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import answer_text, js_number, round_to_two_decimals, user_text
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.mastra.prompt_alignment_analysis import (
    AlignmentAnalysis,
    EvaluationMode,
    weighted_alignment,
)
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import (
    DEFAULT_CONVERSATION_HISTORY_MESSAGES,
    get_combined_system_prompt,
    get_conversation_history_from_run_input,
)

PROMPT_ALIGNMENT = JudgeTemplate(
    ScorerSpec(
        name="prompt-alignment",
        former_id="prompt-alignment-scorer",
        title="Prompt Alignment (LLM)",
        description=(
            "Evaluates how well the agent response aligns with the intent and requirements of the user prompt"
        ),
    ),
    __package__,
    "prompt_alignment",
    analyze=Ask("Analyze prompt-response alignment across multiple dimensions", AlignmentAnalysis),
    reason=Ask("Generate human-readable explanation of prompt alignment evaluation"),
)

# Per mode: what is evaluated (``target``), what the reason addresses (``focus``) and the four
# dimension instructions, each ``prompts/prompt_alignment/<mode>/<part>.txt``.
ModePart = Literal["target", "focus", "intent", "requirements", "completeness", "appropriateness"]


def mode_text(mode: EvaluationMode, part: ModePart) -> str:
    return PROMPT_ALIGNMENT.prompt(f"{mode}/{part}").render()


def prompt_context(mode: EvaluationMode, user_prompt: str, system_prompt: str, history: str | None) -> str:
    """The history (when given), then the prompts the mode evaluates, a blank line apart."""
    sections = (
        [PROMPT_ALIGNMENT.prompt("history").render(history=delimit("conversation history", history))]
        if history
        else []
    )
    if mode != "system":
        sections.append(
            PROMPT_ALIGNMENT.prompt("user_prompt").render(user_prompt=delimit("user prompt", user_prompt))
        )
    if mode != "user":
        sections.append(
            PROMPT_ALIGNMENT.prompt("system_prompt").render(
                system_prompt=delimit("system prompt", system_prompt)
            )
        )
    return "\n\n".join(sections)


def breakdown(analysis: AlignmentAnalysis) -> str:
    """The analysis as the reason prompt shows it (the judge's own words are data there too)."""
    intent = analysis.intentAlignment
    requirements = analysis.requirementsFulfillment.requirements
    missing = analysis.completeness.missingElements
    appropriateness = analysis.responseAppropriateness
    return PROMPT_ALIGNMENT.prompt("breakdown").render(
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
            PROMPT_ALIGNMENT.prompt("breakdown_missing").render(missing_elements=", ".join(missing))
            if missing
            else PROMPT_ALIGNMENT.prompt("breakdown_complete").render()
        ),
        completeness_reasoning=analysis.completeness.reasoning,
        appropriateness_score=js_number(appropriateness.score),
        format_alignment="Aligned" if appropriateness.formatAlignment else "Misaligned",
        tone_alignment="Aligned" if appropriateness.toneAlignment else "Misaligned",
        appropriateness_reasoning=appropriateness.reasoning,
        overall_assessment=analysis.overallAssessment,
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


@register(PROMPT_ALIGNMENT.spec)
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
    mode = evaluation_mode

    def prompts_of(ctx: StepContext) -> tuple[str, str, str | None]:
        """The user's prompt, the system prompt and the conversation history (None: not shown)."""
        history = (
            None
            if history_messages is None
            else get_conversation_history_from_run_input(ctx.run, history_messages)
        )
        return user_text(ctx.run), get_combined_system_prompt(ctx.run) or "", history

    def analyze(ctx: StepContext) -> dict[str, str]:
        user_prompt, system_prompt, history = prompts_of(ctx)
        response = answer_text(ctx.run)
        if mode == "user" and not user_prompt:
            raise ValueError("User prompt is required for user prompt alignment scoring")
        if mode == "system" and not system_prompt:
            raise ValueError("System prompt is required for system prompt alignment scoring")
        if mode == "both" and not user_prompt and not system_prompt:
            raise ValueError("A user or system prompt is required for combined alignment scoring")
        if not response:
            raise ValueError("Agent response is required for prompt alignment scoring")
        return {
            "target": mode_text(mode, "target"),
            "prompt_context": prompt_context(mode, user_prompt, system_prompt, history),
            "agent_response": delimit("agent response", response),
            # Mastra's guidance on how to use the history, in the analyze prompt only.
            "history_guidance": PROMPT_ALIGNMENT.prompt("history_guidance").render() if history else "",
            "intent": mode_text(mode, "intent"),
            "requirements": mode_text(mode, "requirements"),
            "completeness": mode_text(mode, "completeness"),
            "appropriateness": mode_text(mode, "appropriateness"),
        }

    def reason(ctx: StepContext) -> dict[str, str]:
        return {
            "focus": mode_text(mode, "focus"),
            "prompt_context": prompt_context(mode, *prompts_of(ctx)),
            "breakdown": delimit("evaluation breakdown", breakdown(ctx.analyzed(AlignmentAnalysis))),
        }

    needs: tuple[Need, ...] = ("output",) if mode == "system" else ("input", "output")
    return PROMPT_ALIGNMENT.scorer(
        judge,
        scale=scale,
        needs=needs,
        analyze=analyze,
        score=lambda ctx: round_to_two_decimals(
            weighted_alignment(ctx.analyzed(AlignmentAnalysis), mode) * scale
        ),
        reason=reason,
    )
