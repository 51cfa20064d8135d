"""The unified trajectory scorer's inputs in Mastra's shapes: expectations, trajectories and weights.

Keys may be snake_case or Mastra's camelCase; everything is normalised to snake_case here. An
``AgentRun`` becomes a trajectory through ``trajectory_of_run`` (see ``unified`` for what maps).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from tracescore.schemas.agent_run import AgentRun
from tracescore.scoring.prebuilt.trajectory.trajectory_accuracy import extract_trajectory

DEFAULT_WEIGHTS: dict[str, float] = {
    "accuracy": 0.4,
    "efficiency": 0.3,
    "tool_failures": 0.2,
    "blacklist": 0.1,
}
_MILLISECOND = timedelta(milliseconds=1)
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_Json = dict[str, Any]


def _snake(key: str) -> str:
    return _CAMEL_HUMP.sub("_", key).lower()


def normalise_expectation(raw: Mapping[str, Any]) -> _Json:
    """A TrajectoryExpectation with snake_case keys, nulls dropped, nested ``children`` too."""
    out = {_snake(k): v for k, v in raw.items() if v is not None}
    if out.get("steps") is not None:
        out["steps"] = [_expected_step(s) for s in out["steps"]]
    return out


def _expected_step(raw: Mapping[str, Any]) -> _Json:
    step = {_snake(k): v for k, v in raw.items()}
    if isinstance(step.get("children"), Mapping):
        step["children"] = normalise_expectation(step["children"])
    return step


def _actual_step(raw: Mapping[str, Any]) -> _Json:
    step = {_snake(k): v for k, v in raw.items()}
    if step.get("children") is not None:
        step["children"] = [_actual_step(c) for c in step["children"]]
    return step


def normalise_trajectory(raw: Mapping[str, Any]) -> _Json:
    """A Mastra ``Trajectory`` (camelCase or snake_case) as ``{"steps": [...], "total_duration_ms": ...}``."""
    out = {_snake(k): v for k, v in raw.items()}
    out["steps"] = [_actual_step(s) for s in out.get("steps") or []]
    return out


def trajectory_of_run(run: AgentRun) -> _Json:
    """The run as a Mastra trajectory: its tool calls, its duration and its token usage (see module doc)."""
    trajectory: _Json = {"steps": extract_trajectory(run), "total_duration_ms": None, "usage_tokens": None}
    if run.start_time is not None and run.end_time is not None:
        trajectory["total_duration_ms"] = (run.end_time - run.start_time) / _MILLISECOND
    tokens = run.usage.input_tokens + run.usage.output_tokens
    if tokens > 0:
        trajectory["usage_tokens"] = tokens
    return trajectory


def merge_expectation(defaults: Mapping[str, Any], item: Any) -> _Json:
    """``{...defaults, ...item}``: a mapping ``ground_truth`` overrides the defaults key by key."""
    overrides = normalise_expectation(item) if isinstance(item, Mapping) else {}
    return {**defaults, **overrides}


def resolve_weights(weights: Mapping[str, Any] | None) -> dict[str, float]:
    given = {_snake(k): v for k, v in (weights or {}).items() if v is not None}
    unknown = set(given) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ValueError(f"unknown weights {sorted(unknown)}; use {', '.join(DEFAULT_WEIGHTS)}")
    return {k: max(0, given.get(k, default)) for k, default in DEFAULT_WEIGHTS.items()}
