"""OpenLLMetry message shapes -> our Messages: indexed keys, content blocks, events.

OpenLLMetry (<= 0.54, and still for several instrumentations) flattens each message into indexed
attributes, ``gen_ai.prompt.{i}.{role,content,tool_call_id}`` and
``gen_ai.completion.{i}.{role,content,finish_reason,refusal,reasoning}`` with
``.tool_calls.{j}.{id,name,arguments}`` (the first releases used ``llm.prompts`` /
``llm.completions``). List content is ``json.dumps``ed into ``content``, so a content string may hold
provider blocks (OpenAI ``text``/``image_url``, Anthropic ``text``/``thinking``/``tool_use``/
``tool_result``, Responses ``input_text``/``function_call_output``). Anthropic thinking is a
completion of its own with ``role="thinking"``. With legacy attributes off, content goes to log
records (``gen_ai.{role}.message``, ``gen_ai.choice``). The LangChain messages of
``traceloop.entity.*`` are read by ``openllmetry_langchain``.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from tracescore.ingest.transform.adapters.base import (
    has_key_prefix,
    make_message,
    make_part,
    normalize_role,
    text_part,
)
from tracescore.ingest.transform.adapters.genai_events import read_events
from tracescore.ingest.transform.jsonvalue import as_text, parse_json_value
from tracescore.schemas import Message, Part, Span
from tracescore.schemas.agent_run import Role
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue

PROMPT_PREFIXES = ("gen_ai.prompt", "llm.prompts")
COMPLETION_PREFIXES = ("gen_ai.completion", "llm.completions")
_INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion|llm\.prompts|llm\.completions)\.(\d+)\.(.+)$")
_INDEXED_PREFIXES = tuple(f"{prefix}." for prefix in (*PROMPT_PREFIXES, *COMPLETION_PREFIXES))
_TOOL_CALL_FIELD = re.compile(r"^tool_calls\.(\d+)\.(\w+)$")
# Fields OpenLLMetry writes under an index; anything else there belongs to another convention
# (OpenInference writes ``llm.prompts.{i}.prompt.text``).
_MESSAGE_FIELDS = frozenset(
    {"role", "content", "tool_call_id", "finish_reason", "refusal", "reasoning", "user", "system", "name"}
)
# Placeholders standing for content that was not recorded: they must read as empty text.
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_REASONING_BLOCKS = frozenset({"thinking", "reasoning"})
# OpenAI Responses tools the provider runs itself (the legacy attributes name them like this).
_SERVER_TOOL_NAMES = frozenset({"web_search_call", "file_search_call", "code_interpreter_call"})


def has_indexed_messages(attributes: Mapping[str, AttributeValue]) -> bool:
    # Every span that reaches this convention's detection is asked: most have no key under the
    # indexed prefixes, which is checked in C before any key goes through the pattern.
    return has_key_prefix(attributes, _INDEXED_PREFIXES) and any(
        _indexed_key(key) is not None for key in attributes
    )


# Keys repeat from span to span (gen_ai.prompt.0.content...), and every key of a span is parsed here
# when detecting the convention and again per message group: a bounded cache spares the regex.
@functools.lru_cache(maxsize=4096)
def _indexed_key(key: str) -> tuple[str, int, str] | None:
    match = _INDEXED.match(key)
    if match is None:
        return None
    field = match.group(3)
    if field not in _MESSAGE_FIELDS and not field.startswith(("tool_calls.", "function_call.")):
        return None
    return match.group(1), int(match.group(2)), field


# --- content blocks ---------------------------------------------------------------------------------


def _text(text: object) -> Part:
    return text_part("text", as_text(text))


def _reasoning_text(value: AttributeValue) -> str:
    """Reasoning as text: a string, or summary items ``[{"type": "summary_text", "text"}]``."""
    parsed = parse_json_value(value)
    if isinstance(parsed, list):
        return "\n".join(t for t in (_reasoning_text(item) for item in parsed) if t)
    if isinstance(parsed, dict):
        key = next((k for k in ("thinking", "text", "content", "summary") if k in parsed), None)
        return _reasoning_text(parsed[key]) if key else ""
    return as_text(parsed)


def tool_call_part(call_id: object, name: object, args: AttributeValue, server: bool = False) -> Part:
    parsed = parse_json_value(args)
    return make_part(
        {
            "type": "tool_call",
            "tool_call_id": as_text(call_id),
            "tool_name": as_text(name),
            "args": {} if parsed in (None, "") else parsed,
            **({"server": True} if server else {}),
        }
    )


def tool_result_part(
    call_id: object, result: AttributeValue, is_error: bool = False, server: bool = False
) -> Part:
    if isinstance(result, list) and (text := _text_of_blocks(result)) is not None:
        result = text  # Anthropic's list of text blocks
    return make_part(
        {
            "type": "tool_result",
            "tool_call_id": as_text(call_id),
            "result": parse_json_value(result),
            **({"is_error": True} if is_error else {}),
            **({"server": True} if server else {}),
        }
    )


def _text_of_blocks(blocks: Sequence[AttributeValue]) -> str | None:
    """The blocks' texts joined, when every block is a ``{"type": "text"}`` block; else None."""
    texts = []
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "text":
            return None
        texts.append(as_text(block.get("text")))
    return "".join(texts)


def convert_block(raw: AttributeValue) -> Part | None:
    """One provider content block -> a part; None for empty text. Unknown blocks are kept whole."""
    if not isinstance(raw, dict):
        text = as_text(raw)
        return _text(text) if text and not is_placeholder(text) else None
    kind = raw.get("type")
    if not isinstance(kind, str):
        return make_part(dict(raw))
    if kind in _TEXT_BLOCKS or kind == "refusal":
        text = as_text(raw.get(kind if kind == "refusal" else "text", raw.get("content")))
        return _text(text) if text and not is_placeholder(text) else None
    if kind in _REASONING_BLOCKS:
        text = _reasoning_text(raw)
        return make_part({"type": "reasoning", "text": text}) if text else None
    if kind in ("tool_use", "server_tool_use", "tool_call", "function_call"):
        call_id = raw.get("call_id") if kind == "function_call" else raw.get("id")
        args = next((raw[k] for k in ("input", "args", "arguments") if k in raw), None)
        return tool_call_part(call_id, raw.get("name"), args, server=kind == "server_tool_use")
    if kind == "tool_result" or (kind.endswith("_tool_result") and "tool_use_id" in raw):
        return tool_result_part(
            raw.get("tool_use_id"), raw.get("content"), raw.get("is_error") is True, kind != "tool_result"
        )
    if kind == "function_call_output":
        return tool_result_part(raw.get("call_id"), raw.get("output"))
    return make_part(dict(raw))


def content_parts(value: AttributeValue) -> list[Part]:
    """A ``content`` value (text, json.dumps'ed blocks, or already decoded) -> parts."""
    if value is None:
        return []
    parsed: AttributeValue = value
    if isinstance(value, str):
        if value.strip()[:1] not in ("[", "{", '"'):
            return [_text(value)] if value and not is_placeholder(value) else []
        parsed = parse_json_value(value)
    if isinstance(parsed, str):
        return [_text(parsed)] if parsed and not is_placeholder(parsed) else []
    if isinstance(parsed, list) and all(isinstance(b, str) or _is_block(b) for b in parsed):
        return [p for p in (convert_block(b) for b in parsed) if p is not None]
    if isinstance(parsed, dict):
        if "call_id" in parsed and "output" in parsed:  # Responses function_call_output, re-packed
            return [tool_result_part(parsed.get("call_id"), parsed.get("output"))]
        if _is_block(parsed):
            part = convert_block(parsed)
            return [part] if part is not None else []
    # Something else that happens to be JSON (a user pasting data): it is the text.
    text = value if isinstance(value, str) else as_text(value)
    return [_text(text)] if text else []


def _is_block(raw: AttributeValue) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("type"), str)


def with_tool_calls(parts: list[Part], calls: Iterable[Part]) -> list[Part]:
    """Add tool_call parts not already present (Anthropic writes tool_use both ways)."""
    seen = {(p.model_extra or {}).get("tool_call_id") for p in parts if p.type == "tool_call"}
    seen.discard("")
    out = list(parts)
    for call in calls:
        call_id = (call.model_extra or {}).get("tool_call_id")
        if call_id and call_id in seen:
            continue
        seen.add(call_id)
        out.append(call)
    return out


def finish(msg_id: str, role: Role, parts: list[Part], tool_call_id: object = None) -> Message:
    """The message, with a tool reply's text turned into its tool_result and result-only user
    messages (Anthropic's tool results) given the tool role."""
    if role == "tool" and tool_call_id and not any(p.type == "tool_result" for p in parts):
        texts = [as_text((p.model_extra or {}).get("text")) for p in parts if p.type == "text"]
        others = [p for p in parts if p.type != "text"]
        if texts:  # no text: the reply was not recorded, and an empty result would claim it was
            parts = [tool_result_part(tool_call_id, "\n".join(texts)), *others]
    if parts and role == "user" and all(p.type == "tool_result" for p in parts):
        role = "tool"
    return make_message(msg_id, role, parts)


# --- indexed attributes -----------------------------------------------------------------------------


def _grouped(
    attributes: Mapping[str, AttributeValue], prefixes: tuple[str, ...]
) -> list[dict[str, AttributeValue]]:
    """Fields of each index, in index order; gaps are skipped, the first prefix found wins."""
    by_prefix: dict[str, dict[int, dict[str, AttributeValue]]] = defaultdict(lambda: defaultdict(dict))
    wanted = tuple(f"{prefix}." for prefix in prefixes)
    # A model-call span holds many keys under other prefixes: ``startswith`` refuses them before the
    # cached pattern lookup.
    for key, value in attributes.items():
        if not key.startswith(wanted):
            continue
        parsed = _indexed_key(key)
        if parsed is not None and parsed[0] in prefixes:
            by_prefix[parsed[0]][parsed[1]][parsed[2]] = value
    for prefix in prefixes:
        if prefix in by_prefix:
            return [by_prefix[prefix][i] for i in sorted(by_prefix[prefix])]
    return []


def _calls_of(fields: Mapping[str, AttributeValue]) -> list[Part]:
    calls: dict[int, dict[str, AttributeValue]] = defaultdict(dict)
    # Most messages make no tool call: their keys are checked in C before any goes through the pattern.
    if has_key_prefix(fields, "tool_calls."):
        for key, value in fields.items():
            match = _TOOL_CALL_FIELD.match(key)
            if match:
                calls[int(match.group(1))][match.group(2)] = value
    parts = []
    for _, call in sorted(calls.items()):
        server = as_text(call.get("name")) in _SERVER_TOOL_NAMES
        parts.append(tool_call_part(call.get("id"), call.get("name"), call.get("arguments"), server))
    if "function_call.name" in fields:  # the pre-tools OpenAI function call, id-less
        name, args = fields["function_call.name"], fields.get("function_call.arguments")
        parts.append(tool_call_part(None, name, args))
    return parts


def _indexed_message(
    fields: dict[str, AttributeValue], msg_id: str, default_role: Role
) -> tuple[Message, bool]:
    """One index's message and whether it is Anthropic's ``role="thinking"`` completion."""
    raw_role, content = fields.get("role"), fields.get("content")
    if content is None:  # Anthropic/Bedrock/Vertex text-completion prompts: ``.user`` (``.system``)
        for alt in ("user", "system"):
            if alt in fields:
                raw_role, content = raw_role or alt, fields[alt]
                break
    thinking = raw_role == "thinking"
    role: Role = "tool" if raw_role == "computer-call" else normalize_role(raw_role, default_role)
    parts: list[Part] = []
    if reasoning := _reasoning_text(fields.get("reasoning")):
        parts.append(make_part({"type": "reasoning", "text": reasoning}))
    filtered = fields.get("finish_reason") == "content_filter" and content == "FILTERED"
    for part in [] if filtered else content_parts(content):
        if thinking and part.type == "text":
            part = make_part({"type": "reasoning", "text": (part.model_extra or {}).get("text", "")})
        parts.append(part)
    if refusal := as_text(fields.get("refusal")):
        parts.append(_text(refusal))
    parts = with_tool_calls(parts, _calls_of(fields))
    return finish(msg_id, "assistant" if thinking else role, parts, fields.get("tool_call_id")), thinking


def indexed_messages(
    attributes: Mapping[str, AttributeValue],
    prefixes: tuple[str, ...],
    span_id: str,
    tag: str,
    default_role: Role,
) -> list[Message]:
    """Messages of the indexed keys; thinking completions become the reasoning of the answer."""
    messages: list[Message] = []
    pending: list[Part] = []  # reasoning of thinking completions not yet attached to an answer
    for i, fields in enumerate(_grouped(attributes, prefixes)):
        message, thinking = _indexed_message(fields, f"{span_id}-{tag}-{i}", default_role)
        if thinking:
            pending.extend(message.parts)
            continue
        if pending:
            message = make_message(message.id, message.role, [*pending, *message.parts])
            pending = []
        messages.append(message)
    if pending:
        if messages and messages[-1].role == "assistant":
            last = messages.pop()
            messages.append(make_message(last.id, last.role, [*last.parts, *pending]))
        else:
            messages.append(make_message(f"{span_id}-{tag}-thinking", "assistant", pending))
    return messages


# --- log records / span events (use_legacy_attributes=False) ---------------------------------------


def event_messages(span: Span) -> tuple[list[Message], list[Message], list[Message]]:
    """(prompt, answers, instructions) of the span's ``gen_ai.{role}.message`` / ``gen_ai.choice``
    events, read by the GenAI events reader (OpenLLMetry emits the semconv v1.28 shapes)."""
    content = read_events(span)
    outputs = content.output_messages
    anthropic = any(
        str(attributes.get("gen_ai.system", "")).lower() == "anthropic"
        for attributes in (span.attributes, *(e.attributes for e in span.events if e.name == "gen_ai.choice"))
    )
    if anthropic and len(outputs) > 1:
        outputs = _blocks_as_one_answer(outputs)
    return content.input_messages, outputs, content.system_messages


def _blocks_as_one_answer(choices: list[Message]) -> list[Message]:
    """Anthropic's events give each content block its own ``gen_ai.choice``: thinking, text, tool_use.

    They are one answer. A non-streamed thinking block is a plain-text choice; thinking always
    comes first, so text choices before the last text-bearing one are read as reasoning.
    """
    with_text = [i for i, m in enumerate(choices) if any(p.type == "text" for p in m.parts)]
    last_text = with_text[-1] if with_text else -1
    parts: list[Part] = []
    for i, message in enumerate(choices):
        for part in message.parts:
            if part.type == "text" and i < last_text:
                part = make_part({"type": "reasoning", "text": (part.model_extra or {}).get("text", "")})
            parts.append(part)
    return [make_message(choices[0].id, "assistant", parts)]
