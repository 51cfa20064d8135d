"""How the unified trajectory scorer combines its dimensions: per level, nested levels, weighted score.

Mastra's ``createTrajectoryScorerCode`` preprocess (``evaluate_trajectory``, with
``evaluateNestedExpectations``) and ``generateScore`` (``trajectory_score``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracescore.scoring.prebuilt.trajectory.js_math import js_round_hundredths, js_sum
from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy import compare_trajectories
from tracescore.scoring.prebuilt.trajectory.unified_dimensions import (
    DEFAULT_MAX_RETRIES_PER_TOOL,
    analyze_tool_failures,
    check_trajectory_blacklist,
    check_trajectory_efficiency,
)

_Json = dict[str, Any]


def _dimensions(config: Mapping[str, Any], trajectory: Mapping[str, Any]) -> _Json:
    """The four dimension results of one level (accuracy and efficiency and blacklist when configured)."""
    steps = trajectory["steps"]
    accuracy = None
    if config.get("steps") is not None:  # an empty list counts: it expects no steps
        ordering, repeats = config.get("ordering", "relaxed"), config.get("allow_repeated_steps", True)
        accuracy = compare_trajectories(steps, config["steps"], ordering, repeats)
    budgets = ("max_steps", "max_total_tokens", "max_total_duration_ms", "no_redundant_calls")
    efficiency = None
    if any(config.get(k) is not None for k in budgets):
        efficiency = check_trajectory_efficiency(trajectory, config)
    blacklist = None
    if config.get("blacklisted_tools") or config.get("blacklisted_sequences"):
        blacklist = check_trajectory_blacklist(trajectory, config)
    retries = config.get("max_retries_per_tool", DEFAULT_MAX_RETRIES_PER_TOOL)
    return {
        "accuracy": accuracy, "efficiency": efficiency, "blacklist": blacklist,
        "tool_failures": analyze_tool_failures(trajectory, retries),
    }  # fmt: skip


def _weighted(dims: Mapping[str, Any], weights: Mapping[str, float]) -> tuple[float, bool]:
    """The level's weighted score over its active dimensions, and whether it has any."""
    scores: list[tuple[float, float]] = []
    for key in ("accuracy", "efficiency", "tool_failures", "blacklist"):
        result = dims.get(key)
        if result is None or (key == "tool_failures" and not result["patterns"]):
            continue
        scores.append((weights[key], result["score"]))
    if not scores:
        return 1, False
    total = js_sum([w for w, _ in scores])
    return (js_sum([w / total * v for w, v in scores]) if total > 0 else 1), True


def has_blacklist_violation(results: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        (r.get("blacklist") or {}).get("score") == 0 or has_blacklist_violation(r.get("nested") or [])
        for r in results
    )


def evaluate_nested(
    expected_steps: Sequence[Mapping[str, Any]],
    actual_steps: Sequence[Mapping[str, Any]],
    weights: Mapping[str, float],
) -> list[_Json]:
    """Mastra's ``evaluateNestedExpectations``: each expected step with ``children`` scores the children
    of the first unmatched actual step of that name (and type), 70% its level and 30% deeper levels."""
    results: list[_Json] = []
    used: set[int] = set()
    for expected in expected_steps:
        child_config = expected.get("children")
        if child_config is None:
            continue
        match = next(
            (
                i for i, s in enumerate(actual_steps)
                if i not in used and s.get("name") == expected.get("name")
                and (not expected.get("step_type") or s.get("step_type") == expected.get("step_type"))
            ),
            None,
        )  # fmt: skip
        if match is None:  # a missing parent cannot satisfy a nested expectation
            wanted = [s.get("name") for s in child_config.get("steps") or []]
            accuracy = None
            if wanted:
                accuracy = {
                    "score": 0, "matched_steps": 0, "total_expected_steps": len(wanted),
                    "total_actual_steps": 0, "missing_steps": wanted, "extra_steps": [],
                    "out_of_order_steps": [], "repeated_steps": [],
                }  # fmt: skip
            results.append({"step_name": expected.get("name"), "score": 0, "accuracy": accuracy})
            continue
        used.add(match)
        parent = actual_steps[match]
        child: _Json = {"steps": parent.get("children") or [], "total_duration_ms": parent.get("duration_ms")}
        dims = _dimensions(child_config, child)
        nested = (
            evaluate_nested(child_config["steps"], child["steps"], weights) if "steps" in child_config else []
        )
        result = {"step_name": expected.get("name"), "score": 0, **dims, "nested": nested}
        if (dims["blacklist"] or {}).get("score") == 0 or (nested and has_blacklist_violation(nested)):
            results.append(result)  # a hard fail at this level or below
            continue
        score, _ = _weighted(dims, weights)
        if nested:
            score = 0.7 * score + 0.3 * (js_sum([r["score"] for r in nested]) / len(nested))
        results.append({**result, "score": js_round_hundredths(score), "nested": nested or None})
    return results


def evaluate_trajectory(
    trajectory: Mapping[str, Any], config: Mapping[str, Any], weights: Mapping[str, float]
) -> _Json:
    """The preprocess result: every dimension of a normalised trajectory against a merged expectation."""
    dims = _dimensions(config, trajectory)
    steps = config.get("steps")
    nested = evaluate_nested(steps, trajectory["steps"], weights) if steps else []
    return {**dims, "nested": nested or None, "config": dict(config)}


def trajectory_score(result: Mapping[str, Any], weights: Mapping[str, float]) -> float:
    """Mastra's ``generateScore``: 0 on any blacklist violation, else the weighted dimensions (and 30%
    nested levels), rounded to hundredths."""
    if (result.get("blacklist") or {}).get("score") == 0:
        return 0
    nested = result.get("nested")
    score, active = _weighted(result, weights)
    if not active and not nested:
        return 1
    if nested:
        if has_blacklist_violation(nested):
            return 0
        score = 0.7 * score + 0.3 * (js_sum([r["score"] for r in nested]) / len(nested))
    return js_round_hundredths(score)
