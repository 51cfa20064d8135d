"""Vercel AI SDK telemetry: the legacy ``ai.*`` spans (v3 – v7) and ``@ai-sdk/otel`` (AI SDK 7).

Legacy spans carry ``ai.operationId``: the root ``ai.generateText`` / ``ai.streamText`` /
``ai.generateObject`` / ``ai.streamObject`` is the agent, one ``….doGenerate`` / ``….doStream`` span
per model call (step), and ``ai.toolCall`` per tool execution (a child of the root, or of the step
in the v7 legacy integration). The root holds the caller's prompt (``ai.prompt`` =
``{system?, prompt?, messages?}``); call spans hold what was sent (``ai.prompt.messages``) and
answered (``ai.response.*``). Root usage is never read: in ai@5 it is only the last step's.

``@ai-sdk/otel`` writes GenAI semconv spans (``invoke_agent`` → ``step N`` (``agent_step``) →
``chat`` + ``execute_tool``), read with the semconv helpers; those spans are claimed (by their
instrumentation scope) so that the root's output, which repeats its steps, is not added to the
steps' own output, and so the new turn is split from the history as for legacy spans.
See FIELD-GUIDE.md section 5 and docs/conventions/vercel_ai_sdk.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import tracescore.ingest.transform.adapters.genai_semconv as semconv
import tracescore.ingest.transform.adapters.vercel_ai_messages as sdk
from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
    has_key_prefix,
)
from tracescore.ingest.transform.jsonvalue import as_int, as_str, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Span, Usage
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

OPERATION_ID = "ai.operationId"
_ROOT_OPERATIONS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_CALL_SUFFIXES = (".doGenerate", ".doStream")
_TOOL_OPERATION = "ai.toolCall"
# Tracer names of @ai-sdk/otel: "ai" in its first releases (like the legacy spans), then "gen_ai".
_OTEL_SCOPES = frozenset({"ai", "gen_ai"})
# Model ids that name no model.
_NO_MODEL = frozenset({"unknown", "none", "null"})

# (input, output) token keys, most specific first: gen_ai.* on call spans (prompt_/completion_ in
# v4), then ai.usage.* (inputTokens/outputTokens from v6, promptTokens/completionTokens before).
_INPUT_TOKENS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
)
_OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)

# The name the caller gives a generation (``experimental_telemetry.functionId``): the agent's name.
FUNCTION_ID = "ai.telemetry.functionId"


def operation_id(span: Span) -> str | None:
    """The legacy operation (``ai.generateText.doGenerate``...), from the attribute or the span name."""
    value = as_str(span.attributes.get(OPERATION_ID))
    if value and value.startswith("ai."):
        return value
    # Spans recorded with attributes filtered out keep their name, which is the operation id.
    if span.name.startswith("ai.") and has_key_prefix(span.attributes, "ai."):
        return span.name
    return None


def _is_otel_span(span: Span) -> bool:
    return span.scope_name in _OTEL_SCOPES and isinstance(span.attributes.get(semconv.OPERATION), str)


def _model(*values: AttributeValue) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip() and value.strip().lower() not in _NO_MODEL:
            return value
    return None


def _first_count(attributes: Mapping[str, AttributeValue], keys: tuple[str, ...]) -> int:
    for key in keys:
        if attributes.get(key) is not None:
            return max(0, as_int(attributes[key]))
    return 0


def _usage(attributes: Mapping[str, AttributeValue]) -> Usage:
    return Usage(
        input_tokens=_first_count(attributes, _INPUT_TOKENS),
        output_tokens=_first_count(attributes, _OUTPUT_TOKENS),
    )


def _conversation_info(
    names: tuple[str | None, str | None, str | None],
    model: str | None,
    messages: list[Message],
    system: list[Message],
    output: list[Message],
    prompt_recorded: bool,
) -> AgentInfo:
    """An AgentInfo whose new turn and history are split here (the SDK records both in one list).
    ``names``: the agent's own name attribute, the convention's, the span's (see AgentInfo)."""
    system = system + [m for m in messages if m.role == "system"]
    turn, history = sdk.split_turn([m for m in messages if m.role != "system"])
    return AgentInfo(
        name=names[0],
        convention_name=names[1],
        span_name=names[2],
        input_messages=turn,
        output_messages=output,
        system_messages=system,
        model=model,
        remembered_messages=history if prompt_recorded else None,
    )


class VercelAiAdapter(ConventionAdapter):
    name = "vercel_ai_sdk"

    def claims(self, span: Span) -> bool:
        return operation_id(span) is not None or _is_otel_span(span)

    def classify(self, span: Span) -> SpanRole:
        operation = operation_id(span)
        if operation is None:
            # @ai-sdk/otel: "agent_step" is no role of the semconv adapter, so it stays OTHER.
            return semconv.GenAiSemconvAdapter().classify(span)
        if operation in _ROOT_OPERATIONS:
            return SpanRole.AGENT
        if operation.endswith(_CALL_SUFFIXES) and operation.rsplit(".", 1)[0] in _ROOT_OPERATIONS:
            return SpanRole.LLM
        if operation == _TOOL_OPERATION:
            return SpanRole.TOOL
        return SpanRole.OTHER  # embed, embedMany, rerank, speech, transcription

    def llm_call(self, span: Span) -> LlmCall:
        attrs = span.attributes
        if operation_id(span) is None:
            return semconv.GenAiSemconvAdapter().llm_call(span)
        # A processor may have added semconv messages to the span: read them when ai.* are absent.
        if "ai.prompt.messages" in attrs:
            inputs = sdk.convert_messages(attrs["ai.prompt.messages"], span.span_id, "in")
        else:
            inputs = semconv.convert_messages(attrs.get(semconv.INPUT_MESSAGES), span.span_id, "in", "user")
        answer = sdk.response_message(attrs, f"{span.span_id}-out-0")
        if answer is not None:
            outputs = [answer]
        else:
            outputs = semconv.convert_messages(
                attrs.get(semconv.OUTPUT_MESSAGES), span.span_id, "out", "assistant"
            )
        return LlmCall(
            input_messages=inputs,
            output_messages=outputs,
            system_messages=semconv.convert_system_instructions(
                attrs.get(semconv.SYSTEM_INSTRUCTIONS), span.span_id
            ),
            model=_model(
                attrs.get("gen_ai.request.model"),
                attrs.get("ai.model.id"),
                attrs.get("ai.response.model"),
                attrs.get("gen_ai.response.model"),
            ),
            usage=_usage(attrs),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attrs = span.attributes
        if operation_id(span) is None:
            return semconv.GenAiSemconvAdapter().tool_execution(span)
        is_error = span.status_code == STATUS_ERROR
        # v5+ may write input/output beside (or instead of) args/result; string results are
        # double-encoded ('"result1"'), which parse_json_value undoes.
        raw_result = attrs.get("ai.toolCall.result", attrs.get("ai.toolCall.output"))
        result = plain_json(parse_json_value(raw_result))
        if result is None and is_error:
            result = span.status_message or _exception_message(span)
        args = plain_json(parse_json_value(attrs.get("ai.toolCall.args", attrs.get("ai.toolCall.input"))))
        return ToolExecution(
            call_id=as_str(attrs.get("ai.toolCall.id")),
            name=as_str(attrs.get("ai.toolCall.name")),
            args=args,
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attrs = span.attributes
        if operation_id(span) is None:
            return self._otel_agent_info(span)
        prompt = parse_json_value(attrs.get("ai.prompt"))
        prompt = prompt if isinstance(prompt, dict) else {}
        messages = self._prompt_messages(prompt, span.span_id)
        if not messages and semconv.INPUT_MESSAGES in attrs:
            messages = semconv.convert_messages(attrs[semconv.INPUT_MESSAGES], span.span_id, "in", "user")
        system = sdk.system_messages(prompt.get("system"), span.span_id) if prompt.get("system") else []
        if not system:
            system = semconv.convert_system_instructions(attrs.get(semconv.SYSTEM_INSTRUCTIONS), span.span_id)
        answer = sdk.response_message(attrs, f"{span.span_id}-out-0", text_only=True)
        return _conversation_info(
            names=(as_str(attrs.get("gen_ai.agent.name")), as_str(attrs.get(FUNCTION_ID)), None),
            model=_model(attrs.get("ai.model.id"), attrs.get("gen_ai.request.model")),
            messages=messages,
            system=system,
            output=[answer] if answer is not None else [],
            prompt_recorded=bool(messages),
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        return []

    @staticmethod
    def _prompt_messages(prompt: Mapping[str, AttributeValue], span_id: str) -> list[Message]:
        """``ai.prompt``'s ``prompt`` (a string, or from v5 a message list) then its ``messages``."""
        messages: list[Message] = []
        text_prompt = prompt.get("prompt")
        if isinstance(text_prompt, list):
            messages += sdk.convert_messages(text_prompt, span_id, "prompt")
        elif text_prompt is not None and (text := clean_text(text_prompt)):
            user_prompt: dict[str, AttributeValue] = {"role": "user", "content": text}
            messages.append(sdk.convert_message(user_prompt, f"{span_id}-prompt-0", "user"))
        if prompt.get("messages") is not None:
            messages += sdk.convert_messages(prompt["messages"], span_id, "in")
        return messages

    @staticmethod
    def _otel_agent_info(span: Span) -> AgentInfo:
        """``invoke_agent``: the semconv reading with the new turn split from the history, and no
        output: the root's ``gen_ai.output.messages`` repeats its steps (early releases merge every
        step into it, later ones copy the last step), and every step has its own ``chat`` span."""
        info = semconv.GenAiSemconvAdapter().agent_info(span)
        return _conversation_info(
            names=(info.name, info.convention_name, info.span_name),
            model=_model(info.model),
            messages=info.input_messages,
            system=info.system_messages,
            output=[],
            prompt_recorded=bool(info.input_messages),
        )


def _exception_message(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            message = as_str(event.attributes.get("exception.message"))
            if message:
                return message
    return None
