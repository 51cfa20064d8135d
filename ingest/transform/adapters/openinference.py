"""OpenInference (Arize Phoenix) spans: ``openinference.span.kind`` plus flattened ``llm.*`` keys.

See docs/conventions/openinference.md (attribute by attribute) and FIELD-GUIDE section 3. The
flattened message keys are read by ``openinference_messages``; the raw ``input.value`` /
``output.value`` payloads, often the only record of a turn or an answer, by
``openinference_payloads`` (whole payloads) and ``openinference_values`` (their messages and
content blocks); a model call's answer is put together from all of them by ``openinference_answer``.

Run roots: an AGENT span, and also the topmost CHAIN of the OpenInference spans (LangChain,
LangGraph, LlamaIndex query engines and the AI SDK converter record the whole request as a CHAIN with
no AGENT), also when it sits under a span of another instrumentation (a web server's request span)
or under a parent from another service (``top_role``). A trace of retrievals only is made into runs
by the transform; ``agent_info`` of a RETRIEVER span gives its query as the run's input. AGENT-kind
spans that are not agents are demoted: HTTP server spans and Mastra 0.x helper methods
(``agent.fetchMemory``...), which openinference-mastra marks AGENT, and LangGraph node spans, which
the LangChain instrumentor marks AGENT when a node's name contains "agent" (the graph, not each
node, is the run).

Converters (pydantic-ai's OpenInferenceSpanProcessor, openinference-vercel/-mastra) add the
OpenInference keys to spans that keep their own: this adapter claims those spans first, so it reads
the ``gen_ai.*`` messages too and prefers them, since the OpenInference copies are lossy (thinking
parts dropped, sparse tool-call indices).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import (
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
    has_any_key,
    has_key_prefix,
)
from tracescore.ingest.transform.adapters.genai_semconv import (
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
    convert_messages,
    convert_system_instructions,
    usage_of,
)
from tracescore.ingest.transform.adapters.openinference_answer import call_answer, output_message
from tracescore.ingest.transform.adapters.openinference_messages import (
    choice_count,
    choice_messages,
    get,
    indexed,
    merge_answer,
    oi_messages,
    prompt_messages,
    unflatten,
)
from tracescore.ingest.transform.adapters.openinference_payloads import request_messages, response_message
from tracescore.ingest.transform.adapters.openinference_values import (
    lenient,
    unwrap_tool_output,
)
from tracescore.ingest.transform.jsonvalue import as_int, as_str, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Span, Usage
from tracescore.schemas.agent_run import Role
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue

SPAN_KIND = "openinference.span.kind"

_JUNK_MODELS = frozenset({"unknown", "none", "null", "undefined", "default"})
# Mastra 0.x methods that are the agent's run; its other ``agent.*`` method spans are helpers.
_MASTRA_ENTRY_METHODS = frozenset(
    {"stream", "generate", "streamVNext", "generateVNext", "streamLegacy", "generateLegacy", "network"}
)
# Attributes that name the agent when no agent-name attribute does: the agent graph's node id (CrewAI,
# the OpenAI Agents SDK), Mastra 0.x's component name, the AI SDK's function id (converted spans).
_CONVENTION_NAME_KEYS = ("graph.node.id", "componentName", "ai.telemetry.functionId")
# LlamaIndex's agent workflow events (AgentInput, AgentSetup, AgentOutput) name the agent they are for;
# the step spans record them only as Python reprs in input.value / output.value.
_CURRENT_AGENT = re.compile(r"current_agent_name='([^'\\]+)'")
# Keys that carry a model call's own record; an LLM-kind span with none of them is judged by its values.
_CALL_KEY_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "llm.prompts", "llm.token_count.")
_LLAMA_INDEX_SCOPE = "openinference.instrumentation.llama_index"
_HTTP_SERVER_KEYS = ("http.method", "http.request.method", "http.route", "http.target", "url.path")
_JSON_SCHEMA_KEYS = frozenset({"properties", "$schema", "required"})


def _kind(span: Span) -> str:
    kind = span.attributes.get(SPAN_KIND)
    return kind.strip().upper() if isinstance(kind, str) else ""


def _first_str(attributes: Mapping[str, AttributeValue], *keys: str) -> str | None:
    return next((v for k in keys if (v := as_str(attributes.get(k))) and not is_placeholder(v)), None)


def _not_an_agent(span: Span) -> bool:
    """AGENT-kind spans that are not an agent's run (see the module docstring)."""
    attrs = span.attributes
    if has_any_key(attrs, _HTTP_SERVER_KEYS):
        return True
    method = span.name[len("agent.") :] if span.name.startswith("agent.") else None
    mastra_keys = "componentName" in attrs or has_key_prefix(attrs, f"{span.name}.")
    if method and method not in _MASTRA_ENTRY_METHODS and mastra_keys:
        return True
    metadata = lenient(attrs.get("metadata"))
    return isinstance(metadata, dict) and "langgraph_node" in metadata


def _records_a_call(span: Span) -> bool:
    """False for an LLM-kind span that recorded values but no message of a model call.

    LlamaIndex's instrumentor marks every method of an LLM class LLM: ``_prepare_chat_with_tools``
    only builds the request (its values are Python reprs of the method's arguments), and the call
    itself is the sibling ``achat`` / ``astream_chat`` span. A span whose content capture is off
    (no values, or redacted ones) still is a call.
    """
    attrs = span.attributes
    if has_key_prefix(attrs, _CALL_KEY_PREFIXES) or INPUT_MESSAGES in attrs:
        return True
    values = [attrs.get(key) for key in ("input.value", "output.value")]
    if not any(v not in (None, "") and not is_placeholder(v) for v in values):
        return True
    system, inputs = request_messages(values[0], span.span_id)
    return bool(system or inputs) or output_message(attrs, f"{span.span_id}-out-0") is not None


def _io_value(attributes: Mapping[str, AttributeValue], io: str) -> AttributeValue:
    """``input.value`` / ``output.value``: text when its mime type says so, else JSON read leniently."""
    value = attributes.get(f"{io}.value")
    if value is None or value == "" or is_placeholder(value):
        return None
    if isinstance(value, str) and attributes.get(f"{io}.mime_type") == "text/plain":
        return value
    return lenient(value)


def _model(attributes: Mapping[str, AttributeValue]) -> str | None:
    """Request model first (``llm.model_name`` is the response's when the provider reports one)."""
    params = lenient(attributes.get("llm.invocation_parameters"))
    params = params if isinstance(params, dict) else {}
    candidates = (
        attributes.get("llm.request.model_name"),
        attributes.get("gen_ai.request.model"),
        *(params.get(k) for k in ("model", "model_name", "model_id", "modelId")),
        attributes.get("llm.model_name"),
        attributes.get("llm.response.model_name"),
        attributes.get("gen_ai.response.model"),
        attributes.get("model_name"),
    )
    for value in candidates:
        if isinstance(value, str) and (name := value.strip()) and name.lower() not in _JUNK_MODELS:
            return name
    return None


def _usage(attributes: Mapping[str, AttributeValue]) -> Usage:
    prompt = as_int(attributes.get("llm.token_count.prompt"))
    completion = as_int(attributes.get("llm.token_count.completion"))
    if prompt <= 0 and completion <= 0:
        return usage_of(attributes)
    return Usage(input_tokens=max(0, prompt), output_tokens=max(0, completion))


def _documents(attributes: Mapping[str, AttributeValue]) -> list[str]:
    """Texts of ``retrieval.documents.{i}.document.content``, else of the output's documents."""
    tree = unflatten(attributes, "retrieval.documents")
    texts = [clean_text(get(node, "document", "content")) for _, node in indexed(tree)]
    if not any(texts):
        output = lenient(attributes.get("output.value"))
        docs = output.get("documents") if isinstance(output, dict) else None
        texts = [
            clean_text(next((d[k] for k in ("page_content", "content", "text") if k in d), None))
            for d in (docs if isinstance(docs, list) else [])
            if isinstance(d, dict)
        ]
    return [t for t in texts if t.strip()]


def _genai_messages(
    attributes: Mapping[str, AttributeValue], key: str, span_id: str, tag: str, role: Role
) -> list[Message]:
    """``gen_ai.*.messages`` beside the OpenInference keys, when they decode (else the copies win)."""
    parsed = parse_json_value(attributes.get(key))
    if not isinstance(parsed, list | dict):
        return []
    return convert_messages(parsed, span_id, tag, role)


def _pydantic_turn(
    attributes: Mapping[str, AttributeValue], span_id: str
) -> tuple[list[Message], list[Message] | None]:
    """pydantic-ai's agent span: the new turn and, via ``new_message_index``, the history."""
    messages = convert_messages(attributes.get("pydantic_ai.all_messages"), span_id, "all", "user")
    index = attributes.get("pydantic_ai.new_message_index")
    if not messages or index is None:
        return messages, None
    cut = min(max(as_int(index), 0), len(messages))
    turn: list[Message] = []
    for message in messages[cut:]:  # the user's message, not the tool results that follow it
        if message.role != "user" or not any(p.type == "text" for p in message.parts):
            break
        turn.append(message)
    return turn, messages[:cut]


class OpenInferenceAdapter(ConventionAdapter):
    name = "openinference"

    def claims(self, span: Span) -> bool:
        kind = span.attributes.get(SPAN_KIND)
        return isinstance(kind, str) and bool(kind.strip())

    def classify(self, span: Span) -> SpanRole:
        kind = _kind(span)
        if kind == "LLM":
            return SpanRole.LLM if _records_a_call(span) else SpanRole.OTHER
        if kind == "TOOL":
            return SpanRole.TOOL
        if kind == "AGENT":
            return SpanRole.OTHER if _not_an_agent(span) else SpanRole.AGENT
        if kind == "CHAIN":
            return SpanRole.OTHER  # a step of the chain above it; the topmost one: see top_role
        if kind == "RETRIEVER":
            return SpanRole.RETRIEVER  # a trace of retrievals only: the transform makes each a run
        # EMBEDDING, RERANKER, GUARDRAIL, EVALUATOR, PROMPT, UNKNOWN: not part of the agent's turn.
        return SpanRole.OTHER

    def top_role(self, span: Span) -> SpanRole | None:
        """The role of a span with no OpenInference span above it: a CHAIN there is the request."""
        return SpanRole.AGENT if _kind(span) == "CHAIN" else None

    def acting_agent(self, span: Span) -> str | None:
        if _kind(span) != "CHAIN":
            return None
        for key in ("input.value", "output.value"):
            value = span.attributes.get(key)
            if isinstance(value, str) and (found := _CURRENT_AGENT.search(value)):
                return found.group(1)
        return None

    def llm_call(self, span: Span) -> LlmCall:
        attrs, sid = span.attributes, span.span_id
        inputs = _genai_messages(attrs, INPUT_MESSAGES, sid, "in", "user")
        inputs = inputs or oi_messages(attrs, "llm.input_messages", sid, "in", "user")
        inputs = inputs or prompt_messages(attrs, sid)
        system = convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid)
        # The raw request repeats the prompt: it is parsed only for what the keys above lack.
        if not inputs or (not system and not any(m.role == "system" for m in inputs)):
            raw_system, raw_inputs = request_messages(attrs.get("input.value"), sid)
            if not inputs:
                inputs = raw_inputs
            if not system and not any(m.role == "system" for m in inputs):
                system = raw_system  # e.g. Anthropic's ``system=`` is only in the raw request
        outputs = _genai_messages(attrs, OUTPUT_MESSAGES, sid, "out", "assistant")
        if not outputs:
            outputs = oi_messages(attrs, "llm.output_messages", sid, "out", "assistant")
            outputs = outputs or choice_messages(attrs, sid)
            if choice_count(attrs) == 1:  # several output messages are one answer's items
                outputs = [m for m in [merge_answer(outputs, f"{sid}-out-0")] if m]
        if len(outputs) <= 1:
            llama_index = span.scope_name == _LLAMA_INDEX_SCOPE
            answer = call_answer(
                outputs[0] if outputs else None, attrs, f"{sid}-out-0", llama_index=llama_index
            )
            outputs = [answer] if answer else []
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
        call_id = _first_str(attrs, "tool_call.id", "tool.id", "gen_ai.tool.call.id")
        args = _io_value(attrs, "input")
        if isinstance(args, dict) and args.get("type") == "tool_call" and "args" in args:
            call_id, args = call_id or as_str(args.get("id")), args["args"]  # a LangChain ToolCall
        elif isinstance(args, dict) and isinstance(args.get("kwargs"), dict) and "args" in args:
            args = args["kwargs"] or args["args"]  # smolagents-style {args, kwargs}
        if args is None:
            args = lenient(attrs.get("gen_ai.tool.call.arguments"))
        parameters = lenient(attrs.get("tool.parameters"))
        if args is None and not (isinstance(parameters, dict) and _JSON_SCHEMA_KEYS & set(parameters)):
            args = parameters  # converters put the call's arguments there, instrumentors a schema
        result = _io_value(attrs, "output")
        if result is None and not is_placeholder(attrs.get("output.value")):
            result = lenient(attrs.get("gen_ai.tool.call.result"))
        is_error = span.status_code == STATUS_ERROR
        if isinstance(result, dict) and result.get("type") == "tool":  # LangChain ToolMessage dump
            call_id = call_id or as_str(result.get("tool_call_id"))
            is_error = is_error or result.get("status") == "error"
        result = plain_json(unwrap_tool_output(result))
        if result is None and is_error:
            messages = [e.attributes.get("exception.message") for e in span.events if e.name == "exception"]
            result = span.status_message or next((m for m in messages if isinstance(m, str) and m), None)
        return ToolExecution(
            call_id=call_id,
            name=_first_str(attrs, "tool.name", "gen_ai.tool.name") or span.name or None,
            args=None if args is None else plain_json(args),
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attrs, sid, kind = span.attributes, span.span_id, _kind(span)
        name = _first_str(attrs, "agent.name", "gen_ai.agent.name", "agent_name")
        turn, history = _pydantic_turn(attrs, sid)
        system, inputs = request_messages(attrs.get("input.value"), sid)
        if re.fullmatch(r"agent\.\w+", span.name) and not inputs:  # Mastra 0.x: agent.stream(messages)
            system, inputs = request_messages(attrs.get(f"{span.name}.argument.0"), sid)
        answer = (
            output_message(attrs, f"{sid}-out-0", keep_unknown=kind != "RETRIEVER")
            or response_message(attrs.get("final_result"), f"{sid}-out-0", keep_unknown=True)
            or response_message(attrs.get(f"{span.name}.result"), f"{sid}-out-0")
        )
        if answer is None:
            outputs = convert_messages(attrs.get(OUTPUT_MESSAGES), sid, "out", "assistant")
        else:
            outputs = [answer]
        return AgentInfo(
            name=name,
            convention_name=_first_str(attrs, *_CONVENTION_NAME_KEYS),
            span_name=span.name if kind == "AGENT" and span.name else None,
            input_messages=turn or inputs,
            output_messages=outputs,
            system_messages=[*convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), sid), *system],
            model=_model(attrs),
            remembered_messages=history,
            # A retriever's documents reach the run through retrieved_texts, not twice.
            context=[] if kind == "RETRIEVER" else _documents(attrs),
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        return _documents(span.attributes)
