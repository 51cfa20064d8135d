"""Unified trajectory scorer (code): accuracy, efficiency, blacklist and tool failures in one score.

A port of Mastra's ``createTrajectoryScorerCode`` (``@mastra/evals`` 1.10.2, id
``code-trajectory-scorer``) and the helpers it uses: ``checkTrajectoryEfficiency``,
``checkTrajectoryBlacklist``, ``analyzeToolFailures`` and the nested (``children``) expectations.
Step matching reuses ``trajectory_accuracy.compare_trajectories``. Result keys are snake_case.

The expectation is the constructor's ``defaults`` overlaid by the run's ``ground_truth`` when that is a
mapping (Mastra's per-item ``expectedTrajectory``; per-item keys win, per-item ``steps`` replace the
default steps). Keys may be snake_case or Mastra's camelCase.

Mapping from our ``AgentRun`` (``trajectory_of_run``): the steps are the run's tool invocations, as
Mastra's live scoring builds them with core's ``extractTrajectory`` (flat ``tool_call`` steps, no
children). What the run has beyond that, and Mastra's live path lacks:

- ``max_total_duration_ms`` reads ``end_time - start_time`` as the trajectory's ``totalDurationMs``
  (what Mastra's trace-based extraction takes from the root span). Without both times the budget
  raises, as Mastra does for a trajectory without durations.
- ``max_total_tokens`` reads ``usage.input_tokens + usage.output_tokens`` as one model generation's
  counts, because the run keeps no per-generation steps; a run with zero usage has no measurement and
  the budget raises, as Mastra does without ``model_generation`` steps.

What cannot be mapped: per-step durations, per-generation token counts, and nested steps (sub-agent or
workflow ``children``), so nested expectations only ever see a childless parent from an ``AgentRun``;
they are fully supported by ``evaluate_trajectory`` on a Mastra-shaped trajectory. A ``null`` option
counts as unset (Mastra would treat a JSON ``null`` budget as given and invalid).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from schemas.agent_run import AgentRun
from scoring.prebuilt.judge_helpers import js_json, js_number, round_to_two_decimals
from scoring.prebuilt.trajectory_accuracy import compare_trajectories, extract_trajectory
from scoring.registry import ScorerSpec, register
from scoring.scorer import Scorer
from scoring.steps import StepContext

DEFAULT_WEIGHTS: dict[str, float] = {
    "accuracy": 0.4,
    "efficiency": 0.3,
    "tool_failures": 0.2,
    "blacklist": 0.1,
}
DEFAULT_MAX_RETRIES_PER_TOOL = 2
_TOOL_STEP_TYPES = ("tool_call", "mcp_tool_call")
_ACCURACY_LISTS = (("missing", "missing_steps"), ("extra", "extra_steps"),
                   ("out of order", "out_of_order_steps"))  # fmt: skip
_DESCRIPTION = "Multi-dimensional trajectory evaluation: accuracy, efficiency, blacklist, and tool failures"
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


def _is_measurement(value: Any) -> bool:
    """JavaScript's ``typeof value === 'number' && Number.isFinite(value) && value >= 0``."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


def check_budget_options(config: Mapping[str, Any]) -> None:
    for name in ("max_steps", "max_total_tokens", "max_total_duration_ms"):
        if config.get(name) is not None and not _is_measurement(config[name]):
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
            if max_tokens is not None and not (_is_measurement(prompt) and _is_measurement(completion)):
                raise ValueError(
                    f'Cannot evaluate token budget: model generation "{step.get("name")}" has missing or '
                    "invalid token counts"
                )
            total_tokens += (prompt or 0) + (completion or 0)
        remaining.extend(step.get("children") or [])
    if generations == 0 and trajectory.get("usage_tokens") is not None:  # an AgentRun's run-level usage
        generations, total_tokens = 1, trajectory["usage_tokens"]
    if max_tokens is not None and (generations == 0 or not _is_measurement(total_tokens)):
        raise ValueError(
            "Cannot evaluate token budget: missing model-generation measurements or invalid total tokens"
        )
    given_total = trajectory.get("total_duration_ms")
    total_ms = given_total if given_total is not None else _js_sum([s.get("duration_ms") or 0 for s in steps])
    if max_duration is not None:
        if given_total is not None:
            has_duration = _is_measurement(given_total)
        else:
            has_duration = bool(steps) and all(_is_measurement(s.get("duration_ms")) for s in steps)
        if not has_duration or not _is_measurement(total_ms):
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
    score = _js_sum(dimensions) / len(dimensions) if dimensions else 1
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


def _js_sum(values: Sequence[float]) -> float:
    """Left-to-right sum from 0, as ``reduce((a, b) => a + b, 0)``; Python 3.12's ``sum`` compensates
    float rounding, which would part from Mastra's floats in the last bit."""
    total: float = 0
    for value in values:
        total += value
    return total


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


def js_round_hundredths(value: float) -> float:
    """``Math.round(value * 100) / 100`` (halves round up; no epsilon, unlike ``roundToTwoDecimals``)."""
    scaled = value * 100
    rounded = math.floor(scaled)
    return (rounded + 1 if scaled - rounded >= 0.5 else rounded) / 100


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
    total = _js_sum([w for w, _ in scores])
    return (_js_sum([w / total * v for w, v in scores]) if total > 0 else 1), True


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
        child = {"steps": parent.get("children") or [], "total_duration_ms": parent.get("duration_ms")}
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
            score = 0.7 * score + 0.3 * (_js_sum([r["score"] for r in nested]) / len(nested))
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
        score = 0.7 * score + 0.3 * (_js_sum([r["score"] for r in nested]) / len(nested))
    return js_round_hundredths(score)


def trajectory_reason(result: Mapping[str, Any], score: float) -> str:
    """Mastra's ``generateReason``: the score, then one line per active dimension."""
    parts = [f"Score: {js_number(score)}"]
    accuracy, efficiency, blacklist = (
        result.get("accuracy"),
        result.get("efficiency"),
        result.get("blacklist"),
    )
    failures, nested = result.get("tool_failures"), result.get("nested")
    if blacklist and blacklist["score"] == 0:
        violations = []
        if blacklist["violated_tools"]:
            violations.append(f"forbidden tools used: {', '.join(blacklist['violated_tools'])}")
        if blacklist["violated_sequences"]:
            seqs = "; ".join(" → ".join(s) for s in blacklist["violated_sequences"])
            violations.append(f"forbidden sequences: {seqs}")
        return "\n".join([*parts, f"Blacklist violation: {'. '.join(violations)}."])
    if nested and has_blacklist_violation(nested):
        names = ", ".join(r["step_name"] for r in nested if has_blacklist_violation([r]))
        return "\n".join([*parts, f"Nested blacklist violation in: {names}."])
    if accuracy:
        details = [f"{accuracy['matched_steps']}/{accuracy['total_expected_steps']} expected steps matched"]
        for label, key in _ACCURACY_LISTS:
            if accuracy[key]:
                details.append(f"{label}: {', '.join(accuracy[key])}")
        parts.append(f"Accuracy ({js_number(accuracy['score'])}): {'. '.join(details)}.")
    if efficiency:
        details = []
        if efficiency["over_step_budget"]:
            details.append(f"over step budget ({efficiency['total_steps']} steps)")
        if efficiency["over_token_budget"]:
            details.append(f"over token budget ({js_number(efficiency['total_tokens'])} tokens)")
        if efficiency["over_duration_budget"]:
            details.append(f"over duration budget ({js_number(efficiency['total_duration_ms'])}ms)")
        if efficiency["redundant_calls"]:
            details.append(f"redundant calls: {', '.join(c['name'] for c in efficiency['redundant_calls'])}")
        summary = ". ".join(details) if details else "all budgets met, no redundant calls"
        parts.append(f"Efficiency ({js_number(efficiency['score'])}): {summary}.")
    if failures and failures["patterns"]:
        details = [f"{failures['total_retries']} total retries"] if failures["total_retries"] > 0 else []
        if failures["excessive_retry_tools"]:
            details.append(f"excessive retries: {', '.join(failures['excessive_retry_tools'])}")
        parts.append(f"Tool failures ({js_number(failures['score'])}): {'. '.join(details)}.")
    if nested:
        summary = ", ".join(f"{r['step_name']}: {js_number(r['score'])}" for r in nested)
        parts.append(f"Nested scores: {summary}.")
    return "\n".join(parts)


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


TRAJECTORY_CODE = ScorerSpec(
    name="trajectory-code",
    id="code-trajectory-scorer",
    title="Trajectory Scorer",
    description=_DESCRIPTION,
)


@register(TRAJECTORY_CODE)
def create_trajectory_scorer_code(
    defaults: Mapping[str, Any] | None = None, weights: Mapping[str, Any] | None = None
) -> Scorer:
    """Score 0..1 over a run's trajectory: accuracy, efficiency, tool failures and blacklist, weighted.

    ``defaults`` is a trajectory expectation (``steps``, ``ordering``, ``allow_repeated_steps``,
    ``max_steps``, ``max_total_tokens``, ``max_total_duration_ms``, ``no_redundant_calls``,
    ``blacklisted_tools``, ``blacklisted_sequences``, ``max_retries_per_tool``; camelCase accepted);
    a mapping ``ground_truth`` overrides it per run. Only configured dimensions count (tool failures
    when a retry pattern was seen), their ``weights`` normalised; any blacklist hit scores 0.

    Example::

        scorer = create_trajectory_scorer_code(
            defaults={"steps": [{"name": "search"}, {"name": "summarize"}], "max_steps": 4,
                      "blacklisted_tools": ["delete_all"]},
        )
        (await scorer.run(run)).score  # 1.0 for search then summarize, no repeat, within 4 steps
    """
    base = normalise_expectation(defaults or {})
    if base.get("ordering", "relaxed") not in ("strict", "relaxed", "unordered"):
        raise ValueError(f"ordering must be strict, relaxed or unordered, not {base['ordering']!r}")
    check_budget_options(base)
    resolved = resolve_weights(weights)

    def preprocess(ctx: StepContext) -> _Json:
        return evaluate_trajectory(
            trajectory_of_run(ctx.run), merge_expectation(base, ctx.run.ground_truth), resolved
        )

    def generate_score(ctx: StepContext) -> float:
        return trajectory_score(ctx.results["preprocess_step_result"], resolved)

    def generate_reason(ctx: StepContext) -> str:
        return trajectory_reason(ctx.results["preprocess_step_result"], ctx.score or 0)

    return (
        TRAJECTORY_CODE.create_scorer(
            needs=set(),  # tool names, order and timing survive content capture being off
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
