"""Trajectory accuracy (code) against the published @mastra/evals 1.10.2 scorer.

The REFERENCE table was computed under Node 20 with ``createTrajectoryAccuracyScorerCode`` on a run whose
output is core's ``extractTrajectory`` of one assistant message carrying the case's tool invocations
(args default ``{}``, result ``{}``, state ``result``; Mastra's ``output-error`` is our ``error``), with the
case's ``groundTruth`` as the run's ``expectedTrajectory``. Each entry: (score, (matched, missing, extra,
out of order, repeated)) or (score, None) when no expectation was given.
"""

from __future__ import annotations

from typing import Any

import pytest

from tracescore.schemas.agent_run import ToolInvocation
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy import (
    compare_trajectories,
    create_trajectory_accuracy_scorer_code,
    extract_trajectory,
)
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation

CASES: list[dict[str, Any]] = [
    {
        "id": "relaxed-exact",
        "tools": [{"name": "search"}, {"name": "summarize"}],
        "expected": [{"name": "search"}, {"name": "summarize"}],
    },
    {
        "id": "relaxed-extra-between",
        "tools": [{"name": "search"}, {"name": "log"}, {"name": "summarize"}],
        "expected": [{"name": "search"}, {"name": "summarize"}],
    },
    {
        "id": "relaxed-swapped",
        "tools": [{"name": "summarize"}, {"name": "search"}],
        "expected": [{"name": "search"}, {"name": "summarize"}],
    },
    {
        "id": "relaxed-missing",
        "tools": [{"name": "search"}],
        "expected": [{"name": "search"}, {"name": "summarize"}, {"name": "send"}],
    },
    {
        "id": "relaxed-no-tools",
        "tools": [],
        "expected": [{"name": "search"}, {"name": "summarize"}, {"name": "send"}],
    },
    {
        "id": "relaxed-repeat-allowed",
        "tools": [{"name": "search"}, {"name": "search"}, {"name": "summarize"}],
        "expected": [{"name": "search"}, {"name": "summarize"}],
    },
    {
        "id": "relaxed-repeat-penalised",
        "tools": [{"name": "search"}, {"name": "search"}, {"name": "summarize"}, {"name": "summarize"}],
        "expected": [{"name": "search"}, {"name": "summarize"}],
        "options": {"allowRepeatedSteps": False},
    },
    {
        "id": "relaxed-three-of-three-out-of-order",
        "tools": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    },
    {
        "id": "strict-exact",
        "tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "strict-one-extra",
        "tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "expected": [{"name": "a"}, {"name": "b"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "strict-shifted",
        "tools": [{"name": "x"}, {"name": "a"}, {"name": "b"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "strict-many-extra",
        "tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
        "expected": [{"name": "a"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "strict-short",
        "tools": [{"name": "a"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "strict-repeat-penalised",
        "tools": [{"name": "a"}, {"name": "a"}, {"name": "b"}, {"name": "b"}, {"name": "c"}, {"name": "c"}],
        "expected": [
            {"name": "a"},
            {"name": "a"},
            {"name": "b"},
            {"name": "b"},
            {"name": "c"},
            {"name": "c"},
        ],
        "options": {"ordering": "strict", "allowRepeatedSteps": False},
    },
    {
        "id": "unordered-swapped",
        "tools": [{"name": "b"}, {"name": "a"}],
        "expected": [{"name": "a"}, {"name": "b"}],
        "options": {"ordering": "unordered"},
    },
    {
        "id": "unordered-partial",
        "tools": [{"name": "b"}, {"name": "z"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "options": {"ordering": "unordered"},
    },
    {
        "id": "unordered-duplicate-expected",
        "tools": [{"name": "a"}],
        "expected": [{"name": "a"}, {"name": "a"}],
        "options": {"ordering": "unordered"},
    },
    {
        "id": "args-match",
        "tools": [{"name": "weather", "args": {"city": "Paris", "units": "c"}}],
        "expected": [
            {"name": "weather", "stepType": "tool_call", "toolArgs": {"city": "Paris", "units": "c"}}
        ],
    },
    {
        "id": "args-mismatch",
        "tools": [
            {"name": "weather", "args": {"city": "Rome"}},
            {"name": "weather", "args": {"city": "Paris"}},
        ],
        "expected": [
            {"name": "weather", "stepType": "tool_call", "toolArgs": {"city": "Paris"}},
            {"name": "weather", "stepType": "tool_call", "toolArgs": {"city": "Rome"}},
        ],
    },
    {
        "id": "args-key-order",
        "tools": [{"name": "weather", "args": {"units": "c", "city": "Paris"}}],
        "expected": [
            {"name": "weather", "stepType": "tool_call", "toolArgs": {"city": "Paris", "units": "c"}}
        ],
    },
    {
        "id": "args-ignored-without-steptype",
        "tools": [{"name": "weather", "args": {"city": "Rome"}}],
        "expected": [{"name": "weather", "toolArgs": {"city": "Paris"}}],
    },
    {
        "id": "result-match",
        "tools": [{"name": "calc", "args": {"x": 2}, "result": {"y": 4}}],
        "expected": [{"name": "calc", "stepType": "tool_call", "toolResult": {"y": 4}}],
    },
    {
        "id": "result-scalar-wrapped",
        "tools": [{"name": "calc", "result": 4}],
        "expected": [{"name": "calc", "stepType": "tool_call", "toolResult": {"value": 4}}],
    },
    {
        "id": "success-true",
        "tools": [{"name": "fetch", "result": {"ok": 1}}],
        "expected": [{"name": "fetch", "stepType": "tool_call", "success": True}],
    },
    {
        "id": "success-error-state",
        "tools": [{"name": "fetch", "state": "output-error"}],
        "expected": [{"name": "fetch", "stepType": "tool_call", "success": True}],
    },
    {
        "id": "call-state-failure-expected",
        "tools": [{"name": "fetch", "state": "call"}, {"name": "send"}],
        "expected": [{"name": "fetch", "stepType": "tool_call", "success": False}, {"name": "send"}],
        "options": {"ordering": "strict"},
    },
    {
        "id": "call-state-no-result",
        "tools": [{"name": "fetch", "state": "call", "result": {"ok": 1}}],
        "expected": [{"name": "fetch", "stepType": "tool_call", "toolResult": {"ok": 1}}],
    },
    {
        "id": "wrong-step-type",
        "tools": [{"name": "plan"}],
        "expected": [{"name": "plan", "stepType": "agent_run"}],
    },
    {"id": "empty-expected-no-tools", "tools": [], "expected": []},
    {"id": "empty-expected-with-tools", "tools": [{"name": "a"}], "expected": []},
    {"id": "no-expected", "tools": [{"name": "a"}]},
    {
        "id": "trajectory-object",
        "tools": [{"name": "a"}, {"name": "b"}],
        "expected": {
            "steps": [
                {"stepType": "tool_call", "name": "a"},
                {"stepType": "tool_call", "name": "b", "toolArgs": {"q": 1}},
            ]
        },
    },
    {
        "id": "item-expectation",
        "tools": [{"name": "b"}, {"name": "a"}],
        "groundTruth": {"steps": [{"name": "a"}, {"name": "b"}], "ordering": "unordered"},
    },
    {
        "id": "item-ordering-overrides-options",
        "tools": [{"name": "a"}, {"name": "x"}, {"name": "b"}],
        "expected": [{"name": "a"}, {"name": "b"}],
        "options": {"ordering": "relaxed"},
        "groundTruth": {"ordering": "strict"},
    },
    {
        "id": "item-repeat-override",
        "tools": [{"name": "a"}, {"name": "a"}, {"name": "b"}],
        "expected": [{"name": "a"}, {"name": "b"}],
        "groundTruth": {"allowRepeatedSteps": False},
    },
    {
        "id": "relaxed-third",
        "tools": [{"name": "a"}, {"name": "q"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    },
    {
        "id": "strict-two-thirds-extra",
        "tools": [{"name": "a"}, {"name": "b"}, {"name": "d"}, {"name": "e"}],
        "expected": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "options": {"ordering": "strict"},
    },
]


REFERENCE: dict[str, tuple[float, Any]] = {
    "relaxed-exact": (1, (2, [], [], [], [])),
    "relaxed-extra-between": (1, (2, [], ["log"], [], [])),
    "relaxed-swapped": (0.5, (1, ["summarize"], [], ["summarize"], [])),
    "relaxed-missing": (0.33, (1, ["summarize", "send"], [], [], [])),
    "relaxed-no-tools": (0, (0, ["search", "summarize", "send"], [], [], [])),
    "relaxed-repeat-allowed": (1, (2, [], [], [], ["search"])),
    "relaxed-repeat-penalised": (0.8, (2, [], [], [], ["search", "summarize"])),
    "relaxed-three-of-three-out-of-order": (0.67, (2, ["c"], [], ["c"], [])),
    "strict-exact": (1, (3, [], [], [], [])),
    "strict-one-extra": (0.75, (2, [], ["c"], [], [])),
    "strict-shifted": (0, (0, ["a", "b", "c"], ["x"], ["a", "b"], [])),
    "strict-many-extra": (0, (1, [], ["b", "c", "d"], [], [])),
    "strict-short": (0.33, (1, ["b", "c"], [], [], [])),
    "strict-repeat-penalised": (0.7, (6, [], [], [], ["a", "b", "c"])),
    "unordered-swapped": (1, (2, [], [], [], [])),
    "unordered-partial": (0.33, (1, ["a", "c"], ["z"], [], [])),
    "unordered-duplicate-expected": (0.5, (1, ["a"], [], [], [])),
    "args-match": (1, (1, [], [], [], [])),
    "args-mismatch": (0.5, (1, ["weather"], [], ["weather"], ["weather"])),
    "args-key-order": (0, (0, ["weather"], [], ["weather"], [])),
    "args-ignored-without-steptype": (1, (1, [], [], [], [])),
    "result-match": (1, (1, [], [], [], [])),
    "result-scalar-wrapped": (1, (1, [], [], [], [])),
    "success-true": (1, (1, [], [], [], [])),
    "success-error-state": (0, (0, ["fetch"], [], ["fetch"], [])),
    "call-state-failure-expected": (1, (2, [], [], [], [])),
    "call-state-no-result": (0, (0, ["fetch"], [], ["fetch"], [])),
    "wrong-step-type": (0, (0, ["plan"], [], ["plan"], [])),
    "empty-expected-no-tools": (1, (0, [], [], [], [])),
    "empty-expected-with-tools": (0, (0, [], ["a"], [], [])),
    "no-expected": (0, None),
    "trajectory-object": (0.5, (1, ["b"], [], ["b"], [])),
    "item-expectation": (1, (2, [], [], [], [])),
    "item-ordering-overrides-options": (0.25, (1, ["b"], ["x"], ["b"], [])),
    "item-repeat-override": (0.9, (2, [], [], [], ["a"])),
    "relaxed-third": (0.33, (1, ["b", "c"], ["q"], [], [])),
    "strict-two-thirds-extra": (0.5, (2, ["c"], ["d", "e"], [], [])),
}


def _run(case: dict[str, Any]) -> Any:
    invocations = [
        create_tool_invocation(
            f"call-{i}",
            tool["name"],
            tool.get("args", {}),
            tool.get("result", {}),
            tool.get("state", "result"),
        )
        for i, tool in enumerate(case["tools"])
    ]
    message = create_test_message("done", "assistant", id="a1", tool_invocations=invocations)
    return create_agent_test_run(input_messages="go", output=[message], ground_truth=case.get("groundTruth"))


def _scorer(case: dict[str, Any]) -> Any:
    return create_trajectory_accuracy_scorer_code(
        expected_trajectory=case.get("expected"), comparison_options=case.get("options")
    )


def test_every_case_has_a_reference() -> None:
    assert [c["id"] for c in CASES] == list(REFERENCE)
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
async def test_score_and_comparison_match_mastra(case: dict[str, Any]) -> None:
    expected_score, expected_comparison = REFERENCE[case["id"]]
    result = await _scorer(case).run(_run(case))
    assert result.score == expected_score
    comparison = result.preprocess_step_result["comparison"]
    if expected_comparison is None:
        assert comparison is None
        assert "No expected trajectory" in result.preprocess_step_result["error"]
        return
    got = (
        comparison["matched_steps"],
        comparison["missing_steps"],
        comparison["extra_steps"],
        comparison["out_of_order_steps"],
        comparison["repeated_steps"],
    )
    assert got == expected_comparison


def test_trajectory_is_built_from_tool_invocations_in_order() -> None:
    first = create_test_message(
        "",
        "assistant",
        id="m1",
        tool_invocations=[create_tool_invocation("c1", "search", {"q": "x"}, {"hits": 2})],
    )
    second = create_test_message(
        "",
        "assistant",
        id="m2",
        tool_invocations=[
            create_tool_invocation("c2", "fetch", {"url": "u"}, None, "output-error"),
            ToolInvocation(tool_call_id="c3", tool_name="sum", args=[1, 2], result=3, state="result"),
        ],
    )
    run = create_agent_test_run(input_messages="go", output=[first, second])
    assert extract_trajectory(run) == [
        {"step_type": "tool_call", "name": "search", "tool_args": {"q": "x"}, "tool_result": {"hits": 2},
         "success": True},
        {"step_type": "tool_call", "name": "fetch", "tool_args": {"url": "u"}, "tool_result": None,
         "success": False},
        {"step_type": "tool_call", "name": "sum", "tool_args": {"value": [1, 2]}, "tool_result": {"value": 3},
         "success": True},
    ]  # fmt: skip


def test_snake_case_steps_and_options_equal_camel_case() -> None:
    actual: list[dict[str, object]] = [
        {"step_type": "tool_call", "name": "w", "tool_args": {"city": "Paris"}},
        {"name": "w"},
    ]
    camel = compare_trajectories(
        actual, [{"name": "w", "stepType": "tool_call", "toolArgs": {"city": "Rome"}}], "unordered"
    )
    snake = compare_trajectories(
        actual, [{"name": "w", "step_type": "tool_call", "tool_args": {"city": "Rome"}}], "unordered"
    )
    assert camel == snake
    assert snake["score"] == 0  # neither step has Rome's args (the second has no step type at all)


async def test_descriptions_match_mastra() -> None:
    assert _scorer({"expected": {"steps": [{"name": "a"}, {"name": "b"}]}}).description == (
        "Evaluates whether the trajectory matches the expected path: [a → b] (relaxed ordering)"
    )
    assert _scorer({"options": {"ordering": "strict"}}).description == (
        "Evaluates trajectory accuracy against expected trajectory from dataset items (strict ordering)"
    )


async def test_snake_case_repeat_option_penalises() -> None:
    run = _run({"tools": [{"name": "a"}, {"name": "a"}, {"name": "b"}]})
    scorer = create_trajectory_accuracy_scorer_code(
        expected_trajectory=[{"name": "a"}, {"name": "b"}], comparison_options={"allow_repeated_steps": False}
    )
    assert (await scorer.run(run)).score == 0.9  # 1.0 minus 0.1 for the one repeated name


def test_unknown_ordering_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="ordering must be strict, relaxed or unordered"):
        create_trajectory_accuracy_scorer_code([{"name": "a"}], {"ordering": "strcit"})
    with pytest.raises(ValueError, match="trajectory-accuracy-code"):
        build_scorer("trajectory-accuracy-code", {"comparisonOptions": {"ordering": "any"}})
