"""Unified trajectory scorer (code): accuracy, efficiency, blacklist and tool failures in one score.

A port of Mastra's ``createTrajectoryScorerCode`` (``@mastra/evals`` 1.10.2, id
``code-trajectory-scorer``) and the helpers it uses: ``checkTrajectoryEfficiency``,
``checkTrajectoryBlacklist``, ``analyzeToolFailures`` and the nested (``children``) expectations.
Step matching reuses ``trajectory_accuracy.compare_trajectories``. Result keys are snake_case.

This module holds the scorer; its parts are ``unified_inputs`` (expectations, trajectories, weights),
``unified_dimensions`` (efficiency, blacklist, tool failures), ``unified_scoring`` (levels, nesting,
the weighted score) and ``unified_reason``.

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

from collections.abc import Mapping
from typing import Any

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register
from tracescore.scoring.prebuilt.trajectory.unified_dimensions import check_budget_options
from tracescore.scoring.prebuilt.trajectory.unified_inputs import (
    merge_expectation,
    normalise_expectation,
    resolve_weights,
    trajectory_of_run,
)
from tracescore.scoring.prebuilt.trajectory.unified_reason import trajectory_reason
from tracescore.scoring.prebuilt.trajectory.unified_scoring import evaluate_trajectory, trajectory_score

_DESCRIPTION = "Multi-dimensional trajectory evaluation: accuracy, efficiency, blacklist, and tool failures"
_Json = dict[str, Any]


TRAJECTORY_CODE = ScorerSpec(
    name="trajectory-code",
    former_id="code-trajectory-scorer",
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
        return trajectory_score(ctx.preprocessed(dict), resolved)

    def generate_reason(ctx: StepContext) -> str:
        return trajectory_reason(ctx.preprocessed(dict), ctx.score or 0)

    return (
        TRAJECTORY_CODE.create_scorer(
            needs=set(),  # tool names, order and timing survive content capture being off
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
