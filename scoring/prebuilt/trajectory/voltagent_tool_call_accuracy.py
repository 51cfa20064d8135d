"""Tool-call accuracy, VoltAgent's way (``createToolCallAccuracyScorerCode``; no LLM).

Binary: 1 when the run called ``expected_tool`` (with ``strict_mode``: that tool and nothing
else), or, when ``expected_tool_order`` is given (it wins over ``expected_tool``), when the calls
follow that order. Order, lenient: the expected tools appear as a subsequence of the calls, each
found after the previous match, so other calls may come between them and a tool expected twice
must be called twice. Order, strict: the calls are exactly the expected list.

This differs from Mastra's ``code-tool-call-accuracy-scorer`` (``tool-call-accuracy-code``) in
ways that change scores: Mastra compares the first call of each expected tool (calls ``b, a, b``
fail the order ``a, b`` there, pass here), counts an empty ``expected_tool_order`` as given, and
fails a run without input or output messages; VoltAgent's drops blank names from the options (a
blank ``expected_tool`` and an empty order are "not given") and scores any run, 0 without calls.

The calls are the run's output tool invocations in order (names trimmed, blank names skipped),
whatever their outcome -- the ``toolCalls`` VoltAgent reads first. Tool names survive content
capture being off, so the scorer needs no text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tracescore.scoring.framework.message_text import extract_tool_calls
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.judge_helpers import js_json
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

Mode = Literal["single_tool", "tool_order"]


def normalize_tool_name(value: Any) -> str | None:
    """A trimmed tool name; None for a non-string or blank one."""
    if not isinstance(value, str):
        return None
    return value.strip() or None


def follows_order(actual: Sequence[str], expected: Sequence[str], strict_mode: bool) -> bool:
    """Strict: exactly ``expected``. Lenient: ``expected`` is a subsequence of ``actual``.

    >>> follows_order(["b", "a", "b"], ["a", "b"], strict_mode=False)
    True
    """
    calls = list(actual)
    if strict_mode:
        return calls == list(expected)
    position = 0
    for tool in expected:
        try:
            position = calls.index(tool, position) + 1
        except ValueError:
            return False
    return True


def reason_text(evaluation: dict[str, Any]) -> str:
    """VoltAgent's ``buildReason`` (tool lists as ``JSON.stringify`` prints them)."""
    actual = js_json(evaluation["actual_tools"])
    if evaluation["mode"] == "tool_order":
        order = js_json(evaluation["expected_tool_order"] or [])
        if not evaluation["has_tool_calls"]:
            return f"No tool calls were made. Expected order: {order}."
        if evaluation["correct_order_called"]:
            return f"Tool calls matched expected order {order}. Actual tools: {actual}."
        return f"Tool call order mismatch. Expected order {order}, actual tools {actual}."
    expected = evaluation["expected_tool"] or ""
    if not evaluation["has_tool_calls"]:
        return f'No tool calls were made. Expected tool: "{expected}".'
    if evaluation["correct_tool_called"]:
        return f'Expected tool "{expected}" was called. Actual tools: {actual}.'
    return f'Expected tool "{expected}" was not called. Actual tools: {actual}.'


VOLTAGENT_TOOL_CALL_ACCURACY = ScorerSpec(
    name="voltagent-tool-call-accuracy",
    former_id="toolCallAccuracyCode",
    title="Tool Call Accuracy (Code)",
    description="Whether the agent called the expected tool, or the expected tools in order",
    example={"expected_tool": "get_weather"},
)


@register(VOLTAGENT_TOOL_CALL_ACCURACY)
def create_voltagent_tool_call_accuracy_scorer(
    expected_tool: str | None = None,
    expected_tool_order: list[str] | None = None,
    strict_mode: bool = False,
) -> Scorer:
    """1 when the run called the expected tool (or the expected tools in order), else 0.

    Example::

        scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool_order=["search", "book"])
        result = await scorer.run(run)  # run.output calls log, search, cache, book
        result.score  # 1.0 (with strict_mode=True: 0.0, as other tools were called too)
    """
    tool = normalize_tool_name(expected_tool)
    order = [name for item in expected_tool_order or [] if (name := normalize_tool_name(item))]
    if tool is None and not order:
        raise ValueError("createToolCallAccuracyScorerCode requires either expectedTool or expectedToolOrder")
    mode: Mode = "tool_order" if order else "single_tool"

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        names, _ = extract_tool_calls(ctx.run.output)
        actual = [name for raw in names if (name := normalize_tool_name(raw))]
        correct_tool = False
        correct_order: bool | None = None
        if mode == "tool_order":
            correct_order = follows_order(actual, order, strict_mode)
        elif tool is not None:
            correct_tool = actual == [tool] if strict_mode else tool in actual
        return {
            "mode": mode,
            "strict_mode": strict_mode,
            "has_tool_calls": bool(actual),
            "actual_tools": actual,
            "expected_tool": tool,
            "expected_tool_order": order or None,
            "correct_tool_called": correct_tool,
            "correct_order_called": correct_order,
        }

    def generate_score(ctx: StepContext) -> int:
        evaluation = ctx.preprocessed(dict)
        key = "correct_order_called" if mode == "tool_order" else "correct_tool_called"
        return 1 if evaluation[key] else 0

    return (
        VOLTAGENT_TOOL_CALL_ACCURACY.create_scorer(needs=set())
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(lambda ctx: reason_text(ctx.preprocessed(dict)))
    )
