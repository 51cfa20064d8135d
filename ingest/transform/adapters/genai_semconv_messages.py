"""Message content of the OTel GenAI semantic conventions, every generation, as ``schemas.Message``.

Two message shapes turn up under the conventions' names:

- v1.37+ ``{role, parts: [{type, ...}]}`` (``gen_ai.input.messages`` / ``gen_ai.output.messages``),
  part types text, reasoning, tool_call, tool_call_response, server_tool_call(_response), blob, uri,
  file (schema ``docs/gen-ai/gen-ai-{input,output}-messages.json``);
- v1.26-v1.36 and the SDKs that kept it, the OpenAI chat shape ``{role, content, tool_calls, id}``
  (event bodies, ``gen_ai.prompt``), where ``content`` is text, a list of provider content items
  (OpenAI ``{type: text|image_url}``, Bedrock/Strands ``{text}`` / ``{toolUse}`` / ``{toolResult}`` /
  ``{reasoningContent}``, pydantic-ai ``{kind}``) or a JSON string of such a list.

``convert_message`` reads both. Everything here is lenient and never raises on odd values; the
public helpers are reused by other conventions that adopted these attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role, text_part
from tracescore.ingest.transform.jsonvalue import (
    AttributeMap,
    as_list,
    as_text,
    clean_text,
    parse_json_value,
    plain_json,
)
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue, JsonValue

# pydantic-ai writes "thinking" where the semconv says "reasoning" (FIELD-GUIDE section 6).
_REASONING_TYPES = frozenset({"reasoning", "thinking"})
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
# Keys that mark a dict as a content item (so JSON text that merely looks like a list stays text).
_ITEM_KEYS = frozenset(
    {"type", "kind", "text", "toolUse", "toolResult", "reasoningContent", "image", "document", "video"}
)


def plain_result(value: AttributeValue) -> JsonValue:
    """A tool result as the model saw it: JSON text decoded, text-only content blocks joined.

    Bedrock/Strands (``[{"text"}]``) and MCP (``[{"type": "text", "text"}]``) wrap plain results in
    content blocks; a result that is only text blocks reads as its text.
    """
    parsed = parse_json_value(value)
    if is_placeholder(parsed):
        return None
    if isinstance(parsed, list) and parsed and (text := _text_of_blocks(parsed)) is not None:
        return text
    return plain_json(parsed)


def _text_of_blocks(blocks: Sequence[AttributeValue]) -> str | None:
    """The blocks' texts joined, when every block is a text-only content block; else None."""
    texts = []
    for block in blocks:
        if not isinstance(block, dict) or not isinstance(text := block.get("text"), str):
            return None
        if not (set(block) == {"text"} or (set(block) == {"type", "text"} and block.get("type") == "text")):
            return None
        texts.append(text)
    return "\n".join(texts)


def _args(value: AttributeValue) -> JsonValue:
    args = plain_json(parse_json_value(value))
    return {} if args is None or is_placeholder(args) else args


def _text_part(value: object) -> Part:
    return text_part("text", clean_text(value))


def _reasoning_part(value: object) -> Part:
    return text_part("reasoning", clean_text(value))


def _tool_call_part(
    call_id: AttributeValue, name: AttributeValue, args: AttributeValue, server: bool = False
) -> Part:
    return make_part(
        {
            "type": "tool_call",
            "tool_call_id": "" if call_id is None else as_text(call_id),
            "tool_name": "" if name is None else as_text(name),
            "args": _args(args),
            **({"server": True} if server else {}),
        }
    )


def _tool_result_part(call_id: AttributeValue, result: AttributeValue, server: bool = False) -> Part:
    return make_part(
        {
            "type": "tool_result",
            "tool_call_id": "" if call_id is None else as_text(call_id),
            "result": plain_result(result),
            **({"server": True} if server else {}),
        }
    )


def _details(raw: Mapping[str, AttributeValue], key: str) -> Mapping[str, AttributeValue]:
    details = parse_json_value(raw.get(key))
    return details if isinstance(details, dict) else {}


def _server_args(raw: Mapping[str, AttributeValue]) -> AttributeValue:
    # v1.40: the provider's call details sit under "server_tool_call" ({type, ...provider keys}).
    if "arguments" in raw:
        return raw["arguments"]
    details = _details(raw, "server_tool_call")
    for key in ("arguments", "input", "args"):
        if key in details:
            return details[key]
    return {k: v for k, v in details.items() if k != "type"}


def _server_result(raw: Mapping[str, AttributeValue]) -> AttributeValue:
    for key in ("response", "result"):
        if key in raw:
            return raw[key]
    details = _details(raw, "server_tool_call_response")
    for key in ("response", "result", "content", "output"):
        if key in details:
            return details[key]
    rest = {k: v for k, v in details.items() if k != "type"}
    return rest or None


def convert_part(raw: AttributeValue) -> Part:
    """One semconv part -> our part representation; unknown part types are kept as they came."""
    if not isinstance(raw, dict):
        return _text_part(raw)
    part_type = raw.get("type")
    if not isinstance(part_type, str):  # may be any JSON value, even an unhashable one
        return make_part(dict(raw))
    if part_type == "text":
        return _text_part(raw.get("content", raw.get("text")))
    if part_type in _REASONING_TYPES:
        return _reasoning_part(raw.get("content", raw.get("text")))
    if part_type == "reasoningContent":  # Strands maps unknown Bedrock blocks to {type: key, content}
        return _bedrock_reasoning(raw.get("content"))
    if part_type == "tool_call":
        return _tool_call_part(raw.get("id"), raw.get("name"), raw.get("arguments"))
    if part_type == "server_tool_call":
        return _tool_call_part(raw.get("id"), raw.get("name"), _server_args(raw), server=True)
    if part_type == "tool_call_response":
        # The JSON schema says "response"; the registry example and pydantic-ai say "result".
        return _tool_result_part(raw.get("id"), raw.get("response", raw.get("result")))
    if part_type == "server_tool_call_response":
        return _tool_result_part(raw.get("id"), _server_result(raw), server=True)
    return make_part(dict(raw))


def _bedrock_reasoning(value: AttributeValue) -> Part:
    block = parse_json_value(value)
    if isinstance(block, dict):
        inner = block.get("reasoningText")
        if isinstance(inner, dict):
            return _reasoning_part(inner.get("text"))
        if "text" in block:
            return _reasoning_part(block.get("text"))
    return _reasoning_part(block)


def _uri_part(url: object, modality: str) -> Part:
    uri = as_text(url)
    if uri.startswith("data:") and ";base64," in uri:
        # An inline data URL is a blob, not a reference.
        header, data = uri[5:].split(";base64,", 1)
        return make_part({"type": "blob", "modality": modality, "mime_type": header or None, "content": data})
    return make_part({"type": "uri", "modality": modality, "uri": uri})


def _typed_item(item: AttributeMap, item_type: str) -> list[Part]:
    if item_type in _TEXT_TYPES:
        return [_text_part(item.get("text", item.get("content")))]
    if item_type in _REASONING_TYPES:
        return [_reasoning_part(item.get("text", item.get("content", item.get("thinking"))))]
    if item_type == "image_url":  # OpenAI chat: {"type": "image_url", "image_url": {"url"}}
        image = item.get("image_url")
        return [_uri_part(image.get("url") if isinstance(image, dict) else image, "image")]
    if item_type == "image-url":  # pydantic-ai event bodies
        return [_uri_part(item.get("url"), "image")]
    if item_type == "binary":  # pydantic-ai event bodies
        mime = as_text(item.get("media_type"))
        modality = mime.split("/", 1)[0] if mime else "document"
        return [
            make_part(
                {
                    "type": "blob",
                    "modality": modality,
                    "mime_type": mime or None,
                    "content": item.get("binary_content", item.get("content")),
                }
            )
        ]
    return [convert_part(item)]


def _content_item(item: AttributeValue) -> list[Part]:
    """One content item of an OpenAI-shaped message (any provider's), as parts."""
    if not isinstance(item, dict):
        return [_text_part(item)]
    item_type = item.get("type", item.get("kind"))
    if isinstance(item_type, str):
        return _typed_item(item, item_type)
    # Bedrock / Strands content blocks are keyed by kind.
    if "text" in item:
        text = item["text"]
        # Azure AI agents: {"text": {"value": "..."}}.
        return [_text_part(text.get("value") if isinstance(text, dict) else text)]
    if isinstance(use := item.get("toolUse"), dict):
        return [_tool_call_part(use.get("toolUseId"), use.get("name"), use.get("input"))]
    if isinstance(result := item.get("toolResult"), dict):
        return [_tool_result_part(result.get("toolUseId"), result.get("content"))]
    if "reasoningContent" in item:
        return [_bedrock_reasoning(item["reasoningContent"])]
    if len(item) == 1:  # {image: {...}}, {document: {...}}: keep the block as a part of that type
        ((key, value),) = item.items()
        fields = dict(value) if isinstance(value, dict) else {"content": value}
        return [make_part({**fields, "type": str(key)})]
    return [make_part(dict(item))]


def _is_item(value: AttributeValue) -> bool:
    return isinstance(value, dict) and any(key in value for key in _ITEM_KEYS)


def _looks_like_items(value: AttributeValue) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_item(i) for i in value)


def content_parts(content: AttributeValue) -> list[Part]:
    """The ``content`` of an OpenAI-shaped message as parts (text, a list of items, or their JSON)."""
    if content is None:
        return []
    if isinstance(content, str):
        # Strands and others serialise the item list into the string; plain text stays text.
        parsed = parse_json_value(content) if content.lstrip().startswith(("[", "{")) else content
        if not (_looks_like_items(parsed) or _is_item(parsed)):
            return [_text_part(content)]
        content = parsed
    if isinstance(content, dict):
        return _content_item(content)
    if isinstance(content, list):
        return [part for item in content for part in _content_item(item)]
    return [_text_part(content)]


def tool_call_parts(value: AttributeValue) -> list[Part]:
    """OpenAI ``tool_calls`` (``[{id, type, function: {name, arguments}}]``, or flat) as tool_call parts."""
    parts = []
    for call in as_list(value):
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name", call.get("name"))
        args = function.get("arguments", call.get("arguments", call.get("args")))
        parts.append(_tool_call_part(call.get("id"), name, args))
    return parts


def _chat_shape_parts(raw: Mapping[str, AttributeValue], role: Role) -> list[Part]:
    call_id = raw.get("tool_call_id", raw.get("id"))
    if role == "tool" and isinstance(call_id, str | int) and not isinstance(call_id, bool):
        parts = [_tool_result_part(call_id, raw.get("content"))]
    else:
        parts = content_parts(raw.get("content"))
    parts.extend(tool_call_parts(raw.get("tool_calls")))
    function_call = raw.get("function_call")  # OpenAI's pre-tools shape
    if isinstance(function_call, dict):
        parts.append(_tool_call_part(None, function_call.get("name"), function_call.get("arguments")))
    return parts


def convert_message(raw: AttributeValue, msg_id: str, default_role: Role) -> Message:
    """One message of either shape; a bare string (invalid or truncated JSON) is kept as text."""
    if not isinstance(raw, dict):
        return make_message(msg_id, default_role, [_text_part(raw)])
    role = normalize_role(raw.get("role"), default_role)
    raw_parts = raw.get("parts")
    if isinstance(raw_parts, list):
        parts = [convert_part(p) for p in raw_parts]
    else:
        parts = _chat_shape_parts(raw, role)
    return make_message(msg_id, role, parts)


def convert_messages(value: AttributeValue, span_id: str, tag: str, default_role: Role) -> list[Message]:
    """A messages attribute -> Messages with ids ``{span_id}-{tag}-{i}``; never raises."""
    if value is None:
        return []
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        return [convert_message(parsed, f"{span_id}-{tag}-0", default_role)]
    if not isinstance(parsed, list):
        text = clean_text(parsed)
        return [make_message(f"{span_id}-{tag}-0", default_role, [_text_part(text)])] if text else []
    return [convert_message(raw, f"{span_id}-{tag}-{i}", default_role) for i, raw in enumerate(parsed)]


def convert_system_instructions(value: AttributeValue, span_id: str) -> list[Message]:
    """``gen_ai.system_instructions`` (a list of parts, or plain text) -> one system Message."""
    if value is None:
        return []
    parsed = parse_json_value(value)
    raw_parts = parsed if isinstance(parsed, list) else [parsed]
    parts = [convert_part(p) for p in raw_parts if p is not None and p != ""]
    if not parts:
        return []
    return [make_message(f"{span_id}-sys-0", "system", parts)]
