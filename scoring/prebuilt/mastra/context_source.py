"""Where the context scorers (precision, recall, relevance) get the context they judge, and how they
list it to the judge.

As in Mastra, the context is ``context_extractor(run)`` or the fixed ``context`` option (the
extractor wins); without either (Mastra requires one) the run's own retrieved ``context`` is used,
and the scorer then ``needs`` it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.steps import Need
from tracescore.scoring.judge import delimit

ContextExtractor = Callable[[AgentRun], list[str]]


def check_context_options(context: Sequence[str] | None) -> None:
    """Mastra's check: a ``context`` option, when given, must not be empty."""
    if context is not None and len(context) == 0:
        raise ValueError("Context array cannot be empty if provided")


def context_needs(context: Sequence[str] | None, extractor: ContextExtractor | None) -> set[Need]:
    """What a context scorer reads: the run's own context only when no option supplies one."""
    needs: set[Need] = {"input", "output"}
    return needs if context is not None or extractor is not None else needs | {"context"}


def resolve_context(
    run: AgentRun, context: Sequence[str] | None, extractor: ContextExtractor | None
) -> list[str]:
    """The context to judge: the extractor's (Mastra's precedence), the option's, else the run's."""
    if extractor is not None:
        return list(extractor(run))
    if context is not None:
        return list(context)
    return list(run.context)


def numbered(context: Sequence[str]) -> str:
    """Context pieces as Mastra lists them (``[index] piece`` per line), inside data markers."""
    return delimit("context", "\n".join(f"[{index}] {piece}" for index, piece in enumerate(context)))
