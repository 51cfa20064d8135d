"""Scoring agent runs: the scorer pipeline, prebuilt scorers, sampling and the executor."""

from scoring.registry import SCORERS, build_scorer
from scoring.sampling import is_sampled
from scoring.scorer import Scorer, ScorerError, ScorerResult, StepContext, create_scorer

__all__ = [
    "SCORERS",
    "Scorer",
    "ScorerError",
    "ScorerResult",
    "StepContext",
    "build_scorer",
    "create_scorer",
    "is_sampled",
]
