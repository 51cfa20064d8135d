"""Tool-call accuracy (LLM judge, Mastra's ``createToolCallAccuracyScorerLLM``): the share of calls
the judge finds appropriate, a run without input, invalid answers, the registry.

Scripted judge answers on the local OpenAI-compatible server -> hand-computed scores, edge cases,
and invalid judge labels that end in a ScorerError, never a score. The factory is imported through
``scoring.prebuilt``, which finds it wherever its module lives.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.schemas import AgentRun
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt import create_tool_call_accuracy_scorer_llm
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation

TOOLS = [
    {"id": "weather-tool", "description": "Current weather for a city"},
    {"name": "search-tool", "description": "Web search"},  # Mastra tools have ids; names work too
]


def tool_run(*tools: str, user: str = "What's the weather in Paris?") -> AgentRun:
    calls = [create_tool_invocation(f"call-{i}", tool) for i, tool in enumerate(tools)]
    return create_agent_test_run(
        input_messages=user,
        output=[create_test_message("It is sunny in Paris.", "assistant", tool_invocations=calls)],
        trace_id="2" * 32,
        span_id="2" * 16,
    )


def evaluation(tool: str, appropriate: Any) -> dict[str, Any]:
    return {"toolCalled": tool, "wasAppropriate": appropriate, "reasoning": f"{tool} judged"}


# (verdicts, missing tools, expected): share of appropriate calls, two decimals; none -> 0 if missing.
TOOL_CASES = [
    ([True], None, 1.0),
    ([True, False], None, 0.5),
    ([True, False, False], [], 0.33),
    ([True, True, False], None, 0.67),
    ([False, False], ["weather-tool"], 0.0),
    ([], None, 1.0),
    ([], [], 1.0),
    ([], ["weather-tool"], 0.0),
]


@pytest.mark.parametrize(("verdicts", "missing", "expected"), TOOL_CASES)
async def test_tool_call_accuracy_llm_share_of_appropriate_calls(
    llm_server: LLMServer, judge: Judge, verdicts: list[bool], missing: list[str] | None, expected: float
) -> None:
    names = [f"tool-{i}" for i in range(len(verdicts))]
    answer: dict[str, Any] = {"evaluations": [evaluation(n, v) for n, v in zip(names, verdicts, strict=True)]}
    if missing is not None:
        answer["missingTools"] = missing
    llm_server.script(json_reply(answer), text_reply("One sentence."))
    scorer = create_tool_call_accuracy_scorer_llm(judge, available_tools=TOOLS)
    result = await scorer.run(tool_run(*names))
    assert result.score == expected
    assert result.reason == "One sentence."
    assert result.preprocess_step_result["actual_tools"] == names
    analyze, reason = llm_server.chat_requests
    prompt = analyze.messages[1]["content"]
    assert "weather-tool: Current weather for a city\nsearch-tool: Web search" in prompt
    assert 'label="tools called">\n' + (", ".join(names) or "None") + "\n</data-" in prompt
    assert "What's the weather in Paris?" in prompt and "It is sunny in Paris." in prompt
    assert "tool selection analysis" in analyze.messages[0]["content"]
    assert f"Score: {expected:g}/1" in reason.messages[1]["content"]
    assert scorer.id == "tool-call-accuracy-llm"


async def test_tool_call_accuracy_llm_without_input_fails(llm_server: LLMServer, judge: Judge) -> None:
    run = create_agent_test_run(output="Hi", trace_id="3" * 32, span_id="3" * 16)
    scorer = create_tool_call_accuracy_scorer_llm(judge, available_tools=TOOLS)
    with pytest.raises(ScorerError, match="step 'preprocess'.*cannot be null or empty"):
        await scorer.run(run)
    assert llm_server.chat_requests == []


@pytest.mark.parametrize("label", ["yes", "maybe", None])
async def test_tool_call_accuracy_llm_invalid_label_is_repaired_then_fails(
    llm_server: LLMServer, judge: Judge, label: Any
) -> None:
    bad = {"evaluations": [evaluation("weather-tool", label)]}
    llm_server.script(json_reply(bad), json_reply(bad))
    scorer = create_tool_call_accuracy_scorer_llm(judge, available_tools=TOOLS)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await scorer.run(tool_run("weather-tool"))
    assert len(llm_server.chat_requests) == 2


async def test_registry_builds_the_llm_tool_call_accuracy_scorer(llm_server: LLMServer, judge: Judge) -> None:
    tools = build_scorer("tool-call-accuracy-llm", {"judge": judge, "availableTools": TOOLS})
    llm_server.script(json_reply({"evaluations": [evaluation("weather-tool", True)]}), text_reply("ok"))
    assert (await tools.run(tool_run("weather-tool"))).score == 1.0
    assert all(r.body["model"] == "gpt-4o-mini" for r in llm_server.chat_requests)
