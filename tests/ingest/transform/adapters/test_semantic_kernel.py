"""Microsoft Semantic Kernel (.NET) traces, as OTLP/JSON, through the decoder and the transform.

The spans are built here in the shape SK's own code emits; the facts come from microsoft/semantic-kernel
(read at b39d95a3 and its history):

- ``dotnet/src/InternalUtilities/src/Diagnostics/ModelDiagnostics.cs``: a model call is an activity named
  ``"{operation} {model}"`` (operation ``chat.completions`` from 1.49 to 1.66, ``chat`` from 1.67)
  with tags ``gen_ai.operation.name``, ``gen_ai.system`` (the provider, ``openai``),
  ``gen_ai.request.model``, ``server.address``/``server.port``, then ``gen_ai.response.id``,
  ``gen_ai.response.finish_reason`` (``["Stop"]``: a JSON-ish list), ``gen_ai.usage.input_tokens`` /
  ``gen_ai.usage.output_tokens``. With sensitive events on, each chat-history message is a span event
  named ``gen_ai.{system,user,assistant,tool}.message`` and each answer a ``gen_ai.choice`` event; the
  body is JSON text in the event attribute ``gen_ai.event.content`` (the tag constant SK calls
  ``EventName``), beside ``gen_ai.system``. A message is ``{role, name, content, tool_calls}``
  (``ToGenAIConventionsFormat``; tool calls ``{id, function: {name, arguments}, type: "function"}``
  with the arguments as a JSON object, and no ``tool_call_id`` on tool messages); a choice is
  ``{index, message, tool_calls, finish_reason}``. In 1.64-1.65 the author name was appended unquoted
  (``, "name": Bot}``), which is not JSON.
- ``dotnet/src/InternalUtilities/src/Diagnostics/ActivityExtensions.cs`` ``StartFunctionActivity``: every
  kernel function, the prompt function that drives the chat included, is an ``execute_tool {name}``
  span with ``gen_ai.tool.name`` and ``gen_ai.tool.description``; the model calls and the auto-invoked
  functions are its children (``FunctionCallsProcessor`` adds one tool message per call, in order).

SK always sets ``gen_ai.operation.name``; a span without it (an older fork, a collector that dropped the
attribute) is read by its name and ``gen_ai.system`` alone, as the second parametrization checks.
Expected values are written by hand from the trace built here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.runs import invocations, texts
from tracescore.ingest.decode import decode_traces
from tracescore.ingest.transform import build_runs
from tracescore.ingest.transform.adapters.genai_events import event_body
from tracescore.ingest.transform.adapters.genai_semconv import GenAiSemconvAdapter
from tracescore.schemas import AgentRun, SpanEvent

TRACE_ID = "5dbd1a7e8c0a4e2bb0c4d5e6f7a8b9c0"
PROMPT_FUNCTION, CHAT1, WEATHER, CHAT2 = (
    "a1b2c3d4e5f60001",
    "a1b2c3d4e5f60002",
    "a1b2c3d4e5f60003",
    "a1b2c3d4e5f60004",
)
SYSTEM = "You are a weather assistant. Use the WeatherPlugin."
HELLO, HELLO_ANSWER = "Hi", "Hello! How can I help?"
QUESTION = "What's the weather in Oslo?"
CALL_ID = "call_u8Fq2PgtvN0oX5yd7qjA1b3c"
RESULT = "rainy, 8°C"
ANSWER = "It is rainy in Oslo, 8°C."
T0 = 1_767_000_000_000_000_000  # ns


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # OTLP/JSON: 64-bit integers as strings
    return {"stringValue": value}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items()]


def _message(role: str, content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> str:
    # ModelDiagnostics.ToGenAIConventionsFormat (1.66): JsonSerializer over {role, name, content, tool_calls}.
    return json.dumps({"role": role, "name": None, "content": content, "tool_calls": tool_calls or []})


def _event(name: str, at: int, content: str) -> dict[str, Any]:
    attributes = {"gen_ai.event.content": content}
    if name != "gen_ai.choice":  # SetCompletionResponse adds no gen_ai.system to the choice event
        attributes["gen_ai.system"] = "openai"
    return {"timeUnixNano": str(at), "name": name, "attributes": _attributes(attributes)}


def _span(
    span_id: str,
    parent: str,
    name: str,
    kind: int,
    start: int,
    end: int,
    attributes: dict[str, Any],
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "traceId": TRACE_ID,
        "spanId": span_id,
        **({"parentSpanId": parent} if parent else {}),
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
        "events": events or [],
        "status": {},
    }


def semantic_kernel_request(*, operation_attribute: bool = True) -> dict[str, Any]:
    """The OTLP/JSON export request of one ``kernel.InvokePromptAsync`` with auto function calling:
    the prompt function, a model call that asks for ``get_weather``, the function, a model call
    that answers."""
    tool_call = {
        "id": CALL_ID,
        "function": {"name": "get_weather", "arguments": {"city": "Oslo"}},
        "type": "function",
    }
    history = [
        ("gen_ai.system.message", _message("system", SYSTEM)),
        ("gen_ai.user.message", _message("user", HELLO)),
        ("gen_ai.assistant.message", _message("assistant", HELLO_ANSWER)),
        ("gen_ai.user.message", _message("user", QUESTION)),
    ]

    def chat(
        span_id: str,
        start: int,
        messages: list[tuple[str, str]],
        choice: dict[str, Any],
        usage: tuple[int, int],
        finish: str,
    ) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat.completions",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "server.address": "https://api.openai.com/v1",
            "server.port": 443,
            "gen_ai.request.max_tokens": 500,
            "gen_ai.response.id": f"chatcmpl-{span_id}",
            "gen_ai.response.finish_reason": f'["{finish}"]',
            "gen_ai.usage.input_tokens": usage[0],
            "gen_ai.usage.output_tokens": usage[1],
        }
        if not operation_attribute:
            del attributes["gen_ai.operation.name"]
        events = [_event(name, start + 1_000 * i, body) for i, (name, body) in enumerate(messages)]
        events.append(_event("gen_ai.choice", start + 900_000_000, json.dumps(choice)))
        return _span(
            span_id,
            PROMPT_FUNCTION,
            "chat.completions gpt-4o",
            3,
            start,
            start + 900_000_000,
            attributes,
            events,
        )

    first_choice = {
        "index": 0,
        "message": {"role": "assistant", "name": None, "content": None, "tool_calls": [tool_call]},
        "tool_calls": [tool_call],
        "finish_reason": "ToolCalls",
    }
    final_choice = {
        "index": 0,
        "message": {"role": "assistant", "name": None, "content": ANSWER, "tool_calls": []},
        "tool_calls": [],
        "finish_reason": "Stop",
    }
    spans = [
        _span(
            PROMPT_FUNCTION,
            "",
            "execute_tool func8e1f4b2a6c3d4e5f",
            1,
            T0,
            T0 + 2_500_000_000,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "func8e1f4b2a6c3d4e5f",
                "gen_ai.tool.description": "",
            },
        ),
        chat(CHAT1, T0 + 10_000_000, history, first_choice, (52, 14), "ToolCalls"),
        _span(
            WEATHER,
            PROMPT_FUNCTION,
            "execute_tool get_weather",
            1,
            T0 + 950_000_000,
            T0 + 1_000_000_000,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.description": "Gets the current weather of a city",
                "gen_ai.tool.call.arguments": '{"city":"Oslo"}',
            },
        ),
        chat(
            CHAT2,
            T0 + 1_100_000_000,
            [
                *history,
                ("gen_ai.assistant.message", _message("assistant", None, [tool_call])),
                ("gen_ai.tool.message", _message("tool", RESULT)),
            ],
            final_choice,
            (80, 12),
            "Stop",
        ),
    ]
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": _attributes(
                        {"service.name": "weather-console", "telemetry.sdk.language": "dotnet"}
                    )
                },
                "scopeSpans": [{"scope": {"name": "Microsoft.SemanticKernel.Diagnostics"}, "spans": spans}],
            }
        ]
    }


def check_semantic_kernel_runs(runs: list[dict[str, Any]]) -> None:
    """The two runs of ``semantic_kernel_request`` as AgentRun JSON: each model call is a run (no
    agent span is above them), the first one's tool call joined with the result the second one's
    prompt replays."""
    assert [(r["trace_id"], r["span_id"], r["model"], r["service_name"]) for r in runs] == [
        (TRACE_ID, CHAT1, "gpt-4o", "weather-console"),
        (TRACE_ID, CHAT2, "gpt-4o", "weather-console"),
    ]
    first, second = runs

    def contents(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in messages]

    for run in runs:
        assert contents(run["input"]["system_messages"]) == [("system", SYSTEM)]
        assert contents(run["input"]["input_messages"]) == [("user", QUESTION)]
        assert contents(run["input"]["remembered_messages"]) == [("user", HELLO), ("assistant", HELLO_ANSWER)]
    assert contents(first["output"]) == [("assistant", "")]
    assert first["output"][0]["tool_invocations"] == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"city": "Oslo"},
            "result": RESULT,
            "state": "result",
        }
    ]
    assert first["usage"] == {"input_tokens": 52, "output_tokens": 14}
    assert contents(second["output"]) == [("assistant", ANSWER)]
    assert second["output"][0]["tool_invocations"] == []
    assert second["usage"] == {"input_tokens": 80, "output_tokens": 12}
    assert not first["content_missing"] and not second["content_missing"]


@pytest.mark.parametrize("operation_attribute", [True, False], ids=["as-emitted", "no-operation-name"])
def test_semantic_kernel_dotnet_trace_gives_a_run_per_model_call(operation_attribute: bool) -> None:
    payload = json.dumps(semantic_kernel_request(operation_attribute=operation_attribute)).encode()
    batch = decode_traces("otlp_json", payload)
    assert batch.errors == [] and len(batch.spans) == 4
    check_semantic_kernel_runs([run.to_json_dict() for run in build_runs(batch.spans)])


def test_semantic_kernel_1_64_bare_author_names_are_read() -> None:
    """SK .NET 1.64-1.65 wrote ``, "name": WeatherAgent}`` (a ChatCompletionAgent's messages carry
    its name): the message and the choice are still read."""
    message = event_body(
        SpanEvent(
            name="gen_ai.assistant.message",
            time_unix_nano=0,
            attributes={
                "gen_ai.event.content": '{"role": "assistant", "content": "Hello!", "name": WeatherAgent}'
            },
        )
    )
    assert message == {"role": "assistant", "content": "Hello!", "name": "WeatherAgent"}
    choice = event_body(
        SpanEvent(
            name="gen_ai.choice",
            time_unix_nano=0,
            attributes={
                "gen_ai.event.content": '{"index": 0, "message": {"role": "assistant", "content": "Rainy.", '
                '"name": Weather Agent}, "tool_calls": [], "finish_reason": "Stop"}'
            },
        )
    )
    assert choice["message"] == {"role": "assistant", "content": "Rainy.", "name": "Weather Agent"}
    # Content that merely mentions the pattern inside a JSON string is left alone.
    quoted = '{"role": "user", "content": "say , \\"name\\": x}"}'
    assert event_body(
        SpanEvent(name="gen_ai.user.message", time_unix_nano=0, attributes={"gen_ai.event.content": quoted})
    ) == {
        "role": "user",
        "content": 'say , "name": x}',
    }


def test_tool_messages_without_an_id_answer_the_calls_before_them_in_order() -> None:
    calls = [
        {
            "id": "call_a",
            "function": {"name": "get_weather", "arguments": {"city": "Oslo"}},
            "type": "function",
        },
        {
            "id": "call_b",
            "function": {"name": "get_weather", "arguments": {"city": "Rome"}},
            "type": "function",
        },
    ]
    request = semantic_kernel_request()
    chat2 = request["resourceSpans"][0]["scopeSpans"][0]["spans"][3]
    chat2["events"] = [
        _event("gen_ai.user.message", T0, _message("user", "Oslo and Rome?")),
        _event("gen_ai.assistant.message", T0 + 1, _message("assistant", None, calls)),
        _event("gen_ai.tool.message", T0 + 2, _message("tool", "rainy")),
        _event("gen_ai.tool.message", T0 + 3, _message("tool", "sunny")),
        _event(
            "gen_ai.choice",
            T0 + 4,
            json.dumps({"index": 0, "message": {"role": "assistant", "content": "Oslo rainy, Rome sunny."}}),
        ),
    ]
    batch = decode_traces("otlp_json", json.dumps(request).encode())
    runs: list[AgentRun] = build_runs([s for s in batch.spans if s.span_id == CHAT2])
    (run,) = runs
    assert texts(run.input.input_messages) == [("user", "Oslo and Rome?")]
    assert texts(run.output) == [("assistant", "Oslo rainy, Rome sunny.")]
    # The replayed exchange is not this run's output, but its results are what a run that made
    # those calls gets: each tool message is a tool_result of the call before it, in order.
    call = GenAiSemconvAdapter().llm_call(next(s for s in batch.spans if s.span_id == CHAT2))
    assert [
        (p.type, (p.model_extra or {}).get("tool_call_id"), (p.model_extra or {}).get("result"))
        for m in call.input_messages[2:]
        for p in m.parts
    ] == [
        ("tool_result", "call_a", "rainy"),
        ("tool_result", "call_b", "sunny"),
    ]
    assert invocations(run.output[0]) == []
