"""pydantic-ai message shapes -> our Messages (used by ``ingest.transform.adapters.pydantic_ai``).

Two families (FIELD-GUIDE section 6):

- formats 2-6: OTel-style ``{role, parts}`` lists (``gen_ai.input.messages``,
  ``pydantic_ai.all_messages``) with pydantic-ai's own part variants: ``thinking``,
  ``tool_call_response{id,name,result}``, ``builtin: true`` for provider-executed tools, tool results
  in ``role: user`` messages up to format 5 and ``role: tool`` from format 6;
- format 1: one dict per OTel event (``event_to_dict``: the event body merged with its attributes
  ``event.name``, ``gen_ai.message.index``), in the chat span's ``events`` attribute, the agent
  span's ``all_messages_events`` or (``event_mode='logs'``) log records read as span events.

A failed tool call or argument validation comes back to the model as a retry prompt ending with
``RETRY_SUFFIX``; its tool result is marked ``is_error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role, text_part
from tracescore.ingest.transform.adapters.genai_semconv import convert_part
from tracescore.ingest.transform.correlate import LOG_BODY_ATTRIBUTE
from tracescore.ingest.transform.jsonvalue import as_int, as_list, as_text, parse_json_value, plain_json
from tracescore.schemas import Message, Part, Span
from tracescore.schemas.agent_run import Role
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue

# pydantic-ai's RetryPromptPart.model_response() always ends with this sentence.
RETRY_SUFFIX = "Fix the errors and try again."
_ROLE_BY_EVENT = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def is_retry_prompt(value: object) -> bool:
    return isinstance(value, str) and value.rstrip().endswith(RETRY_SUFFIX)


def _text(value: object) -> str:
    text = as_text(value)
    return "" if is_placeholder(text) else text


def tool_result_part(call_id: object, result: AttributeValue) -> Part:
    parsed = plain_json(parse_json_value(result))
    if is_placeholder(parsed):
        parsed = None
    return make_part(
        {
            "type": "tool_result",
            "tool_call_id": as_text(call_id),
            "result": parsed,
            **({"is_error": True} if is_retry_prompt(parsed) else {}),
        }
    )


# --- formats 2-6: {role, parts} messages -------------------------------------------------------


def convert_otel_part(raw: AttributeValue) -> Part:
    """One pydantic-ai OTel part; ``builtin`` tool calls and results become server-side ones."""
    if not isinstance(raw, dict):
        return text_part("text", _text(raw))
    part_type = raw.get("type")
    builtin = raw.get("builtin") is True
    if part_type == "tool_call_response" and not builtin:
        return tool_result_part(raw.get("id"), raw.get("result", raw.get("response")))
    if part_type in ("text", "thinking", "reasoning"):
        kind = "text" if part_type == "text" else "reasoning"
        return make_part({"type": kind, "text": _text(raw.get("content"))})
    if builtin and part_type in ("tool_call", "tool_call_response"):
        raw = {**raw, "type": f"server_{part_type}"}
    return convert_part(raw)


def _split_tool_results(role: Role, parts: list[Part], msg_id: str) -> list[Message]:
    """A request message holding tool results becomes tool message(s), in part order.

    Up to format 5 pydantic-ai puts a request's tool returns and any user prompt of the same request
    in one ``role: user`` message; read as a user turn it would pass a tool result off as user input.
    """
    if role != "user" or not any(p.type == "tool_result" for p in parts):
        return [make_message(msg_id, role, parts)]
    runs: list[tuple[bool, list[Part]]] = []
    for part in parts:
        is_result = part.type == "tool_result"
        if runs and runs[-1][0] == is_result:
            runs[-1][1].append(part)
        else:
            runs.append((is_result, [part]))
    if len(runs) == 1:
        return [make_message(msg_id, "tool", parts)]
    return [
        make_message(f"{msg_id}.{k}", "tool" if is_result else "user", run_parts)
        for k, (is_result, run_parts) in enumerate(runs)
    ]


def convert_otel_messages(
    raws: Iterable[AttributeValue], id_prefix: str, default_role: Role
) -> list[Message]:
    """Already-parsed ``{role, parts}`` messages -> Messages with ids ``{id_prefix}-{i}``."""
    messages: list[Message] = []
    for i, raw in enumerate(raws):
        msg_id = f"{id_prefix}-{i}"
        if not isinstance(raw, dict):
            text = _text(raw)
            if text:
                messages.append(
                    make_message(msg_id, default_role, [make_part({"type": "text", "text": text})])
                )
            continue
        role = normalize_role(raw.get("role"), default_role)
        raw_parts = raw.get("parts")
        if isinstance(raw_parts, list):
            parts = [convert_otel_part(p) for p in raw_parts]
        elif "content" in raw:  # a plain {role, content} message
            parts = [convert_otel_part({"type": "text", "content": raw.get("content")})]
        else:
            parts = []
        messages.extend(_split_tool_results(role, parts, msg_id))
    return messages


def parse_messages(value: AttributeValue) -> list[AttributeValue]:
    """A messages attribute as a list; a truncated or non-JSON value is kept as one text message."""
    if value is None:
        return []
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        return [parsed]
    if isinstance(parsed, list):
        return list(parsed)
    return [parsed] if _text(parsed) else []


def request_groups(raws: Sequence[AttributeValue]) -> list[tuple[bool, list[AttributeValue]]]:
    """The OTel messages regrouped into pydantic-ai ModelMessages: ``(is_response, messages)``.

    ``pydantic_ai.new_message_index`` counts ModelMessages, but one ModelRequest becomes one OTel
    message per run of same-role parts (``[system, user]`` for a first request with a system prompt).
    A response is one assistant message; two requests in a row show as a repeated role; two
    responses in a row mean a request without parts (which yields no message) lay between them.
    """
    groups: list[tuple[bool, list[AttributeValue]]] = []
    open_request: list[AttributeValue] | None = None
    last_role: AttributeValue = None
    for raw in raws:
        role = raw.get("role") if isinstance(raw, dict) else None
        if role == "assistant":
            if groups and groups[-1][0] and open_request is None:
                groups.append((False, []))
            groups.append((True, [raw]))
            open_request, last_role = None, None
            continue
        if open_request is None or role == last_role:
            open_request = []
            groups.append((False, open_request))
        open_request.append(raw)
        last_role = role
    return groups


# --- format 1: event dicts -------------------------------------------------------------------


def span_event_dicts(span: Span) -> list[dict[str, AttributeValue]]:
    """Format-1 message events of a span: the ``events`` attribute, else span events / log records."""
    listed: list[dict[str, AttributeValue]] = [
        dict(e) for e in as_list(span.attributes.get("events")) if isinstance(e, dict)
    ]
    if listed:
        return listed
    found: list[dict[str, AttributeValue]] = []
    for event in span.events:
        if not (event.name.startswith("gen_ai.") or "event.name" in event.attributes):
            continue
        body = parse_json_value(event.attributes.get(LOG_BODY_ATTRIBUTE))
        merged: dict[str, AttributeValue] = dict(body) if isinstance(body, dict) else {}
        if body is not None and not isinstance(body, dict):
            merged["content"] = body
        merged.update({k: v for k, v in event.attributes.items() if k != LOG_BODY_ATTRIBUTE})
        merged.setdefault("event.name", event.name)
        found.append(merged)
    return found


def looks_like_event_list(value: AttributeValue) -> bool:
    """Whether an ``events`` attribute is pydantic-ai's format-1 JSON list of event dicts."""
    items = as_list(value) if isinstance(value, str) else []
    return bool(items) and all(
        isinstance(e, dict) and ("role" in e or "event.name" in e or "message" in e) for e in items
    )


def is_choice(event: Mapping[str, AttributeValue]) -> bool:
    return event.get("event.name") == "gen_ai.choice" or (
        isinstance(event.get("message"), dict) and "role" not in event
    )


def _content_parts(content: AttributeValue) -> list[Part]:
    """A format-1 ``content``: a string, one item, or a list of strings and ``{kind, ...}`` dicts."""
    if content is None:
        return []
    items: Sequence[AttributeValue] = content if isinstance(content, list) else [content]
    parts: list[Part] = []
    for item in items:
        if not isinstance(item, dict):
            parts.append(text_part("text", _text(item)))
            continue
        kind = item.get("kind")
        if kind in ("text", "thinking"):
            text = _text(item.get("text", item.get("content")))
            parts.append(make_part({"type": "text" if kind == "text" else "reasoning", "text": text}))
        elif kind == "binary":
            parts.append(
                make_part(
                    {
                        "type": "binary",
                        "media_type": item.get("media_type"),
                        "content": item.get("binary_content", item.get("content")),
                    }
                )
            )
        elif isinstance(kind, str):  # image-url, document-url, ...: kept as they came
            parts.append(make_part({"type": kind, **{k: v for k, v in item.items() if k != "kind"}}))
        else:
            parts.append(text_part("text", _text(item)))
    return parts


def _event_message(body: Mapping[str, AttributeValue], msg_id: str, fallback_role: Role) -> Message:
    role = normalize_role(body.get("role") or _ROLE_BY_EVENT.get(str(body.get("event.name"))), fallback_role)
    if role == "tool":
        return make_message(msg_id, "tool", [tool_result_part(body.get("id"), body.get("content"))])
    parts = _content_parts(body.get("content"))
    for call in as_list(body.get("tool_calls")):
        if not isinstance(call, dict):
            continue
        function = nested if isinstance(nested := call.get("function"), dict) else {}
        args = parse_json_value(function.get("arguments"))
        parts.append(
            make_part(
                {
                    "type": "tool_call",
                    "tool_call_id": as_text(call.get("id")),
                    "tool_name": as_text(function.get("name")),
                    "args": {} if args is None else args,
                }
            )
        )
    return make_message(msg_id, role, parts)


def event_messages(
    events: list[dict[str, AttributeValue]], id_prefix: str
) -> list[tuple[int | None, Message]]:
    """Non-choice events as ``(gen_ai.message.index, Message)``.

    A response with text after tool calls is split into several assistant events of the same index:
    they are joined back into one message.
    """
    result: list[tuple[int | None, Message]] = []
    for i, event in enumerate(events):
        if is_choice(event):
            continue
        raw_index = event.get("gen_ai.message.index")
        index = as_int(raw_index) if raw_index is not None else None
        message = _event_message(event, f"{id_prefix}-{i}", "user")
        if result and message.role == "assistant" and index is not None:
            prev_index, prev = result[-1]
            if prev.role == "assistant" and prev_index == index:
                result[-1] = (index, make_message(prev.id, "assistant", [*prev.parts, *message.parts]))
                continue
        result.append((index, message))
    return result


def choice_message(events: list[dict[str, AttributeValue]], msg_id: str) -> list[Message]:
    """The ``gen_ai.choice`` events of one chat span as its single assistant answer."""
    parts: list[Part] = []
    for event in events:
        if is_choice(event):
            body = event.get("message")
            if isinstance(body, dict):
                parts.extend(_event_message(body, msg_id, "assistant").parts)
    return [make_message(msg_id, "assistant", parts)] if parts else []


def is_user_turn(message: Message) -> bool:
    """A user message the user wrote: not only tool results, and not a pydantic-ai retry prompt.

    Text may be empty (content capture off): the message still marks where the turn is.
    """
    if message.role != "user" or all(p.type == "tool_result" for p in message.parts):
        return False
    texts = [as_text((p.model_extra or {}).get("text")) for p in message.parts if p.type == "text"]
    return not any(is_retry_prompt(t) for t in texts)
