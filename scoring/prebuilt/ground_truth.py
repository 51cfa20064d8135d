"""The ground truth a scorer compares with (evals and backfills carry one; live traces never do)."""

from __future__ import annotations

from typing import Any

from tracescore.scoring.framework.steps import StepContext


class MissingGroundTruth(ValueError):
    """The scorer compares with ``ground_truth`` and the run has none."""


def expected_value(ctx: StepContext, scorer: str) -> Any:
    """The run's ground truth; raises ``MissingGroundTruth`` when there is none."""
    if ctx.run.ground_truth is None:
        raise MissingGroundTruth(f"{scorer} compares the output with ground_truth, and the run has none")
    return ctx.run.ground_truth
