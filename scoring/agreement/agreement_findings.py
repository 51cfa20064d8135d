"""One scorer's agreement with people in a window (``measure``), and what it means against the levels
of the ``agreement`` config and the window before (``assess``): its state and the reasons.

States: ``insufficient`` when neither labels nor values have ``min_pairs`` pairs; ``below`` when a
measure with enough pairs is past its level (kappa under ``min_kappa``, rho under ``min_spearman``,
the mean absolute error over ``max_mae``); ``dropped`` when a measure is significantly worse than in
the window before (one-sided p under ``drop_alpha``, both windows with enough pairs); else ``ok``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.schemas.agreement_results import AgreementFinding, AgreementRow, AgreementState
from tracescore.scoring.agreement.agreement_stats import (
    Estimate,
    cohens_kappa,
    kappa_drop_p,
    mae_rise_p,
    mean_absolute_error,
    spearman,
    spearman_drop_p,
)


@dataclass(frozen=True)
class Pairs:
    """One scorer's pairs in one window: labels (the scorer's, the person's) and values (the score, the
    person's), with who labelled."""

    scorer_labels: Sequence[str]
    human_labels: Sequence[str]
    scores: Sequence[float]
    human_values: Sequence[float]
    annotators: frozenset[str]


@dataclass(frozen=True)
class Measured:
    """A window's row, with what the tests against another window need."""

    row: AgreementRow
    kappa: Estimate | None
    spearman: Estimate | None
    mae: Estimate | None
    absolute_errors: list[float]


def measure(
    scorer_id: str, start: datetime, end: datetime, pairs: Pairs, config: AgreementConfig
) -> Measured:
    """The measures of one window; each needs ``min_pairs`` pairs of its kind."""
    confidence = config.confidence
    kappa = rho = mae = None
    if len(pairs.human_labels) >= config.min_pairs:
        kappa = cohens_kappa(pairs.scorer_labels, pairs.human_labels, confidence)
    if len(pairs.human_values) >= config.min_pairs:
        rho = spearman(pairs.scores, pairs.human_values, confidence)
        mae = mean_absolute_error(pairs.scores, pairs.human_values, confidence)
    row = AgreementRow(
        scorer_id=scorer_id,
        window_start=start,
        window_end=end,
        annotators=len(pairs.annotators),
        label_pairs=len(pairs.human_labels),
        score_pairs=len(pairs.human_values),
        **_fields("kappa", kappa),
        **_fields("spearman", rho),
        **_fields("mae", mae),
    )
    errors = np.abs(np.asarray(pairs.scores, dtype=np.float64) - np.asarray(pairs.human_values)).tolist()
    return Measured(row, kappa, rho, mae, errors)


def _fields(name: str, estimate: Estimate | None) -> dict[str, float | None]:
    if estimate is None:
        return {}
    return {name: estimate.value, f"{name}_low": estimate.low, f"{name}_high": estimate.high}


def assess(now: Measured, before: Measured | None, config: AgreementConfig) -> AgreementFinding:
    """The state of a scorer from its window and the one before (see the module docstring)."""
    below = _below(now, config)
    drops, p_values = _drops(now, before) if before is not None else ([], [])
    dropped = [reason for reason, p in zip(drops, p_values, strict=True) if p < config.drop_alpha]
    state: AgreementState
    if now.kappa is None and now.spearman is None and now.mae is None:
        state = "insufficient"
    elif below:
        state = "below"
    elif dropped:
        state = "dropped"
    else:
        state = "ok"
    return AgreementFinding(
        row=now.row,
        previous=before.row if before is not None else None,
        drop_p_value=min(p_values) if p_values else None,
        state=state,
        reasons=[*below, *dropped],
    )


def _below(now: Measured, config: AgreementConfig) -> list[str]:
    reasons = []
    if now.kappa is not None and now.kappa.value < config.min_kappa:
        reasons.append(f"kappa {now.kappa.value:.2f} < {config.min_kappa:g}")
    if now.spearman is not None and now.spearman.value < config.min_spearman:
        reasons.append(f"spearman {now.spearman.value:.2f} < {config.min_spearman:g}")
    if now.mae is not None and now.mae.value > config.max_mae:
        reasons.append(f"mae {now.mae.value:.3f} > {config.max_mae:g}")
    return reasons


def _drops(now: Measured, before: Measured) -> tuple[list[str], list[float]]:
    """Each measure both windows have, as a reason and its one-sided p-value of a change for the worse."""
    reasons: list[str] = []
    p_values: list[float] = []
    if now.kappa is not None and before.kappa is not None:
        reasons.append(f"kappa dropped {before.kappa.value:.2f} → {now.kappa.value:.2f}")
        p_values.append(kappa_drop_p(before.kappa, now.kappa))
    if now.spearman is not None and before.spearman is not None:
        reasons.append(f"spearman dropped {before.spearman.value:.2f} → {now.spearman.value:.2f}")
        p_values.append(spearman_drop_p(before.spearman, now.spearman))
    if now.mae is not None and before.mae is not None:
        reasons.append(f"mae rose {before.mae.value:.3f} → {now.mae.value:.3f}")
        p_values.append(mae_rise_p(before.absolute_errors, now.absolute_errors))
    return reasons, p_values
