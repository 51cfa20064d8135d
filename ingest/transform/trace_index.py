"""Trace-wide lookups the transform joins runs with: each span's adapter and role, model calls,
tool executions, and tool results and reasoning that prompts replay, by tool call id."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tracescore.ingest.transform.adapters import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
)
from tracescore.schemas import Message, Part, Span

log = logging.getLogger(__name__)

_Read = TypeVar("_Read")


@dataclass
class Node:
    span: Span
    adapter: ConventionAdapter | None
    role: SpanRole


@dataclass
class TraceIndex:
    """Trace-wide lookups: tool calls are joined across runs, since LLM-only runs hold no tools."""

    nodes: dict[str, Node]
    calls: dict[str, LlmCall] = field(default_factory=dict)
    tools: dict[str, ToolExecution] = field(default_factory=dict)
    # Every tool span's reading (None when it could not be read), by span id: read once, as the
    # runs' output reads them again and reading parses the arguments and results.
    executions: dict[str, ToolExecution | None] = field(default_factory=dict)
    # Tool results seen as tool_result parts in some model call's input, by tool call id.
    replies: dict[str, object] = field(default_factory=dict)
    # Reasoning of an earlier step, as a later prompt replays it (the step's own span may lack it),
    # by the ids of the tool calls that step made.
    replayed_reasoning: dict[str, list[Part]] = field(default_factory=dict)
    # Call ids whose tool_result part says the tool failed (``is_error``).
    failed_replies: set[str] = field(default_factory=set)


def start_order(node: Node) -> tuple[int, str]:
    return node.span.start_time_unix_nano, node.span.span_id


def _read(node: Node, what: str, read: Callable[[ConventionAdapter, Span], _Read]) -> _Read | None:
    """One adapter read; a span the adapter chokes on is skipped rather than losing the run."""
    if node.adapter is None:
        return None
    try:
        return read(node.adapter, node.span)
    except Exception:
        log.warning(
            "adapter %s cannot read the %s of span %s",
            node.adapter.name,
            what,
            node.span.span_id,
            exc_info=True,
        )
        return None


def read_llm_call(node: Node) -> LlmCall | None:
    return _read(node, "model call", lambda adapter, span: adapter.llm_call(span))


def read_tool_execution(node: Node) -> ToolExecution | None:
    return _read(node, "tool execution", lambda adapter, span: adapter.tool_execution(span))


def read_agent_info(node: Node) -> AgentInfo | None:
    return _read(node, "agent info", lambda adapter, span: adapter.agent_info(span))


def read_acting_agent(node: Node) -> str | None:
    return _read(node, "acting agent", lambda adapter, span: adapter.acting_agent(span))


def read_retrieved_texts(node: Node) -> list[str]:
    return _read(node, "retrieved texts", lambda adapter, span: adapter.retrieved_texts(span)) or []


def index_trace(spans: Sequence[Span], adapters: tuple[ConventionAdapter, ...]) -> TraceIndex:
    nodes: dict[str, Node] = {}
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
        nodes[span.span_id] = Node(span, adapter, role)
    _apply_top_roles(nodes)
    index = TraceIndex(nodes)
    for node in nodes.values():
        if node.role is SpanRole.LLM and (call := read_llm_call(node)) is not None:
            index.calls[node.span.span_id] = call
            # Tool results come back in a later prompt, or (server-executed tools) in the same answer.
            for message in call.input_messages:
                if message.role != "assistant":
                    continue
                reasoning = [p for p in message.parts if p.type == "reasoning"]
                if reasoning:
                    for part in message.parts:
                        if part.type == "tool_call" and (
                            call_id := (part.model_extra or {}).get("tool_call_id")
                        ):
                            index.replayed_reasoning.setdefault(str(call_id), reasoning)
            note_replies([*call.input_messages, *call.output_messages], index)
        elif node.role is SpanRole.TOOL:
            tool = index.executions[node.span.span_id] = read_tool_execution(node)
            if tool is not None and tool.call_id:
                index.tools.setdefault(tool.call_id, tool)
    _fold_nested_calls(index)
    return index


def _apply_top_roles(nodes: dict[str, Node]) -> None:
    """Give a span its adapter's ``top_role`` when no span of the same adapter is above it."""
    for span_id, node in list(nodes.items()):
        adapter = node.adapter
        if adapter is None:
            continue
        # The role is asked first: most adapters have none, and walking up the trace costs more.
        try:
            role = adapter.top_role(node.span)
        except Exception:
            if not _below_own_adapter(node, nodes):
                log.warning("adapter %s cannot classify span %s", adapter.name, span_id, exc_info=True)
            continue
        if role is not None and not _below_own_adapter(node, nodes):
            nodes[span_id] = replace(node, role=role)


def _below_own_adapter(node: Node, nodes: dict[str, Node]) -> bool:
    return any(a.adapter is node.adapter for a in ancestors(node, nodes))


def _fold_nested_calls(index: TraceIndex) -> None:
    """A model-call span below another is the same call instrumented twice (a framework's model
    class around a provider SDK's client): keep one call, the outer, completed from the inner
    where the outer lacks messages or usage, so the step and its tokens count once."""
    for span_id in list(index.calls):
        node = index.nodes[span_id]
        outer = next((a for a in ancestors(node, index.nodes) if a.span.span_id in index.calls), None)
        if outer is None:
            continue
        inner_call = index.calls.pop(span_id)
        outer_call = index.calls[outer.span.span_id]
        no_usage = outer_call.usage.input_tokens == 0 and outer_call.usage.output_tokens == 0
        index.calls[outer.span.span_id] = replace(
            outer_call,
            input_messages=outer_call.input_messages or inner_call.input_messages,
            output_messages=outer_call.output_messages or inner_call.output_messages,
            system_messages=outer_call.system_messages or inner_call.system_messages,
            model=outer_call.model or inner_call.model,
            usage=inner_call.usage if no_usage else outer_call.usage,
        )
        index.nodes[span_id] = replace(node, role=SpanRole.OTHER)


def note_replies(messages: list[Message], index: TraceIndex) -> None:
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


def ancestors(node: Node, nodes: dict[str, Node]) -> Iterator[Node]:
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
