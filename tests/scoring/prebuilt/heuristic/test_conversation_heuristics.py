"""The multi-turn heuristics on conversation units (and on a single run, a conversation of one turn)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tracescore.schemas import AgentRun
from tracescore.scoring.prebuilt.heuristic.conversation_heuristics import (
    create_conversation_length_scorer,
    create_conversation_turns_scorer,
    create_repeated_requests_scorer,
    create_time_to_resolution_scorer,
    create_tool_error_rate_scorer,
    repeated_requests,
)

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def conversation(*turns: tuple[str, str, list[str]]) -> AgentRun:
    """Turns of (user message, answer, tool call states), a minute apart, each lasting 10 s."""
    return AgentRun.model_validate(
        {
            "turns": [
                {
                    "start_time": T0 + timedelta(minutes=i),
                    "end_time": T0 + timedelta(minutes=i, seconds=10),
                    "input": [{"role": "user", "content": user}],
                    "output": [
                        {
                            "role": "assistant",
                            "content": answer,
                            "tool_invocations": [{"tool_name": "search", "state": s} for s in states],
                        }
                    ],
                }
                for i, (user, answer, states) in enumerate(turns)
            ]
        }
    )


CHAT = conversation(
    ("My package never arrived", "Let me check.", ["error"]),
    ("Hello? My package never arrived!", "Sorry, checking again.", ["error", "result"]),
    ("Thanks, that helps", "Glad to help.", []),
)


async def test_turns_length_and_time_to_resolution() -> None:
    assert (await create_conversation_turns_scorer().run(CHAT)).score == 3
    assert (await create_conversation_turns_scorer(max_turns=2).run(CHAT)).score == 2  # capped: its scale
    texts = ["My package never arrived", "Let me check.", "Hello? My package never arrived!",
             "Sorry, checking again.", "Thanks, that helps", "Glad to help."]  # fmt: skip
    assert (await create_conversation_length_scorer().run(CHAT)).score == sum(map(len, texts))
    assert (await create_time_to_resolution_scorer().run(CHAT)).score == 130.0  # 09:00:00 to 09:02:10


async def test_tool_error_rate_counts_every_turns_tool_calls() -> None:
    assert (await create_tool_error_rate_scorer().run(CHAT)).score == pytest.approx(2 / 3)
    assert (await create_tool_error_rate_scorer().run(conversation(("hi", "hello", [])))).score == 0.0


async def test_a_user_asking_again_counts_as_a_repeated_request() -> None:
    result = await create_repeated_requests_scorer().run(CHAT)
    # "hello my package never arrived" vs "my package never arrived": ratio 87.3 (rapidfuzz, normalized).
    assert result.score == 0.5
    assert (await create_repeated_requests_scorer(similarity=95).run(CHAT)).score == 0.0


@pytest.mark.parametrize(
    ("texts", "expected"),
    [([], 0.0), (["only one"], 0.0), (["a b c", "x y z", "a b c"], 0.5), (["same", "same", "same"], 1.0)],
)
def test_repeated_requests_share(texts: list[str], expected: float) -> None:
    found: dict[str, Any] = repeated_requests(texts, 85)
    assert found["score"] == expected


async def test_a_plain_run_is_a_conversation_of_one_turn() -> None:
    run = AgentRun.model_validate(
        {"input": {"input_messages": [{"role": "user", "content": "hi"}]}, "output": [{"role": "assistant"}]}
    )
    assert (await create_conversation_turns_scorer().run(run)).score == 1
    assert (await create_time_to_resolution_scorer().run(run)).score == 0.0  # no times
