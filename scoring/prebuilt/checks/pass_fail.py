"""What every quick check shares: its score from a flag of its preprocess result, and its label."""

from __future__ import annotations

from tracescore.scoring.framework.steps import StepContext


def passed(ctx: StepContext, key: str) -> int:
    """1 when the preprocess step result's ``key`` is truthy, else 0."""
    return 1 if ctx.preprocessed(dict)[key] else 0


def pass_fail(ctx: StepContext) -> str:
    """The label of a pass/fail check: ``pass`` at score 1, else ``fail``."""
    return "pass" if ctx.score == 1 else "fail"
