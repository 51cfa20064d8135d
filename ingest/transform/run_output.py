"""A run's output: one assistant message per model call, every tool call joined with its result."""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters import AgentInfo, LlmCall, ToolExecution
from tracescore.ingest.transform.adapters.base import assembled, updated
from tracescore.ingest.transform.trace_index import (
    Node,
    TraceIndex,
    note_replies,
    start_order,
)
from tracescore.schemas import Message, Part, ToolInvocation
from tracescore.schemas.agent_run import ToolState

_INVOCATION_GIVEN = frozenset(ToolInvocation.model_fields)


def run_output(
    agent: AgentInfo | None,
    timed_calls: list[tuple[int, LlmCall]],
    tools: list[Node],
    index: TraceIndex,
) -> list[Message]:
    output: list[Message] = []
    starts: list[int] = []  # start of the model call behind each output message
    for span_start, call in timed_calls:
        # Several output messages are alternative choices (n > 1); the agent continued with the first.
        answers = [m for m in call.output_messages if m.role == "assistant"] or call.output_messages
        if answers:
            output.append(_with_tool_invocations(answers[0], index))
            starts.append(call.start_ns or span_start)
    if agent and agent.output_messages and (not output or not output[-1].content):
        # No model call captured the final text (content capture off on chat spans, or no chat
        # spans at all): the agent span's own output is the best record of the answer. Its tool
        # messages are not steps; they hold the results of the calls its assistant messages made.
        note_replies(agent.output_messages, index)
        for message in agent.output_messages:
            if message.role not in ("user", "tool"):
                output.append(_with_tool_invocations(message, index))
                starts.append(starts[-1] if starts else 0)
    return _add_unjoined_tools(output, starts, tools, index)


def _add_unjoined_tools(
    output: list[Message], starts: list[int], tools: list[Node], index: TraceIndex
) -> list[Message]:
    """Tool spans no model output names (ids not recorded, content capture off) still are calls
    the agent made: each joins the assistant message of the last model call before it, or a
    message of its own when the run has none.

    A tool span without a call id (decorator-made spans) is the execution of a same-named call
    in the output that no tool span claimed by id: it completes that call instead of adding one.
    """
    joined = {t.tool_call_id for m in output for t in m.tool_invocations if t.tool_call_id}
    # Calls in the output that an id-less tool span may stand for, by position, in order.
    unclaimed = [
        (i, j)
        for i, m in enumerate(output)
        for j, t in enumerate(m.tool_invocations)
        if not t.tool_call_id or t.tool_call_id not in index.tools
    ]
    for node in sorted(tools, key=start_order):
        tool = index.executions.get(node.span.span_id)
        if tool is None:
            continue
        if tool.call_id and tool.call_id in joined:
            continue
        if not tool.call_id:
            match = next(
                (ij for ij in unclaimed if output[ij[0]].tool_invocations[ij[1]].tool_name == tool.name), None
            )
            if match is not None:
                unclaimed.remove(match)
                _complete(output, match, tool)
                continue
        invocation = _invocation(
            tool.call_id or "",
            tool.name or "",
            tool.args if tool.args is not None else {},
            tool.result,
            "error" if tool.is_error else ("result" if tool.result is not None else "call"),
        )
        at = max(
            (i for i, start in enumerate(starts) if start <= node.span.start_time_unix_nano), default=None
        )
        if at is None:
            message = Message(id=f"{node.span.span_id}-call", role="assistant")
            output.insert(0, message)
            starts.insert(0, node.span.start_time_unix_nano)
            at = 0
        target = output[at]
        # The step's parts get the call too, so parts and tool_invocations tell the same story.
        part = Part.model_validate(
            {
                "type": "tool_call",
                "tool_call_id": invocation.tool_call_id,
                "tool_name": invocation.tool_name,
                "args": invocation.args,
            }
        )
        output[at] = updated(
            target,
            {
                "tool_invocations": [*target.tool_invocations, invocation],
                "parts": [*target.parts, part],
            },
        )
    return output


def _complete(output: list[Message], at: tuple[int, int], tool: ToolExecution) -> None:
    """Fill a call's missing result (or failure) from the tool span that ran it."""
    message = output[at[0]]
    invocation = message.tool_invocations[at[1]]
    if tool.is_error:
        update: dict[str, object] = {
            "state": "error",
            "result": tool.result if tool.result is not None else invocation.result,
        }
    elif invocation.result is None and tool.result is not None:
        update = {"state": "result", "result": tool.result}
    else:
        return
    invocations = list(message.tool_invocations)
    invocations[at[1]] = updated(invocation, update)
    output[at[0]] = updated(message, {"tool_invocations": invocations})


def _with_tool_invocations(message: Message, index: TraceIndex) -> Message:
    invocations = [
        _join_tool_call(part.model_extra or {}, index) for part in message.parts if part.type == "tool_call"
    ]
    update: dict[str, object] = {"role": "assistant", "tool_invocations": invocations}
    if not message.reasoning:
        # Some SDKs record a step's reasoning only in the next prompt, which replays the step.
        replayed = next(
            (
                index.replayed_reasoning[t.tool_call_id]
                for t in invocations
                if t.tool_call_id in index.replayed_reasoning
            ),
            None,
        )
        if replayed:
            texts = [str((p.model_extra or {}).get("text") or "") for p in replayed]
            update["parts"] = [*replayed, *message.parts]
            update["reasoning"] = "\n".join(t for t in texts if t) or None
    return updated(message, update)


def _join_tool_call(call: Mapping[str, object], index: TraceIndex) -> ToolInvocation:
    """A tool_call part joined by call id with its tool span, else with a later tool message."""
    call_id = str(call.get("tool_call_id") or "")
    tool = index.tools.get(call_id) if call_id else None
    name = str(call.get("tool_name") or "") or (tool.name if tool and tool.name else "")
    args = call.get("args")
    if args in (None, {}, "") and tool is not None and tool.args is not None:
        args = tool.args
    args = {} if args is None else args
    state: ToolState
    if tool is not None and tool.is_error:
        state, result = "error", tool.result if tool.result is not None else index.replies.get(call_id)
    elif tool is not None and tool.result is not None:
        state, result = "result", tool.result
    elif call_id in index.replies:
        state = "error" if call_id in index.failed_replies else "result"
        result = index.replies[call_id]
    else:
        state, result = "call", None
    return _invocation(call_id, name, args, result, state)


def _invocation(call_id: str, name: str, args: object, result: object, state: ToolState) -> ToolInvocation:
    """``ToolInvocation(tool_call_id=..., tool_name=..., args=..., result=..., state=...)``, assembled
    (one per tool call of every run; its values are already of its fields' types)."""
    fields = {"tool_call_id": call_id, "tool_name": name, "args": args, "result": result, "state": state}
    return assembled(ToolInvocation, fields, _INVOCATION_GIVEN)
