"""The unified trajectory scorer (code) against the published @mastra/evals 1.10.2 scorer.

``data/trajectory_unified_reference.json`` was printed by ``data/trajectory_unified_reference.mjs`` (Node 20,
@mastra/evals 1.10.2, @mastra/core 1.71.0) from ``data/trajectory_unified_cases.json``: per case the real
``createTrajectoryScorerCode``'s score, reason and preprocess result (camelCase), or the message it threw.
A ``trajectory`` case is a Mastra trajectory scored as given (through ``evaluate_trajectory``, the
scorer's own preprocess); a ``tools`` case is an AgentRun scored end to end, its tool invocations on
one assistant message and its ``durationMs`` as end - start time (the script gives Mastra the same
duration as ``totalDurationMs``). Scores, sub-scores and reasons compare with ``==``: the port adds and
divides in Mastra's order, so the floats are bit-identical.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.fixture_files import REFERENCES_DIR
from tracescore.schemas.agent_run import AgentRun, Usage
from tracescore.scoring.framework.scorer import ScorerError
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.prebuilt.trajectory.unified import create_trajectory_scorer_code
from tracescore.scoring.prebuilt.trajectory.unified_inputs import (
    merge_expectation,
    normalise_expectation,
    normalise_trajectory,
    resolve_weights,
)
from tracescore.scoring.prebuilt.trajectory.unified_reason import trajectory_reason
from tracescore.scoring.prebuilt.trajectory.unified_scoring import evaluate_trajectory, trajectory_score
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation

DATA = REFERENCES_DIR
CASES: list[dict[str, Any]] = json.loads((DATA / "trajectory_unified_cases.json").read_text())["cases"]
REFERENCE: dict[str, dict[str, Any]] = json.loads((DATA / "trajectory_unified_reference.json").read_text())
START = datetime(2026, 1, 1, tzinfo=UTC)
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_keys(value: Any) -> Any:
    """Mastra's camelCase result keys as ours (every key in these results is a field name)."""
    if isinstance(value, dict):
        return {_HUMP.sub("_", k).lower(): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def without_none(value: Any) -> Any:
    """Our result as JSON.stringify prints Mastra's: keys whose value is undefined left out."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def run_of(case: dict[str, Any], usage: Usage | None = None) -> AgentRun:
    invocations = [
        create_tool_invocation(
            f"call-{i}",
            tool["name"],
            tool.get("args", {}),
            tool.get("result", {}),
            tool.get("state", "result"),
        )
        for i, tool in enumerate(case["tools"])
    ]
    run = create_agent_test_run(
        input_messages="go",
        output=[create_test_message("done", "assistant", id="a1", tool_invocations=invocations)],
        ground_truth=case.get("expectedTrajectory"),
    )
    if "durationMs" in case:
        run = run.model_copy(
            update={"start_time": START, "end_time": START + timedelta(milliseconds=case["durationMs"])}
        )
    return run.model_copy(update={"usage": usage}) if usage else run


def mastra_error(reference: dict[str, Any]) -> str:
    error: str = reference["error"]
    return error.removeprefix("Scorer Run Failed: ")


def test_every_case_has_a_reference() -> None:
    assert [c["id"] for c in CASES] == list(REFERENCE)
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES if "trajectory" in c])
def test_trajectory_cases_match_mastra(case: dict[str, Any]) -> None:
    reference = REFERENCE[case["id"]]
    trajectory = normalise_trajectory(case["trajectory"])
    config = merge_expectation(
        normalise_expectation(case.get("defaults") or {}), case.get("expectedTrajectory")
    )
    weights = resolve_weights(case.get("weights"))
    if "error" in reference:
        with pytest.raises(ValueError, match=re.escape(mastra_error(reference))):
            evaluate_trajectory(trajectory, config, weights)
        return
    result = evaluate_trajectory(trajectory, config, weights)
    score = trajectory_score(result, weights)
    assert score == reference["score"]
    assert trajectory_reason(result, score) == reference["reason"]
    del result["config"]
    assert without_none(result) == snake_keys(reference["preprocess"])


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES if "tools" in c])
async def test_agent_run_cases_match_mastra(case: dict[str, Any]) -> None:
    reference = REFERENCE[case["id"]]
    scorer = create_trajectory_scorer_code(defaults=case.get("defaults"), weights=case.get("weights"))
    if "error" in reference:
        with pytest.raises(ScorerError, match=re.escape(mastra_error(reference))):
            await scorer.run(run_of(case))
        return
    result = await scorer.run(run_of(case))
    assert result.score == reference["score"]
    assert result.reason == reference["reason"]
    preprocess = dict(result.preprocess_step_result)
    del preprocess["config"]
    assert without_none(preprocess) == snake_keys(reference["preprocess"])


async def test_run_usage_is_the_token_measurement() -> None:
    scorer = create_trajectory_scorer_code(defaults={"max_total_tokens": 300})
    run = run_of({"tools": [{"name": "a"}]}, Usage(input_tokens=300, output_tokens=100))
    result = await scorer.run(run)
    # 400 tokens over 300: 1 - 100/300 = 0.667; with the no-redundant-calls dimension (1): mean 0.833
    assert result.score == 0.83
    assert result.preprocess_step_result["efficiency"]["total_tokens"] == 400
    assert result.reason == "Score: 0.83\nEfficiency (0.83): over token budget (400 tokens)."
    with pytest.raises(ScorerError, match="missing model-generation measurements"):
        await scorer.run(run_of({"tools": [{"name": "a"}]}))  # zero usage is no measurement


async def test_camel_and_snake_case_options_score_alike() -> None:
    case = {"tools": [{"name": "f", "state": "output-error"}] * 4 + [{"name": "s"}, {"name": "rm"}]}
    camel = create_trajectory_scorer_code(
        defaults={"steps": [{"name": "s"}], "maxSteps": 4, "maxRetriesPerTool": 1, "blacklistedTools": ["x"]},
        weights={"toolFailures": 0.5},
    )
    snake = create_trajectory_scorer_code(
        defaults={
            "steps": [{"name": "s"}],
            "max_steps": 4,
            "max_retries_per_tool": 1,
            "blacklisted_tools": ["x"],
        },
        weights={"tool_failures": 0.5},
    )
    first, second = await camel.run(run_of(case)), await snake.run(run_of(case))
    assert first.preprocess_step_result == second.preprocess_step_result
    # accuracy 1 (weight 0.4); efficiency mean(steps 1 - 2/4, three redundant f calls 1 - 0.6) = 0.45
    # (0.3); tool failures: f retried 3 times, 2 over the allowance of 1, 1 - 0.4 = 0.6 (0.5);
    # blacklist 1 (0.1): (0.4 + 0.135 + 0.3 + 0.1) / 1.3 = 0.719
    assert first.score == second.score == 0.72


async def test_snake_case_ground_truth_overrides_defaults() -> None:
    scorer = create_trajectory_scorer_code(defaults={"max_steps": 5, "blacklisted_tools": ["rm"]})
    run = run_of({"tools": [{"name": "a"}, {"name": "b"}], "expectedTrajectory": {"max_steps": 1}})
    result = await scorer.run(run)
    # steps 1 - (2 - 1)/1 = 0, redundancy 1: efficiency 0.5 (0.3); blacklist 1 (0.1): 0.25/0.4
    assert result.score == 0.63
    assert result.preprocess_step_result["config"]["max_steps"] == 1


def test_scorer_identity() -> None:
    scorer = create_trajectory_scorer_code()
    assert (scorer.id, scorer.name) == ("trajectory-code", "Trajectory Scorer")
    assert scorer.description == (
        "Multi-dimensional trajectory evaluation: accuracy, efficiency, blacklist, and tool failures"
    )
    assert scorer.needs == frozenset()


@pytest.mark.parametrize(
    ("defaults", "weights", "message"),
    [
        ({"ordering": "strcit"}, None, "ordering must be strict, relaxed or unordered"),
        ({"maxTotalTokens": -5}, None, "Invalid maxTotalTokens budget"),
        ({"max_steps": float("inf")}, None, "Invalid maxSteps budget"),
        (None, {"accurancy": 1}, r"unknown weights \['accurancy'\]"),
    ],
)
def test_bad_configuration_is_refused_at_construction(
    defaults: dict[str, Any] | None, weights: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        create_trajectory_scorer_code(defaults=defaults, weights=weights)


async def test_builds_through_the_registry_machinery_with_camel_case_options() -> None:
    registry = {"trajectory-code": create_trajectory_scorer_code}
    scorer = build_scorer(
        "trajectory-code",
        {"defaults": {"blacklistedSequences": [["a", "b"]]}, "weights": {"blacklist": 1}},
        registry=registry,
    )
    assert (await scorer.run(run_of({"tools": [{"name": "a"}, {"name": "b"}]}))).score == 0  # a then b
    assert (await scorer.run(run_of({"tools": [{"name": "b"}, {"name": "a"}]}))).score == 1  # b then a
    with pytest.raises(ValueError, match="scorer 'trajectory-code': invalid options"):
        build_scorer("trajectory-code", {"defaults": ["max_steps"]}, registry=registry)


def test_registered_by_name_and_by_mastra_id() -> None:
    from tracescore.scoring.prebuilt.registry import build_scorer as build_registered

    by_name = build_registered("trajectory-code", {"defaults": {"maxSteps": 3, "blacklistedTools": ["rm"]}})
    assert by_name.id == "trajectory-code"
    assert build_registered("trajectory-code").id == "trajectory-code"
