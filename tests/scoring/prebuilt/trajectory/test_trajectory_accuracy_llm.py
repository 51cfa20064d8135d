"""Trajectory accuracy (LLM judge), Mastra's ``llm-trajectory-accuracy-scorer``.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores follow Mastra's formula, worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.scoring.framework.scorer import ScorerError
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy_llm import (
    create_trajectory_accuracy_scorer_llm,
)
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation


def tool_run(ground_truth: Any = None) -> Any:
    calls = [
        create_tool_invocation("c1", "search", {"q": "rain"}, {"hits": 2}),
        create_tool_invocation("c2", "summarize", {}, "short"),
    ]
    message = create_test_message("It will rain.", "assistant", id="a1", tool_invocations=calls)
    return create_agent_test_run(input_messages="Will it rain?", output=[message], ground_truth=ground_truth)


def step(name: str, necessary: Any, in_order: Any) -> dict[str, Any]:
    return {"stepName": name, "wasNecessary": necessary, "wasInOrder": in_order, "reasoning": "r"}


@pytest.mark.parametrize(
    ("verdicts", "missing", "extra", "expected"),
    [
        ([(True, True), (True, True)], None, None, 0.9),  # 0.6 + 0.3: Mastra's ceiling
        ([(True, True), (False, True)], [], ["log"], 0.6),  # 0.5 x 0.6 + 1 x 0.3
        ([(True, False), (True, True), (False, False)], ["a", "b"], None, 0.46),  # 0.4 + 0.1 - 2/5 x 0.1
        ([(False, False)], ["a", "b", "c"], None, 0.0),  # -3/4 x 0.1 clamps to 0
        ([], ["send"], ["log"], 0.0),  # no evaluations, a missing step
        ([], None, ["log"], 0.5),  # no evaluations, only extra steps
        ([], [], [], 1.0),  # no evaluations, nothing wrong
    ],
)
async def test_llm_trajectory_score_formula(
    llm_server: LLMServer,
    judge: Judge,
    verdicts: list[tuple[bool, bool]],
    missing: Any,
    extra: Any,
    expected: float,
) -> None:
    answer: dict[str, Any] = {
        "stepEvaluations": [step(f"s{i}", n, o) for i, (n, o) in enumerate(verdicts)],
        "overallAssessment": "fine",
    }
    if missing is not None:
        answer["missingSteps"] = missing
    if extra is not None:
        answer["extraSteps"] = extra
    llm_server.script(json_reply(answer), text_reply("Because."))
    result = await create_trajectory_accuracy_scorer_llm(judge).run(tool_run())
    assert result.score == expected
    assert result.reason == "Because."
    reason_prompt = llm_server.chat_requests[1].messages[-1]["content"]
    assert f"Score: {expected:g}/1" in reason_prompt


async def test_llm_trajectory_prompt_shows_actual_and_expected_steps(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(json_reply({"stepEvaluations": [], "overallAssessment": "ok"}), text_reply("ok"))
    scorer = create_trajectory_accuracy_scorer_llm(
        judge,
        expected_trajectory=[
            {"name": "search", "stepType": "tool_call", "toolArgs": {"q": "rain"}},
            {"name": "summarize"},
        ],
    )
    assert scorer.description == "Evaluates the trajectory against an expected trajectory using LLM analysis"
    await scorer.run(tool_run())
    prompt = llm_server.chat_requests[0].messages[-1]["content"]
    assert '1. [tool_call] search (args: {"q":"rain"}, result: {"hits":2})' in prompt
    assert '2. [tool_call] summarize (args: {}, result: {"value":"short"})' in prompt
    assert (
        "EXPECTED TRAJECTORY (the ideal sequence):\n"
        '1. [tool_call] search ({"toolArgs":{"q":"rain"}})\n2. summarize\n' in prompt
    )
    assert delimit("user request", "Will it rain?") in prompt
    assert "STEP PRESENCE" in prompt and "no expected trajectory provided" not in prompt
    assert (
        "expert evaluator specializing in AI agent trajectory analysis"
        in llm_server.chat_requests[0].messages[0]["content"]
    )


async def test_llm_trajectory_without_expectation_and_from_ground_truth(
    llm_server: LLMServer, judge: Judge
) -> None:
    empty = {"stepEvaluations": [], "overallAssessment": "ok"}
    llm_server.script(json_reply(empty), text_reply("ok"), json_reply(empty), text_reply("ok"))
    scorer = create_trajectory_accuracy_scorer_llm(judge)
    assert (
        scorer.description == "Evaluates the quality and appropriateness of the trajectory using LLM analysis"
    )
    await scorer.run(tool_run(ground_truth={"steps": []}))  # empty dataset steps: no expectation
    await scorer.run(tool_run(ground_truth={"steps": [{"name": "search"}]}))
    first = llm_server.chat_requests[0].messages[-1]["content"]
    second = llm_server.chat_requests[2].messages[-1]["content"]
    assert "no expected trajectory provided" in first and "EXPECTED TRAJECTORY" not in first
    assert "EXPECTED TRAJECTORY (the ideal sequence):\n1. search\n" in second


@pytest.mark.parametrize("label", ["yes", "maybe", None])
async def test_llm_trajectory_invalid_verdict_is_repaired_then_fails(
    llm_server: LLMServer, judge: Judge, label: Any
) -> None:
    bad = {"stepEvaluations": [step("search", label, True)], "overallAssessment": "x"}
    llm_server.script(json_reply(bad), json_reply(bad))
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_trajectory_accuracy_scorer_llm(judge).run(tool_run())
    assert len(llm_server.chat_requests) == 2  # the answer, then one repair round


async def test_registry_builds_both_scorers_from_camel_case_options(llm_server: LLMServer) -> None:
    code = build_scorer(
        "trajectory-accuracy-code",
        {
            "expectedTrajectory": [{"name": "summarize"}, {"name": "search"}],
            "comparisonOptions": {"ordering": "unordered"},
        },
    )
    assert (await code.run(tool_run())).score == 1
    strict = build_scorer(
        "trajectory-accuracy-code",
        {
            "expected_trajectory": [{"name": "summarize"}, {"name": "search"}],
            "comparison_options": {"ordering": "strict"},
        },
    )
    assert (await strict.run(tool_run())).score == 0  # both names swapped: nothing at its place
    llm_server.script(
        json_reply({"stepEvaluations": [step("search", True, False)], "overallAssessment": "o"}),
        text_reply("r"),
    )
    llm = build_scorer(
        "trajectory-accuracy-llm",
        {"judge": {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "k"}},
    )
    assert llm.id == "trajectory-accuracy-llm"
    assert (await llm.run(tool_run())).score == 0.6
