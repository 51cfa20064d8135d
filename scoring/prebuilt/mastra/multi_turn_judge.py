"""Multi-turn judge (Mastra's ``createMultiTurnJudgeScorer``): does the whole conversation meet a criterion?

One ``analyze`` judge call reads every assistant turn of the conversation and answers
``{"satisfied", "reasoning"}``; the score is ``scale`` when satisfied, else 0. The reason is not
asked of the judge: it is Mastra's header (satisfied or not), the criterion and the judge's reasoning.

The conversation. Mastra's multi-turn ``runEvals`` accumulates the output messages of every turn in
``run.output`` and the scorer reads the assistant messages there. A live AgentRun is one turn: the
earlier turns reach it either as ``input.remembered_messages`` (the agent's memory) or, from a
client that resends the history itself, as assistant messages among ``input.input_messages``. The
transcript is therefore the assistant messages of ``remembered_messages``, then of ``input_messages``,
then of ``output``, in that order; on a session unit (``target: session``, docs/sessions.md), which
holds every run of the conversation as a turn, it is the assistant messages of each turn's output.
User, system and tool messages are left out (Mastra grades the assistant's words only). Each turn
is its message text, trimmed; turns without text (tool-call-only steps) are dropped. A run whose
earlier turns are not captured is judged on its own output, which is what Mastra sees for a
single-turn run.

The prompt (``prompts/multi_turn_judge/*.txt``) is Mastra's, markers and their sanitising included;
the transcript inside Mastra's markers is in our data markers too (``delimit``). The criterion is
configuration and is not delimited.
Checked beyond Mastra (which only rejects a non-finite ``scale``): ``scale`` > 0 and a non-empty
criterion.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, StrictBool

from tracescore.schemas import AgentRun, Message
from tracescore.schemas.redaction_placeholders import FENCE_REDACTED
from tracescore.scoring.framework.message_text import js_trim, message_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

# Mastra's fence around the transcript; the analyze prompt names it and ``_sanitize`` defuses copies.
TRANSCRIPT_START = "<<<UNTRUSTED_TRANSCRIPT>>>"
TRANSCRIPT_END = "<<<END_UNTRUSTED_TRANSCRIPT>>>"


class MultiTurnAnalysis(BaseModel):
    """The judge's verdict on the whole conversation (analyze)."""

    satisfied: StrictBool  # "true" or 1 is an invalid answer, as for zod's z.boolean()
    reasoning: str


MULTI_TURN_JUDGE = JudgeTemplate(
    ScorerSpec(
        name="multi-turn-judge",
        former_id="multi-turn-judge-scorer",
        title="Multi-turn Judge (LLM)",
        description="Grades every assistant turn of a conversation against a plain-English criterion",
        example={"criterion": "The assistant stays polite throughout the conversation"},
    ),
    __package__,
    "multi_turn_judge",
    analyze=Ask("Judge the whole conversation against the criterion", MultiTurnAnalysis),
)


def _assistant_texts(messages: list[Message]) -> list[str]:
    return [message_text(m) for m in messages if m.role == "assistant"]


def assistant_turns(run: AgentRun) -> list[str]:
    """Every assistant turn of the conversation, oldest first (see the module docstring)."""
    if run.turns:  # a session unit: each turn's answer, as Mastra's runEvals accumulates them
        texts = [text for turn in run.turns for text in _assistant_texts(turn.output)]
    else:
        texts = [
            *_assistant_texts(run.input.remembered_messages),
            *_assistant_texts(run.input.input_messages),
            *_assistant_texts(run.output),
        ]
    return [turn for text in texts if (turn := js_trim(text))]


def _sanitize(text: str) -> str:
    """Mastra's ``sanitizeTurnText``: a forged transcript marker cannot close the fence."""
    return text.replace(TRANSCRIPT_START, FENCE_REDACTED).replace(TRANSCRIPT_END, FENCE_REDACTED)


def analyze_values(criterion: str, turns: list[str]) -> dict[str, str]:
    """The analyze prompt's values: the criterion and the numbered turns inside Mastra's fence."""
    transcript = "\n\n".join(
        MULTI_TURN_JUDGE.prompt("turn").render(number=str(i + 1), text=_sanitize(turn))
        for i, turn in enumerate(turns)
    )
    return {
        "criterion": criterion,
        "transcript_start": TRANSCRIPT_START,
        "transcript_end": TRANSCRIPT_END,
        "transcript": (
            delimit("conversation", transcript)
            if transcript
            else MULTI_TURN_JUDGE.prompt("no_turns").render()
        ),
    }


def format_reason(criterion: str, analysis: MultiTurnAnalysis) -> str:
    """Mastra's ``formatMultiTurnJudgeReason``: the verdict, the criterion, the judge's reasoning."""
    header = "✅ Criterion satisfied." if analysis.satisfied else "❌ Criterion not satisfied."
    reasoning = analysis.reasoning or "(no reasoning returned by the judge)"
    return f"{header}\n\n{criterion}\n\n{reasoning}"


@register(MULTI_TURN_JUDGE.spec)
def create_multi_turn_judge_scorer(judge: Judge, *, criterion: str, scale: float = 1.0) -> Scorer:
    """Mastra's multi-turn judge (``multi-turn-judge-scorer``): ``scale`` if the criterion holds, else 0."""
    if not math.isfinite(scale):
        raise ValueError("createMultiTurnJudgeScorer: options.scale must be a finite number")
    if scale <= 0:
        # Mastra accepts it; a zero or negative scale could only give scores outside [0, scale].
        raise ValueError("createMultiTurnJudgeScorer: options.scale must be > 0")
    if not criterion.strip():
        # Mastra accepts an empty criterion; the judge would grade against nothing.
        raise ValueError("createMultiTurnJudgeScorer: criterion must not be empty")

    def analysis(ctx: StepContext) -> MultiTurnAnalysis:
        return ctx.analyzed(MultiTurnAnalysis)

    return MULTI_TURN_JUDGE.scorer(
        judge,
        scale=scale,
        needs={"output"},
        analyze=lambda ctx: analyze_values(criterion, assistant_turns(ctx.run)),
        score=lambda ctx: (1 if analysis(ctx).satisfied else 0) * scale,
    ).generate_reason(lambda ctx: format_reason(criterion, analysis(ctx)))
