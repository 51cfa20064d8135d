"""Runs of spans recorded from frameworks' own instrumentation (tests/fixtures/recorded, its scripts in
recorded/record): each recording is one agent run, and gives one faithful AgentRun.

Every expected value is read from the fixture's own span attributes (the model-call spans' messages,
the tool span's result, the agent span's name attribute), never from what the transform made of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.attribute_values import int_value, str_value
from tests.support.fixture_files import RECORDED_DIR, load_recorded_spans
from tests.support.runs import only_run, texts
from tests.support.serve import tracescore
from tracescore.ingest.decode import decode_logs
from tracescore.ingest.transform import build_runs
from tracescore.ingest.transform.adapters import GenAiSemconvAdapter, SpanRole, adapter_for
from tracescore.schemas import AgentRun, LogRecord, Span, ToolInvocation

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
    return str_value(span.attributes[prefix + "role"]), str_value(span.attributes.get(prefix + "content", ""))


def oi_tool_call(span: Span, index: int = 0) -> tuple[str, str, Any]:
    """(id, name, arguments) of the first tool call in OpenInference's output message ``index``."""
    prefix = f"llm.output_messages.{index}.message.tool_calls.0.tool_call."
    attrs = span.attributes
    return (
        str_value(attrs[prefix + "id"]),
        str_value(attrs[prefix + "function.name"]),
        json.loads(str_value(attrs[prefix + "function.arguments"])),
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
    joined = (tool.tool_call_id, tool.tool_name, tool.args, tool.result, tool.state)
    assert joined == (*call, result, "result")
    assert run.output[0].tool_invocations == [tool]
    assert run.agent_name == agent
    assert not run.content_missing


def check_openinference_run(run: AgentRun, first: Span, last: Span, *, result: Any, agent: str) -> None:
    """``check_run`` with the prompt, answer and tool call read from the first and last model-call
    spans' flattened OpenInference messages."""
    check_run(
        run,
        system=oi_message(first, "input", 0)[1],
        question=oi_message(first, "input", 1)[1],
        answer=oi_message(last, "output", 0)[1],
        call=oi_tool_call(first),
        result=result,
        agent=agent,
    )


def test_llama_index_function_agent_is_one_faithful_run_named_after_its_agent() -> None:
    spans = load_recorded_spans(LLAMA_INDEX)
    first, last = named(spans, "OpenAI.astream_chat")
    tool = json.loads(str_value(only(spans, "FunctionTool.acall").attributes["output.value"]))
    # The agent's name is recorded only in the workflow events' reprs the step spans hold.
    setup = str_value(named(spans, "BaseWorkflowAgent.init_run")[0].attributes["output.value"])
    agent = re.search(r"current_agent_name='(\w+)'", setup)
    assert agent is not None

    run = only_run(build_runs(spans))
    assert run.span_id == only(spans, "FunctionAgent.run").span_id
    check_openinference_run(run, first, last, result=tool["raw_output"], agent=agent.group(1))
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
        assert "ChatMessage(role=<MessageRole." in str_value(span.attributes["output.value"])
        adapter = adapter_for(span)
        assert adapter is not None and adapter.classify(span) is SpanRole.OTHER
    for span in named(spans, "OpenAI.astream_chat"):
        adapter = adapter_for(span)
        assert adapter is not None and adapter.classify(span) is SpanRole.LLM
    # No repr became a message anywhere in the run.
    run = only_run(build_runs(spans))
    messages = [*run.input.system_messages, *run.input.input_messages, *run.output]
    assert not any("MessageRole" in m.content or "StopEvent" in m.content for m in messages)


def test_openai_agents_openinference_run_is_named_after_the_inner_agent_not_its_workflow() -> None:
    spans = load_recorded_spans(OPENAI_AGENTS_OI)
    workflow = root(spans)
    assert (workflow.name, workflow.attributes["openinference.span.kind"]) == ("Agent workflow", "AGENT")
    inner = [s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT" and s is not workflow]
    [agent] = inner
    first, last = named(spans, "response")

    run = only_run(build_runs(spans))
    assert run.span_id == workflow.span_id
    result = only(spans, "get_weather").attributes["output.value"]
    check_openinference_run(run, first, last, result=result, agent=str_value(agent.attributes["agent.name"]))


def _semconv_messages(span: Span, key: str) -> list[Mapping[str, Any]]:
    messages: list[Mapping[str, Any]] = json.loads(str_value(span.attributes[key]))
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
        agent=str_value(agent.attributes["gen_ai.agent.name"]),
    )
    assert workflow.attributes["traceloop.workflow.name"] != run.agent_name


def test_crewai_run_is_named_after_the_agent_node_not_the_method_span() -> None:
    spans = load_recorded_spans(CREWAI)
    [agent] = [s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT"]
    assert agent.name.endswith("._execute_core")
    first, last = named(spans, "ChatCompletion")

    run = only_run(build_runs(spans))
    assert run.span_id == root(spans).span_id  # the crew's kickoff holds the one agent
    result = only(spans, "get_weather.run").attributes["output.value"]
    check_openinference_run(
        run, first, last, result=result, agent=str_value(agent.attributes["graph.node.id"])
    )


def _sk_logs(name: str) -> list[LogRecord]:
    batch = decode_logs("otlp_json", (RECORDED_DIR / f"{name}.logs.json").read_bytes())
    assert not batch.errors
    return batch.logs


def _bodies(records: list[LogRecord], event: str) -> list[dict[str, Any]]:
    return [json.loads(str_value(r.body)) for r in records if r.attributes.get("event.name") == event]


def test_semantic_kernel_python_agent_with_its_log_records_is_one_faithful_run() -> None:
    spans, logs = load_recorded_spans(SK_AGENT), _sk_logs(SK_AGENT)
    agent = only(spans, "invoke_agent weather_agent")
    first, last = named(spans, "chat gpt-4o")
    first_logs = [r for r in logs if r.span_id == first.span_id]
    last_logs = [r for r in logs if r.span_id == last.span_id]
    [system] = _bodies(first_logs, "gen_ai.system.message")
    [user] = _bodies(first_logs, "gen_ai.user.message")
    [asked] = _bodies(first_logs, "gen_ai.choice")
    [call] = asked["message"]["tool_calls"]
    [answered] = _bodies(last_logs, "gen_ai.choice")

    run = only_run(build_runs(spans, logs))
    assert run.span_id == agent.span_id
    check_run(
        run,
        system=system["content"],
        question=user["content"],
        answer=answered["message"]["content"],
        call=(call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])),
        result=only(spans, "execute_tool WeatherPlugin-get_weather").attributes["gen_ai.tool.call.result"],
        agent=str_value(agent.attributes["gen_ai.agent.name"]),
    )
    assert (run.usage.input_tokens, run.usage.output_tokens) == (
        sum(int_value(s.attributes["gen_ai.usage.input_tokens"]) for s in (first, last)),
        sum(int_value(s.attributes["gen_ai.usage.output_tokens"]) for s in (first, last)),
    )


def _event_bodies(span: Span, name: str) -> list[dict[str, Any]]:
    return [
        json.loads(str_value(e.attributes["gen_ai.event.content"])) for e in span.events if e.name == name
    ]


def test_semantic_kernel_older_chat_completion_span_alone_in_its_trace_is_a_run() -> None:
    """A model call whose only GenAI attribute is ``gen_ai.response.model``, its messages in span
    events: no agent span is above it, so it is a run of its own, without an agent name."""
    spans = load_recorded_spans(SK_OLDER)
    [span] = spans
    assert span.name == "chat_completion"
    assert [k for k in span.attributes if k.startswith("gen_ai.")] == ["gen_ai.response.model"]
    [system] = _event_bodies(span, "gen_ai.system.message")
    [user] = _event_bodies(span, "gen_ai.user.message")
    [replayed_call] = _event_bodies(span, "gen_ai.assistant.message")
    [replayed_result] = _event_bodies(span, "gen_ai.tool.message")
    [choice] = _event_bodies(span, "gen_ai.choice")

    run = only_run(build_runs(spans))
    assert (run.span_id, run.model, run.agent_name) == (
        span.span_id,
        span.attributes["gen_ai.response.model"],
        None,
    )
    assert texts(run.input.system_messages) == [("system", system["content"])]
    assert texts(run.input.input_messages) == [("user", user["content"])]
    assert texts(run.output) == [("assistant", choice["message"]["content"])]
    assert not run.content_missing
    # The prompt replays the earlier step: its tool call, and the result answering it by id.
    call = GenAiSemconvAdapter().llm_call(span)
    replayed = [
        (p.type, (p.model_extra or {}).get("tool_call_id"), (p.model_extra or {}).get("result"))
        for m in call.input_messages
        for p in m.parts
        if p.type in ("tool_call", "tool_result")
    ]
    [tool_call] = replayed_call["tool_calls"]
    assert replayed == [
        ("tool_call", tool_call["id"], None),
        ("tool_result", replayed_result["tool_call_id"], replayed_result["content"]),
    ]


RECORDED_AGENTS = [
    (LLAMA_INDEX, "weather_agent"),
    (OPENAI_AGENTS_OI, "weather_agent"),
    (OPENAI_AGENTS_TRACELOOP, "weather_agent"),
    (CREWAI, "weather_agent"),
    (SK_AGENT, "weather_agent"),
    (SK_OLDER, None),
]


@pytest.mark.parametrize(("name", "agent"), RECORDED_AGENTS, ids=[n for n, _ in RECORDED_AGENTS])
def test_inspect_prints_one_run_per_recording_with_its_agent_name(name: str, agent: str | None) -> None:
    """Through the CLI, as a user checks their own export; the agent is the recording script's
    (``Agent(name="weather_agent")``, ``role="weather_agent"``)."""
    args = ["inspect", str(RECORDED_DIR / f"{name}.traces.json")]
    if (logs := RECORDED_DIR / f"{name}.logs.json").exists():
        args += ["--logs", str(logs)]
    done = tracescore(*args)
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)
    assert run["agent_name"] == agent
    assert run["output"][-1]["content"] and run["input"]["input_messages"]


def test_a_heuristic_scorer_scores_the_llama_index_run(tmp_path: Path) -> None:
    """The run used to have no input: every scorer recorded ``skipped_empty``."""
    done = tracescore("inspect", str(RECORDED_DIR / f"{LLAMA_INDEX}.traces.json"))
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "runs.json"
    runs.write_text(done.stdout)
    scored = tracescore("score", "completeness", "--run", str(runs))
    assert scored.returncode == 0, scored.stderr
    [result] = json.loads(scored.stdout)
    assert result["status"] == "scored" and result["score"] is not None
