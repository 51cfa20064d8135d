"""Trajectory accuracy (code): does the run's sequence of tool calls match an expected trajectory.

A port of Mastra's ``createTrajectoryAccuracyScorerCode`` and the ``compareTrajectories`` helper it
uses (strict / relaxed / unordered ordering, repeated-step penalty, per-step data matching).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tracescore.schemas.agent_run import AgentRun
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.judge_helpers import js_json, round_to_two_decimals
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

Ordering = Literal["strict", "relaxed", "unordered"]
_Steps = list[dict[str, Any]]
_Name = str | None  # a step's name (a step may lack one)
_Compared = tuple[float, int, set[int], list[_Name]]  # score, matched, matched expected indices, out of order

# Fields of each step type compared when the expected step names them (Mastra's list, snake_case).
COMPARABLE_FIELDS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "tool_call": ("tool_args", "tool_result", "success"),
    "mcp_tool_call": ("tool_args", "tool_result", "mcp_server", "success"),
    "model_generation": ("model_id", "prompt_tokens", "completion_tokens", "finish_reason"),
    "agent_run": ("agent_id",),
    "workflow_step": ("step_id", "status", "output"),
    "workflow_run": ("workflow_id", "status"),
    "workflow_conditional": ("condition_count", "selected_steps"),
    "workflow_parallel": ("branch_count", "parallel_steps"),
    "workflow_loop": ("loop_type", "total_iterations"),
    "workflow_sleep": ("sleep_duration_ms", "sleep_type"),
    "workflow_wait_event": ("event_name", "event_received"),
    "processor_run": ("processor_id",),
}
CAMEL_TO_SNAKE = {
    "stepType": "step_type", "toolArgs": "tool_args", "toolResult": "tool_result", "mcpServer": "mcp_server",
    "modelId": "model_id", "promptTokens": "prompt_tokens", "completionTokens": "completion_tokens",
    "finishReason": "finish_reason", "agentId": "agent_id", "stepId": "step_id", "workflowId": "workflow_id",
    "conditionCount": "condition_count", "selectedSteps": "selected_steps", "branchCount": "branch_count",
    "parallelSteps": "parallel_steps", "loopType": "loop_type", "totalIterations": "total_iterations",
    "sleepDurationMs": "sleep_duration_ms", "sleepType": "sleep_type", "eventName": "event_name",
    "eventReceived": "event_received", "processorId": "processor_id", "durationMs": "duration_ms",
    "allowRepeatedSteps": "allow_repeated_steps", "expectedTrajectory": "expected_trajectory",
}  # fmt: skip


def _step(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A step dict with snake_case keys (camelCase accepted, as written in Mastra datasets)."""
    return {CAMEL_TO_SNAKE.get(key, key): value for key, value in raw.items()}


def _as_object(value: Any) -> Any:
    """Core's wrapping: an object stays, another value becomes ``{"value": ...}``, none stays none."""
    if value is None or isinstance(value, Mapping):
        return value
    return {"value": value}


def extract_trajectory(run: AgentRun) -> list[dict[str, Any]]:
    """The run's tool invocations in call order, as ``tool_call`` steps (Mastra core's ``extractTrajectory``).

    Every recorded invocation counts (``call``, ``result`` and thrown calls alike); only a call that
    returned a result has ``tool_result`` and ``success`` true.
    """
    return [
        {
            "step_type": "tool_call",
            "name": invocation.tool_name,
            "tool_args": _as_object(invocation.args),
            "tool_result": _as_object(invocation.result) if invocation.state == "result" else None,
            "success": invocation.state == "result",
        }
        for message in run.output
        for invocation in message.tool_invocations
        if invocation.tool_name
    ]


def expected_step_matches(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Same name, same step type if given, and equal JSON for every data field the expectation names."""
    if actual.get("name") != expected.get("name"):
        return False
    step_type = expected.get("step_type")
    if not step_type:
        return True
    if actual.get("step_type") != step_type:
        return False
    for field in COMPARABLE_FIELDS_BY_TYPE.get(step_type, ()):
        if expected.get(field) is None:  # not specified in the expectation
            continue
        if actual.get(field) is None or js_json(actual[field]) != js_json(expected[field]):
            return False
    return True


def _result(
    score: float, matched: int, actual: list[_Name], expected: list[_Name], matched_idx: set[int],
    out_of_order: list[_Name], repeated: list[_Name],
) -> dict[str, Any]:  # fmt: skip
    return {
        "score": round_to_two_decimals(max(0.0, min(1.0, score))),
        "matched_steps": matched,
        "total_expected_steps": len(expected),
        "total_actual_steps": len(actual),
        "missing_steps": [name for i, name in enumerate(expected) if i not in matched_idx],
        "extra_steps": [name for name in actual if name not in set(expected)],
        "out_of_order_steps": out_of_order,
        "repeated_steps": repeated,
    }


def _strict(actual: _Steps, expected: _Steps) -> _Compared:
    a_names = [s.get("name") for s in actual]
    e_names = [s.get("name") for s in expected]
    matched, matched_idx, out_of_order = 0, set(), []
    for i in range(max(len(a_names), len(e_names))):
        a_name = a_names[i] if i < len(a_names) else None
        e_name = e_names[i] if i < len(e_names) else None
        if a_name == e_name:  # both exist: names never equal a missing one
            if expected_step_matches(actual[i], expected[i]):
                matched += 1
                matched_idx.add(i)
        elif a_name is not None and a_name in e_names:
            out_of_order.append(a_name)
    score = matched / len(expected)
    if len(a_names) > len(e_names):  # strict mode penalises extra steps
        score = max(0.0, score - (len(a_names) - len(e_names)) / len(e_names) * 0.5)
    return score, matched, matched_idx, out_of_order


def _relaxed(actual: _Steps, expected: _Steps) -> _Compared:
    a_names = [s.get("name") for s in actual]
    matched, last, matched_idx, out_of_order = 0, -1, set(), []
    for i, exp in enumerate(expected):
        found = False
        for j in range(last + 1, len(actual)):
            if a_names[j] == exp.get("name") and expected_step_matches(actual[j], exp):
                matched, last, found = matched + 1, j, True
                matched_idx.add(i)
                break
        if not found and exp.get("name") in a_names:
            out_of_order.append(exp.get("name"))
    return matched / len(expected), matched, matched_idx, out_of_order


def _unordered(actual: _Steps, expected: _Steps) -> _Compared:
    matched, matched_idx, used = 0, set(), set()
    for i, exp in enumerate(expected):
        for j, act in enumerate(actual):
            if j not in used and expected_step_matches(act, exp):
                matched += 1
                matched_idx.add(i)
                used.add(j)
                break
    return matched / len(expected), matched, matched_idx, []


def compare_trajectories(
    actual: Sequence[Mapping[str, Any]],
    expected: Sequence[Mapping[str, Any]],
    ordering: Ordering = "relaxed",
    allow_repeated_steps: bool = True,
) -> dict[str, Any]:
    """Mastra's ``compareTrajectories`` over step lists; the result keys are snake_case."""
    actual_steps = [_step(s) for s in actual]
    expected_steps = [_step(s) for s in expected]
    a_names = [s.get("name") for s in actual_steps]
    e_names = [s.get("name") for s in expected_steps]
    if not expected_steps:
        return {
            "score": 1 if not actual_steps else 0, "matched_steps": 0, "total_expected_steps": 0,
            "total_actual_steps": len(actual_steps), "missing_steps": [], "extra_steps": a_names,
            "out_of_order_steps": [], "repeated_steps": [],
        }  # fmt: skip
    repeated = [name for name, count in Counter(a_names).items() if count > 1]
    compare = {"strict": _strict, "unordered": _unordered}.get(ordering, _relaxed)
    score, matched, matched_idx, out_of_order = compare(actual_steps, expected_steps)
    if not allow_repeated_steps and repeated:
        score = max(0.0, score - len(repeated) * 0.1)
    return _result(score, matched, a_names, e_names, matched_idx, out_of_order, repeated)


_NO_EXPECTATION = "No expected trajectory provided (pass via options or dataset item expectedTrajectory)"


def expected_steps_of(value: Any) -> list[dict[str, Any]] | None:
    """Steps from a list, or from a trajectory / expectation mapping with a ``steps`` list."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get("steps")
        if value is None:
            return None
    return [_step(s) for s in value]


TRAJECTORY_ACCURACY_CODE = ScorerSpec(
    name="trajectory-accuracy-code",
    former_id="code-trajectory-accuracy-scorer",
    title="Trajectory Accuracy Scorer",
    description="Evaluates whether the agent's trajectory matches the expected steps",
)


@register(TRAJECTORY_ACCURACY_CODE)
def create_trajectory_accuracy_scorer_code(
    expected_trajectory: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    comparison_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Score 0..1: how well the run's tool-call trajectory matches the expected one.

    ``expected_trajectory`` is a list of expected steps (``{"name": ..., "step_type": "tool_call",
    "tool_args": {...}}``) or a mapping with ``steps``. Without it, the run's ``ground_truth`` is
    used when it is such a mapping (Mastra's per-item ``expectedTrajectory``; its ``ordering`` and
    ``allow_repeated_steps`` then override ``comparison_options``). No expectation at all -> 0.

    Example::

        scorer = create_trajectory_accuracy_scorer_code(
            expected_trajectory=[{"name": "search"}, {"name": "summarize"}],
            comparison_options={"ordering": "strict"},
        )
        (await scorer.run(run)).score  # 1.0 when the run called search then summarize, only
    """
    options = {CAMEL_TO_SNAKE.get(k, k): v for k, v in (comparison_options or {}).items()}
    ordering: Ordering = options.get("ordering", "relaxed")
    if ordering not in ("strict", "relaxed", "unordered"):  # Mastra would silently use relaxed
        raise ValueError(f"ordering must be strict, relaxed or unordered, not {ordering!r}")
    allow_repeated: bool = options.get("allow_repeated_steps", True)
    static_steps = expected_steps_of(expected_trajectory)
    if static_steps is not None:
        names = " → ".join(str(s.get("name")) for s in static_steps)
        description = f"Evaluates whether the trajectory matches the expected path: [{names}]"
    else:
        description = "Evaluates trajectory accuracy against expected trajectory from dataset items"
    description += f" ({ordering} ordering)"

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        actual = extract_trajectory(ctx.run)
        item = ctx.run.ground_truth if isinstance(ctx.run.ground_truth, Mapping) else None
        item = {CAMEL_TO_SNAKE.get(k, k): v for k, v in item.items()} if item else None
        steps = static_steps if static_steps is not None else expected_steps_of(item)
        actual_names = [s.get("name") for s in actual]
        if steps is None:
            return {
                "actual_trajectory": actual, "expected_trajectory": None, "comparison": None,
                "actual_step_names": actual_names, "expected_step_names": [],
                "error": _NO_EXPECTATION,
            }  # fmt: skip
        # A dataset item's ordering / repeat rule overrides the constructor's (Mastra's ``??``).
        item_ordering = (item or {}).get("ordering")
        item_repeated = (item or {}).get("allow_repeated_steps")
        comparison = compare_trajectories(
            actual,
            steps,
            ordering if item_ordering is None else item_ordering,
            allow_repeated if item_repeated is None else item_repeated,
        )
        return {
            "actual_trajectory": actual, "expected_trajectory": {"steps": steps}, "comparison": comparison,
            "actual_step_names": actual_names, "expected_step_names": [s.get("name") for s in steps],
        }  # fmt: skip

    def generate_score(ctx: StepContext) -> float:
        comparison = ctx.preprocessed(dict).get("comparison")
        return comparison["score"] if comparison else 0

    return (
        TRAJECTORY_ACCURACY_CODE.create_scorer(
            description=description,
            needs=set(),  # tool names and order survive content capture being off
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
