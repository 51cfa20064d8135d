"""OpenTelemetry GenAI semantic conventions, every generation (v1.26 to v1.41).

Spans are named by ``gen_ai.operation.name`` (``invoke_agent``, ``chat``, ``execute_tool``,
``retrieval``, ...). Their content is, by generation: the v1.37+ attributes
``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` (read in
``genai_semconv_messages``), or events and correlated log records (v1.26-v1.36, and the v1.37
operation-details event; read in ``genai_events``); attributes win over events when both exist.
Older instrumentations without ``gen_ai.operation.name`` (spans named ``chat gpt-4o`` carrying
``gen_ai.system`` and message events) are read as model calls. See FIELD-GUIDE.md section 1 and
docs/conventions/genai_semconv.md.

The message helpers are re-exported here: other conventions that adopted these attributes reuse them.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
    has_key_prefix,
    make_message,
    make_part,
)
from tracescore.ingest.transform.adapters.genai_events import (
    EventContent,
    completion_messages,
    has_content_events,
    prompt_messages,
    read_events,
    tool_from_events,
)
from tracescore.ingest.transform.adapters.genai_semconv_messages import (
    content_parts,
    convert_message,
    convert_messages,
    convert_part,
    convert_system_instructions,
    plain_result,
    tool_call_parts,
)
from tracescore.ingest.transform.jsonvalue import (
    as_int,
    as_list,
    as_str,
    clean_text,
    parse_json_value,
    plain_json,
)
from tracescore.schemas import Message, Span, Usage
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

OPERATION = "gen_ai.operation.name"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
# v1.26-v1.27 content as span attributes (OpenLIT sets them beside its content events).
PROMPT = "gen_ai.prompt"
COMPLETION = "gen_ai.completion"
AGENT_INPUT = "gen_ai.agent.invocation_input"
AGENT_OUTPUT = "gen_ai.agent.invocation_output"
# The provider attribute before and after its v1.37 rename.
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system")

_ROLE_BY_OPERATION = {
    "invoke_agent": SpanRole.AGENT,
    "chat": SpanRole.LLM,
    "text_completion": SpanRole.LLM,
    "generate_content": SpanRole.LLM,
    # Semantic Kernel's names for the same model calls.
    "chat.completions": SpanRole.LLM,
    "text.completions": SpanRole.LLM,
    "chat.streaming_completions": SpanRole.LLM,
    "text.streaming_completions": SpanRole.LLM,
    "execute_tool": SpanRole.TOOL,
    "retrieval": SpanRole.RETRIEVER,
    # create_agent, embeddings, invoke_workflow and anything else: OTHER.
}
# Token counts under their v1.37+ names, pre-v1.27 names, and Semantic Kernel's early names. Cache and
# reasoning counts are parts of these totals, so they are not added again.
_INPUT_TOKEN_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.response.prompt_tokens",
)
_OUTPUT_TOKEN_KEYS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.response.completion_tokens",
)
# Model values that name no model (OpenLLMetry and some SDKs write them when the request had none).
_JUNK_MODELS = frozenset({"unknown", "none", "null", "n/a", "undefined", "default"})
# Where documents keep their text when a retriever records it (the v1.40 schema has only id and score).
_DOCUMENT_TEXT_KEYS = ("content", "text", "page_content")

__all__ = [
    "INPUT_MESSAGES",
    "OPERATION",
    "OUTPUT_MESSAGES",
    "SYSTEM_INSTRUCTIONS",
    "GenAiSemconvAdapter",
    "clean_text",
    "content_parts",
    "convert_message",
    "convert_messages",
    "convert_part",
    "convert_system_instructions",
    "invoked_agent",
    "model_of",
    "plain_result",
    "tool_call_parts",
    "usage_of",
]


def _first_int(attributes: Mapping[str, AttributeValue], keys: tuple[str, ...]) -> int:
    for key in keys:
        if key in attributes:
            return max(0, as_int(attributes[key]))  # Semantic Kernel writes -1 for "unknown"
    return 0


def usage_of(attributes: Mapping[str, AttributeValue]) -> Usage:
    return Usage(
        input_tokens=_first_int(attributes, _INPUT_TOKEN_KEYS),
        output_tokens=_first_int(attributes, _OUTPUT_TOKEN_KEYS),
    )


def _has_usage(attributes: Mapping[str, AttributeValue]) -> bool:
    return any(key in attributes for key in (*_INPUT_TOKEN_KEYS, *_OUTPUT_TOKEN_KEYS))


def _model(value: AttributeValue) -> str | None:
    model = as_str(value)
    return model if model and model.strip().lower() not in _JUNK_MODELS else None


def model_of(attributes: Mapping[str, AttributeValue]) -> str | None:
    return _model(attributes.get("gen_ai.request.model")) or _model(attributes.get("gen_ai.response.model"))


def invoked_agent(span_name: str) -> str | None:
    """The agent an ``invoke_agent {name}`` span is named after."""
    if not span_name.startswith("invoke_agent "):
        return None
    return span_name.removeprefix("invoke_agent ").strip() or None


def _operation(span: Span) -> str | None:
    """The operation: the attribute, else the first word of the span name (``execute_tool get_weather``)."""
    operation = span.attributes.get(OPERATION)
    if isinstance(operation, str):
        return operation
    first_word = span.name.split(" ", 1)[0]
    return first_word if first_word in _ROLE_BY_OPERATION else None


def _has_message_attributes(attributes: Mapping[str, AttributeValue]) -> bool:
    return INPUT_MESSAGES in attributes or OUTPUT_MESSAGES in attributes


def _is_unnamed_model_call(span: Span) -> bool:
    """A span without ``gen_ai.operation.name`` that an older instrumentation wrote for a model call.

    It names its provider (``gen_ai.system``) and carries content, usage or the model, or it carries
    message events and names the model that answered (Semantic Kernel's older ``chat_completion``
    span: ``gen_ai.response.model`` and the ``gen_ai.*.message`` / ``gen_ai.choice`` events only).
    Message events alone do not make a model call (Strands' ``execute_event_loop_cycle`` carries
    them too, and no model).
    """
    attributes = span.attributes
    if _has_message_attributes(attributes):
        return True
    if model_of(attributes) is not None and has_content_events(span):
        return True
    if not any(isinstance(attributes.get(key), str) for key in PROVIDER_KEYS):
        return False
    return (
        has_content_events(span)
        or isinstance(attributes.get(PROMPT), str)
        or _has_usage(attributes)
        or "gen_ai.request.model" in attributes
        or "gen_ai.response.model" in attributes
    )


class GenAiSemconvAdapter(ConventionAdapter):
    name = "genai_semconv"

    def claims(self, span: Span) -> bool:
        if isinstance(span.attributes.get(OPERATION), str):
            return True
        if _operation(span) is not None and has_key_prefix(span.attributes, "gen_ai."):
            return True
        return _is_unnamed_model_call(span)

    def classify(self, span: Span) -> SpanRole:
        operation = _operation(span)
        if operation is not None:
            return _ROLE_BY_OPERATION.get(operation, SpanRole.OTHER)
        if isinstance(span.attributes.get(OPERATION), str):
            return SpanRole.OTHER
        return SpanRole.LLM if _is_unnamed_model_call(span) else SpanRole.OTHER

    def _content(self, span: Span) -> tuple[list[Message], list[Message], list[Message], EventContent]:
        """Input, output and system messages: attributes first, the span's events for what they lack."""
        attributes, sid = span.attributes, span.span_id
        inputs = convert_messages(attributes.get(INPUT_MESSAGES), sid, "in", "user")
        outputs = convert_messages(attributes.get(OUTPUT_MESSAGES), sid, "out", "assistant")
        system = convert_system_instructions(attributes.get(SYSTEM_INSTRUCTIONS), sid)
        events = EventContent()
        if span.events and not (inputs and outputs and system):
            events = read_events(span)
        inputs = inputs or events.input_messages
        outputs = outputs or events.output_messages
        if not inputs and isinstance(attributes.get(PROMPT), str):
            inputs = prompt_messages(attributes[PROMPT], sid)
        if not outputs and isinstance(attributes.get(COMPLETION), str):
            outputs = completion_messages(attributes[COMPLETION], sid)
        return inputs, outputs, system or events.system_messages, events

    def llm_call(self, span: Span) -> LlmCall:
        attributes = span.attributes
        inputs, outputs, system, events = self._content(span)
        return LlmCall(
            input_messages=inputs,
            output_messages=outputs,
            system_messages=system,
            model=model_of(attributes) or model_of(events.details),
            usage=usage_of(attributes if _has_usage(attributes) else events.details),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attributes = span.attributes
        from_events = tool_from_events(span) if span.events else None
        is_error = span.status_code == STATUS_ERROR or as_str(attributes.get("gen_ai.tool.status")) == "error"
        args: AttributeValue
        result: AttributeValue
        if "gen_ai.tool.call.arguments" in attributes:
            args = plain_json(parse_json_value(attributes["gen_ai.tool.call.arguments"]))
        else:
            args = from_events.args if from_events else None
        if "gen_ai.tool.call.result" in attributes:
            result = plain_result(attributes["gen_ai.tool.call.result"])
        else:
            result = from_events.result if from_events else None
        if result is None and is_error:
            result = span.status_message or as_str(attributes.get("error.type"))
        name = as_str(attributes.get("gen_ai.tool.name")) or (from_events.name if from_events else None)
        if name is None and span.name.startswith("execute_tool "):
            name = span.name.removeprefix("execute_tool ").strip() or None
        call_id = as_str(attributes.get("gen_ai.tool.call.id")) or (
            from_events.call_id if from_events else None
        )
        return ToolExecution(
            call_id=call_id,
            name=name,
            args=None if isinstance(args, str) and not clean_text(args) else args,
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attributes = span.attributes
        if self.classify(span) is SpanRole.RETRIEVER:
            # Not read by the transform today (a retriever is no run root); the query is the input a
            # retrieval-only trace would have if it became a run (its documents come from retrieved_texts).
            query = clean_text(attributes.get("gen_ai.retrieval.query.text"))
            part = make_part({"type": "text", "text": query})
            return AgentInfo(
                input_messages=[make_message(f"{span.span_id}-query", "user", [part])] if query else []
            )
        inputs, outputs, system, events = self._content(span)
        sid = span.span_id
        # Semantic Kernel Python agents up to 1.37: the invoke messages as JSON lists of OpenAI-shaped dicts.
        inputs = inputs or convert_messages(attributes.get(AGENT_INPUT), sid, "in", "user")
        outputs = outputs or convert_messages(attributes.get(AGENT_OUTPUT), sid, "out", "assistant")
        if not system:
            # Strands writes the agent's instructions as plain text beside the messages.
            system = convert_system_instructions(attributes.get("gen_ai.agent.system_prompt"), sid)
        return AgentInfo(
            name=as_str(attributes.get("gen_ai.agent.name")),
            span_name=invoked_agent(span.name),
            input_messages=inputs,
            output_messages=outputs,
            system_messages=system,
            model=model_of(attributes) or model_of(events.details),
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        texts: list[str] = []
        for doc in as_list(span.attributes.get("gen_ai.retrieval.documents")):
            if not isinstance(doc, dict):
                continue
            value = next((doc[key] for key in _DOCUMENT_TEXT_KEYS if key in doc), None)
            text = clean_text(value) if isinstance(value, str) else ""
            if text.strip():
                texts.append(text)
        return texts
