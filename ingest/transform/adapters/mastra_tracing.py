"""Adapter for Mastra's spans: 1.x observability, the 0.x otel-exporter, 0.x built-in telemetry.

See docs/conventions/mastra.md and FIELD-GUIDE section 4. Three generations of spans:

- 1.x (``mastra.span.type`` on every span): ``invoke_agent`` (agent_run) -> ``model_generation``
  -> ``agent_step`` (model_step) -> ``chat`` (model_inference) + ``execute_tool`` (tool_call).
  Exactly one span per model call is the exporter's ``chat`` span (it alone carries the model and
  the usage of that call): model_inference when the core emits it, else model_generation. The
  other model levels are aggregates or lossy summaries and stay OTHER, so usage is never counted
  twice; model_chunk spans are stream noise.
- otel-exporter 0.x: ``agent.{id}``, ``chat {model}`` / ``tool_selection {model}`` with raw Mastra
  JSON in ``gen_ai.prompt`` / ``gen_ai.completion``, ``tool.execute {tool}`` with
  ``gen_ai.tool.input/output/success``.
- 0.x telemetry: ``agent.stream`` / ``agent.generate`` spans (``agent.<method>.argument.N``,
  ``.result``, ``componentName``) around the AI SDK's ``ai.*`` spans, which the AI SDK adapter reads;
  the transform folds the pair into one run.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
    has_any_key,
    make_message,
)
from tracescore.ingest.transform.adapters.genai_semconv import usage_of
from tracescore.ingest.transform.adapters.mastra_messages import (
    convert_messages,
    split_new_turn,
    system_messages,
)
from tracescore.ingest.transform.jsonvalue import as_str, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Span
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue, JsonValue

SPAN_TYPE = "mastra.span.type"
OPERATION = "gen_ai.operation.name"

_TOOL_TYPES = frozenset({"tool_call", "mcp_tool_call", "client_tool_call", "provider_tool_call"})
# Mastra types that are the model call when the exporter marks them with a chat-like operation.
_MODEL_TYPES = frozenset({"model_generation", "llm_generation", "model_inference"})
_MODEL_OPERATIONS = frozenset({"chat", "tool_selection", "text_completion", "generate_content"})
# 0.x telemetry: the agent methods that are a run (agent.fetchMemory, agent.preExecute... are not).
_AGENT_METHODS = frozenset(
    {
        "agent.stream",
        "agent.generate",
        "agent.streamVNext",
        "agent.generateVNext",
        "agent.streamLegacy",
        "agent.generateLegacy",
    }
)
_OTEL_EXPORTER_0X_TOOL_KEYS = ("gen_ai.tool.input", "gen_ai.tool.output", "gen_ai.tool.success")
# Fallback names the exporters write when a value is missing.
_JUNK_NAMES = frozenset({"unknown", "undefined", "null"})


def _first(attrs: Mapping[str, AttributeValue], *keys: str) -> AttributeValue:
    return next((attrs[k] for k in keys if attrs.get(k) is not None), None)


def _name(value: object) -> str | None:
    text = as_str(value)
    return text if text and text.strip().lower() not in _JUNK_NAMES else None


def _operation(attrs: Mapping[str, AttributeValue]) -> str | None:
    value = attrs.get(OPERATION)
    return value if isinstance(value, str) else None


def _span_type(span: Span) -> str | None:
    kind = span.attributes.get(SPAN_TYPE)
    return kind.strip().lower() if isinstance(kind, str) else None


def _telemetry_method(span: Span) -> bool:
    """A 0.x ``@InstrumentClass`` span: ``agent.<method>`` with its arguments and result as keys."""
    attrs, name = span.attributes, span.name
    if not name.startswith("agent.") or "ai.operationId" in attrs:
        return False
    return "componentName" in attrs or f"{name}.result" in attrs or f"{name}.argument.0" in attrs


def _exporter_0x_agent(attrs: Mapping[str, AttributeValue]) -> bool:
    return _operation(attrs) == "agent.run" or (
        isinstance(attrs.get("agent.id"), str)
        and any(k in attrs for k in ("agent.max_steps", "agent.available_tools", "gen_ai.agent.id"))
    )


def _value(raw: AttributeValue) -> JsonValue:
    """A JSON attribute value; a redaction placeholder is no value."""
    parsed = plain_json(parse_json_value(raw))
    if isinstance(parsed, str) and parsed and not clean_text(parsed):
        return None
    return parsed


def _without_empty_text(messages: list[Message]) -> list[Message]:
    """The exporter writes an empty text part for a step that only called tools: it says nothing."""
    kept = []
    for message in messages:
        parts = [p for p in message.parts if p.type != "text" or (p.model_extra or {}).get("text")]
        changed = len(parts) < len(message.parts)
        kept.append(make_message(message.id, message.role, parts) if changed else message)
    return kept


def _model(attrs: Mapping[str, AttributeValue]) -> str | None:
    model = _name(attrs.get("gen_ai.request.model")) or _name(attrs.get("gen_ai.response.model"))
    if model is None:
        metadata = parse_json_value(attrs.get("mastra.metadata.modelMetadata"))
        model = _name(metadata.get("modelId")) if isinstance(metadata, dict) else None
    return model


class MastraAdapter(ConventionAdapter):
    name = "mastra"

    def claims(self, span: Span) -> bool:
        attrs = span.attributes
        if isinstance(attrs.get(SPAN_TYPE), str):
            return True
        if "ai.operationId" in attrs:
            # AI SDK spans inside a Mastra agent carry componentName too; the AI SDK adapter reads them.
            return False
        operation = _operation(attrs)
        return (
            _telemetry_method(span)
            or _exporter_0x_agent(attrs)
            or operation == "tool.execute"
            or has_any_key(attrs, _OTEL_EXPORTER_0X_TOOL_KEYS)
            # The 0.x exporter writes the raw prompt and completion under these bare (unindexed) keys.
            or (operation in _MODEL_OPERATIONS and ("gen_ai.prompt" in attrs or "gen_ai.completion" in attrs))
            or span.scope_name.startswith("@mastra/")
        )

    def classify(self, span: Span) -> SpanRole:
        attrs = span.attributes
        operation = _operation(attrs)
        kind = _span_type(span)
        if kind is not None:
            if kind == "agent_run":
                return SpanRole.AGENT
            if kind in _TOOL_TYPES:
                return SpanRole.TOOL
            # model_generation is the model call only when no model_inference span exists, and the
            # exporter then names it "chat"; otherwise it is the loop around the steps.
            model_call = operation in _MODEL_OPERATIONS or (operation is None and kind != "model_generation")
            return SpanRole.LLM if kind in _MODEL_TYPES and model_call else SpanRole.OTHER
        if operation in _MODEL_OPERATIONS:
            return SpanRole.LLM
        if operation == "tool.execute" or has_any_key(attrs, _OTEL_EXPORTER_0X_TOOL_KEYS):
            return SpanRole.TOOL
        if _exporter_0x_agent(attrs) or span.name in _AGENT_METHODS:
            return SpanRole.AGENT
        return SpanRole.OTHER

    def llm_call(self, span: Span) -> LlmCall:
        attrs, sid = span.attributes, span.span_id
        kind = _span_type(span) or "model_generation"
        inputs = _first(attrs, "gen_ai.input.messages", "gen_ai.prompt", f"mastra.{kind}.input", "input")
        outputs = _first(
            attrs, "gen_ai.output.messages", "gen_ai.completion", f"mastra.{kind}.output", "output"
        )
        return LlmCall(
            input_messages=convert_messages(inputs, sid, "in", "user"),
            output_messages=_without_empty_text(convert_messages(outputs, sid, "out", "assistant")),
            system_messages=system_messages(attrs.get("gen_ai.system_instructions"), sid),
            model=_model(attrs),
            usage=usage_of(attrs),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attrs = span.attributes
        kind = _span_type(span) or "tool_call"
        # 1.x: gen_ai.tool.call.*; 0.x exporter: gen_ai.tool.input/output and metadata keys copied flat.
        call_id = _first(attrs, "gen_ai.tool.call.id", "mastra.metadata.toolCallId", "toolCallId")
        name = _first(attrs, "gen_ai.tool.name", "mastra.metadata.toolName", "toolName")
        if not isinstance(name, str) or not name:
            # "execute_tool weatherTool" (1.x), "tool.execute calculator" (0.x exporter)
            name = span.name.split(" ", 1)[1] if " " in span.name else None
        args = _value(
            _first(attrs, "gen_ai.tool.call.arguments", "gen_ai.tool.input", f"mastra.{kind}.input")
        )
        result = _value(
            _first(attrs, "gen_ai.tool.call.result", "gen_ai.tool.output", f"mastra.{kind}.output")
        )
        is_error = span.status_code == STATUS_ERROR or attrs.get("gen_ai.tool.success") is False
        if result is None and is_error:
            error = as_str(attrs.get("error.message")) or span.status_message
            result = error or as_str(attrs.get("error.type"))
        return ToolExecution(
            call_id=as_str(call_id),
            name=_name(name),
            args=args,
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attrs, sid = span.attributes, span.span_id
        instructions: AttributeValue = attrs.get("gen_ai.system_instructions")
        if _telemetry_method(span):
            inputs = attrs.get(f"{span.name}.argument.0")
            options = parse_json_value(attrs.get(f"{span.name}.argument.1"))
            if instructions is None and isinstance(options, dict):
                instructions = options.get("instructions")
            result = parse_json_value(attrs.get(f"{span.name}.result"))
            # agent.stream returns before the answer exists: its result is a bag of pending promises.
            outputs = result if isinstance(result, str) or _holds_answer(result) else None
        else:
            inputs = _first(attrs, "mastra.agent_run.input", "gen_ai.input.messages", "input")
            outputs = _first(attrs, "mastra.agent_run.output", "gen_ai.output.messages", "output")
        messages = convert_messages(inputs, sid, "in", "user")
        earlier, new_turn = split_new_turn(messages)
        system = system_messages(instructions, sid) + [m for m in messages if m.role == "system"]
        answers = [m for m in convert_messages(outputs, sid, "out", "assistant") if m.role != "user"]
        return AgentInfo(
            name=_name(attrs.get("gen_ai.agent.name")),
            convention_name=_name(_first(attrs, "componentName", "gen_ai.agent.id", "agent.id")),
            input_messages=new_turn,
            output_messages=_without_empty_text(answers),
            system_messages=system,
            model=_model(attrs),
            # Nothing marks recalled memory in Mastra's agent input: the turns before the new one
            # are the history; without them the first model call's prompt tells it.
            remembered_messages=earlier or None,
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        return []


def _holds_answer(result: AttributeValue) -> bool:
    return isinstance(result, dict) and any(
        k in result for k in ("text", "toolCalls", "object", "reasoningText", "messages", "role")
    )
