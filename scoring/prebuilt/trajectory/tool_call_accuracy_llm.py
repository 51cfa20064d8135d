"""Tool-call accuracy (LLM judge): were the tools the agent called the right ones for the request?

A port of Mastra's ``createToolCallAccuracyScorerLLM``: ``preprocess`` lists the tools called
(``scoring.framework.message_text.extract_tool_calls``); the judge rates each call appropriate or not and
names
missing tools; the score is the share of appropriate calls, rounded to two decimals. With no
evaluations the score is 0 when the judge names missing tools, else 1 (not calling a tool was
right). ``available_tools`` are ``{"id", "description"}`` (Mastra's ``Tool``; ``name`` is taken
for ``id``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, StrictBool, model_validator

from tracescore.scoring.framework.message_text import extract_tool_calls
from tracescore.scoring.framework.prompt_templates import load_prompt
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_json, js_number, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

# Mastra's prompts, kept line for line in prompts/tool_call_accuracy/.
TOOL_SELECTION_ACCURACY_INSTRUCTIONS = load_prompt(__package__, "tool_call_accuracy/instructions").render()
ANALYZE = load_prompt(__package__, "tool_call_accuracy/analyze")
REASON = load_prompt(__package__, "tool_call_accuracy/reason")


class AvailableTool(BaseModel):
    """A tool the agent could call: its id (or name) and what it does."""

    id: str
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _name_for_id(cls, data: Any) -> Any:
        """A tool given with a ``name`` and no ``id`` (a mapping or an object) takes the name for its id."""
        if isinstance(data, Mapping):
            return {**data, "id": data["name"]} if "id" not in data and "name" in data else data
        if not hasattr(data, "id") and hasattr(data, "name"):
            return {"id": data.name, "description": getattr(data, "description", "")}
        return data


class ToolEvaluation(BaseModel):
    toolCalled: str  # the judge's JSON keys, as in Mastra's schema
    wasAppropriate: StrictBool  # strict: "yes" or "maybe" is not a verdict
    reasoning: str


class ToolSelectionAnalysis(BaseModel):
    evaluations: list[ToolEvaluation]
    missingTools: list[str] | None = None


def create_analyze_prompt(
    user_input: str, agent_response: str, tools_called: Sequence[str], available_tools: str
) -> str:
    called = ", ".join(tools_called) if tools_called else "None"
    return ANALYZE.render(
        user_request=delimit("user request", user_input),
        agent_response=delimit("agent response", agent_response),
        tools_called=delimit("tools called", called),
        available_tools=available_tools,
    )


def create_reason_prompt(
    user_input: str, score: float, evaluations: Sequence[ToolEvaluation], missing_tools: Sequence[str]
) -> str:
    # Compact JSON like JavaScript's JSON.stringify; the judge's words go back in as data.
    evaluated = js_json([e.model_dump() for e in evaluations])
    missing = js_json(list(missing_tools))
    return REASON.render(
        user_request=delimit("user request", user_input),
        score=js_number(score),
        tools_evaluated=delimit("tools evaluated", evaluated),
        missing_tools=delimit("missing tools", missing),
    )


def tool_selection_score(analysis: ToolSelectionAnalysis) -> float:
    """The share of appropriate calls (two decimals); no calls: 0 if tools are missing, else 1."""
    if not analysis.evaluations:
        return 0.0 if analysis.missingTools else 1.0
    appropriate = sum(e.wasAppropriate for e in analysis.evaluations)
    return round_to_two_decimals(appropriate / len(analysis.evaluations))


TOOL_CALL_ACCURACY_LLM = ScorerSpec(
    name="tool-call-accuracy-llm",
    former_id="llm-tool-call-accuracy-scorer",
    title="Tool Call Accuracy (LLM)",
    description=(
        "Evaluates whether an agent selected appropriate tools for the given task using LLM analysis"
    ),
    example={"available_tools": [{"name": "get_weather", "description": "Current weather of a city"}]},
)


@register(TOOL_CALL_ACCURACY_LLM)
def create_tool_call_accuracy_scorer_llm(
    judge: Judge, available_tools: Sequence[AvailableTool | Mapping[str, Any]]
) -> Scorer:
    """Mastra's ``llm-tool-call-accuracy-scorer``, judged by ``judge``."""
    tools = [AvailableTool.model_validate(t, from_attributes=True) for t in available_tools]
    tool_definitions = "\n".join(f"{t.id}: {t.description}" for t in tools)
    judge = replace(judge, instructions=TOOL_SELECTION_ACCURACY_INSTRUCTIONS)

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        if not ctx.run.input.input_messages or not ctx.run.output:
            raise ValueError("Input and output messages cannot be null or empty")
        actual, infos = extract_tool_calls(ctx.run.output)
        return {"actual_tools": actual, "has_tool_calls": bool(actual), "tool_call_infos": infos}

    def analyze_prompt(ctx: StepContext) -> str:
        return create_analyze_prompt(
            get_user_message_from_run_input(ctx.run) or "",
            get_assistant_message_from_run_output(ctx.run) or "",
            ctx.preprocessed(dict)["actual_tools"],
            tool_definitions,
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis = ctx.analyzed(ToolSelectionAnalysis)
        return create_reason_prompt(
            get_user_message_from_run_input(ctx.run) or "",
            ctx.scored(),
            analysis.evaluations,
            analysis.missingTools or [],
        )

    return (
        TOOL_CALL_ACCURACY_LLM.create_scorer(needs=("input", "output"), judge=judge)
        .preprocess(preprocess)
        .analyze(
            {
                "description": "Analyze the appropriateness of tool selections",
                "output_schema": ToolSelectionAnalysis,
                "create_prompt": analyze_prompt,
            }
        )
        .generate_score(lambda ctx: tool_selection_score(ctx.analyzed(ToolSelectionAnalysis)))
        .generate_reason(
            {
                "description": "Generate human-readable explanation of tool selection evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
