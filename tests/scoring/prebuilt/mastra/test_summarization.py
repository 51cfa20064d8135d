"""Summarization (the weaker of alignment and coverage; the three prompts; the source option and
extractor; needs; invalid options).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path. Expected scores are worked out by hand from Mastra's code (comments say
how); ``test_mastra_reference`` checks the same scorer against @mastra/evals itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import (
    ACME_ANSWER,
    ACME_QUESTION,
    MODEL,
    conversation_run,
    coverage,
    source_judgement,
)
from tests.support.llm_server import LLMServer, text_reply
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.mastra.summarization import create_summarization_scorer
from tracescore.scoring.prebuilt.registry import build_scorer


@pytest.mark.parametrize(
    ("supported", "questions", "answered", "options", "expected"),
    [
        ([True, True, False], 2, [True, True], {}, 0.67),  # min(2/3, 2/2) -> 0.67
        ([True], 4, [True, False, True, False], {}, 0.5),  # min(1, 2/4)
        ([True] + [False] * 7, 1, [True], {}, 0.13),  # 1/8 = 0.125 rounds half up (JS Math.round)
        ([True], 3, [True, True, True], {"max_questions": 2}, 1.0),  # 3rd question and verdict dropped
        ([True], 3, [False, True], {}, 0.33),  # 3 questions, 2 verdicts: the unjudged one is missing, 1/3
        ([True], 1, [True, True, True], {}, 1.0),  # extra verdicts drop: 1/1, never above 1
        ([True, False], 2, [True, True], {"scale": 10}, 5.0),  # min(1/2, 1) x 10
        ([], 3, [True, True, True], {}, 0.0),  # no claims: not scorable
        ([True], 0, [], {"scale": 3}, 0.0),  # no questions: not scorable
    ],
)
async def test_summarization_score_is_the_weaker_axis(
    llm_server: LLMServer,
    judge: Judge,
    supported: list[bool],
    questions: int,
    answered: list[bool],
    options: dict[str, Any],
    expected: float,
) -> None:
    llm_server.script(
        source_judgement(*supported, questions=questions), coverage(*answered), text_reply("Because.")
    )
    result = await create_summarization_scorer(judge, **options).run(conversation_run())
    assert result.score == expected
    assert result.reason == "Because."
    assert len(llm_server.chat_requests) == 3  # Mastra asks all three times, even with nothing to score


async def test_summarization_prompts_delimit_source_summary_and_extractions(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(
        source_judgement(True, False, questions=3), coverage(True, False), text_reply("Because.")
    )
    run = conversation_run([("assistant", "Draft one."), ("assistant", "  "), ("assistant", ACME_ANSWER)])
    result = await create_summarization_scorer(judge, max_questions=2).run(run)
    assert result.score == 0.5  # min(alignment 1/2, coverage 1/2 of the first 2 questions)
    judgement, covered, reason = llm_server.user_prompts()
    # The summary is the last assistant message with text; the source is the user's message.
    assert delimit("source", ACME_QUESTION) in judgement and delimit("summary", ACME_ANSWER) in judgement
    assert "write at most 2 closed-ended questions" in judgement
    # Coverage never sees the source, and only the questions within max_questions.
    assert ACME_QUESTION not in covered and delimit("summary", ACME_ANSWER) in covered
    assert "Number of questions: 2\n" in covered and delimit("questions", "[0] q0\n[1] q1") in covered
    assert "Score: 0.5 out of 1\nAlignment score: 0.5\nCoverage score: 0.5\n" in reason
    assert delimit("unsupported claims", "- claim 1") in reason
    assert delimit("unanswered questions", "- q1") in reason
    assert '"The score is 0.5 because {explanation' in reason


async def test_summarization_source_option_and_extractor(llm_server: LLMServer, judge: Judge) -> None:
    def replies() -> None:
        llm_server.script(source_judgement(True, questions=1), coverage(True), text_reply("Because."))

    replies()
    await create_summarization_scorer(judge, source="").run(conversation_run())
    assert "Source Text:\n" + delimit("source", "") in llm_server.user_prompts()[0]  # Mastra's `??`
    replies()
    scorer = create_summarization_scorer(
        judge, source="ignored", source_extractor=lambda run: f"{run.span_id} doc"
    )
    await scorer.run(conversation_run())
    assert delimit("source", f"{7:016x} doc") in llm_server.user_prompts()[3]  # the extractor wins


def test_summarization_needs_the_input_only_when_it_is_the_source() -> None:
    assert build_scorer("summarization", {"judge": MODEL}).needs == {"input", "output"}
    assert build_scorer("summarization", {"judge": MODEL, "source": "doc"}).needs == {"output"}
    extracted = create_summarization_scorer(Judge(MODEL), source_extractor=lambda run: "doc")
    assert extracted.needs == {"output"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxQuestions": 0}, "maxQuestions must be at least 1 for Summarization scoring"),
        ({"max_questions": -3}, "maxQuestions must be at least 1 for Summarization scoring"),
        ({"max_questions": 2.5}, "max_questions"),
        ({"scale": 0}, "scale must be a finite number > 0"),
        ({"scale": float("nan")}, "scale must be a finite number > 0"),
    ],
)
def test_summarization_rejects_invalid_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_scorer("summarization", {**options, "judge": MODEL})
