"""Quick checks on the tool calls: Mastra's ``checks.calledTool``, ``didNotCall``, ``toolOrder``,
``maxToolCalls``, ``usedNoTools`` and ``noToolErrors``.

Ports of ``@mastra/evals`` ``scorers/code/checks``: six pass/fail assertions (1 or 0) on the tool
calls of a run, with no reason, and with Mastra's ids (``check-called-tool``, ...), names,
descriptions and preprocess step results (keys in snake_case). An option check Mastra lacks:
``times`` and ``max`` must be 0 or more.

Tool checks read the tool names (which survive content capture being off), every recorded call
counting whatever its outcome; ``no_tool_errors`` counts a call as failed when it threw (state
``error``), never returned (``call``), or returned a mapping whose ``error`` is truthy in JavaScript.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from tracescore.schemas import AgentRun, ToolInvocation
from tracescore.scoring.framework.message_text import extract_tool_calls
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.checks.pass_fail import pass_fail, passed
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def _tool_check(
    spec: ScorerSpec, description: str, preprocess: Callable[[StepContext], dict[str, object]]
) -> Scorer:
    return (
        # Tool names survive content capture being off: these checks need no text at all.
        spec.create_scorer(description=description, needs=set(), label=pass_fail)
        .preprocess(preprocess)
        .generate_score(lambda ctx: passed(ctx, "passed"))
    )


def _tool_names(run: AgentRun) -> list[str]:
    return extract_tool_calls(run.output)[0]


def _non_negative(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, got {value}")


CALLED_TOOL = ScorerSpec(
    name="check-called-tool",
    title="Called Tool Check",
    description="Checks that a tool was called",
    example={"tool_name": "get_weather"},
)


@register(CALLED_TOOL)
def create_called_tool_check(tool_name: str, times: int = 1) -> Scorer:
    """1 when the run called ``tool_name`` at least ``times`` times (failed calls count).

    Example::

        create_called_tool_check("search", times=2)  # search, summarize, search -> 1
    """
    _non_negative("times", times)
    at_least = f" at least {times} times" if times > 1 else ""

    def preprocess(ctx: StepContext) -> dict[str, object]:
        count = _tool_names(ctx.run).count(tool_name)
        return {
            "tool_name": tool_name,
            "expected_times": times,
            "actual_count": count,
            "passed": count >= times,
        }

    return _tool_check(
        CALLED_TOOL,
        f'Checks that "{tool_name}" was called{at_least}',
        preprocess,
    )


DID_NOT_CALL = ScorerSpec(
    name="check-did-not-call",
    title="Did Not Call Check",
    description="Checks that a tool was NOT called",
    example={"tool_name": "delete_account"},
)


@register(DID_NOT_CALL)
def create_did_not_call_check(tool_name: str) -> Scorer:
    """1 when the run never called ``tool_name`` (not even a call that failed).

    Example::

        create_did_not_call_check("delete_user")  # get_user -> 1; delete_user -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        count = _tool_names(ctx.run).count(tool_name)
        return {"tool_name": tool_name, "count": count, "passed": count == 0}

    return _tool_check(DID_NOT_CALL, f'Checks that "{tool_name}" was NOT called', preprocess)


TOOL_ORDER = ScorerSpec(
    name="check-tool-order",
    title="Tool Order Check",
    description="Checks the order of the tool calls",
    example={"expected_order": ["search", "summarize"]},
)


@register(TOOL_ORDER)
def create_tool_order_check(expected_order: Sequence[str]) -> Scorer:
    """1 when ``expected_order`` is a subsequence of the run's tool calls (other calls may come between).

    Matched greedily from the first call, as Mastra does; an empty order always passes.

    Example::

        create_tool_order_check(["search", "respond"])  # search, log, respond -> 1; respond, search -> 0
    """
    order = list(expected_order)

    def preprocess(ctx: StepContext) -> dict[str, object]:
        tools = _tool_names(ctx.run)
        matched = 0
        for tool in tools:
            if matched < len(order) and tool == order[matched]:
                matched += 1
        return {"actual_tools": tools, "expected_order": order, "passed": matched == len(order)}

    return _tool_check(TOOL_ORDER, f"Checks tool call order: [{' → '.join(order)}]", preprocess)


MAX_TOOL_CALLS = ScorerSpec(
    name="check-max-tool-calls",
    title="Max Tool Calls Check",
    description="Checks that no more than a number of tool calls were made",
    example={"max": 5},
)


@register(MAX_TOOL_CALLS)
def create_max_tool_calls_check(max: int) -> Scorer:
    """1 when the run made at most ``max`` tool calls.

    Example::

        create_max_tool_calls_check(2)  # two calls -> 1; three -> 0
    """
    _non_negative("max", max)

    def preprocess(ctx: StepContext) -> dict[str, object]:
        count = len(_tool_names(ctx.run))
        return {"count": count, "max": max, "passed": count <= max}

    return _tool_check(
        MAX_TOOL_CALLS,
        f"Checks that no more than {max} tool calls were made",
        preprocess,
    )


USED_NO_TOOLS = ScorerSpec(
    name="check-used-no-tools",
    title="Used No Tools Check",
    description="Checks that no tools were called",
)


@register(USED_NO_TOOLS)
def create_used_no_tools_check() -> Scorer:
    """1 when the run called no tool at all.

    Example::

        create_used_no_tools_check()  # a plain answer -> 1; any tool call -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        count = len(_tool_names(ctx.run))
        return {"count": count, "passed": count == 0}

    return _tool_check(USED_NO_TOOLS, "Checks that no tools were called", preprocess)


def js_truthy(value: object) -> bool:
    """``Boolean(value)`` in JavaScript for a JSON value: objects and arrays are true even when empty."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def is_error_invocation(invocation: ToolInvocation) -> bool:
    """Mastra's ``isErrorInvocation``: thrown, never answered, or a result carrying a truthy ``error``.

    (Mastra's ``isError: true`` flag has no field here: the ingest adapters record such a call with
    state ``error``.)
    """
    result = invocation.result
    error = result.get("error") if isinstance(result, Mapping) else None
    return invocation.state in ("call", "error") or js_truthy(error)


NO_TOOL_ERRORS = ScorerSpec(
    name="check-no-tool-errors",
    title="No Tool Errors Check",
    description="Checks that no tool calls resulted in errors",
)


@register(NO_TOOL_ERRORS)
def create_no_tool_errors_check() -> Scorer:
    """1 when no tool call of the run failed (see ``is_error_invocation``); a run without calls passes.

    ``total_calls`` counts every recorded invocation, named or not, as Mastra does.

    Example::

        create_no_tool_errors_check()  # two calls that returned {"ok": true} -> 1; one that threw -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        invocations = [invocation for message in ctx.run.output for invocation in message.tool_invocations]
        errors = sum(1 for invocation in invocations if is_error_invocation(invocation))
        return {"error_count": errors, "total_calls": len(invocations), "passed": errors == 0}

    return _tool_check(
        NO_TOOL_ERRORS,
        "Checks that no tool calls resulted in errors",
        preprocess,
    )
