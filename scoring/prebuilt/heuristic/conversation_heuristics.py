"""Multi-turn heuristics: what a whole conversation (a ``target: session`` unit) looks like.

Each reads the unit's ``turns`` (docs/sessions.md); a plain run counts as a conversation of one turn,
so they also work offline on a single run. Counts and durations score their value up to a cap that
is their scale (``max_turns``, ...): a dashboard shows the value itself. Rates lie in [0, 1].

- ``conversation-turns``: how many turns (runs) the conversation took;
- ``repeated-requests``: the share of the user's messages after the first that repeat an earlier one
  (rapidfuzz's ``ratio`` of the normalized texts at least ``similarity``): the user had to ask again;
- ``tool-error-rate``: the share of the agent's tool calls that ended in error;
- ``conversation-length``: the characters of every message of the conversation;
- ``time-to-resolution``: seconds from the first turn's start to the last turn's end.
"""

from __future__ import annotations

from typing import Any

from rapidfuzz import fuzz, utils

from tracescore.schemas import AgentRun, Turn
from tracescore.scoring.framework.message_text import message_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

DEFAULT_MAX_TURNS = 100
DEFAULT_MAX_CHARS = 1_000_000
DEFAULT_MAX_SECONDS = 7 * 86_400.0
DEFAULT_SIMILARITY = 85.0  # rapidfuzz ratio, 0-100


def turns_of(run: AgentRun) -> list[Turn]:
    """The conversation's turns: the unit's, or the run itself as one turn."""
    return run.turns or [run.as_turn()]


CONVERSATION_TURNS = ScorerSpec(
    name="conversation-turns",
    title="Conversation Turns",
    description="The number of turns (runs) of a conversation, up to max_turns (the scale).",
)


@register(CONVERSATION_TURNS)
def create_conversation_turns_scorer(max_turns: int = DEFAULT_MAX_TURNS) -> Scorer:
    """Scores the number of turns, capped at ``max_turns``.

    Example::

        run = {"turns": [{"input": [{"role": "user", "content": "hi"}]}, {"input": []}]}
        (await create_conversation_turns_scorer().run(run)).score  # 2.0
    """
    return CONVERSATION_TURNS.create_scorer(needs=(), scale=max_turns).generate_score(
        lambda ctx: float(min(len(turns_of(ctx.run)), max_turns))
    )


REPEATED_REQUESTS = ScorerSpec(
    name="repeated-requests",
    title="Repeated User Requests",
    description=(
        "The share of the user's messages after the first that repeat an earlier one (rapidfuzz "
        "similarity at least `similarity`, 0-100): the user had to ask again. Lower is better."
    ),
)


def repeated_requests(texts: list[str], similarity: float) -> dict[str, Any]:
    """Which of ``texts`` (the user's messages, in order) repeat an earlier one, and their share.

    >>> repeated_requests(["Where is my order?", "where is my order??", "Thanks"], 85)["score"]
    0.5
    """
    normalized = [utils.default_process(text) for text in texts]
    repeats = [
        {"message": index + 1, "repeats": earlier + 1, "similarity": round(ratio, 1)}
        for index in range(1, len(normalized))
        for earlier, ratio in [_closest(normalized[index], normalized[:index])]
        if normalized[index] and ratio >= similarity
    ]
    asked_again = len(normalized) - 1
    return {"score": len(repeats) / asked_again if asked_again > 0 else 0.0, "repeats": repeats}


def _closest(text: str, earlier: list[str]) -> tuple[int, float]:
    """The earlier text most like ``text`` and how alike (0-100)."""
    ratios = [fuzz.ratio(text, other) if other else 0.0 for other in earlier]
    best = max(range(len(ratios)), key=ratios.__getitem__)
    return best, ratios[best]


@register(REPEATED_REQUESTS)
def create_repeated_requests_scorer(similarity: float = DEFAULT_SIMILARITY) -> Scorer:
    """Scores the share of repeated user messages (see ``repeated_requests``)."""

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        texts = [message_text(m) for turn in turns_of(ctx.run) for m in turn.input if m.role == "user"]
        return repeated_requests(texts, similarity)

    return (
        REPEATED_REQUESTS.create_scorer(needs=())
        .preprocess(preprocess)
        .generate_score(lambda ctx: ctx.preprocessed(dict)["score"])
    )


TOOL_ERROR_RATE = ScorerSpec(
    name="tool-error-rate",
    title="Tool Error Rate",
    description="The share of the conversation's tool calls that ended in error (0 without tool calls).",
)


@register(TOOL_ERROR_RATE)
def create_tool_error_rate_scorer() -> Scorer:
    """Scores failed tool calls over all tool calls, over every turn.

    Example::

        calls = [{"tool_name": "search", "state": "error"}, {"tool_name": "search", "state": "result"}]
        run = {"output": [{"role": "assistant", "tool_invocations": calls}]}
        (await create_tool_error_rate_scorer().run(run)).score  # 0.5
    """

    def preprocess(ctx: StepContext) -> dict[str, int]:
        states = [
            call.state
            for turn in turns_of(ctx.run)
            for message in turn.output
            for call in message.tool_invocations
        ]
        return {"tool_calls": len(states), "errors": states.count("error")}

    def score(ctx: StepContext) -> float:
        counts: dict[str, int] = ctx.preprocessed(dict)
        return counts["errors"] / counts["tool_calls"] if counts["tool_calls"] else 0.0

    return TOOL_ERROR_RATE.create_scorer(needs=()).preprocess(preprocess).generate_score(score)


CONVERSATION_LENGTH = ScorerSpec(
    name="conversation-length",
    title="Conversation Length",
    description="The characters of every message of the conversation, up to max_chars (the scale).",
)


@register(CONVERSATION_LENGTH)
def create_conversation_length_scorer(max_chars: int = DEFAULT_MAX_CHARS) -> Scorer:
    """Scores the characters of the conversation's messages (user input and agent output), capped."""

    def score(ctx: StepContext) -> float:
        turns = turns_of(ctx.run)
        chars = sum(len(message_text(m)) for turn in turns for m in (*turn.input, *turn.output))
        return float(min(chars, max_chars))

    return CONVERSATION_LENGTH.create_scorer(needs=(), scale=max_chars).generate_score(score)


TIME_TO_RESOLUTION = ScorerSpec(
    name="time-to-resolution",
    title="Time to Resolution",
    description=(
        "Seconds from the conversation's first turn's start to its last turn's end, up to "
        "max_seconds (the scale)."
    ),
)


@register(TIME_TO_RESOLUTION)
def create_time_to_resolution_scorer(max_seconds: float = DEFAULT_MAX_SECONDS) -> Scorer:
    """Scores the conversation's duration in seconds, capped (0 when its times are unknown)."""

    def score(ctx: StepContext) -> float:
        turns = turns_of(ctx.run)
        start, end = turns[0].start_time, turns[-1].end_time
        if start is None or end is None:
            return 0.0
        return min(max(0.0, (end - start).total_seconds()), max_seconds)

    return TIME_TO_RESOLUTION.create_scorer(needs=(), scale=max_seconds).generate_score(score)
