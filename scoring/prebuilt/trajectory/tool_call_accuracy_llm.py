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
from typing import Any

from pydantic import BaseModel, StrictBool, model_validator

from tracescore.scoring.framework.message_text import extract_tool_calls
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import (
    answer_text,
    delimited_answers,
    js_json,
    round_to_two_decimals,
    user_text,
)
from tracescore.scoring.prebuilt.judge_templates import Ask, JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


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


# Mastra's prompts, kept line for line in prompts/tool_call_accuracy/.
TOOL_CALL_ACCURACY_LLM = JudgeTemplate(
    ScorerSpec(
        name="tool-call-accuracy-llm",
        former_id="llm-tool-call-accuracy-scorer",
        title="Tool Call Accuracy (LLM)",
        description=(
            "Evaluates whether an agent selected appropriate tools for the given task using LLM analysis"
        ),
        example={"available_tools": [{"name": "get_weather", "description": "Current weather of a city"}]},
    ),
    __package__,
    "tool_call_accuracy",
    analyze=Ask("Analyze the appropriateness of tool selections", ToolSelectionAnalysis),
    reason=Ask("Generate human-readable explanation of tool selection evaluation"),
)


def tool_selection_score(analysis: ToolSelectionAnalysis) -> float:
    """The share of appropriate calls (two decimals); no calls: 0 if tools are missing, else 1."""
    if not analysis.evaluations:
        return 0.0 if analysis.missingTools else 1.0
    appropriate = sum(e.wasAppropriate for e in analysis.evaluations)
    return round_to_two_decimals(appropriate / len(analysis.evaluations))


@register(TOOL_CALL_ACCURACY_LLM.spec)
def create_tool_call_accuracy_scorer_llm(
    judge: Judge, available_tools: Sequence[AvailableTool | Mapping[str, Any]]
) -> Scorer:
    """Mastra's ``llm-tool-call-accuracy-scorer``, judged by ``judge``."""
    tools = [AvailableTool.model_validate(t, from_attributes=True) for t in available_tools]
    tool_definitions = "\n".join(f"{t.id}: {t.description}" for t in tools)

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        if not ctx.run.input.input_messages or not ctx.run.output:
            raise ValueError("Input and output messages cannot be null or empty")
        actual, infos = extract_tool_calls(ctx.run.output)
        return {"actual_tools": actual, "has_tool_calls": bool(actual), "tool_call_infos": infos}

    def analyze(ctx: StepContext) -> dict[str, str]:
        called = ctx.preprocessed(dict)["actual_tools"]
        return {
            "user_request": delimit("user request", user_text(ctx.run)),
            "agent_response": delimit("agent response", answer_text(ctx.run)),
            "tools_called": delimit("tools called", ", ".join(called) if called else "None"),
            "available_tools": tool_definitions,
        }

    def reason(ctx: StepContext) -> dict[str, str]:
        analysis = ctx.analyzed(ToolSelectionAnalysis)
        return {
            "user_request": delimit("user request", user_text(ctx.run)),
            "tools_evaluated": delimited_answers("tools evaluated", analysis.evaluations),
            "missing_tools": delimit("missing tools", js_json(analysis.missingTools or [])),
        }

    return TOOL_CALL_ACCURACY_LLM.scorer(
        judge,
        needs=("input", "output"),
        analyze=analyze,
        score=lambda ctx: tool_selection_score(ctx.analyzed(ToolSelectionAnalysis)),
        reason=reason,
    ).preprocess(preprocess)
