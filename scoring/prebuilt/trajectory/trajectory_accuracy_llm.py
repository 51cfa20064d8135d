"""Trajectory accuracy (LLM judge): was the agent's sequence of tool calls a sensible path to the answer?

A port of Mastra's ``createTrajectoryAccuracyScorerLLM``. The run's trajectory (its tool calls in
order, ``trajectory_accuracy.extract_trajectory``) is shown to the judge, with the expected steps
when given; the judge rates each step necessary / in order and names missing and extra steps.
Score = 0.6 x necessary share + 0.3 x in-order share - 0.1 x missing / (steps + missing), clamped
to [0, 1] and rounded to two decimals (so a flawless trajectory scores 0.9, as in Mastra). With no
step evaluations: 0 if steps are missing, 0.5 if there are extra steps, else 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, StrictBool

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
from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy import (
    CAMEL_TO_SNAKE,
    expected_steps_of,
    extract_trajectory,
)

_SNAKE_TO_CAMEL = {snake: camel for camel, snake in CAMEL_TO_SNAKE.items()}


class StepEvaluation(BaseModel):
    stepName: str  # the judge's JSON keys, as in Mastra's schema
    wasNecessary: StrictBool  # strict: "yes" or "maybe" is not a verdict
    wasInOrder: StrictBool
    reasoning: str


class TrajectoryAnalysis(BaseModel):
    stepEvaluations: list[StepEvaluation]
    missingSteps: list[str] | None = None
    extraSteps: list[str] | None = None
    overallAssessment: str


# Mastra's prompts, kept line for line in prompts/trajectory_accuracy/.
TRAJECTORY_ACCURACY_LLM = JudgeTemplate(
    ScorerSpec(
        name="trajectory-accuracy-llm",
        former_id="llm-trajectory-accuracy-scorer",
        title="Trajectory Accuracy (LLM)",
        description="Evaluates the quality and appropriateness of the trajectory using LLM analysis",
    ),
    __package__,
    "trajectory_accuracy",
    analyze=Ask("Analyze the quality and appropriateness of the agent trajectory", TrajectoryAnalysis),
    reason=Ask("Generate human-readable explanation of trajectory evaluation"),
)


def format_trajectory(steps: Sequence[Mapping[str, Any]]) -> str:
    """``1. [tool_call] search (args: {...}, result: {...})`` per step (Mastra's ``formatTrajectory``)."""
    lines = []
    for i, step in enumerate(steps, start=1):
        details = []
        if step.get("step_type") in ("tool_call", "mcp_tool_call"):
            if step.get("tool_args") is not None:
                details.append(f"args: {js_json(step['tool_args'])}")
            if step.get("tool_result") is not None:
                details.append(f"result: {js_json(step['tool_result'])}")
        detail = f" ({', '.join(details)})" if details else ""
        lines.append(f"{i}. [{step.get('step_type')}] {step.get('name')}{detail}")
    return "\n".join(lines)


def format_expected_steps(steps: Sequence[Mapping[str, Any]], indent: int = 0) -> str:
    """``1. [tool_call] search ({"toolArgs": ...})`` per expected step, children indented."""
    prefix = "  " * indent
    lines = []
    for i, step in enumerate(steps, start=1):
        type_str = f"[{step['step_type']}] " if step.get("step_type") else ""
        fields = {
            _SNAKE_TO_CAMEL.get(k, k): v
            for k, v in step.items()
            if k not in ("name", "step_type", "children")
        }
        data = f" ({js_json(fields)})" if fields else ""
        line = f"{prefix}{i}. {type_str}{step.get('name')}{data}"
        children = step.get("children")
        child_steps = children.get("steps") if isinstance(children, Mapping) else None
        if child_steps:
            line += "\n" + format_expected_steps(child_steps, indent + 1)
        lines.append(line)
    return "\n".join(lines)


def analyze_values(user_input: str, agent_response: str, actual: str, expected: str | None) -> dict[str, str]:
    """The analyze prompt's values; the criteria are against the expected steps when given, else
    from the task alone."""
    criteria = (
        TRAJECTORY_ACCURACY_LLM.prompt("criteria_expected").render(expected_trajectory=expected)
        if expected
        else TRAJECTORY_ACCURACY_LLM.prompt("criteria_from_task").render()
    )
    return {
        "user_request": delimit("user request", user_input),
        "agent_response": delimit("agent response", agent_response),
        "actual_trajectory": delimit("actual trajectory", actual),
        "criteria": criteria,
    }


def reason_values(user_input: str, analysis: TrajectoryAnalysis) -> dict[str, str]:
    """The reason prompt's values: the request, and the judge's evaluations back as data."""
    return {
        "user_request": delimit("user request", user_input),
        "steps_evaluated": delimited_answers("steps evaluated", analysis.stepEvaluations),
        "missing_steps": delimit("missing steps", js_json(analysis.missingSteps or [])),
        "extra_steps": delimit("extra steps", js_json(analysis.extraSteps or [])),
    }


def trajectory_score(analysis: TrajectoryAnalysis) -> float:
    """60% necessity, 30% ordering, minus 10% of the missing share; no evaluations: 0 / 0.5 / 1."""
    evaluations = analysis.stepEvaluations
    missing = analysis.missingSteps or []
    if not evaluations:
        if missing:
            return 0.0
        return 0.5 if analysis.extraSteps else 1.0
    total = len(evaluations)
    necessary = sum(e.wasNecessary for e in evaluations) / total
    ordered = sum(e.wasInOrder for e in evaluations) / total
    missing_penalty = len(missing) / (total + len(missing)) if missing else 0
    score = necessary * 0.6 + ordered * 0.3 - missing_penalty * 0.1
    return round_to_two_decimals(max(0.0, min(1.0, score)))


@register(TRAJECTORY_ACCURACY_LLM.spec)
def create_trajectory_accuracy_scorer_llm(
    judge: Judge, expected_trajectory: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None
) -> Scorer:
    """Mastra's ``llm-trajectory-accuracy-scorer``, judged by ``judge``.

    ``expected_trajectory``: expected steps (a list, or a mapping with ``steps``); without it, the
    run's ``ground_truth`` when it is a mapping with non-empty ``steps`` (Mastra's dataset item).
    """
    static_steps = expected_steps_of(expected_trajectory)

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        actual = extract_trajectory(ctx.run)
        steps = static_steps
        if steps is None and isinstance(ctx.run.ground_truth, Mapping):
            steps = expected_steps_of(ctx.run.ground_truth) or None
        return {
            "actual_trajectory": actual,
            "actual_trajectory_formatted": format_trajectory(actual),
            "expected_trajectory_formatted": format_expected_steps(steps) if steps is not None else None,
            "has_steps": bool(actual),
        }

    def analyze(ctx: StepContext) -> dict[str, str]:
        found = ctx.preprocessed(dict)
        return analyze_values(
            user_text(ctx.run),
            answer_text(ctx.run),
            found["actual_trajectory_formatted"],
            found["expected_trajectory_formatted"],
        )

    return TRAJECTORY_ACCURACY_LLM.scorer(
        judge,
        description="Evaluates the trajectory against an expected trajectory using LLM analysis"
        if expected_trajectory is not None  # an empty list counts as given, as in JavaScript
        else None,
        needs=("input",),  # the judge weighs the calls against the request; tool names survive capture off
        analyze=analyze,
        score=lambda ctx: trajectory_score(ctx.analyzed(TrajectoryAnalysis)),
        reason=lambda ctx: reason_values(user_text(ctx.run), ctx.analyzed(TrajectoryAnalysis)),
    ).preprocess(preprocess)
