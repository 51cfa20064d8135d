"""The unified trajectory scorer's dimensions besides accuracy: efficiency, blacklist, tool failures.

Ports of Mastra's ``checkTrajectoryEfficiency``, ``checkTrajectoryBlacklist`` and
``analyzeToolFailures`` over a normalised trajectory (``unified_inputs``); result keys are snake_case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracescore.scoring.prebuilt.judge_helpers import js_json, round_to_two_decimals
from tracescore.scoring.prebuilt.trajectory.js_math import is_measurement, js_sum

DEFAULT_MAX_RETRIES_PER_TOOL = 2
_TOOL_STEP_TYPES = ("tool_call", "mcp_tool_call")
_Json = dict[str, Any]


def check_budget_options(config: Mapping[str, Any]) -> None:
    for name in ("max_steps", "max_total_tokens", "max_total_duration_ms"):
        if config.get(name) is not None and not is_measurement(config[name]):
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
            raise ValueError(f"Invalid {camel} budget: expected a finite nonnegative number")


def check_trajectory_efficiency(trajectory: Mapping[str, Any], config: Mapping[str, Any]) -> _Json:
    """Mastra's ``checkTrajectoryEfficiency``: step/token/duration budgets and consecutive repeated calls."""
    max_steps, max_tokens = config.get("max_steps"), config.get("max_total_tokens")
    max_duration, no_redundant = config.get("max_total_duration_ms"), config.get("no_redundant_calls", True)
    check_budget_options(config)
    steps: list[_Json] = trajectory["steps"]
    total_tokens, generations = 0, 0
    remaining = list(steps)
    while remaining:  # depth-first from the end, as Mastra pops: it decides which bad step is named
        step = remaining.pop()
        if step.get("step_type") == "model_generation":
            generations += 1
            prompt, completion = step.get("prompt_tokens"), step.get("completion_tokens")
            if max_tokens is not None and not (is_measurement(prompt) and is_measurement(completion)):
                raise ValueError(
                    f'Cannot evaluate token budget: model generation "{step.get("name")}" has missing or '
                    "invalid token counts"
                )
            total_tokens += (prompt or 0) + (completion or 0)
        remaining.extend(step.get("children") or [])
    if generations == 0 and trajectory.get("usage_tokens") is not None:  # an AgentRun's run-level usage
        generations, total_tokens = 1, trajectory["usage_tokens"]
    if max_tokens is not None and (generations == 0 or not is_measurement(total_tokens)):
        raise ValueError(
            "Cannot evaluate token budget: missing model-generation measurements or invalid total tokens"
        )
    given_total = trajectory.get("total_duration_ms")
    total_ms = given_total if given_total is not None else js_sum([s.get("duration_ms") or 0 for s in steps])
    if max_duration is not None:
        if given_total is not None:
            has_duration = is_measurement(given_total)
        else:
            has_duration = bool(steps) and all(is_measurement(s.get("duration_ms")) for s in steps)
        if not has_duration or not is_measurement(total_ms):
            raise ValueError("Cannot evaluate duration budget: missing or invalid duration measurements")
    redundant: list[_Json] = []
    if no_redundant:
        for i in range(1, len(steps)):
            prev, curr = steps[i - 1], steps[i]
            same = prev.get("name") == curr.get("name") and prev.get("step_type") == curr.get("step_type")
            if same and prev.get("step_type") in _TOOL_STEP_TYPES and _args_json(prev) == _args_json(curr):
                redundant.append({"name": curr.get("name"), "index": i})
    over_steps = max_steps is not None and len(steps) > max_steps
    over_tokens = max_tokens is not None and total_tokens > max_tokens
    over_duration = max_duration is not None and total_ms > max_duration
    dimensions: list[float] = []
    if max_steps is not None:
        dimensions.append(_budget_score(len(steps), max_steps) if over_steps else 1)
    if max_tokens is not None:
        dimensions.append(_budget_score(total_tokens, max_tokens) if over_tokens else 1)
    if max_duration is not None:
        dimensions.append(_budget_score(total_ms, max_duration) if over_duration else 1)
    if no_redundant:
        dimensions.append(max(0, 1 - len(redundant) * 0.2) if redundant else 1)
    score = js_sum(dimensions) / len(dimensions) if dimensions else 1
    return {
        "score": round_to_two_decimals(max(0, min(1, score))), "total_steps": len(steps),
        "over_step_budget": over_steps, "total_tokens": total_tokens, "over_token_budget": over_tokens,
        "total_duration_ms": total_ms, "over_duration_budget": over_duration, "redundant_calls": redundant,
    }  # fmt: skip


def _budget_score(total: float, limit: float) -> float:
    """``Math.max(0, 1 - (total - limit) / limit)`` for a total over its limit; a zero limit divides to
    -Infinity in JavaScript, hence 0."""
    return max(0, 1 - (total - limit) / limit) if limit > 0 else 0


def _args_json(step: Mapping[str, Any]) -> str | None:
    """``JSON.stringify(toolArgs)``: absent args stringify to undefined, equal only to other absent args."""
    args = step.get("tool_args")
    return None if args is None else js_json(args)


def check_trajectory_blacklist(trajectory: Mapping[str, Any], config: Mapping[str, Any]) -> _Json:
    """Mastra's ``checkTrajectoryBlacklist``: forbidden tool names and contiguous name sequences."""
    names = [s.get("name") for s in trajectory["steps"]]
    tools = [t for t in config.get("blacklisted_tools") or [] if t in names]
    sequences = [
        list(seq)
        for seq in config.get("blacklisted_sequences") or []
        if seq and any(names[i : i + len(seq)] == list(seq) for i in range(len(names) - len(seq) + 1))
    ]
    return {"score": 0 if tools or sequences else 1, "violated_tools": tools, "violated_sequences": sequences}


def analyze_tool_failures(trajectory: Mapping[str, Any], max_retries: int) -> _Json:
    """Mastra's ``analyzeToolFailures``: runs of one tool after failed calls, beyond the retry allowance."""
    calls = [s for s in trajectory["steps"] if s.get("step_type") in _TOOL_STEP_TYPES]
    patterns: list[_Json] = []
    i = 0
    while i < len(calls):
        retries, j = 0, i + 1
        while j < len(calls) and calls[j].get("name") == calls[i].get("name"):
            if calls[j - 1].get("success") is False:
                retries += 1
            j += 1
        if retries > 0:
            succeeded = calls[j - 1].get("success") is not False
            fell_back = j < len(calls) and not succeeded
            pattern = {"tool_name": calls[i].get("name"), "retry_count": retries}
            pattern["fell_back_to_alternative"] = fell_back
            pattern["alternative_tool"] = calls[j].get("name") if fell_back else None
            pattern["eventually_succeeded"] = succeeded
            patterns.append(pattern)
        i = j
    excess = sum(max(0, p["retry_count"] - max_retries) for p in patterns)
    return {
        "score": round_to_two_decimals(max(0, min(1, max(0, 1 - excess * 0.2)))), "patterns": patterns,
        "total_retries": sum(p["retry_count"] for p in patterns),
        "excessive_retry_tools": [p["tool_name"] for p in patterns if p["retry_count"] > max_retries],
    }  # fmt: skip
