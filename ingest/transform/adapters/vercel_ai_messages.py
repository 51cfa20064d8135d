"""Vercel AI SDK message shapes -> our messages and parts (helpers of ``vercel_ai``).

The SDK records prompts as its own message objects: ``{role, content}`` where ``content`` is a
string (always for system messages) or a list of parts (``text``, ``reasoning``, ``tool-call``,
``tool-result``, ``image``, ``file``, ...). Field names moved between versions: a tool call's
arguments are ``args`` in v4 and ``input`` from v5, a tool result is ``result`` in v4 and
``output: {type, value}`` from v5, a file's type is ``mimeType`` in v4 and ``mediaType`` from v5.
Responses are separate attributes (``ai.response.text``, ``.toolCalls``, ``.reasoning``, ``.files``,
``.object``), gathered here into one assistant message. See FIELD-GUIDE.md section 5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role, text_part
from tracescore.ingest.transform.jsonvalue import as_list, as_text, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue, JsonValue

# v5+ tool-result ``output`` types whose ``value`` is the result itself.
_VALUE_OUTPUTS = frozenset({"text", "json", "error-text", "error-json", "content"})


def _tool_args(raw: AttributeValue) -> JsonValue:
    # v4 and ai@5 generateText store arguments as a JSON string inside the JSON; streamText as an object.
    args = plain_json(parse_json_value(raw))
    return {} if args is None or args == "" else args


def tool_result_value(part: Mapping[str, AttributeValue]) -> JsonValue:
    """The result a ``tool-result`` part carries: v5+ ``output: {type, value}``, v4 ``result``."""
    output = part.get("output")
    if isinstance(output, dict):
        kind = output.get("type")
        if kind in _VALUE_OUTPUTS:
            return plain_json(parse_json_value(output.get("value")))
        if kind == "execution-denied":
            return {"denied": True, "reason": plain_json(output.get("reason"))}
        return plain_json(output)
    if "output" in part:
        return plain_json(parse_json_value(output))
    return plain_json(parse_json_value(part.get("result")))


def _media_part(raw: Mapping[str, AttributeValue], data: AttributeValue, default_mime: str) -> Part:
    """An image or file part as a semconv-style ``uri`` or ``blob`` part (what other adapters emit)."""
    mime = raw.get("mediaType", raw.get("mimeType"))
    mime = mime if isinstance(mime, str) and mime else None
    modality = (mime or default_mime).split("/", 1)[0]
    extra = {"filename": raw["filename"]} if isinstance(raw.get("filename"), str) else {}
    if isinstance(data, dict) and isinstance(data.get("url"), str):  # v7 {type: "url", url}
        data = data["url"]
    if isinstance(data, str) and data.startswith(("http://", "https://", "gs://", "s3://", "file:")):
        return make_part({"type": "uri", "modality": modality, "mime_type": mime, "uri": data, **extra})
    return make_part({"type": "blob", "modality": modality, "mime_type": mime, "content": data, **extra})


def convert_part(raw: AttributeValue) -> Part:
    """One SDK content part -> our part representation; unknown types are kept as they came."""
    if not isinstance(raw, dict):
        return text_part("text", clean_text(raw))
    kind = raw.get("type")
    if kind == "text":
        return make_part({"type": "text", "text": clean_text(raw.get("text", raw.get("content")))})
    if kind == "reasoning":
        return make_part({"type": "reasoning", "text": clean_text(raw.get("text", raw.get("reasoning")))})
    if kind == "tool-call":
        return make_part(
            {
                "type": "tool_call",
                "tool_call_id": as_text(raw.get("toolCallId")),
                "tool_name": as_text(raw.get("toolName")),
                "args": _tool_args(raw.get("input", raw.get("args"))),
                **({"server": True} if raw.get("providerExecuted") is True else {}),
            }
        )
    if kind == "tool-result":
        return make_part(
            {
                "type": "tool_result",
                "tool_call_id": as_text(raw.get("toolCallId")),
                "result": tool_result_value(raw),
                **({"server": True} if raw.get("providerExecuted") is True else {}),
            }
        )
    if kind == "image":
        return _media_part(raw, raw.get("image"), "image")
    if kind == "file":
        return _media_part(raw, raw.get("data"), "application")
    return make_part(dict(raw) if isinstance(kind, str) else {"type": "unknown", "data": dict(raw)})


def convert_message(raw: AttributeValue, msg_id: str, default_role: Role) -> Message:
    """One ``{role, content}`` message; content is a string or a list of parts."""
    if not isinstance(raw, dict):
        return make_message(msg_id, default_role, [convert_part(raw)])
    role = normalize_role(raw.get("role"), default_role)
    content = raw.get("content")
    if isinstance(content, list):
        parts = [convert_part(p) for p in content]
    elif content is None or content == "":
        parts = []
    else:
        parts = [convert_part(content)]
    return make_message(msg_id, role, parts)


def convert_messages(
    value: AttributeValue, span_id: str, tag: str, default_role: Role = "user"
) -> list[Message]:
    """A JSON list of SDK messages -> Messages with ids ``{span_id}-{tag}-{i}``; never raises.

    Text that is not a JSON list (a truncated attribute) is kept as one message of that text.
    """
    if value is None:
        return []
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        return [convert_message(parsed, f"{span_id}-{tag}-0", default_role)]
    if not isinstance(parsed, list):
        text = clean_text(parsed)
        return [make_message(f"{span_id}-{tag}-0", default_role, [convert_part(text)])] if text else []
    return [convert_message(raw, f"{span_id}-{tag}-{i}", default_role) for i, raw in enumerate(parsed)]


def system_messages(value: AttributeValue, span_id: str) -> list[Message]:
    """``ai.prompt.system``: a string, a system message, or (v7 ``instructions``) a list of them."""
    items: Sequence[AttributeValue] = value if isinstance(value, list) else [value]
    messages: list[Message] = []
    for i, item in enumerate(items):
        content = item.get("content") if isinstance(item, dict) else item
        parts = [convert_part(p) for p in content] if isinstance(content, list) else [convert_part(content)]
        message = make_message(f"{span_id}-sys-{i}", "system", parts)
        if message.content.strip():
            messages.append(message)
    return messages


def split_turn(conversation: list[Message]) -> tuple[list[Message], list[Message]]:
    """(new turn, history) of a conversation without system messages.

    The new turn starts at the last block of user messages: the trailing user block when the
    conversation ends with the user, or that block and what followed it when the caller sent tool
    results back (client-side tools), which continue the same turn.
    """
    last_user = max((i for i, m in enumerate(conversation) if m.role == "user"), default=None)
    if last_user is None:
        return [], conversation
    cut = last_user
    while cut > 0 and conversation[cut - 1].role == "user":
        cut -= 1
    return conversation[cut:], conversation[:cut]


def _tool_call_part(raw: AttributeValue) -> Part | None:
    if not isinstance(raw, dict):
        return None
    return make_part(
        {
            "type": "tool_call",
            "tool_call_id": as_text(raw.get("toolCallId", raw.get("id"))),
            "tool_name": as_text(raw.get("toolName", raw.get("name"))),
            "args": _tool_args(raw.get("input", raw.get("args"))),
            **({"server": True} if raw.get("providerExecuted") is True else {}),
        }
    )


def response_message(
    attributes: Mapping[str, AttributeValue], msg_id: str, *, text_only: bool = False
) -> Message | None:
    """The assistant answer a span records in ``ai.response.*`` (v3 ``ai.result.*``), or None.

    ``text_only`` keeps the text (or generated object) alone: the root span's tool calls and
    reasoning are those of its last step, which the step's own span already reports.
    """

    def attr(name: str) -> AttributeValue:
        value = attributes.get(f"ai.response.{name}")
        return attributes.get(f"ai.result.{name}") if value is None else value

    keys = ("text", "object") if text_only else ("text", "object", "reasoning", "toolCalls", "files")
    if all(attr(k) is None for k in keys):
        return None
    parts: list[Part] = []
    if not text_only and (reasoning := clean_text(attr("reasoning"))):
        parts.append(make_part({"type": "reasoning", "text": reasoning}))
    if text := clean_text(attr("text")):
        parts.append(make_part({"type": "text", "text": text}))
    if (generated := attr("object")) is not None and (object_text := clean_text(generated)):
        parts.append(make_part({"type": "text", "text": object_text}))
    if not text_only:
        parts.extend(p for c in as_list(attr("toolCalls")) if (p := _tool_call_part(c)) is not None)
        parts.extend(
            _media_part(f, f.get("data"), "application")
            for f in as_list(attr("files"))
            if isinstance(f, dict)
        )
    if text_only and not parts:
        return None
    return make_message(msg_id, "assistant", parts)
