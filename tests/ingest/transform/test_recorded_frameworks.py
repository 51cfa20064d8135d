"""Runs of spans recorded from frameworks' own instrumentation (tests/fixtures/recorded, its scripts in
recorded/record): each recording is one agent run, and gives one faithful AgentRun.

Every expected value is read from the fixture's own span attributes (the model-call spans' messages,
the tool span's result, the agent span's name attribute), never from what the transform made of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ingest.decode import decode_logs
from ingest.transform import build_runs
from ingest.transform.adapters import SpanRole, adapter_for
from schemas import AgentRun, LogRecord, Span, ToolInvocation
from tests.support.fixture_files import RECORDED_DIR, load_recorded_spans
from tests.support.runs import only_run, texts

LLAMA_INDEX = "llama_index__function-agent"
OPENAI_AGENTS_OI = "openai_agents__openinference"
OPENAI_AGENTS_TRACELOOP = "openai_agents__traceloop"
CREWAI = "crewai__crew"
SK_AGENT = "semantic_kernel__python-agent"
SK_OLDER = "semantic_kernel__chat-completion-span-events"


def named(spans: list[Span], name: str) -> list[Span]:
    """The spans called ``name``, in start order."""
    return sorted((s for s in spans if s.name == name), key=lambda s: s.start_time_unix_nano)


def only(spans: list[Span], name: str) -> Span:
    [span] = named(spans, name)
    return span


def root(spans: list[Span]) -> Span:
    ids = {s.span_id for s in spans}
    [top] = [s for s in spans if s.parent_span_id not in ids]
    return top


def oi_message(span: Span, io: str, index: int) -> tuple[str, str]:
    """(role, content) of OpenInference's flattened ``llm.{io}_messages.{index}``."""
    prefix = f"llm.{io}_messages.{index}.message."
    return span.attributes[prefix + "role"], span.attributes.get(prefix + "content", "")


def oi_tool_call(span: Span, index: int = 0) -> tuple[str, str, Any]:
    """(id, name, arguments) of the first tool call in OpenInference's output message ``index``."""
    prefix = f"llm.output_messages.{index}.message.tool_calls.0.tool_call."
    attrs = span.attributes
    return (
        attrs[prefix + "id"],
        attrs[prefix + "function.name"],
        json.loads(attrs[prefix + "function.arguments"]),
    )


def invocation(run: AgentRun) -> ToolInvocation:
    [call] = [i for m in run.output for i in m.tool_invocations]
    return call


def check_run(
    run: AgentRun,
    *,
    system: str,
    question: str,
    answer: str,
    call: tuple[str, str, Any],
    result: Any,
    agent: str,
) -> None:
    """The run of one recording: the prompt, the answer, the one tool call with its result, the agent."""
    assert texts(run.input.system_messages) == [("system", system)]
    assert texts(run.input.input_messages) == [("user", question)]
    assert run.input.remembered_messages == []
    # Two model calls: the first asks for the tool, the second answers.
    assert [m.role for m in run.output] == ["assistant", "assistant"]
    assert run.output[-1].content == answer
    tool = invocation(run)
    assert (tool.tool_call_id, tool.tool_name, tool.args, tool.result, tool.state) == (*call, result, "result")
    assert run.output[0].tool_invocations == [tool]
    assert run.agent_name == agent
    assert not run.content_missing


def test_llama_index_function_agent_is_one_faithful_run_named_after_its_agent() -> None:
    spans = load_recorded_spans(LLAMA_INDEX)
    first, last = named(spans, "OpenAI.astream_chat")
    tool = json.loads(only(spans, "FunctionTool.acall").attributes["output.value"])
    # The agent's name is recorded only in the workflow events' reprs the step spans hold.
    setup = named(spans, "BaseWorkflowAgent.init_run")[0].attributes["output.value"]
    agent = re.search(r"current_agent_name='(\w+)'", setup)
    assert agent is not None

    run = only_run(build_runs(spans))
    assert run.span_id == only(spans, "FunctionAgent.run").span_id
    check_run(
        run,
        system=oi_message(first, "input", 0)[1],
        question=oi_message(first, "input", 1)[1],
        answer=oi_message(last, "output", 0)[1],
        call=oi_tool_call(first),
        result=tool["raw_output"],
        agent=agent.group(1),
    )
    # The second call's prompt replays the tool's result under the same call id.
    assert oi_message(last, "input", 3) == ("tool", tool["raw_output"])
    assert run.output[0].content == ""  # its output.value is "assistant: ", the role of an empty answer
    assert run.model == first.attributes["llm.model_name"]


def test_llama_index_request_preparing_llm_spans_are_no_model_calls() -> None:
    """``OpenAI._prepare_chat_with_tools`` is marked LLM but only builds the request: its values are
    Python reprs (``ChatMessage(role=<MessageRole.USER: 'user'>, ...)``), no message of a call."""
    spans = load_recorded_spans(LLAMA_INDEX)
    preparing = named(spans, "OpenAI._prepare_chat_with_tools")
    assert len(preparing) == 2
    for span in preparing:
        assert span.attributes["openinference.span.kind"] == "LLM"
        assert "ChatMessage(role=<MessageRole." in span.attributes["output.value"]
        adapter = adapter_for(span)
        assert adapter is not None and adapter.classify(span) is SpanRole.OTHER
    for span in named(spans, "OpenAI.astream_chat"):
        adapter = adapter_for(span)
        assert adapter is not None and adapter.classify(span) is SpanRole.LLM
    # No repr became a message anywhere in the run.
    run = only_run(build_runs(spans))
    messages = [*run.input.system_messages, *run.input.input_messages, *run.output]
    assert not any("MessageRole" in m.content or "StopEvent" in m.content for m in messages)


def _responses_call(span: Span) -> tuple[str, str, Any]:
    return oi_tool_call(span)


def test_openai_agents_openinference_run_is_named_after_the_inner_agent_not_its_workflow() -> None:
    spans = load_recorded_spans(OPENAI_AGENTS_OI)
    workflow = root(spans)
    assert (workflow.name, workflow.attributes["openinference.span.kind"]) == ("Agent workflow", "AGENT")
    inner = [s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT" and s is not workflow]
    [agent] = inner
    first, last = named(spans, "response")

    run = only_run(build_runs(spans))
    assert run.span_id == workflow.span_id
    check_run(
        run,
        system=oi_message(first, "input", 0)[1],
        question=oi_message(first, "input", 1)[1],
        answer=oi_message(last, "output", 0)[1],
        call=oi_tool_call(first),
        result=only(spans, "get_weather").attributes["output.value"],
        agent=agent.attributes["agent.name"],
    )


def _semconv_messages(span: Span, key: str) -> list[Mapping[str, Any]]:
    messages: list[Mapping[str, Any]] = json.loads(span.attributes[key])
    return messages


def _semconv_text(message: Mapping[str, Any]) -> str:
    [part] = message["parts"]
    return str(part["content"])


def test_openai_agents_traceloop_run_is_named_after_the_agent_not_its_workflow() -> None:
    spans = load_recorded_spans(OPENAI_AGENTS_TRACELOOP)
    workflow = root(spans)
    assert workflow.attributes["traceloop.span.kind"] == "workflow"
    agent = only(spans, "weather_agent.agent")
    first, last = named(spans, "openai.response")
    prompt = _semconv_messages(first, "gen_ai.input.messages")
    [asked] = _semconv_messages(first, "gen_ai.output.messages")
    [call] = asked["parts"]
    [answered] = _semconv_messages(last, "gen_ai.output.messages")

    run = only_run(build_runs(spans))
    assert run.span_id == workflow.span_id
    check_run(
        run,
        system=_semconv_text(prompt[0]),
        question=_semconv_text(prompt[1]),
        answer=_semconv_text(answered),
        call=(call["id"], call["name"], call["arguments"]),
        result=only(spans, "get_weather.tool").attributes["gen_ai.tool.call.result"],
        agent=agent.attributes["gen_ai.agent.name"],
    )
    assert workflow.attributes["traceloop.workflow.name"] != run.agent_name


def test_crewai_run_is_named_after_the_agent_node_not_the_method_span() -> None:
    spans = load_recorded_spans(CREWAI)
    [agent] = [s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT"]
    assert agent.name.endswith("._execute_core")
    first, last = named(spans, "ChatCompletion")

    run = only_run(build_runs(spans))
    assert run.span_id == root(spans).span_id  # the crew's kickoff holds the one agent
    check_run(
        run,
        system=oi_message(first, "input", 0)[1],
        question=oi_message(first, "input", 1)[1],
        answer=oi_message(last, "output", 0)[1],
        call=oi_tool_call(first),
        result=only(spans, "get_weather.run").attributes["output.value"],
        agent=agent.attributes["graph.node.id"],
    )


def _sk_logs(name: str) -> list[LogRecord]:
    batch = decode_logs("otlp_json", (RECORDED_DIR / f"{name}.logs.json").read_bytes())
    assert not batch.errors
    return batch.logs


def _bodies(records: list[LogRecord], event: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in records if r.attributes.get("event.name") == event]
