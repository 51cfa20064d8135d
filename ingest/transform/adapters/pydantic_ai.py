"""Pydantic AI / Logfire instrumentation (FIELD-GUIDE section 6; docs/conventions/pydantic_ai_logfire.md).

pydantic-ai writes three span kinds, in instrumentation formats 1-6:

- the agent run (``invoke_agent {agent}``; ``agent run`` up to format 2) holds the whole conversation
  (``pydantic_ai.all_messages``; format 1: ``all_messages_events``), where this run's messages start
  (``pydantic_ai.new_message_index``), the instructions and ``final_result``; its usage attributes are
  run totals and never counted;
- one ``chat {model}`` span per model request, with ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` (format 1: an ``events`` attribute or log records);
- tool spans ``execute_tool {tool}`` (``running tool`` up to format 2, with ``tool_arguments`` /
  ``tool_response``).

Spans with ``logfire.*`` keys but no pydantic-ai marker (Logfire's own LLM integrations, which follow
the GenAI semantic conventions) are claimed too and read with the generic adapter's code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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
from tracescore.ingest.transform.adapters.genai_semconv import (
    GenAiSemconvAdapter,
    convert_system_instructions,
    invoked_agent,
    usage_of,
)
from tracescore.ingest.transform.adapters.pydantic_ai_messages import (
    choice_message,
    convert_otel_messages,
    event_messages,
    is_retry_prompt,
    is_user_turn,
    looks_like_event_list,
    parse_messages,
    request_groups,
    span_event_dicts,
)
from tracescore.ingest.transform.jsonvalue import (
    as_int,
    as_list,
    as_str,
    as_text,
    parse_json_value,
    plain_json,
)
from tracescore.schemas import Message, Span
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

OPERATION = "gen_ai.operation.name"
ALL_MESSAGES = "pydantic_ai.all_messages"
ALL_MESSAGES_EVENTS = "all_messages_events"  # format 1
NEW_MESSAGE_INDEX = "pydantic_ai.new_message_index"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
DEFERRAL = "pydantic_ai.tool.deferral.name"
FAILURE_STAGE = "pydantic_ai.tool.failure_stage"

_SCOPE_PREFIXES = ("pydantic-ai", "pydantic_ai")
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
# Span names of formats 1-2 and of output-function runs.
_TOOL_SPAN_NAMES = frozenset({"running tool", "running output function"})
_PYDANTIC_SPAN_NAMES = frozenset({"agent run", "running tools", *_TOOL_SPAN_NAMES})
# Keys of conventions read by adapters after this one: a span carrying them is theirs even when a
# Logfire span processor added logfire.* keys to it.
_FOREIGN_PREFIXES = ("traceloop.", "gen_ai.prompt.", "gen_ai.completion.", "llm.", "ai.", "mastra.")
# Logfire's log level number for errors (an exception recorded on the span).
_LOGFIRE_ERROR_LEVEL = 17
_JUNK_MODELS = frozenset({"unknown", "none", "null", "undefined"})
# Logfire's own LLM integrations (instrument_openai, ...) follow the GenAI semantic conventions:
# their spans are read by the generic adapter's code.
_SEMCONV = GenAiSemconvAdapter()


def _model(*values: AttributeValue) -> str | None:
    for value in values:
        text = as_str(value)
        if text and text.strip().lower() not in _JUNK_MODELS:
            return text
    return None


def _is_agent(span: Span) -> bool:
    attrs = span.attributes
    return (
        ALL_MESSAGES in attrs
        or ALL_MESSAGES_EVENTS in attrs
        or attrs.get(OPERATION) == "invoke_agent"
        or span.name == "agent run"
        or span.name.startswith("invoke_agent")
    )


def _is_tool(span: Span) -> bool:
    attrs = span.attributes
    if attrs.get(OPERATION) == "execute_tool" or span.name.startswith("execute_tool"):
        return True
    if span.name in _TOOL_SPAN_NAMES:
        return True
    return "gen_ai.tool.name" in attrs and any(
        k in attrs for k in ("tool_arguments", "tool_response", "gen_ai.tool.call.id")
    )


def _is_llm(span: Span) -> bool:
    attrs = span.attributes
    if as_str(attrs.get(OPERATION)) in _LLM_OPERATIONS:
        return True
    return span.name.startswith("chat ") and (
        "model_request_parameters" in attrs or looks_like_event_list(attrs.get("events"))
    )


@dataclass
class _Split:
    """An agent span's conversation, cut where this run's messages start."""

    system: list[Message] = field(default_factory=list)
    remembered: list[Message] | None = None
    turn: list[Message] = field(default_factory=list)
    # This run's messages after the new turn (the model's steps, tool results).
    later: list[Message] = field(default_factory=list)


def _cut_at_last_user_turn(messages: list[Message]) -> _Split:
    """When no index says where the run starts: the last message the user wrote is the new turn."""
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    at = max((i for i, m in enumerate(rest) if is_user_turn(m)), default=None)
    if at is None:
        return _Split(system=system, later=rest)
    return _Split(system=system, remembered=rest[:at], turn=[rest[at]], later=rest[at + 1 :])


def _split_otel(attrs: Mapping[str, AttributeValue], span_id: str) -> _Split:
    """Formats 2-6: ``pydantic_ai.all_messages`` cut at ``new_message_index`` (absent when 0)."""
    raws = parse_messages(attrs.get(ALL_MESSAGES))
    if not all(isinstance(m, dict) for m in raws):
        # Unreadable (cut by an attribute length limit): taken as the new input it would pass the
        # whole history off as the user's turn; the first model call's prompt is read instead.
        return _Split()
    groups = request_groups(raws)
    index = as_int(attrs.get(NEW_MESSAGE_INDEX)) if NEW_MESSAGE_INDEX in attrs else 0
    if not (0 <= index < len(groups)) or groups[index][0]:
        # The index does not land on a request (odd or inconsistent input): fall back to reading.
        return _cut_at_last_user_turn(convert_otel_messages(raws, f"{span_id}-all", "user"))
    history = convert_otel_messages([m for _, g in groups[:index] for m in g], f"{span_id}-hist", "user")
    turn = convert_otel_messages(groups[index][1], f"{span_id}-turn", "user")
    later = convert_otel_messages([m for _, g in groups[index + 1 :] for m in g], f"{span_id}-new", "user")
    return _Split(
        system=[m for m in (*history, *turn) if m.role == "system"],
        remembered=[m for m in history if m.role != "system"],
        turn=[m for m in turn if m.role != "system"],
        later=later,
    )


def _split_events(attrs: Mapping[str, AttributeValue], span_id: str) -> _Split:
    """Format 1: ``all_messages_events`` has no new-message index; the last user turn starts the run.

    Events of one ModelRequest share their ``gen_ai.message.index``: the whole request is the turn.
    """
    events: list[dict[str, AttributeValue]] = [
        dict(e) for e in as_list(attrs.get(ALL_MESSAGES_EVENTS)) if isinstance(e, dict)
    ]
    messages = event_messages(events, f"{span_id}-ev")
    indexed = [(i, m) for i, m in messages if m.role != "system"]
    system = [m for _, m in messages if m.role == "system"]
    at = max((k for k, (_, m) in enumerate(indexed) if is_user_turn(m)), default=None)
    if at is None:
        return _Split(system=system, later=[m for _, m in indexed])
    index = indexed[at][0]
    start = at
    while index is not None and start > 0 and indexed[start - 1][0] == index:
        start -= 1
    end = at + 1
    while index is not None and end < len(indexed) and indexed[end][0] == index:
        end += 1
    return _Split(
        system=system,
        remembered=[m for _, m in indexed[:start]],
        turn=[m for _, m in indexed[start:end]],
        later=[m for _, m in indexed[end:]],
    )


def _final_output(attrs: Mapping[str, AttributeValue], span_id: str, later: list[Message]) -> list[Message]:
    """The agent span's record of the run's answer, which the transform uses only when the last model
    call it has recorded no text (no chat spans, content capture off, an output-tool call last).

    A run that ended on text: its chat spans, when there are any, end on the same text, so these
    steps only stand in for chat spans that are missing. A run that ended otherwise (structured
    output ends in a call of the output tool) would have its steps repeated after the chat spans'
    ones: only ``final_result`` (the output, JSON for structured output) is added then.
    """
    answers = [m for m in later if m.role == "assistant"]
    if answers and answers[-1].content.strip():
        # The tool messages go along: they hold the results of the steps' calls (the transform joins
        # them by call id and does not make steps of them).
        return [m for m in later if m.role in ("assistant", "tool")]
    final = attrs.get("final_result")
    text = final if isinstance(final, str) else ("" if final is None else as_text(plain_json(final)))
    if not text.strip():
        return []
    return [make_message(f"{span_id}-final", "assistant", [make_part({"type": "text", "text": text})])]


def _exception_message(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            return as_str(event.attributes.get("exception.message"))
    return None


def _tool_name(span: Span) -> str | None:
    name = as_str(span.attributes.get("gen_ai.tool.name"))
    if name:
        return name
    if span.name.startswith("execute_tool "):
        return span.name.removeprefix("execute_tool ").strip() or None
    msg = as_str(span.attributes.get("logfire.msg")) or ""
    for prefix in ("running tool: ", "running output function: "):
        if msg.startswith(prefix):
            return msg.removeprefix(prefix).strip() or None
    return None


def _is_pydantic_ai(span: Span) -> bool:
    """Written by pydantic-ai: its instrumentation scope, or (scope lost) keys and names only it writes."""
    attrs = span.attributes
    if span.scope_name.startswith(_SCOPE_PREFIXES):
        return True
    if span.name in _PYDANTIC_SPAN_NAMES and any(
        k.startswith("logfire.") or k in ("agent_name", "model_name", "gen_ai.tool.name") for k in attrs
    ):
        return True
    if has_key_prefix(attrs, "pydantic_ai."):
        return True
    if ALL_MESSAGES_EVENTS in attrs or "model_request_parameters" in attrs:
        return True
    if "gen_ai.tool.name" in attrs and ("tool_arguments" in attrs or "tool_response" in attrs):
        return True
    if "final_result" in attrs and ("agent_name" in attrs or "gen_ai.agent.name" in attrs):
        return True
    if (as_str(attrs.get("logfire.msg")) or "").startswith(("running tool", "running output function")):
        return True
    return looks_like_event_list(attrs.get("events"))


class PydanticAiAdapter(ConventionAdapter):
    name = "pydantic_ai_logfire"

    def claims(self, span: Span) -> bool:
        attrs = span.attributes
        return _is_pydantic_ai(span) or (
            has_key_prefix(attrs, "logfire.") and not has_key_prefix(attrs, _FOREIGN_PREFIXES)
        )

    def classify(self, span: Span) -> SpanRole:
        if not _is_pydantic_ai(span):
            return _SEMCONV.classify(span)
        # Agent first: the format-1 agent span carries run-total gen_ai.usage.* keys and must never
        # be taken for a model call.
        if _is_agent(span):
            return SpanRole.AGENT
        if _is_tool(span):
            return SpanRole.TOOL
        if _is_llm(span):
            return SpanRole.LLM
        return SpanRole.OTHER

    def llm_call(self, span: Span) -> LlmCall:
        if not _is_pydantic_ai(span):
            return _SEMCONV.llm_call(span)
        attrs = span.attributes
        sid = span.span_id
        if INPUT_MESSAGES in attrs or OUTPUT_MESSAGES in attrs:
            inputs = convert_otel_messages(parse_messages(attrs.get(INPUT_MESSAGES)), f"{sid}-in", "user")
            outputs = convert_otel_messages(
                parse_messages(attrs.get(OUTPUT_MESSAGES)), f"{sid}-out", "assistant"
            )
        else:  # format 1
            events = span_event_dicts(span)
            inputs = [m for _, m in event_messages(events, f"{sid}-in")]
            outputs = choice_message(events, f"{sid}-out-0")
        return LlmCall(
            input_messages=inputs,
            output_messages=outputs,
            system_messages=convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid),
            model=_model(attrs.get("gen_ai.request.model"), attrs.get("gen_ai.response.model")),
            usage=usage_of(attrs),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attrs = span.attributes
        args = attrs.get("gen_ai.tool.call.arguments", attrs.get("tool_arguments"))
        result = plain_json(
            parse_json_value(attrs.get("gen_ai.tool.call.result", attrs.get("tool_response")))
        )
        # A deferred call (approval required, external execution) is control flow, not a failure,
        # although formats before 5 mark its span as an error.
        deferred = DEFERRAL in attrs
        is_error = not deferred and (
            span.status_code == STATUS_ERROR
            or as_int(attrs.get("logfire.level_num")) >= _LOGFIRE_ERROR_LEVEL
            or FAILURE_STAGE in attrs
            or is_retry_prompt(result)
        )
        if result is None and is_error:
            result = span.status_message or _exception_message(span)
        return ToolExecution(
            call_id=as_str(attrs.get("gen_ai.tool.call.id")),
            name=_tool_name(span),
            args=plain_json(parse_json_value(args)),
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        if not _is_pydantic_ai(span):
            return _SEMCONV.agent_info(span)
        attrs = span.attributes
        sid = span.span_id
        if ALL_MESSAGES in attrs:
            split = _split_otel(attrs, sid)
        elif ALL_MESSAGES_EVENTS in attrs:
            split = _split_events(attrs, sid)
        else:
            # No pydantic-ai history (run failed early, or a Logfire agent span of another library):
            # whatever semconv messages the span has; the transform cuts the new turn from them.
            split = _Split(
                turn=convert_otel_messages(parse_messages(attrs.get(INPUT_MESSAGES)), f"{sid}-in", "user"),
                later=convert_otel_messages(
                    parse_messages(attrs.get(OUTPUT_MESSAGES)), f"{sid}-out", "assistant"
                ),
            )
        return AgentInfo(
            name=as_str(attrs.get("gen_ai.agent.name")) or as_str(attrs.get("agent_name")),
            span_name=invoked_agent(span.name),
            input_messages=split.turn,
            output_messages=_final_output(attrs, sid, split.later),
            system_messages=[
                *convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid),
                *split.system,
            ],
            model=_model(attrs.get("model_name"), attrs.get("gen_ai.request.model")),
            remembered_messages=split.remembered,
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        # pydantic-ai has no retrieval spans; retrieval tools are ordinary tool calls.
        return []
