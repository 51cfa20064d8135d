"""The empty-run guard: whether a run holds the content a scorer reads.

A run without it is not scored: its decision is ``skipped_empty``, with the reason given here. Live
scoring and backfill (through ``route``), ``tracescore score`` and ``tracescore eval`` / ``run_evals``
all ask this one function, so a run is skipped offline exactly when the service would skip it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer


def empty_run_reason(
    scorer: Scorer, run: AgentRun, switch: Callable[[AgentRun], str | None] | None = None
) -> str | None:
    """Why ``scorer`` skips ``run`` (e.g. ``run has no output text``), or None when it can score it.
    ``switch`` tells, from the spans, how to turn content capture on (see ``missing_detail``)."""
    missing = scorer.missing_needs(run)
    if not missing:
        return None
    return missing_detail(missing, run.content_missing, switch(run) if switch is not None else None)


def missing_detail(missing: Sequence[str], content_missing: bool, switch: str | None = None) -> str:
    """Why a run was skipped: the text it lacks, and whether its content was not captured (with the
    ``switch`` that turns capture on, when the spans tell which instrumentation wrote them)."""
    texts = [need for need in missing if need != "ground_truth"]
    parts = [f"no {' or '.join(texts)} text"] if texts else []
    if "ground_truth" in missing:
        parts.append("no ground truth")
    capture = ""
    if content_missing and texts:
        capture = " (content capture off or redacted" + (f": {switch})" if switch else ")")
    return f"run has {' and '.join(parts)}{capture}"
