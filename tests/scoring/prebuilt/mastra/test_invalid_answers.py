"""Rubric, summarization and multi-turn judge: an invalid judge answer gets one repair round, and an
answer invalid twice fails the scorer (never a score)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import (
    conversation_run,
    coverage,
    rubric_answer,
    source_judgement,
)
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.registry import build_scorer

INVALID = [
    (
        "rubric",
        {"criteria": "A"},
        {
            "criteria": [{"criterion": "A", "satisfied": "yes", "required": True, "reasoning": "r"}],
            "overallAssessment": "",
        },
    ),
    (
        "rubric",
        {"criteria": "A"},
        {
            "criteria": [{"criterion": "A", "satisfied": True, "required": 1, "reasoning": "r"}],
            "overallAssessment": "",
        },
    ),
    (
        "summarization",
        {},
        {"alignment": [{"claim": "c", "supported": "true", "reason": "r"}], "questions": []},
    ),
    ("summarization", {}, {"alignment": [], "questions": "q0"}),
    ("multi-turn-judge", {"criterion": "c"}, {"satisfied": 1, "reasoning": "r"}),
    ("multi-turn-judge", {"criterion": "c"}, {"reasoning": "r"}),
]
VALID = {
    "rubric": (rubric_answer(("A", True, True)),),
    "summarization": (source_judgement(True, questions=1), coverage(True), text_reply("Because.")),
    "multi-turn-judge": (json_reply({"satisfied": True, "reasoning": "r"}),),
}


@pytest.mark.parametrize(
    ("name", "options", "answer"), INVALID, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(INVALID)]
)
async def test_an_invalid_answer_is_repaired_once(
    llm_server: LLMServer, judge: Judge, name: str, options: dict[str, Any], answer: dict[str, Any]
) -> None:
    llm_server.script(json_reply(answer), *VALID[name])
    result = await build_scorer(name, {**options, "judge": judge}).run(conversation_run())
    assert result.score == 1.0  # the repaired answers: all met / min(1/1, 1/1) / satisfied
    repair = llm_server.chat_requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": json.dumps(answer)}
    assert repair[-1]["content"].startswith("Your answer was not valid JSON for the required schema")


@pytest.mark.parametrize(
    ("name", "options", "answer"), INVALID, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(INVALID)]
)
async def test_an_answer_invalid_twice_fails_the_scorer(
    llm_server: LLMServer, judge: Judge, name: str, options: dict[str, Any], answer: dict[str, Any]
) -> None:
    llm_server.script(json_reply(answer), json_reply(answer))
    scorer = build_scorer(name, {**options, "judge": judge})
    step = "preprocess" if name == "summarization" else "analyze"
    with pytest.raises(ScorerError, match=f"step '{step}'.*invalid JSON twice"):
        await scorer.run(conversation_run())
    assert len(llm_server.chat_requests) == 2
