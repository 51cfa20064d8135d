"""How well a scorer agrees with human labels over a window, and what an agreement pass found of it:
the values of ``ingest.alerting.agreement_monitor`` (``agreement_rows``, the ``judge_agreement``
table, ``tracescore agreement --json``)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_serializer

AgreementState = Literal["ok", "below", "dropped", "insufficient"]
ALERTING_STATES: tuple[AgreementState, ...] = ("below", "dropped")


class AgreementRow(BaseModel):
    """One scorer's agreement with people over ``[window_start, window_end)`` (scores written then).

    A pair is a human label and the score of the same trace, span and scorer id (one pair per
    annotator). Labels give Cohen's kappa (``label_pairs``: both sides have a label), values give
    Spearman's rho and the mean absolute error (``score_pairs``: the person gave a value). Each measure
    has its confidence interval (``*_low``, ``*_high``); a measure with too few pairs is None.
    """

    model_config = ConfigDict(frozen=True)

    scorer_id: str
    window_start: datetime
    window_end: datetime
    annotators: int
    label_pairs: int
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    score_pairs: int
    spearman: float | None = None
    spearman_low: float | None = None
    spearman_high: float | None = None
    mae: float | None = None
    mae_low: float | None = None
    mae_high: float | None = None


class AgreementFinding(BaseModel):
    """What an agreement pass found of one scorer: its row now, the window before, whether it dropped,
    its state and why."""

    model_config = ConfigDict(frozen=True)

    row: AgreementRow
    previous: AgreementRow | None = None
    drop_p_value: float | None = None  # the smallest one-sided p-value of a drop against the window before
    state: AgreementState
    reasons: list[str]

    @property
    def scorer_id(self) -> str:
        return self.row.scorer_id

    @property
    def alerting(self) -> bool:
        return self.state in ALERTING_STATES

    @field_serializer("drop_p_value")
    def _finite(self, value: float | None) -> float | None:
        return value if value is not None and math.isfinite(value) else None

    def as_json(self) -> dict[str, Any]:
        """As ``tracescore agreement --json`` and the webhooks show it: the row's fields, then the rest."""
        body = self.model_dump(mode="json")
        return {**body.pop("row"), **body}
