"""The empty-run guard: whether a run holds the content a scorer reads.

A run without it is not scored: its decision is ``skipped_empty``, with the reason given here. Live
scoring and backfill (through ``route``), ``tracescore score`` and ``tracescore eval`` / ``run_evals``
all ask this one function, so a run is skipped offline exactly when the service would skip it.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas import AgentRun
from scoring.scorer import Scorer


def empty_run_reason(scorer: Scorer, run: AgentRun) -> str | None:
    """Why ``scorer`` skips ``run`` (e.g. ``run has no output text``), or None when it can score it."""
    missing = scorer.missing_needs(run)
    return missing_detail(missing, run.content_missing) if missing else None


def missing_detail(missing: Sequence[str], content_missing: bool) -> str:
    """Why a run was skipped: the text it lacks, and whether its content was not captured."""
    texts = [need for need in missing if need != "ground_truth"]
    parts = [f"no {' or '.join(texts)} text"] if texts else []
    if "ground_truth" in missing:
        parts.append("no ground truth")
    capture = " (content capture off or redacted)" if content_missing and texts else ""
    return f"run has {' and '.join(parts)}{capture}"
