"""Spans of one trace -> AgentRuns, independent of the convention that wrote them.

Adapters (``ingest.adapters``) read single spans into normalized pieces; this module joins them:
which spans form a run, the run's input (new turn, history, system prompt), its output (one
assistant message per model call, tool calls joined with their results), usage, model and times.
``build_runs`` never raises: a run that cannot be built is logged and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ingest.adapters import ADAPTERS, AgentInfo, ConventionAdapter, LlmCall, SpanRole, ToolExecution
from ingest.correlate import attach_logs
from schemas import AgentRun, LogRecord, Message, Part, RunInput, Span, ToolInvocation, Usage
from schemas.agent_run import ToolState
from schemas.spans import STATUS_ERROR

log = logging.getLogger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class _Node:
    span: Span
    adapter: ConventionAdapter | None
    role: SpanRole


@dataclass
class _TraceIndex:
    """Trace-wide lookups: tool calls are joined across runs, since LLM-only runs hold no tools."""

    nodes: dict[str, _Node]
    calls: dict[str, LlmCall] = field(default_factory=dict)
    tools: dict[str, ToolExecution] = field(default_factory=dict)
    # Tool results seen as tool_result parts in some model call's input, by tool call id.
    replies: dict[str, Any] = field(default_factory=dict)
    # Reasoning of an earlier step, as a later prompt replays it (the step's own span may lack it),
    # by the ids of the tool calls that step made.
    replayed_reasoning: dict[str, list[Part]] = field(default_factory=dict)
    # Call ids whose tool_result part says the tool failed (``is_error``).
    failed_replies: set[str] = field(default_factory=set)


def build_runs(
    spans: Sequence[Span],
    logs: Sequence[LogRecord] = (),
    adapters: tuple[ConventionAdapter, ...] = ADAPTERS,
) -> list[AgentRun]:
    """Every agent run in the spans of one trace, ordered by the start of its root span.

    ``logs`` are the trace's correlated log records; each is read as an event of its span.
    """
    try:
        index = _index(attach_logs(spans, logs), adapters)
        roots = [n for n in index.nodes.values() if _is_run_root(n, index.nodes)]
        if not roots:
            # A trace with only retrievals (no agent, no model call): each top retrieval is a run.
            roots = [
                n
                for n in index.nodes.values()
                if n.role is SpanRole.RETRIEVER
                and all(a.role is not SpanRole.RETRIEVER for a in _ancestors(n, index.nodes))
            ]
        members: dict[str, list[_Node]] = {r.span.span_id: [] for r in roots}
        for node in index.nodes.values():
            owner = _owner(node, index.nodes, members)
            if owner is not None:
                members[owner].append(node)
        inner = _merge_wrapper_agents(roots, members, index.nodes)
        roots = [r for r in roots if r.span.span_id in members]
    except Exception:
        log.exception("cannot index a trace of %d spans; no runs built", len(spans))
        return []
    runs: list[AgentRun] = []
    for root in sorted(roots, key=_start_order):
        try:
            root_members = sorted(members[root.span.span_id], key=_start_order)
            runs.append(_build_run(root, root_members, index, inner.get(root.span.span_id)))
        except Exception:
            span = root.span
            log.exception("cannot build the run of span %s in trace %s", span.span_id, span.trace_id)
    return runs


def _start_order(node: _Node) -> tuple[int, str]:
    return node.span.start_time_unix_nano, node.span.span_id


def _read(what: str, node: _Node) -> Any:
    """One adapter read; a span the adapter chokes on is skipped rather than losing the run."""
    try:
        return getattr(node.adapter, what)(node.span)
    except Exception:
        log.warning("adapter %s cannot read span %s", what, node.span.span_id, exc_info=True)
        return None


def _index(spans: Sequence[Span], adapters: tuple[ConventionAdapter, ...]) -> _TraceIndex:
    nodes: dict[str, _Node] = {}
    for span in spans:
        if span.span_id in nodes:  # re-sent span: the first copy wins
            continue
        adapter, role = None, SpanRole.OTHER
        for candidate in adapters:
            try:
                if candidate.claims(span):
                    adapter, role = candidate, candidate.classify(span)
                    break
            except Exception:
                log.warning("adapter %s cannot classify span %s", candidate.name, span.span_id, exc_info=True)
        nodes[span.span_id] = _Node(span, adapter, role if isinstance(role, SpanRole) else SpanRole.OTHER)
    index = _TraceIndex(nodes)
    for node in nodes.values():
        if node.role is SpanRole.LLM and isinstance(call := _read("llm_call", node), LlmCall):
            index.calls[node.span.span_id] = call
            # Tool results come back in a later prompt, or (server-executed tools) in the same answer.
            for message in call.input_messages:
                reasoning = [p for p in message.parts if p.type == "reasoning"]
                if message.role == "assistant" and reasoning:
                    for part in message.parts:
                        if part.type == "tool_call" and (
                            call_id := (part.model_extra or {}).get("tool_call_id")
                        ):
                            index.replayed_reasoning.setdefault(str(call_id), reasoning)
            _note_replies([*call.input_messages, *call.output_messages], index)
        elif node.role is SpanRole.TOOL:
            tool = _read("tool_execution", node)
            if isinstance(tool, ToolExecution) and tool.call_id:
                index.tools.setdefault(tool.call_id, tool)
    return index


def _note_replies(messages: list[Message], index: _TraceIndex) -> None:
    """Remember the tool results these messages carry, by call id (the first one seen wins)."""
    for message in messages:
        for part in message.parts:
            extra = part.model_extra or {}
            if part.type == "tool_result" and extra.get("tool_call_id"):
                call_id = str(extra["tool_call_id"])
                if call_id not in index.replies:
                    index.replies[call_id] = extra.get("result")
                    if extra.get("is_error") is True:
                        index.failed_replies.add(call_id)


def _ancestors(node: _Node, nodes: dict[str, _Node]) -> Iterator[_Node]:
    """Parents up to the top of the trace; stops at a missing parent or a cycle."""
    seen = {node.span.span_id}
    parent_id = node.span.parent_span_id
    while parent_id and parent_id not in seen:
        parent = nodes.get(parent_id)
        if parent is None:
            return
        seen.add(parent_id)
        yield parent
        parent_id = parent.span.parent_span_id


def _is_run_root(node: _Node, nodes: dict[str, _Node]) -> bool:
    # Every agent span starts a run (a nested agent is its own run); a model call starts one only
    # when no agent is above it.
    if node.role is SpanRole.AGENT:
        return True
    return node.role is SpanRole.LLM and all(a.role is not SpanRole.AGENT for a in _ancestors(node, nodes))


def _owner(node: _Node, nodes: dict[str, _Node], roots: dict[str, list[_Node]]) -> str | None:
    """The span id of the nearest run root at or above the node."""
    if node.span.span_id in roots:
        return node.span.span_id
    for ancestor in _ancestors(node, nodes):
        if ancestor.span.span_id in roots:
            return ancestor.span.span_id
    return None


def _merge_wrapper_agents(
    roots: list[_Node], members: dict[str, list[_Node]], nodes: dict[str, _Node]
) -> dict[str, _Node]:
    """Fold an agent span that only wraps one inner agent span into one run.

    Frameworks layer agent spans (Mastra 0.x ``agent.stream`` around the AI SDK's ``ai.streamText``;
    an SDK's agent span around a provider's): when the outer agent has no model call or tool of its
    own and exactly one agent run directly inside it, both spans describe the same run. The outer
    span stays the run's root (its id is the run id); the inner span's reading is kept in the
    returned map so the run can use what the outer lacks. Changes ``members`` in place.
    """
    inner: dict[str, _Node] = {}
    by_id = {r.span.span_id: r for r in roots}
    for root in sorted(roots, key=_start_order, reverse=True):  # innermost first, so chains collapse
        root_id = root.span.span_id
        if root.role is not SpanRole.AGENT or root_id not in members:
            continue
        own = [n for n in members[root_id] if n is not root]
        if any(n.role in (SpanRole.LLM, SpanRole.TOOL) for n in own):
            continue
        children = [
            r
            for r in by_id.values()
            if r is not root
            and r.span.span_id in members
            and r.role is SpanRole.AGENT
            and _owner_above(r, nodes, members) == root_id
        ]
        if len(children) != 1:
            continue
        child_id = children[0].span.span_id
        if _owner_above(root, nodes, members) == child_id:
            continue  # a parent cycle, not a wrapper
        members[root_id].extend(members.pop(child_id))
        inner[root_id] = inner.pop(child_id, children[0])
    return inner


def _owner_above(node: _Node, nodes: dict[str, _Node], roots: dict[str, list[_Node]]) -> str | None:
    """The nearest run root strictly above the node."""
    for ancestor in _ancestors(node, nodes):
        if ancestor.span.span_id in roots:
            return ancestor.span.span_id
    return None


def _utc(ns: int) -> datetime | None:
    if ns <= 0:
        return None
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
        return None


def _agent_info(root: _Node, inner: _Node | None) -> AgentInfo | None:
    """The run's agent reading: the root's, completed from a wrapped inner agent span."""
    outer = _read("agent_info", root) if root.role in (SpanRole.AGENT, SpanRole.RETRIEVER) else None
    outer = outer if isinstance(outer, AgentInfo) else None
    wrapped = _read("agent_info", inner) if inner is not None else None
    wrapped = wrapped if isinstance(wrapped, AgentInfo) else None
    if outer is None or wrapped is None:
        return outer or wrapped
    return AgentInfo(
        name=outer.name or wrapped.name,
        input_messages=outer.input_messages or wrapped.input_messages,
        output_messages=outer.output_messages or wrapped.output_messages,
        system_messages=outer.system_messages or wrapped.system_messages,
        model=outer.model or wrapped.model,
        remembered_messages=(
            outer.remembered_messages
            if outer.remembered_messages is not None
            else wrapped.remembered_messages
        ),
        context=outer.context or wrapped.context,
    )


def _build_run(root: _Node, members: list[_Node], index: _TraceIndex, inner: _Node | None = None) -> AgentRun:
    agent = _agent_info(root, inner)
    timed_calls = sorted(
        (
            (n.span.start_time_unix_nano, index.calls[n.span.span_id])
            for n in members
            if n.span.span_id in index.calls
        ),
        key=lambda item: (item[1].start_ns or item[0], item[0]),
    )
    calls = [call for _, call in timed_calls]
    first = calls[0] if calls else None
    context: list[str] = list(agent.context) if agent else []
    for node in members:
        if node.role is SpanRole.RETRIEVER:
            texts = _read("retrieved_texts", node)
            context.extend(t for t in texts or [] if isinstance(t, str))
    tools = [n for n in members if n.role is SpanRole.TOOL]
    run_input = _run_input(agent, first)
    output = _run_output(agent, timed_calls, tools, index)
    texts = [m.content for m in (*run_input.input_messages, *run_input.remembered_messages, *output)]
    return AgentRun(
        trace_id=root.span.trace_id,
        span_id=root.span.span_id,
        agent_name=agent.name if agent else None,
        service_name=root.span.service_name or None,
        model=(agent.model if agent else None) or next((c.model for c in calls if c.model), None),
        status="error" if root.span.status_code == STATUS_ERROR else "ok",
        start_time=_utc(root.span.start_time_unix_nano),
        end_time=_utc(root.span.end_time_unix_nano),
        input=run_input,
        output=output,
        context=context,
        usage=Usage(
            input_tokens=sum(c.usage.input_tokens for c in calls),
            output_tokens=sum(c.usage.output_tokens for c in calls),
        ),
        content_missing=not any(t.strip() for t in texts),
    )


def _in_turn_tool_step(message: Message) -> bool:
    return message.role == "tool" or (
        message.role == "assistant" and any(p.type == "tool_call" for p in message.parts)
    )


def _new_turn(messages: list[Message]) -> tuple[int, int]:
    """Bounds of the new user turn in a prompt: the trailing block of user messages.

    A prompt that ends in the turn's own tool exchange (the model's tool calls and their results
    after the user's message, when a model call continues a turn) has its new turn just before
    that exchange; the exchange is neither new input nor earlier history. A prompt ending in
    anything else (an assistant's answer) has no new turn: everything is history.
    """
    end = len(messages)
    while end > 0 and _in_turn_tool_step(messages[end - 1]):
        end -= 1
    start = end
    while start > 0 and messages[start - 1].role == "user":
        start -= 1
    return (start, end) if start < end else (len(messages), len(messages))


def _run_input(agent: AgentInfo | None, first: LlmCall | None) -> RunInput:
    system: list[Message] = []
    seen_system: set[str] = set()

    def add_system(messages: list[Message]) -> None:
        # The same prompt often sits on the agent span and on the chat span: keep it once.
        for message in messages:
            key = message.content.strip()
            if key and key in seen_system:
                continue
            seen_system.add(key)
            system.append(message)

    agent_input = agent.input_messages if agent else []
    prompt = first.input_messages if first else []
    add_system(agent.system_messages if agent else [])
    add_system(first.system_messages if first else [])
    add_system([m for m in prompt if m.role == "system"])
    add_system([m for m in agent_input if m.role == "system"])

    # The agent span holds only the new turn (util-genai); if a caller put history there too,
    # keep just its trailing user block so history never leaks into the new input.
    agent_turn = [m for m in agent_input if m.role != "system"]
    start, end = _new_turn(agent_turn)
    agent_turn = agent_turn[start:end] or agent_turn
    if agent and agent.remembered_messages is not None:
        # The convention says where the history ends.
        add_system([m for m in agent.remembered_messages if m.role == "system"])
        return RunInput(
            input_messages=agent_turn,
            remembered_messages=[m for m in agent.remembered_messages if m.role != "system"],
            system_messages=system,
        )
    history = [m for m in prompt if m.role != "system"]
    start, end = _new_turn(history)
    return RunInput(
        input_messages=agent_turn or history[start:end],
        remembered_messages=history[:start],
        system_messages=system,
    )


def _run_output(
    agent: AgentInfo | None,
    timed_calls: list[tuple[int, LlmCall]],
    tools: list[_Node],
    index: _TraceIndex,
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
        _note_replies(agent.output_messages, index)
        for message in agent.output_messages:
            if message.role not in ("user", "tool"):
                output.append(_with_tool_invocations(message, index))
                starts.append(starts[-1] if starts else 0)
    return _add_unjoined_tools(output, starts, tools, index)


def _add_unjoined_tools(
    output: list[Message], starts: list[int], tools: list[_Node], index: _TraceIndex
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
    for node in sorted(tools, key=_start_order):
        tool = _read("tool_execution", node)
        if not isinstance(tool, ToolExecution):
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
        invocation = ToolInvocation(
            tool_call_id=tool.call_id or "",
            tool_name=tool.name or "",
            args=tool.args if tool.args is not None else {},
            result=tool.result,
            state="error" if tool.is_error else ("result" if tool.result is not None else "call"),
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
        part = Part(
            type="tool_call",
            tool_call_id=invocation.tool_call_id,
            tool_name=invocation.tool_name,
            args=invocation.args,
        )
        output[at] = target.model_copy(
            update={
                "tool_invocations": [*target.tool_invocations, invocation],
                "parts": [*target.parts, part],
            }
        )
    return output


def _complete(output: list[Message], at: tuple[int, int], tool: ToolExecution) -> None:
    """Fill a call's missing result (or failure) from the tool span that ran it."""
    message = output[at[0]]
    invocation = message.tool_invocations[at[1]]
    if tool.is_error:
        update: dict[str, Any] = {
            "state": "error",
            "result": tool.result if tool.result is not None else invocation.result,
        }
    elif invocation.result is None and tool.result is not None:
        update = {"state": "result", "result": tool.result}
    else:
        return
    invocations = list(message.tool_invocations)
    invocations[at[1]] = invocation.model_copy(update=update)
    output[at[0]] = message.model_copy(update={"tool_invocations": invocations})


def _with_tool_invocations(message: Message, index: _TraceIndex) -> Message:
    invocations = [
        _join_tool_call(part.model_extra or {}, index) for part in message.parts if part.type == "tool_call"
    ]
    update: dict[str, Any] = {"role": "assistant", "tool_invocations": invocations}
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
    return message.model_copy(update=update)


def _join_tool_call(call: dict[str, Any], index: _TraceIndex) -> ToolInvocation:
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
    return ToolInvocation(tool_call_id=call_id, tool_name=name, args=args, result=result, state=state)
