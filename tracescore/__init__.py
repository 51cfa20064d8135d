"""tracescore: score live LLM-agent traces from OpenTelemetry and write the scores to ClickHouse.

The one top-level package installed. Its parts are the repository's folders: ``tracescore.schemas``
(typed data, no I/O), ``tracescore.scoring`` (scorers, judges, ``run_evals``) and
``tracescore.ingest`` (the service and the ``tracescore`` command). The Python API::

    from tracescore import create_scorer, run_evals
    from tracescore.scoring.prebuilt import create_answer_relevancy_scorer

The names below are ``tracescore.scoring``'s, loaded on first use: importing ``tracescore.schemas``
alone (as the service's small helper processes do) does not load the scoring stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracescore.schemas.version import __version__

if TYPE_CHECKING:
    from tracescore.scoring import (
        SCORERS,
        EvalItem,
        EvalItemResult,
        Judge,
        JudgeError,
        JudgeResult,
        PromptObject,
        RunEvalsResult,
        Scorer,
        ScorerError,
        ScorerResult,
        StepContext,
        build_scorer,
        create_scorer,
        delimit,
        is_sampled,
        run_evals,
    )

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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("tracescore.scoring"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
