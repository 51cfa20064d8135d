"""VoltAgent's code tool-call accuracy scorer (``toolCallAccuracyCode``), and where it parts from
Mastra's ``tool-call-accuracy-code``.

Expected scores are worked out by hand from VoltAgent's rules; where VoltAgent's own
``tool-call-accuracy.spec.ts`` cases apply to our runs they are reproduced and cited.
"""

from __future__ import annotations

from typing import TypedDict

import pytest

from tests.support.runs import agent_run
from tracescore.schemas import AgentRun, ToolInvocation
from tracescore.schemas.agent_run import ToolState
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.prebuilt.trajectory.tool_call_accuracy import create_tool_call_accuracy_scorer_code
from tracescore.scoring.prebuilt.trajectory.voltagent_tool_call_accuracy import (
    create_voltagent_tool_call_accuracy_scorer,
)


class Expectation(TypedDict, total=False):
    """What the scorer is told to expect."""

    expected_tool: str
    expected_tool_order: list[str]


def calls_run(*tools: str, state: ToolState = "result") -> AgentRun:
    invocations = [
        ToolInvocation(tool_call_id=f"call-{i}", tool_name=tool, state=state) for i, tool in enumerate(tools)
    ]
    # The answer is its tool calls only: no text.
    return agent_run("Find shoes", "", tools=invocations, trace_id="c" * 32, span_id="d" * 16)


async def test_tool_accuracy_lenient_single_tool() -> None:
    # tool-call-accuracy.spec.ts "returns 1 when the expected tool is present in lenient mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="searchProducts")
    result = await scorer.run(calls_run("searchProducts", "checkInventory"))
    assert result.scorer_id == "voltagent-tool-call-accuracy"
    assert result.score == 1
    assert result.preprocess_step_result["correct_tool_called"] is True
    assert result.reason == (
        'Expected tool "searchProducts" was called. Actual tools: ["searchProducts","checkInventory"].'
    )


async def test_tool_accuracy_strict_single_tool_with_extra_calls() -> None:
    # tool-call-accuracy.spec.ts "returns 0 in strict single-tool mode when extra tools are called"
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="searchProducts", strict_mode=True)
    result = await scorer.run(calls_run("searchProducts", "checkInventory"))
    assert result.score == 0
    assert result.preprocess_step_result["correct_tool_called"] is False
    assert result.reason == (
        'Expected tool "searchProducts" was not called. Actual tools: ["searchProducts","checkInventory"].'
    )
    assert (await scorer.run(calls_run("searchProducts"))).score == 1


async def test_tool_accuracy_strict_order() -> None:
    # tool-call-accuracy.spec.ts "checks tool order in strict mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(
        expected_tool_order=["searchProducts", "checkInventory"], strict_mode=True
    )
    passing = await scorer.run(calls_run("searchProducts", "checkInventory"))
    failing = await scorer.run(calls_run("searchProducts", "checkInventory", "fetchPricing"))
    assert (passing.score, failing.score) == (1, 0)
    assert failing.reason == (
        'Tool call order mismatch. Expected order ["searchProducts","checkInventory"], actual tools '
        '["searchProducts","checkInventory","fetchPricing"].'
    )


async def test_tool_accuracy_lenient_order_allows_extra_calls() -> None:
    # tool-call-accuracy.spec.ts "allows extra tools in non-strict order mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(
        expected_tool_order=["searchProducts", "checkInventory"]
    )
    result = await scorer.run(calls_run("logRequest", "searchProducts", "cacheWarmup", "checkInventory"))
    assert result.score == 1
    assert result.preprocess_step_result == {
        "mode": "tool_order",
        "strict_mode": False,
        "has_tool_calls": True,
        "actual_tools": ["logRequest", "searchProducts", "cacheWarmup", "checkInventory"],
        "expected_tool": None,
        "expected_tool_order": ["searchProducts", "checkInventory"],
        "correct_tool_called": False,
        "correct_order_called": True,
    }
    assert result.reason == (
        'Tool calls matched expected order ["searchProducts","checkInventory"]. Actual tools: '
        '["logRequest","searchProducts","cacheWarmup","checkInventory"].'
    )


async def test_tool_accuracy_counts_a_call_whatever_its_outcome() -> None:
    # tool-call-accuracy.spec.ts "extracts tool names from message chains": a call followed by its
    # result is one invocation of our run; a failed call counts too
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="weatherTool")
    assert (await scorer.run(calls_run("weatherTool", state="result"))).score == 1
    assert (await scorer.run(calls_run("weatherTool", state="error"))).score == 1
    assert (await scorer.run(calls_run("weatherTool", state="call"))).score == 1


@pytest.mark.parametrize(
    ("calls", "order", "voltagent", "mastra"),
    [
        # subsequence a (index 1), then b after it (index 2): VoltAgent 1; Mastra compares first
        # calls (a at 1, b at 0): 0
        (("b", "a", "b"), ["a", "b"], 1, 0),
        # a tool expected twice must be called twice here; Mastra compares its first call with
        # itself (0 < 0 fails) whatever the calls
        (("a", "b"), ["a", "a"], 0, 0),
        (("a", "b", "a"), ["a", "a"], 1, 0),
        (("b", "a"), ["a", "b"], 0, 0),
        (("a", "c"), ["a", "b"], 0, 0),
    ],
)
async def test_tool_accuracy_lenient_order_is_a_subsequence(
    calls: tuple[str, ...], order: list[str], voltagent: int, mastra: int
) -> None:
    run = calls_run(*calls)
    ours = await create_voltagent_tool_call_accuracy_scorer(expected_tool_order=order).run(run)
    theirs = await create_tool_call_accuracy_scorer_code(expected_tool_order=order).run(run)
    assert (ours.score, theirs.score) == (voltagent, mastra)


async def test_tool_accuracy_no_tool_calls() -> None:
    single = create_voltagent_tool_call_accuracy_scorer(expected_tool="search")
    ordered = create_voltagent_tool_call_accuracy_scorer(expected_tool_order=["a", "b"], strict_mode=True)
    # No text at all (content capture off): still scored, the scorer needs none
    run = AgentRun(trace_id="e" * 32, span_id="f" * 16)
    assert single.needs == frozenset() and single.missing_needs(run) == []
    first, second = await single.run(run), await ordered.run(run)
    assert (first.score, second.score) == (0, 0)
    assert first.reason == 'No tool calls were made. Expected tool: "search".'
    assert second.reason == 'No tool calls were made. Expected order: ["a","b"].'
    assert first.preprocess_step_result["has_tool_calls"] is False
    assert second.preprocess_step_result["correct_order_called"] is False


async def test_tool_accuracy_names_are_trimmed_and_blanks_dropped() -> None:
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="  search ", strict_mode=True)
    result = await scorer.run(calls_run(" search\t", "   "))
    # " search\t" is search; the blank name is no call: exactly [search] -> 1 in strict mode
    assert result.score == 1 and result.preprocess_step_result["actual_tools"] == ["search"]
    assert result.preprocess_step_result["expected_tool"] == "search"


async def test_tool_accuracy_order_wins_and_empty_order_is_not_given() -> None:
    both = create_voltagent_tool_call_accuracy_scorer(expected_tool="x", expected_tool_order=["a"])
    result = await both.run(calls_run("a"))
    assert result.score == 1 and result.preprocess_step_result["mode"] == "tool_order"
    # An order of blanks is no order: single-tool mode on expected_tool
    single = create_voltagent_tool_call_accuracy_scorer(expected_tool="a", expected_tool_order=[" ", ""])
    result = await single.run(calls_run("b", "a"))
    assert result.score == 1 and result.preprocess_step_result["mode"] == "single_tool"
    assert result.preprocess_step_result["expected_tool_order"] is None


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"expected_tool": "  "},
        {"expected_tool_order": []},
        {"expected_tool": "", "expected_tool_order": [" "]},
    ],
)
def test_tool_accuracy_needs_an_expectation(options: Expectation) -> None:
    # tool-call-accuracy.spec.ts "throws when no expected tool configuration is provided"
    with pytest.raises(ValueError, match="requires either expectedTool or expectedToolOrder"):
        create_voltagent_tool_call_accuracy_scorer(**options)


async def test_tool_accuracy_from_the_registry_by_its_former_id() -> None:
    scorer = build_scorer("toolCallAccuracyCode", {"expectedToolOrder": ["a", "b"], "strictMode": True})
    assert scorer.id == "voltagent-tool-call-accuracy"
    assert (await scorer.run(calls_run("a", "b"))).score == 1
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("voltagent-tool-call-accuracy", {"expectedToolOrder": "a,b"})
