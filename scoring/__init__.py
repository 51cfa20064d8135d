"""Scoring agent runs: the scorer pipeline, prebuilt scorers, sampling and the executor."""

from tracescore.schemas.version import __version__
from tracescore.scoring.framework.evals import EvalItem, EvalItemResult, RunEvalsResult, run_evals
from tracescore.scoring.framework.prompt_step import PromptObject
from tracescore.scoring.framework.scorer import Scorer, ScorerError, ScorerResult, create_scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, JudgeResult, delimit
from tracescore.scoring.judge.failures import JudgeError
from tracescore.scoring.prebuilt.registry import SCORERS, build_scorer
from tracescore.scoring.runtime.sampling import is_sampled

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
