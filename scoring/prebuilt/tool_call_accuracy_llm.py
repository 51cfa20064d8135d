"""Tool-call accuracy (LLM judge): were the tools the agent called the right ones for the request?

A port of Mastra's ``createToolCallAccuracyScorerLLM``: ``preprocess`` lists the tools called
(``scoring.text.extract_tool_calls``); the judge rates each call appropriate or not and names
missing tools; the score is the share of appropriate calls, rounded to two decimals. With no
evaluations the score is 0 when the judge names missing tools, else 1 (not calling a tool was
right). ``available_tools`` are ``{"id", "description"}`` (Mastra's ``Tool``; ``name`` is taken
for ``id``).
"""

# ruff: noqa: E501 -- the prompt templates are Mastra's text, kept line for line

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, StrictBool

from scoring.judge import Judge, delimit
from scoring.prebuilt.judge_helpers import js_json, js_number, round_to_two_decimals
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext
from scoring.text import extract_tool_calls
from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

TOOL_SELECTION_ACCURACY_INSTRUCTIONS = """
You are an expert evaluator specializing in AI agent tool selection analysis. Your role is to assess whether an agent chose appropriate tools based on explicit user requests.

CORE RESPONSIBILITIES:
- Analyze user requests to understand what was explicitly asked for
- Evaluate each tool call against the specific user need
- Identify missing tools that should have been used
- Apply strict evaluation criteria focused on direct relevance

EVALUATION PHILOSOPHY:
- Be precise and literal in your assessments
- Only approve tools that directly address the user's explicit request
- Distinguish between "helpful" and "appropriate" - reject tools that are merely helpful but not requested
- Consider context but prioritize what was actually asked for

OUTPUT REQUIREMENTS:
- Provide clear, specific reasoning for each evaluation
- Use provided JSON schema exactly as specified
- Be consistent in your evaluation standards
- Focus on actionable insights

You excel at identifying the difference between tools that directly serve the user's stated need versus tools that might be generally useful but weren't requested.
"""


class AvailableTool(BaseModel):
    """A tool the agent could call: its id (or name) and what it does."""

    id: str = Field(validation_alias=AliasChoices("id", "name"))
    description: str = ""


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
    return f"""
You are evaluating whether an AI agent made appropriate tool choices for a user request.

USER REQUEST: {delimit("user request", user_input)}
AGENT RESPONSE: {delimit("agent response", agent_response)}
TOOLS THE AGENT ACTUALLY CALLED: {delimit("tools called", called)}

TOOL REFERENCE:
{available_tools}

EVALUATION RULES:
1. If NO tools were called: evaluate BOTH the user request AND agent response:
   - Did the user make a specific, actionable request?
   - Did the agent appropriately ask for clarification when details were insufficient?
   - Would calling a tool without the requested clarification provide poor results?
2. If tools WERE called: evaluate if each tool was appropriate for the EXPLICIT user request

AGENT RESPONSE EVALUATION:
When no tools are called, consider if the agent's response demonstrates good judgment:
- Asking follow-up questions for vague requests = APPROPRIATE (missingTools should be empty)
- Providing generic answers without using available tools = INAPPROPRIATE
- Ignoring clear, specific requests = INAPPROPRIATE

CLARIFICATION EXAMPLES:
User: "I'm looking for a firm" + Agent asks about practice area/location = APPROPRIATE clarification
User: "help with legal stuff" + Agent asks for specifics = APPROPRIATE clarification
User: "Create RFP for corporate litigation in NY" + Agent asks for more details = INAPPROPRIATE delay
User: "I need pricing for litigation" + Agent gives generic answer = MISSED tool opportunity

EVALUATION QUESTION:
Did the agent make the right choice between:
1. Acting immediately with available tools, OR
2. Gathering more information for better results?

Consider: Would you rather get generic firm recommendations or have the agent ask clarifying questions first?

STRICT EVALUATION CRITERIA:
- Only mark tools as appropriate if they DIRECTLY address what the user explicitly asked for
- Do NOT mark tools as appropriate just because they might be "helpful" or "related" to the domain
- If the user asked for "A", only tools that provide "A" should be marked appropriate
- Additional tools the agent decided to call without being asked should be marked inappropriate

Evaluate each tool that was called, or if no tools were called, evaluate whether that was the right decision.
"""


def create_reason_prompt(
    user_input: str, score: float, evaluations: Sequence[ToolEvaluation], missing_tools: Sequence[str]
) -> str:
    # Compact JSON like JavaScript's JSON.stringify; the judge's words go back in as data.
    evaluated = js_json([e.model_dump() for e in evaluations])
    missing = js_json(list(missing_tools))
    return f"""
Explain this tool selection evaluation in ONE SENTENCE.

User Request: {delimit("user request", user_input)}
Score: {js_number(score)}/1
Tools Evaluated: {delimit("tools evaluated", evaluated)}
Missing Tools: {delimit("missing tools", missing)}

Provide a single, concise sentence explaining why this score was given.
"""


def tool_selection_score(analysis: ToolSelectionAnalysis) -> float:
    """The share of appropriate calls (two decimals); no calls: 0 if tools are missing, else 1."""
    if not analysis.evaluations:
        return 0.0 if analysis.missingTools else 1.0
    appropriate = sum(e.wasAppropriate for e in analysis.evaluations)
    return round_to_two_decimals(appropriate / len(analysis.evaluations))


TOOL_CALL_ACCURACY_LLM = ScorerSpec(
    name="tool-call-accuracy-llm",
    id="llm-tool-call-accuracy-scorer",
    title="Tool Call Accuracy (LLM)",
    description=(
        "Evaluates whether an agent selected appropriate tools for the given task using LLM analysis"
    ),
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
            ctx.results["preprocess_step_result"]["actual_tools"],
            tool_definitions,
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis: ToolSelectionAnalysis = ctx.results["analyze_step_result"]
        assert ctx.score is not None  # generate_reason runs after generate_score
        return create_reason_prompt(
            get_user_message_from_run_input(ctx.run) or "",
            ctx.score,
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
        .generate_score(lambda ctx: tool_selection_score(ctx.results["analyze_step_result"]))
        .generate_reason(
            {
                "description": "Generate human-readable explanation of tool selection evaluation",
                "create_prompt": reason_prompt,
            }
        )
    )
