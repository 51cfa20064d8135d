"""Tool-call accuracy (code): did the agent call the expected tool, or tools in the expected order."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from tracescore.scoring.framework.message_text import extract_tool_calls
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def check_tool_order(actual: Sequence[str], expected: Sequence[str], strict_mode: bool = False) -> bool:
    """Strict: exactly the expected list. Otherwise the first call of each expected tool comes in order."""
    actual = list(actual)
    if strict_mode:
        return actual == list(expected)
    if any(tool not in actual for tool in expected):
        return False
    first_calls = [actual.index(tool) for tool in expected]
    return all(earlier < later for earlier, later in pairwise(first_calls))


def _accuracy(
    expected_tool: str | None, actual: list[str], strict_mode: bool, order: list[str] | None
) -> int:
    if not actual:
        return 0
    if order:
        return int(check_tool_order(actual, order, strict_mode))
    if not expected_tool:
        return 0
    if strict_mode:
        return int(actual == [expected_tool])
    return int(expected_tool in actual)


TOOL_CALL_ACCURACY_CODE = ScorerSpec(
    name="tool-call-accuracy-code",
    former_id="code-tool-call-accuracy-scorer",
    title="Tool Call Accuracy Scorer",
    description="Evaluates whether the LLM selected the correct tool, or called tools in the correct order",
    example={"expected_tool": "get_weather"},
)


@register(TOOL_CALL_ACCURACY_CODE)
def create_tool_call_accuracy_scorer_code(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: list[str] | None = None,
) -> Scorer:
    """1 when the run called the expected tool (or the expected tools in order), else 0.

    Mastra's logic exactly, including its quirks: an empty ``expected_tool_order`` list counts as
    given (so it satisfies the options check), and a run with no input or output messages raises.

    Example::

        scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
        result = await scorer.run(run)  # run.output calls weather-tool then search-tool
        result.score  # 1.0 (with strict_mode=True: 0.0, as another tool was called too)
    """
    if not expected_tool and expected_tool_order is None:
        raise ValueError("Either expectedTool or expectedToolOrder must be provided")
    order = list(expected_tool_order) if expected_tool_order is not None else None
    description = (
        f"Evaluates whether the LLM called tools in the correct order: [{', '.join(order)}]"
        if order is not None
        else f"Evaluates whether the LLM selected the correct tool ({expected_tool}) from the available tools"
    )

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        if not ctx.run.input.input_messages or not ctx.run.output:
            raise ValueError("Input and output messages cannot be null or empty")
        actual, infos = extract_tool_calls(ctx.run.output)
        if expected_tool:
            correct_tool = actual == [expected_tool] if strict_mode else expected_tool in actual
        else:
            correct_tool = False
        return {
            "expected_tool": expected_tool,
            "actual_tools": actual,
            "strict_mode": strict_mode,
            "expected_tool_order": order,
            "has_tool_calls": bool(actual),
            "correct_tool_called": correct_tool,
            "tool_call_infos": infos,
            "correct_order_called": check_tool_order(actual, order, strict_mode)
            if order is not None
            else None,
        }

    def generate_score(ctx: StepContext) -> int:
        found = ctx.preprocessed(dict)
        return _accuracy(expected_tool, found["actual_tools"], strict_mode, order)

    return (
        TOOL_CALL_ACCURACY_CODE.create_scorer(
            description=description,
            needs={"input"},  # tool names survive content capture being off; the user's turn must not
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
