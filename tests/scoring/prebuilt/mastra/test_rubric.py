"""Rubric (binary on the required criteria; Mastra's reason; the prompt; no-op without criteria;
string checklists; invalid options).

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
    rubric_answer,
)
from tests.support.llm_server import LLMServer, json_reply
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.mastra.rubric import (
    NO_RUBRIC_REASON,
    RUBRIC,
    create_rubric_scorer,
    parse_rubric_string,
)
from tracescore.scoring.prebuilt.registry import build_scorer


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        ([("A", True, True), ("B", True, True)], 1.0, 1.0),  # every required one met
        ([("A", True, True), ("B", False, True)], 1.0, 0.0),  # one required unmet: binary 0
        ([("A", True, True), ("B", False, False)], 4.0, 4.0),  # only the optional one unmet: 1 x 4
        ([("A", False, False), ("B", True, False)], 1.0, 0.0),  # none required: all gate, one unmet
        ([("A", True, False), ("B", True, False)], 0.3, 0.3),  # none required, all met: 1 x 0.3 (no rounding)
    ],
)
async def test_rubric_score_is_binary_on_the_required_criteria(
    llm_server: LLMServer, judge: Judge, verdicts: list[tuple[str, bool, bool]], scale: float, expected: float
) -> None:
    llm_server.script(rubric_answer(*verdicts))
    scorer = create_rubric_scorer(judge, criteria="A\nB", scale=scale)
    assert (await scorer.run(conversation_run())).score == expected


async def test_rubric_reason_lists_each_criterion_and_what_is_left(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(rubric_answer(("A", True, True), ("B", False, True), ("C", False, False)))
    result = await create_rubric_scorer(judge, criteria="A\nB\nC").run(conversation_run())
    assert result.reason == (
        "❌ Rubric not yet satisfied.\n\n"
        "✅ [required] A\n   → why 0\n"
        "❌ [required] B\n   → why 1\n"
        "❌ [optional] C\n   → why 2\n\n"
        "Overall.\n\n"
        "To finish, address the 1 unmet required criterion above."
    )


async def test_rubric_prompt_delimits_the_task_and_the_output(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(rubric_answer(("Short", True, True)))
    criteria: list[dict[str, object]] = [
        {"description": "Short"},
        {"description": "Polite", "required": False},
    ]
    await create_rubric_scorer(judge, criteria=criteria).run(conversation_run())
    [prompt] = llm_server.user_prompts()
    assert delimit("task", ACME_QUESTION) in prompt
    assert delimit("output", ACME_ANSWER) in prompt
    assert "Rubric criteria:\n1. [required] Short\n2. [optional] Polite\n" in prompt  # configuration: plain
    assert RUBRIC.instructions in llm_server.chat_requests[0].messages[0]["content"]


async def test_rubric_without_a_task_says_so(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(rubric_answer(("A", True, True)))
    await create_rubric_scorer(judge, criteria="A").run(conversation_run(inputs=[]))
    assert "Original task:\n(no task provided)\n" in llm_server.user_prompts()[0]


@pytest.mark.parametrize("criteria", [None, "", [], " \n - \n"])
async def test_rubric_without_criteria_is_a_passing_no_op(
    llm_server: LLMServer, judge: Judge, criteria: Any
) -> None:
    # Mastra still asks the judge, with a fixed prompt, and passes with 1 (not scaled) whatever it says.
    llm_server.script(
        json_reply({"criteria": [], "overallAssessment": "No rubric provided; nothing to grade."})
    )
    result = await create_rubric_scorer(judge, criteria=criteria, scale=5).run(conversation_run())
    assert (result.score, result.reason) == (1.0, NO_RUBRIC_REASON)
    assert llm_server.user_prompts() == [RUBRIC.prompt("no_rubric").render()]


def test_rubric_string_checklist_strips_list_markers() -> None:
    criteria = parse_rubric_string("- Alpha\n  * Beta  \n\n3) Gamma\n• Delta\n10. Epsilon\n- \nZeta - 2. eta")
    assert [(c.description, c.required) for c in criteria] == [
        ("Alpha", True),
        ("Beta", True),
        ("Gamma", True),
        ("Delta", True),
        ("Epsilon", True),
        ("Zeta - 2. eta", True),  # only a leading marker is a marker
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"criteria": "A", "scale": 0}, "scale must be a finite number > 0"),
        ({"criteria": "A", "scale": -1}, "scale must be a finite number > 0"),
        ({"criteria": "A", "scale": float("inf")}, "scale must be a finite number > 0"),
        ({"criteria": [{"required": True}]}, "description"),
        ({"criteria": [{"description": "A", "required": "sometimes"}]}, "required"),
        ({"criteria": "A", "weights": [1]}, "has no option 'weights'"),
    ],
)
def test_rubric_rejects_invalid_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_scorer("rubric", {**options, "judge": MODEL})
