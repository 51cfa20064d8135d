"""Scoring agent runs: the scorer pipeline, prebuilt scorers, sampling and the executor."""

from tracescore.schemas.version import __version__
from tracescore.scoring.evals import EvalItem, EvalItemResult, RunEvalsResult, run_evals
from tracescore.scoring.judge import Judge, JudgeResult, delimit
from tracescore.scoring.judge.errors import JudgeError
from tracescore.scoring.prompt_step import PromptObject
from tracescore.scoring.registry import SCORERS, build_scorer
from tracescore.scoring.sampling import is_sampled
from tracescore.scoring.scorer import Scorer, ScorerError, ScorerResult, create_scorer
from tracescore.scoring.steps import StepContext

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
