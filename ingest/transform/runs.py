"""Spans of one trace -> AgentRuns, independent of the convention that wrote them.

Adapters (``ingest.transform.adapters``) read single spans into normalized pieces (indexed trace-wide by
``ingest.transform.trace_index``); this module joins them: which spans form a run, the run's input (new
turn, history, system prompt), usage, model and times. The output (one assistant message per model
call, tool calls joined with their results) is built by ``ingest.transform.run_output``.
``build_runs`` never raises: a run that cannot be built is logged and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from tracescore.ingest.transform.adapters import ADAPTERS, AgentInfo, ConventionAdapter, LlmCall, SpanRole
from tracescore.ingest.transform.adapters.base import assembled
from tracescore.ingest.transform.agent_name import run_agent_name
from tracescore.ingest.transform.correlate import attach_logs
from tracescore.ingest.transform.run_output import run_output
from tracescore.ingest.transform.session_ids import run_session_id
from tracescore.ingest.transform.trace_index import (
    Node,
    TraceIndex,
    ancestors,
    index_trace,
    read_agent_info,
    read_retrieved_texts,
    start_order,
)
from tracescore.schemas import AgentRun, LogRecord, Message, RunInput, Span, Usage
from tracescore.schemas.spans import STATUS_ERROR

log = logging.getLogger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The fields a built run sets (the rest keep their defaults), as validation would record them.
_RUN_GIVEN = frozenset(AgentRun.model_fields) - {"ground_truth", "parent_span_id", "turns"}
_INPUT_GIVEN = frozenset({"input_messages", "remembered_messages", "system_messages"})
_T = TypeVar("_T")


def build_runs(
    spans: Sequence[Span],
    logs: Sequence[LogRecord] = (),
    adapters: tuple[ConventionAdapter, ...] = ADAPTERS,
) -> list[AgentRun]:
    """Every agent run in the spans of one trace, ordered by the start of its root span.

    ``logs`` are the trace's correlated log records; each is read as an event of its span.
    """
    return [run for run, _ in build_indexed_runs(spans, logs, adapters)[0]]


# Runs with their member nodes (the root among them), and the trace's index.
IndexedRuns = tuple[list[tuple[AgentRun, list[Node]]], TraceIndex | None]


def build_indexed_runs(
    spans: Sequence[Span],
    logs: Sequence[LogRecord] = (),
    adapters: tuple[ConventionAdapter, ...] = ADAPTERS,
) -> IndexedRuns:
    """``build_runs`` with each run's member nodes and the trace index (None when it failed)."""
    try:
        index = index_trace(attach_logs(spans, logs), adapters)
        roots = [n for n in index.nodes.values() if _is_run_root(n, index.nodes)]
        if not roots:
            # A trace with only retrievals (no agent, no model call): each top retrieval is a run.
            roots = [
                n
                for n in index.nodes.values()
                if n.role is SpanRole.RETRIEVER
                and all(a.role is not SpanRole.RETRIEVER for a in ancestors(n, index.nodes))
            ]
        members: dict[str, list[Node]] = {r.span.span_id: [] for r in roots}
        for node in index.nodes.values():
            owner = _owner(node, index.nodes, members)
            if owner is not None:
                members[owner].append(node)
        wrapped = _merge_wrapper_agents(roots, members, index.nodes)
        roots = [r for r in roots if r.span.span_id in members]
    except Exception:
        log.exception("cannot index a trace of %d spans; no runs built", len(spans))
        return [], None
    runs: list[tuple[AgentRun, list[Node]]] = []
    for root in sorted(roots, key=start_order):
        try:
            root_members = sorted(members[root.span.span_id], key=start_order)
            inner = wrapped.get(root.span.span_id, [])
            runs.append((_build_run(root, root_members, index, inner), root_members))
        except Exception:
            span = root.span
            log.exception("cannot build the run of span %s in trace %s", span.span_id, span.trace_id)
    return runs, index


def _is_run_root(node: Node, nodes: dict[str, Node]) -> bool:
    # Every agent span starts a run (a nested agent is its own run); a model call starts one only
    # when no agent is above it.
    if node.role is SpanRole.AGENT:
        return True
    return node.role is SpanRole.LLM and all(a.role is not SpanRole.AGENT for a in ancestors(node, nodes))


def _owner(node: Node, nodes: dict[str, Node], roots: dict[str, list[Node]]) -> str | None:
    """The span id of the nearest run root at or above the node."""
    if node.span.span_id in roots:
        return node.span.span_id
    for ancestor in ancestors(node, nodes):
        if ancestor.span.span_id in roots:
            return ancestor.span.span_id
    return None


def _merge_wrapper_agents(
    roots: list[Node], members: dict[str, list[Node]], nodes: dict[str, Node]
) -> dict[str, list[Node]]:
    """Fold an agent span that only wraps one inner agent span into one run.

    Frameworks layer agent spans (Mastra 0.x ``agent.stream`` around the AI SDK's ``ai.streamText``;
    the OpenAI Agents SDK's "Agent workflow" around the agent's span; an SDK's agent span around a
    provider's): when the outer agent has no model call or tool of its own and exactly one agent run
    directly inside it, both spans describe the same run. The outer span stays the run's root (its
    id is the run id); the wrapped agent spans, innermost first, are returned by root so the run can
    use what the outer lacks, its agent's name first. Changes ``members`` in place.
    """
    inner: dict[str, list[Node]] = {}
    by_id = {r.span.span_id: r for r in roots}
    for root in sorted(roots, key=start_order, reverse=True):  # innermost first, so chains collapse
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
        inner[root_id] = [*inner.pop(child_id, []), children[0]]
    return inner


def _owner_above(node: Node, nodes: dict[str, Node], roots: dict[str, list[Node]]) -> str | None:
    """The nearest run root strictly above the node."""
    for ancestor in ancestors(node, nodes):
        if ancestor.span.span_id in roots:
            return ancestor.span.span_id
    return None


def utc(ns: int) -> datetime | None:
    if ns <= 0:
        return None
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
        return None


def _agent_readings(root: Node, inner: list[Node]) -> list[AgentInfo]:
    """The readings of the run's agent spans, innermost first: the wrapped ones, then the root's."""
    spans = [*inner, root] if root.role in (SpanRole.AGENT, SpanRole.RETRIEVER) else inner
    return [info for node in spans if (info := read_agent_info(node)) is not None]


def _first_set(values: list[_T]) -> _T:
    """The first non-empty value, else the last one."""
    return next((value for value in values if value), values[-1])


def _agent_info(readings: list[AgentInfo]) -> AgentInfo | None:
    """The run's agent reading: the root's, completed from the wrapped agent spans, outer first.
    Its name is left out: ``run_agent_name`` names the run."""
    if len(readings) <= 1:
        return readings[0] if readings else None
    outer = readings[::-1]
    return AgentInfo(
        input_messages=_first_set([r.input_messages for r in outer]),
        output_messages=_first_set([r.output_messages for r in outer]),
        system_messages=_first_set([r.system_messages for r in outer]),
        model=_first_set([r.model for r in outer]),
        remembered_messages=next(
            (r.remembered_messages for r in outer if r.remembered_messages is not None), None
        ),
        context=_first_set([r.context for r in outer]),
    )


def _build_run(root: Node, members: list[Node], index: TraceIndex, inner: list[Node]) -> AgentRun:
    readings = _agent_readings(root, inner)
    agent = _agent_info(readings)
    agent_spans = {n.span.span_id for n in (root, *inner)}
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
            context.extend(read_retrieved_texts(node))
    tools = [n for n in members if n.role is SpanRole.TOOL]
    the_input = run_input(agent, first)
    output = run_output(agent, timed_calls, tools, index)
    texts = [m.content for m in (*the_input.input_messages, *the_input.remembered_messages, *output)]
    # Every value is built above with its field's type: assembled, not validated again (the runs'
    # messages are most of a trace's objects, and validation would walk them all).
    fields = {
        "trace_id": root.span.trace_id,
        "span_id": root.span.span_id,
        "agent_name": run_agent_name(readings, (n for n in members if n.span.span_id not in agent_spans)),
        "service_name": root.span.service_name or None,
        "model": (agent.model if agent else None) or next((c.model for c in calls if c.model), None),
        "status": "error" if root.span.status_code == STATUS_ERROR else "ok",
        "start_time": utc(root.span.start_time_unix_nano),
        "end_time": utc(root.span.end_time_unix_nano),
        "input": the_input,
        "output": output,
        "context": context,
        "ground_truth": None,
        "usage": Usage(
            input_tokens=sum(c.usage.input_tokens for c in calls),
            output_tokens=sum(c.usage.output_tokens for c in calls),
        ),
        "content_missing": not any(t.strip() for t in texts),
        "parent_span_id": None,
        "session_id": run_session_id(root.span, [node.span for node in members]),
        "turns": [],
    }
    return assembled(AgentRun, fields, _RUN_GIVEN)


def _in_turn_tool_step(message: Message) -> bool:
    return message.role == "tool" or (
        message.role == "assistant" and any(p.type == "tool_call" for p in message.parts)
    )


def split_turn(messages: list[Message]) -> tuple[list[Message], list[Message], list[Message]]:
    """(history, new turn, continued answer) of a prompt without system messages.

    The new turn is the last block of user messages: the input being answered. What follows it is
    the turn's own progress: the model's tool calls and their results (when a model call continues
    a turn; neither new input nor earlier history, so left out) and assistant text that the model
    is asked to continue (a prefill, or an answer cut short), which is returned apart: it is part of
    the prompt, never the run's output. A prompt without a user message has no new turn: everything
    is history.
    """
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is None:
        return list(messages), [], []
    start = last_user
    while start > 0 and messages[start - 1].role == "user":
        start -= 1
    after = messages[last_user + 1 :]
    return messages[:start], messages[start : last_user + 1], [m for m in after if not _in_turn_tool_step(m)]


def run_input(agent: AgentInfo | None, first: LlmCall | None) -> RunInput:
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
    # keep just its last user block so history never leaks into the new input. A turn without a
    # user message (tool results a client sends back to continue) is taken whole.
    agent_messages = [m for m in agent_input if m.role != "system"]
    _, agent_turn, agent_answer = split_turn(agent_messages)
    if not agent_turn:
        agent_turn, agent_answer = agent_messages, []
    if agent and agent.remembered_messages is not None:
        # The convention says where the history ends.
        add_system([m for m in agent.remembered_messages if m.role == "system"])
        remembered = [*(m for m in agent.remembered_messages if m.role != "system"), *agent_answer]
        return _run_input(agent_turn, remembered, system)
    history, turn, answer = split_turn([m for m in prompt if m.role != "system"])
    return _run_input(agent_turn or turn, [*history, *(answer or agent_answer)], system)


def _run_input(new_turn: list[Message], remembered: list[Message], system: list[Message]) -> RunInput:
    """``RunInput(input_messages=..., remembered_messages=..., system_messages=...)``, assembled."""
    fields = {
        "input_messages": list(new_turn),  # lists of its own, as validation gives
        "remembered_messages": remembered,
        "system_messages": system,
        "tagged_system_messages": {},
    }
    return assembled(RunInput, fields, _INPUT_GIVEN)
