"""Scoring agent runs: the scorer pipeline, prebuilt scorers, sampling and the executor."""

from schemas.version import __version__
from scoring.evals import EvalItem, EvalItemResult, RunEvalsResult, run_evals
from scoring.judge import Judge, JudgeResult, delimit
from scoring.judge.errors import JudgeError
from scoring.prompt_step import PromptObject
from scoring.registry import SCORERS, build_scorer
from scoring.sampling import is_sampled
from scoring.scorer import Scorer, ScorerError, ScorerResult, create_scorer
from scoring.steps import StepContext

__all__ = [
    "__version__",
    "SCORERS",
    "EvalItem",
    "EvalItemResult",
    "Judge",
    "JudgeError",
    "JudgeResult",
    "PromptObject",
    "RunEvalsResult",
    "Scorer",
    "ScorerError",
    "ScorerResult",
    "StepContext",
    "build_scorer",
    "create_scorer",
    "delimit",
    "is_sampled",
    "run_evals",
]
