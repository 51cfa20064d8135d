"""What a convention adapter is: the protocol and the normalized pieces it extracts from one span.

Each instrumentation convention (OTel GenAI semconv, OpenInference, OpenLLMetry, ...) is one module
implementing ``ConventionAdapter``. An adapter only reads single spans; joining spans into an
``AgentRun`` is convention-independent and lives in ``ingest.transform.runs``.

Messages come out as ``schemas.Message`` with our part representation:
``{"type": "text", "text"}``, ``{"type": "reasoning", "text"}``,
``{"type": "tool_call", "tool_call_id", "tool_name", "args"}``,
``{"type": "tool_result", "tool_call_id", "result"}``; a server-executed tool call is a
``tool_call`` (and its response a ``tool_result``) with ``"server": true``; other part types
(blob, uri, file, ...) are kept as they came.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from tracescore.ingest.transform.jsonvalue import as_text, plain_json
from tracescore.schemas import Message, Part, Span, Usage
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue, JsonValue

_Model = TypeVar("_Model", bound=BaseModel)


class SpanRole(enum.Enum):
    """What a span is, as far as building runs is concerned."""

    AGENT = "agent"
    LLM = "llm"
    TOOL = "tool"
    RETRIEVER = "retriever"
    OTHER = "other"


@dataclass(frozen=True)
class LlmCall:
    """One model call. ``input_messages`` is the prompt as sent, system-role messages included."""

    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    # Instructions passed beside the messages (gen_ai.system_instructions), not in-history ones.
    system_messages: list[Message] = field(default_factory=list)
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    start_ns: int = 0


@dataclass(frozen=True)
class ToolExecution:
    """One tool run. ``result`` is None when the span recorded none (content capture off)."""

    call_id: str | None
    name: str | None
    args: AttributeValue = None
    result: AttributeValue = None
    is_error: bool = False


@dataclass(frozen=True)
class AgentInfo:
    """What an agent span says about its run; the messages are often absent.

    ``input_messages`` is the new turn (or the whole conversation when the convention does not
    split it; the transform then keeps only the last user block, see ``runs.split_turn``).
    ``remembered_messages`` is the history when the convention says where it ends (pydantic-ai's
    ``new_message_index``); None means unknown, and the history is taken from the first model
    call's prompt.
    """

    # The agent's name, in three strengths (``ingest.transform.agent_name`` picks the run's): the
    # agent's own name attribute (``gen_ai.agent.name``, ``agent.name``...), another attribute the
    # convention names agents by (``graph.node.id``, ``traceloop.entity.name``...), the span's name.
    name: str | None = None
    convention_name: str | None = None
    span_name: str | None = None
    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    system_messages: list[Message] = field(default_factory=list)
    model: str | None = None
    remembered_messages: list[Message] | None = None
    # Retrieved documents the agent span itself carries (some frameworks record context there).
    context: list[str] = field(default_factory=list)


class ConventionAdapter(Protocol):
    """Reads the spans of one convention. Methods may raise on odd input; the transform copes.

    Adapters subclass this protocol explicitly, so they share the default ``top_role``.
    """

    name: str

    def claims(self, span: Span) -> bool:
        """True when this convention wrote the span (checked in registry order, per span)."""

    def classify(self, span: Span) -> SpanRole: ...

    def top_role(self, span: Span) -> SpanRole | None:
        """The role a span takes instead of ``classify``'s when no span of the same convention is
        above it in the trace; None (the default) keeps ``classify``'s."""
        return None

    def acting_agent(self, span: Span) -> str | None:
        """The name of the agent a step span (not an agent span) says it works for, when the
        convention records it there only (LlamaIndex's ``current_agent_name``); None by default."""
        return None

    def llm_call(self, span: Span) -> LlmCall: ...

    def tool_execution(self, span: Span) -> ToolExecution: ...

    def agent_info(self, span: Span) -> AgentInfo: ...

    def retrieved_texts(self, span: Span) -> list[str]:
        """Text of the documents a RETRIEVER span returned (empty when it holds only ids)."""


# Roles some providers and older conventions use, mapped onto our four.
_ROLE_ALIASES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def normalize_role(role: object, default: Role = "user") -> Role:
    if isinstance(role, str):
        # Most roles come as written here ("user"): looked up first, before stripping and folding.
        return _ROLE_ALIASES.get(role) or _ROLE_ALIASES.get(role.strip().lower(), default)
    return default


def has_key_prefix(attributes: Mapping[str, object], prefix: str | tuple[str, ...]) -> bool:
    """True when some key starts with ``prefix`` (or one of them).

    Detection asks this of every span's keys, adapter after adapter: mapping ``str.startswith`` over
    the keys runs in C, where a generator expression runs a Python frame per key.
    """
    return any(map(str.startswith, attributes, repeat(prefix)))


def has_any_key(attributes: Mapping[str, object], keys: Iterable[str]) -> bool:
    """True when one of ``keys`` is an attribute (checked in C, as ``has_key_prefix``)."""
    return not attributes.keys().isdisjoint(keys)


def make_part(data: Mapping[str, object]) -> Part:
    """A Part from already-normalized keys (every value made plain JSON)."""
    part_type = data.get("type")
    type_name = part_type if isinstance(part_type, str) and part_type else "unknown"
    return trusted_part(
        type_name, {k: plain_json(v) for k, v in data.items() if isinstance(k, str) and k != "type"}
    )


# Parts and messages are built by the thousand per request (every prompt replays the conversation so
# far), and pydantic validating values this module has just normalized cost a third of the transform.
# ``model_construct`` is no cheaper for these models (it resolves their camelCase aliases field by
# field), so they are assembled as validation would return them: the same ``__dict__``, extra fields
# and fields set (tests/ingest/transform/test_trusted_messages.py).
_set_attribute = object.__setattr__
_MESSAGE_GIVEN = frozenset({"id", "role", "content", "parts", "reasoning"})


def assembled(model: type[_Model], fields: dict[str, Any], given: Iterable[str]) -> _Model:
    """The instance ``model(**{name: fields[name] for name in given})`` validates to, without the
    validation: ``fields`` holds every field of ``model`` by name, in declaration order, each a value
    of the field's type (built by the transform, checked by mypy), and ``model`` takes no extra fields."""
    instance = model.__new__(model)
    _set_attribute(instance, "__dict__", fields)
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_fields_set__", set(given))
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def updated(instance: _Model, update: dict[str, Any]) -> _Model:
    """``instance.model_copy(update=update)`` for a model without extra fields, ``update`` holding
    values of its fields' types: assembled, as model_copy's generic copy costs more than the rest of
    joining a run's tool calls."""
    return assembled(
        type(instance), {**instance.__dict__, **update}, instance.__pydantic_fields_set__ | update.keys()
    )


def text_part(part_type: Literal["text", "reasoning"], text: str) -> Part:
    """``make_part({"type": part_type, "text": text})``: the commonest part, its text already a string."""
    return trusted_part(part_type, {"text": text})


def trusted_part(type_name: str, fields: dict[str, JsonValue]) -> Part:
    """``Part.model_validate({"type": type_name, **fields})`` for a string type and plain JSON
    fields (which a Part takes as extra fields whatever their keys), without the validation."""
    part = Part.__new__(Part)
    _set_attribute(part, "__dict__", {"type": type_name})
    _set_attribute(part, "__pydantic_extra__", fields)
    _set_attribute(part, "__pydantic_fields_set__", {"type", *fields})
    _set_attribute(part, "__pydantic_private__", None)
    return part


def _trusted_message(
    msg_id: str, role: Role, content: str, parts: list[Part], reasoning: str | None
) -> Message:
    """``Message(id=..., role=..., content=..., parts=..., reasoning=...)`` without the validation."""
    fields = {
        "id": msg_id,
        "role": role,
        "content": content,
        "parts": list(parts),  # validation copies the list too: the caller's stays its own
        "tool_invocations": [],
        "reasoning": reasoning,
    }
    return assembled(Message, fields, _MESSAGE_GIVEN)


def make_message(msg_id: str, role: Role, parts: list[Part]) -> Message:
    """A Message whose ``content`` is its text parts and ``reasoning`` its reasoning parts.

    A tool message without text gets its results as content, so history reads naturally.
    """
    texts: list[str] = []
    reasoning: list[str] = []
    for part in parts:
        extra = part.__pydantic_extra__  # what model_extra returns, without the property call
        if not extra:
            continue
        if part.type == "text":
            if text := as_text(extra.get("text")):
                texts.append(text)
        elif part.type == "reasoning" and (text := as_text(extra.get("text"))):
            reasoning.append(text)
    content = "\n".join(texts)
    if not content and role == "tool":
        content = "\n".join(
            as_text(p.model_extra.get("result")) for p in parts if p.type == "tool_result" and p.model_extra
        )
    joined_reasoning = "\n".join(reasoning)
    return _trusted_message(msg_id, role, content, parts, joined_reasoning or None)
