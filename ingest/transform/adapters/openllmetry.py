"""OpenLLMetry / Traceloop spans (traceloop-sdk decorators, opentelemetry-instrumentation-*).

Span roles come from ``traceloop.span.kind`` (``agent`` and ``workflow`` are run roots, ``tool`` is
a tool run, ``task`` is structure) and, on the instrumentations' model-call spans (``openai.chat``,
``anthropic.chat``, ``ChatOpenAI.chat``), from ``llm.request.type``. Messages are the indexed
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` keys (openllmetry_messages), the OTel
``gen_ai.input.messages`` / ``gen_ai.output.messages`` of 0.53+ (read with genai_semconv's helpers),
or log events when legacy attributes are off. Decorator and LangChain spans carry their call in
``traceloop.entity.input`` / ``.output``. See docs/conventions/openllmetry_traceloop.md and
FIELD-GUIDE.md section 2.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import TypeGuard

from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
    has_any_key,
    has_key_prefix,
    make_message,
)
from tracescore.ingest.transform.adapters.genai_semconv import (
    INPUT_MESSAGES,
    OPERATION,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
    convert_messages,
    convert_system_instructions,
)
from tracescore.ingest.transform.adapters.openllmetry_langchain import (
    lc_fields,
    lc_message,
    lc_messages,
    lc_model,
)
from tracescore.ingest.transform.adapters.openllmetry_messages import (
    COMPLETION_PREFIXES,
    PROMPT_PREFIXES,
    content_parts,
    event_messages,
    has_indexed_messages,
    indexed_messages,
)
from tracescore.ingest.transform.jsonvalue import as_int, as_str, as_text, parse_json_value, plain_json
from tracescore.schemas import Message, Span, Usage
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

SPAN_KIND = "traceloop.span.kind"
ENTITY_NAME = "traceloop.entity.name"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
WORKFLOW_NAME = "traceloop.workflow.name"
REQUEST_TYPE = "llm.request.type"

# OpenLLMetry's own llm.* keys; OpenInference's (llm.input_messages, llm.token_count...) differ.
_LLM_PREFIXES = ("llm.request.", "llm.response.", "llm.usage.")
_LLM_KEYS = frozenset({"llm.is_streaming", "llm.headers", "llm.vendor", "llm.user", "llm.top_k"})
_CLAIMED_PREFIXES = ("traceloop.", *_LLM_PREFIXES)
_VECTOR_EVENTS = frozenset({"db.query.result", "db.search.result"})
_ROLE_BY_KIND = {"agent": SpanRole.AGENT, "workflow": SpanRole.AGENT, "tool": SpanRole.TOOL}
_ROLE_BY_OPERATION = {
    "invoke_agent": SpanRole.AGENT,
    "chat": SpanRole.LLM,
    "text_completion": SpanRole.LLM,
    "generate_content": SpanRole.LLM,
    "execute_tool": SpanRole.TOOL,
}
# Model names OpenLLMetry writes when it does not know the model (LangChain: "unknown").
_JUNK_MODELS = frozenset({"unknown", "none", "null"})
# Keyword arguments that hold the user's text when a decorated function takes several.
_TEXT_KWARGS = ("input", "question", "query", "prompt", "message", "user_input", "text", "content")
_LC_WRAPPER_KEYS = frozenset({"inputs", "outputs", "output", "input_str", "tags", "metadata", "kwargs"})
# A bound method's ``self`` is serialised as its class name by traceloop's JSONEncoder.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _model(attributes: Mapping[str, AttributeValue]) -> str | None:
    """Request model, else response model; the first releases wrote llm.*; LangChain metadata knows it."""
    for key in (
        "gen_ai.request.model",
        "gen_ai.response.model",
        "llm.request.model",
        "llm.response.model",
        "traceloop.association.properties.ls_model_name",
    ):
        value = as_str(attributes.get(key))
        if value and value.strip().lower() not in _JUNK_MODELS:
            return value
    return None


def _usage(attributes: Mapping[str, AttributeValue]) -> Usage:
    """Tokens of the call under any era's key (gen_ai.usage.input/prompt, 0.1x llm.usage.prompt)."""

    def first(*keys: str) -> int:
        return next((max(0, as_int(attributes[k])) for k in keys if k in attributes), 0)

    return Usage(
        input_tokens=first(
            "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"
        ),
        output_tokens=first(
            "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"
        ),
    )


# --- traceloop.entity.input / output ----------------------------------------------------------------


def _unwrap(value: AttributeValue) -> tuple[str, AttributeValue]:
    """(shape, payload) of an entity value: ``decorator`` ({"args", "kwargs"}), ``langchain``
    (the callback's inputs / outputs / output) or ``plain`` (a decorated function's return value)."""
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        keys = set(parsed)
        if "args" in keys and keys <= {"args", "kwargs"}:
            return "decorator", parsed
        if keys <= _LC_WRAPPER_KEYS:
            for key in ("inputs", "outputs", "output"):
                if parsed.get(key) is not None:
                    return "langchain", parse_json_value(parsed[key])
            if "input_str" in parsed:
                return "langchain", parse_json_value(parsed["input_str"])
    return "plain", parsed


def _call_arguments(payload: AttributeValue) -> tuple[list[AttributeValue], Mapping[str, AttributeValue]]:
    """(args, kwargs) of a decorated call's payload (``_unwrap``'s ``decorator`` shape)."""
    if not isinstance(payload, dict):
        return [], {}
    args, kwargs = payload.get("args"), payload.get("kwargs")
    positional: list[AttributeValue] = list(args) if isinstance(args, list) else []
    return positional, kwargs if isinstance(kwargs, dict) else {}


def _messages_in(payload: AttributeValue, span_id: str, tag: str) -> list[Message] | None:
    """Messages a payload holds: a message list, a state ``{"messages": [...]}``, one message."""
    found = lc_messages(payload, span_id, tag)
    if found is None and isinstance(payload, dict):
        found = lc_messages(payload.get("messages"), span_id, tag)
        if found is None and lc_fields(payload) is not None:
            single = lc_message(payload, f"{span_id}-{tag}-0")
            found = [single] if single is not None else None
    return found


def _is_text(value: AttributeValue) -> TypeGuard[str]:
    """A string that is text, not an object serialised to JSON (pydantic ``.json()`` arguments)."""
    return isinstance(value, str) and bool(value.strip()) and value.strip()[:1] not in ("{", "[")


def _decorator_text(args: Sequence[AttributeValue], kwargs: Mapping[str, AttributeValue]) -> str | None:
    """The one text argument of a decorated call, when it is clear which one it is."""
    for key in _TEXT_KWARGS:
        if _is_text(kwargs.get(key)):
            return str(kwargs[key])
    strings = [a for a in args if _is_text(a)]
    if len(strings) > 1 and _IDENTIFIER.fullmatch(strings[0]):
        strings = strings[1:]
    strings += [v for v in kwargs.values() if _is_text(v)]
    return strings[0] if len(strings) == 1 else None


def _text_of(payload: AttributeValue, role: Role) -> str | None:
    if _is_text(payload):
        return str(payload)
    if isinstance(payload, dict):
        # AgentExecutor's outputs repeat the input beside the answer: {"input", "output"}.
        keys = ("output", "answer", "result", "text", "content") if role == "assistant" else _TEXT_KWARGS
        for key in keys:
            if _is_text(payload.get(key)):
                return str(payload[key])
    return None


def entity_messages(value: AttributeValue, span_id: str, tag: str, role: Role) -> list[Message]:
    """What an agent/workflow span says it received (``role="user"``) or returned."""
    shape, payload = _unwrap(value)
    if shape == "decorator":
        args, kwargs = _call_arguments(payload)
        for candidate in [*args, *kwargs.values()]:
            if (found := _messages_in(parse_json_value(candidate), span_id, tag)) is not None:
                return found
        text = _decorator_text(args, kwargs)
    else:
        if (found := _messages_in(payload, span_id, tag)) is not None:
            return found
        text = _text_of(payload, role)
        if text is None and shape == "plain" and role == "assistant" and payload not in (None, "", {}, []):
            text = as_text(payload)  # a structured return value is still the answer
    if not text:
        return []
    return [make_message(f"{span_id}-{tag}-0", role, content_parts(text))]


def _new_answers(inputs: list[Message], outputs: list[Message]) -> list[Message]:
    """Assistant messages the run added: LangGraph returns the whole conversation as its output."""
    start = 0
    while (
        start < min(len(inputs), len(outputs))
        and outputs[start].role == inputs[start].role
        and outputs[start].content == inputs[start].content
    ):
        start += 1
    return [m for m in outputs[start:] if m.role == "assistant"]


def _entity_lists(value: AttributeValue) -> AttributeValue:
    """The raw message list of a LangChain payload (to read the model from its AI messages)."""
    _, payload = _unwrap(value)
    return payload.get("messages") if isinstance(payload, dict) else payload


# --- tools -------------------------------------------------------------------------------------------


def _literal(text: str) -> object:
    """LangChain's ``input_str`` is ``str(dict)``: Python literal syntax, read safely."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _tool_args(value: AttributeValue) -> object:
    """A tool's arguments; ``str(dict)`` input is read as the Python literal it is."""
    shape, payload = _unwrap(value)
    if shape == "decorator":
        args, kwargs = _call_arguments(payload)
        if not args:
            return dict(kwargs)
        if not kwargs and len(args) == 1:
            return parse_json_value(args[0])
        return {"args": args, **kwargs}
    if isinstance(payload, str) and payload.strip()[:1] in ("{", "["):
        return _literal(payload)
    return payload


def _tool_result(value: AttributeValue) -> tuple[AttributeValue, str | None, bool]:
    """(result, tool call id, is_error) of a tool span's output; LangChain returns a ToolMessage."""
    _, payload = _unwrap(value)
    found = lc_fields(payload)
    if found is not None and found[0] == "tool":
        fields = found[1]
        content = fields.get("content")
        if not isinstance(content, str):  # a list of content blocks
            content = "\n".join(as_text((p.model_extra or {}).get("text")) for p in content_parts(content))
        return parse_json_value(content), as_str(fields.get("tool_call_id")), fields.get("status") == "error"
    return payload, None, False


class OpenLlmetryAdapter(ConventionAdapter):
    name = "openllmetry_traceloop"

    def claims(self, span: Span) -> bool:
        attrs = span.attributes
        if has_key_prefix(attrs, _CLAIMED_PREFIXES) or has_any_key(attrs, _LLM_KEYS):
            return True
        return has_indexed_messages(attrs) or any(e.name in _VECTOR_EVENTS for e in span.events)

    def classify(self, span: Span) -> SpanRole:
        attrs = span.attributes
        kind = attrs.get(SPAN_KIND)
        if isinstance(kind, str) and kind in _ROLE_BY_KIND:
            # A decorator @tool span has no call id; the transform joins it with the same-named call
            # of the model output that no tool span claimed by id, so it is never counted twice.
            return _ROLE_BY_KIND[kind]
        if isinstance(kind, str) and kind:
            return SpanRole.OTHER  # task: structure around the calls
        operation = attrs.get(OPERATION)
        if isinstance(operation, str):
            return _ROLE_BY_OPERATION.get(operation, SpanRole.OTHER)
        request_type = attrs.get(REQUEST_TYPE)
        if request_type in ("chat", "completion"):
            return SpanRole.LLM
        if isinstance(request_type, str) and request_type in ("embedding", "rerank"):
            return SpanRole.OTHER  # their gen_ai.prompt.N are texts to embed, not a conversation
        if has_indexed_messages(attrs) or INPUT_MESSAGES in attrs or OUTPUT_MESSAGES in attrs:
            return SpanRole.LLM
        if any(e.name in _VECTOR_EVENTS for e in span.events):
            return SpanRole.RETRIEVER
        return SpanRole.OTHER

    def llm_call(self, span: Span) -> LlmCall:
        attrs = span.attributes
        sid = span.span_id
        inputs = indexed_messages(attrs, PROMPT_PREFIXES, sid, "in", "user")
        outputs = indexed_messages(attrs, COMPLETION_PREFIXES, sid, "out", "assistant")
        if not inputs:
            inputs = convert_messages(attrs.get(INPUT_MESSAGES), sid, "in", "user")
        if not outputs:
            outputs = convert_messages(attrs.get(OUTPUT_MESSAGES), sid, "out", "assistant")
        system = convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid)
        if span.events and (not inputs or not outputs):
            event_inputs, event_outputs, event_system = event_messages(span)
            inputs, outputs, system = inputs or event_inputs, outputs or event_outputs, system or event_system
        return LlmCall(
            input_messages=inputs,
            output_messages=outputs,
            system_messages=system,
            model=_model(attrs),
            usage=_usage(attrs),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attrs = span.attributes
        is_error = span.status_code == STATUS_ERROR
        result, call_id, failed = _tool_result(attrs.get(ENTITY_OUTPUT))
        if "gen_ai.tool.call.result" in attrs:
            result = parse_json_value(attrs.get("gen_ai.tool.call.result"))
        if result is None and is_error:
            result = span.status_message or None
        args = _tool_args(attrs.get(ENTITY_INPUT))
        if "gen_ai.tool.call.arguments" in attrs:
            args = parse_json_value(attrs.get("gen_ai.tool.call.arguments"))
        name = as_str(attrs.get("gen_ai.tool.name")) or as_str(attrs.get(ENTITY_NAME))
        return ToolExecution(
            call_id=as_str(attrs.get("gen_ai.tool.call.id")) or call_id,
            name=name or span.name.removesuffix(".tool") or None,
            args=plain_json(args),
            result=plain_json(result),
            is_error=is_error or failed,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attrs = span.attributes
        sid = span.span_id
        if INPUT_MESSAGES in attrs:
            inputs = convert_messages(attrs.get(INPUT_MESSAGES), sid, "in", "user")
        else:
            inputs = entity_messages(attrs.get(ENTITY_INPUT), sid, "in", "user")
        if OUTPUT_MESSAGES in attrs:
            outputs = convert_messages(attrs.get(OUTPUT_MESSAGES), sid, "out", "assistant")
        else:
            outputs = entity_messages(attrs.get(ENTITY_OUTPUT), sid, "out", "assistant")
        return AgentInfo(
            name=as_str(attrs.get("gen_ai.agent.name")),
            convention_name=as_str(attrs.get(ENTITY_NAME)) or as_str(attrs.get(WORKFLOW_NAME)),
            input_messages=inputs,
            output_messages=_new_answers(inputs, outputs),
            system_messages=convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid),
            model=_model(attrs) or lc_model(_entity_lists(attrs.get(ENTITY_OUTPUT))),
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        """Vector-DB spans (chroma, pinecone, qdrant...) record each hit as a ``db.query.result`` event."""
        texts = []
        for event in span.events:
            if event.name in _VECTOR_EVENTS:
                text = event.attributes.get("db.query.result.document")
                if isinstance(text, str) and text:
                    texts.append(text)
        return texts
