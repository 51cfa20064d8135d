"""OpenInference's flattened message attributes -> our Messages.

OpenInference flattens lists into indexed keys: ``llm.input_messages.{i}.message.{role,content,
name,tool_call_id}``, parts under ``message.contents.{k}.message_content.{type,text,image.image.url,
...}``, tool calls under ``message.tool_calls.{j}.tool_call.{id,function.name,function.arguments}``
(FIELD-GUIDE section 3). Indices may be sparse (``tool_calls.1`` with no ``tool_calls.0``), some
exporters send the unflattened list of ``{"message.role": ...}`` maps instead, and converters add
non-spec keys (Vercel's ``message_content.type: "tool-call"`` placeholder whose call sits under
``tool_calls`` at the same index, ``message_content.image`` as a bare string). ``unflatten``
rebuilds one nested tree from all of these; the readers below walk it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role
from tracescore.ingest.transform.adapters.openinference_values import (
    as_tool_result,
    block_parts,
    call_part,
    lenient,
    media_part,
    text_part,
)
from tracescore.ingest.transform.jsonvalue import as_int, clean_text
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue

_CALL_TYPES = frozenset({"tool_use", "tool-call", "tool_call", "function_call"})

TreeLeaf: TypeAlias = str | int | float | bool | bytes | list[AttributeValue] | None
"""An attribute value that is no map (``unflatten`` rebuilds maps as trees)."""
TreeValue: TypeAlias = TreeLeaf | dict[str | int, "TreeValue"]
"""A node of the rebuilt tree: a map keyed by path segment (indices as ints), or a leaf."""
Tree: TypeAlias = dict[str | int, TreeValue]


def _key(segment: str) -> str | int:
    # "²" is a digit to str.isdigit but not to int(): only ASCII digits are an index.
    return int(segment) if segment.isascii() and segment.isdigit() else segment


def _insert(node: Tree, path: list[str], value: TreeValue) -> None:
    for segment in path[:-1]:
        child = node.get(_key(segment))
        if not isinstance(child, dict):
            child = {}
            node[_key(segment)] = child
        node = child
    last = _key(path[-1])
    if not isinstance(node.get(last), dict):  # a leaf never overwrites a rebuilt subtree
        node[last] = value


def _expand(value: AttributeValue) -> TreeValue:
    """Unflattened exports: lists of maps become index maps, dotted map keys become nested maps.

    Always builds new containers: the span's own attribute values are never modified.
    """
    if isinstance(value, list):
        if not any(isinstance(v, dict) for v in value):
            items: list[AttributeValue] = list(value)
            return items
        by_index: Tree = {i: _expand(v) for i, v in enumerate(value)}
        return by_index
    if isinstance(value, dict):
        node: Tree = {}
        for key, item in value.items():
            _insert(node, key.split("."), _expand(item))
        return node
    return value


def unflatten(attributes: Mapping[str, AttributeValue], prefix: str) -> Tree:
    """Every attribute under ``prefix`` as one tree; numeric segments become int keys."""
    whole = attributes.get(prefix)
    root = _expand(lenient(whole)) if isinstance(whole, list | str) else {}
    root = root if isinstance(root, dict) else {}
    start = len(prefix) + 1
    for key, value in attributes.items():
        if key.startswith(prefix) and key[len(prefix) : start] == ".":
            _insert(root, key[start:].split("."), _expand(value))
    return root


def indexed(node: TreeValue) -> list[tuple[int, TreeValue]]:
    """The (index, item) pairs of an index map in index order; gaps are simply skipped."""
    if not isinstance(node, dict):
        return []
    return sorted((k, v) for k, v in node.items() if isinstance(k, int))


def get(node: TreeValue, *path: str) -> TreeValue:
    for segment in path:
        if not isinstance(node, dict):
            return None
        node = node.get(segment)
    return node


def _tool_call(node: TreeValue) -> Part | None:
    """A ``tool_call.{id,function.{name,arguments}}`` subtree -> a tool_call part."""
    call = get(node, "tool_call") if isinstance(get(node, "tool_call"), dict) else node
    if not isinstance(call, dict):
        return None
    call_id, name = call.get("id"), get(call, "function", "name") or call.get("name")
    if not call_id and not name:
        return None
    args = get(call, "function", "arguments")
    return call_part(call_id, name, args if args is not None else call.get("arguments"))


def _content_part(item: TreeValue, calls: dict[int, TreeValue], index: int, used: set[int]) -> list[Part]:
    """One ``message.contents.{k}`` item; a tool-call placeholder takes ``tool_calls.{k}``."""
    content = get(item, "message_content")
    if not isinstance(content, dict):
        return []
    kind = str(content.get("type") or "").lower()
    if kind in _CALL_TYPES:
        own = _tool_call(item) or _tool_call(content)
        if own is None and index in calls:
            used.add(index)
            own = _tool_call(calls[index])
        return [own] if own else []
    if kind in ("image", "image_url"):
        image = content.get("image")
        url = image if not isinstance(image, dict) else get(image, "image", "url") or image.get("url")
        part = media_part("image", url)
        return [part] if part else []
    if kind in ("audio", "video"):
        found = get(content, kind, kind) or content.get(kind)
        media: Tree = found if isinstance(found, dict) else {"url": found}
        extra = {"mime_type": media.get("mime_type"), "transcript": media.get("transcript")}
        part = media_part(kind, media.get("url"), **extra)
        return [part] if part else []
    if kind in ("", "text", "reasoning", "thinking"):
        text = clean_text(content.get("text"))
        if not text.strip():
            return []
        return [make_part({"type": "text" if kind in ("", "text") else "reasoning", "text": text})]
    leaves: dict[str, AttributeValue] = {
        k: v for k, v in content.items() if isinstance(k, str) and not isinstance(v, dict)
    }
    return block_parts(leaves)


def oi_message(node: TreeValue, msg_id: str, default_role: Role) -> Message | None:
    """One ``llm.*_messages.{i}`` subtree -> a Message (None when it holds no message)."""
    message = get(node, "message")
    if not isinstance(message, dict):
        return None
    role = normalize_role(message.get("role"), default_role)
    calls = dict(indexed(message.get("tool_calls")))
    used: set[int] = set()
    parts = [p for k, item in indexed(message.get("contents")) for p in _content_part(item, calls, k, used)]
    content = message.get("content")
    if content is not None and not any(p.type == "text" for p in parts):
        # Both forms may be set with the same text (converters); the plain one only fills a gap.
        parsed = lenient(content)
        blocks: Sequence[AttributeValue]
        if isinstance(parsed, list) and parsed and all(isinstance(b, dict) and "type" in b for b in parsed):
            blocks = parsed
        else:
            blocks = [clean_text(content)]
        parts = [p for b in blocks for p in block_parts(b)] + parts
    parts.extend(p for j, call in calls.items() if j not in used and (p := _tool_call(call)))
    if message.get("function_call_name"):  # legacy OpenAI function calling
        arguments = message.get("function_call_arguments_json")
        parts.append(call_part(None, message["function_call_name"], arguments))
    call_id = message.get("tool_call_id")
    if role == "tool" and call_id:
        parts = as_tool_result(call_id, parts)
    return make_message(msg_id, role, parts)


def oi_messages(
    attributes: Mapping[str, AttributeValue], prefix: str, span_id: str, tag: str, role: Role
) -> list[Message]:
    tree = unflatten(attributes, prefix)
    converted = [oi_message(node, f"{span_id}-{tag}-{i}", role) for i, node in indexed(tree)]
    return [m for m in converted if m is not None]


def prompt_messages(attributes: Mapping[str, AttributeValue], span_id: str) -> list[Message]:
    """Completion-API prompts: ``llm.prompts`` (a string list) or ``llm.prompts.{i}.prompt.text``."""
    whole = attributes.get("llm.prompts")
    listed = whole if isinstance(whole, list) else []
    texts = [clean_text(t) for t in listed]
    if texts and not any(isinstance(t, dict) for t in listed):
        return [make_message(f"{span_id}-in-{i}", "user", [text_part(t)]) for i, t in enumerate(texts) if t]
    tree = unflatten(attributes, "llm.prompts")
    texts = [clean_text(get(node, "prompt", "text")) for _, node in indexed(tree)]
    return [make_message(f"{span_id}-in-{i}", "user", [text_part(t)]) for i, t in enumerate(texts) if t]


def choice_messages(attributes: Mapping[str, AttributeValue], span_id: str) -> list[Message]:
    """Completion-API answers: ``llm.choices.{i}.completion.text``."""
    tree = unflatten(attributes, "llm.choices")
    texts = [clean_text(get(node, "completion", "text")) for _, node in indexed(tree)]
    return [make_message(f"{span_id}-out-{i}", "assistant", [text_part(t)]) for i, t in enumerate(texts) if t]


def choice_count(attributes: Mapping[str, AttributeValue]) -> int:
    """How many alternative answers the request asked for (``n``, ``candidate_count``)."""
    params = lenient(attributes.get("llm.invocation_parameters"))
    if not isinstance(params, dict):
        return 1
    return max(1, *(as_int(params.get(k)) for k in ("n", "candidate_count", "candidateCount")))


def merge_answer(messages: list[Message], msg_id: str) -> Message | None:
    """Output messages of one model call as its single answer.

    OpenAI Responses and the Agents SDK write each output item (reasoning, text, every function
    call) as its own ``llm.output_messages.{i}``; they are one answer, in order.
    """
    if not messages:
        return None
    return make_message(msg_id, "assistant", [p for m in messages for p in m.parts])
