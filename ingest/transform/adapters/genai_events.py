"""Message content that the GenAI semantic conventions put in events rather than span attributes.

The generations, all read here from ``Span.events`` (log records are joined to their span as events
by ``ingest.transform.correlate``, their body under ``log.body``):

- v1.26-v1.27: span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` whose attributes
  ``gen_ai.prompt`` / ``gen_ai.completion`` hold a JSON list of messages or free text (OpenLIT's
  ``role: text`` lines, Semantic Kernel .NET's pseudo-JSON).
- v1.28-v1.36: one event per message, ``gen_ai.{system,user,assistant,tool}.message`` and
  ``gen_ai.choice``. As log records (openai-v2, Semantic Kernel Python; body a map, or JSON text);
  as span events with the body as JSON under ``gen_ai.event.content`` (Semantic Kernel .NET, Azure
  SDKs) or as flat attributes ``content`` / ``message`` / ``tool_calls`` / ``id`` with JSON string
  values (Strands, Semantic Kernel, OpenLIT).
- v1.37+: ``gen_ai.client.inference.operation.details`` carrying ``gen_ai.input.messages``,
  ``gen_ai.output.messages`` and ``gen_ai.system_instructions`` (structured on log records, JSON
  strings on span events; Strands emits one event for the inputs and another for the outputs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tracescore.ingest.transform.adapters.genai_semconv_messages import (
    convert_message,
    convert_messages,
    convert_system_instructions,
    plain_result,
)
from tracescore.ingest.transform.correlate import LOG_BODY_ATTRIBUTE
from tracescore.ingest.transform.jsonvalue import as_int, as_str, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Span, SpanEvent
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
TOOL_MESSAGE = "gen_ai.tool.message"
PROMPT_EVENT = "gen_ai.content.prompt"
COMPLETION_EVENT = "gen_ai.content.completion"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
EVENT_CONTENT = "gen_ai.event.content"  # Semantic Kernel .NET, Azure SDKs: the body as JSON text

# openai-v2 names the event after the message's role (f"gen_ai.{role}.message"), developer included.
_MESSAGE_EVENT = re.compile(r"gen_ai\.(system|user|assistant|tool|developer|function)\.message")
# Flat event attributes that are the body's keys (Strands, OpenLIT, Semantic Kernel >= 1.55).
_BODY_KEYS = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "id",
    "name",
    "message",
    "finish_reason",
    "index",
)
_ROLE_PREFIX = re.compile(r"(system|user|assistant|tool|developer): ?", re.IGNORECASE)
# Semantic Kernel .NET 1.64-1.65 (ModelDiagnostics.ToGenAIConventionsFormat): the author name unquoted.
_BARE_NAME = re.compile(r', "name": (?![\s"\[{]|null[,}]|true[,}]|false[,}]|-?\d)([^"{}\[\]\n]+?)\}')
# Early Semantic Kernel .NET releases: [{"role:" user, "content:" text}, \n{"role:" ...}] (not JSON).
_SK_ITEM = re.compile(r'\{"role:" (\w+), "content:" (.*?)\}(?=, \n\{"role:" |\]\s*$)', re.DOTALL)


def message_event_role(name: str) -> str | None:
    match = _MESSAGE_EVENT.fullmatch(name)
    return match.group(1) if match else None


def is_content_event(name: str) -> bool:
    return name in (OPERATION_DETAILS, CHOICE, PROMPT_EVENT, COMPLETION_EVENT) or bool(
        _MESSAGE_EVENT.fullmatch(name)
    )


def has_content_events(span: Span) -> bool:
    return any(is_content_event(event.name) for event in span.events)


def event_body(event: SpanEvent) -> dict[str, AttributeValue]:
    """The event's body as a dict, wherever the instrumentation put it; text becomes ``content``."""
    attributes = event.attributes
    if LOG_BODY_ATTRIBUTE in attributes:
        raw = attributes[LOG_BODY_ATTRIBUTE]
    elif EVENT_CONTENT in attributes:
        raw = attributes[EVENT_CONTENT]
    else:
        return {key: attributes[key] for key in _BODY_KEYS if key in attributes}
    body = parse_json_value(raw)
    if isinstance(body, str):
        body = parse_json_value(_quote_bare_names(body))
    if isinstance(body, dict):
        return dict(body)
    return {} if body is None else {"content": body}


def _quote_bare_names(text: str) -> str:
    """Semantic Kernel .NET 1.64-1.65 appended a message's author name unquoted (``, "name": Bot}``),
    which is not JSON; quoting it gives the message back. Other text is returned as it is."""
    return _BARE_NAME.sub(lambda match: f', "name": {json.dumps(match.group(1))}}}', text)


def _details_attributes(event: SpanEvent) -> dict[str, AttributeValue]:
    # The semconv puts the content in the event's attributes; accept a map body too.
    body = parse_json_value(event.attributes.get(LOG_BODY_ATTRIBUTE))
    return {**(dict(body) if isinstance(body, dict) else {}), **event.attributes}


@dataclass(frozen=True)
class EventContent:
    """The messages a span's events carry, plus the attributes of its operation-details events."""

    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    system_messages: list[Message] = field(default_factory=list)
    # Model and usage of the v1.37 event, for spans that carry them only there.
    details: dict[str, AttributeValue] = field(default_factory=dict)


def read_events(span: Span) -> EventContent:
    """Every generation's content events of one span, the newest generation winning when several exist."""
    details: dict[str, AttributeValue] = {}
    message_events: list[tuple[str, dict[str, AttributeValue]]] = []
    choices: list[dict[str, AttributeValue]] = []
    prompt: AttributeValue = None
    completion: AttributeValue = None
    for event in span.events:
        if event.name == OPERATION_DETAILS:
            for key, value in _details_attributes(event).items():
                details.setdefault(key, value)  # first event wins: Strands sends inputs, then outputs
        elif event.name == CHOICE:
            choices.append(event_body(event))
        elif role := message_event_role(event.name):
            message_events.append((role, event_body(event)))
        elif event.name == PROMPT_EVENT:
            prompt = event.attributes.get("gen_ai.prompt", event_body(event).get("content"))
        elif event.name == COMPLETION_EVENT:
            completion = event.attributes.get("gen_ai.completion", event_body(event).get("content"))
    sid = span.span_id
    inputs = convert_messages(details.get(INPUT_MESSAGES), sid, "in", "user")
    if not inputs and message_events:
        inputs = [
            convert_message({**body, "role": role}, f"{sid}-in-{i}", "user")
            for i, (role, body) in enumerate(_with_call_ids(message_events))
        ]
    if not inputs and prompt is not None:
        inputs = prompt_messages(prompt, sid)
    outputs = convert_messages(details.get(OUTPUT_MESSAGES), sid, "out", "assistant")
    if not outputs and choices:
        ordered = sorted(enumerate(choices), key=lambda item: (as_int(item[1].get("index")), item[0]))
        outputs = [choice_message(body, f"{sid}-out-{i}") for i, (_, body) in enumerate(ordered)]
    if not outputs and completion is not None:
        outputs = completion_messages(completion, sid)
    system = convert_system_instructions(details.get(SYSTEM_INSTRUCTIONS), sid)
    return EventContent(inputs, outputs, system, details)


def _with_call_ids(
    message_events: list[tuple[str, dict[str, AttributeValue]]],
) -> list[tuple[str, dict[str, AttributeValue]]]:
    """Message event bodies, each tool message that names no call given the id of the call it answers.

    Semantic Kernel .NET (up to 1.66) writes a tool message as ``{role, name, content, tool_calls}``
    without ``tool_call_id``; it adds one tool message per call of the assistant message before, in
    the calls' order, so the n-th such message answers the n-th call.
    """
    pending: list[str] = []
    out: list[tuple[str, dict[str, AttributeValue]]] = []
    for role, body in message_events:
        if role == "assistant":
            calls = parse_json_value(body.get("tool_calls"))
            pending = [
                call_id
                for call in (calls if isinstance(calls, list) else [])
                if isinstance(call, dict) and (call_id := as_str(call.get("id")))
            ]
        elif role == "tool" and "tool_call_id" not in body and "id" not in body and pending:
            body = {**body, "tool_call_id": pending.pop(0)}
        out.append((role, body))
    return out


def choice_message(body: Mapping[str, AttributeValue], msg_id: str) -> Message:
    """A ``gen_ai.choice`` body: ``{index, finish_reason, message}``, the message a map, blocks or text."""
    message = parse_json_value(body.get("message"))
    raw: dict[str, AttributeValue]
    if isinstance(message, dict):
        raw = dict(message)
        # Semantic Kernel .NET repeats the calls beside the message; take them once.
        if "tool_calls" not in raw and "tool_calls" in body:
            raw["tool_calls"] = body["tool_calls"]
        return convert_message(raw, msg_id, "assistant")
    if message is None:
        rest = {k: v for k, v in body.items() if k not in ("index", "finish_reason", "role")}
        return convert_message({**rest, "role": "assistant"}, msg_id, "assistant")
    # Strands: the content blocks (as JSON text) or the agent's answer as plain text.
    raw_message = body.get("message") if isinstance(message, int | float | bool) else message
    raw = {"role": "assistant", "content": raw_message, "tool_calls": body.get("tool_calls")}
    return convert_message(raw, msg_id, "assistant")


def _role_blocks(text: str) -> list[tuple[str, str]]:
    """``[(role, text)]`` of a prompt written as role-prefixed lines, or in SK's pseudo-JSON; else []."""
    if text.startswith('[{"role:" '):
        return [(role, content) for role, content in _SK_ITEM.findall(text)]
    if not _ROLE_PREFIX.match(text):
        return []
    blocks: list[tuple[str, str]] = []
    for line in text.split("\n"):
        match = _ROLE_PREFIX.match(line)
        if match:
            blocks.append((match.group(1).lower(), line[match.end() :]))
        else:  # a continuation line of the message before
            role, previous = blocks[-1]
            blocks[-1] = (role, f"{previous}\n{line}")
    return blocks


def prompt_messages(value: AttributeValue, span_id: str) -> list[Message]:
    """``gen_ai.prompt`` (v1.26-v1.27): a JSON list of messages, role-prefixed lines, or free text."""
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        if "messages" not in parsed:
            return [convert_message(parsed, f"{span_id}-in-0", "user")]
        parsed = parsed["messages"]
    if isinstance(parsed, list):
        return [convert_message(raw, f"{span_id}-in-{i}", "user") for i, raw in enumerate(parsed)]
    text = clean_text(parsed)
    if not text.strip():
        return []
    return _block_messages(_role_blocks(text) or [("user", text)], span_id, "in", "user")


def completion_messages(value: AttributeValue, span_id: str) -> list[Message]:
    """``gen_ai.completion`` (v1.26-v1.27): a JSON list of messages or choices, or the answer's text."""
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        return [_completion_message(parsed, f"{span_id}-out-0")]
    if isinstance(parsed, list):
        return [_completion_message(raw, f"{span_id}-out-{i}") for i, raw in enumerate(parsed)]
    text = clean_text(parsed)
    if not text.strip():
        return []
    blocks = _role_blocks(text) if text.startswith('[{"role:" ') else []
    return _block_messages(blocks or [("assistant", text)], span_id, "out", "assistant")


def _block_messages(
    blocks: list[tuple[str, str]], span_id: str, tag: str, default_role: Role
) -> list[Message]:
    """Messages of ``(role, text)`` blocks, with ids ``{span_id}-{tag}-{i}``."""
    messages = []
    for i, (role, text) in enumerate(blocks):
        raw: dict[str, AttributeValue] = {"role": role, "content": text}
        messages.append(convert_message(raw, f"{span_id}-{tag}-{i}", default_role))
    return messages


def _completion_message(raw: AttributeValue, msg_id: str) -> Message:
    """One item of ``gen_ai.completion``: a choice (``{message, ...}``) or a message."""
    if isinstance(raw, dict) and "message" in raw:
        return choice_message(raw, msg_id)
    return convert_message(raw, msg_id, "assistant")


@dataclass(frozen=True)
class ToolEvents:
    """What the events of a tool span say about the call (Strands records nothing else)."""

    call_id: str | None = None
    name: str | None = None
    args: AttributeValue = None
    result: AttributeValue = None


def tool_from_events(span: Span) -> ToolEvents:
    """A tool span's call from its events: ``gen_ai.tool.message`` holds the arguments and
    ``gen_ai.choice`` the result (v1.36 style), or the operation-details event's tool_call and
    tool_call_response parts (v1.37 style)."""
    call_id: str | None = None
    name: str | None = None
    args: AttributeValue = None
    result: AttributeValue = None
    for event in span.events:
        if event.name == TOOL_MESSAGE:
            body = event_body(event)
            args = plain_json(parse_json_value(body.get("content")))
            call_id = call_id or as_str(body.get("id"))
        elif event.name == CHOICE:
            body = event_body(event)
            result = plain_result(body.get("message", body.get("content")))
            call_id = call_id or as_str(body.get("id"))
        elif event.name == OPERATION_DETAILS:
            attributes = _details_attributes(event)
            messages = [
                *convert_messages(attributes.get(INPUT_MESSAGES), span.span_id, "in", "tool"),
                *convert_messages(attributes.get(OUTPUT_MESSAGES), span.span_id, "out", "tool"),
            ]
            for part in (p for m in messages for p in m.parts):
                extra = part.model_extra or {}
                if part.type == "tool_call":
                    args, name = extra.get("args"), as_str(extra.get("tool_name")) or name
                    call_id = call_id or as_str(extra.get("tool_call_id"))
                elif part.type == "tool_result":
                    result = extra.get("result")
                    call_id = call_id or as_str(extra.get("tool_call_id"))
    return ToolEvents(call_id, name, args, result)
