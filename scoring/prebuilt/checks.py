"""Quick checks: Mastra's zero-LLM micro-scorers (``checks.includes``, ``checks.calledTool``, ...).

Ports of ``@mastra/evals`` ``scorers/code/checks``: ten pass/fail assertions (1 or 0) and a string
similarity (0 to 1, or pass/fail at a threshold) on the output text or the tool calls of a run, with
no reason, and with Mastra's ids (``check-includes``, ...), names, descriptions and preprocess step
results (keys in snake_case). Option checks Mastra lacks: ``times`` and ``max`` must be 0 or more,
``threshold`` within 0..1, and a pattern must be one Python can match the JavaScript way.

The output text is the text of each assistant message, joined with ``" "`` (includes, excludes,
similarity) or ``""`` (equals, matches), as Mastra does. One deliberate difference, the one
``scoring.text.output_text`` makes for the same reason: messages without text are left out. Our
runs hold one assistant message per LLM step and a step that only calls tools has none; Mastra merges
a run's steps into one message and never sees them, so joining them would add stray spaces.

Tool checks read the tool names (which survive content capture being off), every recorded call
counting whatever its outcome; ``no_tool_errors`` counts a call as failed when it threw (state
``error``), never returned (``call``), or returned a mapping whose ``error`` is truthy in JavaScript.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from schemas import AgentRun, ToolInvocation
from scoring.prebuilt.content_similarity import compare_two_strings
from scoring.prebuilt.js_regex import JsRegExp
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.text import extract_tool_calls, message_text


def _assistant_text(run: AgentRun, separator: str) -> str:
    return separator.join(
        text for message in run.output if message.role == "assistant" and (text := message_text(message))
    )


def _passed(ctx: StepContext, key: str) -> int:
    return 1 if ctx.preprocessed(dict)[key] else 0


def _pass_fail(ctx: StepContext) -> str:
    """The label of a pass/fail check: ``pass`` at score 1, else ``fail``."""
    return "pass" if ctx.score == 1 else "fail"


def _output_check(
    spec: ScorerSpec, description: str, preprocess: Callable[[StepContext], dict[str, Any]], key: str
) -> Scorer:
    return (
        spec.create_scorer(description=description, needs={"output"}, label=_pass_fail)
        .preprocess(preprocess)
        .generate_score(lambda ctx: _passed(ctx, key))
    )


def _tool_check(
    spec: ScorerSpec, description: str, preprocess: Callable[[StepContext], dict[str, Any]]
) -> Scorer:
    return (
        # Tool names survive content capture being off: these checks need no text at all.
        spec.create_scorer(description=description, needs=set(), label=_pass_fail)
        .preprocess(preprocess)
        .generate_score(lambda ctx: _passed(ctx, "passed"))
    )


def _cased(output: str, target: str, ignore_case: bool) -> tuple[str, str]:
    # str.lower is JavaScript's toLowerCase for these purposes (full mappings, final sigma).
    return (output.lower(), target.lower()) if ignore_case else (output, target)


INCLUDES = ScorerSpec(
    name="check-includes",
    id="check-includes",
    title="Includes Check",
    description="Checks if the output includes a text",
)


@register(INCLUDES)
def create_includes_check(expected: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text contains ``expected`` (case-insensitive unless ``ignore_case=False``).

    Example::

        create_includes_check("sunny")  # "It is Sunny" -> 1; "It is raining" -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output, target = _cased(_assistant_text(ctx.run, " "), expected, ignore_case)
        return {"output": output, "target": target, "found": target in output}

    return _output_check(INCLUDES, f'Checks if output includes "{expected}"', preprocess, "found")


EXCLUDES = ScorerSpec(
    name="check-excludes",
    id="check-excludes",
    title="Excludes Check",
    description="Checks that the output does not include a text",
)


@register(EXCLUDES)
def create_excludes_check(unwanted: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text does not contain ``unwanted`` (an empty ``unwanted`` is always contained).

    Example::

        create_excludes_check("error")  # "All good" -> 1; "An ERROR occurred" -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output, target = _cased(_assistant_text(ctx.run, " "), unwanted, ignore_case)
        return {"output": output, "target": target, "excluded": target not in output}

    return _output_check(
        EXCLUDES,
        f'Checks that output does not include "{unwanted}"',
        preprocess,
        "excluded",
    )


EQUALS = ScorerSpec(
    name="check-equals",
    id="check-equals",
    title="Equals Check",
    description="Checks if the output equals a text",
)


@register(EQUALS)
def create_equals_check(expected: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text is exactly ``expected`` (whitespace counts; case only if asked).

    Example::

        create_equals_check("Hello, world!")  # "HELLO, world!" -> 1; "Hello, world! " -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output, target = _cased(_assistant_text(ctx.run, ""), expected, ignore_case)
        return {"output": output, "target": target, "is_equal": output == target}

    return _output_check(EQUALS, f'Checks if output equals "{expected}"', preprocess, "is_equal")


MATCHES = ScorerSpec(
    name="check-matches",
    id="check-matches",
    title="Matches Check",
    description="Checks if the output matches a regular expression",
)


@register(MATCHES)
def create_matches_check(pattern: str, flags: str = "", exact: bool = False) -> Scorer:
    """1 when the output text matches the JavaScript regular expression ``/pattern/flags``.

    ``pattern`` is the RegExp source, ``flags`` its flags: ``i`` (``re.IGNORECASE``), ``m``
    (``re.MULTILINE``, with JS's line terminators), ``s`` (``re.DOTALL``), ``u`` (match code points,
    not UTF-16 units); ``g`` and ``d`` are accepted and change nothing; ``y`` and ``v`` are refused.
    The pattern is read with JS semantics (``\\d``/``\\w`` ASCII, ``$`` only at the very end, ...;
    see ``scoring.prebuilt.js_regex``), and refused at construction when Python cannot match it the
    JS way. ``exact`` tests ``^pattern$`` (Mastra's anchoring: ``cat|dog`` exact still matches
    "cat food").

    Example::

        create_matches_check(r"\\d{1,3}°[FC]")  # "It is 72°F" -> 1
        create_matches_check(r"\\d{1,3}°[FC]", exact=True)  # "It is 72°F" -> 0; "72°F" -> 1
    """
    regex = JsRegExp(pattern, flags)
    tested = regex.anchored() if exact else regex

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output = _assistant_text(ctx.run, "")
        return {"output": output, "pattern": str(regex), "matched": tested.test(output)}

    return _output_check(MATCHES, f"Checks if output matches pattern {regex}", preprocess, "matched")


SIMILARITY = ScorerSpec(
    name="check-similarity",
    id="check-similarity",
    title="Similarity Check",
    description="Checks string similarity of the output to a text",
)


@register(SIMILARITY)
def create_similarity_check(
    expected: str, threshold: float | None = None, ignore_case: bool = True
) -> Scorer:
    """Bigram (Sørensen-Dice) similarity of the output text to ``expected``, 0 to 1.

    Mastra's algorithm (string-similarity's ``compareTwoStrings``, the same as the
    ``content-similarity`` scorer). With ``threshold`` the score is 1 when the similarity reaches it,
    else 0.

    Example::

        create_similarity_check("Sunny, 72°F")  # "It is sunny and 72°F" -> 0.5833333333333334
        create_similarity_check("Sunny, 72°F", threshold=0.5)  # the same run -> 1
    """
    if threshold is not None and not (0 <= threshold <= 1):  # NaN fails too
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output, target = _cased(_assistant_text(ctx.run, " "), expected, ignore_case)
        score = compare_two_strings(output, target)
        return {"output": output, "target": target, "score": score, "threshold": threshold}

    def generate_score(ctx: StepContext) -> float:
        score: float = ctx.preprocessed(dict)["score"]
        if threshold is None:
            return score
        return 1 if score >= threshold else 0

    return (
        SIMILARITY.create_scorer(
            description=f'Checks string similarity to "{expected}"',
            needs={"output"},
            label=None if threshold is None else _pass_fail,
        )
        .preprocess(preprocess)
        .generate_score(generate_score, heavy=True)
    )


def _tool_names(run: AgentRun) -> list[str]:
    return extract_tool_calls(run.output)[0]


def _non_negative(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, got {value}")


CALLED_TOOL = ScorerSpec(
    name="check-called-tool",
    id="check-called-tool",
    title="Called Tool Check",
    description="Checks that a tool was called",
)


@register(CALLED_TOOL)
def create_called_tool_check(tool_name: str, times: int = 1) -> Scorer:
    """1 when the run called ``tool_name`` at least ``times`` times (failed calls count).

    Example::

        create_called_tool_check("search", times=2)  # search, summarize, search -> 1
    """
    _non_negative("times", times)
    at_least = f" at least {times} times" if times > 1 else ""

    def preprocess(ctx: StepContext) -> dict[str, Any]:
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
    id="check-did-not-call",
    title="Did Not Call Check",
    description="Checks that a tool was NOT called",
)


@register(DID_NOT_CALL)
def create_did_not_call_check(tool_name: str) -> Scorer:
    """1 when the run never called ``tool_name`` (not even a call that failed).

    Example::

        create_did_not_call_check("delete_user")  # get_user -> 1; delete_user -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        count = _tool_names(ctx.run).count(tool_name)
        return {"tool_name": tool_name, "count": count, "passed": count == 0}

    return _tool_check(DID_NOT_CALL, f'Checks that "{tool_name}" was NOT called', preprocess)


TOOL_ORDER = ScorerSpec(
    name="check-tool-order",
    id="check-tool-order",
    title="Tool Order Check",
    description="Checks the order of the tool calls",
)


@register(TOOL_ORDER)
def create_tool_order_check(expected_order: Sequence[str]) -> Scorer:
    """1 when ``expected_order`` is a subsequence of the run's tool calls (other calls may come between).

    Matched greedily from the first call, as Mastra does; an empty order always passes.

    Example::

        create_tool_order_check(["search", "respond"])  # search, log, respond -> 1; respond, search -> 0
    """
    order = list(expected_order)

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        tools = _tool_names(ctx.run)
        matched = 0
        for tool in tools:
            if matched < len(order) and tool == order[matched]:
                matched += 1
        return {"actual_tools": tools, "expected_order": order, "passed": matched == len(order)}

    return _tool_check(TOOL_ORDER, f"Checks tool call order: [{' → '.join(order)}]", preprocess)


MAX_TOOL_CALLS = ScorerSpec(
    name="check-max-tool-calls",
    id="check-max-tool-calls",
    title="Max Tool Calls Check",
    description="Checks that no more than a number of tool calls were made",
)


@register(MAX_TOOL_CALLS)
def create_max_tool_calls_check(max: int) -> Scorer:
    """1 when the run made at most ``max`` tool calls.

    Example::

        create_max_tool_calls_check(2)  # two calls -> 1; three -> 0
    """
    _non_negative("max", max)

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        count = len(_tool_names(ctx.run))
        return {"count": count, "max": max, "passed": count <= max}

    return _tool_check(
        MAX_TOOL_CALLS,
        f"Checks that no more than {max} tool calls were made",
        preprocess,
    )


USED_NO_TOOLS = ScorerSpec(
    name="check-used-no-tools",
    id="check-used-no-tools",
    title="Used No Tools Check",
    description="Checks that no tools were called",
)


@register(USED_NO_TOOLS)
def create_used_no_tools_check() -> Scorer:
    """1 when the run called no tool at all.

    Example::

        create_used_no_tools_check()  # a plain answer -> 1; any tool call -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        count = len(_tool_names(ctx.run))
        return {"count": count, "passed": count == 0}

    return _tool_check(USED_NO_TOOLS, "Checks that no tools were called", preprocess)


def js_truthy(value: Any) -> bool:
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
    id="check-no-tool-errors",
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

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        invocations = [invocation for message in ctx.run.output for invocation in message.tool_invocations]
        errors = sum(1 for invocation in invocations if is_error_invocation(invocation))
        return {"error_count": errors, "total_calls": len(invocations), "passed": errors == 0}

    return _tool_check(
        NO_TOOL_ERRORS,
        "Checks that no tool calls resulted in errors",
        preprocess,
    )
